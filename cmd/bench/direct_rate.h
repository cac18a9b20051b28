/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* agent_rate's baseline without agents: procs processes sending with core sends (direct_rate.c). */
#ifndef RDMATOOL_CMD_BENCH_DIRECT_RATE_H
#define RDMATOOL_CMD_BENCH_DIRECT_RATE_H

#include <stddef.h>

#define DIRECT_MAX_PROCS 16

/*
 * iters messages of size bytes from procs sender processes to one receiver;
 * 0 or a negative errno.  The senders run on cpus[0] and the receiver on
 * cpus[1] (-1: where the scheduler puts them).
 */
int direct_rate(size_t size, long iters, int procs, const int cpus[2], double *msgs_per_s, char *err,
		size_t errlen);

#endif
