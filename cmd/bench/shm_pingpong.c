/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * bench shm_pingpong: two processes bounce one cache line through shared
 * memory, each spinning on it until the other has written: the physical floor
 * of a two-process round trip on this host, against which ib_send_lat between
 * two processes on soft0 is measured (tests/perftest_bench.sh).  The line is an
 * anonymous shared mapping that the forked peer inherits: no file, so nothing
 * under /dev/shm for anyone else to open or for a crash to leave behind.
 *
 * The ball is a counter: this process writes an odd value, the peer answers
 * with the next even one.  Every wait has a deadline, and this process also
 * watches that the peer is still there.
 */
#include "cmd/bench/bench.h"
#include "cmd/bench/floor.h"
#include "cmd/cmd.h"
#include "cmd/print.h"
#include "core/util/clock.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PINGPONG_STOP	 UINT64_MAX /* odd: the peer's turn, and it ends */
#define PINGPONG_WARMUP	 1000	    /* untimed round trips: the first touches of the line, the wake-up */
#define PINGPONG_DEFAULT 100000	    /* round trips a round */
#define SPINS_PER_CHECK	 4096	    /* between looks at the clock, the peer and a signal */
#define PEER_CHECK_NS	 1000000ull /* a wait this long looks whether the peer has ended */

struct pingpong_line {
	_Alignas(64) _Atomic uint64_t ball;
};

/*
 * Spins until the ball is no longer from; returns it, or from on a deadline (errno ETIMEDOUT),
 * an interrupt (EINTR) or, with a peer, the peer's end (ESRCH).  After SPINS_PER_CHECK empty
 * looks it yields the CPU once, so a peer that shares this CPU gets to answer.
 */
static uint64_t wait_change(struct pingpong_line *l, uint64_t from, const struct floor_peer *peer)
{
	uint64_t v, start = 0, last_peer_check = 0;
	unsigned spins = 0;

	while ((v = atomic_load_explicit(&l->ball, memory_order_acquire)) == from) {
		if (++spins % SPINS_PER_CHECK)
			continue;
		uint64_t now = clock_ns();

		if (!start)
			start = last_peer_check = now;
		if (bench_interrupted)
			return errno = EINTR, from;
		if (now - start > FLOOR_PEER_TIMEOUT_MS * 1000000ull)
			return errno = ETIMEDOUT, from;
		if (peer && now - last_peer_check > PEER_CHECK_NS) {
			if (floor_peer_gone(peer))
				return errno = ESRCH, from;
			last_peer_check = now;
		}
		sched_yield();
	}
	return v;
}

/* The peer: answers every odd ball with the next value until the stop mark (or a deadline). */
static int pingpong_peer(void *arg, int fd)
{
	struct pingpong_line *l = arg;
	uint64_t last = 2;

	(void)fd;
	atomic_store_explicit(&l->ball, last, memory_order_release); /* ready */
	for (;;) {
		uint64_t v = wait_change(l, last, NULL);

		if (v == PINGPONG_STOP)
			return 0;
		if (v != last + 1)
			return 1; /* a deadline, or a ball out of turn */
		last = v + 1;
		atomic_store_explicit(&l->ball, last, memory_order_release);
	}
}

/*
 * A round: its round trips are timed in batches of BATCH, and its one-way time is the median
 * batch's, as perftest's t_typical is the median round trip's: on a busy machine the scheduler
 * takes one process or the other off its CPU now and then, and the batches it hits (a few
 * milliseconds each) would otherwise make the average, not the floor.  The average is kept too.
 */
#define BATCH	    16
#define MAX_BATCHES (1 << 16) /* kept for the median; a longer round keeps its last ones */

struct round {
	long done;	  /* round trips */
	uint64_t ns;	  /* all of them */
	double *batch_ns; /* MAX_BATCHES */
	long batches;
};

/* n round trips (or until seconds pass, when n is 0) from *ball, into r. */
static int bounce(struct pingpong_line *l, uint64_t *ball, long n, double seconds, const struct floor_peer *p,
		  struct round *r)
{
	uint64_t t0 = clock_ns(), end = seconds > 0 ? t0 + (uint64_t)(seconds * 1e9) : UINT64_MAX, tb = t0;
	long i;

