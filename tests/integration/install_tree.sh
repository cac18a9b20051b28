#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# make install into a staging root: the binary runs from there, a link per command (named from the
# command table at build time, without running the binary), man pages that render, and completions
# where bash-completion's loader and zsh's default fpath look (the links included).
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
root=$(mktemp -d /tmp/rdmatool-install.XXXXXX)
trap 'rm -rf "$root"' EXIT
make -s -C "$RDMATOOL_TOP" BUILD="${BUILD:-build}" install DESTDIR="$root" PREFIX=/usr/local >"$root.log" 2>&1 ||
	{ cat "$root.log" >&2; rm -f "$root.log"; fail "make install"; }
rm -f "$root.log"
p=$root/usr/local
"$p/bin/rdmatool" --version | grep -q '^rdmatool ' || fail "installed rdmatool --version"
cmds=$("$RDMATOOL" --help | awk '/^Commands:/{on=1;next} on&&!NF{exit} on{print $1}')
[ -n "$cmds" ] || fail "no commands in --help"
for c in $cmds; do
	[ "$(readlink "$p/bin/rdmatool-$c")" = rdmatool ] || fail "no bin/rdmatool-$c link"
	[ "$(readlink "$p/share/bash-completion/completions/rdmatool-$c")" = rdmatool ] ||
		fail "no bash completion under rdmatool-$c for the loader"
	[ -f "$p/share/man/man1/rdmatool-$c.1" ] || fail "no man page rdmatool-$c.1"
done
"$p/bin/rdmatool-devices" -j 2>/dev/null | python3 -c 'import json,sys; json.load(sys.stdin)' || fail "installed link -j"
version=$(sed -n 's/^#define RDMATOOL_VERSION "\(.*\)"/\1/p' "$RDMATOOL_TOP/cmd/version.h")
date=$(sed -n 's/^#define RDMATOOL_DATE "\(.*\)"/\1/p' "$RDMATOOL_TOP/cmd/version.h")
for page in "$p"/share/man/man1/*.1; do
	mandoc -Tascii "$page" >/dev/null 2>&1 || fail "$page does not render"
	# The date and version from cmd/version.h, the one place they are written.
	head -1 "$page" | grep -q "^\.TH [A-Z-]* 1 \"$date\" \"rdmatool $version\" " ||
		fail "$page: $(head -1 "$page"), want the date $date and version $version of cmd/version.h"
done
mandoc -Tascii "$p/share/man/man1/rdmatool-bench.1" | sed 's/.\x08//g' | grep -q -- '--server' || fail "bench.1 lost --server"
[ -f "$p/lib/rdmatool/librdmatool-verbs.so" ] || fail "no lib/rdmatool/librdmatool-verbs.so"
# The installed exec finds the installed library (../lib/rdmatool from the binary); a sanitizer
# build's runtime goes first (lib/verbs_pair.sh), so the library may follow it.
. "$RDMATOOL_TOP/tests/integration/lib/verbs_pair.sh"
"$p/bin/rdmatool" exec -- sh -c 'echo "$LD_PRELOAD"' | grep -Eq "(^|:)$p/bin/../lib/rdmatool/librdmatool-verbs.so" ||
	fail "installed exec does not preload the installed library"
if command -v ibv_devices >/dev/null; then
	"$p/bin/rdmatool" exec ibv_devices | grep -q soft0 || fail "installed exec: ibv_devices has no soft0"
fi
[ -f "$p/share/bash-completion/completions/rdmatool" ] || fail "no bash completion"
[ -f "$p/share/zsh/site-functions/_rdmatool" ] || fail "zsh completion not in site-functions"
echo "install: ok"
