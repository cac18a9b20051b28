/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The stats segments against a hostile local user (issue 15 items 1-4): a
 * header rewritten after it was validated, a file truncated while it is
 * read, FIFOs and symlinks under segment names, junk under a dead pid's
 * name, a pre-planted temporary name, and a forged segment for another
 * user's process.
 */
#include "tests/unit/stats_fixture.h"
#include "core/stats/stats.h"
#include "core/stats/stats_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FULL_LEN(n) (sizeof(struct stats_header) + (size_t)(n) * sizeof(struct stats_entry))

static void path_of(const char *name, char *path, size_t len)
{
	snprintf(path, len, "%s/%s", stats_test_dir, name);
}

/* A valid segment file for pid with max_entries slots, nentries used (live). */
static void write_segment(const char *name, pid_t pid, uint32_t max_entries, uint32_t nentries)
{
	char path[PATH_MAX];
	size_t len = FULL_LEN(max_entries);
	char *buf = calloc(1, len);
	struct stats_header *h = (struct stats_header *)buf;
	struct stats_entry *e = (struct stats_entry *)(h + 1);
	FILE *f;

	assert_non_null(buf);
	h->magic = STATS_MAGIC;
	h->version = STATS_VERSION;
	h->header_size = sizeof(*h);
	h->entry_size = sizeof(struct stats_entry);
	h->max_entries = max_entries;
	atomic_init(&h->nentries, nentries);
	h->pid = pid;
	for (uint32_t i = 0; i < nentries; i++) {
		snprintf(e[i].name, sizeof(e[i].name), "entry%u", i);
		atomic_init(&e[i].seq, 1);
	}
	path_of(name, path, sizeof(path));
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	fclose(f);
	free(buf);
}

/* Rewrites the header's counts in place, as the file's owner may do at any time. */
static void rewrite_counts(const char *name, uint32_t max_entries, uint32_t nentries)
{
	char path[PATH_MAX];
	int fd;

	path_of(name, path, sizeof(path));
	fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(
	    pwrite(fd, &max_entries, sizeof(max_entries), offsetof(struct stats_header, max_entries)),
	    sizeof(max_entries));
	assert_int_equal(pwrite(fd, &nentries, sizeof(nentries), offsetof(struct stats_header, nentries)),
			 sizeof(nentries));
	close(fd);
}

/* Item 1: counts changed after validation never size a copy; the reader keeps its validated copy. */
static void header_rewritten_after_open(void **state)
{
	(void)state;
	struct stats_snapshot *s = malloc(sizeof(*s));
	struct stats_reader r;
	char path[PATH_MAX];

	assert_non_null(s);
	write_segment("grow", 4242, 2, 2);
	path_of("grow", path, sizeof(path));
	assert_int_equal(stats_reader_open_path(&r, path, 4242), STATS_READ_OK);
	assert_int_equal(stats_reader_snapshot(&r, s), STATS_READ_OK);
	assert_int_equal(s->nentries, 2);
	/* Now claim 1000 slots of which 900 are used: past the mapping and past s->entry[]. */
	rewrite_counts("grow", 1000, 900);
	assert_int_equal(stats_reader_snapshot(&r, s), STATS_READ_BAD_LAYOUT);
	/* A bigger max_entries alone does not widen what is read either. */
	rewrite_counts("grow", 1000, 2);
	assert_int_equal(stats_reader_snapshot(&r, s), STATS_READ_OK);
	assert_int_equal(s->nentries, 2);
	stats_reader_close(&r);
	free(s);
}

struct truncator {
	char path[PATH_MAX];
	size_t full, cut;
	_Atomic bool stop;
};

static void *truncate_loop(void *arg)
{
	struct truncator *t = arg;

	while (!atomic_load(&t->stop)) {
		if (truncate(t->path, (off_t)t->cut) || truncate(t->path, (off_t)t->full))
			break;
	}
	return NULL;
}

/* Item 4 (reader side): truncation racing a snapshot is reported, never a SIGBUS. */
static void truncated_while_reading(void **state)
{
	(void)state;
	struct stats_snapshot *s = malloc(sizeof(*s));
	struct truncator t = {.full = FULL_LEN(64), .cut = sizeof(struct stats_header)};
	struct stats_reader r;
	struct timespec t0, now;
	pthread_t th;
	long ok = 0, truncated = 0;

	assert_non_null(s);
	write_segment("shrink", 4243, 64, 64);
	path_of("shrink", t.path, sizeof(t.path));
	assert_int_equal(stats_reader_open_path(&r, t.path, 4243), STATS_READ_OK);
	assert_int_equal(pthread_create(&th, NULL, truncate_loop, &t), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		int rc = stats_reader_snapshot(&r, s);

		assert_true(rc == STATS_READ_OK || rc == STATS_READ_TRUNCATED);
		ok += rc == STATS_READ_OK;
		truncated += rc == STATS_READ_TRUNCATED;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - t0.tv_sec < 1 || truncated == 0);
	atomic_store(&t.stop, true);
	pthread_join(th, NULL);
	assert_true(truncated > 0);
	stats_reader_close(&r);
	free(s);
}

static void on_alarm(int sig)
{
	(void)sig;
	_exit(3); /* a hang in open() on a FIFO */
}

/* Item 2: a FIFO under a segment name neither hangs the reader nor --clean. */
static void fifo_is_not_a_segment(void **state)
{
	(void)state;
	char name[64], path[PATH_MAX];
	struct stats_reader r;

	signal(SIGALRM, on_alarm);
	alarm(10);
	snprintf(name, sizeof(name), "%s%d", STATS_FILE_PREFIX, (int)getpid());
	path_of(name, path, sizeof(path));
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(stats_reader_open(&r, getpid()), STATS_READ_NOT_FILE);
	assert_int_equal(stats_segment_remove(getpid()), -EPERM);
	assert_int_equal(access(path, F_OK), 0);
	alarm(0);
	unlink(path);
}

