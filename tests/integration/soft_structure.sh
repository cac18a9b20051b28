#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# hw/soft's shape (issue 43, item 1 and the last bar): the soft CM in hw/soft/cm/, every call and
# include inside it pointing down, and nothing else of the soft NIC calling up into it or including
# its headers.  For the whole of hw/soft (the NIC's data path, being reshaped) the loops of calls
# and includes are printed; they fail only when strict:
#   soft_structure.sh --strict, or RDMATOOL_SOFT_STRUCTURE_STRICT=1
# (once the data path calls one way, make strict the default on the next line but one).
# tests/file_calls.py reads the calls and includes; this test also plants loops and checks it sees them.
strict=${RDMATOOL_SOFT_STRUCTURE_STRICT:-0}
[ "${1:-}" = --strict ] && strict=1
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$RDMATOOL_TOP"
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to read the call graph"; exit 77; }
check() { python3 tests/file_calls.py "$@"; }

# The layout: the CM in its own folder, one file per idea, none left beside the data path.
for f in cm.c conn.c ep.c event.c id.c msg.c cm.h id.h; do
	[ -f "hw/soft/cm/$f" ] || fail "hw/soft/cm/$f is missing: the soft CM's layout changed without this test"
done
old=$(ls hw/soft/cm*.c hw/soft/cm*.h hw/soft/cm_* 2>/dev/null || true)
[ -z "$old" ] || fail "CM files left in hw/soft: $old (they belong in hw/soft/cm/)"

# 1. The CM alone: no loop of calls, includes or reads of each other's globals (--data); the id
#    table (id.c) at the bottom, the convenience layer (ep.c) at the top.
out=$(check --data --order hw/soft/cm) || {
	echo "$out" >&2
	fail "files of hw/soft/cm call or include each other in a loop (above)"
}
echo "$out"
echo "$out" | grep -q '^  hw/soft/cm/id.c -> (nothing here)$' ||
	fail "hw/soft/cm/id.c calls other CM files: $(echo "$out" | grep 'cm/id.c ->')"
echo "$out" | grep -q '^  hw/soft/cm/ep.c -> ' || fail "no order printed for hw/soft/cm/ep.c: $out"

# 2. The CM on top of the NIC: no other file of hw/soft calls into hw/soft/cm or includes its headers.
#    The rest of hw/soft: its loops printed (strict: failed on).
loops=print
[ "$strict" = 1 ] && loops=fail
out=$(check --loops=$loops --above hw/soft/cm hw/soft) || {
	echo "$out" >&2
	fail "hw/soft calls or includes up into hw/soft/cm, or (strict) its files loop (above)"
}
echo "$out"
if echo "$out" | grep -q LOOP; then
	echo "NOTE: hw/soft's data path still has the loops above (not failed on: RDMATOOL_SOFT_STRUCTURE_STRICT=1 fails them)"
fi

# 3. The checker sees loops when there are: calls (a.c -> b.c -> a.c, and through an ops table),
#    includes (a.h -> b.h -> a.h), globals (--data), and the CM's own rules on a copy of hw/soft.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/loop/sub"
printf '#include "sub/a.h"\nint loop_b(void);\nint loop_a(void)\n{\n\treturn loop_b();\n}\n' >"$tmp/loop/a.c"
printf '#include "sub/b.h"\nint loop_a(void);\nint loop_b(void)\n{\n\treturn loop_a();\n}\n' >"$tmp/loop/b.c"
printf '#ifndef A_H\n#define A_H\n#include "sub/b.h"\n#endif\n' >"$tmp/loop/sub/a.h"
printf '#ifndef B_H\n#define B_H\n#include "a.h"\n#endif\n' >"$tmp/loop/sub/b.h"
if check --root "$tmp/loop" . >"$tmp/out" 2>&1; then
	fail "the checker passed a loop of calls and one of includes: $(cat "$tmp/out")"
fi
grep -q '^LOOP among 2 files: a.c -> b.c -> a.c$' "$tmp/out" || fail "the call loop is not named: $(cat "$tmp/out")"
grep -q 'a.c:5 loop_a() uses loop_b() of b.c' "$tmp/out" || fail "the call is not named: $(cat "$tmp/out")"
grep -q '^INCLUDE LOOP among 2 files: sub/a.h -> sub/b.h -> sub/a.h$' "$tmp/out" ||
	fail "the include loop is not named: $(cat "$tmp/out")"
