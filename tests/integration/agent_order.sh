#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Per-port order with many channels blocked at once on one target (issue 46,
# defect 2): 24 channels on node 1 are each filled so that a 30,000-byte
# message does not fit but a 100-byte one would; node 0 sends each channel
# the 30,000-byte message and then the 100-byte one.  Every channel blocks,
# and none may take its 100-byte message before its 30,000-byte one (the old
# code remembered 16 blocked channels per pass and let the 17th's small
# message overtake).  Draining each channel then gives fill, 30,000, 100.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$(dirname "$0")/lib/agent_nodes.sh" order 2 1
links_up() { [ "$(A "$1" -j agent status | jq '[.peers[] | select(.state == "up")] | length')" = 1 ]; }
for r in 0 1; do
	mkdir -m 700 "$T/a$r"
	A $r -q agent start --hosts="$hosts" --rank=$r || fail "agent $r did not start: $(cat "$T/a$r/agent.$r.log")"
done
for r in 0 1; do wait_for links_up $r || fail "links of rank $r not up: $(A $r agent status)"; done

N=24
head -c 40000 /dev/zero >"$T/fill"
head -c 30000 /dev/zero | tr '\0' 'B' >"$T/big"
head -c 100 /dev/zero | tr '\0' 's' >"$T/small"
for i in $(seq $N); do
	A 1 agent chan create c$i --capacity=16 --bytes=65536 --max-msg=40000 || fail "create c$i"
	A 1 agent send c$i "$T/fill" || fail "fill c$i"
done
A 1 agent chan create probe || fail "create probe"
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
for r in 0 1; do A $r -q agent stop || fail "stop $r"; done
echo "agent order: $N blocked channels kept per-port order"
