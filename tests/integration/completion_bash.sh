#!/usr/bin/env bash
# The bash completion really completes: commands, global options, per-command options.
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ln -s "$RDMATOOL" "$tmp/rdmatool"
export PATH="$tmp:$PATH"
# shellcheck source=/dev/null
source "$RDMATOOL_TOP/completions/rdmatool.bash"

complete_words() {
	COMP_WORDS=("$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	_rdmatool
	echo "${COMPREPLY[*]}"
}

out=$(complete_words rdmatool de)
[ "$out" = "devices" ] || { echo "commands: got '$out'"; exit 1; }
out=$(complete_words rdmatool --js)
[ "$out" = "--json" ] || { echo "global options: got '$out'"; exit 1; }
out=$(complete_words rdmatool help dev)
[ "$out" = "devices" ] || { echo "help <command>: got '$out'"; exit 1; }
out=$(complete_words rdmatool -j devices --he)
[ "$out" = "--help" ] || { echo "command options: got '$out'"; exit 1; }
echo ok
