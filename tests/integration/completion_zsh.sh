#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The zsh completion, driven for real through zsh's zpty module (lib/zsh_complete.zsh types the line
# and TAB into an interactive zsh and prints what its completion offers).
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v zsh >/dev/null || fail "zsh is not installed; run 'make deps'"
tmp=$(mktemp -d /tmp/rdmatool-zsh.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/bin"
for n in rdmatool rdmatool-walk rdmatool-bench; do ln -s "$RDMATOOL" "$tmp/bin/$n"; done
printf '#!/bin/sh\n' >"$tmp/bin/ibv_devinfo_for_test" && chmod +x "$tmp/bin/ibv_devinfo_for_test"
touch "$tmp/history-one.txt"
export PATH="$tmp/bin:$PATH"

expect() { # want line
	local got
	got=$(timeout 60 zsh "$RDMATOOL_TOP/tests/integration/lib/zsh_complete.zsh" "$RDMATOOL_TOP/completions" "$tmp" "$2" |
		sort | tr '\n' ' ')
	got=${got% }
	[ "$got" = "$1" ] || fail "'$2<TAB>': got '$got', want '$1'"
}

expect "walk" "rdmatool wa"
expect "--json" "rdmatool --js"
expect "--preset=" "rdmatool walk --pr"
expect "--preset=" "rdmatool -j walk --pr"
expect "--preset=" "rdmatool-walk --pr"
expect "--preset=control --preset=default --preset=rdma" "rdmatool walk --preset="
expect "--lock=striped" "rdmatool bench --lock=s"
expect "--lock=both --lock=global --lock=striped" "rdmatool bench --lock="
expect "fetch_add=" "rdmatool walk -w fetch_"
expect "send_bw send_lat" "rdmatool bench sen"
expect "send_bw send_lat" "rdmatool-bench sen"
expect "agent bench conform cqstat devices exec madstress walk" "rdmatool help "
expect "1 2 get set" "rdmatool madstress -m "
expect "PI PKeyTable PortInfo" "rdmatool madstress 4 P"
expect "create destroy list" "rdmatool agent chan "
expect "ibv_devinfo_for_test" "rdmatool exec -- ibv_devinfo_for_t"
expect "history-one.txt" "rdmatool walk --history-file=$tmp/history-o"
echo "zsh completion: ok"
