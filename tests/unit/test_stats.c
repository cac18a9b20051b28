/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The stats segment: writer/reader roundtrip, NULL safety, exit cleanup, fork, stale pids. */
#include "tests/unit/stats_fixture.h"
#include "core/stats/stats.h"
#include "core/stats/stats_reader.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

static struct stats_snapshot *snapshot_of(pid_t pid)
{
	struct stats_snapshot *s = malloc(sizeof(*s));
	struct stats_reader r;

	assert_non_null(s);
	assert_int_equal(stats_reader_open(&r, pid), STATS_READ_OK);
	assert_int_equal(stats_reader_snapshot(&r, s), STATS_READ_OK);
	stats_reader_close(&r);
	return s;
}

static void roundtrip(void **state)
{
	(void)state;
	struct stats_entry *stripe, *cq;
	struct stats_snapshot *s;
	char path[PATH_MAX];

	assert_int_equal(stats_segment_open("unit"), 0);
	assert_int_equal(stats_segment_open("ignored"), 0);
	assert_int_equal(stats_pid_path(getpid(), path, sizeof(path)), 0);
	assert_string_equal(stats_segment_path(), path);
	assert_true(exists(path));

	stripe = stats_entry_add("stripe0", STATS_KIND_STRIPE, 0);
	cq = stats_entry_add("a-name-longer-than-thirty-two-characters", STATS_KIND_CQ, -1);
	assert_non_null(stripe);
	assert_non_null(cq);
	assert_int_equal(stripe->counter[STATS_POSTED], 0);
	stats_add(stripe, STATS_POSTED, 41);
	stats_inc(stripe, STATS_POSTED);
	stats_inc(stripe, STATS_COMPLETED);
	stats_ring_depth(cq, 7);
	stats_ring_depth(cq, 3);
	stats_max(cq, STATS_RING_HWM, 5); /* lower than 7: no effect */
	stats_wc_error(cq, IBV_WC_WR_FLUSH_ERR);
	stats_wc_error(cq, IBV_WC_REM_ACCESS_ERR);
	stats_wc_error(cq, IBV_WC_RNR_RETRY_EXC_ERR);
	stats_error(cq, STATS_ERR_LOCAL);

	s = snapshot_of(getpid());
	assert_int_equal(s->pid, getpid());
	assert_string_equal(s->comm, "unit");
	assert_true(s->start_realtime_ns > 0);
	assert_true(s->proc_starttime > 0);
	assert_int_equal(s->nentries, 2);
	assert_string_equal(s->entry[0].name, "stripe0");
	assert_int_equal(s->entry[0].kind, STATS_KIND_STRIPE);
	assert_int_equal(s->entry[0].stripe, 0);
	assert_int_equal(s->entry[0].counter[STATS_POSTED], 42);
	assert_int_equal(s->entry[0].counter[STATS_COMPLETED], 1);
	assert_int_equal(strlen(s->entry[1].name), STATS_NAME_LEN - 1);
	assert_int_equal(s->entry[1].kind, STATS_KIND_CQ);
	assert_int_equal(s->entry[1].stripe, -1);
	assert_int_equal(s->entry[1].counter[STATS_RING_DEPTH], 3);
	assert_int_equal(s->entry[1].counter[STATS_RING_HWM], 7);
	assert_int_equal(s->entry[1].counter[STATS_ERRORS], 4);
	assert_int_equal(s->entry[1].counter[STATS_ERRORS_FLUSH], 1);
	assert_int_equal(s->entry[1].counter[STATS_ERRORS_REMOTE], 1);
	assert_int_equal(s->entry[1].counter[STATS_ERRORS_TIMEOUT], 1);
	assert_int_equal(s->entry[1].counter[STATS_ERRORS_LOCAL], 1);
	assert_int_equal(s->entry[1].counter[STATS_ERRORS_OTHER], 0);
	assert_int_equal(stats_process_liveness(getpid(), s->proc_starttime), STATS_LIVE);
	assert_int_equal(stats_process_liveness(getpid(), s->proc_starttime + 1), STATS_PID_REUSED);
	free(s);

	stats_segment_close();
	assert_false(exists(path));
	assert_null(stats_segment_path());
}

