/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The stats segment under contention: writer threads add entries and bump
 * relaxed counters (some shared, some their own) while a reader thread
 * snapshots the segment without a lock.  Every count must come out exact,
 * every counter must look monotonic to the reader, and stats_max must end at
 * the largest value any thread offered.  Run under build-tsan too.
 */
#include "tests/unit/stats_fixture.h"
#include "core/stats/stats.h"
#include "core/stats/stats_reader.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WRITERS 4
#define ITERS	200000

struct shared {
	struct stats_entry *common;
	atomic_int writers_left;
	atomic_int reader_ready; /* the reader took its first snapshot, or gave up */
	uint64_t reader_snapshots;
	bool reader_saw_regression;
	bool reader_failed;
};

struct writer {
	struct shared *sh;
	int id;
	struct stats_entry *own;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	char name[STATS_NAME_LEN];

	snprintf(name, sizeof(name), "stripe%d", w->id);
	/*
	 * The writers start once the reader is snapshotting: on a loaded machine
	 * they could otherwise finish before its thread ran at all (no snapshot,
	 * nothing checked).  A reader that never comes is waited for 60 s.
	 */
	struct timespec until, now;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += 60;
	while (!atomic_load(&w->sh->reader_ready)) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > until.tv_sec)
			break;
		sched_yield();
	}
	/* Concurrent adds while the reader is snapshotting. */
	w->own = stats_entry_add(name, STATS_KIND_STRIPE, w->id);
	for (int i = 0; i < ITERS; i++) {
		stats_inc(w->own, STATS_POSTED);
		stats_inc(w->sh->common, STATS_COMPLETED);
		stats_add(w->sh->common, STATS_POLLS, 2);
		/* Values interleave across threads; the largest is ITERS * WRITERS - 1. */
		stats_max(w->sh->common, STATS_RING_HWM, (uint64_t)i * WRITERS + (uint64_t)w->id);
		stats_ring_depth(w->own, (uint64_t)i);
	}
	atomic_fetch_sub(&w->sh->writers_left, 1);
	return NULL;
}

/* Snapshots until the writers finish; every counter must only grow between snapshots. */
static void *reader_main(void *arg)
{
	struct shared *sh = arg;
	struct stats_snapshot *prev = calloc(1, sizeof(*prev)), *cur = calloc(1, sizeof(*cur));
	struct stats_reader r;

	if (!prev || !cur || stats_reader_open(&r, getpid()) != STATS_READ_OK) {
		sh->reader_failed = true;
		goto out;
	}
	while (atomic_load(&sh->writers_left) > 0) {
		if (stats_reader_snapshot(&r, cur) != STATS_READ_OK || cur->nentries < prev->nentries) {
			sh->reader_failed = true;
			break;
		}
		for (uint32_t i = 0; i < prev->nentries; i++)
			for (int c = 0; c < STATS_NCOUNTERS; c++)
				if (c != STATS_RING_DEPTH &&
				    cur->entry[i].counter[c] < prev->entry[i].counter[c])
					sh->reader_saw_regression = true;
		for (uint32_t i = 0; i < cur->nentries; i++)
			if (cur->entry[i].name[0] == '\0')
				sh->reader_failed = true; /* published before it was named */
		struct stats_snapshot *t = prev;

		prev = cur;
		cur = t;
		sh->reader_snapshots++;
		atomic_store(&sh->reader_ready, 1);
	}
	stats_reader_close(&r);
out:
	atomic_store(&sh->reader_ready, 1);
	free(prev);
	free(cur);
	return NULL;
}

