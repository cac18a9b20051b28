/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "core/util/env.h"
#include "core/transport/ring.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void core_env_defaults(struct core_env *env)
{
	env->tx_stripes = 0;
	env->progress_thread = false;
	env->progress_cpu = -1;
	env->ring_size = 0;
	env->mr_cache_max = CORE_MR_CACHE_DEFAULT;
	env->eager_max = 0;
	env->connect = CORE_CONNECT_AUTO;
}

long core_usable_cpus(void)
{
	cpu_set_t set;
	long n;

	if (!sched_getaffinity(0, sizeof(set), &set) && (n = CPU_COUNT(&set)) > 0)
		return n;
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n;
}

int core_auto_stripes(void)
{
	long n = core_usable_cpus();

	return n > 16 ? 16 : (int)n;
}

/* Parses a whole decimal integer in [lo, hi]; false on junk or range. */
static bool parse_long(const char *text, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(text, &end, 10);
	if (errno || end == text || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

int core_env_read(struct core_env *env, char *msg, size_t msglen)
{
	const char *v;
	long n;
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);

	if ((v = getenv("RDMATOOL_TX_STRIPES"))) {
		if (!parse_long(v, 0, CORE_MAX_STRIPES, &n)) {
			snprintf(msg, msglen, "RDMATOOL_TX_STRIPES='%s' is invalid; use 0 (auto) to %d", v,
				 CORE_MAX_STRIPES);
			return -EINVAL;
		}
		env->tx_stripes = (int)n;
	}
	if ((v = getenv("RDMATOOL_PROGRESS_THREAD"))) {
		if (!parse_long(v, 0, 1, &n)) {
			snprintf(msg, msglen, "RDMATOOL_PROGRESS_THREAD='%s' is invalid; use 0 (off) or 1 (on)", v);
			return -EINVAL;
		}
		env->progress_thread = n == 1;
	}
	if ((v = getenv("RDMATOOL_PROGRESS_CPU"))) {
		if (!parse_long(v, -1, ncpu > 0 ? ncpu - 1 : 0, &n)) {
			snprintf(msg, msglen, "RDMATOOL_PROGRESS_CPU='%s' is invalid; use -1 (any) or a CPU from 0 to %ld",
				 v, ncpu > 0 ? ncpu - 1 : 0);
			return -EINVAL;
		}
		env->progress_cpu = (int)n;
	}
	if ((v = getenv("RDMATOOL_RING_SIZE"))) {
		if (!parse_long(v, 0, RING_MAX_CAPACITY, &n) || (n != 0 && !ring_valid_capacity((uint64_t)n))) {
			snprintf(msg, msglen,
				 "RDMATOOL_RING_SIZE='%s' is invalid; use 0 (auto) or a power of two from 2 to %u", v,
				 RING_MAX_CAPACITY);
			return -EINVAL;
		}
		env->ring_size = (uint32_t)n;
	}
	if ((v = getenv("RDMATOOL_MR_CACHE_MAX"))) {
		if (!parse_long(v, 0, CORE_MR_CACHE_LIMIT, &n)) {
			snprintf(msg, msglen,
				 "RDMATOOL_MR_CACHE_MAX='%s' is invalid; use 0 (no caching) to %d cached registrations",
				 v, CORE_MR_CACHE_LIMIT);
			return -EINVAL;
		}
		env->mr_cache_max = (uint32_t)n;
	}
	if ((v = getenv("RDMATOOL_EAGER_MAX"))) {
		if (!parse_long(v, 0, CORE_EAGER_MAX_LIMIT, &n) || (n != 0 && n < CORE_EAGER_MAX_MIN)) {
			snprintf(msg, msglen,
				 "RDMATOOL_EAGER_MAX='%s' is invalid; use 0 (the device's) or a byte count from %d "
				 "to %d",
				 v, CORE_EAGER_MAX_MIN, CORE_EAGER_MAX_LIMIT);
			return -EINVAL;
		}
		env->eager_max = (uint32_t)n;
	}
	if ((v = getenv("RDMATOOL_CONNECT"))) {
		if (strcmp(v, "cm") && strcmp(v, "oob")) {
			snprintf(msg, msglen,
				 "RDMATOOL_CONNECT='%s' is invalid; use cm (the connection manager) or oob (the "
				 "out-of-band TCP exchange)",
				 v);
			return -EINVAL;
		}
		env->connect = strcmp(v, "cm") == 0 ? CORE_CONNECT_CM : CORE_CONNECT_OOB;
	}
	return 0;
}
