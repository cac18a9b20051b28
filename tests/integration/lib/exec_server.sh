# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/integration/lib/exec_server.sh: a third-party server under `rdmatool exec` for the
# exec_*.sh tests (qperf, fi_pingpong, ucx_perftest, rping -P), started, waited for and stopped.
#   exec_server_start OUT PORT LIMIT PROGRAM [ARGS...]  starts `rdmatool exec -- PROGRAM ARGS`
#       in the background (output in OUT, bounded by `timeout LIMIT`), then waits at most 20 s
#       until something listens on TCP PORT; returns 1 if the server exits first or never listens.
#   exec_server_wait   waits for the server to exit on its own: its exit status.
#   exec_server_stop   stops it (the EXIT trap does it too).
# Sets $exec_server (its PID).  Needs $dir and $RDMATOOL; sources verbs_pair.sh (free_port,
# listening, a sanitizer runtime for the preload library).
. "$RDMATOOL_TOP/tests/integration/lib/verbs_pair.sh"
exec_server=

exec_server_stop() {
	if [ -n "$exec_server" ]; then
		kill "$exec_server" 2>/dev/null || true
		wait "$exec_server" 2>/dev/null || true
		exec_server=
	fi
}
trap 'exec_server_stop; rm -rf "$dir"' EXIT

exec_server_start() {
	local out=$1 port=$2 limit=$3 i
	shift 3
	timeout -k 5 "$limit" "$RDMATOOL" exec -- "$@" >"$out" 2>&1 &
	exec_server=$!
	for ((i = 0; i < 400; i++)); do
		listening "$port" && return 0
		kill -0 "$exec_server" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

exec_server_wait() {
	local rc=0
	wait "$exec_server" || rc=$?
	exec_server=
	return $rc
}
