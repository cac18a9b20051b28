#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# GETMSG from another node: messages larger than a gateway slot (512 KiB, up
# to 4 MiB) come back whole (chunked answers, a spill file to the client),
# and a GETMSG that times out never loses a message.  Three agents on one
# machine; two processes on node 1 put numbered, checksummed messages into a
# channel; processes on nodes 0 and 2 drain it with GETMSGs whose timeouts
# (3 ms, 50 ms) keep expiring while messages arrive.  Every message is
# received exactly once, whole, in order per sender and reader; no spill
# file is left behind; a message bigger than the reader's buffer stays in
# the channel (EMSGSIZE) and is received whole by a bigger one.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$(dirname "$0")/lib/three_agents.sh" getmsg traffic
start_agents
A 1 agent chan create g --capacity=32 --bytes=$((48 << 20)) --max-msg=$((4 << 20))

FILLS=40
pids=()
for id in 101 102; do
	X 1 send g $id $FILLS $id $((4 << 20)) >"$T/send.$id" &
	pids+=($!)
done
X 0 recv 1/g 4000 0 3 >"$T/get.0a" &
pids+=($!)
X 0 recv 1/g 4000 0 3 >"$T/get.0b" &
pids+=($!)
X 2 recv 1/g 4000 0 50 >"$T/get.2" &
pids+=($!)
for p in "${pids[@]}"; do wait "$p" || fail "a sender or GETMSG reader failed: $(tail -n2 "$T"/get.* "$T"/send.*)"; done

python3 - "$T" "$FILLS" <<'PY' || exit 1
import glob, sys
t, fills = sys.argv[1], int(sys.argv[2])
got, timeouts, big = [], 0, 0
for f in glob.glob(f"{t}/get.*"):
    for line in open(f):
        w = line.split()
        if w[0] == "received":
            timeouts += int(w[3])
            continue
        got.append((int(w[0]), int(w[1])))
        big += int(w[2]) > 524288
want = {(i, s) for i in (101, 102) for s in range(fills)}
if len(got) != len(set(got)) or set(got) != want:
    sys.exit(f"FAIL: {len(set(got))} distinct of {len(want)} messages, {len(got) - len(set(got))} twice")
if big == 0:
    sys.exit("FAIL: no message over 512 KiB was received (the mix should hold some)")
if timeouts == 0:
    sys.exit("FAIL: no GETMSG timed out: the test did not race timeouts with arrivals")
print(f"agent getmsg: {len(got)} messages ({big} over 512 KiB) each once, in order, "
      f"across {timeouts} GETMSG timeouts")
PY
ls "$T/a0" | grep -q spill && fail "spill files left on node 0: $(ls "$T/a0")"

# Bigger than the reader's buffer: stays in the channel; a big enough GETMSG takes it whole.
head -c 3000000 /dev/urandom >"$T/big"
A 1 agent send g "$T/big" || fail "local send of 3 MB"
sum=$(sha256sum <"$T/big" | cut -d' ' -f1)
out=$(A 0 -j agent recv 1/g --timeout=5000) || fail "remote recv of 3 MB: $out"
[ "$(jq -r .sha256 <<<"$out")" = "$sum" ] || fail "the 3 MB message came back changed: $out"
[ "$(jq -r .len <<<"$out")" = 3000000 ] || fail "wrong length: $out"
A 1 agent send g "$T/big" || fail "local send of 3 MB"
rc=0
X 0 recv 1/g 2000 1 2000 100000 >"$T/small" 2>&1 || rc=$?
[ $rc -ne 0 ] && grep -q "too long" "$T/small" || fail "a 100 kB reader took a 3 MB message: $(cat "$T/small")"
[ "$(A 1 -j agent status | jq '[.channels[] | select(.name == "g")][0].count')" = 1 ] ||
	fail "the message a small reader could not take left the channel: $(A 1 -j agent status | jq .channels)"

for r in 0 1 2; do A $r -q agent stop || fail "stop $r"; done
if grep -l 'Sanitizer' "$T"/a*/agent.*.log >/dev/null 2>&1; then
	fail "sanitizer report in an agent log: $(grep -h -A20 'Sanitizer' "$T"/a*/agent.*.log | head -40)"
fi
echo "agent getmsg: ok"
