#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The zsh completion, driven for real through zsh's zpty module: the command form
# (`rdmatool walk --pr<TAB>`), help, option values, bench tests, and the rdmatool-<cmd> links.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v zsh >/dev/null || fail "zsh is not installed; run 'make deps'"
tmp=$(mktemp -d /tmp/rdmatool-zsh.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/bin"
ln -s "$RDMATOOL" "$tmp/bin/rdmatool"
ln -s "$RDMATOOL" "$tmp/bin/rdmatool-walk"
ln -s "$RDMATOOL" "$tmp/bin/rdmatool-bench"
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
expect "--preset" "rdmatool walk --pr"
expect "--preset" "rdmatool -j walk --pr"
expect "--preset" "rdmatool-walk --pr"
expect "control default rdma" "rdmatool walk --preset="
expect "both global striped" "rdmatool bench --lock="
expect "send_bw send_lat" "rdmatool bench sen"
expect "send_bw send_lat" "rdmatool-bench sen"
expect "agent bench conform cqstat devices exec madstress walk" "rdmatool help "
expect "1 2 get set" "rdmatool madstress -m "
echo "zsh completion: ok"
