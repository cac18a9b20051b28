# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/integration/lib/agent_nodes.sh NAME NODES PORTS [traffic]: the setting of the tests that
# run agents of several nodes on this machine.  Sourced after `set -eu` and fail(); makes $T
# (/tmp/rdmatool-agent-NAME.*, removed with every agent killed on exit), picks NODES base ports
# P with P+1 .. P+PORTS-1 free as well ($hosts: sibling S of a node listens on its base port + S),
# and defines
#   A R ARGS...       rdmatool ARGS under node R's agent directory $T/aR (A_TIMEOUT s, default 60)
#   X R CMD ARGS...   tests/tools/agent_traffic CMD R ARGS under node R's directory (X_TIMEOUT s,
#                     default 90; with "traffic", the tool must have been built)
#   wait_for CMD...   retries CMD for 10 s
command -v jq >/dev/null || fail "jq missing; run 'make deps'"
command -v python3 >/dev/null || fail "python3 missing"
TRAFFIC=$BUILD/tests/tools/agent_traffic
if [ "${4:-}" = traffic ]; then
	[ -x "$TRAFFIC" ] || fail "$TRAFFIC missing; run 'make check'"
fi
A_TIMEOUT=${A_TIMEOUT:-60}
X_TIMEOUT=${X_TIMEOUT:-90}

T=$(mktemp -d "/tmp/rdmatool-agent-$1.XXXXXX")
export RDMATOOL_STATS=0 RDMATOOL_AGENT_KEY=$T/key # made by the first agent; never the user's own
cleanup() {
	local status=$?
	# A failed test says what its agents logged (links down, errors) before their directory goes.
	if [ "$status" != 0 ]; then
		for log in "$T"/a*/agent.*.log; do
			[ -f "$log" ] && { echo "--- ${log#"$T"/} (last 20 lines):"; tail -n 20 "$log"; } >&2
		done
	fi
	for f in "$T"/a*/agent.*.pid; do
		[ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT
hosts=$(python3 - "$2" "$3" <<'PY'
import socket, sys
nodes, ports = int(sys.argv[1]), int(sys.argv[2])
held, out = [], []
while len(out) < nodes:
    a = socket.socket()
    a.bind(("127.0.0.1", 0))
    p = a.getsockname()[1]
    run = [a]
    try:
        for k in range(1, ports):
            s = socket.socket()
            run.append(s)
            s.bind(("127.0.0.1", p + k))
    except OSError:
        continue
    held += run
    out.append(p)
print(",".join("127.0.0.1:%d" % p for p in out))
PY
)
A() {
	local r=$1
	shift
	RDMATOOL_AGENT_DIR=$T/a$r timeout "$A_TIMEOUT" "$RDMATOOL" "$@"
}
X() {
	local r=$1
	shift
	RDMATOOL_AGENT_DIR=$T/a$r timeout "$X_TIMEOUT" "$TRAFFIC" "$1" "$r" "${@:2}"
}
wait_for() {
	for _ in $(seq 500); do
		"$@" && return 0
		sleep 0.02
	done
	return 1
}