static void null_entry_is_harmless(void **state)
{
	(void)state;
	stats_inc(NULL, STATS_COMPLETED);
	stats_add(NULL, STATS_POSTED, 3);
	stats_set(NULL, STATS_RING_DEPTH, 3);
	stats_max(NULL, STATS_RING_HWM, 3);
	stats_ring_depth(NULL, 3);
	stats_wc_error(NULL, IBV_WC_LOC_LEN_ERR);
}

static void disabled_by_environment(void **state)
{
	(void)state;
	setenv(STATS_ENV_DISABLE, "0", 1);
	assert_int_equal(stats_segment_open("unit"), -ECANCELED);
	assert_null(stats_entry_add("stripe0", STATS_KIND_STRIPE, 0));
	assert_null(stats_segment_path());
	setenv(STATS_ENV_DISABLE, "yes", 1);
	assert_int_equal(stats_segment_open("unit"), -EINVAL);
	setenv(STATS_ENV_DISABLE, "1", 1);
	assert_non_null(stats_entry_add("stripe0", STATS_KIND_STRIPE, 0));
	assert_non_null(stats_segment_path());
}

static void full_segment_returns_null(void **state)
{
	(void)state;
	struct stats_snapshot *s;

	for (int i = 0; i < STATS_MAX_ENTRIES; i++)
		assert_non_null(stats_entry_add("e", STATS_KIND_OTHER, i));
	assert_null(stats_entry_add("one-too-many", STATS_KIND_OTHER, 0));
	s = snapshot_of(getpid());
	assert_int_equal(s->nentries, STATS_MAX_ENTRIES);
	assert_int_equal(s->entry[STATS_MAX_ENTRIES - 1].stripe, STATS_MAX_ENTRIES - 1);
	free(s);
}

static void error_classes(void **state)
{
	(void)state;
	assert_int_equal(stats_error_kind_of_wc(IBV_WC_LOC_PROT_ERR), STATS_ERR_LOCAL);
	assert_int_equal(stats_error_kind_of_wc(IBV_WC_MW_BIND_ERR), STATS_ERR_LOCAL);
	assert_int_equal(stats_error_kind_of_wc(IBV_WC_REM_INV_REQ_ERR), STATS_ERR_REMOTE);
	assert_int_equal(stats_error_kind_of_wc(IBV_WC_WR_FLUSH_ERR), STATS_ERR_FLUSH);
	assert_int_equal(stats_error_kind_of_wc(IBV_WC_RETRY_EXC_ERR), STATS_ERR_TIMEOUT);
	assert_int_equal(stats_error_kind_of_wc(IBV_WC_GENERAL_ERR), STATS_ERR_OTHER);
}

