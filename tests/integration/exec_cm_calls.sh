#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# rdmatool exec: librdmacm answers programs rely on (lib/exec_cm_probe.c, built here against
# librdmacm's own headers and run preloaded): rdma_bind_addr to port 0 reserves a port at once
# (rdma_get_src_port is non-zero before rdma_listen; qperf -cm1 sends it to its client), and
# rdma_getaddrinfo(NULL, NULL, hints) takes its addresses from the hints (libfabric's verbs
# provider).  Before, the first gave port 0 and the second EINVAL.  And the CM is safe when a
# program destroys ids under other threads (issue 44 N14): a destroyed id is refused with
# EINVAL, never used (before: a double free); 10 requests at once give 10 distinct ids, and
# the requests still queued when the listener is destroyed are REJECTED at once (before: each
# waited for its 10 s timeout, UNREACHABLE).  Multicast fails with EOPNOTSUPP, as the man page
# says (it was ENOSYS).
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
cc=${CC:-cc}
command -v "$cc" >/dev/null || fail "no C compiler ($cc); run 'make deps'"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$cc" -Wall -Wextra -Werror -o "$dir/probe" "$RDMATOOL_TOP/tests/integration/lib/exec_cm_probe.c" -lrdmacm ||
	fail "cannot build exec_cm_probe.c (librdmacm-dev missing? run 'make deps')"
. "$RDMATOOL_TOP/tests/integration/lib/verbs_pair.sh" # a sanitizer build: its runtime first in LD_PRELOAD
for m in bind0 hints destroyed burst mcast; do
	timeout -k 5 30 "$RDMATOOL" exec -- "$dir/probe" "$m" || fail "exec_cm_probe $m (exit $?)"
done
echo "exec cm calls ok"
