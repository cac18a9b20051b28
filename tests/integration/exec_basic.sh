#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# rdmatool exec: usage errors and exit statuses (2 usage, 1 no library, 127/126 as env(1)),
# options end at the program's name, LD_PRELOAD keeps what it held (and a sanitizer
# runtime stays first), --addr sets the soft device's address, and the device list a
# program sees has soft0 first.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$RDMATOOL_TOP/tests/integration/lib/verbs_pair.sh" # a sanitizer build: its runtime first in LD_PRELOAD

expect() { # expect STATUS PATTERN ARGS...: exit status STATUS and stderr matching PATTERN
	local want=$1 pattern=$2 rc=0
	shift 2
	"$RDMATOOL" exec "$@" >"$dir/out" 2>"$dir/err" || rc=$?
	[ "$rc" = "$want" ] || fail "exec $*: exit $rc, want $want: $(cat "$dir/err")"
	grep -Eq -- "$pattern" "$dir/err" || fail "exec $*: stderr lacks '$pattern': $(cat "$dir/err")"
}
expect 2 "no program given"
expect 2 "no program given" --addr=127.0.0.2
expect 2 "--addr=1.2.3 is not IP or IP:PORT" --addr=1.2.3 true
expect 2 "--addr=127.0.0.1:99999 is not IP" --addr=127.0.0.1:99999 true
expect 2 "--addr=127.0.0.1:-1 is not IP" --addr=127.0.0.1:-1 true
expect 2 "unknown option|--nope" --nope true
expect 127 "no-such-program-xyz: No such file" -- no-such-program-xyz
touch "$dir/not-executable"
expect 126 "Permission denied" "$dir/not-executable"
expect 1 "cannot find librdmatool-verbs.so at /nonexistent.so" --library=/nonexistent.so true
expect 2 "must be an absolute path" --library="$(realpath --relative-to=. "$(dirname "$RDMATOOL")")/librdmatool-verbs.so" true

# The program's options are its own (-v is not rdmatool's --verbose), and its exit status is ours.
"$RDMATOOL" exec sh -c 'exit 7' -v && fail "exit status not passed on"
rc=0
"$RDMATOOL" exec sh -c 'exit 7' -v || rc=$?
[ "$rc" = 7 ] || fail "exit status $rc, want 7"
# LD_PRELOAD: the library first, what was there kept; a sanitizer runtime stays in front.
pre=$(LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}/lib/x86_64-linux-gnu/libm.so.6" "$RDMATOOL" exec sh -c 'echo "$LD_PRELOAD"')
case "$pre" in
*/librdmatool-verbs.so:/lib/x86_64-linux-gnu/libm.so.6) ;;
*) fail "LD_PRELOAD: $pre" ;;
esac
pre=$(LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD }/nonexistent/libasan.so.8 /nonexistent/extra.so" "$RDMATOOL" exec -- env 2>/dev/null |
	sed -n 's/^LD_PRELOAD=//p')
case "$pre" in
*/nonexistent/libasan.so.8:*/librdmatool-verbs.so:/nonexistent/extra.so) ;;
*) fail "a sanitizer runtime must stay first: '$pre'" ;;
esac
# --addr and RDMATOOL_SOFT_ADDR: an IP alone takes any free port.
[ "$("$RDMATOOL" exec --addr=127.0.0.2 sh -c 'echo "$RDMATOOL_SOFT_ADDR"')" = 127.0.0.2 ] || fail "--addr not exported"
command -v ibv_devices >/dev/null || fail "ibv_devices is not installed; run 'make deps'"
"$RDMATOOL" exec ibv_devices >"$dir/devs" || fail "ibv_devices: $(cat "$dir/devs")"
[ "$(awk 'NR == 3 {print $1}' "$dir/devs")" = soft0 ] || fail "soft0 is not first: $(cat "$dir/devs")"
RDMATOOL_SOFT_ADDR=127.0.0.4 "$RDMATOOL" exec ibv_devinfo -v | grep -q "fe80::7f00:4:" ||
	fail "a bare IP in RDMATOOL_SOFT_ADDR is not taken"
RDMATOOL_SOFT_ADDR=127.0.0.1:x "$RDMATOOL" exec ibv_devinfo >"$dir/out" 2>&1 && fail "a bad RDMATOOL_SOFT_ADDR opened"
grep -q "librdmatool-verbs: soft0: RDMATOOL_SOFT_ADDR=127.0.0.1:x is not ip or ip:port" "$dir/out" ||
	fail "a bad RDMATOOL_SOFT_ADDR is not named: $(cat "$dir/out")"
# Old binaries call the exported ibv_query_port with the 48-byte struct: nothing past it is written.
out=$("$RDMATOOL" exec "$(dirname "$RDMATOOL")/tests/tools/verbs_port_compat") || fail "old ibv_query_port: $out"
[ "$out" = "soft0: rc 0, state 4, nothing past 48 bytes" ] || fail "old ibv_query_port: $out"
echo "exec basic ok"
