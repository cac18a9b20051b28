/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Strip mining's target order (core/agent/strip.h): each round a permutation, in random order. */
#include "core/agent/strip.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#define TARGETS 5
#define ROUNDS	5000

/* Every target once per round; each target is first about as often as the others. */
static void test_order_is_a_random_permutation(void **state)
{
	struct strip s;
	uint32_t order[TARGETS], first[TARGETS] = {0}, same_as_submission = 0;

	(void)state;
	strip_init(&s, 42);
	for (int round = 0; round < ROUNDS; round++) {
		uint32_t seen[TARGETS] = {0};
		bool in_order = true;

		strip_order(&s, TARGETS, order);
		for (uint32_t i = 0; i < TARGETS; i++) {
			assert_true(order[i] < TARGETS);
			seen[order[i]]++;
			in_order = in_order && order[i] == i;
		}
		for (uint32_t t = 0; t < TARGETS; t++)
			assert_int_equal(seen[t], 1);
		first[order[0]]++;
		same_as_submission += in_order;
	}
	for (uint32_t t = 0; t < TARGETS; t++) /* 1000 expected each */
		assert_true(first[t] > 800 && first[t] < 1200);
	assert_true(same_as_submission < ROUNDS / 50); /* 1 in 120 expected */
}

/* One target, or none: nothing to shuffle, nothing written out of bounds. */
static void test_small(void **state)
{
	struct strip s;
	uint32_t order[2] = {7, 7};

	(void)state;
	strip_init(&s, 1);
	strip_order(&s, 0, order);
	assert_int_equal(order[0], 7);
	strip_order(&s, 1, order);
	assert_int_equal(order[0], 0);
	assert_int_equal(order[1], 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_order_is_a_random_permutation),
	    cmocka_unit_test(test_small),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
