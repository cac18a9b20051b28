#!/usr/bin/env bash
# core's two connect paths: the endpoint and peer-death unit tests run once with
# RDMATOOL_CONNECT=cm (QPs connected by the soft device's connection manager) and once with
# oob (the address blob); a bad value is a usage error naming the variable.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
bin=$(cd "$(dirname "$RDMATOOL")" && pwd)/tests
for t in test_core_endpoint test_core_peerdeath; do
	[ -x "$bin/$t" ] || fail "$bin/$t is not built; run 'make $BUILD/tests/$t'"
	for mode in cm oob; do
		out=$(RDMATOOL_CONNECT=$mode timeout -k 5 120 "$bin/$t" 2>&1) || fail "$t with RDMATOOL_CONNECT=$mode: $out"
	done
done
rc=0
out=$(RDMATOOL_CONNECT=tcp "$RDMATOOL" bench send_lat -n 10 2>&1) || rc=$?
[ "$rc" != 0 ] || fail "RDMATOOL_CONNECT=tcp: accepted: $out"
echo "$out" | grep -q "RDMATOOL_CONNECT='tcp' is invalid; use cm" || fail "RDMATOOL_CONNECT=tcp: $out"
echo "core connect ok"
