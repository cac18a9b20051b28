#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# `make deps <target>` on a fresh machine: pkg-config knows the packages only
# after the deps recipe ran. A pkg-config wrapper early in PATH fails until a
# marker written by the (stand-in) deps recipe exists, and logs when it was
# asked; the build must ask only after deps and must compile with its flags.
# A compiler wrapper refuses to run before the marker exists: every object,
# the preloaded library's included, must wait for deps. The stand-in deps
# recipe takes a moment, so a compile that is not ordered after it starts first.
set -eu
tmp=$(mktemp -d "${TMPDIR:-/tmp}/make-deps-fresh.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
real=$(command -v pkg-config)
mkdir "$tmp/bin"
cat >"$tmp/bin/pkg-config" <<WRAP
#!/bin/sh
if [ -e "$tmp/installed" ]; then
  echo after >>"$tmp/asked"
  exec "$real" "\$@"
fi
echo before >>"$tmp/asked"
exit 1
WRAP
chmod 755 "$tmp/bin/pkg-config"
cat >"$tmp/bin/cc" <<WRAP
#!/bin/sh
if [ ! -e "$tmp/installed" ]; then
  echo "compiled before deps: \$*" >>"$tmp/early"
  exit 1
fi
exec gcc "\$@"
WRAP
chmod 755 "$tmp/bin/cc"
PATH="$tmp/bin:$PATH" timeout 600 make -j2 --no-print-directory \
  CC="$tmp/bin/cc" BUILD="$tmp/build" DEPS_INSTALL="sleep 2; touch $tmp/installed" deps all \
  >"$tmp/log" 2>&1 && rc=0 || rc=$?
if [ -e "$tmp/early" ]; then
  cat "$tmp/early"; echo "FAIL: a compile started before deps ran"; exit 1
fi
[ "$rc" = 0 ] || { cat "$tmp/log"; echo "FAIL: make deps all"; exit 1; }
if grep -q before "$tmp/asked"; then
  echo "FAIL: pkg-config was asked before deps ran"; exit 1
fi
grep -q after "$tmp/asked" || { echo "FAIL: pkg-config never asked"; exit 1; }
"$tmp/build/rdmatool" --version >/dev/null || { echo "FAIL: built binary"; exit 1; }
echo "PASS: make deps all asks pkg-config only after deps"
