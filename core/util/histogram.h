/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A log-linear latency histogram in nanoseconds: 16 sub-buckets per power
 * of two (about 6% resolution), exact count, sum, min and max.  Not
 * thread-safe: one owner records, readers merge copies afterwards.
 */
#ifndef RDMATOOL_CORE_HISTOGRAM_H
#define RDMATOOL_CORE_HISTOGRAM_H

#include <stdint.h>

#define HIST_SUB_BITS 4
#define HIST_SUB (1 << HIST_SUB_BITS)
#define HIST_OCTAVES 40 /* up to 2^44 ns, about 4.8 hours */
#define HIST_BUCKETS (HIST_SUB * (HIST_OCTAVES + 1))

struct histogram {
	uint64_t count;
	uint64_t sum;
	uint64_t min;
	uint64_t max;
	uint32_t buckets[HIST_BUCKETS];
};

void hist_init(struct histogram *h);
void hist_record(struct histogram *h, uint64_t value);
void hist_merge(struct histogram *into, const struct histogram *from);
/* The value at quantile q (0..1), clamped to [min, max]; 0 when empty. */
uint64_t hist_quantile(const struct histogram *h, double q);
double hist_mean(const struct histogram *h);

#endif
