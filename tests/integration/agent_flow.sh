#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The agent's flow-control caps (RDMATOOL_AGENT_MAX_{INJECTION,EJECTION,GETMSG}_MB)
# under traffic: three agents on one machine with 1 MiB caps; two processes on
# each of nodes 0 and 2 send numbered, checksummed messages of 24 B .. 4 MiB
# (bigger than the caps, so they move in chunks) in random modes to a channel
# on node 1; two processes on node 1 fill a second channel that processes on
# nodes 0 and 2 drain with GETMSGs.  Every message arrives exactly once, whole,
# in order per sender, and no agent's high-water mark (agent status -j)
# exceeds its cap.  An invalid cap keeps the agent from starting.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$(dirname "$0")/lib/three_agents.sh" flow traffic
for r in 0 1 2; do mkdir -m 700 "$T/a$r"; done

# A cap that is not a whole number of MiB in range: the agent refuses, naming the variable.
for bad in 0 -1 1.5 x 70000; do
	rc=0
	out=$(RDMATOOL_AGENT_MAX_GETMSG_MB=$bad A 0 agent foreground --hosts="$hosts" --rank=0 2>&1) || rc=$?
	[ $rc -ne 0 ] || fail "the agent started with RDMATOOL_AGENT_MAX_GETMSG_MB=$bad"
	grep -q RDMATOOL_AGENT_MAX_GETMSG_MB <<<"$out" || fail "no word of the variable for '$bad': $out"
done

export RDMATOOL_AGENT_MAX_INJECTION_MB=1 RDMATOOL_AGENT_MAX_EJECTION_MB=1 RDMATOOL_AGENT_MAX_GETMSG_MB=1
start_agents
A 1 agent chan create q --bytes=$((64 << 20)) --max-msg=$((4 << 20))
A 1 agent chan create g --capacity=64 --bytes=$((4 << 20)) --max-msg=65536

SENDS=30 FILLS=60
pids=()
for node in 0 2; do
	for p in 1 2; do
		id=$((node * 10 + p))
		X $node send 1/q $id $SENDS $id $((4 << 20)) >"$T/send.$id" &
		pids+=($!)
		X $node recv 1/g 3000 >"$T/get.$id" &
		pids+=($!)
	done
done
for id in 101 102; do
	X 1 send g $id $FILLS $id 60000 >"$T/send.$id" &
	pids+=($!)
done
X 1 recv q 10000 $((4 * SENDS)) >"$T/got.q" || fail "node 1's receiver failed: $(tail -3 "$T/got.q")"
for p in "${pids[@]}"; do wait "$p" || fail "a sender or GETMSG reader failed"; done
X 1 recv q 300 >"$T/more.q" || true
grep -q "^received 0 " "$T/more.q" || fail "more than $((4 * SENDS)) messages arrived in q"

python3 - "$T" "$SENDS" "$FILLS" <<'PY' || exit 1
import glob, sys
t, sends, fills = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def pairs(path):
    return [tuple(map(int, l.split()[:2])) for l in open(path) if not l.startswith(("received", "sent"))]
q = pairs(f"{t}/got.q")
want_q = {(n * 10 + p, s) for n in (0, 2) for p in (1, 2) for s in range(sends)}
if len(q) != len(set(q)) or set(q) != want_q:
    sys.exit(f"FAIL: channel q: {len(set(q))} distinct of {len(want_q)}, {len(q) - len(set(q))} twice")
g = [x for f in glob.glob(f"{t}/get.*") for x in pairs(f)]
want_g = {(i, s) for i in (101, 102) for s in range(fills)}
if len(g) != len(set(g)) or set(g) != want_g:
    sys.exit(f"FAIL: GETMSG: {len(set(g))} distinct of {len(want_g)}, {len(g) - len(set(g))} twice")
print(f"agent flow: {len(q)} sends and {len(g)} GETMSGs, each once, whole, in order per sender")
PY

# The caps held: the high-water marks (published every 100 ms) never above them, and the gauges moved.
flow_json() { A "$1" -j agent status | jq -c '.flow'; }
hwm() { [ "$(flow_json "$1" | jq ".$2.hwm_bytes > 0")" = true ]; }
for r in 0 2; do wait_for hwm $r injection || fail "rank $r never counted injection: $(flow_json $r)"; done
wait_for hwm 1 getmsg || fail "rank 1 never counted GETMSG data: $(flow_json 1)"
wait_for hwm 1 ejection || fail "rank 1 never posted a large receive: $(flow_json 1)"
for r in 0 1 2; do
	f=$(flow_json $r)
	echo "rank $r flow: $f"
	for k in injection ejection getmsg; do
		[ "$(jq ".$k.cap_bytes" <<<"$f")" = $((1 << 20)) ] || fail "rank $r $k cap is not 1 MiB: $f"
		[ "$(jq ".$k.hwm_bytes <= .$k.cap_bytes" <<<"$f")" = true ] || fail "rank $r $k over its cap: $f"
	done
done
for r in 0 1 2; do A $r -q agent stop || fail "stop $r"; done
if grep -l 'Sanitizer' "$T"/a*/agent.*.log >/dev/null 2>&1; then
	fail "sanitizer report in an agent log: $(grep -h -A20 'Sanitizer' "$T"/a*/agent.*.log | head -40)"
fi
echo "agent flow: ok"
