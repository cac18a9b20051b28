#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# rdmatool cqstat against real publisher processes (tests/tools/stats_publisher):
# listing, filters, -i/-n rates, exact totals, stale and corrupt segments,
# --clean, bad input.  Segments live in a private RDMATOOL_STATS_DIR.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }

PUBLISHER=$BUILD/tests/tools/stats_publisher
[ -x "$PUBLISHER" ] || fail "$PUBLISHER not built (make check builds it)"
command -v jq >/dev/null || fail "jq missing; run 'make deps'"

dir=$(mktemp -d /tmp/rdmatool-cqstat.XXXXXX)
export RDMATOOL_STATS_DIR=$dir
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT

# start_publisher OUTFILE COMM ENTRIES STEP SECONDS: starts one, waits until its segment exists.
start_publisher() {
	local out=$1
	shift
	"$PUBLISHER" "$@" >"$out" &
	pids+=($!)
	started=$!
	for _ in $(seq 200); do
		grep -q '^ready ' "$out" && return 0
		kill -0 "$started" 2>/dev/null || fail "publisher $* exited early"
		sleep 0.05
	done
	fail "publisher $* never became ready"
}

wait_for_line() { # FILE PATTERN
	for _ in $(seq 200); do
		grep -q "$2" "$1" && return 0
		sleep 0.05
	done
	fail "no '$2' in $1"
}

run() { # runs rdmatool, capturing stdout, stderr and the exit status
	set +e
	"$RDMATOOL" "$@" >"$dir/out" 2>"$dir/err"
	rc=$?
	set -e
}

# Nothing running: an empty list and a notice, not an error.
run -j cqstat
[ $rc -eq 0 ] || fail "empty dir exit $rc"
[ "$(jq '.processes | length' "$dir/out")" -eq 0 ] || fail "empty dir lists processes"
grep -q 'no running rdmatool process publishes stats' "$dir/err" || fail "empty notice: $(cat "$dir/err")"

start_publisher "$dir/a.out" pubtest 3 5 0
A=$started

# One sample, every entry of the process.
run -j cqstat
[ $rc -eq 0 ] || fail "cqstat exit $rc: $(cat "$dir/err")"
jq -e --argjson p "$A" '.processes[] | select(.pid == $p) | .comm == "pubtest" and (.cqs | length) == 3' \
	"$dir/out" >/dev/null || fail "publisher not listed: $(cat "$dir/out")"
jq -e --argjson p "$A" '.processes[] | select(.pid == $p) | .cqs | map(.name) == ["stripe0","stripe1","stripe2"]
	and map(.stripe) == [0,1,2] and all(.[]; .kind == "stripe" and .posted > 0 and .completed > 0
	and .ring_hwm >= .ring_depth and .rate_completed_per_s > 0)' "$dir/out" >/dev/null ||
	fail "entries: $(cat "$dir/out")"

# Text table: header and one row per entry; -d adds the detail columns.
run cqstat "$A"
[ $rc -eq 0 ] || fail "cqstat PID exit $rc"
head -n 1 "$dir/out" | grep -q 'PID.*COMM.*NAME.*STRIPE.*POSTED.*COMPLETED.*COMPL/s.*HWM.*ERRORS' ||
	fail "header: $(head -n 1 "$dir/out")"
[ "$(grep -c "^ *$A pubtest " "$dir/out")" -eq 3 ] || fail "rows: $(cat "$dir/out")"
! grep -q E_FLUSH "$dir/out" || fail "detail columns without -d"
run cqstat -d "$A"
grep -q 'E_LOCAL.*E_REMOTE.*E_FLUSH.*E_TMOUT.*E_OTHER.*FLOWCTL' "$dir/out" || fail "-d header: $(cat "$dir/out")"

# -i/-n: one JSON document per sample per line, counters rising, rates since the last sample.
run -j cqstat -i 0.3 -n 3 "$A"
[ $rc -eq 0 ] || fail "-i -n exit $rc: $(cat "$dir/err")"
[ "$(wc -l <"$dir/out")" -eq 3 ] || fail "-n 3 printed $(wc -l <"$dir/out") lines"
c=($(jq '.processes[0].cqs[0].completed' "$dir/out"))
[ "${c[0]}" -lt "${c[1]}" ] && [ "${c[1]}" -lt "${c[2]}" ] || fail "completed not rising: ${c[*]}"
jq -e -s 'all(.[1:][]; .processes[0].cqs[0].rate_completed_per_s > 0)' "$dir/out" >/dev/null ||
	fail "rates: $(cat "$dir/out")"
