#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# packaging/build-deb.sh OUTDIR: the Debian source and binary packages of HEAD, the way a packager
# builds them: the `make dist` tarball as the orig tarball, packaging/debian as debian/, then
# dpkg-buildpackage -us -uc and lintian.  Leaves everything in OUTDIR (default build/deb).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$top/build/deb}
version=$(sed -n 's/^#define RDMATOOL_VERSION "\(.*\)"/\1/p' "$top/cmd/version.h")
rm -rf "$out"
mkdir -p "$out"
git -C "$top" archive --format=tar.gz --prefix="rdmatool-$version/" -o "$out/rdmatool_$version.orig.tar.gz" HEAD
tar -xzf "$out/rdmatool_$version.orig.tar.gz" -C "$out"
cp -r "$top/packaging/debian" "$out/rdmatool-$version/debian"
(cd "$out/rdmatool-$version" && dpkg-buildpackage -us -uc)
lintian --fail-on error,warning "$out"/rdmatool_*.changes
