#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# One licence for the whole tree: LICENSE's SPDX identifier is the one every
# source file, script and build file carries, and the one both packages declare.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$RDMATOOL_TOP"

want=$(sed -n 's/^SPDX-License-Identifier: //p' LICENSE)
[ -n "$want" ] || fail "LICENSE names no SPDX-License-Identifier"

# Every tracked file that holds code (not data: mutation patches, fabrics, docs).
files=$(git ls-files 2>/dev/null | grep -E '\.(c|h|sh|py|bash|zsh|map)$|(^|/)Makefile$|^completions/_rdmatool$|/via-verbs$' ||
	find cmd core hw tests completions -type f \( -name '*.[ch]' -o -name '*.sh' -o -name '*.py' \))
[ -n "$files" ] || fail "found no source files under $RDMATOOL_TOP"
bad=0
for f in $files; do
	[ -f "$f" ] || continue
	# The identifier belongs in a file's first lines (after a shebang or #compdef).
	ids=$(head -3 "$f" | grep -o 'SPDX-License-Identifier: .*' | sed 's/SPDX-License-Identifier: //; s/ *\*\/ *$//' | sort -u)
	if [ "$ids" != "$want" ]; then
		echo "  $f: '${ids:-none}'" >&2
		bad=$((bad + 1))
	fi
done
[ $bad -eq 0 ] || fail "$bad files do not say SPDX-License-Identifier: $want"

# Both packages say the same, in their own syntax.
grep -q "^License: *$want\$" packaging/rdmatool.spec || fail "rdmatool.spec License is not '$want'"
deb=$(sed -n '/^Files: \*$/,/^$/s/^License: //p' packaging/debian/copyright)
[ "$(echo "$deb" | tr 'A-Z' 'a-z')" = "$(echo "$want" | tr 'A-Z' 'a-z')" ] ||
	fail "debian/copyright 'Files: *' License is '$deb', want '$want'"
# Each licence the expression names has its text in LICENSE and debian/copyright.
for lic in $(echo "$want" | tr ' ' '\n' | grep -v -x -e OR -e AND); do
	grep -q "^License: $lic\$" packaging/debian/copyright || fail "debian/copyright has no text for $lic"
done
grep -q 'GNU General Public License' LICENSE || fail "LICENSE lacks the GPL's text or pointer"
grep -q 'BSD 2-Clause' LICENSE || fail "LICENSE lacks the BSD-2-Clause text"
echo "licence: $(echo "$files" | wc -w) files, all $want"
