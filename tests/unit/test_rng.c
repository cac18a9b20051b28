/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* core/rng: reproducible, independent streams, unbiased ranges, weights. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/util/rng.h"

static void test_same_seed_same_sequence(void **state)
{
	struct rng a, b, c;
	int differ = 0;

	(void)state;
	rng_seed(&a, 42, 0);
	rng_seed(&b, 42, 0);
	rng_seed(&c, 42, 1);
	for (int i = 0; i < 1000; i++) {
		uint64_t x = rng_next(&a);

		assert_true(x == rng_next(&b));
		differ += x != rng_next(&c);
	}
	assert_true(differ > 990);
}

static void test_range_bounds_and_coverage(void **state)
{
	struct rng r;
	int seen[7] = { 0 };

	(void)state;
	rng_seed(&r, 1, 2);
	for (int i = 0; i < 70000; i++) {
		uint64_t v = rng_range(&r, 10, 16);

		assert_true(v >= 10 && v <= 16);
		seen[v - 10]++;
	}
	for (int i = 0; i < 7; i++)
		assert_true(seen[i] > 9000 && seen[i] < 11000);
	assert_true(rng_range(&r, 5, 5) == 5);
	(void)rng_range(&r, 0, UINT64_MAX); /* the full range must not loop or divide by zero */
}

static void test_weighted(void **state)
{
	const uint32_t w[4] = { 0, 1, 0, 3 };
	const uint32_t none[3] = { 0, 0, 0 };
	int count[4] = { 0 };
	struct rng r;

	(void)state;
	rng_seed(&r, 7, 0);
	for (int i = 0; i < 40000; i++)
		count[rng_weighted(&r, w, 4)]++;
	assert_int_equal(count[0], 0);
	assert_int_equal(count[2], 0);
	assert_true(count[3] > 2 * count[1] && count[3] < 4 * count[1]);
	assert_int_equal(rng_weighted(&r, none, 3), -1);
}

static void test_bernoulli(void **state)
{
	struct rng r;
	int yes = 0;

	(void)state;
	rng_seed(&r, 3, 3);
	for (int i = 0; i < 100000; i++)
		yes += rng_bernoulli(&r, 0.25);
	assert_true(yes > 24000 && yes < 26000);
	assert_false(rng_bernoulli(&r, 0.0));
	assert_true(rng_bernoulli(&r, 1.0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_seed_same_sequence),
		cmocka_unit_test(test_range_bounds_and_coverage),
		cmocka_unit_test(test_weighted),
		cmocka_unit_test(test_bernoulli),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
