/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Shared set-up for the stats segment tests: a private segment directory, per-test setup and teardown. */
#ifndef RDMATOOL_TEST_STATS_FIXTURE_H
#define RDMATOOL_TEST_STATS_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "core/stats/stats.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

/* Where this test's segments live (STATS_ENV_DIR), made by stats_run_tests. */
static char stats_test_dir[] = "/tmp/rdmatool-test-stats.XXXXXX";

static inline int stats_test_setup(void **state)
{
	(void)state;
	unsetenv(STATS_ENV_DISABLE);
	return 0;
}

static inline int stats_test_teardown(void **state)
{
	(void)state;
	stats_segment_close();
	unsetenv(STATS_ENV_DISABLE);
	return 0;
}

/*
 * Runs the group with every segment in a fresh directory, out of /dev/shm
 * and away from other processes, and removes it with what a failed test
 * left in it.
 */
static inline int stats_run_group(const char *name, const struct CMUnitTest *tests, size_t n)
{
	char cmd[PATH_MAX + 16];
	int failed;

	if (!mkdtemp(stats_test_dir))
		return 1;
	setenv(STATS_ENV_DIR, stats_test_dir, 1);
	unsetenv(STATS_ENV_DISABLE);
	failed = _cmocka_run_group_tests(name, tests, n, NULL, NULL);
	stats_segment_close(); /* a failed test leaves its segment open */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", stats_test_dir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", stats_test_dir);
	return failed;
}
#define stats_run_tests(tests) stats_run_group(#tests, tests, sizeof(tests) / sizeof((tests)[0]))

#endif
