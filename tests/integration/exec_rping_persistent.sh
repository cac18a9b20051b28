#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# rdmatool exec: rping's persistent server (-P) under a burst of 10 clients at once, then one
# more client.  rping 44's -P has a race of its own (its CM thread overwrites child_cm_id before
# the main thread cloned it, so two threads may get one id and one destroys it under the other;
# rdma-core fixed it later with an accept_ready semaphore): some burst clients may fail.  What
# the soft CM must give: no crash of the server (a use after free in soft_cm_create_qp_ex
# before, issue 44 N14; a sanitizer build of the library reports any), and a server that still
# serves: the last client passes with its data checked.  A burst client that lost its request
# to rping's race would wait for the CM's timeouts: 20 s bound them.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
for p in rping ss; do
	command -v "$p" >/dev/null || fail "$p is not installed; run 'make deps'"
done
dir=$(mktemp -d)
. "$RDMATOOL_TOP/tests/integration/lib/exec_server.sh"

port=$(free_port)
exec_server_start "$dir/server" "$port" 200 rping -s -P -a 127.0.0.1 -p "$port" ||
	fail "rping -s -P did not listen on $port within 20 s: $(cat "$dir/server")"
pids=()
for i in $(seq 10); do
	timeout -k 2 20 "$RDMATOOL" exec -- rping -c -a 127.0.0.1 -p "$port" -C 3 >"$dir/c$i" 2>&1 &
	pids+=($!)
done
ok=0
for p in "${pids[@]}"; do
	if wait "$p"; then ok=$((ok + 1)); fi
done
echo "burst: $ok of 10 clients passed"
kill -0 "$exec_server" 2>/dev/null || fail "the server died in the burst: $(cat "$dir/server")"
timeout -k 5 60 "$RDMATOOL" exec -- rping -c -a 127.0.0.1 -p "$port" -C 5 -v >"$dir/last" 2>&1 ||
	fail "a client after the burst: exit $?: $(cat "$dir/last") / server: $(tail -20 "$dir/server")"
[ "$(grep -c '^ping data: rdma-ping-' "$dir/last")" = 5 ] || fail "the last client: not 5 pings: $(cat "$dir/last")"
kill -0 "$exec_server" 2>/dev/null || fail "the server died: $(cat "$dir/server")"
! grep -q "AddressSanitizer\|ThreadSanitizer" "$dir/server" || fail "a sanitizer report: $(cat "$dir/server")"
echo "rping -P ok"
