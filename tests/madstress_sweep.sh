#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/madstress_sweep.sh [SECONDS]: GET NodeInfo to every LID of the test
# fabric under ibsim for -n 1,2,4,8 x -N 1,16,64,128, and the windowed
# rate against the synchronous -N 1 -n 1 rate measured in the same run.
# Not part of make check; needs root (network namespace).
set -eu
RDMATOOL_TOP=${RDMATOOL_TOP:-$(cd "$(dirname "$0")/.." && pwd)}
RDMATOOL=${RDMATOOL:-$RDMATOOL_TOP/build/rdmatool}
export RDMATOOL RDMATOOL_TOP
. "$RDMATOOL_TOP/tests/integration/lib/ibsim.sh"
ibsim_enter_netns "$@"
secs=${1:-2}
ibsim_start "$RDMATOOL_TOP/tests/fabrics/two_switch_8hca.net"
lids=$(ibsim_lids)

printf '%4s %4s %10s %8s %12s %10s\n' -n -N MAD/s cpu% us_cpu/MAD p99_us
sync=""
best=0
for n in 1 2 4 8; do
	for N in 1 16 64 128; do
		[ "$N" -ge "$n" ] || continue
		json=$(sim "$RDMATOOL" -j madstress -m get -t "$secs" -N "$N" -n "$n" -L "$lids" NodeInfo 2>/dev/null) || true
		read -r rate cpu per p99 < <(echo "$json" | python3 -c '
import json, sys
t = json.load(sys.stdin)["total"]
print(round(t["mads_per_s"]), round(t["cpu_pct"], 1), round(t["cpu_us_per_mad"], 2), t["lat_us"].get("p99", 0))')
		printf '%4s %4s %10s %8s %12s %10s\n' "$n" "$N" "$rate" "$cpu" "$per" "$p99"
		[ -z "$sync" ] && sync=$rate
		[ "$rate" -gt "$best" ] && best=$rate
	done
done
echo "synchronous (-N 1 -n 1): $sync MAD/s; best windowed: $best MAD/s; ratio $(python3 -c "print(round($best / $sync, 2))")"