	r->batches = 0;
	for (i = 0; n == 0 || i < n; i++) {
		if (bench_interrupted) /* a peer that always answers at once never makes wait_change look */
			return -EINTR;
		if (i % BATCH == 0 && i) {
			uint64_t now = clock_ns();

			if (r->batch_ns)
				r->batch_ns[r->batches++ % MAX_BATCHES] = (double)(now - tb);
			tb = now;
			if (now >= end)
				break;
		}
		atomic_store_explicit(&l->ball, *ball + 1, memory_order_release);
		uint64_t v = wait_change(l, *ball + 1, p);

		if (v != *ball + 2)
			return v == *ball + 1 ? -errno : -EPROTO;
		*ball += 2;
	}
	r->ns = clock_ns() - t0;
	r->done = i;
	return 0;
}

static const char *wait_problem(int rc)
{
	return rc == -ETIMEDOUT ? "the peer process did not answer within 10 s"
	       : rc == -ESRCH	? "the peer process ended"
				: "the peer process answered out of turn";
}

int bench_shm_pingpong(long iters, double duration, int rounds)
{
	struct pingpong_line *l =
	    mmap(NULL, sizeof(*l), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct floor_peer p;
	double one_way[FLOOR_MAX_ROUNDS], avg[FLOOR_MAX_ROUNDS];
	struct round rd = {.batch_ns = calloc(MAX_BATCHES, sizeof(double))};
	uint64_t ball = 2;
	int rc, n = 0, status = EXIT_OK;
	char what[160];

	if (l == MAP_FAILED || !rd.batch_ns) {
		free(rd.batch_ns);
		if (l != MAP_FAILED)
			munmap(l, sizeof(*l));
		return run_error("bench", "cannot map a shared page: %s", strerror(errno));
	}
	if (iters < 0)
		iters = duration > 0 ? 0 : PINGPONG_DEFAULT;
	rc = floor_peer_start(&p, pingpong_peer, l);
	if (rc) {
		munmap(l, sizeof(*l));
		free(rd.batch_ns);
		return run_error("bench", "cannot start the peer process: %s", strerror(-rc));
	}
	if (iters)
		snprintf(what, sizeof(what),
			 "one cache line bounced between two processes, %ld round trips a round", iters);
	else
		snprintf(what, sizeof(what), "one cache line bounced between two processes for %g s a round",
			 duration);
	floor_report_begin("shm_pingpong", what, "one-way[usec]  average one-way[usec]", sizeof(*l), rounds,
			   &p);
	/* The peer's first write says it runs; then the warm-up. */
	uint64_t first = wait_change(l, 0, &p);

	if (first == 0)
		rc = -errno;
	else if (first != 2)
		rc = -EPROTO;
	else
		rc = bounce(l, &ball, PINGPONG_WARMUP, 0, &p, &rd);
	for (int r = 0; !rc && r < rounds && !bench_interrupted; r++) {
		rc = bounce(l, &ball, iters, duration, &p, &rd);
		if (!rc && rd.done && rd.batches) {
			long kept = rd.batches < MAX_BATCHES ? rd.batches : MAX_BATCHES;

			one_way[n] = bench_median(rd.batch_ns, (int)kept) / 1e3 / BATCH / 2;
			avg[n] = (double)rd.ns / 1e3 / (double)rd.done / 2;
			floor_report_round(r + 1, rd.done, "one_way_us", " %-14.3f", one_way[n],
					   "one_way_avg_us", " %.3f", avg[n]);
			n++;
		}
	}
	if (rc && rc != -EINTR)
		status = run_error("bench", "%s", wait_problem(rc));
	atomic_store_explicit(&l->ball, PINGPONG_STOP, memory_order_release);
	if (floor_peer_finish(&p, status != EXIT_OK) && status == EXIT_OK && !bench_interrupted)
		status = run_error("bench", "the peer process failed");
	munmap(l, sizeof(*l));
	free(rd.batch_ns);
	return floor_report_end(status, "one_way_us", "one-way time in usec", one_way, n);
}
