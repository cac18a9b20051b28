/* SPDX-License-Identifier: MIT */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sread_timeout_sleeps),
		cmocka_unit_test(test_sread_wakes_on_completion),
		cmocka_unit_test(test_sread_wakes_on_posted_recv),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
