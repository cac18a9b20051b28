#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# rdmatool exec: rsockets are not supported on the soft device (issue 42 item 7).  rstream,
# riostream, rcopy and udpong used to crash (SIGSEGV inside librdmacm's rsocket layer, which
# reads librdmacm's private id layout) or hang; now each stops at once at its first rsocket()
# call, with an exit status of its own (no signal, no timeout) and a message that says so.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
for p in rstream riostream rcopy udpong; do
	command -v "$p" >/dev/null || fail "$p is not installed; run 'make deps' (rdmacm-utils)"
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$RDMATOOL_TOP/tests/integration/lib/verbs_pair.sh" # free_port, a sanitizer runtime
port=$(free_port)
echo data >"$dir/file"
check() { # check NAME PROGRAM ARGS...
	local name=$1 rc=0
	shift
	timeout -k 2 20 "$RDMATOOL" exec -- "$@" >"$dir/$name" 2>&1 || rc=$?
	[ "$rc" != 0 ] && [ "$rc" != 124 ] && { [ "$rc" -le 128 ] || [ "$rc" = 255 ]; } || fail "$name: exit $rc (0: it ran; 124: a hang; >128: a signal): $(cat "$dir/$name")"
	grep -q "rsockets (rsocket) are not supported on the soft device" "$dir/$name" ||
		fail "$name: no message saying rsockets are not supported: $(cat "$dir/$name")"
}
check rstream_server rstream -s 127.0.0.1 -p "$port"
check rstream_client rstream -s 127.0.0.1 -p "$port" -S 64 -C 1 127.0.0.1
check riostream riostream -s 127.0.0.1 -p "$port"
check rcopy rcopy "$dir/file" "127.0.0.1:$dir/copy" -p "$port"
check udpong udpong -s 127.0.0.1 -p "$port"
echo "rsockets refused cleanly"
