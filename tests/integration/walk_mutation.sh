#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The mutation harness, quick: one bug seeded into a copy of the soft device
# (CMP_SWP always swaps) must make `walk --verify` and `rdmatool conform` fail.  `make mutation`
# runs every seeded bug on three seeds (tests/mutation/run.sh).
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "${RDMATOOL_TOP:-.}"
if nm "$RDMATOOL" 2>/dev/null | grep -q -e __asan_init -e __tsan_init; then
	echo "skipped: a sanitizer build (the copy is rebuilt with plain flags)"
	exit 77
fi
command -v python3 >/dev/null || { echo "skipped: no python3"; exit 77; }
# Every seeded bug still matches the soft device's text (a refactor of hw/soft must carry them along)
# and is named by what it breaks.
stale=$(BUILD=${BUILD:-build} tests/mutation/run.sh -n 2>&1) || fail "mutations that no longer apply or are named after a round: $stale"
out=$(BUILD=${BUILD:-build} tests/mutation/run.sh -d 4 -c 3 -s 1 -U cas_always_swap 2>&1) || fail "harness: $out"
echo "$out"
echo "$out" | grep -q '^cas_always_swap  *[a-z_]*\.[a-z_.+0-9]*  *1/1 ' ||
	fail "conform or walk --verify missed the seeded CMP_SWP bug: $out"
echo "$out" | grep -q 'conform caught 1; walk --verify caught 1' || fail "the two columns' totals: $out"
echo "$out" | grep -q "on client [0-9]*'s word" || fail "not the atomics check: $out"
echo "walk mutation ok"