/* The pid of a process that has exited. */
static pid_t dead_pid(void)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	assert_true(pid > 0);
	waitpid(pid, NULL, 0);
	return pid;
}

/* Item 3: --clean's removal never follows a symlink and never removes what is not a segment. */
static void remove_only_real_segments(void **state)
{
	(void)state;
	pid_t dead = dead_pid();
	char name[64], path[PATH_MAX], target[PATH_MAX];
	struct stats_reader r;

	/* A symlink to a real segment of ours (the victim file) under a dead pid's name. */
	write_segment("victim", dead, 2, 0);
	path_of("victim", target, sizeof(target));
	snprintf(name, sizeof(name), "%s%d", STATS_FILE_PREFIX, (int)dead);
	path_of(name, path, sizeof(path));
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(stats_reader_open(&r, dead), STATS_READ_NOT_FILE);
	assert_int_equal(stats_segment_remove(dead), -EPERM);
	assert_int_equal(access(target, F_OK), 0);
	assert_int_equal(unlink(path), 0);

	/* Junk under the dead pid's name stays. */
	path_of(name, path, sizeof(path));
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs("not a segment\n", f);
	fclose(f);
	assert_int_equal(stats_segment_remove(dead), -EINVAL);
	assert_int_equal(access(path, F_OK), 0);

	/* A segment naming another pid is not that pid's segment. */
	write_segment(name, dead + 1, 2, 0);
	assert_int_equal(stats_segment_remove(dead), -EINVAL);
	/* A real stale segment of ours is removed. */
	write_segment(name, dead, 2, 0);
	assert_int_equal(stats_segment_remove(dead), 0);
	assert_int_equal(access(path, F_OK), -1);
}

/* Item 4 (writer side): the old predictable temporary name, planted first, captures nothing. */
static void planted_temporary_name(void **state)
{
	(void)state;
	char planted[PATH_MAX], name[64], decoy[PATH_MAX];
	const char *seg;
	struct stat st;

	snprintf(name, sizeof(name), ".%s%d.tmp", STATS_FILE_PREFIX, (int)getpid());
	path_of(name, planted, sizeof(planted));
	path_of("decoy", decoy, sizeof(decoy));
	assert_int_equal(symlink(decoy, planted), 0);
	assert_int_equal(stats_segment_open("hostile"), 0);
	seg = stats_segment_path();
	assert_non_null(seg);
	assert_int_equal(lstat(seg, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(st.st_uid, geteuid());
	assert_int_equal(access(decoy, F_OK), -1); /* nothing was created through the planted link */
	assert_int_equal(lstat(planted, &st), 0);  /* and the plant is untouched */
	assert_true(S_ISLNK(st.st_mode));
	unlink(planted);
	stats_segment_close();
}

/* A segment for a live process, owned by another user, is a forgery (needs root to make one). */
static void forged_segment_for_a_live_process(void **state)
{
	(void)state;
	char name[64], path[PATH_MAX];
	struct stats_reader r;

	if (geteuid() != 0) {
		fprintf(stderr,
			"forged_segment_for_a_live_process: not root, cannot chown a file to another user\n");
		return;
	}
	snprintf(name, sizeof(name), "%s%d", STATS_FILE_PREFIX, (int)getpid());
	write_segment(name, getpid(), 2, 1);
	path_of(name, path, sizeof(path));
	assert_int_equal(stats_reader_open(&r, getpid()), STATS_READ_OK);
	stats_reader_close(&r);
	assert_int_equal(chown(path, 65534, 65534), 0);
	assert_int_equal(stats_reader_open(&r, getpid()), STATS_READ_BAD_OWNER);
	assert_int_equal(stats_segment_remove(getpid()), -EPERM); /* not ours */
	unlink(path);
}

/* RDMATOOL_STATS takes 0 or 1; anything else is an error that names the variable. */
static void bad_environment_value(void **state)
{
	(void)state;
	char msg[256];

	setenv(STATS_ENV_DISABLE, "abc", 1);
	assert_int_equal(stats_env_check(msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "RDMATOOL_STATS='abc'"));
	assert_int_equal(stats_segment_open("bad"), -EINVAL);
	setenv(STATS_ENV_DISABLE, "0", 1);
	assert_int_equal(stats_env_check(msg, sizeof(msg)), 0);
	unsetenv(STATS_ENV_DISABLE);
	assert_int_equal(stats_env_check(msg, sizeof(msg)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(header_rewritten_after_open, stats_test_setup,
					    stats_test_teardown),
	    cmocka_unit_test_setup_teardown(truncated_while_reading, stats_test_setup, stats_test_teardown),
	    cmocka_unit_test_setup_teardown(fifo_is_not_a_segment, stats_test_setup, stats_test_teardown),
	    cmocka_unit_test_setup_teardown(remove_only_real_segments, stats_test_setup, stats_test_teardown),
	    cmocka_unit_test_setup_teardown(planted_temporary_name, stats_test_setup, stats_test_teardown),
	    cmocka_unit_test_setup_teardown(forged_segment_for_a_live_process, stats_test_setup,
					    stats_test_teardown),
	    cmocka_unit_test_setup_teardown(bad_environment_value, stats_test_setup, stats_test_teardown),
	};

	return stats_run_tests(tests);
}
