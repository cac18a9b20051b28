/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* core/ring: empty, full, wrap-around, EAGAIN, the empty edge, and an MPMC stress count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "core/transport/ring.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct item {
	uint32_t producer;
	uint32_t seq;
	uint64_t payload[3];
};

static void test_invalid_capacity(void **state)
{
	struct ring *r = NULL;
	struct ring_locked *q = NULL;

	(void)state;
	assert_int_equal(ring_create(0, 8, &r), -EINVAL);
	assert_int_equal(ring_create(1, 8, &r), -EINVAL);
	assert_int_equal(ring_create(48, 8, &r), -EINVAL);
	assert_int_equal(ring_create(64, 0, &r), -EINVAL);
	assert_int_equal(ring_locked_create(3, 8, &q), -EINVAL);
	assert_false(ring_valid_capacity(RING_MAX_CAPACITY * 2ull));
	assert_true(ring_valid_capacity(2));
}

static void test_empty(void **state)
{
	struct ring *r;
	struct item it;

	(void)state;
	assert_int_equal(ring_create(8, sizeof(it), &r), 0);
	assert_int_equal(ring_pop(r, &it), -EAGAIN);
	assert_int_equal(ring_count(r), 0);
	assert_int_equal(ring_capacity(r), 8);
	ring_destroy(r);
}

static void test_full_then_eagain_never_overwrites(void **state)
{
	struct ring *r;
	struct item it = { 0 };

	(void)state;
	assert_int_equal(ring_create(4, sizeof(it), &r), 0);
	for (uint32_t i = 0; i < 4; i++) {
		it.seq = i;
		assert_int_equal(ring_push(r, &it, NULL), 0);
	}
	it.seq = 99;
	assert_int_equal(ring_push(r, &it, NULL), -EAGAIN);
	assert_int_equal(ring_push(r, &it, NULL), -EAGAIN);
	assert_int_equal(ring_count(r), 4);
	for (uint32_t i = 0; i < 4; i++) {
		assert_int_equal(ring_pop(r, &it), 0);
		assert_int_equal(it.seq, i); /* 99 never replaced anything */
	}
	assert_int_equal(ring_pop(r, &it), -EAGAIN);
	ring_destroy(r);
}

static void test_wrap_around_keeps_fifo(void **state)
{
	struct ring *r;
	struct item it = { 0 };
	uint32_t next_in = 0, next_out = 0;

	(void)state;
	assert_int_equal(ring_create(4, sizeof(it), &r), 0);
	/* Many laps with a varying fill level cross the index wrap many times. */
	for (int round = 0; round < 1000; round++) {
		int burst = 1 + round % 4;

		for (int i = 0; i < burst; i++) {
			it.seq = next_in++;
			assert_int_equal(ring_push(r, &it, NULL), 0);
		}
		for (int i = 0; i < burst; i++) {
			assert_int_equal(ring_pop(r, &it), 0);
			assert_int_equal(it.seq, next_out++);
		}
	}
	assert_int_equal(next_out, next_in);
	ring_destroy(r);
}

static void test_was_empty_edge(void **state)
{
	struct ring *r;
	struct item it = { 0 };
	bool edge = false;

	(void)state;
	assert_int_equal(ring_create(8, sizeof(it), &r), 0);
	assert_int_equal(ring_push(r, &it, &edge), 0);
	assert_true(edge);
	assert_int_equal(ring_push(r, &it, &edge), 0);
	assert_false(edge);
	assert_int_equal(ring_pop(r, &it), 0);
	assert_int_equal(ring_push(r, &it, &edge), 0);
	assert_false(edge); /* one element still there */
	assert_int_equal(ring_pop(r, &it), 0);
	assert_int_equal(ring_pop(r, &it), 0);
	assert_int_equal(ring_push(r, &it, &edge), 0);
	assert_true(edge);
	ring_destroy(r);
}

