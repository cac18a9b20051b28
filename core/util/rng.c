/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "core/util/rng.h"

#include <time.h>
#include <unistd.h>

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

void rng_seed(struct rng *r, uint64_t seed, uint64_t stream)
{
	uint64_t x = seed ^ splitmix64(&stream);

	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
}

uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

uint64_t rng_range(struct rng *r, uint64_t lo, uint64_t hi)
{
	uint64_t span = hi - lo + 1, limit, v;

	if (span == 0) /* the whole 64-bit range */
		return rng_next(r);
	/* Reject the top partial bucket so every value is equally likely. */
	limit = UINT64_MAX - UINT64_MAX % span;
	do
		v = rng_next(r);
	while (v >= limit);
	return lo + v % span;
}

bool rng_bernoulli(struct rng *r, double p)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53 < p;
}

int rng_weighted(struct rng *r, const uint32_t *weight, int n)
{
	uint64_t sum = 0, pick;

	for (int i = 0; i < n; i++)
		sum += weight[i];
	if (sum == 0)
		return -1;
	pick = rng_range(r, 0, sum - 1);
	for (int i = 0; i < n; i++) {
		if (pick < weight[i])
			return i;
		pick -= weight[i];
	}
	return -1;
}

uint64_t rng_entropy_seed(void)
{
	struct timespec ts;
	uint64_t x;

	clock_gettime(CLOCK_REALTIME, &ts);
	x = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec + ((uint64_t)getpid() << 32);
	return splitmix64(&x) >> 1; /* fits a signed 64-bit JSON number */
}
