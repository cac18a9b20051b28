#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# cqstat watching a real `rdmatool bench msg_rate` (issue 7): two JSON samples
# a second apart, counters rising between them, and the sender's completed
# count consistent with what bench reports at the end.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }

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

"$RDMATOOL" -j bench msg_rate --size=8 --threads=2 --lock=striped --duration=4 >"$dir/bench.json" \
	2>"$dir/bench.err" &
bench=$!
bench_pid=$bench

# Ready when bench has published its sender CQ ("a.cq") in its segment.
sender='[.processes[0].cqs[] | select(.kind == "cq" and .name == "a.cq")]'
for _ in $(seq 200); do
	"$RDMATOOL" -j cqstat -c bench >"$dir/probe.json" 2>/dev/null &&
		[ "$(jq "$sender | length" "$dir/probe.json")" -gt 0 ] && break
	kill -0 "$bench" 2>/dev/null || fail "bench exited before publishing stats: $(cat "$dir/bench.err")"
	sleep 0.05
done
[ "$(jq "$sender | length" "$dir/probe.json" 2>/dev/null || echo 0)" -gt 0 ] ||
	fail "bench never published its CQ: $(cat "$dir/probe.json" 2>/dev/null)"
[ "$(jq '.processes[0].pid' "$dir/probe.json")" -eq "$bench_pid" ] || fail "cqstat -c bench found another process"

# Both of bench's endpoints are published (b opens after a).
for _ in $(seq 200); do
	"$RDMATOOL" -j cqstat "$bench" >"$dir/probe.json" 2>/dev/null &&
		jq -e '.processes[0].cqs | map(.name) | index("a.cq") != null and index("b.cq") != null' \
			"$dir/probe.json" >/dev/null && break
	sleep 0.05
done
# bench's two endpoints ("a" and "b") in one process stay apart: every row's name is unique and says
# which endpoint; a CQ belongs to no stripe (no "stripe" in JSON, "-" in the table, never -1).
jq -e '.processes[0].cqs | map(.name) | (length == (unique | length)) and (map(select(startswith("a."))) | length > 1)
	and (map(select(startswith("b."))) | length > 1)' "$dir/probe.json" >/dev/null ||
	fail "cqstat cannot tell bench's endpoints apart: $(jq -c '.processes[0].cqs | map(.name)' "$dir/probe.json")"
jq -e '[.processes[0].cqs[] | select(.kind == "cq")] | length > 0 and all(has("stripe") | not)' "$dir/probe.json" \
	>/dev/null || fail "a CQ row has a stripe: $(cat "$dir/probe.json")"
jq -e '[.processes[0].cqs[] | select(.kind == "stripe")] | all(.stripe >= 0)' "$dir/probe.json" >/dev/null ||
	fail "a stripe row has no stripe: $(cat "$dir/probe.json")"
"$RDMATOOL" cqstat "$bench" >"$dir/table.txt" || fail "cqstat text on bench failed"
! grep -qE ' -1 ' "$dir/table.txt" || fail "the table shows STRIPE -1: $(cat "$dir/table.txt")"
grep -qE '^ *[0-9]+ bench +a\.cq +- ' "$dir/table.txt" || fail "no a.cq row with STRIPE '-': $(cat "$dir/table.txt")"

"$RDMATOOL" -j cqstat -i 1 -n 2 "$bench" >"$dir/samples.json" || fail "cqstat on bench failed"
[ "$(wc -l <"$dir/samples.json")" -eq 2 ] || fail "want 2 samples: $(cat "$dir/samples.json")"
jq -e '.processes[0].comm == "bench"' <(head -n 1 "$dir/samples.json") >/dev/null ||
	fail "comm: $(head -n 1 "$dir/samples.json")"
c=($(jq "$sender | map(.completed) | add" "$dir/samples.json"))
polls=($(jq "$sender | map(.polls) | add" "$dir/samples.json"))
[ "${c[0]}" -lt "${c[1]}" ] || fail "completed did not rise: ${c[*]}"
[ "${polls[0]}" -lt "${polls[1]}" ] || fail "polls did not rise: ${polls[*]}"
jq -e -s ".[1] | $sender | map(.rate_completed_per_s) | add > 0" "$dir/samples.json" >/dev/null ||
	fail "no completion rate: $(tail -n 1 "$dir/samples.json")"

wait "$bench" || fail "bench failed: $(cat "$dir/bench.err")"
bench=
# The sender's CQ holds exactly bench's send completions: cqstat saw a prefix of what bench reports.
reported=$(jq '[.results[] | .n_iterations] | add' "$dir/bench.json")
[ "$reported" -gt 0 ] || fail "bench reported no iterations: $(cat "$dir/bench.json")"
[ "${c[1]}" -le "$reported" ] || fail "cqstat saw ${c[1]} completions, bench reports $reported"
[ ! -e "$dir/rdmatool-stats.$bench_pid" ] || fail "bench left its segment behind"
echo "cqstat_bench: ok (cqstat saw ${c[0]} then ${c[1]} of $reported completions)"
