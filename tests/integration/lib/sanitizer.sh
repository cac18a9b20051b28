# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/integration/lib/sanitizer.sh: sanitizer_runtime FILE|COMMAND prints the ASan or TSan
# runtime a sanitizer build of it links (nothing for an ordinary build).  Such a runtime must
# come first in LD_PRELOAD whenever something else is preloaded.
sanitizer_runtime() {
	local f=$1
	[ -e "$f" ] || f=$(command -v "$1")
	ldd "$f" 2>/dev/null | awk '/lib(asan|tsan)\.so/ {print $3; exit}'
}
