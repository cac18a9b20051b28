#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/mutation/run.sh [-d SECONDS] [-c CLIENTS] [-s "SEED..."] [-m] [-w] [-U] [-k] [NAME...]
#
# The walker's mutation harness: each tests/mutation/NAME.mut is one bug
# seeded into the soft device (a small, exact text replacement), NAME
# saying what it breaks (one file per bug: no round prefixes, no copies).  For each,
# the tree is copied (with its build directory, so only the mutated file
# recompiles), the bug applied, rdmatool and the soft unit tests built, then
# `walk --verify` runs on every seed and the soft unit tests run; a table
# says which caught what.  `make mutation` runs it on every mutation; it is
# not part of `make check` (tests/integration/walk_mutation.sh runs one).
#
#   -d SECONDS   walk duration (default 20)      -c CLIENTS  (default 5)
#   -s "SEEDS"   walk seeds (default "1 2 3")    -U          skip the unit tests
#   -m           also one multinode walk (3 client processes over the soft wire, first seed)
#   -w           also one walk through GID index 1 (every QP's traffic over the soft wire, first seed)
#   -k           keep the copies (their paths are printed)
#   -n           only check that every mutation still applies and is named by what it breaks (no build)
#   -C           skip conform (walk --verify and the unit tests only)
#
# A .mut file: '#' description lines, 'file PATH', then one or more blocks
#   <<<            the exact text to find (must occur exactly once)
#   ===            what replaces it
#   >>>
# A mutation whose text no longer occurs is reported as STALE, not skipped
# silently.  Exit status: 0 when every mutation applied and compiled, else 1.
set -u
cd "$(dirname "$0")/../.."
top=$PWD
BUILD=${BUILD:-build}
duration=20 clients=5 seeds="1 2 3" unit=1 keep=0 check_only=0 multinode=0 wire=0 conform=1
while getopts "d:c:s:mwUknC" o; do
	case $o in
	d) duration=$OPTARG ;;
	c) clients=$OPTARG ;;
	s) seeds=$OPTARG ;;
	m) multinode=1 ;;
	w) wire=1 ;;
	U) unit=0 ;;
	k) keep=1 ;;
	n) check_only=1 ;;
	C) conform=0 ;;
	*) sed -n '2,20p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [ $# -gt 0 ]; then
	muts=()
	for n in "$@"; do muts+=("tests/mutation/${n%.mut}.mut"); done
else
	muts=(tests/mutation/*.mut)
fi
[ -x "$BUILD/rdmatool" ] || { echo "mutation: build $BUILD/rdmatool first (make)" >&2; exit 2; }
unit_tests=$(cd tests/unit && ls test_soft_*.c | sed 's/\.c$//')

# apply FILE.mut TREE: 0 applied, 1 stale (text not found exactly once)
apply() {
	python3 tests/mutation/mutation.py apply "$1" "$2"
}

if [ $check_only = 1 ]; then
	python3 tests/mutation/mutation.py check . "${muts[@]}" && echo "all ${#muts[@]} mutations apply"
	exit
fi

printf '%-40s %-24s %-6s %-20s %s\n' mutation conform walk unit "first walk failure"
rc=0
caught_walk=0 caught_conform=0 caught_unit=0 caught_any=0 total=0
for m in "${muts[@]}"; do
	name=$(basename "$m" .mut)
	[ -f "$m" ] || { echo "mutation: no $m" >&2; rc=1; continue; }
	tmp=$(mktemp -d /tmp/rdmatool-mutation.XXXXXX)
	git ls-files -co --exclude-standard | grep -v '^build' | cpio -pdm --quiet "$tmp"
	cp -a "$BUILD" "$tmp/build"
	if ! apply "$m" "$tmp" 2>"$tmp/apply.log"; then
		printf '%-24s %s\n' "$name" "STALE: $(head -1 "$tmp/apply.log")"
		rc=1
		[ $keep = 1 ] || rm -rf "$tmp"
		continue
	fi
	targets="build/rdmatool"
	[ $unit = 1 ] && for t in $unit_tests; do targets="$targets build/tests/$t"; done
	if ! make -C "$tmp" BUILD=build $targets >"$tmp/make.log" 2>&1; then
		printf '%-24s %s\n' "$name" "DOES NOT COMPILE (kept: $tmp/make.log)"
		rc=1
		continue
	fi
	total=$((total + 1))
	n=0 hit=0 first="" ccaught="-"
	if [ $conform = 1 ]; then
		cout=$(RDMATOOL_STATS=0 timeout -k 5 300 "$tmp/build/rdmatool" -j conform 2>"$tmp/conform.err")
		st=$?
		if [ $st -eq 0 ]; then
			ccaught="no"
		else
			caught_conform=$((caught_conform + 1))
			if [ $st -eq 1 ] && echo "$cout" | jq -e . >/dev/null 2>&1; then
				# the first failing case, and how many more failed
				ccaught=$(echo "$cout" | jq -r '[.cases[] | select(.result == "fail") | .name] |
					.[0] + (if length > 1 then "+\(length - 1)" else "" end)')
			else
				ccaught="exit$st"
			fi
		fi
	fi
	runs=$seeds
	[ $multinode = 1 ] && runs="$runs multinode"
	[ $wire = 1 ] && runs="$runs wire"
	for s in $runs; do
		n=$((n + 1))
		if [ "$s" = multinode ]; then
			set -- --clients=3 --multinode=true --seed="${seeds%% *}"
		elif [ "$s" = wire ]; then
			set -- --clients="$clients" --gid-index=1 --seed="${seeds%% *}"
		else
			set -- --clients="$clients" --seed="$s"
		fi
		out=$(RDMATOOL_STATS=0 timeout -k 5 $((duration + 60)) "$tmp/build/rdmatool" -j walk --verify \
			--duration="$duration" "$@" 2>"$tmp/walk.$s.err")
		st=$?
		if [ $st -ne 0 ]; then
			hit=$((hit + 1))
			if [ -z "$first" ]; then
				if [ $st -eq 1 ]; then
					first=$(echo "$out" | jq -r '.failures[0] // "exit 1"' 2>/dev/null | cut -c1-110)
				else
					first="exit $st (crash or timeout)"
				fi
			fi
		fi
	done
	ucaught="-"
	if [ $unit = 1 ]; then
		ucaught="none"
		failed=""
		for t in $unit_tests; do
			(cd "$tmp" && RDMATOOL_STATS=0 timeout -k 5 120 "build/tests/$t" >"$tmp/$t.log" 2>&1) ||
				failed="$failed${failed:+,}${t#test_soft_}"
		done
		[ -n "$failed" ] && ucaught=$failed && caught_unit=$((caught_unit + 1))
	fi
	[ $hit -gt 0 ] && caught_walk=$((caught_walk + 1))
	{ [ $hit -gt 0 ] || [ "$ucaught" != none -a "$ucaught" != - ] || [ "$ccaught" != no -a "$ccaught" != - ]; } &&
		caught_any=$((caught_any + 1))
	printf '%-40s %-24s %-6s %-20s %s\n' "$name" "$ccaught" "$hit/$n" "$ucaught" "$first"
	if [ $keep = 1 ]; then echo "  kept: $tmp"; else rm -rf "$tmp"; fi
done
echo "of $total mutations: conform caught $caught_conform; walk --verify caught $caught_walk (on at least one seed);" \
	"soft unit tests caught $caught_unit; any of them: $caught_any"
exit $rc
