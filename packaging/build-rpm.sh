#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# packaging/build-rpm.sh OUTDIR [RPMBUILD-ARGS...]: the source and binary RPMs of HEAD from the `make dist` tarball,
# with rpmbuild -ba in a private topdir (default build/rpm).  Build dependencies are not checked
# (--nodeps): on Debian they are dpkg packages rpm cannot see.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$top/build/rpm}
version=$(sed -n 's/^#define RDMATOOL_VERSION "\(.*\)"/\1/p' "$top/cmd/version.h")
rm -rf "$out"
mkdir -p "$out/SOURCES"
git -C "$top" archive --format=tar.gz --prefix="rdmatool-$version/" -o "$out/SOURCES/rdmatool-$version.tar.gz" HEAD
shift || true
rpmbuild -ba --nodeps --define "_topdir $out" "$@" "$top/packaging/rdmatool.spec"
