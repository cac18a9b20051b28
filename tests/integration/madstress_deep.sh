#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# madstress with deep windows under ibsim (issue 15 item 14): -N/-n 1024 used to block a worker forever
# in umad_send (umad2sim holds its lock across a blocking write to ibsim), so neither the run's end nor
# SIGTERM ended it.  Now the port carries what the simulator can take, the run ends on time, and SIGTERM
# ends it at once with the partial result.
set -eu
. "$RDMATOOL_TOP/tests/integration/lib/ibsim.sh"
ibsim_enter_netns "$@"
ibsim_start "$RDMATOOL_TOP/tests/fabrics/two_switch_8hca.net"

lids=$(ibsim_lids)
out="$IBSIM_DIR/deep.json"
err="$IBSIM_DIR/deep.err"

# A timed run with deep windows ends on time, every MAD answered.
SIM_TIMEOUT=30 sim "$RDMATOOL" -j madstress -m get -t 2 -N 1024 -n 1024 -L "$lids" NodeInfo >"$out" 2>"$err" ||
	fail "deep timed run: exit $? (30 s deadline for a 2 s run): $(cat "$err")"
grep -q "using -N 128" "$err" || fail "no notice of the bounded depth: $(cat "$err")"
python3 - "$out" <<'PY' || fail "deep timed run results: $(head -c 400 "$out")"
import json, sys
d = json.load(open(sys.argv[1]))
t = d["total"]
assert d["params"]["local_depth"] == 128 and d["params"]["dest_depth"] == 128, d["params"]
assert t["sent"] > 0 and t["ok"] == t["sent"] and t["timeouts"] == 0, t
PY

# SIGTERM in the middle of a long run: it ends within a few seconds, exit 0, with the MADs done so far.
# Started like sim() does (a sanitizer runtime first in the preload list), but without its timeout
# wrapper, so that the signal reaches madstress itself.
preload=$UMAD2SIM
runtime=$(sanitizer_runtime "$RDMATOOL")
[ -n "$runtime" ] && preload="$runtime:$UMAD2SIM"
(cd "$IBSIM_DIR" && LD_PRELOAD=$preload \
	ASAN_OPTIONS="suppressions=$RDMATOOL_TOP/tests/sanitizers/asan.supp${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
	LSAN_OPTIONS="suppressions=$RDMATOOL_TOP/tests/sanitizers/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}" \
	TSAN_OPTIONS="suppressions=$RDMATOOL_TOP/tests/sanitizers/tsan.supp${TSAN_OPTIONS:+:$TSAN_OPTIONS}" \
	exec "$RDMATOOL" -j madstress -m get -t 60 -N 4096 -n 1024 -L "$lids" NodeInfo >"$out" 2>"$err") &
pid=$!
wait_for 100 grep -q "using -N 128" "$err" || { kill -9 "$pid"; fail "the run did not start: $(cat "$err")"; }
sleep 0.5 # let MADs flow before the signal
kill -TERM "$pid"
start=$(date +%s%N)
while kill -0 "$pid" 2>/dev/null && [ $(($(date +%s%N) - start)) -lt 5000000000 ]; do sleep 0.05; done
if kill -0 "$pid" 2>/dev/null; then
	kill -9 "$pid"
	fail "madstress still runs 5 s after SIGTERM"
fi
wait "$pid" || fail "exit $? after SIGTERM, want 0: $(cat "$err")"
python3 - "$out" <<'PY' || fail "partial result after SIGTERM: $(head -c 400 "$out")"
import json, sys
d = json.load(open(sys.argv[1]))
t = d["total"]
assert t["sent"] > 0 and t["ok"] > 0 and t["elapsed_s"] < 30, t
PY
echo "madstress deep windows: ok"
