/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The in-flight table (TID -> slot in O(1), late replies, deadline order) and the shared windows. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/mad/mad_slots.h"
#include "core/mad/mad_window.h"

static void tid_finds_its_slot(void **state)
{
	struct mad_slots s;
	uint32_t tids[8];

	(void)state;
	assert_int_equal(mad_slots_init(&s, 5), 0);
	assert_int_equal(s.nslots, 8);
	for (int i = 0; i < 8; i++) {
		int idx = mad_slots_take(&s, 100 + i, 0, 0, 10);

		assert_true(idx >= 0);
		tids[i] = mad_slots_tid(&s, idx);
	}
	assert_int_equal(mad_slots_take(&s, 0, 0, 0, 10), -1); /* full */
	for (int i = 0; i < 8; i++) {
		int idx = mad_slots_lookup(&s, tids[i]);

		assert_true(idx >= 0);
		assert_int_equal(s.slot[idx].dest, 100 + i);
		for (int j = 0; j < i; j++)
			assert_int_not_equal(tids[i], tids[j]);
	}
	mad_slots_destroy(&s);
}

static void late_and_duplicate_replies_miss(void **state)
{
	struct mad_slots s;
	int idx, again;
	uint32_t first, second;

	(void)state;
	assert_int_equal(mad_slots_init(&s, 2), 0);
	idx = mad_slots_take(&s, 7, 1, 0, 10);
	first = mad_slots_tid(&s, idx);
	/* A retransmission gets a new TID; the first attempt's reply is now late. */
	mad_slots_rearm(&s, idx, 5, 15);
	second = mad_slots_tid(&s, idx);
	assert_int_not_equal(first, second);
	assert_int_equal(mad_slots_lookup(&s, first), -1);
	assert_int_equal(mad_slots_lookup(&s, second), idx);
	mad_slots_release(&s, idx);
	/* A duplicate of the answered MAD finds nothing ... */
	assert_int_equal(mad_slots_lookup(&s, second), -1);
	/* ... even once the slot is reused for a new MAD. */
	again = mad_slots_take(&s, 8, 0, 20, 30);
	assert_int_equal(again, idx);
	assert_int_equal(mad_slots_lookup(&s, second), -1);
	assert_int_equal(mad_slots_lookup(&s, mad_slots_tid(&s, again)), again);
	/* A TID whose index bits point at a free slot is foreign. */
	assert_int_equal(mad_slots_lookup(&s, mad_slots_tid(&s, again) ^ 1u), -1);
	mad_slots_destroy(&s);
}

static void generation_wraps_without_reusing_live_tids(void **state)
{
	struct mad_slots s;
	uint32_t seen_first;
	int idx;

	(void)state;
	assert_int_equal(mad_slots_init(&s, 1 << 20), 0); /* 12 generation bits */
	idx = mad_slots_take(&s, 0, 0, 0, 1);
	seen_first = mad_slots_tid(&s, idx);
	for (int i = 0; i < 4095; i++) {
		mad_slots_rearm(&s, idx, 0, 1);
		assert_int_not_equal(mad_slots_tid(&s, idx), seen_first);
	}
	mad_slots_rearm(&s, idx, 0, 1); /* 4096 rearms: the generation wrapped */
	assert_int_equal(mad_slots_tid(&s, idx), seen_first);
	mad_slots_destroy(&s);
}

static void oldest_is_next_to_expire(void **state)
{
	struct mad_slots s;
	int a, b, c;

	(void)state;
	assert_int_equal(mad_slots_init(&s, 4), 0);
	assert_int_equal(mad_slots_oldest(&s), -1);
	a = mad_slots_take(&s, 0, 1, 0, 100);
	b = mad_slots_take(&s, 1, 1, 1, 101);
	c = mad_slots_take(&s, 2, 1, 2, 102);
	assert_int_equal(mad_slots_oldest(&s), a);
	mad_slots_release(&s, b); /* answered from the middle */
	assert_int_equal(mad_slots_oldest(&s), a);
	mad_slots_rearm(&s, a, 100, 200); /* retried: now the newest */
	assert_int_equal(mad_slots_oldest(&s), c);
	mad_slots_release(&s, c);
	assert_int_equal(mad_slots_oldest(&s), a);
	mad_slots_release(&s, a);
	assert_int_equal(mad_slots_oldest(&s), -1);
	assert_int_equal(s.nbusy, 0);
	assert_int_equal(s.nfree, s.nslots);
	mad_slots_destroy(&s);
}

#define THREADS 4
#define ROUNDS 200000

struct window_run {
	struct mad_window *local, *count;
	_Atomic uint64_t *max_seen;
	uint64_t acquired;
};

/* Each thread takes and gives back window credits; the limit must hold at every moment. */
static void *window_worker(void *arg)
{
	struct window_run *r = arg;

	for (int i = 0; i < ROUNDS; i++) {
		uint64_t used, prev;

		if (!mad_window_acquire(r->local))
			continue;
		used = mad_window_used(r->local);
		prev = atomic_load(r->max_seen);
		while (used > prev && !atomic_compare_exchange_weak(r->max_seen, &prev, used))
			;
		if (mad_window_acquire(r->count))
			r->acquired++;
		mad_window_release(r->local);
	}
	return NULL;
}

static void windows_hold_across_threads(void **state)
{
	struct mad_window local, count;
	_Atomic uint64_t max_seen = 0;
	struct window_run runs[THREADS];
	pthread_t t[THREADS];
	uint64_t total = 0;

	(void)state;
	mad_window_init(&local, 3);
	mad_window_init(&count, 100000);
	for (int i = 0; i < THREADS; i++) {
		runs[i] = (struct window_run){ &local, &count, &max_seen, 0 };
		pthread_create(&t[i], NULL, window_worker, &runs[i]);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		total += runs[i].acquired;
	}
	assert_true(atomic_load(&max_seen) <= 3);
	assert_int_equal(mad_window_used(&local), 0);
	/* The count window handed out exactly its limit, each credit once. */
	assert_int_equal(total, 100000);
	assert_true(mad_window_full(&count));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tid_finds_its_slot),
		cmocka_unit_test(late_and_duplicate_replies_miss),
		cmocka_unit_test(generation_wraps_without_reusing_live_tids),
		cmocka_unit_test(oldest_is_next_to_expire),
		cmocka_unit_test(windows_hold_across_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
