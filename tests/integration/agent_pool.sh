#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The agent's buffers come from one region registered once with the device (core/agent/pool.h):
# receive buffers, eager SEND buffers and the large frames that carry GETMSG data.  Three agents;
# node 0 sends 300 small (eager) messages to a channel on node 1 and drains, by GETMSG, 60
# messages of up to 60000 B (answered in large frames) from another.  Then agent status -j on
# every node: eager send buffers and large frames were taken from the pool, none from the heap,
# and the link endpoint made exactly one registration (the region's): frames of their own, which
# core sends by rendezvous, would each have been registered in its MR cache (10 registrations on
# node 1 when frames came from the heap).  With RDMATOOL_AGENT_HUGEPAGES=1
# the status says whether the region is on hugepages: on them when the system has enough
# reserved, else on ordinary pages, with hugepages_asked set (the fallback); without it, ordinary.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$(dirname "$0")/lib/three_agents.sh" pool traffic
for r in 0 1 2; do mkdir -m 700 "$T/a$r"; done
RDMATOOL_AGENT_HUGEPAGES=1 A 0 -q agent start --hosts="$hosts" --rank=0 || fail "agent 0 did not start"
for r in 1 2; do A $r -q agent start --hosts="$hosts" --rank=$r || fail "agent $r did not start"; done
for r in 0 1 2; do wait_for links_up $r || fail "node $r: links not up: $(A $r agent status)"; done
A 1 agent chan create q --capacity=512
A 1 agent chan create g --capacity=64 --bytes=$((8 << 20)) --max-msg=65536
X 1 send g 7 60 7 60000 >"$T/fill" || fail "filling g: $(cat "$T/fill")"
X 0 send 1/q 1 300 1 1000 >"$T/send" || fail "the eager sends: $(cat "$T/send")"
X 0 recv 1/g 3000 60 >"$T/get" || fail "the GETMSGs: $(cat "$T/get")"
X 1 recv q 3000 300 >"$T/got" || fail "receiving q: $(cat "$T/got")"
grep -q "^received 300 " "$T/got" || fail "q: $(tail -n 1 "$T/got")"
grep -q "^received 60 " "$T/get" || fail "g: $(tail -n 1 "$T/get")"

pool() { A "$1" -j agent status | jq -c .pool; }
for r in 0 1 2; do
	p=$(pool $r)
	echo "agent pool: node $r: $p"
	# 3 nodes x 4 buffers, twice over
	jq -e '.eager_send_buffers == 24 and .eager_send_hwm >= 8 and .frames >= 4 and .fallbacks == 0' \
		<<<"$p" >/dev/null || fail "node $r: send buffers not pooled: $p"
	jq -e '.registrations == 1 and .registered_now == 1' <<<"$p" >/dev/null ||
		fail "node $r: registrations beyond the pool's: $p"
done
# The agent publishes its pool figures every 100 ms: the GETMSGs' frames show by the next update.
frames_used() { jq -e '.frames_hwm > 0' <<<"$(pool 1)" >/dev/null; }
wait_for frames_used || fail "node 1 answered GETMSGs without pooled frames: $(pool 1)"

# agent status -j carries what the issue lists: per peer its queue (items waiting for an eager buffer,
# now and at most), eager buffers in use, the aggregation factor; per cap the bytes pending, their
# high-water mark and the cap.  Node 0 sent 300 small messages to node 1 several to a buffer.
st=$(A 0 -j agent status)
jq -e '.peers | length == 2 and all(has("waiting") and has("waiting_hwm") and has("eager_buffers_in_use")
	and has("aggregation") and has("eager_buffers_sent") and has("eager_items_sent") and has("state"))' \
	<<<"$st" >/dev/null || fail "node 0: per-peer fields missing: $(jq -c .peers <<<"$st")"
jq -e '.peers[] | select(.rank == 1) | .eager_items_sent >= 300 and .aggregation >= 1 and .eager_buffers_in_use <= 4' \
	<<<"$st" >/dev/null || fail "node 0's link to node 1: $(jq -c '.peers[] | select(.rank == 1)' <<<"$st")"
jq -e '[.flow.injection, .flow.ejection, .flow.getmsg] | all(has("pending_bytes") and has("hwm_bytes") and has("cap_bytes")
	and .hwm_bytes <= .cap_bytes)' <<<"$st" >/dev/null || fail "node 0: flow fields: $(jq -c .flow <<<"$st")"

huge_free=$(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo)
bytes=$(pool 0 | jq .registered_bytes)
want=ordinary
[ "${huge_free:-0}" -gt 0 ] && [ $((huge_free * 2 << 20)) -ge "$bytes" ] && want=huge
p=$(pool 0)
case $want in
huge) jq -e '.pages == "hugepages" and .hugepages_asked' <<<"$p" >/dev/null ||
	fail "node 0: $huge_free hugepages free, asked for, not used: $p" ;;
*) jq -e '.pages == "ordinary pages" and .hugepages_asked' <<<"$p" >/dev/null ||
	fail "node 0: no hugepages reserved: the fallback is not what status says: $p" ;;
esac
A 0 agent status | grep -q "hugepages asked for, none reserved" || [ $want = huge ] ||
	fail "text status hides the fallback: $(A 0 agent status)"
jq -e '.pages == "ordinary pages" and (.hugepages_asked | not)' <<<"$(pool 1)" >/dev/null ||
	fail "node 1 did not ask for hugepages: $(pool 1)"
for r in 0 1 2; do A $r -q agent stop || fail "stop $r"; done
if grep -l 'Sanitizer' "$T"/a*/*.log >/dev/null 2>&1; then
	fail "sanitizer report in an agent log: $(grep -h -A20 'Sanitizer' "$T"/a*/*.log | head -40)"
fi
echo "agent pool: ok ($want pages on node 0)"
