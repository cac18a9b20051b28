/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* walk: the history ring keeps the last N lines, oldest first, dumped with write(2). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cmd/walk/walk.h"

static char *dump_to_string(struct walk_history *h, int client)
{
	FILE *f = tmpfile();
	static char buf[65536];
	size_t n;

	assert_non_null(f);
	walk_history_dump(h, fileno(f), client);
	rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void test_keeps_last_n_in_order(void **state)
{
	struct walk_history h;
	char *out;

	(void)state;
	assert_int_equal(walk_history_init(&h, 3), 0);
	for (int i = 0; i < 5; i++)
		walk_history_add(&h, "action %d", i);
	out = dump_to_string(&h, 7);
	assert_non_null(strstr(out, "--- history of client 7: last 3 of 5 entries ---\n"));
	assert_null(strstr(out, "action 1\n"));
	assert_non_null(strstr(out, "action 2\naction 3\naction 4\n"));
	walk_history_free(&h);
}

static void test_partial_and_long_lines(void **state)
{
	struct walk_history h;
	char longline[400];
	char *out;

	(void)state;
	memset(longline, 'x', sizeof(longline) - 1);
	longline[sizeof(longline) - 1] = '\0';
	assert_int_equal(walk_history_init(&h, 10), 0);
	walk_history_add(&h, "first");
	walk_history_add(&h, "%s", longline);
	out = dump_to_string(&h, 0);
	assert_non_null(strstr(out, "last 2 of 2 entries"));
	assert_non_null(strstr(out, "first\n"));
	/* truncated to the line size, still newline-terminated */
	assert_non_null(strstr(out, "xxx\n"));
	assert_true(strlen(out) < 100 + WALK_HISTORY_LINE + 10);
	walk_history_free(&h);
}

static void test_zero_size_is_off(void **state)
{
	struct walk_history h;

	(void)state;
	assert_int_equal(walk_history_init(&h, 0), 0);
	walk_history_add(&h, "ignored");
	assert_string_equal(dump_to_string(&h, 0), "");
	walk_history_free(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keeps_last_n_in_order),
		cmocka_unit_test(test_partial_and_long_lines),
		cmocka_unit_test(test_zero_size_is_off),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
