#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# walk: bad values exit 2 with a message naming the problem; SIGINT stops a
# walk cleanly and prints the history.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }

expect2() {
	local want=$1; shift
	set +e
	out=$("$RDMATOOL" walk "$@" 2>&1); rc=$?
	set -e
	[ $rc -eq 2 ] || fail "walk $* exit $rc, want 2: $out"
	echo "$out" | grep -q -- "$want" || fail "walk $*: message lacks '$want': $out"
}
expect2 "--clients '0'" --clients=0
expect2 "--clients '65'" --clients=65
expect2 "--duration '0'" --duration=0
# integers are read whole: no blank or sign in front, nothing after (popt's own took ' 5')
expect2 "--duration ' 5'" --duration=' 5'
expect2 "--clients '+3'" --clients=+3
expect2 "--heartbeat '2s'" --heartbeat=2s
expect2 "--multinode 'maybe'" --multinode=maybe
expect2 "--steps 'x'" --steps=x
expect2 "--seed '-3'" --seed=-3
expect2 "unknown action 'reed'" --weight reed=3
expect2 "not ACTION=W" --weight read
expect2 "--preset 'fast'" --preset=fast
expect2 "--ib-port '0'" --port=0
expect2 "--ib-port '0'" -i 0
expect2 "--gid-index '256'" -x 256
expect2 "--history '-1'" --history=-1
expect2 "no device .nope0.; .rdmatool devices. lists them" --device=nope0
expect2 "no device .nope0.; .rdmatool devices. lists them" -d nope0
expect2 "every action weight is 0" --preset=control --weight create_cq=0 --weight destroy_cq=0 \
	--weight alloc_pd=0 --weight dealloc_pd=0 --weight reg_mr=0 --weight dereg_mr=0 \
	--weight alloc_mw_type1=0 --weight alloc_mw_type2=0 --weight dealloc_mw_type1=0 \
	--weight dealloc_mw_type2=0 --weight bind_mw_type1=0 --weight bind_mw_type2=0 \
	--weight create_rc_qp_pair=0 --weight create_ud_qp=0 --weight modify_qp_error=0 \
	--weight destroy_qp=0 --weight create_ah=0 --weight destroy_ah=0 --weight create_srq=0 --weight destroy_srq=0
expect2 "--bogus" --bogus

# perftest's letters: -d device, -i port, -x GID index, -D duration; --device and --port stay as aliases.
out=$("$RDMATOOL" -j walk -d soft0 -i 1 -x 0 -D 1 --steps=50 --seed=2 2>/dev/null) || fail "perftest letters: $out"
echo "$out" | jq -e '.result == "pass" and .destroy_failures == 0' >/dev/null || fail "perftest letters: $out"
out=$("$RDMATOOL" -j walk --device=soft0 --port=1 --steps=50 --seed=2 2>/dev/null) || fail "aliases: $out"
# destroy_failures is a count, not a boolean
echo "$out" | jq -e '.destroy_failures | type == "number"' >/dev/null || fail "destroy_failures not a count: $out"

# A control-only preset never touches the data path.
out=$("$RDMATOOL" -j walk --clients=2 --duration=1 --preset=control --seed=1 2>/dev/null) || fail "control preset"
echo "$out" | jq -e '.actions.read.issued == 0 and .actions.send.issued == 0 and .actions.reg_mr.ok > 0' \
	>/dev/null || fail "control preset issued data-path actions: $out"

# SIGINT: the walk stops, tears down, prints the history, exits.
err=$(mktemp); outf=$(mktemp); trap 'rm -f "$err" "$outf"; [ -n "${pid:-}" ] && kill $pid 2>/dev/null; true' EXIT
"$RDMATOOL" walk --clients=2 --duration=60 --seed=1 >"$outf" 2>"$err" &
pid=$!
for _ in $(seq 200); do grep -q "weights:" "$outf" && break; sleep 0.05; done
grep -q "weights:" "$outf" || fail "walk did not start"
kill -INT $pid
set +e
wait $pid; rc=$?
set -e
pid=
[ $rc -eq 130 ] || fail "SIGINT run exit $rc, want 130"
grep -q -- "--- history of client 1" "$err" || fail "no history after SIGINT: $(cat "$err")"
grep -q "stopped by signal 2" "$err" || fail "no stop notice"
# A bad soft-device setting is named, not reported as a generic open failure.
set +e
RDMATOOL_SOFT_FAULTS=bogus=1 "$RDMATOOL" walk --duration=1 >/dev/null 2>"$err"
rc=$?
set -e
[ $rc -eq 1 ] || fail "bad RDMATOOL_SOFT_FAULTS: exit $rc, want 1"
grep -q "RDMATOOL_SOFT_FAULTS: unknown key 'bogus'" "$err" || fail "bad RDMATOOL_SOFT_FAULTS message: $(cat "$err")"
echo "walk usage ok"
