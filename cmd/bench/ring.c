/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* bench ring: N producers and one consumer through the lock-free ring or the mutex queue. */
#include "cmd/bench/bench.h"
#include "core/util/clock.h"
#include "core/transport/ring.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

struct ring_run {
	int lockfree;
	struct ring *r;
	struct ring_locked *q;
	long per_producer;
};

struct ring_item {
	uint64_t w[4]; /* a completion entry's size */
};

static int push(struct ring_run *rr, const struct ring_item *it)
{
	return rr->lockfree ? ring_push(rr->r, it, NULL) : ring_locked_push(rr->q, it, NULL);
}

static int pop(struct ring_run *rr, struct ring_item *it)
{
	return rr->lockfree ? ring_pop(rr->r, it) : ring_locked_pop(rr->q, it);
}

static void *producer(void *arg)
{
	struct ring_run *rr = arg;
	struct ring_item it = { { 0 } };

	for (long i = 0; i < rr->per_producer; i++) {
		it.w[0] = (uint64_t)i;
		while (push(rr, &it))
			sched_yield();
	}
	return NULL;
}

int bench_ring(const struct bench_opts *o, int lockfree, struct bench_result *res, char *err, size_t errlen)
{
	struct ring_run rr = { .lockfree = lockfree, .per_producer = o->iters > 0 ? o->iters : 1000000 };
	pthread_t tids[64];
	struct ring_item it;
	long total = rr.per_producer * o->threads, got = 0;
	uint64_t t0;
	int rc = lockfree ? ring_create(1024, sizeof(it), &rr.r) : ring_locked_create(1024, sizeof(it), &rr.q);

	if (rc) {
		snprintf(err, errlen, "cannot create the ring: %s", strerror(-rc));
		return rc;
	}
	t0 = clock_ns();
	for (int i = 0; i < o->threads; i++)
		pthread_create(&tids[i], NULL, producer, &rr);
	while (got < total) {
		if (pop(&rr, &it) == 0)
			got++;
		else
			sched_yield();
	}
	for (int i = 0; i < o->threads; i++)
		pthread_join(tids[i], NULL);
	double secs = (double)(clock_ns() - t0) / 1e9;

	memset(res, 0, sizeof(*res));
	res->iters = total;
	res->ops_per_s = (double)total / secs;
	ring_destroy(rr.r);
	ring_locked_destroy(rr.q);
	return 0;
}
