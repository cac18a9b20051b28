/* SPDX-License-Identifier: MIT */
/* agent_bw's baseline: core write_bw between two processes on their own devices (pair_write_bw.c). */
#ifndef RDMATOOL_CMD_BENCH_PAIR_WRITE_BW_H
#define RDMATOOL_CMD_BENCH_PAIR_WRITE_BW_H

#include "cmd/bench/bench.h"

#include <stddef.h>

/* write_bw of size-byte messages for seconds from this process to a forked bench server; 0 or -errno. */
int pair_write_bw(size_t size, double seconds, struct bench_result *r, char *err, size_t errlen);

#endif
