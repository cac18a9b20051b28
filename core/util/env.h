/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The transport's environment variables (the striped-transport design's tunables, renamed):
 *   RDMATOOL_TX_STRIPES      stripes per endpoint, 0 = auto (min(ncpus, 16))
 *   RDMATOOL_PROGRESS_THREAD 0 or 1: a background progress thread
 *   RDMATOOL_PROGRESS_CPU    CPU for that thread, -1 = any
 *   RDMATOOL_RING_SIZE       completion ring entries, a power of two, 0 = auto
 *   RDMATOOL_MR_CACHE_MAX    cached memory registrations per endpoint (default 64,
 *                            0 = register per operation, deregister when it completes)
 *   RDMATOOL_CONNECT         cm or oob: how endpoints connect (default: cm where the
 *                            device has a connection manager, else oob)
 * Unset variables keep the defaults.  core never prints: a bad value gives
 * -EINVAL and a message naming the variable and what it accepts.
 */
#ifndef RDMATOOL_CORE_ENV_H
#define RDMATOOL_CORE_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CORE_MAX_STRIPES 64
#define CORE_MR_CACHE_DEFAULT 64
/* Lookups scan the cache linearly: a bigger cache costs every data call. */
#define CORE_MR_CACHE_LIMIT 4096
/* RDMATOOL_EAGER_MAX: the bounds of a set eager threshold, in bytes (its buffers are that large). */
#define CORE_EAGER_MAX_MIN   64
#define CORE_EAGER_MAX_LIMIT (1 << 20)

enum core_connect {
	CORE_CONNECT_AUTO, /* the connection manager where the device has one, else oob */
	CORE_CONNECT_CM,
	CORE_CONNECT_OOB, /* the address blob over the out-of-band TCP connection */
};

struct core_env {
	int tx_stripes;	      /* 0 = auto */
	bool progress_thread;
	int progress_cpu;     /* -1 = any */
	uint32_t ring_size;   /* 0 = auto */
	uint32_t mr_cache_max; /* idle registrations kept per endpoint */
	uint32_t eager_max;    /* largest eager send; 0 = the device's (core_ep_eager_max) */
	enum core_connect connect;
};

void core_env_defaults(struct core_env *env);
/* Reads the variables over the defaults; 0, or -EINVAL with msg filled. */
int core_env_read(struct core_env *env, char *msg, size_t msglen);
/*
 * The CPUs this process may run on (its affinity mask, which taskset, cpusets
 * and container limits narrow), at least 1; the online count if the mask
 * cannot be read.
 */
long core_usable_cpus(void);
/* Stripe count for "auto": min(usable CPUs, 16): more stripes than CPUs only add contention. */
int core_auto_stripes(void);

#endif
