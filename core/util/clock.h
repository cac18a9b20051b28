/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Monotonic time in nanoseconds, for latency sampling and deadlines. */
#ifndef RDMATOOL_CORE_CLOCK_H
#define RDMATOOL_CORE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
