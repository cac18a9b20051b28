/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Endpoints with different stripe counts connect and carry traffic both
 * ways: every thread of the wider end posts through its own stripe, and
 * every message arrives exactly once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "core/transport/endpoint.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PER_THREAD 250 /* 4 threads x 250 stay within the 1024 posted receives */
#define MAX_THREADS 4

struct sender {
	struct core_ep *ep;
	uint32_t peer;
	int index;
	_Atomic int *failures;
};

static struct core_ep *open_ep(int stripes)
{
	struct core_ep_attr attr;
	struct core_ep *ep;
	char err[256];

	core_ep_attr_defaults(&attr);
	attr.device = "soft0";
	attr.env.tx_stripes = stripes;
	attr.eager_max = 256;
	assert_int_equal(core_ep_open(&attr, &ep, err, sizeof(err)), 0);
	assert_int_equal(core_ep_stripes(ep), stripes);
	return ep;
}

/* Message i of thread t carries t * PER_THREAD + i: the receiver counts each value once. */
static void *send_all(void *arg)
{
	struct sender *s = arg;

	core_thread_set_stripe(s->index);
	for (int i = 0; i < PER_THREAD; i++) {
		uint32_t v = (uint32_t)(s->index * PER_THREAD + i);
		int rc;

		while ((rc = core_send(s->ep, s->peer, &v, sizeof(v), NULL)) == -EAGAIN)
			sched_yield();
		if (rc)
			atomic_fetch_add(s->failures, 1);
	}
	core_thread_set_stripe(-1);
	return NULL;
}

/*
 * nthreads threads of `from` (one per stripe) send to `to`; this thread
 * posts receives on `to` and reads both completion queues.
 */
static void stream(struct core_ep *from, uint32_t peer, struct core_ep *to, int nthreads)
{
	pthread_t tid[MAX_THREADS];
	struct sender s[MAX_THREADS];
	_Atomic int failures = 0;
	int total = nthreads * PER_THREAD, sendc = 0, recvc = 0;
	uint32_t *slots = calloc((size_t)total, sizeof(*slots));
	unsigned char *seen = calloc((size_t)total, 1);
	struct core_cqe e[32];

	assert_non_null(slots);
	assert_non_null(seen);
	for (int i = 0; i < total; i++)
		assert_int_equal(core_recv(to, &slots[i], sizeof(slots[i]), &slots[i]), 0);
	for (int t = 0; t < nthreads; t++) {
		s[t] = (struct sender){ .ep = from, .peer = peer, .index = t, .failures = &failures };
		assert_int_equal(pthread_create(&tid[t], NULL, send_all, &s[t]), 0);
	}
	while (sendc < total || recvc < total) {
		int n = core_cq_read(from, e, 32);

		for (int i = 0; i < n; i++) {
			assert_int_equal(e[i].status, 0);
			assert_true(e[i].flags & CORE_CQE_SEND);
			sendc++;
		}
		n = core_cq_read(to, e, 32);
		for (int i = 0; i < n; i++) {
			uint32_t v = *(uint32_t *)e[i].context;

			assert_int_equal(e[i].status, 0);
			assert_int_equal(e[i].len, sizeof(uint32_t));
			assert_true(v < (uint32_t)total);
			assert_int_equal(seen[v], 0);
			seen[v] = 1;
			recvc++;
		}
		assert_int_equal(atomic_load(&failures), 0);
	}
	for (int t = 0; t < nthreads; t++)
		pthread_join(tid[t], NULL);
	assert_int_equal(sendc, total);
	assert_int_equal(recvc, total);
	free(slots);
	free(seen);
}

static void run_mismatch(int stripes_a, int stripes_b)
{
	struct core_ep *a = open_ep(stripes_a), *b = open_ep(stripes_b);
	uint32_t pa, pb;

	assert_int_equal(core_ep_connect_pair(a, b, &pa, &pb), 0);
	stream(a, pa, b, stripes_a);
	stream(b, pb, a, stripes_b);
	core_ep_close(a);
	core_ep_close(b);
}

static void test_more_stripes_than_peer(void **state)
{
	(void)state;
	run_mismatch(4, 2);
}

static void test_fewer_stripes_than_peer(void **state)
{
	(void)state;
	run_mismatch(1, 3);
}

static void test_equal_stripes(void **state)
{
	(void)state;
	run_mismatch(2, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_more_stripes_than_peer),
		cmocka_unit_test(test_fewer_stripes_than_peer),
		cmocka_unit_test(test_equal_stripes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
