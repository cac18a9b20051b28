#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Three agents on one machine, each with its own directory and port, linked
# over the soft device: remote SENDMSG (buffered, deposited, received),
# GETMSG and POLL; several client processes on two nodes sending numbered
# messages to a channel on the third (every message exactly once, in order
# per sender); a peer killed with SIGKILL is seen down and fails requests
# fast (a send waiting at it too: ECONNRESET, not its timeout), and rejoins
# when it is started again.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
A_TIMEOUT=30 # no client call of this test takes longer
. "$(dirname "$0")/lib/three_agents.sh" net
run() {
	set +e
	A "$@" >"$T/out" 2>"$T/err"
	rc=$?
	set -e
}

start_agents

A 1 agent chan create q
A 2 agent chan create src
[ "$(stat -c %a "$T/key")" = 600 ] || fail "the key file is not 0600"

# A process without the key cannot join: it gets a challenge it cannot answer, and the agent goes on.
port0=${hosts%%,*}
port0=${port0##*:}
python3 - "$port0" <<'PY' || fail "the forger could not even talk to the agent"
import os, socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
def frame(t, payload):
    return b"ROB1" + struct.pack(">HHI", t, 0, len(payload)) + payload
s.sendall(frame(0x4148, struct.pack("<III", 2, 2, 1) + os.urandom(16)))  # HELLO: rank 2, node 2, 1 agent
hdr = s.recv(12)
assert hdr[:4] == b"ROB1", hdr
s.sendall(frame(0x4150, bytes(32)))                                 # a PROOF it cannot compute
s.settimeout(5)
try:
    rest = s.recv(4096)
except (ConnectionResetError, socket.timeout):
    rest = b""
PY
wait_for grep -q 'does not hold this user.s agent key' "$T/a0/agent.0.log" || fail "the forger was not refused: $(cat "$T/a0/agent.0.log")"
links_up 0 || fail "the forger broke a link"
printf 'key' >"$T/badkey"
chmod 644 "$T/badkey"
mkdir -m 700 "$T/bad"
set +e
RDMATOOL_AGENT_KEY=$T/badkey RDMATOOL_AGENT_DIR=$T/bad timeout 30 "$RDMATOOL" agent start --hosts="$hosts" --rank=2 \
	>"$T/out" 2>"$T/err"
rc=$?
set -e
[ $rc -eq 1 ] && grep -q 'mode 0600' "$T/err" || fail "a key readable by others was used: $rc $(cat "$T/err")"

# One message each way, each return mode, with its bytes intact.
head -c 50000 /dev/urandom >"$T/blob"
A 0 agent send 1/q "$T/blob" --mode=deposited --timeout=5000 || fail "deposited send"
[ "$(A 1 -j agent recv q --timeout=2000 | jq -r .sha256)" = "$(sha256sum <"$T/blob" | cut -d' ' -f1)" ] ||
	fail "the message changed on the way"
printf 'buffered' | A 2 agent send 1/q || fail "buffered send"
[ "$(A 0 agent recv 1/q --timeout=5000)" = buffered ] || fail "GETMSG from node 0 of a message node 2 sent"
printf 'r' | A 0 agent send 1/q --mode=received --timeout=10000 &
sender=$!
wait_for sh -c "[ \"\$(RDMATOOL_AGENT_DIR=$T/a1 \"$RDMATOOL\" -j agent poll q | jq .count)\" = 1 ]" ||
	fail "the 'received' message never arrived"
kill -0 $sender 2>/dev/null || fail "'received' returned before anyone took the message"
[ "$(A 1 agent recv q)" = r ] || fail "wrong 'received' message"
wait $sender || fail "'received' send failed after the message was taken"
run 0 agent recv 1/q --timeout=200
[ $rc -eq 1 ] && grep -q '0 of 1 message(s) within 200 ms' "$T/err" || fail "remote GETMSG timeout: $rc $(cat "$T/err")"
run 0 -j agent poll 1/q
[ $rc -eq 0 ] && [ "$(jq .empty "$T/out")" = true ] || fail "remote POLL: $rc $(cat "$T/out" "$T/err")"
run 0 agent send 1/nosuch --mode=deposited --timeout=1000 </dev/null
[ $rc -eq 1 ] && grep -q 'no such channel' "$T/err" || fail "remote missing channel: $rc $(cat "$T/err")"

# Per-peer statistics in agent status (published every 100 ms): node 0's link to node 1 carried the
# requests above and their answers, and its last error is the missing channel; node 1 retried node
# 0's GETMSG on the empty channel and had no error of its own.
peer_ok() { # RANK PEER CONDITION: jq CONDITION holds for PEER's entry in RANK's status
	A "$1" -j agent status | jq -e --argjson p "$2" "[.peers[] | select(.rank == \$p) | $3] == [true]" >/dev/null
}
wait_for peer_ok 0 1 '.msgs_sent >= 6 and .msgs_received >= 6 and .bytes_sent > .msgs_sent * 12 and
	.bytes_received > .msgs_received * 12 and .last_error_text == "No such file or directory"' ||
	fail "node 0's stats of peer 1: $(A 0 -j agent status | jq -c '.peers')"
wait_for peer_ok 1 0 '.msgs_received >= 6 and .msgs_sent >= 6 and .retries >= 1 and .last_error == 0' ||
	fail "node 1's stats of peer 0: $(A 1 -j agent status | jq -c '.peers')"
A 0 agent status | grep -Eq '^  peer 1 127\.0\.0\.1: up; sent [1-9][0-9]* messages \([1-9][0-9]* bytes\), received [1-9].*retries, last error: No such file or directory$' ||
	fail "text status of peer 1: $(A 0 agent status)"

# Clients on nodes 0 and 2 send numbered messages to node 1: each arrives once, in order per sender.
pids=()
for node in 0 2; do
	for p in 1 2; do
		(for i in $(seq -w 1 40); do
			printf 'n%s-p%s-%s' "$node" "$p" "$i" | A $node agent send 1/q --mode=deposited --timeout=10000 || exit 1
		done) &
		pids+=($!)
	done
done
for p in "${pids[@]}"; do wait "$p" || fail "a sender failed"; done
mkdir "$T/got"
A 1 agent recv q -n 160 --timeout=5000 --out="$T/got" || fail "node 1 got fewer than 160 messages"
run 1 agent recv q --timeout=200
[ $rc -eq 1 ] || fail "more than 160 messages arrived"
for f in "$T"/got/*; do cat "$f"; echo; done >"$T/all"
[ "$(sort -u "$T/all" | wc -l)" = 160 ] || fail "duplicates or losses: $(sort "$T/all" | uniq -d | head -3)"
for node in 0 2; do
	for p in 1 2; do
		grep "^n$node-p$p-" "$T/all" >"$T/one"
		sort -c "$T/one" 2>/dev/null || fail "messages of n$node-p$p out of order"
	done
done
# A channel destroyed and made again is a new channel, also for the agent that serves it.
A 1 agent chan destroy q
A 1 agent chan create q --capacity=4
printf 'new' | A 0 agent send 1/q --mode=deposited --timeout=5000 || fail "send to a re-created channel"
[ "$(A 1 -j agent poll q | jq -c '[.count, .capacity]')" = "[1,4]" ] || fail "the agent sent into the old channel"
A 1 agent recv q >/dev/null
# Remote GETMSG drains a channel exactly once too.
for i in 1 2 3; do printf "s$i" | A 2 agent send src; done
[ "$(A 0 agent recv 2/src -n 3 --timeout=5000)" = s1s2s3 ] || fail "remote drain"

# A peer dies: the others see it down and fail requests to it fast; it comes back and rejoins.
# A deposited send waiting at it (its channel is full) when it dies fails within a few seconds,
# well before its 20 s timeout, as "outcome unknown" (ECONNRESET): it was in flight.
A 2 agent chan create full --capacity=1
printf 'x' | A 2 agent send full
(
	rc=0
	A 0 agent send 2/full --mode=deposited --timeout=20000 </dev/null >"$T/inflight.out" 2>&1 || rc=$?
	echo "$rc $(date +%s%N)" >"$T/inflight.rc"
) &
inflight=$!
retrying() { [ "$(A 2 -j agent status | jq '.peers[] | select(.rank == 0) | .retries > 0')" = true ]; }
wait_for retrying || fail "the send to the full channel is not waiting at rank 2: $(A 2 -j agent status | jq -c .peers)"
killed=$(date +%s%N)
kill -9 "$(cat "$T/a2/agent.2.pid")"
wait $inflight
read -r irc idone <"$T/inflight.rc"
[ "$irc" = 1 ] && grep -q 'may or may not have been done' "$T/inflight.out" ||
	fail "the send waiting at the dead peer: rc $irc: $(cat "$T/inflight.out")"
[ $(((idone - killed) / 1000000)) -lt 5000 ] || fail "the waiting send failed $(((idone - killed) / 1000000)) ms after the kill"
echo "agent net: a send waiting at a killed peer failed $(((idone - killed) / 1000000)) ms after the kill: $(cat "$T/inflight.out")"
wait_for sh -c "[ \"\$(RDMATOOL_AGENT_DIR=$T/a0 \"$RDMATOOL\" -j agent status | jq -r '.peers[] | select(.rank == 2) | .state')\" = down ]" ||
	fail "rank 0 does not see rank 2 down"
start=$(date +%s)
run 0 agent send 2/src --mode=deposited --timeout=20000 </dev/null
[ $rc -eq 1 ] && grep -q 'no link to that node' "$T/err" || fail "send to a dead peer: $rc $(cat "$T/err")"
[ $(($(date +%s) - start)) -le 3 ] || fail "a send to a dead peer took $(($(date +%s) - start)) s"
printf 'still' | A 0 agent send 1/q --mode=deposited --timeout=5000 || fail "traffic between the others stopped"
[ "$(A 1 agent recv q --timeout=1000)" = still ] || fail "traffic between the others"
A 2 -q agent start --hosts="$hosts" --rank=2 || fail "rank 2 did not restart"
wait_for links_up 0 || fail "rank 2 did not rejoin rank 0"
wait_for links_up 2 || fail "rank 2 did not rejoin: $(A 2 agent status)"
printf 'back' | A 0 agent send 2/src --mode=deposited --timeout=5000 || fail "send after rejoin"
[ "$(A 2 agent recv src --timeout=1000)" = back ] || fail "message after rejoin"

for r in 0 1 2; do A $r -q agent stop || fail "stop $r"; done
# Agents run detached: a sanitizer report (make asan / make tsan) lands in their logs.
if grep -l 'Sanitizer' "$T"/a*/agent.*.log >/dev/null 2>&1; then
	fail "sanitizer report in an agent log: $(grep -h -A20 'Sanitizer' "$T"/a*/agent.*.log | head -40)"
fi
echo "agent net: ok"
