/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The striped transport under threads: N sender threads post M sends each
 * while several reader threads share the sender's completion queue and a
 * receiver reposts receives on the other endpoint.  Every send completion
 * must be read exactly once, by some reader, and every message received
 * exactly once.  Meant to run under ThreadSanitizer too (make tsan).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "core/util/clock.h"
#include "core/transport/endpoint.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define SENDERS 4
#define READERS 3
#define PER_SENDER 1500
#define TOTAL (SENDERS * PER_SENDER)
#define SLOTS 128

struct stress {
	struct core_ep *a, *b;
	uint32_t pa;
	_Atomic int seen_send[TOTAL];
	_Atomic int seen_recv[TOTAL];
	_Atomic long send_done, recv_done, errors;
	_Atomic int stop;
	uint32_t slot[SLOTS];
};

struct sender_arg {
	struct stress *s;
	int index;
};

static void *sender(void *arg)
{
	struct sender_arg *sa = arg;
	struct stress *s = sa->s;

	core_thread_set_stripe(sa->index);
	for (int i = 0; i < PER_SENDER; i++) {
		uint32_t id = (uint32_t)(sa->index * PER_SENDER + i);
		int rc;

		/* The context names the send; the payload names it for the receiver. */
		while ((rc = core_send(s->a, s->pa, &id, sizeof(id), (void *)(uintptr_t)(id + 1))) == -EAGAIN)
			sched_yield();
		if (rc)
			atomic_fetch_add(&s->errors, 1);
	}
	return NULL;
}

static void *reader(void *arg)
{
	struct stress *s = arg;

	while (!atomic_load(&s->stop)) {
		struct core_cqe e[8];
		int n = core_cq_read(s->a, e, 8);

		for (int i = 0; i < n; i++) {
			uintptr_t id = (uintptr_t)e[i].context - 1;

			if (e[i].status || e[i].err || id >= TOTAL || !(e[i].flags & CORE_CQE_SEND))
				atomic_fetch_add(&s->errors, 1);
			else
				atomic_fetch_add(&s->seen_send[id], 1);
			atomic_fetch_add(&s->send_done, 1);
		}
		if (!n)
			sched_yield();
	}
	return NULL;
}

static void *receiver(void *arg)
{
	struct stress *s = arg;

	for (int k = 0; k < SLOTS; k++)
		assert_int_equal(core_recv(s->b, &s->slot[k], sizeof(s->slot[k]), &s->slot[k]), 0);
	while (!atomic_load(&s->stop)) {
		struct core_cqe e[8];
		int n = core_cq_read(s->b, e, 8);

		for (int i = 0; i < n; i++) {
			uint32_t *slot = e[i].context;
			uint32_t id = *slot;

			if (e[i].status || e[i].err || e[i].len != sizeof(id) || id >= TOTAL)
				atomic_fetch_add(&s->errors, 1);
			else
				atomic_fetch_add(&s->seen_recv[id], 1);
			atomic_fetch_add(&s->recv_done, 1);
			*slot = UINT32_MAX;
			while (core_recv(s->b, slot, sizeof(*slot), slot) == -EAGAIN)
				core_cq_read(s->b, NULL, 0);
		}
		if (!n)
			sched_yield();
	}
	return NULL;
}

static void run(enum core_lock_mode lock, bool progress_thread)
{
	struct stress *s = calloc(1, sizeof(*s));
	struct core_ep_attr attr;
	pthread_t tx[SENDERS], rd[READERS], rx;
	struct sender_arg sa[SENDERS];
	uint32_t pb;
	char err[256];

	assert_non_null(s);
	core_ep_attr_defaults(&attr);
	attr.env.tx_stripes = SENDERS;
	attr.lock = lock;
	attr.env.progress_thread = progress_thread;
	attr.depth = 32; /* small pools: EAGAIN and credit exhaustion happen often */
	attr.rx_depth = 16;
	assert_int_equal(core_ep_open(&attr, &s->a, err, sizeof(err)), 0);
	assert_int_equal(core_ep_open(&attr, &s->b, err, sizeof(err)), 0);
	assert_int_equal(core_ep_connect_pair(s->a, s->b, &s->pa, &pb), 0);
	assert_int_equal(pthread_create(&rx, NULL, receiver, s), 0);
	for (int i = 0; i < READERS; i++)
		assert_int_equal(pthread_create(&rd[i], NULL, reader, s), 0);
	for (int i = 0; i < SENDERS; i++) {
		sa[i] = (struct sender_arg){ s, i };
		assert_int_equal(pthread_create(&tx[i], NULL, sender, &sa[i]), 0);
	}
	for (int i = 0; i < SENDERS; i++)
		pthread_join(tx[i], NULL);
	uint64_t deadline = clock_ns() + 60000000000ull;

	while ((atomic_load(&s->send_done) < TOTAL || atomic_load(&s->recv_done) < TOTAL) && clock_ns() < deadline)
		sched_yield();
	atomic_store(&s->stop, 1);
	for (int i = 0; i < READERS; i++)
		pthread_join(rd[i], NULL);
	pthread_join(rx, NULL);
	assert_int_equal(atomic_load(&s->errors), 0);
	assert_int_equal(atomic_load(&s->send_done), TOTAL);
	assert_int_equal(atomic_load(&s->recv_done), TOTAL);
	for (int i = 0; i < TOTAL; i++) {
		assert_int_equal(atomic_load(&s->seen_send[i]), 1);
		assert_int_equal(atomic_load(&s->seen_recv[i]), 1);
	}
	core_ep_close(s->a);
	core_ep_close(s->b);
	free(s);
}

static void test_striped_manual(void **state)
{
	(void)state;
	run(CORE_LOCK_STRIPED, false);
}

static void test_striped_progress_thread(void **state)
{
	(void)state;
	run(CORE_LOCK_STRIPED, true);
}

static void test_global_manual(void **state)
{
	(void)state;
	run(CORE_LOCK_GLOBAL, false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_striped_manual),
		cmocka_unit_test(test_striped_progress_thread),
		cmocka_unit_test(test_global_manual),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
