/* SPDX-License-Identifier: MIT */
/* rdmatool bench: shared pieces of the tests. */
#ifndef RDMATOOL_CMD_BENCH_H
#define RDMATOOL_CMD_BENCH_H

#include "../../core/endpoint.h"

#include <stddef.h>
#include <stdint.h>

struct bench_opts {
	size_t size;
	long iters;
	double duration;
	int threads;
	int stripes;
	enum core_lock_mode lock;
	int progress_thread;
	const char *device;
};

struct bench_result {
	size_t size;
	long iters;
	double bw_peak, bw_avg, msg_rate; /* MiB/s, MiB/s, Mpps */
	double t_min, t_max, t_typical, t_avg, t_stdev, p99, p999; /* usec */
	double ops_per_s; /* ring */
	int is_lat;
};

/* Each returns 0 or a negative errno with err filled. */
int bench_ring(const struct bench_opts *o, int lockfree, struct bench_result *r, char *err, size_t errlen);
int bench_transport(const char *test, const struct bench_opts *o, struct bench_result *r, char *err, size_t errlen);

#endif
