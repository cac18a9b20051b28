#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# rdmatool exec: libfabric's verbs provider on soft0.  fi_pingpong with data checks (-c):
# msg endpoints over verbs (connections by rdma_cm: before rdma_getaddrinfo(NULL, NULL, hints)
# worked, fi_getinfo found nothing, ENODATA), and rdm endpoints over "verbs;ofi_rxm".
# ofi_rxm sizes its CQs by the job's universe: soft0's 65536 CQEs need FI_UNIVERSE_SIZE=16 or
# so, as rxe's do.  Each pair is bounded; the server's control port is waited for.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
for p in fi_pingpong ss; do
	command -v "$p" >/dev/null || fail "$p is not installed; run 'make deps' (libfabric-bin)"
done
dir=$(mktemp -d)
. "$RDMATOOL_TOP/tests/integration/lib/exec_server.sh"

# fi_pair NAME ARGS...: fi_pingpong ARGS as server (-B port) and client (-P port 127.0.0.1), 120 s
# each, twice that in a sanitizer build (the rdm pair under TSan beside other work took longer).
fi_pair() {
	local name=$1 port rc=0 src=0 limit=120
	shift
	[ -n "${RDMATOOL_SANITIZER_RUNTIME:-}" ] && limit=240
	port=$(free_port)
	exec_server_start "$dir/$name.server" "$port" "$limit" fi_pingpong "$@" -B "$port" || true
	timeout -k 5 "$limit" "$RDMATOOL" exec -- fi_pingpong "$@" -P "$port" 127.0.0.1 >"$dir/$name.client" 2>&1 || rc=$?
	exec_server_wait || src=$?
	if [ "$rc" != 0 ] || [ "$src" != 0 ]; then
		sed 's/^/  server| /' "$dir/$name.server" >&2
		sed 's/^/  client| /' "$dir/$name.client" >&2
		fail "fi_pingpong $name: server exit $src, client exit $rc"
	fi
	cat "$dir/$name.client"
}

fi_pair msg -p verbs -e msg -c -I 20 -S all
grep -Eq '^4m +20 += *20 ' "$dir/msg.client" || fail "fi_pingpong msg: no 4 MiB row"
FI_UNIVERSE_SIZE=16 fi_pair rdm -p "verbs;ofi_rxm" -e rdm -c -I 20 -S all
grep -Eq '^4m +20 += *20 ' "$dir/rdm.client" || fail "fi_pingpong rdm: no 4 MiB row"
echo "libfabric ok"
