# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/integration/lib/bench_server.sh: start `rdmatool bench --server` and wait for its port.
#   bench_server_start ERRFILE COMMAND...
# runs COMMAND (a bench --server, possibly behind `env VAR=value`) in the background with its stderr
# in ERRFILE, and returns once it says which port it listens on (20 s at most): sets $server (its
# pid) and $port.  A server that exits or never listens ends the test with FAIL and its stderr.
bench_server_start() {
	local err=$1 i
	shift
	# Created here: the background child opens it later, and sed must not find it missing.
	: >"$err"
	"$@" 2>"$err" &
	server=$!
	port=
	for ((i = 0; i < 400; i++)); do
		port=$(sed -n 's/^bench server listening on port \([0-9]*\)$/\1/p' "$err")
		[ -n "$port" ] && return 0
		kill -0 "$server" 2>/dev/null || { echo "FAIL: the bench server exited: $(cat "$err")" >&2; exit 1; }
		sleep 0.05
	done
	echo "FAIL: the bench server never listened: $(cat "$err")" >&2
	exit 1
}
