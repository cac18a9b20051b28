#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# walk: memory does not grow with the length of the walk.  The same walk (seed, clients) runs N and
# then 2N steps; its peak RSS after 2N may exceed the one after N only by a generous margin (the
# object population and the heap's fragmentation still move a little), far below what a leak of a
# few hundred bytes per step would add.  Counted in steps, not seconds: the machine's load does not
# change what is checked.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }

clients=4 n=16000
peak() {
	local out
	out=$("$RDMATOOL" -j walk --clients=$clients --steps="$1" --seed=7 2>/dev/null) || fail "walk --steps=$1 exit $?"
	echo "$out" | jq -e '.result == "pass"' >/dev/null || fail "walk --steps=$1: $(echo "$out" | jq -c .failures)"
	echo "$out" | jq -e '.peak_rss_kb > 0' >/dev/null || fail "no peak_rss_kb: $out"
	echo "$out" | jq .peak_rss_kb
}
one=$(peak $n)
two=$(peak $((2 * n)))
# 25% of the first, and 16 MiB at least: a leak of 512 bytes a step per client adds 32 MiB here.
allowed=$((one / 4 > 16384 ? one / 4 : 16384))
[ "$two" -le $((one + allowed)) ] ||
	fail "peak RSS grew from $one KiB after $n steps to $two KiB after $((2 * n)) (allowed +$allowed KiB): a leak?"
echo "walk memory ok ($one KiB after $n steps, $two KiB after $((2 * n)))"