static void counts_are_exact_under_contention(void **state)
{
	(void)state;
	struct shared sh = {0};
	struct writer w[WRITERS];
	pthread_t wt[WRITERS], rt;
	struct stats_snapshot *s = malloc(sizeof(*s));
	struct stats_reader r;
	uint64_t posted_total = 0;

	assert_non_null(s);
	assert_int_equal(stats_segment_open("threads"), 0);
	sh.common = stats_entry_add("cq", STATS_KIND_CQ, -1);
	assert_non_null(sh.common);
	atomic_init(&sh.writers_left, WRITERS);
	assert_int_equal(pthread_create(&rt, NULL, reader_main, &sh), 0);
	for (int i = 0; i < WRITERS; i++) {
		w[i] = (struct writer){.sh = &sh, .id = i};
		assert_int_equal(pthread_create(&wt[i], NULL, writer_main, &w[i]), 0);
	}
	for (int i = 0; i < WRITERS; i++)
		pthread_join(wt[i], NULL);
	pthread_join(rt, NULL);

	assert_false(sh.reader_failed);
	assert_false(sh.reader_saw_regression);
	assert_true(sh.reader_snapshots > 0);

	assert_int_equal(stats_reader_open(&r, getpid()), STATS_READ_OK);
	assert_int_equal(stats_reader_snapshot(&r, s), STATS_READ_OK);
	stats_reader_close(&r);
	assert_int_equal(s->nentries, 1 + WRITERS);
	assert_string_equal(s->entry[0].name, "cq");
	assert_int_equal(s->entry[0].counter[STATS_COMPLETED], (uint64_t)WRITERS * ITERS);
	assert_int_equal(s->entry[0].counter[STATS_POLLS], 2ull * WRITERS * ITERS);
	assert_int_equal(s->entry[0].counter[STATS_RING_HWM], (uint64_t)WRITERS * ITERS - 1);
	for (uint32_t i = 1; i < s->nentries; i++) {
		char name[STATS_NAME_LEN];

		snprintf(name, sizeof(name), "stripe%d", s->entry[i].stripe);
		assert_string_equal(s->entry[i].name, name);
		assert_int_equal(s->entry[i].counter[STATS_POSTED], ITERS);
		assert_int_equal(s->entry[i].counter[STATS_RING_HWM], ITERS - 1);
		assert_int_equal(s->entry[i].counter[STATS_RING_DEPTH], ITERS - 1);
		posted_total += s->entry[i].counter[STATS_POSTED];
	}
	assert_int_equal(posted_total, (uint64_t)WRITERS * ITERS);
	free(s);
	stats_segment_close();
}

/*
 * stats_max alone: threads offer ever larger tickets, so a non-atomic
 * "load, compare, store" would sometimes store a smaller ticket over a larger
 * one; a watcher thread sees any such regression.
 */
struct max_race {
	struct stats_entry *e;
	_Atomic uint64_t ticket;
	atomic_int running;
	bool regressed;
};

static void *max_main(void *arg)
{
	struct max_race *m = arg;

	for (int i = 0; i < ITERS; i++)
		stats_max(m->e, STATS_RING_HWM, atomic_fetch_add(&m->ticket, 1));
	atomic_fetch_sub(&m->running, 1);
	return NULL;
}

static void *max_watcher(void *arg)
{
	struct max_race *m = arg;
	uint64_t last = 0;

	while (atomic_load(&m->running) > 0) {
		uint64_t cur = atomic_load_explicit(&m->e->counter[STATS_RING_HWM], memory_order_relaxed);

		if (cur < last)
			m->regressed = true;
		last = cur;
	}
	return NULL;
}

static void max_never_goes_back(void **state)
{
	(void)state;
	struct max_race m = {0};
	pthread_t t[WRITERS], watcher;

	assert_int_equal(stats_segment_open("max"), 0);
	m.e = stats_entry_add("hwm", STATS_KIND_CQ, -1);
	assert_non_null(m.e);
	atomic_init(&m.running, WRITERS);
	assert_int_equal(pthread_create(&watcher, NULL, max_watcher, &m), 0);
	for (int i = 0; i < WRITERS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, max_main, &m), 0);
	for (int i = 0; i < WRITERS; i++)
		pthread_join(t[i], NULL);
	pthread_join(watcher, NULL);
	assert_false(m.regressed);
	assert_int_equal(atomic_load(&m.e->counter[STATS_RING_HWM]), (uint64_t)WRITERS * ITERS - 1);
	stats_segment_close();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(counts_are_exact_under_contention),
	    cmocka_unit_test(max_never_goes_back),
	};

	return stats_run_tests(tests);
}
