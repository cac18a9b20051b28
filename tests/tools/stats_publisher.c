/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A test stand-in for a long-running rdmatool command: publishes a stats
 * segment and bumps its counters, so that cqstat can be tested against a real
 * process before (and independently of) bench.
 *
 *   stats_publisher COMM ENTRIES STEP SECONDS
 *
 * creates ENTRIES entries ("stripeN", stripe N) in a segment named COMM, then
 * every millisecond adds STEP to each entry's posted and completed counters
 * (and sets ring depth/hwm, and one error every 1000 steps), for SECONDS
 * seconds, then prints "completed <total over all entries>" and, with its
 * counters frozen, waits for SIGTERM (so a reader can check the exact total).
 * SECONDS 0 counts until SIGTERM, then prints the total.  Prints
 * "ready <segment path>" on stdout once the segment exists.
 */
#include "core/stats/stats.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	struct stats_entry *e[STATS_MAX_ENTRIES];
	struct timespec tick = {0, 1000000}, start, now;
	int n, err;
	long step, secs;
	unsigned long long total = 0, i;

	if (argc != 5 || (n = atoi(argv[2])) <= 0 || n > STATS_MAX_ENTRIES || (step = atol(argv[3])) < 0 ||
	    (secs = atol(argv[4])) < 0) {
		fprintf(stderr, "usage: stats_publisher COMM ENTRIES(1..%d) STEP SECONDS\n",
			STATS_MAX_ENTRIES);
		return 2;
	}
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	err = stats_segment_open(argv[1]);
	if (err) {
		fprintf(stderr, "stats_publisher: cannot create the stats segment: error %d\n", err);
		return 1;
	}
	for (int k = 0; k < n; k++) {
		char name[STATS_NAME_LEN];

		snprintf(name, sizeof(name), "stripe%d", k);
		e[k] = stats_entry_add(name, STATS_KIND_STRIPE, k);
	}
	printf("ready %s\n", stats_segment_path());
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (i = 1; !stop; i++) {
		for (int k = 0; k < n; k++) {
			stats_add(e[k], STATS_POSTED, (uint64_t)step);
			stats_add(e[k], STATS_COMPLETED, (uint64_t)step);
			stats_inc(e[k], STATS_POLLS);
			stats_ring_depth(e[k], i % 64);
			if (i % 1000 == 0)
				stats_wc_error(e[k], IBV_WC_WR_FLUSH_ERR);
			total += (unsigned long long)step;
		}
		nanosleep(&tick, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (secs && now.tv_sec - start.tv_sec >= secs)
			break;
	}
	printf("completed %llu\n", total);
	fflush(stdout);
	/* Block, test, sigsuspend: a SIGTERM between the test and the wait is not lost. */
	sigset_t block, old;

	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &old);
	while (!stop)
		sigsuspend(&old);
	return 0;
}
