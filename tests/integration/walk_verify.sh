#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# walk --verify: no failure on a correct device, also with every QP's
# traffic over the soft wire (GID index 1); finds one when the soft device
# corrupts payloads (RDMATOOL_SOFT_FAULTS), and prints the history.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }

# A number of steps, not seconds: what must have run is tied to the steps (a device probe every 250
# steps at the latest), so a loaded machine that takes longer changes nothing asserted here.  Whether a
# random draw found its objects ready (a connected pair, an idle MR) still depends on the peers' timing:
# a class that did not come up gets up to two more walks, the counts summed, before the test fails.
need='.messages_checked > 0 and .payloads_checked > 0 and .probe_cq_full > 0 and .probe_ud_sqe > 0 and
	.probe_inv_other_qp > 0 and .probe_unsignaled > 0 and .probe_cq_notify > 0 and .probe_uc > 0 and
	.modify_qp > 0 and .qkey_changes > 0 and .wr_api_posts > 0 and .write_imms > 0 and .mr_reregs > 0 and
	.probe_rc_pair > 0 and .probe_verb_rules > 0'
v='{}'
for seed in 5 15 25; do
	out=$("$RDMATOOL" -j walk --clients=3 --steps=3000 --verify --seed=$seed 2>/dev/null) || fail "clean device: $out"
	echo "$out" | jq -e '.result == "pass" and (.failures | length) == 0' >/dev/null || fail "clean: $out"
	v=$(jq -n --argjson a "$v" --argjson b "$(echo "$out" | jq .verify)" \
		'reduce ($b | keys[]) as $k ($a; .[$k] = ((.[$k] // 0) + $b[$k]))')
	echo "$v" | jq -e "$need" >/dev/null && break
done
# the message headers and small payloads were checked on receipt
echo "$v" | jq -e '.messages_checked > 0 and .payloads_checked > 0' >/dev/null ||
	fail "no message header or payload checked: $v"
# the device probes ran (a CQ filled to capacity, a UD QP driven to SQE), and SEND_WITH_INV on another QP
echo "$v" | jq -e '.probe_cq_full > 0 and .probe_ud_sqe > 0 and .probe_inv_other_qp > 0' >/dev/null ||
	fail "a probe kind never ran: $v"
# the device probes of unsignaled sends (sq_sig_all 0), CQ notification on a completion channel and a UC pair
# ran (the kinds go in turn)
echo "$v" | jq -e '.probe_unsignaled > 0 and .probe_cq_notify > 0 and .probe_uc > 0' >/dev/null ||
	fail "no unsignaled, CQ notification or UC device probe: $v"
# random RTS-to-RTS modify_qp calls, judged by the model, and UD Q_Key changes the peers then send with
echo "$v" | jq -e '.modify_qp > 0 and .qkey_changes > 0' >/dev/null || fail "no modify_qp or Q_Key change: $v"
# the ibv_wr_* API, RDMA_WRITE_WITH_IMM and ibv_rereg_mr are in the walk's vocabulary
echo "$v" | jq -e '.wr_api_posts > 0 and .write_imms > 0 and .mr_reregs > 0' >/dev/null ||
	fail "no ibv_wr_* post, WRITE_WITH_IMM or rereg_mr: $v"
# the RC pair (the data path's rules: a READ into read-only memory, receives short or past their MR, a
# type-1 LOCAL_INV, rnr_retry 7) and the verb rules (CUR_STATE, a send in RTR, an SRQ past max_wr, a
# privileged Q_Key) ran; bad send SGEs are UD_SQE's broken WR
echo "$v" | jq -e '.probe_rc_pair > 0 and .probe_verb_rules > 0' >/dev/null || fail "no RC pair or verb rules: $v"
# walk --verify no longer runs conformance scripts: those are rdmatool conform's cases
echo "$out" | jq -e '.verify | has("probe_rc") | not' >/dev/null || fail "walk still reports RC scripts: $out"

# One client, 1500 steps: done in a fraction of the devprobes' 100 ms period on an idle machine, so only the
# step count can make them run (one starts every 250 steps once the one before it finished, and a probe
# takes some steps to finish: through libibverbs more).
out=$("$RDMATOOL" -j walk --clients=1 --steps=1500 --verify --seed=8 2>/dev/null) || fail "one client: $out"
echo "$out" | jq -e '.result == "pass" and (.verify | .probe_cq_full + .probe_ud_sqe + .probe_unsignaled +
	.probe_cq_notify + .probe_uc + .probe_rc_pair + .probe_verb_rules) >= 2' >/dev/null ||
	fail "1500 steps ran fewer than 2 device probes: $out"

# GID index 1: the same probes with every packet through the soft NIC's wire to itself.
out=$("$RDMATOOL" -j walk --clients=3 --steps=2000 --verify --seed=6 --gid-index=1 2>/dev/null) ||
	fail "clean device over the wire (--gid-index=1): $out"
echo "$out" | jq -e '.result == "pass" and .verify.probe_cq_full + .verify.probe_ud_sqe > 0 and
	.verify.probe_unsignaled + .verify.probe_cq_notify + .verify.probe_uc > 0' >/dev/null ||
	fail "clean over the wire: $out"

errfile=$(mktemp)
set +e
out=$(RDMATOOL_SOFT_FAULTS="corrupt=0.5,seed=3" "$RDMATOOL" -j walk --clients=2 --duration=4 --verify --seed=7 \
	2>"$errfile")
rc=$?
set -e
err=$(cat "$errfile")
rm -f "$errfile"
[ $rc -eq 1 ] || fail "with faults: exit $rc, want 1: $out"
echo "$out" | jq -e '.result == "fail" and (.failures | length) > 0' >/dev/null || fail "no failure found: $out"
# Corrupted payloads: a region's data check or a received message's content check (the report keeps
# the first 16 failures, which may all be message checks).
echo "$out" | jq -r '.failures[]' | grep -q -e "data check failed" -e "content unlike the sender's" ||
	fail "want a data check failure: $out"
echo "$err" | grep -q -- "--- history of client" || fail "history not printed on failure"
echo "walk verify ok"
