#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# A client dies mid-request (SIGKILL): the agent releases what it held and nothing else is
# affected; and no message is lost.  Three agents.
#  1. A remote GETMSG waits at node 2 for a message; its client is killed and a message is sent
#     to the channel at once.  Either node 0 withdrew the GETMSG first (a CANCEL: it takes
#     nothing, agent_getmsg_orphan.sh) or it took the message, which came back to node 0 for
#     nobody and was returned to the channel (logged); either way node 0 reclaims the slot
#     (gateway.reaped, depth back to 0) and the next reader gets the message.  Once with a small
#     message, once with one of 200 KB (returned in chunks), compared byte for byte.
#  2. A deposited send waits at node 2 for room in a full channel; its client is killed: the
#     other agents' traffic goes on, once room is made the message lands once (the agent had
#     taken it), and its answer, for nobody, frees the slot (reclaimed).
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$(dirname "$0")/lib/three_agents.sh" cdeath
start_agents
A 2 agent chan create src
gateway() { A 0 -j agent status | jq -c .gateway; }
# the retries node 2 counted for node 0's requests (a request waiting at it retries)
retries() { A 2 -j agent status | jq '.peers[] | select(.rank == 0) | .retries'; }
reaped_is() { [ "$(gateway | jq "[.reaped, .depth] == [$1, 0]")" = true ]; }

n=0
for size in 5 $((200 << 10)); do
	head -c "$size" /dev/urandom >"$T/msg.$size"
	before=$(retries)
	RDMATOOL_AGENT_DIR=$T/a0 "$RDMATOOL" agent recv 2/src --timeout=30000 >/dev/null 2>&1 &
	client=$!
	wait_for eval "[ \$(retries) -gt $before ]" || fail "the GETMSG is not waiting at node 2: $(A 2 -j agent status | jq -c .peers)"
	kill -9 $client
	wait $client 2>/dev/null || true
	n=$((n + 1))
	A 2 agent send src "$T/msg.$size" || fail "send $size B"
	wait_for reaped_is $n || fail "node 0 did not reclaim the dead client's slot: $(gateway)"
	mkdir "$T/got.$size"
	A 0 agent recv 2/src -n 1 --timeout=5000 --out="$T/got.$size" >/dev/null || fail "$size B: the message was lost"
	cmp -s "$T/msg.$size" "$T"/got.$size/* || fail "$size B: the returned message differs"
	[ "$(A 2 -j agent poll src | jq .count)" = 0 ] || fail "$size B: the message is there twice"
	echo "agent client death: a GETMSG's $size B message outlived its dead client"
done

# 2: a deposited send waiting for room, its client killed.
A 2 agent chan create full --capacity=1
printf 'a' | A 2 agent send full
before=$(retries)
printf 'b' >"$T/b"
RDMATOOL_AGENT_DIR=$T/a0 "$RDMATOOL" agent send 2/full "$T/b" --mode=deposited --timeout=30000 >/dev/null 2>&1 &
client=$!
wait_for eval "[ \$(retries) -gt $before ]" || fail "the send is not waiting at node 2"
kill -9 $client
wait $client 2>/dev/null || true
A 1 agent chan create q
printf 'still' | A 0 agent send 1/q --mode=deposited --timeout=5000 || fail "traffic stopped after the client died"
[ "$(A 1 agent recv q --timeout=1000)" = still ] || fail "traffic after the client died"
[ "$(A 2 agent recv full --timeout=1000)" = a ] || fail "the first message of full"
[ "$(A 2 agent recv full --timeout=5000)" = b ] || fail "the dead client's message did not land"
n=$((n + 1))
wait_for reaped_is $n || fail "node 0 did not reclaim the dead sender's slot: $(gateway)"
[ "$(A 2 -j agent poll full | jq .count)" = 0 ] || fail "the dead client's message landed twice"
for r in 0 1 2; do A $r -q agent stop || fail "stop $r"; done
if grep -l 'Sanitizer' "$T"/a*/agent.*.log >/dev/null 2>&1; then
	fail "sanitizer report in an agent log: $(grep -h -A20 'Sanitizer' "$T"/a*/agent.*.log | head -40)"
fi
echo "agent client death: ok"
