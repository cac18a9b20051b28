#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/run-tests.sh TEST...: runs cmocka binaries and integration scripts,
# each under a time limit, and closes with one "N passed, N failed" line.
# A script named as verbs:PATH runs with $RDMATOOL going through libibverbs
# to the preloaded soft device (lib/via-verbs, device softv0): the path a
# real NIC takes (make check-verbs).
# An integration script exits 0 (pass), 77 (skipped: says why) or else (fail).
# Each test has TEST_TIMEOUT seconds (300; more if it says so), twice that in a sanitizer build.
# A test that leaves rdmatool files in /dev/shm (a stats segment of a process
# that is gone, an agent or bench directory) fails, and they are removed.
set -u

BUILD=${BUILD:-build}
export RDMATOOL=${RDMATOOL:-$(cd "$BUILD" && pwd)/rdmatool}
export RDMATOOL_TOP=${RDMATOOL_TOP:-$(pwd)}
export BUILD
TEST_TIMEOUT=${TEST_TIMEOUT:-300}

# For the verbs: runs (lib/via-verbs), once: ldd is slow and they start rdmatool many times.
. "$RDMATOOL_TOP/tests/integration/lib/sanitizer.sh"
RDMATOOL_SANITIZER_RUNTIME=$(sanitizer_runtime "$RDMATOOL")
export RDMATOOL_SANITIZER_RUNTIME

passed=0 failed=0 skipped=0
failed_names=()
logdir=$(mktemp -d /tmp/rdmatool-tests.XXXXXX)

shm_entries() { ls -1 /dev/shm 2>/dev/null | grep '^rdmatool-' | sort; }
# others_hold ENTRY SECS: a process that has run for more than SECS (so it is older than the test, not
# one the test left behind) holds /dev/shm/ENTRY or a file in it open or mapped: another run's.
others_hold() {
	local f pid age
	command -v fuser >/dev/null || return 1
	for f in "/dev/shm/$1" "/dev/shm/$1"/*; do
		[ -e "$f" ] || continue
		for pid in $(fuser "$f" 2>/dev/null); do
			age=$(ps -o etimes= -p "${pid//[^0-9]/}" 2>/dev/null) || continue
			[ "${age// /}" -gt "$2" ] && return 0
		done
	done
	return 1
}
# leftovers BEFORE SECS: entries that appeared since BEFORE (the test ran SECS) and that no live process
# owns.  A soft wire's segment lives for the moment two devices take to map it (its name is removed
# then): one of another run's processes (packaging.sh builds two packages at once) is only a leftover
# if it stays.  One that a process older than the test holds is another run's (a second make check
# beside this one: its bench's directory).
leftovers() {
	local e i
	for ((i = 0; i < 20; i++)); do
		comm -13 <(printf '%s\n' "$1") <(shm_entries) | grep -q '^rdmatool-softwire-' || break
		sleep 0.1
	done
	comm -13 <(printf '%s\n' "$1") <(shm_entries) | while read -r e; do
		case "$e" in
		rdmatool-stats.*) kill -0 "${e#rdmatool-stats.}" 2>/dev/null && continue ;;
		esac
		others_hold "$e" "$2" && continue
		echo "$e"
	done
}

for t in "$@"; do
	via_verbs=
	case "$t" in
	verbs:*)
		t=${t#verbs:}
		via_verbs=1
		;;
	esac
	name=$(basename "$t")
	[ -n "$via_verbs" ] && name="verbs:$name"
	log="$logdir/$name.log"
	before=$(shm_entries)
	start=$(date +%s)
	# A script that needs longer says so in a line "# test-timeout: SECONDS" (the larger one counts).
	limit=$TEST_TIMEOUT
	own=$(case "$t" in *.sh) sed -n 's/^# test-timeout: \([0-9][0-9]*\).*/\1/p' "$t" | head -n 1 ;; esac)
	[ -n "$own" ] && [ "$own" -gt "$limit" ] && limit=$own
	# A sanitizer build runs 5-20x slower (make tsan beside other work): twice the time; a hang still ends.
	[ -n "$RDMATOOL_SANITIZER_RUNTIME" ] && limit=$((limit * 2))
	case "$t" in
	*.sh)
		if [ -n "$via_verbs" ]; then
			RDMATOOL_REAL=$RDMATOOL RDMATOOL="$RDMATOOL_TOP/tests/integration/lib/via-verbs" \
				RDMATOOL_TEST_DEVICE=softv0 RDMATOOL_TEST_PROVIDER=verbs \
				timeout -k 10 "$limit" bash "$t" >"$log" 2>&1
		else
			timeout -k 10 "$limit" bash "$t" >"$log" 2>&1
		fi
		;;
	*) timeout -k 10 "$limit" "$t" >"$log" 2>&1 ;;
	esac
	rc=$?
	secs=$(($(date +%s) - start))
	left=$(leftovers "$before" "$secs")
	if [ -n "$left" ]; then
		echo "left behind in /dev/shm: $(echo $left)" >>"$log"
		(cd /dev/shm && rm -rf $left)
		[ $rc -eq 0 ] && rc=1
	fi
	if [ $rc -eq 0 ]; then
		passed=$((passed + 1))
		printf 'PASS  %-40s %3ss\n' "$name" "$secs"
	elif [ $rc -eq 77 ]; then
		skipped=$((skipped + 1))
		printf 'SKIP  %-40s %s\n' "$name" "$(tail -n 1 "$log")"
	else
		failed=$((failed + 1))
		failed_names+=("$name")
		[ $rc -eq 124 ] && echo "timed out after ${limit}s" >>"$log"
		printf 'FAIL  %-40s %3ss (exit %d)\n' "$name" "$secs" "$rc"
		sed 's/^/    | /' "$log" | tail -n 60
	fi
done

if [ $failed -eq 0 ]; then
	rm -rf "$logdir"
else
	echo "failed: ${failed_names[*]} (logs in $logdir)"
fi
if [ $skipped -gt 0 ]; then
	echo "tests: $passed passed, $failed failed, $skipped skipped"
else
	echo "tests: $passed passed, $failed failed"
fi
[ $failed -eq 0 ]
