/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Random target order of strip mining; the contract is in strip.h. */
#include "core/agent/strip.h"

void strip_init(struct strip *s, uint64_t seed)
{
	rng_seed(&s->rng, seed, 0x5751);
}

void strip_order(struct strip *s, uint32_t n, uint32_t *out)
{
	for (uint32_t i = 0; i < n; i++)
		out[i] = i;
	for (uint32_t i = n; i > 1; i--) { /* Fisher-Yates */
		uint32_t j = (uint32_t)rng_range(&s->rng, 0, i - 1), t = out[i - 1];

		out[i - 1] = out[j];
		out[j] = t;
	}
}
