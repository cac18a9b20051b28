# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/integration/lib/verbs_pair.sh: run an unmodified verbs program (ibv_*_pingpong,
# perftest) as server and client under `rdmatool exec`, the way its users do.
#   verbs_pair NAME TIMEOUT PROGRAM [ARGS...]
# starts PROGRAM ARGS -p PORT as the server, waits (at most 20 s) until it listens on PORT,
# then runs PROGRAM ARGS -p PORT 127.0.0.1 as the client.  Sets $server_rc and $client_rc and
# leaves the outputs in $dir/NAME.server and $dir/NAME.client.  Both run under `timeout TIMEOUT`:
# a hang is an exit status of 124, never a stuck test; in a sanitizer build TIMEOUT counts twice
# (a TSan build beside other work ran ib_send_lat's 200 round trips in 160 s).  Needs $dir and
# $RDMATOOL.
# VERBS_PAIR_SERVER_CPU / VERBS_PAIR_CLIENT_CPU, when set, pin each side to that CPU (taskset).
# VERBS_PAIR_SERVER_SESSION=1 starts the server in a session of its own (setsid), as from a second
# terminal: with autogroup scheduling a session's CPU share is split between the CPUs its threads
# keep busy, so a client spinning on one CPU would otherwise halve its own server's share on the other.

# In a sanitizer build (make asan/tsan) the preload library needs its sanitizer's runtime,
# which must come first in LD_PRELOAD (rdmatool exec keeps it there); the programs are not
# ours, so their own leaks are not reported.
. "$RDMATOOL_TOP/tests/integration/lib/sanitizer.sh"
verbs_sanitizer_env() {
	local runtime
	runtime=$(sanitizer_runtime "$(dirname "$RDMATOOL")/librdmatool-verbs.so")
	if [ -n "$runtime" ]; then
		VERBS_PAIR_SLOW=2
		export LD_PRELOAD="$runtime${LD_PRELOAD:+:$LD_PRELOAD}"
		export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
		# UCX's memory hooks patch malloc and mmap, which the runtime intercepts too: under
		# TSan, `ucx_info -d` crashes with no library of ours in the process.
		export UCX_MEM_MALLOC_HOOKS=no UCX_MEM_MMAP_HOOK_MODE=none
	fi
}
verbs_sanitizer_env

# A TCP port nothing listens on (the program's own out-of-band exchange uses it).  The
# distribution's python3: a user's (pyenv) may not start with a sanitizer runtime preloaded.
free_port() {
	local py=/usr/bin/python3
	[ -x "$py" ] || py=python3
	"$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

listening() {
	ss -Hltn "sport = :$1" 2>/dev/null | grep -q .
}

verbs_pair() {
	local name=$1 limit=$(($2 * ${VERBS_PAIR_SLOW:-1})) port i server
	shift 2
	port=$(free_port)
	${VERBS_PAIR_SERVER_SESSION:+setsid} ${VERBS_PAIR_SERVER_CPU:+taskset -c "$VERBS_PAIR_SERVER_CPU"} \
		timeout -k 5 "$limit" "$RDMATOOL" exec -- "$@" -p "$port" >"$dir/$name.server" 2>&1 &
	server=$!
	for ((i = 0; i < 400; i++)); do
		listening "$port" && break
		if ! kill -0 "$server" 2>/dev/null; then
			break
		fi
		sleep 0.05
	done
	client_rc=0
	${VERBS_PAIR_CLIENT_CPU:+taskset -c "$VERBS_PAIR_CLIENT_CPU"} \
		timeout -k 5 "$limit" "$RDMATOOL" exec -- "$@" -p "$port" 127.0.0.1 >"$dir/$name.client" 2>&1 ||
		client_rc=$?
	server_rc=0
	wait "$server" || server_rc=$?
}

# verbs_pair_ok NAME TIMEOUT PROGRAM [ARGS...]: both sides must exit 0, else FAIL with their output.
verbs_pair_ok() {
	local name=$1
	verbs_pair "$@"
	if [ "$server_rc" != 0 ] || [ "$client_rc" != 0 ]; then
		echo "FAIL: $name: server exit $server_rc, client exit $client_rc" >&2
		sed 's/^/  server| /' "$dir/$name.server" >&2
		sed 's/^/  client| /' "$dir/$name.client" >&2
		exit 1
	fi
}
