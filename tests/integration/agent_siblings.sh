#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Several agents per node (--agents-per-node): two nodes of two agents each on one machine.
# Bad values exit 2 naming the option.  Three client processes on each node send numbered,
# checksummed messages of 24 B .. 4 MiB (large ones move by rma READs, in chunks) to a channel
# on the other node, and two processes of node 0 drain a channel of node 1 with GETMSGs: every
# message arrives exactly once, whole, in order per sender (each sender is one port, which
# always goes through one agent), and both agents of a node carried traffic.  With 1 MiB
# ejection caps and node 0's devices slow to answer, the large-message READs back up at the
# target, and the idle sibling steals some: agent status -j counts them on both sides (and the
# file and the order of what they read stay checked as above).  A sibling killed
# (SIGKILL) mid-transfer fails only the sends of its own rail; what arrives is whole and once.
# In the foreground, stopping the first agent stops its siblings.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$(dirname "$0")/lib/agent_nodes.sh" siblings 2 2 traffic
for r in 0 1; do mkdir -m 700 "$T/a$r"; done

# Bad values: exit 2, naming the option and what to give.
for bad in 0 17 -1 x 2x ""; do
	rc=0
	out=$(A 0 agent start --hosts="$hosts" --rank=0 --agents-per-node="$bad" 2>&1) || rc=$?
	[ $rc -eq 2 ] || fail "--agents-per-node='$bad' exited $rc, not 2: $out"
	grep -q -- "--agents-per-node" <<<"$out" || fail "no word of the option for '$bad': $out"
done
many=$(python3 -c 'print(",".join("h%d" % i for i in range(20)))')
rc=0
out=$(A 0 agent foreground --hosts="$many" --rank=0 --agents-per-node=16 2>&1) || rc=$?
[ $rc -eq 2 ] && grep -q "at most 256" <<<"$out" || fail "20 nodes x 16 agents: rc $rc: $out"
rc=0
out=$(A 0 agent start --hosts=127.0.0.1:65535,127.0.0.1:7000 --rank=0 --agents-per-node=2 2>&1) || rc=$?
[ $rc -eq 2 ] && grep -q "lower port" <<<"$out" || fail "port 65535 with 2 agents: rc $rc: $out"
rc=0
out=$(A 0 agent status --agents-per-node=2 2>&1) || rc=$?
[ $rc -eq 2 ] && grep -q "not an option of .status" <<<"$out" || fail "status took --agents-per-node: $out"
rc=0
out=$(RDMATOOL_AGENT_STEAL=2 A 0 agent foreground --hosts="$hosts" --rank=0 --agents-per-node=2 2>&1) || rc=$?
[ $rc -ne 0 ] && grep -q RDMATOOL_AGENT_STEAL <<<"$out" || fail "RDMATOOL_AGENT_STEAL=2 accepted: rc $rc: $out"
rm -f "$T"/a0/agent.*.log
[ -z "$(ls "$T/a0")" ] || fail "a refused start left files: $(ls "$T/a0")"

# Node 0's soft devices serve each request 10 ms late: the READs node 1 makes of node 0's
# buffers take long enough for a backlog to build behind the ejection cap.
export RDMATOOL_AGENT_MAX_EJECTION_MB=1
RDMATOOL_SOFT_FAULTS=delay_us=10000 A 0 -q agent start --hosts="$hosts" --rank=0 --agents-per-node=2 ||
	fail "node 0 did not start"
A 1 -q agent start --hosts="$hosts" --rank=1 --agents-per-node=2 || fail "node 1 did not start"
# Every agent has its link to the same sibling of the other node up (its rail).
rails_up() {
	[ "$(A "$1" -j agent status | jq '[.agents[] | select(.running and .peers[0].state == "up")] | length')" = 2 ]
}
for r in 0 1; do wait_for rails_up $r || fail "node $r: rails not up: $(A $r agent status)"; done
st=$(A 0 -j agent status)
[ "$(jq .agents_per_node <<<"$st")" = 2 ] || fail "agents_per_node is not 2: $st"
[ "$(jq '[.agents[].pid] | unique | length' <<<"$st")" = 2 ] || fail "the two agents share a pid: $st"
jq -e '.agents[] | .pool.registered_bytes > 0 and .pool.slots > 0' <<<"$st" >/dev/null ||
	fail "no registered pool in status: $st"

