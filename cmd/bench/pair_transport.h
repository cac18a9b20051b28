/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The agent benchmarks' baselines: a core transport test between two
 * processes on their own devices, as two agents are (pair_transport.c).
 */
#ifndef RDMATOOL_CMD_BENCH_PAIR_TRANSPORT_H
#define RDMATOOL_CMD_BENCH_PAIR_TRANSPORT_H

#include "cmd/bench/bench.h"

#include <stddef.h>

/*
 * Runs test ("write_bw", "send_lat", ...) with size-byte messages from this
 * process to a forked bench server, for seconds (> 0) or iters; 0 or -errno
 * with err filled.
 */
int pair_transport(const char *test, size_t size, double seconds, long iters, struct bench_result *r,
		   char *err, size_t errlen);

#endif
