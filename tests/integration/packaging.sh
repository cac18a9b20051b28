#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The packages build as a packager builds them, from the `make dist` tarball of HEAD: the Debian source
# and binary packages (dpkg-buildpackage -us -uc, lintian clean at warning level) and the RPMs
# (rpmbuild -ba).  Each is unpacked into a private root, where the installed binary runs and an
# installed man page renders.  Skipped (77) only when the packaging tools are not installed.
# test-timeout: 900 (two package builds, each compiling the tree and running its unit tests)
set -Eeu
fail() { echo "FAIL: $*" >&2; exit 1; }
# set -e stops at any command that fails: it says which, so no failure leaves an empty log.
trap 'rc=$?; echo "FAIL: packaging.sh line $LINENO: \"$BASH_COMMAND\" exited $rc" >&2' ERR
# A packager's build starts clean.  Under `make tsan` (or any make with variables on its command
# line) the outer make's CFLAGS, SAN_CFLAGS and BUILD reach every make below it, through MAKEFLAGS
# and through the environment (make exports command-line variables to its recipes): the packages
# were built with -fsanitize=thread, and their unit tests failed as a TSan build fails under fork.
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES CFLAGS CPPFLAGS LDFLAGS SAN_CFLAGS BUILD WERROR
for t in dpkg-buildpackage dh lintian rpmbuild rpm2cpio cpio; do
	command -v "$t" >/dev/null || { echo "skipped: $t is not installed (make deps installs it)"; exit 77; }
done
git -C "$RDMATOOL_TOP" rev-parse HEAD >/dev/null 2>&1 || { echo "skipped: not a git checkout"; exit 77; }
dir=$(mktemp -d /tmp/rdmatool-pkg.XXXXXX)
trap 'rm -rf "$dir"' EXIT
# lintian and the build tools leave caches in $TMPDIR: keep them in the test's own directory.
mkdir "$dir/tmp"
export TMPDIR=$dir/tmp

check_root() { # root what
	"$1/usr/bin/rdmatool" --version | grep -q '^rdmatool [0-9]' || fail "$2: installed rdmatool --version"
	[ "$(readlink "$1/usr/bin/rdmatool-bench")" = rdmatool ] || fail "$2: no rdmatool-bench link"
	local page
	page=$(ls "$1"/usr/share/man/man1/rdmatool-bench.1*)
	if command -v man >/dev/null; then
		MANWIDTH=80 man -l "$page" 2>&1 | col -b | grep -q -- '--server' || fail "$2: man -l $page"
	else
		zcat -f "$page" | mandoc -Tascii | sed 's/.\x08//g' | grep -q -- '--server' || fail "$2: $page"
	fi
}

# A packager's flags: a warning set newer than the code was written for (each of these warns on it) must
# not fail the build; -Werror is for developers and CI only.
newer="-Wshadow -Wconversion -Wcast-qual"
# Both packages build at once (each compiles and runs the unit tests): half the time on two cores.
# Each build's unit tests keep their processes' stats segments in a directory of their own: the two
# run side by side, and each one's check for files left in /dev/shm would see the other's.
mkdir -m 0700 "$dir/stats-deb" "$dir/stats-rpm"
RDMATOOL_STATS_DIR=$dir/stats-deb DEB_CFLAGS_APPEND=$newer "$RDMATOOL_TOP/packaging/build-deb.sh" "$dir/deb" \
	>"$dir/deb.log" 2>&1 &
deb_pid=$!
RDMATOOL_STATS_DIR=$dir/stats-rpm "$RDMATOOL_TOP/packaging/build-rpm.sh" "$dir/rpm" --define "optflags -O2 -g $newer" \
	>"$dir/rpm.log" 2>&1 &
rpm_pid=$!
# A failed build: its failed tests' own lines (run-tests.sh prints them under each FAIL), then its end.
build_failed() {
	grep -A40 '^FAIL ' "$1" | head -120
	tail -20 "$1"
}
wait "$deb_pid" || { wait "$rpm_pid" || true; build_failed "$dir/deb.log"; fail "build-deb.sh with $newer"; }
grep -q -- "-Wconversion" "$dir/deb.log" || fail "deb: the packager's flags did not reach the compiler"
! grep -q -- "-fsanitize" "$dir/deb.log" "$dir/rpm.log" || fail "a sanitizer flag of the outer build reached a package"
ls "$dir"/deb/rdmatool_*.dsc "$dir"/deb/rdmatool_*.debian.tar.* >/dev/null || fail "no Debian source package"
dpkg-deb -x "$dir"/deb/rdmatool_*_*.deb "$dir/root-deb"
check_root "$dir/root-deb" deb
# dh_auto_test ran the unit tests (no root needed), and all passed.
grep -Eq '^tests: [1-9][0-9]* passed, 0 failed' "$dir/deb.log" || fail "deb: dh_auto_test ran no unit tests"
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
[ -f "$dir/root-deb/usr/lib/$multiarch/rdmatool/librdmatool-verbs.so" ] ||
	fail "deb: the preload library is not in the multiarch directory /usr/lib/$multiarch"
strings "$dir/root-deb/usr/bin/rdmatool" | grep -qx "/usr/lib/$multiarch/rdmatool" ||
	fail "deb: rdmatool exec does not look in /usr/lib/$multiarch/rdmatool"
unit=$dir/root-deb/lib/systemd/system/rdmatool-agent.service
[ -f "$unit" ] || fail "deb: no systemd unit for the agent"
grep -qx 'Type=simple' "$unit" && grep -q '^ExecStart=/usr/bin/rdmatool agent foreground' "$unit" ||
	fail "deb: the agent's unit: $(cat "$unit")"

wait "$rpm_pid" || { build_failed "$dir/rpm.log"; fail "build-rpm.sh with $newer"; }
grep -q -- "-Wconversion" "$dir/rpm.log" || fail "rpm: the packager's flags did not reach the compiler"
grep -Eq '^tests: [1-9][0-9]* passed, 0 failed' "$dir/rpm.log" || fail "rpm: %check ran no unit tests"
ls "$dir"/rpm/SRPMS/rdmatool-*.src.rpm >/dev/null || fail "no source RPM"
mkdir "$dir/root-rpm"
(cd "$dir/root-rpm" && rpm2cpio "$dir"/rpm/RPMS/*/rdmatool-[0-9]*.rpm | cpio -idm --quiet)
check_root "$dir/root-rpm" rpm
[ -f "$dir/root-rpm/usr/share/zsh/site-functions/_rdmatool" ] || fail "rpm: zsh completion not in site-functions"
ls "$dir"/root-rpm/usr/share/licenses/rdmatool*/LICENSE >/dev/null || fail "rpm: no %license LICENSE"
grep -q '^ExecStart=/usr/bin/rdmatool agent foreground' "$dir"/root-rpm/usr/lib/systemd/system/rdmatool-agent.service ||
	fail "rpm: no systemd unit for the agent"
echo "packaging: ok"
