#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Nodes that disagree on --agents-per-node: node 0 runs 2 agents, node 1 runs 1.  Link ranks
# are virtual (node x agents per node + sibling), so without a check the nodes would link under
# wrong ranks or retry for ever.  The handshake carries each side's count (under the key's
# proof): both nodes mark the other "mismatch" in agent status -j with its count, their logs name
# both nodes and counts, and a send to the other node fails at once (well inside its timeout)
# with an error that says so instead of hanging; node 0's second agent, whose rail node 1 never
# dials, learns it from the first.  Node 1 restarted with 2 agents rejoins: the links
# come up and a message goes through.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$(dirname "$0")/lib/agent_nodes.sh" mismatch 2 2
for r in 0 1; do mkdir -m 700 "$T/a$r"; done

A 0 -q agent start --hosts="$hosts" --rank=0 --agents-per-node=2 || fail "node 0 did not start"
A 1 -q agent start --hosts="$hosts" --rank=1 --agents-per-node=1 || fail "node 1 did not start"
# peer STATE and its agents_per_node, as the node's first agent sees it
peer_is() { # node state count
	[ "$(A "$1" -j agent status | jq -r '.peers[0] | "\(.state) \(.agents_per_node)"')" = "$2 $3" ]
}
wait_for peer_is 0 mismatch 1 || fail "node 0 does not see the mismatch: $(A 0 -j agent status | jq -c .peers)"
wait_for peer_is 1 mismatch 2 || fail "node 1 does not see the mismatch: $(A 1 -j agent status | jq -c .peers)"
A 1 agent status | grep -q "mismatch (it runs 2 agents per node" || fail "text status: $(A 1 agent status)"
grep -q "node 0 (127.0.0.1) runs 2 agent(s) per node but this node (1) runs 1" "$T"/a1/agent.1.log ||
	fail "node 1's log: $(cat "$T"/a1/agent.1.log)"
grep -q "node 1 (127.0.0.1) runs 1 agent(s) per node but this node (0) runs 2" "$T"/a0/agent.0.log ||
	fail "node 0's log: $(cat "$T"/a0/agent.0.log)"
[ "$(grep -c 'agent(s) per node but' "$T"/a1/agent.1.log)" = 1 ] || fail "said more than once: $(cat "$T"/a1/agent.1.log)"

# A send across fails at once, not after its 20 s timeout.
A 0 agent chan create q
echo hello >"$T/msg"
start=$(date +%s%N)
rc=0
out=$(A 1 agent send 0/q "$T/msg" --mode=deposited --timeout=20000 2>&1) || rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
[ $rc -ne 0 ] || fail "a send across the mismatch succeeded: $out"
[ $ms -lt 5000 ] || fail "the send took $ms ms to fail: $out"
grep -q "runs another count of agents per node" <<<"$out" || fail "the send's error does not say what: $out"
echo "agent mismatch: send refused in $ms ms: $out"

# Node 0's second agent, which node 1 never dials (node 1 knows no rail 1), learns it from
# node 0's first agent: both show the mismatch, and sends from node 0 fail at once whichever
# agent they were dealt (two sends: one through each).
both_mismatch() {
	[ "$(A 0 -j agent status | jq '[.agents[] | select(.peers[0].state == "mismatch" and .peers[0].agents_per_node == 1)] | length')" = 2 ]
}
wait_for both_mismatch || fail "node 0's agents: $(A 0 -j agent status | jq -c '[.agents[].peers]')"
A 1 agent chan create q
for i in 1 2; do
	rc=0
	out=$(A 0 agent send 1/q "$T/msg" --mode=deposited --timeout=20000 2>&1) || rc=$?
	[ $rc -ne 0 ] && grep -q "runs another count of agents per node" <<<"$out" || fail "send $i from node 0: rc $rc: $out"
done
[ "$(A 0 -j agent status | jq -c '[.agents[].gateway.failed]')" = "[1,1]" ] ||
	fail "the two sends did not go one through each agent: $(A 0 -j agent status | jq -c '[.agents[].gateway]')"

# Node 1 restarted with the same count as node 0: its links come up, the mismatch is gone.
A 1 -q agent stop || fail "stop node 1"
A 1 -q agent start --hosts="$hosts" --rank=1 --agents-per-node=2 || fail "node 1 did not restart"
rails_up() {
	[ "$(A "$1" -j agent status | jq '[.agents[] | select(.running and .peers[0].state == "up" and .peers[0].agents_per_node == 2)] | length')" = 2 ]
}
for r in 0 1; do wait_for rails_up $r || fail "node $r: rails not up after the restart: $(A $r -j agent status | jq -c '[.agents[].peers]')"; done
A 1 agent send 0/q "$T/msg" --mode=deposited --timeout=20000 || fail "send after the rejoin failed"
mkdir "$T/got"
A 0 agent recv q -n 1 --timeout=5000 --out="$T/got" >/dev/null || fail "nothing arrived after the rejoin"
cmp -s "$T/msg" "$T"/got/* || fail "the message differs"
for r in 0 1; do A $r -q agent stop || fail "stop $r"; done
if grep -l 'Sanitizer' "$T"/a*/*.log >/dev/null 2>&1; then
	fail "sanitizer report in an agent log: $(grep -h -A20 'Sanitizer' "$T"/a*/*.log | head -40)"
fi
echo "agent mismatch: ok"
