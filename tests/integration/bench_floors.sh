#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The physical floors of two processes, shm_pingpong and cma_bw (issue 43): a brief run of each has
# the documented shape and positive figures (never their speed); every key of their JSON is in the
# man page's block for them; Ctrl-C exits 130 and leaves no peer process; a refused
# process_vm_readv is said and exits 1; usage errors exit 2.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v jq >/dev/null || fail "jq missing; run 'make deps'"
command -v strace >/dev/null || fail "strace missing; run 'make deps'"

dir=$(mktemp -d /tmp/rdmatool-bench-floors.XXXXXX)
export RDMATOOL_STATS_DIR=$dir
pid=
cleanup() {
	[ -n "$pid" ] && kill -9 -- "-$pid" 2>/dev/null
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT

# The keys of the man page's JSON block for the floors, and those of an output (at every depth).
python3 - "$RDMATOOL_TOP/man/rdmatool-bench.1" >"$dir/documented" <<'PY'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read().replace("\\-", "-")
block = next(b for b in re.findall(r"^\.nf\n(.*?)^\.fi", text, re.M | re.S) if '"shm_pingpong"' in b)
print("\n".join(sorted(set(re.findall(r'"([A-Za-z_][A-Za-z0-9_.]*)"\s*:', block)))))
PY
[ -s "$dir/documented" ] || fail "man/rdmatool-bench.1 has no JSON block for shm_pingpong"
documented() { # json
	local k
	for k in $(jq -r '[paths | .[] | strings] | unique | .[]' "$1"); do
		grep -qx "$k" "$dir/documented" || fail "key $k of $(jq -r .test "$1") is not in the man page's JSON block"
	done
}

# shm_pingpong: 3 rounds of 2000 round trips, a positive one-way time each and their median.
"$RDMATOOL" -j bench shm_pingpong -n 2000 --rounds=3 >"$dir/pp.json" 2>"$dir/err" ||
	fail "shm_pingpong failed: $(cat "$dir/err")"
jq -e '.test == "shm_pingpong" and .mode == "two_processes" and .MsgSize == 64 and .rounds == 3 and
	(.results | length) == 3 and ([.results[] | .round] == [1, 2, 3]) and
	(.results | all(.n_iterations == 2000 and .one_way_us > 0 and .one_way_avg_us > 0)) and .one_way_us > 0 and
	.one_way_us == ([.results[] | .one_way_us] | sort | .[1]) and .interrupted == false and
	(if .cpu >= 0 then .peer_cpu >= 0 and .peer_cpu != .cpu else .peer_cpu == -1 end)' "$dir/pp.json" >/dev/null ||
	fail "shm_pingpong: $(cat "$dir/pp.json")"
documented "$dir/pp.json"

# cma_bw: 2 rounds of 20 reads of 64 KiB, then the default size (1 MiB) once; -D for a round's length.
"$RDMATOOL" -j bench cma_bw -s 65536 -n 20 --rounds=2 >"$dir/cma.json" 2>"$dir/err" ||
	fail "cma_bw failed: $(cat "$dir/err")"
jq -e '.test == "cma_bw" and .mode == "two_processes" and .MsgSize == 65536 and .rounds == 2 and
	(.results | length) == 2 and (.results | all(.n_iterations == 20 and .BW_average > 0)) and
	.BW_average > 0 and .interrupted == false' "$dir/cma.json" >/dev/null || fail "cma_bw: $(cat "$dir/cma.json")"
documented "$dir/cma.json"
"$RDMATOOL" -j bench cma_bw -D 0.05 --rounds=1 >"$dir/cma1.json" 2>"$dir/err" || fail "cma_bw -D: $(cat "$dir/err")"
jq -e '.MsgSize == 1048576 and .results[0].n_iterations > 0 and .BW_average > 0' "$dir/cma1.json" >/dev/null ||
	fail "cma_bw -D 0.05: $(cat "$dir/cma1.json")"

# Text: a header naming the test, one row a round, the median; no line ends in spaces.
"$RDMATOOL" bench shm_pingpong -n 1000 --rounds=2 >"$dir/text" 2>"$dir/err" || fail "shm_pingpong text: $(cat "$dir/err")"
"$RDMATOOL" bench cma_bw -s 4096 -n 100 --rounds=2 >>"$dir/text" 2>>"$dir/err" || fail "cma_bw text: $(cat "$dir/err")"
grep -q '^shm_pingpong: ' "$dir/text" && grep -q 'one-way\[usec\]' "$dir/text" &&
	grep -q '^one-way time in usec (median of 2 rounds): [0-9.]*$' "$dir/text" &&
	grep -q '^cma_bw: ' "$dir/text" && grep -q '^BW average in MiB/s (median of 2 rounds): [0-9.]*$' "$dir/text" ||
	fail "text output: $(cat "$dir/text")"
[ "$(grep -c '^ [12] ' "$dir/text")" = 4 ] || fail "text rows: $(cat "$dir/text")"
! grep -n ' $' "$dir/text" || fail "lines end in spaces"
[ ! -s "$dir/err" ] || fail "printed on stderr: $(cat "$dir/err")"

# Ctrl-C (to the process group, as a terminal sends it) and SIGINT to the bench alone: exit 130, the
# notice, no process of the test left, no stats segment.
interrupt() { # test target
	local t=$1 target=$2 rc=0
	set -m
	"$RDMATOOL" -j bench "$t" -n 1000000000 >"$dir/int.json" 2>"$dir/int.err" &
	pid=$!
	set +m
	for _ in $(seq 100); do
		[ "$(pgrep -c -g "$pid")" -ge 2 ] && break
		sleep 0.1
	done
	[ "$(pgrep -c -g "$pid")" -ge 2 ] || fail "$t: no peer process within 10 s: $(cat "$dir/int.err")"
	if [ "$target" = group ]; then kill -INT -- "-$pid"; else kill -INT "$pid"; fi
	for _ in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$pid" 2>/dev/null && fail "$t: still running 10 s after SIGINT ($target)"
	wait "$pid" || rc=$?
	[ "$rc" = 130 ] || fail "$t: SIGINT ($target): exit $rc, want 130: $(cat "$dir/int.err")"
	grep -q "interrupted: the results above are partial (SIGINT)" "$dir/int.err" ||
		fail "$t: no notice: $(cat "$dir/int.err")"
	jq -e '.interrupted == true' "$dir/int.json" >/dev/null || fail "$t: interrupted JSON: $(cat "$dir/int.json")"
	for _ in $(seq 100); do
		pgrep -g "$pid" >/dev/null || break
		sleep 0.1
	done
	! pgrep -g "$pid" >/dev/null || fail "$t: processes left: $(pgrep -a -g "$pid")"
	! ls "$dir" | grep -q '^rdmatool-stats\.' || fail "$t: stats segments left: $(ls "$dir")"
	pid=
}
for t in shm_pingpong cma_bw; do
	interrupt "$t" group
	interrupt "$t" bench
done

# process_vm_readv refused (strace makes it fail as Yama or seccomp would): said, exit 1.
set +e
strace -f -qq -o /dev/null -e trace=process_vm_readv -e inject=process_vm_readv:error=EPERM \
	"$RDMATOOL" bench cma_bw -n 10 --rounds=1 >/dev/null 2>"$dir/err"
rc=$?
set -e
[ "$rc" = 1 ] || fail "cma_bw with process_vm_readv refused: exit $rc, want 1: $(cat "$dir/err")"
grep -q "process_vm_readv was refused (EPERM).*ptrace" "$dir/err" || fail "refusal not said: $(cat "$dir/err")"

# Usage errors exit 2 and name the problem.
usage() { # want args...
	local want=$1 rc
	shift
	set +e
	"$RDMATOOL" bench "$@" >/dev/null 2>"$dir/err"
	rc=$?
	set -e
	[ "$rc" = 2 ] && grep -qF -- "$want" "$dir/err" || fail "bench $*: exit $rc: $(cat "$dir/err")"
}
usage "shm_pingpong bounces one cache line; drop --size" shm_pingpong -s 8
usage "--rounds 1..99" cma_bw --rounds=100
usage "--size must be 1.." cma_bw -s 0
usage "--iters 0" shm_pingpong -n 0
echo "bench_floors: ok"
