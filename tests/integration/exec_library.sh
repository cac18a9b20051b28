#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# rdmatool exec --library (issue 44 N11, N12): the library is checked before anything runs.
# A FIFO is refused at once (it used to hang forever), and so are a directory, /dev/zero,
# libc and a program (each used to be accepted, the program then ran without soft0): exit 2,
# naming what the path is.  A library path with a space or ':' (given, or the default beside
# a binary installed in such a directory) is not split by ld.so: the program sees soft0.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v ibv_devices >/dev/null || fail "ibv_devices is not installed; run 'make deps'"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$RDMATOOL_TOP/tests/integration/lib/verbs_pair.sh" # a sanitizer build: its runtime first in LD_PRELOAD
lib="$(dirname "$RDMATOOL")/librdmatool-verbs.so"

refused() { # refused PATH PATTERN: exec --library=PATH exits 2 at once, stderr matching PATTERN
	local rc=0
	timeout -k 2 10 "$RDMATOOL" exec --library="$1" -- sh -c 'echo RAN' >"$dir/out" 2>"$dir/err" || rc=$?
	[ "$rc" = 2 ] || fail "--library=$1: exit $rc, want 2 (124: it hung): $(cat "$dir/err")"
	grep -q "$2" "$dir/err" || fail "--library=$1: stderr lacks '$2': $(cat "$dir/err")"
	! grep -q RAN "$dir/out" || fail "--library=$1: the program ran"
}
mkfifo "$dir/fifo"
refused "$dir/fifo" "is a FIFO"
refused "$dir" "is a directory"
refused /dev/zero "is a device"
# ldd crashes under the sanitizer runtime verbs_pair.sh preloads: it runs without it.
libc=$(env -u LD_PRELOAD ldd "$(type -P true)" | sed -n 's/.*libc\.so\.6 => \([^ ]*\).*/\1/p')
[ -n "$libc" ] || fail "cannot find libc with ldd"
refused "$libc" "not rdmatool's preload library"
refused "$(type -P true)" "not rdmatool's preload library"
head -c 100 /dev/urandom >"$dir/junk.so"
refused "$dir/junk.so" "not an ELF file"

# Paths ld.so would split: the library given, and the default one beside a copied binary.
odd="$dir/with space:and colon"
mkdir -p "$odd"
cp "$lib" "$odd/librdmatool-verbs.so"
out=$("$RDMATOOL" exec --library="$odd/librdmatool-verbs.so" -- ibv_devices 2>&1) ||
	fail "--library with a space and ':': $out"
echo "$out" | grep -q soft0 || fail "--library with a space and ':': no soft0: $out"
! echo "$out" | grep -q "cannot be preloaded" || fail "ld.so split the path: $out"
cp "$RDMATOOL" "$odd/rdmatool"
out=$("$odd/rdmatool" exec -- ibv_devices 2>&1) || fail "a binary in a directory with a space and ':': $out"
echo "$out" | grep -q soft0 || fail "a binary in a directory with a space and ':': no soft0: $out"
echo "exec library ok"
