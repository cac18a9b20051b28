/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Log-linear histogram: bucket = (octave, top HIST_SUB_BITS bits below the leading one). */
#include "core/util/histogram.h"

#include <string.h>

void hist_init(struct histogram *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

static unsigned bucket_of(uint64_t v)
{
	unsigned octave;

	if (v < HIST_SUB)
		return (unsigned)v;
	octave = 63u - (unsigned)__builtin_clzll(v) - HIST_SUB_BITS + 1; /* >= 1 */
	if (octave > HIST_OCTAVES)
		return HIST_BUCKETS - 1;
	return octave * HIST_SUB + (unsigned)((v >> (octave - 1)) & (HIST_SUB - 1));
}

/* The smallest value that falls into bucket b, and the width of the bucket. */
static void bucket_range(unsigned b, uint64_t *low, uint64_t *width)
{
	unsigned octave = b / HIST_SUB, sub = b % HIST_SUB;

	if (octave == 0) {
		*low = sub;
		*width = 1;
		return;
	}
	*width = 1ull << (octave - 1);
	*low = ((uint64_t)HIST_SUB + sub) << (octave - 1);
}

void hist_record(struct histogram *h, uint64_t value)
{
	h->buckets[bucket_of(value)]++;
	h->count++;
	h->sum += value;
	if (value < h->min)
		h->min = value;
	if (value > h->max)
		h->max = value;
}

void hist_merge(struct histogram *into, const struct histogram *from)
{
	if (!from->count)
		return;
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		into->buckets[i] += from->buckets[i];
	into->count += from->count;
	into->sum += from->sum;
	if (from->min < into->min)
		into->min = from->min;
	if (from->max > into->max)
		into->max = from->max;
}

uint64_t hist_quantile(const struct histogram *h, double q)
{
	uint64_t rank, seen = 0;

	if (!h->count)
		return 0;
	if (q <= 0)
		return h->min;
	if (q >= 1)
		return h->max;
	rank = (uint64_t)(q * (double)h->count + 0.5);
	if (rank < 1)
		rank = 1;
	for (unsigned b = 0; b < HIST_BUCKETS; b++) {
		seen += h->buckets[b];
		if (seen >= rank) {
			uint64_t low, width, mid;

			bucket_range(b, &low, &width);
			mid = low + width / 2;
			return mid < h->min ? h->min : mid > h->max ? h->max : mid;
		}
	}
	return h->max;
}

double hist_mean(const struct histogram *h)
{
	return h->count ? (double)h->sum / (double)h->count : 0;
}
