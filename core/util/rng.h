/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Seedable pseudo-random numbers: xoshiro256** seeded through splitmix64.
 * Deterministic for a given seed and stream, so a run can be replayed.
 * Not thread-safe: one struct rng per thread.
 */
#ifndef RDMATOOL_CORE_RNG_H
#define RDMATOOL_CORE_RNG_H

#include <stdbool.h>
#include <stdint.h>

struct rng {
	uint64_t s[4];
};

/* Seeds from (seed, stream): distinct streams give independent sequences. */
void rng_seed(struct rng *r, uint64_t seed, uint64_t stream);
uint64_t rng_next(struct rng *r);
/* Uniform in [lo, hi] inclusive (lo <= hi), without modulo bias. */
uint64_t rng_range(struct rng *r, uint64_t lo, uint64_t hi);
/* True with probability p (0..1). */
bool rng_bernoulli(struct rng *r, double p);
/* Index drawn with probability weight[i] / sum; -1 when every weight is 0. */
int rng_weighted(struct rng *r, const uint32_t *weight, int n);
/* A seed from the clock and the process, for runs without --seed. */
uint64_t rng_entropy_seed(void);

#endif
