#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# RDMATOOL_SOFT_SECRET between two processes (issue 15 item 7): the same secret on both sides works;
# a different secret, or none on one side, is refused and the run fails instead of being served.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$RDMATOOL_TOP/tests/integration/lib/bench_server.sh"
dir=$(mktemp -d /tmp/rdmatool-soft-auth.XXXXXX)
export RDMATOOL_STATS_DIR=$dir
server=
cleanup() {
	[ -n "$server" ] && kill -9 "$server" 2>/dev/null
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT

run_pair() { # server-secret client-secret [bench test and options]: the client's exit status
	local rc
	bench_server_start "$dir/server.err" env RDMATOOL_SOFT_SECRET="$1" "$RDMATOOL" bench --server=0
	set +e
	RDMATOOL_SOFT_SECRET=$2 timeout 120 "$RDMATOOL" bench ${3:-write_lat -n 50} --lock=striped --client="127.0.0.1:$port" \
		>"$dir/client.out" 2>"$dir/client.err"
	rc=$?
	set -e
	kill "$server" 2>/dev/null
	wait "$server" 2>/dev/null || true
	server=
	return $rc
}

run_pair "same-s3cret" "same-s3cret" || fail "matching secrets: $(cat "$dir/client.err")"
# Payloads past the wire's 64 KiB stranger limit, both ways: WRITE requests and READ responses.
run_pair "same-s3cret" "same-s3cret" "write_bw -s 1048576 -n 10" || fail "1 MiB WRITEs: $(cat "$dir/client.err")"
run_pair "same-s3cret" "same-s3cret" "read_bw -s 1048576 -n 10" || fail "1 MiB READs: $(cat "$dir/client.err")"
run_pair "" "" "send_bw -s 262144 -n 10" || fail "256 KiB SENDs without a secret: $(cat "$dir/client.err")"
if run_pair "s3cret" "another"; then fail "mismatched secrets were served"; fi
grep -q "completed with status" "$dir/client.err" || fail "mismatch: $(cat "$dir/client.err")"
if run_pair "s3cret" ""; then fail "a client without the secret was served"; fi
echo "soft auth: ok"
