#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# make bench: every bar of issue 4, each measured next to its baseline in the
# same run, printed as a ratio.  Figures vary from run to run on a shared
# machine; read the ratios, and rerun before drawing conclusions.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
RDMATOOL=${RDMATOOL:-$top/${BUILD:-build}/rdmatool}
. "$top/tests/integration/lib/bench_server.sh"
command -v jq >/dev/null || { echo "jq missing; run 'make deps'" >&2; exit 1; }
dir=$(mktemp -d /tmp/rdmatool-bench.XXXXXX)
export RDMATOOL_STATS_DIR=$dir
server=
cleanup() {
	[ -n "$server" ] && kill -9 "$server" 2>/dev/null
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT

start_server() { bench_server_start "$dir/server.err" "$RDMATOOL" -q bench --server=127.0.0.1:0; }
stop_server() { wait "$server" || true; server=; }
# bar LABEL RATIO TARGET [DETAIL]: the absolute figures go in DETAIL, the ratio is what counts.
bar() { printf '%-58s %8.3fx  (bar %s)  %s\n' "$1" "$2" "$3" "${4:-}"; }

"$RDMATOOL" -q -j bench ring --threads=2 --rounds=5 >"$dir/ring.json"
bar "ring 2P+1C lock-free / mutex" "$(jq '.ratios[0].lockfree_over_mutex' "$dir/ring.json")" ">= 2"

# Nine short interleaved rounds per thread count, the median ratio: one run of
# each lock let a busy spell of the shared machine swing the 1-thread ratio 0.7..1.6.
# Measured on 2026-11-26: a soft device that let a poster run its own in-process send queue
# (no engine thread between) halved one-process send_lat (1.15 -> 0.55 us) but brought this ratio
# from 1.20-1.53 to 1.17-1.23 under load and from 1.22-1.28 to 1.03-1.05 on a quiet machine (2 threads;
# the posters then contend inside the device, on the receiving CQ): it was reverted.
# The 2-thread ratio also depends on where the host puts this machine's two virtual CPUs:
# cpu_line_rtt, a cache line's round trip between them, was 80-120 ns or 370-420 ns on
# 2026-11-26, switching every few minutes, and the ratio 1.6-1.9 or 1.0-1.2 with it; once
# a posting thread drained mostly its own stripe (core/transport/progress.c), 1.6-1.9 or
# 1.45-1.6.  Printed before and after, so a reader knows which machine the ratio was measured on.
line_rtt() { "$top/${BUILD:-build}/tests/tools/cpu_line_rtt" 2>/dev/null || echo "?"; }
rtt_before=$(line_rtt)
"$RDMATOOL" -q -j bench msg_rate -s 8 --threads=1,2 -D 0.3 --rounds=9 >"$dir/rate.json"
rtt_after=$(line_rtt)
bar "msg_rate 8 B 1 thread striped / global" "$(jq '.ratios[] | select(.threads == 1) | .striped_over_global' "$dir/rate.json")" ">= 0.95"
bar "msg_rate 8 B 2 threads striped / global" "$(jq '.ratios[] | select(.threads == 2) | .striped_over_global' "$dir/rate.json")" ">= 1.5" \
	"(CPU-to-CPU cache line round trip $rtt_before ns before, $rtt_after ns after)"

"$RDMATOOL" -q -j bench write_bw -s 65536 -D 2 --lock=striped --baseline >"$dir/wbw.json"
bar "write_bw 64 KiB one process / memcpy" "$(jq '.results[0].ratio_to_memcpy' "$dir/wbw.json")" ">= 0.5" \
	"$(jq -r '.results[0] | "(\(.BW_average | floor) vs \(.memcpy_MiB_s | floor) MiB/s)"' "$dir/wbw.json")"

start_server
"$RDMATOOL" -q -j bench write_bw -s 1048576 -D 2 --lock=striped --baseline --client="127.0.0.1:$port" >"$dir/wbw2.json"
stop_server
bar "write_bw 1 MiB two processes / raw TCP (same 2 processes)" "$(jq '.results[0].ratio_to_tcp' "$dir/wbw2.json")" ">= 0.6" \
	"$(jq -r '.results[0] | "(\(.BW_average | floor) vs \(.tcp_MiB_s | floor) MiB/s)"' "$dir/wbw2.json")"

start_server
"$RDMATOOL" -q -j bench send_lat -s 8 -n 5000 --lock=striped --baseline --client="127.0.0.1:$port" >"$dir/lat.json"
stop_server
bar "send_lat 8 B two processes t_typical / TCP ping-pong (same 2 processes)" "$(jq '.results[0].ratio_to_tcp' "$dir/lat.json")" "<= 2" \
	"$(jq -r '.results[0] | "(\(.t_typical) vs \(.tcp_t_typical) us)"' "$dir/lat.json")"

# Issue 12: an agent channel between two processes against a pipe between the same two.
"$RDMATOOL" -q -j bench chan_rate -s 64 --baseline --rounds=5 >"$dir/chan.json"
bar "chan_rate 64 B channel / pipe (same 2 processes)" "$(jq '.channel_over_pipe' "$dir/chan.json")" ">= 2" \
	"$(jq -r '.results[0] | "(round 1: \(.channel_msgs_per_s / 1e3 | floor) vs \(.pipe_msgs_per_s / 1e3 | floor) kmsg/s, \(.futex_calls_per_msg) futex calls/msg)"' "$dir/chan.json")"

# Issue 13: a deposited send through two agent processes against core send_lat between two processes
# on their own devices (as the agents are; since 2026-11-26, before that the baseline was send_lat in
# one process, 1 us, which never crosses the wire).  A deposited send is a round trip and send_lat
# half of one: the wire alone makes the ratio 2.  Measured on 2026-11-26 at load 8-9 (helpers
# building and walking): 18-21 us against 4.5-6.3 us, 3.2-3.5x.  Later that day the agents run pinned
# one per CPU as the baseline's processes do (load 9-12): 16.5-20 us against 6.2-6.4 us, 2.6-3.2x.
# Later still the client shares the target agent's CPU (cmd/bench/agent_lat.c says why; the client
# had floated, landing beside agent 0 as often as not): 15.8-16.0 us against 6.1-6.2 us, 2.6x.
# Figures before that date:
# Measured on 2026-11-23 (2 shared cores, load 9-12 from other builds): a run's median 80-230 us
# (median of 7 runs 103-138 us; core send_lat 9 us typical), ratio median 13-22x; before the agents'
# adaptive polling and the lone-item rule 96-267 us (median of 7 runs 149-180 us).  perf sched: the
# kernel ran the client, both engines and both soft-NIC threads on one CPU, so most of a round trip
# is their turns on it, not agent work.
# Measured on 2026-11-27, a 2-vCPU VM where a context switch costs ~7 us (perf bench sched pipe:
# 24.8 us a round trip across CPUs, 14.1 on one) and core send_lat was 7.5-9.5 us: 112-156 us, 12-16x,
# with the client beside agent 1, where the woken client waited ~57 us for the CPU the spinning agent
# held.  Beside agent 0 and with the soft device's poller window at 200 us: 47-49 us, 5.1x.  Since
# then the bench tries both sides (300 round trips each) and keeps the faster.
# Later that day the trial first warms the pair up and runs each side twice (ABBA): beside agent 1
# had lost its trial by paying for the fresh pair's first round trips (58-64 us, then 22-24 us each
# time it was picked).  Now: 22.7-25.5 us beside agent 1 against 5.8-5.9 us (3.9-4.4x) while the VM
# was in its fast state (cpu_line_rtt ~110 ns), 29-36 us against 7.5-7.7 us (3.8-4.7x) in its slow
# one, where beside agent 1 also has a slow mode (trial medians 29-76 us, p90 70-107 us).  The
# floor on a shared CPU: two context switches (~7 us each here) and two wire crossings.
RDMATOOL_AGENT_KEY=$dir/key "$RDMATOOL" -q -j bench agent_lat -s 8 -n 2000 --baseline >"$dir/alat.json"
bar "agent_lat 8 B deposited / core send_lat" "$(jq '.ratio_to_core_send_lat' "$dir/alat.json")" "<= 3" \
	"$(jq -r '"(\(.deposited_median_us) vs \(.core_send_lat_typical_us) us)"' "$dir/alat.json")"

# Issue 13: a stream of SENDMSGs through two agent processes (agent_rate: 4 processes, mode
# immediately; agent_bw: one process, buffered).  The bars are the issue's; measured on 2026-11-23
# (2 shared cores, heavily loaded): agent_rate 64 B 70-140 kmsg/s, 5-10x aggregation off (about 20-26
# items per eager buffer), 0.1-0.3x core send_bw; agent_bw 1 MiB (rma transport) 220-550 MiB/s
# against core write_bw between two processes (each agent is one, on its own device), which swung
# from 60 to 2000 MiB/s with the load: 0.26-0.46x in quieter minutes.  Later that day (load 9-12):
# agent_rate 36-83 kmsg/s, 2.2-11x aggregation off (median 5.2: the engine posting at once made the
# baseline without aggregation faster too), 0.7-3.2x direct core sends (median 1.5); agent_bw
# 165-541 MiB/s, 0.1-1.5x core write_bw (median 1.1).
# 100000 messages: at 300-500k msg/s 20000 took 40-70 ms, and the agents' start-up swung the ratios.
# Measured on 2026-11-26 (load 8, helpers walking), 3 runs: 366-498k msg/s through the agents, 5.7-8.2x
# aggregation off, 1.9-2.5x direct core sends (before the target agent woke a channel's reader once
# per pass instead of once per message: 191k msg/s, 0.94x direct).
# On 2026-11-27 (the VM above): 1.3-1.7x direct with 32 gateway slots: four clients filled them while
# the 4 eager buffers were in flight and the buffers left a quarter empty.  With 128 slots (26 items
# a buffer), the processes pinned as on two machines (direct baseline alike) and 3 rounds: 303-326k
# against 139-149k msg/s, 1.85-2.3x; aggregation off 30-36k msg/s, 8.5-10.9x.
"$RDMATOOL" -q -j bench agent_rate -s 64 -n 100000 --baseline --rounds=3 >"$dir/arate.json"
bar "agent_rate 64 B aggregation on / off" "$(jq '.ratio_to_no_aggregation' "$dir/arate.json")" ">= 5" \
	"$(jq -r '"(\(.agent_msgs_per_s | floor) vs \(.no_aggregation_msgs_per_s | floor) msg/s)"' "$dir/arate.json")"
bar "agent_rate 64 B agents / direct core sends (4 processes)" "$(jq '.ratio_to_direct' "$dir/arate.json")" ">= 2" \
	"$(jq -r '"(\(.agent_msgs_per_s | floor) vs \(.direct_msgs_per_s | floor) msg/s)"' "$dir/arate.json")"
# agent_bw on 2026-11-26 (load 7-13, helpers walking), 8 interleaved runs each: 64 KiB chunks 2765-3026
# MiB/s median, 0.44-0.45x core write_bw; 512 KiB slots with 508 KiB chunks (one READ each) and the
# sender and drainer pinned with their agents 4018 MiB/s, 0.59x (0.55-0.68x; 8 of 8 won).  It is
# CPU-bound on the 2 cores: agent 0 alone (every byte into the soft wire: 0.17 ms per MiB in sendmsg,
# as the baseline's sender) nearly fills one, so the bar is out of reach here while the stream costs
# agent 0 more than the baseline's sender (a staging copy, READ requests, answers).
# On 2026-11-27 (the VM above): 1.8-2.5 GB/s against 4.8-6.3 GB/s, 0.31-0.38x.  Skipping agent 0's
# staging copy (an experiment, data left wrong) did not make it faster (2254-2477 against 2423-2585
# MiB/s): node 1's CPU is the bottleneck, where every byte is copied four times (out of the socket,
# into the READ's buffer, into the channel, out to the drainer) against the baseline's two.
"$RDMATOOL" -q -j bench agent_bw -s 1048576 -n 1000 --baseline --rounds=3 >"$dir/abw.json"
bar "agent_bw 1 MiB agents / core write_bw (two processes)" "$(jq '.ratio_to_core_write_bw' "$dir/abw.json")" ">= 0.8" \
	"$(jq -r '"(\(.agent_MiB_s | floor) vs \(.core_write_bw_MiB_s | floor) MiB/s)"' "$dir/abw.json")"
