#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/deps.sh check|install: the build and test dependencies, from Debian packages.
set -euo pipefail

BUILD_PKGS="gcc make pkg-config libibverbs-dev librdmacm-dev libibumad-dev libibmad-dev libpopt-dev libcmocka-dev libssl-dev"
TEST_PKGS="ibsim-utils libumad2sim0 opensm infiniband-diags iproute2 util-linux python3 procps jq zsh mandoc ibverbs-utils perftest python3-pyverbs rdmacm-utils qperf libfabric-bin ucx-utils openmpi-bin libopenmpi-dev slurm-wlm munge tmux strace"
# What tests/integration/packaging.sh builds the .deb and .rpm with (dpkg-buildpackage
# checks for build-essential itself: a minimal Debian has gcc and make without it).
PACKAGING_PKGS="build-essential dpkg-dev debhelper lintian fakeroot rpm cpio man-db git"

missing() {
	local p
	for p in $BUILD_PKGS $TEST_PKGS $PACKAGING_PKGS; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || echo "$p"
	done
}

case "${1:-check}" in
check)
	m=$(missing | tr '\n' ' ')
	if [ -n "$m" ]; then
		echo "missing dependencies: ${m% }; run 'make deps' (as root) to install them" >&2
		exit 1
	fi
	;;
install)
	m=$(missing | tr '\n' ' ')
	if [ -z "$m" ]; then
		echo "deps: all build and test dependencies are installed"
		exit 0
	fi
	echo "deps: installing ${m% }"
	sudo=""
	[ "$(id -u)" = 0 ] || sudo="sudo"
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq
	# shellcheck disable=SC2086
	$sudo apt-get install -y -qq --no-install-recommends $m
	;;
*)
	echo "usage: tests/deps.sh check|install" >&2
	exit 2
	;;
esac
