/* SPDX-License-Identifier: MIT */
/* agent_rate's baseline without agents: procs processes sending with core sends (direct_rate.c). */
#ifndef RDMATOOL_CMD_BENCH_DIRECT_RATE_H
#define RDMATOOL_CMD_BENCH_DIRECT_RATE_H

#include <stddef.h>

#define DIRECT_MAX_PROCS 16

/* iters messages of size bytes from procs sender processes to one receiver; 0 or a negative errno. */
int direct_rate(size_t size, long iters, int procs, double *msgs_per_s, char *err, size_t errlen);

#endif
