#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# cmd/walk's shape: no loop of files calling each other, under 8,000 lines; and the loop checker
# notices a loop when one is made.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$RDMATOOL_TOP"
out=$(python3 tests/file_calls.py cmd/walk) || fail "$out"
lines=$(cat cmd/walk/*.c cmd/walk/*.h | wc -l)
[ "$lines" -lt 8000 ] || fail "cmd/walk has $lines lines; keep it under 8000"

# The checker must see a loop: two files of a copy made to call each other.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'int loop_b(void);\nint loop_a(void)\n{\n\treturn loop_b();\n}\n' >"$tmp/a.c"
printf 'int loop_a(void);\nint loop_b(void)\n{\n\treturn loop_a();\n}\n' >"$tmp/b.c"
printf 'static int helper(void)\n{\n\treturn 0;\n}\n' >"$tmp/c.c"
if python3 tests/file_calls.py --root "$tmp" . >"$tmp/out" 2>&1; then
	fail "the checker passed a loop: $(cat "$tmp/out")"
fi
grep -q 'a.c:4 loop_a() uses loop_b() of b.c' "$tmp/out" || fail "the loop is not named: $(cat "$tmp/out")"
echo "walk structure ok ($lines lines)"