/* A child that exits normally removes its own segment, and only its own. */
static void exit_removes_segment_and_fork_gets_its_own(void **state)
{
	(void)state;
	char parent_path[PATH_MAX], child_path[PATH_MAX];
	struct stats_entry *e;
	int status;
	pid_t child;

	e = stats_entry_add("parent", STATS_KIND_STRIPE, 0);
	assert_non_null(e);
	assert_int_equal(stats_pid_path(getpid(), parent_path, sizeof(parent_path)), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		/* The inherited entry still points into the parent's segment. */
		stats_inc(e, STATS_COMPLETED);
		if (stats_segment_open("child") != 0 || !stats_entry_add("child", STATS_KIND_CQ, 0))
			_exit(2);
		if (!exists(stats_segment_path()) || !strcmp(stats_segment_path(), parent_path))
			_exit(3);
		exit(0);
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(stats_pid_path(child, child_path, sizeof(child_path)), 0);
	assert_false(exists(child_path));
	assert_true(exists(parent_path));
	assert_int_equal(atomic_load(&e->counter[STATS_COMPLETED]), 1);
}

/* A publisher killed with SIGKILL leaves its segment behind: the reader calls it dead. */
static void killed_publisher_is_stale(void **state)
{
	(void)state;
	struct stats_snapshot *s;
	struct stats_reader r;
	int ready[2], status;
	pid_t child, *pids;
	size_t n;
	bool listed = false;
	char c;

	assert_int_equal(pipe(ready), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		struct stats_entry *e = stats_entry_add("stripe3", STATS_KIND_STRIPE, 3);

		stats_add(e, STATS_COMPLETED, 1234);
		if (write(ready[1], e ? "y" : "n", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	assert_int_equal(c, 'y');

	s = snapshot_of(child);
	assert_int_equal(s->pid, child);
	assert_int_equal(s->nentries, 1);
	assert_int_equal(s->entry[0].stripe, 3);
	assert_int_equal(s->entry[0].counter[STATS_COMPLETED], 1234);
	assert_int_equal(stats_process_liveness(child, s->proc_starttime), STATS_LIVE);

	kill(child, SIGKILL);
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_int_equal(stats_process_liveness(child, s->proc_starttime), STATS_DEAD);
	assert_int_equal(stats_process_liveness(child, 0), STATS_DEAD);

	assert_int_equal(stats_list_pids(&pids, &n), 0);
	for (size_t i = 0; i < n; i++)
		listed |= pids[i] == child;
	free(pids);
	assert_true(listed);
	/* The dead process's counters stay readable until the segment is removed. */
	free(s);
	s = snapshot_of(child);
	assert_int_equal(s->entry[0].counter[STATS_COMPLETED], 1234);
	free(s);
	assert_int_equal(stats_segment_remove(child), 0);
	assert_int_equal(stats_reader_open(&r, child), STATS_READ_NOENT);
	assert_int_equal(stats_segment_remove(child), -ENOENT);
}

static void write_file(const char *name, const void *data, size_t len, size_t file_len)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", stats_test_dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
	assert_int_equal(truncate(path, (off_t)file_len), 0);
}

static int open_file(const char *name, pid_t expect_pid)
{
	char path[PATH_MAX];
	struct stats_reader r;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", stats_test_dir, name);
	rc = stats_reader_open_path(&r, path, expect_pid);
	if (rc == STATS_READ_OK)
		stats_reader_close(&r);
	return rc;
}

static struct stats_header good_header(void)
{
	struct stats_header h = {0};

	h.magic = STATS_MAGIC;
	h.version = STATS_VERSION;
	h.header_size = sizeof(h);
	h.entry_size = sizeof(struct stats_entry);
	h.max_entries = 4;
	h.pid = 4242;
	return h;
}

static void corrupt_files_are_errors(void **state)
{
	(void)state;
	const size_t full = sizeof(struct stats_header) + 4 * sizeof(struct stats_entry);
	struct stats_header h = good_header();
	struct stats_snapshot *s = malloc(sizeof(*s));
	struct stats_reader r;
	char path[PATH_MAX];

	assert_non_null(s);
	write_file("good", &h, sizeof(h), full);
	assert_int_equal(open_file("good", 4242), STATS_READ_OK);
	assert_int_equal(open_file("good", 4243), STATS_READ_BAD_LAYOUT);

	write_file("empty", "", 0, 0);
	assert_int_equal(open_file("empty", 0), STATS_READ_TRUNCATED);
	write_file("short", &h, 10, 10);
	assert_int_equal(open_file("short", 0), STATS_READ_TRUNCATED);
	write_file("header-only", &h, sizeof(h) - 8, sizeof(h) - 8);
	assert_int_equal(open_file("header-only", 0), STATS_READ_TRUNCATED);
	write_file("no-entries", &h, sizeof(h), sizeof(h) + sizeof(struct stats_entry));
	assert_int_equal(open_file("no-entries", 0), STATS_READ_TRUNCATED);

	h.magic ^= 1;
	write_file("magic", &h, sizeof(h), full);
	assert_int_equal(open_file("magic", 0), STATS_READ_BAD_MAGIC);
	h = good_header();
	h.version = STATS_VERSION + 1;
	write_file("version", &h, sizeof(h), full);
	assert_int_equal(open_file("version", 0), STATS_READ_BAD_VERSION);
	/* A newer version that is also shorter is still reported as a version problem. */
	write_file("version-short", &h, 16, 16);
	assert_int_equal(open_file("version-short", 0), STATS_READ_BAD_VERSION);
	h = good_header();
	h.entry_size = 64;
	write_file("entry-size", &h, sizeof(h), full);
	assert_int_equal(open_file("entry-size", 0), STATS_READ_BAD_LAYOUT);
	h = good_header();
	h.max_entries = 1u << 30;
	write_file("max-entries", &h, sizeof(h), full);
	assert_int_equal(open_file("max-entries", 0), STATS_READ_BAD_LAYOUT);

	/* nentries beyond max_entries is caught when snapshotting. */
	h = good_header();
	atomic_init(&h.nentries, 5);
	write_file("nentries", &h, sizeof(h), full);
	snprintf(path, sizeof(path), "%s/nentries", stats_test_dir);
	assert_int_equal(stats_reader_open_path(&r, path, 0), STATS_READ_OK);
	assert_int_equal(stats_reader_snapshot(&r, s), STATS_READ_BAD_LAYOUT);
	/* Truncated after it was mapped: reported, no SIGBUS. */
	atomic_init(&h.nentries, 1);
	write_file("nentries", &h, sizeof(h), sizeof(h));
	assert_int_equal(stats_reader_snapshot(&r, s), STATS_READ_TRUNCATED);
	stats_reader_close(&r);

	snprintf(path, sizeof(path), "%s/missing", stats_test_dir);
	assert_int_equal(stats_reader_open_path(&r, path, 0), STATS_READ_NOENT);
	assert_int_equal(stats_reader_open_path(&r, stats_test_dir, 0), STATS_READ_NOT_FILE);
	assert_int_equal(stats_reader_open(&r, -5), STATS_READ_NOENT);
	assert_string_equal(stats_read_strerror(STATS_READ_BAD_VERSION),
			    "segment written by another rdmatool version");
	free(s);
}

static void list_ignores_other_names(void **state)
{
	(void)state;
	const char *junk[] = {".rdmatool-stats.17.tmp", "rdmatool-stats.abc", "rdmatool-stats.12x",
			      "rdmatool-stats.",	"rdmatool-stats.-3",  "other.18"};
	pid_t *pids;
	size_t n;

	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++)
		write_file(junk[i], "", 0, 0);
	write_file("rdmatool-stats.900000", "", 0, 0);
	write_file("rdmatool-stats.12", "", 0, 0);
	assert_int_equal(stats_list_pids(&pids, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(pids[0], 12);
	assert_int_equal(pids[1], 900000);
	free(pids);
	/* Empty files are not segments: removing them by pid refuses, and they stay. */
	assert_int_equal(stats_segment_remove(12), -EINVAL);
	assert_int_equal(stats_segment_remove(900000), -EINVAL);
	assert_int_equal(stats_list_pids(&pids, &n), 0);
	assert_int_equal(n, 2);
	free(pids);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(roundtrip, stats_test_setup, stats_test_teardown),
	    cmocka_unit_test_setup_teardown(null_entry_is_harmless, stats_test_setup, stats_test_teardown),
	    cmocka_unit_test_setup_teardown(disabled_by_environment, stats_test_setup, stats_test_teardown),
	    cmocka_unit_test_setup_teardown(full_segment_returns_null, stats_test_setup, stats_test_teardown),
	    cmocka_unit_test_setup_teardown(error_classes, stats_test_setup, stats_test_teardown),
	    cmocka_unit_test_setup_teardown(exit_removes_segment_and_fork_gets_its_own, stats_test_setup, stats_test_teardown),
	    cmocka_unit_test_setup_teardown(killed_publisher_is_stale, stats_test_setup, stats_test_teardown),
	    cmocka_unit_test_setup_teardown(corrupt_files_are_errors, stats_test_setup, stats_test_teardown),
	    cmocka_unit_test_setup_teardown(list_ignores_other_names, stats_test_setup, stats_test_teardown),
	};

	return stats_run_tests(tests);
}
