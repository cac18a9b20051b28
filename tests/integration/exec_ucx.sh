#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# rdmatool exec: UCX on soft0 (issue 42 item 4).  UCX uses a verbs device only if
# /dev/infiniband/<dev_name> is a character device it may read and write; the preload library
# answers for its own device (hw/preload/devnode.c), with no mknod and no root.  ucx_info -d
# lists soft0:1 under rc_verbs and ud_verbs (before: not at all), ucx_perftest runs tag_lat,
# tag_bw, ucp_put_lat and ucp_get over rc_verbs between two processes (UCX_TLS=rc_v,self:
# rc_verbs, with ud_verbs only as the auxiliary transport RC's wireup needs), and UCX's
# defaults, soft0 visible, still work.  Each pair is bounded; no speed is asserted.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
for p in ucx_info ucx_perftest ss; do
	command -v "$p" >/dev/null || fail "$p is not installed; run 'make deps' (ucx-utils)"
done
dir=$(mktemp -d)
. "$RDMATOOL_TOP/tests/integration/lib/exec_server.sh"

timeout -k 5 60 "$RDMATOOL" exec -- ucx_info -d >"$dir/info" 2>&1 || fail "ucx_info -d: $(cat "$dir/info")"
for tl in rc_verbs ud_verbs; do
	grep -A1 "Transport: $tl\$" "$dir/info" | grep -q "Device: soft0:1" ||
		fail "ucx_info -d does not list soft0:1 under $tl: $(grep -E 'Transport|Device' "$dir/info")"
done

# perf_pair NAME TEST [ENV=VALUE...]: ucx_perftest server and client, TEST, 1000 iterations.
perf_pair() {
	local name=$1 t=$2 port rc=0 src=0
	shift 2
	port=$(free_port)
	exec_server_start "$dir/$name.server" "$port" 120 env "$@" ucx_perftest -p "$port" || true
	timeout -k 5 120 "$RDMATOOL" exec -- env "$@" ucx_perftest 127.0.0.1 -p "$port" -t "$t" -n 1000 \
		>"$dir/$name.client" 2>&1 || rc=$?
	exec_server_wait || src=$?
	if [ "$rc" != 0 ] || [ "$src" != 0 ]; then
		sed 's/^/  server| /' "$dir/$name.server" >&2
		sed 's/^/  client| /' "$dir/$name.client" >&2
		fail "ucx_perftest $name: server exit $src, client exit $rc"
	fi
	grep -Eq '^Final: +1000 ' "$dir/$name.client" || fail "ucx_perftest $name: no Final row: $(cat "$dir/$name.client")"
	echo "$name: $(grep '^Final:' "$dir/$name.client")"
}
for t in tag_lat tag_bw ucp_put_lat ucp_get; do
	perf_pair "rc_$t" "$t" UCX_TLS=rc_v,self UCX_NET_DEVICES=soft0:1
done
perf_pair defaults_tag_lat tag_lat RDMATOOL_UNUSED=1
echo "ucx ok"
