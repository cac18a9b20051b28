#!/usr/bin/env bash
# make bench, part 2: perftest on soft0 through rdmatool exec (issue 19's bar, and the
# perftest side of issue 16).  Latency tests run in interleaved rounds (the machine's
# speed drifts; every test sees the same spells), the median of each test's typical
# latency is reported, and ib_write_lat is compared with ib_send_lat of the same run.
# ib_write_lat's target makes no verbs call while it waits (it spins on memory): it
# measures whether the soft NIC serves a WRITE without the target's help.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
RDMATOOL=${RDMATOOL:-$top/${BUILD:-build}/rdmatool}
RDMATOOL_TOP=${RDMATOOL_TOP:-$top}
ROUNDS=${PERFTEST_ROUNDS:-5}
ITERS=${PERFTEST_ITERS:-5000}
for p in ib_send_lat ib_write_lat ib_read_lat ss python3 awk; do
	command -v "$p" >/dev/null || { echo "$p is not installed; run 'make deps'" >&2; exit 1; }
done
dir=$(mktemp -d /tmp/rdmatool-perftest.XXXXXX)
trap 'rm -rf "$dir"' EXIT
. "$top/tests/integration/lib/verbs_pair.sh"
bar() { printf '%-58s %8.3fx  (bar %s)  %s\n' "$1" "$2" "$3" "${4:-}"; }

tests="ib_send_lat ib_write_lat ib_read_lat"
for ((r = 1; r <= ROUNDS; r++)); do
	for t in $tests; do
		verbs_pair_ok "$t" 120 "$t" -d soft0 -x 0 -F -n "$ITERS"
		# The result row: bytes, iterations, t_min, t_max, t_typical, ...
		awk -v n="$ITERS" '$2 == n && $1 ~ /^[0-9]+$/ {print $5}' "$dir/$t.client" >>"$dir/$t.typical"
	done
done
median() { sort -n "$1" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
for t in $tests; do
	[ "$(wc -l <"$dir/$t.typical")" = "$ROUNDS" ] || { echo "$t: no result row in some round" >&2; exit 1; }
	eval "m_$t=$(median "$dir/$t.typical")"
	printf '%-14s typical us, %d rounds: %s (median %s)\n' "$t" "$ROUNDS" "$(tr '\n' ' ' <"$dir/$t.typical")" \
		"$(median "$dir/$t.typical")"
done
# shellcheck disable=SC2154
bar "perftest ib_write_lat / ib_send_lat on soft0 (medians)" "$(awk -v w="$m_ib_write_lat" -v s="$m_ib_send_lat" 'BEGIN {print w / s}')" \
	"<= 1.5" "($m_ib_write_lat vs $m_ib_send_lat us)"
