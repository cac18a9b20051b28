/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* core/mailbox: FIFO per producer, backpressure when full, close, and a
 * multi-producer stress that counts every item exactly once. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "core/oob/mailbox.h"

static void test_fifo_and_full(void **state)
{
	struct mailbox *m = mailbox_create(3, sizeof(int));
	int v;

	(void)state;
	assert_non_null(m);
	for (int i = 0; i < 3; i++)
		assert_int_equal(mailbox_try_push(m, &i), 0);
	v = 9;
	assert_int_equal(mailbox_try_push(m, &v), -EAGAIN);
	assert_int_equal(mailbox_push(m, &v, 20), -ETIMEDOUT);
	assert_int_equal(mailbox_count(m), 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(mailbox_try_pop(m, &v), 0);
		assert_int_equal(v, i);
	}
	assert_int_equal(mailbox_try_pop(m, &v), -EAGAIN);
	assert_int_equal(mailbox_pop(m, &v, 10), -ETIMEDOUT);
	mailbox_destroy(m);
}

static void test_close(void **state)
{
	struct mailbox *m = mailbox_create(2, sizeof(int));
	int v = 5;

	(void)state;
	assert_int_equal(mailbox_try_push(m, &v), 0);
	mailbox_close(m);
	assert_int_equal(mailbox_try_push(m, &v), -EPIPE);
	assert_int_equal(mailbox_pop(m, &v, -1), 0); /* what was queued drains */
	assert_int_equal(v, 5);
	assert_int_equal(mailbox_pop(m, &v, -1), -EPIPE);
	mailbox_destroy(m);
	assert_null(mailbox_create(0, 4));
}

#define PRODUCERS 4
#define PER_PRODUCER 50000

struct item {
	uint32_t producer, seq;
};

static struct mailbox *box;

static void *producer(void *arg)
{
	uint32_t id = (uint32_t)(uintptr_t)arg;

	for (uint32_t s = 0; s < PER_PRODUCER; s++) {
		struct item it = { id, s };

		/* backpressure: the small queue is full most of the time */
		assert_int_equal(mailbox_push(box, &it, -1), 0);
	}
	return NULL;
}

static void test_mpsc_stress_exactly_once_in_order(void **state)
{
	pthread_t t[PRODUCERS];
	uint32_t next[PRODUCERS] = { 0 };
	struct item it;

	(void)state;
	box = mailbox_create(64, sizeof(struct item));
	for (uintptr_t i = 0; i < PRODUCERS; i++)
		pthread_create(&t[i], NULL, producer, (void *)i);
	for (int n = 0; n < PRODUCERS * PER_PRODUCER; n++) {
		assert_int_equal(mailbox_pop(box, &it, 10000), 0);
		assert_true(it.producer < PRODUCERS);
		assert_int_equal(it.seq, next[it.producer]); /* per-producer order, no loss, no duplicate */
		next[it.producer]++;
	}
	for (int i = 0; i < PRODUCERS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(next[i], PER_PRODUCER);
	}
	assert_int_equal(mailbox_try_pop(box, &it), -EAGAIN);
	mailbox_destroy(box);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fifo_and_full),
		cmocka_unit_test(test_close),
		cmocka_unit_test(test_mpsc_stress_exactly_once_in_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
