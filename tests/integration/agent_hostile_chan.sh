#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Channels another process of the user broke (issue 44, N4 and N5).  On
# node 1 a process takes channel "held"'s lock and stops itself (as Ctrl-Z
# or a debugger would), and channel "bad" has its ring tail pointing far
# outside the ring.  The agent must go on serving the other channels: a
# remote deposited send to "other" succeeds (within its 10 s timeout; the
# old agent never served it once blocked); one to "held" ends
# with its timeout, a local recv on it too, and status shows it locked
# instead of hanging; one to "bad" fails as corrupt, and the agent lives;
# so does one to "cut", a channel the agent has mapped whose file another
# process cut to its header (writing there would raise SIGBUS).
# (The old agent blocked on the lock forever and died on the bad offsets.)
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$(dirname "$0")/lib/two_agents.sh" hostile-chan
holder=
stop_holder() { [ -n "$holder" ] && { kill -CONT "$holder"; kill "$holder"; } 2>/dev/null; true; }
trap 'stop_holder; cleanup' EXIT
start_two
for c in held other bad; do A 1 agent chan create $c || fail "create $c"; done
echo 12345678 | head -c 8 >"$T/msg"
A 1 agent send bad "$T/msg" || fail "send to bad"

# bad: the tail {seq 1, offset 24} after one 8-byte message, rewritten to point far outside the ring.
python3 - "$T/a1/chan.bad" <<'PY' || fail "could not corrupt the channel"
import mmap, struct, sys
with open(sys.argv[1], "r+b") as f:
    m = mmap.mmap(f.fileno(), 4096)
    want = struct.pack("<Q", 1 << 32 | 24)
    at = next(o for o in range(0, 4096, 8) if m[o:o + 8] == want)
    m[at:at + 8] = struct.pack("<Q", 2 << 32 | 0x7FFFFFF0)
PY

# held: a process takes the lock (the first thing on the header's second cache line) and stops.
python3 - "$T/a1/chan.held" >"$T/holder.out" <<'PY' &
import ctypes, mmap, os, signal, sys
f = open(sys.argv[1], "r+b")
m = mmap.mmap(f.fileno(), 4096)
lock = ctypes.addressof((ctypes.c_char * 4096).from_buffer(m)) + 64
libc = ctypes.CDLL(None)
print(libc.pthread_mutex_lock(ctypes.c_void_p(lock)), flush=True)
os.kill(os.getpid(), signal.SIGSTOP)
libc.pthread_mutex_unlock(ctypes.c_void_p(lock))
PY
holder=$!
stopped() { [ "$(cat "$T/holder.out" 2>/dev/null)" = 0 ] && grep -q '^State:.*T' "/proc/$holder/status"; }
wait_for stopped || fail "the lock holder did not take the lock and stop: $(cat "$T/holder.out")"

start=$(date +%s%N)
A 0 agent send 1/other "$T/msg" --mode=deposited --timeout=10000 || fail "a send to another channel failed"
ms=$((($(date +%s%N) - start) / 1000000))
rc=0
timeout 20 env RDMATOOL_AGENT_DIR="$T/a0" "$RDMATOOL" agent send 1/held "$T/msg" --mode=deposited --timeout=1000 \
	2>"$T/held.err" || rc=$?
[ $rc = 1 ] && grep -q "timed out" "$T/held.err" || fail "a send to the held channel: exit $rc: $(cat "$T/held.err")"
# The agent still tries the held channel's request; other channels are served meanwhile.
A 0 agent send 1/other "$T/msg" --mode=deposited --timeout=10000 || fail "a send to another channel after one to the held channel failed"
rc=0
timeout 20 env RDMATOOL_AGENT_DIR="$T/a1" "$RDMATOOL" agent recv held --timeout=500 2>"$T/recv.err" >/dev/null || rc=$?
[ $rc = 1 ] || fail "a local recv on the held channel: exit $rc: $(cat "$T/recv.err")"
st=$(timeout 20 env RDMATOOL_AGENT_DIR="$T/a1" "$RDMATOOL" -j agent status) || fail "status hung or failed"
jq -e '.channels[] | select(.name == "held") | .state | test("locked")' <<<"$st" >/dev/null ||
	fail "status does not show the held channel locked: $(jq -c .channels <<<"$st")"
jq -e '.channels[] | select(.name == "bad") | .state | test("corrupt")' <<<"$st" >/dev/null ||
	fail "status does not show the bad channel corrupt: $(jq -c .channels <<<"$st")"

rc=0
A 0 agent send 1/bad "$T/msg" --mode=deposited --timeout=5000 2>"$T/bad.err" || rc=$?
[ $rc = 1 ] && grep -q "corrupt" "$T/bad.err" || fail "a send to the corrupt channel: exit $rc: $(cat "$T/bad.err")"
kill -0 "$(cat "$T/a1/agent.1.pid")" || fail "the agent died serving a corrupt channel"
grep -q "channel bad is corrupt" "$T/a1/agent.1.log" || fail "the agent did not log the corrupt channel"
A 0 agent send 1/other "$T/msg" --mode=deposited --timeout=10000 || fail "the agent stopped serving after the corrupt channel"

# cut: a channel the agent has served (kept mapped) is cut to its header by another process.
A 1 agent chan create cut || fail "create cut"
A 0 agent send 1/cut "$T/msg" --mode=deposited --timeout=5000 || fail "a send to cut before it was cut"
truncate -s 4096 "$T/a1/chan.cut"
sleep 0.05 # the agent looks at a served channel's file again after 10 ms
rc=0
A 0 agent send 1/cut "$T/msg" --mode=deposited --timeout=5000 2>"$T/cut.err" || rc=$?
[ $rc = 1 ] && grep -q "corrupt" "$T/cut.err" || fail "a send to a channel cut short: exit $rc: $(cat "$T/cut.err")"
kill -0 "$(cat "$T/a1/agent.1.pid")" || fail "the agent died writing into a channel cut short (SIGBUS)"

stop_holder
wait "$holder" 2>/dev/null || true
holder=
[ "$(A 1 agent recv other -n 3 --timeout=5000 | wc -c)" = 24 ] || fail "the three messages to 'other' are not there"
for r in 0 1; do A $r -q agent stop || fail "stop $r"; done
echo "agent hostile channels: a stopped lock holder and a corrupt ring cost the agent nothing ($ms ms send)"