grep -q 'sub/b.h:3 includes sub/a.h' "$tmp/out" || fail "the include is not named: $(cat "$tmp/out")"
check --loops=print --root "$tmp/loop" . >"$tmp/out" 2>&1 || fail "--loops=print failed on a loop: $(cat "$tmp/out")"
grep -q '^2 loop(s) printed' "$tmp/out" || fail "--loops=print did not print both loops: $(cat "$tmp/out")"
echo "planted loops caught:"
cat "$tmp/out"

# A call through an ops table (a file-scope initializer) is a call; a global read is one with --data.
mkdir "$tmp/table"
printf 'int t_helper(void)\n{\n\treturn 0;\n}\nint t_open(void);\nconst struct ops {\n\tint (*open)(void);\n} t_ops = {.open = t_open};\n' >"$tmp/table/t.c"
printf 'int t_helper(void);\nint t_open(void)\n{\n\treturn t_helper();\n}\n' >"$tmp/table/u.c"
printf 'int g_count;\nint g_read(void);\nint g_fn(void)\n{\n\treturn g_read();\n}\n' >"$tmp/table/g.c"
printf 'extern int g_count;\nint g_read(void)\n{\n\treturn g_count;\n}\n' >"$tmp/table/h.c"
if check --root "$tmp/table" . >"$tmp/out" 2>&1; then
	fail "a loop through an ops table passed: $(cat "$tmp/out")"
fi
grep -q 't.c:8 t_ops uses t_open() of u.c' "$tmp/out" || fail "the table's use is not named: $(cat "$tmp/out")"
grep -q 'g.c' "$tmp/out" && fail "a global read counted without --data: $(cat "$tmp/out")"
check --data --root "$tmp/table" g.c h.c >"$tmp/out" 2>&1 && fail "--data missed a loop through a global: $(cat "$tmp/out")"
grep -q 'h.c:4 g_read() uses g_count of g.c' "$tmp/out" || fail "the global's read is not named: $(cat "$tmp/out")"

# The CM's rules on a copy of hw/soft: a loop inside the CM, a data-path call up into it, and a
# data-path include of a CM header are each caught.
mkdir -p "$tmp/cm/hw"
cp -r hw/soft "$tmp/cm/hw/"
printf '\nint planted_up(void)\n{\n\treturn soft_cm_dial(NULL);\n}\n' >>"$tmp/cm/hw/soft/cm/id.c"
if planted=$(check --root "$tmp/cm" hw/soft/cm); then
	fail "the checker found no loop with id.c calling conn.c's soft_cm_dial: $planted"
fi
echo "$planted" | grep -q '^LOOP.*hw/soft/cm/id.c' || fail "the planted CM loop is not the one reported: $planted"
echo "$planted" | grep -q 'planted_up() uses soft_cm_dial() of hw/soft/cm/conn.c' ||
	fail "the report does not name the call: $planted"
cp hw/soft/cm/id.c "$tmp/cm/hw/soft/cm/id.c"
printf '\nint planted_up(void)\n{\n\treturn soft_cm_listen(NULL, 0);\n}\n' >>"$tmp/cm/hw/soft/qp.c"
printf '#include "hw/soft/cm/id.h"\n' >>"$tmp/cm/hw/soft/srq.c"
if planted=$(check --root "$tmp/cm" --loops=print --above hw/soft/cm hw/soft); then
	fail "the checker passed a call and an include up into hw/soft/cm: $planted"
fi
echo "$planted" | grep -q '^CALL UP into hw/soft/cm: hw/soft/qp.c:[0-9]* planted_up() uses soft_cm_listen() of hw/soft/cm/cm.c$' ||
	fail "the call up is not named: $planted"
echo "$planted" | grep -q '^INCLUDE UP into hw/soft/cm: hw/soft/srq.c:[0-9]* includes hw/soft/cm/id.h$' ||
	fail "the include up is not named: $planted"
echo "soft structure ok (strict=$strict)"