static void test_locked_same_contract(void **state)
{
	struct ring_locked *q;
	struct item it = { 0 };
	bool edge = false;

	(void)state;
	assert_int_equal(ring_locked_create(2, sizeof(it), &q), 0);
	assert_int_equal(ring_locked_pop(q, &it), -EAGAIN);
	it.seq = 1;
	assert_int_equal(ring_locked_push(q, &it, &edge), 0);
	assert_true(edge);
	it.seq = 2;
	assert_int_equal(ring_locked_push(q, &it, &edge), 0);
	assert_false(edge);
	assert_int_equal(ring_locked_push(q, &it, NULL), -EAGAIN);
	assert_int_equal(ring_locked_count(q), 2);
	assert_int_equal(ring_locked_pop(q, &it), 0);
	assert_int_equal(it.seq, 1);
	assert_int_equal(ring_locked_pop(q, &it), 0);
	assert_int_equal(it.seq, 2);
	ring_locked_destroy(q);
}

#define PRODUCERS 4
#define CONSUMERS 3
#define PER_PRODUCER 50000

struct stress {
	struct ring *r;
	_Atomic uint32_t consumed;
	_Atomic uint32_t producer_id;
	_Atomic uint8_t seen[PRODUCERS][PER_PRODUCER];
	_Atomic int order_errors;
};

static void *producer(void *arg)
{
	struct stress *s = arg;
	struct item it = { .producer = atomic_fetch_add(&s->producer_id, 1) };

	for (uint32_t i = 0; i < PER_PRODUCER; i++) {
		it.seq = i;
		it.payload[0] = ((uint64_t)it.producer << 32) | i; /* checked on pop: no torn copies */
		it.payload[2] = ~it.payload[0];
		while (ring_push(s->r, &it, NULL) == -EAGAIN)
			sched_yield();
	}
	return NULL;
}

static void *consumer(void *arg)
{
	struct stress *s = arg;
	struct item it;
	uint32_t last[PRODUCERS];

	memset(last, 0xff, sizeof(last));
	while (atomic_load(&s->consumed) < PRODUCERS * PER_PRODUCER) {
		if (ring_pop(s->r, &it) != 0) {
			sched_yield();
			continue;
		}
		if (it.producer >= PRODUCERS || it.seq >= PER_PRODUCER ||
		    it.payload[0] != (((uint64_t)it.producer << 32) | it.seq) || it.payload[2] != ~it.payload[0]) {
			atomic_fetch_add(&s->order_errors, 1);
			continue;
		}
		/* Per producer, one consumer sees increasing sequence numbers. */
		if (last[it.producer] != UINT32_MAX && it.seq <= last[it.producer])
			atomic_fetch_add(&s->order_errors, 1);
		last[it.producer] = it.seq;
		atomic_fetch_add(&s->seen[it.producer][it.seq], 1);
		atomic_fetch_add(&s->consumed, 1);
	}
	return NULL;
}

static void test_mpmc_stress_exactly_once(void **state)
{
	struct stress *s = calloc(1, sizeof(*s));
	pthread_t p[PRODUCERS], c[CONSUMERS];

	(void)state;
	assert_non_null(s);
	assert_int_equal(ring_create(64, sizeof(struct item), &s->r), 0);
	for (int i = 0; i < CONSUMERS; i++)
		assert_int_equal(pthread_create(&c[i], NULL, consumer, s), 0);
	for (int i = 0; i < PRODUCERS; i++)
		assert_int_equal(pthread_create(&p[i], NULL, producer, s), 0);
	for (int i = 0; i < PRODUCERS; i++)
		pthread_join(p[i], NULL);
	for (int i = 0; i < CONSUMERS; i++)
		pthread_join(c[i], NULL);
	assert_int_equal(atomic_load(&s->order_errors), 0);
	for (int pr = 0; pr < PRODUCERS; pr++)
		for (int i = 0; i < PER_PRODUCER; i++)
			if (atomic_load(&s->seen[pr][i]) != 1)
				fail_msg("producer %d item %d seen %d times", pr, i, atomic_load(&s->seen[pr][i]));
	assert_int_equal(ring_count(s->r), 0);
	ring_destroy(s->r);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_invalid_capacity),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_full_then_eagain_never_overwrites),
		cmocka_unit_test(test_wrap_around_keeps_fifo),
		cmocka_unit_test(test_was_empty_edge),
		cmocka_unit_test(test_locked_same_contract),
		cmocka_unit_test(test_mpmc_stress_exactly_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
