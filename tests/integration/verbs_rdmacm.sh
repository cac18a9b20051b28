#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# rdmatool exec: librdmacm programs, unmodified, on the soft device's connection manager.
# rping (10 pings, data verified on both sides), rdma_server/rdma_client (rdma_create_ep,
# synchronous ids), ucmatose (several connections on one event channel), perftest -R
# (ib_send_lat, ib_write_bw: two connections each, the listener re-created between them),
# each as two processes; a client with no listener is REJECTED at once, not hung.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
for p in rping rdma_server rdma_client ucmatose ib_send_lat ib_write_bw ss; do
	command -v "$p" >/dev/null || fail "$p is not installed; run 'make deps'"
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$RDMATOOL_TOP/tests/integration/lib/verbs_pair.sh"

# A free port below the ephemeral range: the programs' soft devices take ephemeral ports for
# their wires, which a port picked from that range could collide with.
cm_port() {
	/usr/bin/python3 -c '
import random, socket
lo = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for _ in range(200):
    p = random.randrange(10000, lo)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    print(p)
    break'
}

# cm_pair NAME TIMEOUT 'SERVER ARGS' 'CLIENT ARGS': PORT in the arguments is a free port; the
# client starts once the server listens on it.  Both must exit 0.
cm_pair() {
	local name=$1 limit=$2 port i server server_rc=0 client_rc=0
	port=$(cm_port)
	timeout -k 5 "$limit" "$RDMATOOL" exec -- ${3//PORT/$port} >"$dir/$name.server" 2>&1 &
	server=$!
	for ((i = 0; i < 400; i++)); do
		listening "$port" && break
		kill -0 "$server" 2>/dev/null || break
		sleep 0.05
	done
	timeout -k 5 "$limit" "$RDMATOOL" exec -- ${4//PORT/$port} >"$dir/$name.client" 2>&1 || client_rc=$?
	wait "$server" || server_rc=$?
	if [ "$server_rc" != 0 ] || [ "$client_rc" != 0 ]; then
		echo "FAIL: $name: server exit $server_rc, client exit $client_rc" >&2
		sed 's/^/  server| /' "$dir/$name.server" >&2
		sed 's/^/  client| /' "$dir/$name.client" >&2
		exit 1
	fi
}

# rping: the client's buffer goes to the server by RDMA READ and comes back by RDMA WRITE;
# -v prints it on both sides.  Ping i carries the printable characters from 'A' + i on.
cm_pair rping 60 "rping -s -a 127.0.0.1 -p PORT -C 10 -v" "rping -c -a 127.0.0.1 -p PORT -C 10 -v"
grep '^ping data: ' "$dir/rping.client" | sed 's/^ping data: //' >"$dir/rping.got"
grep '^server ping data: ' "$dir/rping.server" | sed 's/^server ping data: //' >"$dir/rping.served"
[ "$(wc -l <"$dir/rping.got")" = 10 ] || fail "rping client: not 10 pings: $(cat "$dir/rping.client")"
cmp -s "$dir/rping.got" "$dir/rping.served" || fail "rping: the server saw other data than the client got back"
for i in 0 3 9; do
	first=$(printf "\\$(printf %03o $((65 + i)))")
	grep -q "^rdma-ping-$i: $first" "$dir/rping.got" || fail "rping: ping $i does not start with '$first': $(cat "$dir/rping.got")"
done

cm_pair rdma_ep 30 "rdma_server -p PORT" "rdma_client -s 127.0.0.1 -p PORT"
grep -q "rdma_server: end 0" "$dir/rdma_ep.server" || fail "rdma_server: $(cat "$dir/rdma_ep.server")"
grep -q "rdma_client: end 0" "$dir/rdma_ep.client" || fail "rdma_client: $(cat "$dir/rdma_ep.client")"

cm_pair ucmatose 60 "ucmatose -p PORT -c 4" "ucmatose -s 127.0.0.1 -p PORT -c 4"
grep -q "return status 0" "$dir/ucmatose.client" || fail "ucmatose client: $(cat "$dir/ucmatose.client")"

cm_pair send_lat 60 "ib_send_lat -R -n 200 -p PORT" "ib_send_lat -R -n 200 -p PORT 127.0.0.1"
grep -Eq "^ 2 +200 " "$dir/send_lat.client" || fail "ib_send_lat -R: no result: $(cat "$dir/send_lat.client")"
cm_pair write_bw 60 "ib_write_bw -R -n 200 -p PORT" "ib_write_bw -R -n 200 -p PORT 127.0.0.1"
grep -Eq "^ 65536 +200 " "$dir/write_bw.client" || fail "ib_write_bw -R: no result: $(cat "$dir/write_bw.client")"

# Nobody listens: REJECTED (IB's "invalid service ID", 8), within the timeout (124 would be a hang).
port=$(free_port)
rc=0
timeout -k 5 20 "$RDMATOOL" exec -- rping -c -a 127.0.0.1 -p "$port" -C 1 >"$dir/nolistener" 2>&1 || rc=$?
[ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "rping to no listener: exit $rc: $(cat "$dir/nolistener")"
grep -q "RDMA_CM_EVENT_REJECTED, error 8" "$dir/nolistener" || fail "rping to no listener: $(cat "$dir/nolistener")"
echo "verbs rdmacm ok"
