#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# A remote GETMSG whose client was killed must not take a message (issue 44
# N6).  A receiver on node 0 waits (60 s timeout) on an empty channel of node
# 1 and is killed.  Its agent withdraws the GETMSG at node 1 (the gateway
# slot comes back), so the two messages then sent into the channel stay
# there, in order: the old agent took the first for nobody (lost, or put
# back behind the second).
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$(dirname "$0")/lib/two_agents.sh" getmsg-orphan
start_two
A 1 agent chan create g || fail "create g"

for round in 1 2 3 4; do
	RDMATOOL_AGENT_DIR=$T/a0 "$RDMATOOL" agent recv 1/g --timeout=60000 >"$T/got.$round" 2>&1 &
	reader=$!
	waiting() { [ "$(A 1 -j agent status | jq '.peers[0].retries')" -gt "${retries:-0}" ]; }
	wait_for waiting || fail "round $round: the GETMSG does not wait at node 1"
	kill -9 $reader
	wait $reader 2>/dev/null || true
	slot_free() { [ "$(A 0 -j agent status | jq .gateway.depth)" = 0 ]; }
	wait_for slot_free || fail "round $round: the dead receiver's GETMSG is still held: $(A 0 -j agent status | jq -c .gateway)"
	retries=$(A 1 -j agent status | jq '.peers[0].retries')
	printf 'first-%s' $round | A 1 agent send g || fail "send first"
	printf 'second-%s' $round | A 1 agent send g || fail "send second"
	got=$(A 1 agent recv g -n 2 --timeout=5000) || fail "round $round: the messages are not both in the channel: $got"
	[ "$got" = "first-${round}second-${round}" ] || fail "round $round: the channel gave '$got'"
done
grep -q "for a client that died" "$T/a0/agent.0.log" && fail "a message was taken for a dead client: $(grep 'client that died' "$T/a0/agent.0.log")"
for r in 0 1; do A $r -q agent stop || fail "stop $r"; done
echo "agent getmsg orphan: 4 of 4 GETMSGs of killed receivers took nothing"