for r in 0 1; do A $r agent chan create q --bytes=$((64 << 20)) --max-msg=$((4 << 20)); done
A 1 agent chan create g --capacity=64 --bytes=$((4 << 20)) --max-msg=65536
SENDS=25 FILLS=40
pids=()
# GETMSGs: a process on node 1 fills g, two on node 0 (one per agent) drain it from afar.
X 1 send g 101 $FILLS 101 60000 >"$T/send.101" &
pids+=($!)
for p in 1 2; do
	X 0 recv 1/g 3000 >"$T/get.$p" &
	pids+=($!)
done
for node in 0 1; do
	for p in 1 2 3; do
		id=$((node * 10 + p))
		X $node send $((1 - node))/q $id $SENDS $id $((4 << 20)) >"$T/send.$id" &
		pids+=($!)
	done
done
for node in 0 1; do
	X $node recv q 10000 $((3 * SENDS)) >"$T/got.$node" &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a sender or receiver failed: $(tail -n 2 "$T"/got.* "$T"/send.*)"; done
for node in 0 1; do
	X $node recv q 300 >"$T/more.$node" || true
	grep -q "^received 0 " "$T/more.$node" || fail "more than $((3 * SENDS)) messages arrived on node $node"
done

python3 - "$T" "$SENDS" "$FILLS" <<'PY' || exit 1
import sys
t, sends, fills = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def pairs(path):
    return [tuple(map(int, l.split()[:2])) for l in open(path) if not l.startswith(("received", "sent"))]
total = 0
for node in (0, 1):
    got = pairs(f"{t}/got.{node}")
    want = {((1 - node) * 10 + p, s) for p in (1, 2, 3) for s in range(sends)}
    if len(got) != len(set(got)) or set(got) != want:
        sys.exit(f"FAIL: node {node}: {len(set(got))} distinct of {len(want)}, {len(got) - len(set(got))} twice")
    total += len(got)
g = [x for p in (1, 2) for x in pairs(f"{t}/get.{p}")]
if len(g) != len(set(g)) or set(g) != {(101, s) for s in range(fills)}:
    sys.exit(f"FAIL: GETMSG: {len(set(g))} distinct of {fills}, {len(g) - len(set(g))} twice")
print(f"agent siblings: {total} messages and {len(g)} GETMSGs, each once, whole, in order per sender")
PY

# Both agents of each node carried requests: the senders' ports were spread over them.
for r in 0 1; do
	st=$(A $r -j agent status)
	jq -e '[.agents[] | .gateway.requests > 0] | all' <<<"$st" >/dev/null ||
		fail "node $r: an agent carried no request: $(jq -c '[.agents[].gateway]' <<<"$st")"
done
# Stealing: 4 MiB messages one after another (each sender process is a port of its own, on
# either agent), 64 chunks each, of which the 1 MiB ejection cap lets the target read 8 at a
# time; the rest wait on the agent's board, and its idle sibling reads some of them.
head -c $((4 << 20)) /dev/urandom >"$T/big"
A 1 agent chan create big --bytes=$((64 << 20)) --max-msg=$((4 << 20))
for i in 1 2 3 4 5 6; do
	A 0 agent send 1/big "$T/big" --mode=deposited --timeout=20000 || fail "big send $i failed"
