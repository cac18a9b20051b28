#!/usr/bin/env bash
# cqstat watching a real `rdmatool bench msg_rate`: two JSON samples a second
# apart, counters rising between them, and a completed count consistent with
# the total bench reports.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }

if ! "$RDMATOOL" --help | awk '/^Commands:/{on=1;next} on&&NF{print $1}' | grep -qx bench; then
	echo "rdmatool bench not built yet"
	exit 77
fi
command -v jq >/dev/null || fail "jq missing; run 'make deps'"

dir=$(mktemp -d /tmp/rdmatool-cqstat-bench.XXXXXX)
export RDMATOOL_STATS_DIR=$dir
bench=
cleanup() {
	[ -n "$bench" ] && kill -9 "$bench" 2>/dev/null
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT

"$RDMATOOL" -j bench msg_rate --size=8 --threads=2 --lock=striped --duration=5 >"$dir/bench.json" \
	2>"$dir/bench.err" &
bench=$!
bench_pid=$bench

# Ready when bench has published entries in its segment.
for _ in $(seq 200); do
	"$RDMATOOL" -j cqstat "$bench" >"$dir/probe.json" 2>/dev/null &&
		[ "$(jq '.processes[0].cqs | length' "$dir/probe.json")" -gt 0 ] && break
	kill -0 "$bench" 2>/dev/null || fail "bench exited before publishing stats: $(cat "$dir/bench.err")"
	sleep 0.05
done
[ "$(jq '.processes[0].cqs | length' "$dir/probe.json" 2>/dev/null || echo 0)" -gt 0 ] ||
	fail "bench never published stats"

"$RDMATOOL" -j cqstat -i 1 -n 2 "$bench" >"$dir/samples.json" || fail "cqstat on bench failed"
[ "$(wc -l <"$dir/samples.json")" -eq 2 ] || fail "want 2 samples: $(cat "$dir/samples.json")"
jq -e '.processes[0].comm == "bench"' <(head -n 1 "$dir/samples.json") >/dev/null ||
	fail "comm: $(head -n 1 "$dir/samples.json")"
# Completions are counted per stripe and again per CQ: sum the CQ entries only.
cqs='[.processes[0].cqs[] | select(.kind == "cq")]'
jq -e "$cqs | length > 0" <(head -n 1 "$dir/samples.json") >/dev/null || fail "bench publishes no CQ entry"
c=($(jq "$cqs | map(.completed) | add" "$dir/samples.json"))
polls=($(jq "$cqs | map(.polls) | add" "$dir/samples.json"))
[ "${c[0]}" -lt "${c[1]}" ] || fail "completed did not rise: ${c[*]}"
[ "${polls[0]}" -lt "${polls[1]}" ] || fail "polls did not rise: ${polls[*]}"
jq -e -s ".[1] | $cqs | map(.rate_completed_per_s) | add > 0" "$dir/samples.json" >/dev/null ||
	fail "no completion rate: $(tail -n 1 "$dir/samples.json")"

wait "$bench" || fail "bench failed: $(cat "$dir/bench.err")"
bench=
# bench counts what it completed; cqstat saw a prefix of it, and nothing bench did not complete.
reported=$(jq '[.results[] | .n_iterations] | add' "$dir/bench.json")
[ "$reported" -gt 0 ] || fail "bench reported no iterations: $(cat "$dir/bench.json")"
[ "${c[1]}" -le "$reported" ] || fail "cqstat saw ${c[1]} completions, bench reports $reported"
[ ! -e "$dir/rdmatool-stats.$bench_pid" ] || fail "bench left its segment behind"
echo "cqstat_bench: ok"