# The publisher adds 5 per millisecond per entry: a rate between the samples far from that is wrong.
jq -e -s '(.[2].processes[0].cqs[0].completed - .[1].processes[0].cqs[0].completed) as $d
	| ($d * 1000 / (.[2].time_ms - .[1].time_ms)) as $r | .[2].processes[0].cqs[0].rate_completed_per_s as $q
	| ($q > 0.5 * $r and $q < 2 * $r)' "$dir/out" >/dev/null || fail "rate inconsistent: $(cat "$dir/out")"

# -c filters by command name; a name nobody runs is an error.
start_publisher "$dir/b.out" other 1 1 0
B=$started
run -j cqstat -c pubtest
jq -e --argjson a "$A" '[.processes[].pid] == [$a]' "$dir/out" >/dev/null || fail "-c: $(cat "$dir/out")"
run cqstat -c nosuchcommand
[ $rc -eq 1 ] || fail "-c nosuchcommand exit $rc"
grep -q "no live process named 'nosuchcommand'" "$dir/err" || fail "-c message: $(cat "$dir/err")"

# The header is repeated every screenful (24 lines when stdout is not a terminal).
start_publisher "$dir/c.out" many 10 1 0
C=$started
run cqstat -i 0.05 -n 5 "$C"
[ "$(grep -c '^ *PID ' "$dir/out")" -ge 2 ] || fail "header not repeated: $(cat "$dir/out")"
[ "$(grep -c "^ *$C many " "$dir/out")" -eq 50 ] || fail "rows for 5 samples of 10 entries"

# Exact totals: a publisher that stopped counting shows exactly what it counted.
start_publisher "$dir/d.out" exact 4 3 1
D=$started
wait_for_line "$dir/d.out" '^completed '
total=$(awk '/^completed /{print $2}' "$dir/d.out")
run -j cqstat "$D"
[ "$(jq '[.processes[0].cqs[].completed] | add' "$dir/out")" -eq "$total" ] ||
	fail "completed sum $(jq '[.processes[0].cqs[].completed] | add' "$dir/out") != publisher's $total"
[ "$(jq '[.processes[0].cqs[].posted] | add' "$dir/out")" -eq "$total" ] || fail "posted sum"
# A normal exit removes the segment.
kill -TERM "$D"
wait "$D" || fail "publisher exit status"
[ ! -e "$dir/rdmatool-stats.$D" ] || fail "segment left after a normal exit"

# A killed publisher leaves a stale segment: skipped and reported, the others still listed.
kill -9 "$B"
wait "$B" 2>/dev/null || true
[ -e "$dir/rdmatool-stats.$B" ] || fail "SIGKILL should leave the segment behind"
run -j cqstat
[ $rc -eq 0 ] || fail "stale segment made cqstat fail ($rc)"
jq -e --argjson b "$B" --argjson a "$A" '([.processes[].pid] | index($b) == null and index($a) != null)
	and (.stale | map(.pid) == [$b]) and .stale[0].comm == "other"' "$dir/out" >/dev/null ||
	fail "stale: $(cat "$dir/out")"
grep -q "pid $B (other): stale segment skipped" "$dir/err" || fail "stale notice: $(cat "$dir/err")"
run cqstat "$B"
[ $rc -eq 1 ] || fail "stale PID exit $rc"
grep -q "pid $B: process is gone" "$dir/err" || fail "stale PID message: $(cat "$dir/err")"

