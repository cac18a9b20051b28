/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* core/agent/aggregate: full buffers, the 128-item cap, two idle passes, aggregation off, and a lossless
 * round trip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "core/agent/aggregate.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static struct proto_header item(uint64_t port, uint16_t size)
{
	return (struct proto_header){
	    .type = PROTO_SENDMSG, .mode = 1, .eager_size = size, .timeout = 10, .port = port};
}

static void test_fills_until_full(void **state)
{
	static struct agg_buffer b;
	uint8_t data[PROTO_MAX_EAGER];
	struct proto_header h = item(1, 500);
	int n = 0;

	(void)state;
	memset(data, 0xab, sizeof(data));
	agg_init(&b, AGG_MAX_ITEMS);
	while (agg_add(&b, &h, data) == 0)
		n++;
	/* 512 bytes per item: four fit in 2048. */
	assert_int_equal(n, 4);
	assert_int_equal(b.used, 4 * 512);
	assert_int_equal(agg_add(&b, &h, data), -ENOSPC);
	h.eager_size = PROTO_MAX_EAGER + 1;
	assert_int_equal(agg_add(&b, &h, data), -EMSGSIZE);
	/* Full: goes out on the next pass. */
	assert_true(agg_pass(&b));
}

static void test_item_cap_and_idle_passes(void **state)
{
	static struct agg_buffer b;
	struct proto_header h = item(2, 0);

	(void)state;
	agg_init(&b, AGG_MAX_ITEMS);
	assert_false(agg_pass(&b)); /* empty: nothing to send */
	for (int i = 0; i < AGG_MAX_ITEMS; i++)
		assert_int_equal(agg_add(&b, &h, NULL), 0);
	assert_int_equal(agg_add(&b, &h, NULL), -ENOSPC);
	assert_true(agg_pass(&b));
	agg_reset(&b);
	assert_int_equal(agg_add(&b, &h, NULL), 0);
	assert_false(agg_pass(&b)); /* something was added in this pass */
	assert_false(agg_pass(&b)); /* one idle pass */
	assert_true(agg_pass(&b));  /* two idle passes: send */
	agg_reset(&b);
	assert_int_equal(agg_add(&b, &h, NULL), 0);
	assert_false(agg_pass(&b));
	assert_int_equal(agg_add(&b, &h, NULL), 0); /* a new item restarts the count */
	assert_false(agg_pass(&b));
	assert_false(agg_pass(&b));
	assert_true(agg_pass(&b));
}

static void test_off_and_env(void **state)
{
	static struct agg_buffer b;
	struct proto_header h = item(3, 8);
	uint32_t max;

	(void)state;
	setenv("RDMATOOL_AGENT_AGGREGATE", "0", 1);
	assert_int_equal(agg_max_items_from_env(&max), 0);
	assert_int_equal(max, 1);
	agg_init(&b, max);
	assert_int_equal(agg_add(&b, &h, "12345678"), 0);
	assert_int_equal(agg_add(&b, &h, "12345678"), -ENOSPC);
	assert_true(agg_pass(&b));
	setenv("RDMATOOL_AGENT_AGGREGATE", "yes", 1);
	assert_int_equal(agg_max_items_from_env(&max), -EINVAL);
	unsetenv("RDMATOOL_AGENT_AGGREGATE");
	assert_int_equal(agg_max_items_from_env(&max), 0);
	assert_int_equal(max, AGG_MAX_ITEMS);
}

/* What is packed is what proto_next() reads back, item by item. */
static void test_round_trip(void **state)
{
	static struct agg_buffer b;
	uint8_t data[64];
	struct proto_errors e = {0};
	struct proto_header h;
	const uint8_t *d;
	size_t off = 0, dl;
	int n = 0;

	(void)state;
	agg_init(&b, AGG_MAX_ITEMS);
	for (int i = 0; i < 40; i++) {
		struct proto_header in = item((uint64_t)i, (uint16_t)(i % 40));

		memset(data, i, sizeof(data));
		if (agg_add(&b, &in, data))
			break;
		n++;
	}
	for (int i = 0; i < n; i++) {
		assert_int_equal(proto_next(b.data, b.used, &off, &h, &d, &dl, &e), 1);
		assert_int_equal(h.port, (uint64_t)i);
		assert_int_equal(dl, (size_t)(i % 40));
		for (size_t k = 0; k < dl; k++)
			assert_int_equal(d[k], i);
	}
	assert_int_equal(proto_next(b.data, b.used, &off, &h, &d, &dl, &e), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fills_until_full),
	    cmocka_unit_test(test_item_cap_and_idle_passes),
	    cmocka_unit_test(test_off_and_env),
	    cmocka_unit_test(test_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
