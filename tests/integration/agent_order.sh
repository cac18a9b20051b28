#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Per-port order with many channels blocked at once on one target (issue 46,
# defect 2): 24 channels on node 1 are each filled so that a 30,000-byte
# message does not fit but a 100-byte one would; node 0 sends each channel
# the 30,000-byte message and then the 100-byte one.  Every channel blocks,
# and none may take its 100-byte message before its 30,000-byte one (the old
# code remembered 16 blocked channels per pass and let the 17th's small
# message overtake).  Draining each channel then gives fill, 30,000, 100.
# Also: a remote poll reports the channel's limits (defect 5), and large
# messages waiting at a target for a full channel hold heap memory only up
# to the heap cap (defect 7): node 1 runs with a 4 MiB cap and three 3 MiB
# messages wait for one channel; the gauge never passes the cap, and all
# three arrive whole and in order once the channel drains.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$(dirname "$0")/lib/two_agents.sh" order
A_ENV_1=RDMATOOL_AGENT_MAX_HEAP_MB=4 start_two

N=24
head -c 40000 /dev/zero >"$T/fill"
head -c 30000 /dev/zero | tr '\0' 'B' >"$T/big"
head -c 100 /dev/zero | tr '\0' 's' >"$T/small"
for i in $(seq $N); do
	A 1 agent chan create c$i --capacity=16 --bytes=65536 --max-msg=40000 || fail "create c$i"
	A 1 agent send c$i "$T/fill" || fail "fill c$i"
done
A 1 agent chan create probe || fail "create probe"
# A remote poll reports the channel's limits and totals, not zeros (issue 46 defect 5).
st=$(A 0 -j agent poll 1/c1) || fail "remote poll: $st"
[ "$(jq -c '[.count, .capacity, .capacity_bytes, .max_msg, .sent, .received]' <<<"$st")" = "[1,16,65536,40000,1,0]" ] ||
	fail "a remote poll reported $st"
for i in $(seq $N); do A 0 agent send 1/c$i "$T/big" --mode=buffered || fail "big to c$i"; done
for i in $(seq $N); do A 0 agent send 1/c$i "$T/small" --mode=buffered || fail "small to c$i"; done
# The link keeps order: once this is deposited, node 1 has every request above and has tried each.
A 0 agent send 1/probe "$T/small" --mode=deposited --timeout=20000 || fail "probe not deposited"
A 1 agent recv probe --timeout=5000 >/dev/null || fail "probe not received"
for i in $(seq $N); do
	count=$(A 1 -j agent poll c$i | jq .count)
	[ "$count" = 1 ] || fail "channel c$i holds $count messages: the 100-byte message overtook the blocked 30,000-byte one"
done
for i in $(seq $N); do
	lens=$(A 1 -j agent recv c$i -n 3 --timeout=10000 | jq -r .len | tr '\n' ' ')
	[ "$lens" = "40000 30000 100 " ] || fail "channel c$i gave messages of $lens bytes; want 40000 30000 100"
done

# Large messages waiting for a full channel: the heap gauge holds at its cap.
A 1 agent chan create h --capacity=1 --max-msg=$((4 << 20)) --bytes=$((5 << 20)) || fail "create h"
A 1 agent send h "$T/small" || fail "fill h"
for k in 1 2 3; do head -c $((3 << 20)) /dev/urandom >"$T/large.$k"; done
(for k in 1 2 3; do A 0 agent send 1/h "$T/large.$k" --mode=buffered || exit 1; done) 2>"$T/large.err" &
sender=$!
heap() { A 1 -j agent status | jq ".flow.heap.$1"; }
holding() { [ "$(heap pending_bytes)" -ge $((3 << 20)) ] && [ "$(A 1 -j agent status | jq '.peers[0].retries > 0')" = true ]; }
wait_for holding || fail "no large message waits at node 1: $(A 1 -j agent status | jq -c .flow.heap)"
[ "$(heap cap_bytes)" = $((4 << 20)) ] || fail "heap cap: $(heap cap_bytes)"
[ "$(A 1 agent recv h --timeout=5000)" = "$(cat "$T/small")" ] || fail "the fill of h"
for k in 1 2 3; do
	got=$(A 1 -j agent recv h --timeout=20000) || fail "large message $k not received: $got"
	[ "$(jq -r .sha256 <<<"$got")" = "$(sha256sum <"$T/large.$k" | cut -d' ' -f1)" ] ||
		fail "large message $k came out changed or out of order: $got"
done
wait $sender || fail "the large sends failed: $(cat "$T/large.err")"
heap_free() { [ "$(heap pending_bytes)" = 0 ]; }
wait_for heap_free || fail "heap still held after delivery: $(heap pending_bytes)"
hwm=$(heap hwm_bytes)
[ "$hwm" -le $((4 << 20)) ] && [ "$hwm" -ge $((3 << 20)) ] || fail "heap high-water mark $hwm bytes against a 4 MiB cap"
for r in 0 1; do A $r -q agent stop || fail "stop $r"; done
echo "agent order: $N blocked channels kept per-port order"
