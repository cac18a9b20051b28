/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Strip mining (HSTA): an agent with chunks for several targets posts one
 * chunk per target in turn, the targets in a fresh random order each round,
 * so many-to-many traffic spreads over all targets instead of one target's
 * whole message going out before the next target sees anything, and
 * senders do not all hit the same target at the same moment.
 */
#ifndef RDMATOOL_CORE_AGENT_STRIP_H
#define RDMATOOL_CORE_AGENT_STRIP_H

#include "core/util/rng.h"

#include <stdint.h>

struct strip {
	struct rng rng;
};

void strip_init(struct strip *s, uint64_t seed);
/* A random order of the targets 0..n-1 (each once) in out[n]. */
void strip_order(struct strip *s, uint32_t n, uint32_t *out);

#endif
