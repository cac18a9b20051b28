/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* core: manual-progress cq_sread sleeps on the completion channel instead of spinning. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "core/transport/endpoint.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

static uint64_t ns_of(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct pair {
	struct core_ep *a, *b;
	uint32_t pa, pb;
};

static void open_manual_pair(struct pair *p)
{
	struct core_ep_attr attr;
	char err[256];

	core_ep_attr_defaults(&attr);
	attr.device = "soft0";
	attr.env.tx_stripes = 2;
	attr.env.progress_thread = false;
	attr.eager_max = 256;
	assert_int_equal(core_ep_open(&attr, &p->a, err, sizeof(err)), 0);
	assert_int_equal(core_ep_open(&attr, &p->b, err, sizeof(err)), 0);
	assert_int_equal(core_ep_connect_pair(p->a, p->b, &p->pa, &p->pb), 0);
}

static void close_pair(struct pair *p)
{
	core_ep_close(p->a);
	core_ep_close(p->b);
}

/* Nothing pending: -ETIMEDOUT after the timeout, and the wait is spent asleep. */
static void test_sread_timeout_sleeps(void **state)
{
	struct pair p;
	struct core_cqe e;
	uint64_t wall0, cpu0, wall, cpu;

	(void)state;
	open_manual_pair(&p);
	wall0 = ns_of(CLOCK_MONOTONIC);
	cpu0 = ns_of(CLOCK_THREAD_CPUTIME_ID);
	assert_int_equal(core_cq_sread(p.b, &e, 1, 300), -ETIMEDOUT);
	cpu = ns_of(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	wall = ns_of(CLOCK_MONOTONIC) - wall0;
	assert_true(wall >= 300000000ull);
	/* A spinning reader uses about all of it; a sleeping one next to nothing. */
	assert_true(cpu < wall / 2);
	close_pair(&p);
}

struct sleeper {
	struct core_ep *ep;
	int rc;
	struct core_cqe e;
	uint64_t woke_ns;
};

static void *sleeper_main(void *arg)
{
	struct sleeper *s = arg;

	s->rc = core_cq_sread(s->ep, &s->e, 1, 5000);
	s->woke_ns = ns_of(CLOCK_MONOTONIC);
	return NULL;
}

/* A message arriving while the reader sleeps wakes it long before its timeout, once. */
static void test_sread_wakes_on_completion(void **state)
{
	struct pair p;
	struct sleeper s = { 0 };
	struct core_cqe e;
	char rbuf[64] = "";
	pthread_t tid;
	uint64_t start;

	(void)state;
	open_manual_pair(&p);
	assert_int_equal(core_recv(p.b, rbuf, sizeof(rbuf), (void *)7), 0);
	s.ep = p.b;
	start = ns_of(CLOCK_MONOTONIC);
	assert_int_equal(pthread_create(&tid, NULL, sleeper_main, &s), 0);
	/* Give the reader time to go to sleep (the test holds without it, it just tests less). */
	struct timespec nap = { .tv_nsec = 100000000 };

	nanosleep(&nap, NULL);
	assert_int_equal(core_send(p.a, p.pa, "wake", 5, (void *)8), 0);
	assert_int_equal(core_cq_sread(p.a, &e, 1, 5000), 1);
	assert_ptr_equal(e.context, (void *)8);
	assert_int_equal(e.status, 0);
	assert_int_equal(pthread_join(tid, NULL), 0);
	assert_int_equal(s.rc, 1);
	assert_ptr_equal(s.e.context, (void *)7);
	assert_int_equal(s.e.status, 0);
	assert_int_equal(s.e.len, 5);
	assert_string_equal(rbuf, "wake");
	/* Woken by the completion, not by the 5 s timeout. */
	assert_true(s.woke_ns - start < 4000000000ull);
	/* Returned exactly once: nothing is left for a second read. */
	assert_int_equal(core_cq_sread(p.b, &e, 1, 50), -ETIMEDOUT);
	assert_int_equal(core_cq_sread(p.a, &e, 1, 50), -ETIMEDOUT);
	close_pair(&p);
}

/* A receive posted by another thread matches a message that already arrived and wakes the reader. */
static void test_sread_wakes_on_posted_recv(void **state)
{
	struct pair p;
	struct sleeper s = { 0 };
	struct core_cqe e;
	char rbuf[64] = "";
	pthread_t tid;
	uint64_t start;

	(void)state;
	open_manual_pair(&p);
	assert_int_equal(core_tsend(p.a, p.pa, "early", 6, 0x42, (void *)8), 0);
	assert_int_equal(core_cq_sread(p.a, &e, 1, 5000), 1);
	/* Let b take the message in as unexpected. */
	assert_int_equal(core_cq_sread(p.b, &e, 1, 100), -ETIMEDOUT);
	s.ep = p.b;
	start = ns_of(CLOCK_MONOTONIC);
	assert_int_equal(pthread_create(&tid, NULL, sleeper_main, &s), 0);
	struct timespec nap = { .tv_nsec = 100000000 };

	nanosleep(&nap, NULL);
	assert_int_equal(core_trecv(p.b, rbuf, sizeof(rbuf), 0x42, 0, (void *)9), 0);
	assert_int_equal(pthread_join(tid, NULL), 0);
	assert_int_equal(s.rc, 1);
	assert_ptr_equal(s.e.context, (void *)9);
	assert_int_equal(s.e.len, 6);
	assert_string_equal(rbuf, "early");
	assert_true(s.woke_ns - start < 4000000000ull);
	assert_int_equal(core_cq_sread(p.b, &e, 1, 50), -ETIMEDOUT);
	close_pair(&p);
}

#define OTHER_STRIPE_SENDS 8

struct stripe_poster {
	struct pair *p;
	int stripe, base;
};

/* Posts OTHER_STRIPE_SENDS sends on its stripe, contexts base.., and leaves: nobody polls that stripe for it. */
static void *post_on_stripe(void *arg)
{
	struct stripe_poster *sp = arg;

	core_thread_set_stripe(sp->stripe);
	for (int i = 0; i < OTHER_STRIPE_SENDS; i++)
		if (core_send(sp->p->a, sp->p->pa, "x", 2, (void *)(uintptr_t)(sp->base + i)))
			return (void *)1;
	return NULL;
}

static void post_from_other_stripe(struct pair *p, int base, char (*rbuf)[8])
{
	struct stripe_poster sp = { .p = p, .stripe = 1, .base = base };
	pthread_t tid;
	void *rc;

	for (int i = 0; i < OTHER_STRIPE_SENDS; i++)
		assert_int_equal(core_recv(p->b, rbuf[i], sizeof(rbuf[i]), NULL), 0);
	assert_int_equal(pthread_create(&tid, NULL, post_on_stripe, &sp), 0);
	assert_int_equal(pthread_join(tid, &rc), 0);
	assert_null(rc);
}

/* Each context base..base+OTHER_STRIPE_SENDS-1 exactly once, successful. */
static void check_contexts(const struct core_cqe *e, int n, int base)
{
	unsigned char seen[OTHER_STRIPE_SENDS] = { 0 };

	for (int i = 0; i < n; i++) {
		uintptr_t c = (uintptr_t)e[i].context - (uintptr_t)base;

		assert_int_equal(e[i].status, 0);
		assert_true(c < OTHER_STRIPE_SENDS);
		assert_int_equal(seen[c], 0);
		seen[c] = 1;
	}
}

/*
 * A thread that posts on stripe 0 mostly drains only its own stripe's CQ;
 * the completions of stripe 1, whose thread is gone, still reach it when it
 * keeps polling.
 */
static void test_other_stripe_drained_by_poller(void **state)
{
	struct pair p;
	struct core_cqe e[OTHER_STRIPE_SENDS] = { 0 };
	char rbuf[OTHER_STRIPE_SENDS][8];
	uint64_t deadline;
	int got = 0;

	(void)state;
	open_manual_pair(&p);
	core_thread_set_stripe(0);
	post_from_other_stripe(&p, 100, rbuf);
	deadline = ns_of(CLOCK_MONOTONIC) + 5000000000ull;
	while (got < OTHER_STRIPE_SENDS && ns_of(CLOCK_MONOTONIC) < deadline)
		got += core_cq_read(p.a, e + got, OTHER_STRIPE_SENDS - got);
	assert_int_equal(got, OTHER_STRIPE_SENDS);
	check_contexts(e, got, 100);
	core_thread_set_stripe(-1);
	close_pair(&p);
}

/*
 * The same completions, already in stripe 1's CQ when a stripe-0 thread goes
 * to sleep in sread: arming raises no event for them, so they must be
 * drained before the sleep, not after the timeout.
 */
static void test_other_stripe_drained_before_sleep(void **state)
{
	struct pair p;
	struct core_cqe e[OTHER_STRIPE_SENDS] = { 0 };
	char rbuf[OTHER_STRIPE_SENDS][8];
	struct timespec nap = { .tv_nsec = 50000000 };
	uint64_t start;
	int got = 0;

	(void)state;
	open_manual_pair(&p);
	core_thread_set_stripe(0);
	post_from_other_stripe(&p, 200, rbuf);
	nanosleep(&nap, NULL); /* the device completes them meanwhile (the test holds without it) */
	start = ns_of(CLOCK_MONOTONIC);
	while (got < OTHER_STRIPE_SENDS) {
		int n = core_cq_sread(p.a, e + got, OTHER_STRIPE_SENDS - got, 3000);

		assert_true(n > 0);
		got += n;
	}
	check_contexts(e, got, 200);
	/* Well within one timeout: a missed completion would cost the whole 3 s. */
	assert_true(ns_of(CLOCK_MONOTONIC) - start < 2000000000ull);
	core_thread_set_stripe(-1);
	close_pair(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sread_timeout_sleeps),
		cmocka_unit_test(test_sread_wakes_on_completion),
		cmocka_unit_test(test_sread_wakes_on_posted_recv),
		cmocka_unit_test(test_other_stripe_drained_by_poller),
		cmocka_unit_test(test_other_stripe_drained_before_sleep),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
