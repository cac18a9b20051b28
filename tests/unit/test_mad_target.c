/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* LID lists and directed-route paths as typed on the madstress command line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/mad/mad_target.h"

static void lid_list_ranges_and_hex(void **state)
{
	uint16_t *lids;
	char err[256];
	int n = mad_parse_lid_list("2,4-9,0x20", &lids, err, sizeof(err));
	const uint16_t want[] = { 2, 4, 5, 6, 7, 8, 9, 32 };

	(void)state;
	assert_int_equal(n, 8);
	assert_memory_equal(lids, want, sizeof(want));
	free(lids);
}

static void lid_list_drops_duplicates(void **state)
{
	uint16_t *lids;
	char err[256];
	int n = mad_parse_lid_list("5,3-6,5", &lids, err, sizeof(err));
	const uint16_t want[] = { 5, 3, 4, 6 };

	(void)state;
	assert_int_equal(n, 4);
	assert_memory_equal(lids, want, sizeof(want));
	free(lids);
}

static void lid_list_rejects(void **state)
{
	static const char *const bad[] = { "",	   "0",	     "1,",    ",1",    "1,,2", "a",	 "1-",
					   "9-4",  "49152", "1-0xc000", "-3", "1 2", "1;2", "0x" };
	uint16_t *lids = (uint16_t *)1;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		assert_int_equal(mad_parse_lid_list(bad[i], &lids, err, sizeof(err)), -1);
		assert_null(lids);
		assert_true(strlen(err) > 10); /* says what is wrong */
	}
	assert_int_equal(mad_parse_lid_list("9-4", &lids, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "4-9"));
}

static void lid_list_caps_destinations(void **state)
{
	uint16_t *lids;
	char err[256];

	(void)state;
	assert_int_equal(mad_parse_lid_list("1-16384", &lids, err, sizeof(err)), MAD_MAX_DESTS);
	free(lids);
	assert_int_equal(mad_parse_lid_list("1-16385", &lids, err, sizeof(err)), -1);
}

static void dr_path_hops(void **state)
{
	struct smp_route r;
	char err[256], back[64];

	(void)state;
	assert_int_equal(mad_parse_dr_path("0,1,3", &r, err, sizeof(err)), 0);
	assert_true(r.directed);
	assert_int_equal(r.hops, 2);
	assert_int_equal(r.path[1], 1);
	assert_int_equal(r.path[2], 3);
	mad_route_format(&r, back, sizeof(back));
	assert_string_equal(back, "0,1,3");

	assert_int_equal(mad_parse_dr_path("0", &r, err, sizeof(err)), 0);
	assert_int_equal(r.hops, 0);
}

static void dr_path_rejects(void **state)
{
	static const char *const bad[] = { "", "1,2", "0,", "0,0", "0,255", "0,x", "0;1" };
	struct smp_route r;
	char err[256], long_path[512];
	size_t used = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(mad_parse_dr_path(bad[i], &r, err, sizeof(err)), -1);
	used += (size_t)snprintf(long_path, sizeof(long_path), "0");
	for (int i = 0; i < SMP_MAX_HOPS; i++)
		used += (size_t)snprintf(long_path + used, sizeof(long_path) - used, ",1");
	assert_int_equal(mad_parse_dr_path(long_path, &r, err, sizeof(err)), 0);
	assert_int_equal(r.hops, SMP_MAX_HOPS);
	snprintf(long_path + used, sizeof(long_path) - used, ",1");
	assert_int_equal(mad_parse_dr_path(long_path, &r, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "hops"));
}

static void numbers(void **state)
{
	uint32_t v;

	(void)state;
	assert_int_equal(mad_parse_number("0x19", 0xffff, &v), 0);
	assert_int_equal(v, 0x19);
	assert_int_equal(mad_parse_number("17", 0xffff, &v), 0);
	assert_int_equal(v, 17);
	assert_int_equal(mad_parse_number("0x10000", 0xffff, &v), -1);
	assert_int_equal(mad_parse_number("12z", 0xffff, &v), -1);
	assert_int_equal(mad_parse_number("", 0xffff, &v), -1);
	assert_int_equal(mad_parse_number("-1", 0xffff, &v), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lid_list_ranges_and_hex), cmocka_unit_test(lid_list_drops_duplicates),
		cmocka_unit_test(lid_list_rejects),	   cmocka_unit_test(lid_list_caps_destinations),
		cmocka_unit_test(dr_path_hops),		   cmocka_unit_test(dr_path_rejects),
		cmocka_unit_test(numbers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
