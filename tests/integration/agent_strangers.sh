#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Strangers on the agents' link ports must not stall the loop that moves
# data (issue 44, N2 and N3).  Three nodes: node 0 is not an agent but a
# stranger that listens on node 0's port, accepts and never answers; agents
# 1 and 2 link.  N3: agent 1 keeps redialling node 0 (the stranger) while
# node 2 sends to it.  N2: 20 idle connections are opened to agent 1's
# port.  In both cases a deposited send from node 2 to node 1 takes < 3 s
# (the old agent spent 2 s of its only loop on each such handshake: 24-40 s
# a send with 20 idle connections), and a process without the key is still
# refused.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$(dirname "$0")/lib/agent_nodes.sh" strangers 3 1
port_of() { cut -d, -f$(($1 + 1)) <<<"$hosts" | cut -d: -f2; }
up_with() { [ "$(A "$1" -j agent status | jq -r ".peers[] | select(.rank == $2) | .state")" = up ]; }
strangers=()
stop_strangers() { for p in "${strangers[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap 'stop_strangers; cleanup' EXIT

# The stranger on node 0's port: accepts everything and says nothing.
: >"$T/listener.out"
: >"$T/idle.out"
python3 - "$(port_of 0)" >"$T/listener.out" <<'PY' &
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(64)
print("listening", flush=True)
held = []
while True:
    c, _ = s.accept()
    held.append(c)
PY
strangers+=($!)
listening() { grep -q listening "$T/listener.out"; }
wait_for listening || fail "the stranger could not listen on node 0's port"
for r in 1 2; do
	mkdir -m 700 "$T/a$r"
	A $r -q agent start --hosts="$hosts" --rank=$r || fail "agent $r did not start: $(cat "$T/a$r/agent.$r.log")"
done
wait_for up_with 1 2 || fail "agents 1 and 2 did not link: $(A 1 agent status)"
A 1 agent chan create c || fail "create c"
echo hello >"$T/msg"

timed_sends() { # WHAT: five deposited sends from node 2 to node 1, under 3 s in all
	local start ms
	start=$(date +%s%N)
	for i in 1 2 3 4 5; do
		A 2 agent send 1/c "$T/msg" --mode=deposited --timeout=30000 || fail "$1: send $i failed"
	done
	ms=$((($(date +%s%N) - start) / 1000000))
	[ $ms -lt 3000 ] || fail "$1: five sends took $ms ms"
	echo "$1: five sends in $ms ms"
}
# N3: agent 1 redials node 0 every 200 ms and finds the stranger each time.
timed_sends "a stranger on a dead peer's port"
dialled() { grep -q "we dialled failed its handshake" "$T/a1/agent.1.log"; }
wait_for dialled || fail "agent 1 never gave up on the stranger: $(cat "$T/a1/agent.1.log")"
timed_sends "a stranger on a dead peer's port, dialled again"

# N2: 20 idle connections to agent 1's link port.
python3 - "$(port_of 1)" >"$T/idle.out" <<'PY' &
import socket, sys, time
held = [socket.create_connection(("127.0.0.1", int(sys.argv[1]))) for _ in range(20)]
print("connected", flush=True)
time.sleep(120)
PY
strangers+=($!)
connected() { grep -q connected "$T/idle.out"; }
wait_for connected || fail "the 20 idle connections were not made"
timed_sends "20 idle connections"

# Someone without the key who speaks the protocol is still refused, and the link stays up.
mkdir -m 700 "$T/x"
free=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
RDMATOOL_AGENT_KEY=$T/other-key RDMATOOL_AGENT_DIR=$T/x timeout 20 "$RDMATOOL" agent foreground \
	--hosts="$(cut -d, -f1-2 <<<"$hosts"),127.0.0.1:$free" --rank=2 >"$T/intruder.out" 2>&1 &
intruder=$!
strangers+=($intruder)
refused() { grep -q "does not hold this user's agent key" "$T/intruder.out"; }
wait_for refused || fail "a dialer without the key was not refused: $(tail -5 "$T/intruder.out")"
kill "$intruder" 2>/dev/null || true
up_with 1 2 || fail "the link between 1 and 2 went down"
[ "$(A 1 -j agent poll c | jq .count)" = 15 ] || fail "not every message arrived: $(A 1 agent poll c)"
for r in 1 2; do A $r -q agent stop || fail "stop $r"; done
echo "agent strangers: ok"
