#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The two-process device tests once more on the TCP wire.  Between local processes the soft
# NIC takes the shared-memory wire by default, so the rest of make check runs there;
# RDMATOOL_SOFT_SHM=0 keeps every peer on TCP, the wire other hosts and users get.  Only the
# tests where two processes' NICs talk run again (the time added stays small).
# test-timeout: 750 (three scripts of at most 240 s each; a sanitizer build doubles both)
set -u
fail() { echo "FAIL: $*" >&2; exit 1; }
top=${RDMATOOL_TOP:?run through tests/run-tests.sh}
build=$top/${BUILD:-build}
export RDMATOOL_SOFT_SHM=0
# A sanitizer build is 5-20x slower: each script gets twice the time, as run-tests.sh gives this one.
[ -n "${RDMATOOL_SANITIZER_RUNTIME:-}" ] && slow=2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# Shown as such.
"$RDMATOOL" -v devices 2>/dev/null | grep -q "wire: *TCP (RDMATOOL_SOFT_SHM=0)" ||
	fail "devices -v does not say the wire is TCP: $("$RDMATOOL" -v devices 2>&1 | grep wire)"
for t in "$build/tests/test_soft_wire" \
	"$top/tests/integration/verbs_perftest.sh" "$top/tests/integration/verbs_srq.sh"; do
	[ -e "$t" ] || fail "$t is missing; run 'make check'"
	case $t in *.sh) run=(bash "$t") ;; *) run=("$t") ;; esac
	timeout $((240 * ${slow:-1})) "${run[@]}" >"$dir/log" 2>&1 || fail "$(basename "$t") with RDMATOOL_SOFT_SHM=0: $(tail -20 "$dir/log")"
done
echo "ok: the two-process device tests pass on the TCP wire"