# Corrupt segments of live pids: reported, not fatal, the good process still listed.
sleep 300 &
S1=$!
sleep 300 &
S2=$!
sleep 300 &
S3=$!
pids+=("$S1" "$S2" "$S3")
head -c 4096 /dev/urandom >"$dir/rdmatool-stats.$S1"
head -c 100 "$dir/rdmatool-stats.$A" >"$dir/rdmatool-stats.$S2"
cp "$dir/rdmatool-stats.$A" "$dir/rdmatool-stats.$S3"
printf '\x63' | dd of="$dir/rdmatool-stats.$S3" bs=1 seek=8 conv=notrunc status=none
run -j cqstat
[ $rc -eq 0 ] || fail "corrupt segments made cqstat fail ($rc)"
jq -e --argjson a "$A" '[.processes[].pid] | index($a) != null' "$dir/out" >/dev/null || fail "good one lost"
jq -e --argjson s1 "$S1" --argjson s2 "$S2" --argjson s3 "$S3" '.unreadable | map({(.pid|tostring): .error}) | add
	| .[$s1|tostring] == "not an rdmatool stats segment" and .[$s2|tostring] == "segment file is truncated"
	and .[$s3|tostring] == "segment written by another rdmatool version"' "$dir/out" >/dev/null ||
	fail "unreadable: $(cat "$dir/out")"
grep -q "pid $S3 (sleep): segment skipped: segment written by another rdmatool version" "$dir/err" ||
	fail "corrupt notice: $(cat "$dir/err")"
run cqstat "$S3"
[ $rc -eq 1 ] || fail "corrupt PID exit $rc"

# --clean removes only the stale segment (not the live ones, not the live corrupt ones).
run cqstat --clean
[ $rc -eq 0 ] || fail "--clean exit $rc: $(cat "$dir/err")"
grep -q "removed stale segment of pid $B (other)" "$dir/out" || fail "--clean output: $(cat "$dir/out")"
[ ! -e "$dir/rdmatool-stats.$B" ] || fail "--clean left the stale segment"
for p in "$A" "$C" "$S1" "$S2" "$S3"; do
	[ -e "$dir/rdmatool-stats.$p" ] || fail "--clean removed the live pid $p's segment"
done
# A file under a dead pid's name that is not a segment is left alone: --clean removes only segments.
kill -9 "$S1"
wait "$S1" 2>/dev/null || true
run -j cqstat --clean
jq -e '.removed == []' "$dir/out" >/dev/null || fail "--clean -j removed a non-segment: $(cat "$dir/out")"
[ -e "$dir/rdmatool-stats.$S1" ] || fail "--clean removed a file that is not a segment"
grep -q "not an rdmatool stats segment" "$dir/err" || fail "--clean did not say why it kept it: $(cat "$dir/err")"

# Bad input: exit 2 for usage errors, 1 for PIDs that cannot be shown.
for bad in "-i 0" "-i -1" "-i 1e-9" "-i 0.001" "-i abc" "-i nan" "-i 1e9" "-n 0" "-n x" "abc" "-5" "--clean -i 1" "--bogus"; do
	run cqstat $bad
	[ $rc -eq 2 ] || fail "'cqstat $bad' exit $rc, want 2"
	[ -s "$dir/err" ] || fail "'cqstat $bad' says nothing"
done
run cqstat -i abc
grep -q "bad interval 'abc'" "$dir/err" || fail "interval message: $(cat "$dir/err")"
true &
dead=$!
wait "$dead"
run cqstat "$dead"
[ $rc -eq 1 ] || fail "dead PID exit $rc"
grep -q "no process with pid $dead" "$dir/err" || fail "dead PID message: $(cat "$dir/err")"
run cqstat $$
[ $rc -eq 1 ] || fail "PID without segment exit $rc"
grep -q "process $$ (bash) publishes no stats segment" "$dir/err" || fail "no-segment message: $(cat "$dir/err")"

# A watched PID that exits ends an -i run.
"$RDMATOOL" cqstat -i 0.1 "$C" >"$dir/watch.out" 2>"$dir/watch.err" &
watcher=$!
pids+=("$watcher")
wait_for_line "$dir/watch.out" "^ *$C many "
kill -TERM "$C"
set +e
wait "$watcher"
rc=$?
set -e
[ $rc -eq 0 ] || fail "watch of an exiting PID: exit $rc"
grep -q 'the processes watched have exited' "$dir/watch.err" || fail "exit notice: $(cat "$dir/watch.err")"
echo "cqstat_basic: ok"