done
mkdir "$T/got-big"
A 1 agent recv big -n 6 --timeout=10000 --out="$T/got-big" >/dev/null || fail "node 1 got fewer than 6 big messages"
want=$(sha256sum <"$T/big" | cut -d' ' -f1)
for f in "$T"/got-big/*; do
	[ "$(sha256sum <"$f" | cut -d' ' -f1)" = "$want" ] || fail "big message $f differs"
done
stolen_both() {
	s=$(A 1 -j agent status | jq -c '[([.agents[].steal.steals] | add), ([.agents[].steal.stolen] | add)]')
	[ "$(jq '.[0] > 0 and .[0] == .[1]' <<<"$s")" = true ]
}
wait_for stolen_both || fail "no READ stolen, or thief and owner disagree: $(A 1 -j agent status | jq -c '[.agents[].steal]')"
echo "agent siblings: stealing on node 1: $(A 1 -j agent status | jq -c '[.agents[].steal]')"

# A sibling killed (SIGKILL) in the middle of big sends: the sends through its rail fail within
# their timeout, the others complete, and what arrived is whole and there once (a deposited
# message whose answer died with the agent may be there too).
A 1 agent chan create kill --bytes=$((64 << 20)) --max-msg=$((4 << 20))
for i in 0 1 2 3 4 5; do
	{ printf 'big-%d\n' $i; head -c $((3 << 20)) "$T/big"; } >"$T/kill.$i"
done
(
	for i in 0 1 2 3 4 5; do
		if A 0 agent send 1/kill "$T/kill.$i" --mode=deposited --timeout=8000 2>/dev/null; then
			echo "big-$i" >>"$T/kill.ok"
		fi
	done
) &
sender=$!
sleep 0.3
kill -9 "$(cat "$T/a1/agent.1.1.pid")"
rm "$T/a1/agent.1.1.pid" # its pid may be another process's by the end
wait $sender
touch "$T/kill.ok"
mkdir "$T/got-kill"
A 1 agent recv kill -n 0 --timeout=1000 --out="$T/got-kill" >/dev/null || true
python3 - "$T" <<'PY' || exit 1
import hashlib, os, sys
t = sys.argv[1]
sent = {f"big-{i}": hashlib.sha256(open(f"{t}/kill.{i}", "rb").read()).hexdigest() for i in range(6)}
ok = set(open(f"{t}/kill.ok").read().split())
got = []
for name in sorted(os.listdir(f"{t}/got-kill")):
    body = open(f"{t}/got-kill/{name}", "rb").read()
    tag = body.split(b"\n", 1)[0].decode(errors="replace")
    if sent.get(tag) != hashlib.sha256(body).hexdigest():
        sys.exit(f"FAIL: after the kill, message {name} ({tag}) is not one that was sent, whole")
    got.append(tag)
if len(got) != len(set(got)) or not ok <= set(got) or not ok:
    sys.exit(f"FAIL: after the kill: sends that succeeded {sorted(ok)}, arrived {got}")
print(f"agent siblings: a sibling killed: {len(ok)} of 6 big sends succeeded, {len(got)} arrived, all whole, once")
PY
for r in 0 1; do A $r -q agent stop || fail "stop $r"; done
[ -z "$(ls "$T"/a*/*.pid 2>/dev/null)" ] || fail "pid files left: $(ls "$T"/a*/*.pid)"
# In the foreground: sibling 0 runs the others as children, and stopping it stops them all.
mkdir -m 700 "$T/a2"
RDMATOOL_AGENT_DIR=$T/a2 "$RDMATOOL" agent foreground --agents-per-node=2 2>"$T/a2/fg.log" &
fg=$!
both_running() { [ "$(A 2 -j agent status | jq '[.agents[] | select(.running)] | length')" = 2 ]; }
wait_for both_running || fail "foreground: not both agents run: $(A 2 agent status 2>&1)"
kill -TERM $fg
wait $fg || fail "foreground exited $? on SIGTERM"
[ -z "$(ls "$T"/a2/*.pid 2>/dev/null)" ] || fail "foreground left agents running: $(ls "$T"/a2)"
if grep -l 'Sanitizer' "$T"/a*/*.log >/dev/null 2>&1; then
	fail "sanitizer report in an agent log: $(grep -h -A20 'Sanitizer' "$T"/a*/*.log | head -40)"
fi
echo "agent siblings: ok"
