/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * core's MR cache: the RDMATOOL_MR_CACHE_MAX bound, LRU eviction of idle
 * entries only, core_mr_dereg (idle and in flight), pinned core_mr_reg
 * registrations, and many threads writing from rotating buffers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "core/transport/endpoint.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

struct pair {
	struct core_ep *a, *b;
	uint32_t pa, pb;
	unsigned char *dst; /* b's target, pinned by core_mr_reg */
	size_t dst_len;
	uint32_t rkey;
};

static void open_pair_lock(struct pair *p, uint32_t cache_max, int stripes, bool progress_thread, size_t dst_len,
			   enum core_lock_mode lock)
{
	struct core_ep_attr attr;
	struct core_mr mr;
	char err[256];

	memset(p, 0, sizeof(*p));
	core_ep_attr_defaults(&attr);
	attr.device = "soft0";
	attr.env.tx_stripes = stripes;
	attr.env.progress_thread = progress_thread;
	attr.env.mr_cache_max = cache_max;
	attr.lock = lock;
	assert_int_equal(core_ep_open(&attr, &p->a, err, sizeof(err)), 0);
	assert_int_equal(core_ep_open(&attr, &p->b, err, sizeof(err)), 0);
	assert_int_equal(core_ep_connect_pair(p->a, p->b, &p->pa, &p->pb), 0);
	p->dst_len = dst_len;
	p->dst = calloc(1, dst_len);
	assert_non_null(p->dst);
	assert_int_equal(core_mr_reg(p->b, p->dst, dst_len, &mr), 0);
	p->rkey = mr.rkey;
}

static void open_pair(struct pair *p, uint32_t cache_max, int stripes, bool progress_thread, size_t dst_len)
{
	open_pair_lock(p, cache_max, stripes, progress_thread, dst_len, CORE_LOCK_STRIPED);
}

static void close_pair(struct pair *p)
{
	assert_int_equal(core_mr_dereg(p->b, p->dst, p->dst_len), 1);
	core_ep_close(p->a);
	core_ep_close(p->b);
	free(p->dst);
}

static struct core_mr_cache_stats stats_of(struct core_ep *ep)
{
	struct core_mr_cache_stats s;

	core_mr_cache_stats(ep, &s);
	return s;
}

/* One completion on a, which must be the given context's and successful. */
static void expect_done(struct core_ep *ep, void *context)
{
	struct core_cqe e;

	assert_int_equal(core_cq_sread(ep, &e, 1, 5000), 1);
	assert_ptr_equal(e.context, context);
	assert_int_equal(e.status, 0);
}

static void write_and_wait(struct pair *p, const void *buf, size_t len, size_t off, void *context)
{
	assert_int_equal(core_write(p->a, p->pa, buf, len, (uintptr_t)p->dst + off, p->rkey, context), 0);
	expect_done(p->a, context);
}

static void test_env(void **state)
{
	struct core_env env;
	char msg[256] = "";
	const char *bad[] = { "-1", "abc", "4097", "", "7x" };

	(void)state;
	core_env_defaults(&env);
	assert_int_equal(env.mr_cache_max, CORE_MR_CACHE_DEFAULT);
	setenv("RDMATOOL_MR_CACHE_MAX", "4", 1);
	assert_int_equal(core_env_read(&env, msg, sizeof(msg)), 0);
	assert_int_equal(env.mr_cache_max, 4);
	setenv("RDMATOOL_MR_CACHE_MAX", "0", 1);
	assert_int_equal(core_env_read(&env, msg, sizeof(msg)), 0);
	assert_int_equal(env.mr_cache_max, 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		msg[0] = 0;
		setenv("RDMATOOL_MR_CACHE_MAX", bad[i], 1);
		assert_int_equal(core_env_read(&env, msg, sizeof(msg)), -EINVAL);
		assert_non_null(strstr(msg, "RDMATOOL_MR_CACHE_MAX"));
		assert_non_null(strstr(msg, "4096"));
	}
	assert_int_equal(env.mr_cache_max, 0); /* a rejected value leaves the last good one */
	unsetenv("RDMATOOL_MR_CACHE_MAX");
}

/* 20 buffers through a cache of 4: never more than 4 held, every write lands, LRU order. */
static void test_bound_and_lru(void **state)
{
	enum { NBUF = 20, LEN = 4096 };
	unsigned char *src[NBUF + 1];
	struct core_mr_cache_stats s;
	struct pair p;

	(void)state;
	open_pair(&p, 4, 1, false, (size_t)(NBUF + 1) * LEN);
	for (int i = 0; i <= NBUF; i++) {
		src[i] = malloc(LEN);
		assert_non_null(src[i]);
		memset(src[i], 'a' + i, LEN);
	}
	for (int i = 0; i < NBUF; i++) {
		write_and_wait(&p, src[i], LEN, (size_t)i * LEN, src[i]);
		s = stats_of(p.a);
		assert_true(s.entries <= 4);
		assert_true(s.idle <= 4);
		assert_int_equal(s.in_flight, 0);
		assert_int_equal(s.misses, (uint64_t)i + 1);
		assert_int_equal(s.evictions, i < 4 ? 0 : (uint64_t)i - 3);
	}
	for (int i = 0; i < NBUF; i++)
		for (size_t k = 0; k < LEN; k++)
			assert_int_equal(p.dst[(size_t)i * LEN + k], 'a' + i);

	/* Held now: 16..19.  Touch 16, then a new buffer evicts the least recent: 17. */
	write_and_wait(&p, src[16], LEN, 0, src[16]);
	s = stats_of(p.a);
	assert_int_equal(s.misses, NBUF);
	assert_int_equal(s.hits, 1);
	write_and_wait(&p, src[NBUF], LEN, (size_t)NBUF * LEN, src[NBUF]);
	write_and_wait(&p, src[16], LEN, 0, src[16]);
	write_and_wait(&p, src[18], LEN, 0, src[18]);
	write_and_wait(&p, src[19], LEN, 0, src[19]);
	s = stats_of(p.a);
	assert_int_equal(s.misses, NBUF + 1);
	assert_int_equal(s.hits, 4);
	write_and_wait(&p, src[17], LEN, 0, src[17]);
	s = stats_of(p.a);
	assert_int_equal(s.misses, NBUF + 2);
	assert_int_equal(s.entries, 4);
	/* A sub-range of a cached buffer hits. */
	write_and_wait(&p, src[17] + 100, 200, 0, src[17]);
	assert_int_equal(stats_of(p.a).misses, NBUF + 2);

	close_pair(&p);
	for (int i = 0; i <= NBUF; i++)
		free(src[i]);
}

/* Outstanding writes from 8 buffers with a bound of 2: nothing in flight is evicted. */
static void test_in_flight_not_evicted(void **state)
{
	enum { NBUF = 8, PER = 4, LEN = 2048 };
	unsigned char *src[NBUF];
	int seen[NBUF * PER] = { 0 };
	struct core_mr_cache_stats s;
	struct core_cqe e[16];
	struct pair p;
	int done = 0;

	(void)state;
	/* Manual progress: no completion is processed before we read the CQ. */
	open_pair(&p, 2, 1, false, (size_t)NBUF * PER * LEN);
	for (int b = 0; b < NBUF; b++) {
		src[b] = malloc(LEN);
		assert_non_null(src[b]);
		memset(src[b], 0x10 + b, LEN);
	}
	for (int b = 0; b < NBUF; b++)
		for (int j = 0; j < PER; j++) {
			int id = b * PER + j;

			assert_int_equal(core_write(p.a, p.pa, src[b], LEN, (uintptr_t)p.dst + (size_t)id * LEN, p.rkey,
						    (void *)(uintptr_t)(id + 1)),
					 0);
		}
	s = stats_of(p.a);
	assert_int_equal(s.entries, NBUF);
	assert_int_equal(s.in_flight, NBUF);
	assert_int_equal(s.evictions, 0);
	assert_int_equal(s.misses, NBUF);
	assert_int_equal(s.hits, NBUF * (PER - 1));

	while (done < NBUF * PER) {
		int n = core_cq_sread(p.a, e, 16, 5000);

		assert_true(n > 0);
		for (int i = 0; i < n; i++) {
			int id = (int)(uintptr_t)e[i].context - 1;

			assert_int_equal(e[i].status, 0);
			assert_true(id >= 0 && id < NBUF * PER);
			seen[id]++;
		}
		done += n;
	}
	for (int id = 0; id < NBUF * PER; id++) {
		assert_int_equal(seen[id], 1);
		for (size_t k = 0; k < LEN; k++)
			assert_int_equal(p.dst[(size_t)id * LEN + k], 0x10 + id / PER);
	}
	s = stats_of(p.a);
	assert_true(s.entries <= 2);
	assert_int_equal(s.in_flight, 0);
	assert_int_equal(s.evictions, NBUF - 2);

	close_pair(&p);
	for (int b = 0; b < NBUF; b++)
		free(src[b]);
}

/* Freed and mapped again at the same address: after core_mr_dereg the write gets a new registration. */
static void test_dereg_then_same_address(void **state)
{
	const size_t len = 8192;
	struct core_mr_cache_stats s;
	unsigned char *buf, *again;
	struct pair p;

	(void)state;
	open_pair(&p, 4, 1, false, len);
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(buf != MAP_FAILED);
	memset(buf, 0x11, len);
	write_and_wait(&p, buf, len, 0, buf);
	write_and_wait(&p, buf, len, 0, buf);
	s = stats_of(p.a);
	assert_int_equal(s.misses, 1);
	assert_int_equal(s.hits, 1);
	assert_int_equal(s.entries, 1);

	assert_int_equal(core_mr_dereg(p.a, buf + 100, 1), 1); /* any overlap drops it */
	s = stats_of(p.a);
	assert_int_equal(s.entries, 0);
	assert_int_equal(s.drops, 1);
	assert_int_equal(core_mr_dereg(p.a, buf, len), 0);

	assert_int_equal(munmap(buf, len), 0);
	again = mmap(buf, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	assert_ptr_equal(again, buf);
	memset(again, 0x22, len);
	write_and_wait(&p, again, len, 0, again);
	s = stats_of(p.a);
	assert_int_equal(s.misses, 2);
	assert_int_equal(s.hits, 1);
	assert_int_equal(s.entries, 1);
	for (size_t k = 0; k < len; k++)
		assert_int_equal(p.dst[k], 0x22);
	assert_int_equal(core_mr_dereg(p.a, again, len), 1);
	assert_int_equal(munmap(again, len), 0);
	close_pair(&p);
}

/* Dropped while a write is in flight: never handed out again, gone once the write completes. */
static void test_dereg_in_flight(void **state)
{
	const size_t len = 4096;
	unsigned char *buf = malloc(len), *other = malloc(len);
	struct core_mr_cache_stats s;
	struct core_cqe e;
	struct pair p;
	int got = 0;

	(void)state;
	assert_non_null(buf);
	assert_non_null(other);
	memset(buf, 0x33, len);
	memset(other, 0x44, len);
	open_pair(&p, 4, 1, false, 2 * len);
	write_and_wait(&p, other, len, len, other); /* an idle bystander that must survive */
	assert_int_equal(core_write(p.a, p.pa, buf, len, (uintptr_t)p.dst, p.rkey, (void *)1), 0);
	assert_int_equal(core_mr_dereg(p.a, buf, len), 1);
	s = stats_of(p.a);
	assert_int_equal(s.entries, 2); /* the dropped one waits for its write */
	assert_int_equal(s.in_flight, 1);
	assert_int_equal(core_write(p.a, p.pa, buf, len, (uintptr_t)p.dst, p.rkey, (void *)2), 0);
	s = stats_of(p.a);
	assert_int_equal(s.misses, 3); /* other, buf, and buf again: the dropped entry was not reused */
	assert_int_equal(s.entries, 3);
	while (got < 2) {
		assert_int_equal(core_cq_sread(p.a, &e, 1, 5000), 1);
		assert_int_equal(e.status, 0);
		got++;
	}
	s = stats_of(p.a);
	assert_int_equal(s.entries, 2); /* other and the new registration of buf */
	assert_int_equal(s.in_flight, 0);
	assert_int_equal(s.idle, 2);
	for (size_t k = 0; k < len; k++)
		assert_int_equal(p.dst[k], 0x33);
	write_and_wait(&p, other, len, len, other);
	assert_int_equal(stats_of(p.a).misses, 3);
	close_pair(&p);
	free(buf);
	free(other);
}

/* Bound 0: nothing stays once idle.  core_mr_reg registrations are pinned and stay usable. */
static void test_zero_bound_and_pins(void **state)
{
	const size_t len = 1024;
	unsigned char *buf = malloc(len), *pinned = calloc(1, len), *back = malloc(len);
	struct core_mr_cache_stats s;
	struct core_mr mr;
	struct pair p;

	(void)state;
	assert_non_null(buf);
	assert_non_null(pinned);
	assert_non_null(back);
	memset(buf, 0x55, len);
	open_pair(&p, 0, 1, false, len);
	assert_int_equal(core_mr_reg(p.a, pinned, len, &mr), 0);
	for (int i = 0; i < 3; i++) {
		write_and_wait(&p, buf, len, 0, buf);
		s = stats_of(p.a);
		assert_int_equal(s.entries, 1); /* only the pinned one */
		assert_int_equal(s.pinned, 1);
		assert_int_equal(s.idle, 0);
	}
	assert_int_equal(s.misses, 4);
	assert_int_equal(s.evictions, 3);
	/* b writes into a's pinned buffer with its rkey, after all that churn. */
	memset(back, 0x66, len);
	assert_int_equal(core_write(p.b, p.pb, back, len, (uintptr_t)pinned, mr.rkey, back), 0);
	expect_done(p.b, back);
	for (size_t k = 0; k < len; k++)
		assert_int_equal(pinned[k], 0x66);
	assert_int_equal(core_mr_dereg(p.b, back, len), 0); /* b's own bound is 0 too: nothing left */
	assert_int_equal(core_mr_dereg(p.a, pinned, len), 1);
	assert_int_equal(stats_of(p.a).entries, 0);
	close_pair(&p);
	free(buf);
	free(pinned);
	free(back);
}

/* Threads writing from rotating buffers through a tiny cache: every completion exactly once. */
enum { MT_THREADS = 4, MT_BUFS = 3, MT_WRITES = 1500, MT_LEN = 512, MT_MAX = 2 };

struct mt {
	struct pair *p;
	unsigned char *shared; /* every thread also writes from this one */
	_Atomic int seen[MT_THREADS * MT_WRITES];
	_Atomic int completed, bad_status, bad_context, post_errors;
};

struct mt_thread {
	struct mt *mt;
	int index;
	unsigned char *bufs[MT_BUFS];
};

static size_t mt_region(int t, int b)
{
	return ((size_t)t * (MT_BUFS + 1) + (size_t)b) * MT_LEN;
}

static void mt_reap(struct mt *mt)
{
	struct core_cqe e[16];
	int n = core_cq_read(mt->p->a, e, 16);

	for (int i = 0; i < n; i++) {
		uintptr_t id = (uintptr_t)e[i].context - 1;

		if (e[i].status)
			atomic_fetch_add(&mt->bad_status, 1);
		if (id >= MT_THREADS * MT_WRITES)
			atomic_fetch_add(&mt->bad_context, 1);
		else
			atomic_fetch_add(&mt->seen[id], 1);
	}
	if (n > 0)
		atomic_fetch_add(&mt->completed, n);
}

static void *mt_main(void *arg)
{
	struct mt_thread *th = arg;
	struct mt *mt = th->mt;
	struct pair *p = mt->p;
	time_t deadline = time(NULL) + 30;

	for (int i = 0; i < MT_WRITES; i++) {
		int b = i % (MT_BUFS + 1); /* MT_BUFS: the shared buffer */
		const unsigned char *src = b == MT_BUFS ? mt->shared : th->bufs[b];
		uintptr_t id = (uintptr_t)th->index * MT_WRITES + (uintptr_t)i + 1;
		int rc;

		while ((rc = core_write(p->a, p->pa, src, MT_LEN, (uintptr_t)p->dst + mt_region(th->index, b), p->rkey,
					(void *)id)) == -EAGAIN &&
		       time(NULL) < deadline)
			mt_reap(mt);
		if (rc) {
			atomic_fetch_add(&mt->post_errors, 1);
			return NULL;
		}
		if (i % 8 == 0)
			mt_reap(mt);
	}
	while (atomic_load(&mt->completed) < MT_THREADS * MT_WRITES && time(NULL) < deadline)
		mt_reap(mt);
	return NULL;
}

static void run_threads(bool progress_thread, enum core_lock_mode lock)
{
	struct mt *mt = calloc(1, sizeof(*mt));
	struct mt_thread th[MT_THREADS];
	pthread_t tid[MT_THREADS];
	struct core_mr_cache_stats s;
	struct pair p;

	assert_non_null(mt);
	open_pair_lock(&p, MT_MAX, MT_THREADS / 2, progress_thread, mt_region(MT_THREADS, 0), lock);
	mt->p = &p;
	mt->shared = malloc(MT_LEN);
	assert_non_null(mt->shared);
	memset(mt->shared, 0xee, MT_LEN);
	for (int t = 0; t < MT_THREADS; t++) {
		th[t].mt = mt;
		th[t].index = t;
		for (int b = 0; b < MT_BUFS; b++) {
			th[t].bufs[b] = malloc(MT_LEN);
			assert_non_null(th[t].bufs[b]);
			memset(th[t].bufs[b], t * 16 + b + 1, MT_LEN);
		}
		assert_int_equal(pthread_create(&tid[t], NULL, mt_main, &th[t]), 0);
	}
	for (int t = 0; t < MT_THREADS; t++)
		pthread_join(tid[t], NULL);

	assert_int_equal(atomic_load(&mt->post_errors), 0);
	assert_int_equal(atomic_load(&mt->bad_status), 0);
	assert_int_equal(atomic_load(&mt->bad_context), 0);
	assert_int_equal(atomic_load(&mt->completed), MT_THREADS * MT_WRITES);
	for (int i = 0; i < MT_THREADS * MT_WRITES; i++)
		assert_int_equal(atomic_load(&mt->seen[i]), 1);
	for (int t = 0; t < MT_THREADS; t++)
		for (int b = 0; b <= MT_BUFS; b++)
			for (size_t k = 0; k < MT_LEN; k++)
				assert_int_equal(p.dst[mt_region(t, b) + k], b == MT_BUFS ? 0xee : t * 16 + b + 1);
	s = stats_of(p.a);
	assert_true(s.entries <= MT_MAX);
	assert_int_equal(s.in_flight, 0);
	assert_int_equal(s.hits + s.misses, MT_THREADS * MT_WRITES);
	assert_true(s.misses > MT_THREADS * MT_BUFS); /* the bound really churned the cache */

	close_pair(&p);
	for (int t = 0; t < MT_THREADS; t++)
		for (int b = 0; b < MT_BUFS; b++)
			free(th[t].bufs[b]);
	free(mt->shared);
	free(mt);
}

static void test_threads_manual(void **state)
{
	(void)state;
	run_threads(false, CORE_LOCK_STRIPED);
}

static void test_threads_progress_thread(void **state)
{
	(void)state;
	run_threads(true, CORE_LOCK_STRIPED);
}

/* The global-lock baseline: releases trim under the global lock, lookups take ctrl under it too. */
static void test_threads_global(void **state)
{
	(void)state;
	run_threads(true, CORE_LOCK_GLOBAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_env),
		cmocka_unit_test(test_bound_and_lru),
		cmocka_unit_test(test_in_flight_not_evicted),
		cmocka_unit_test(test_dereg_then_same_address),
		cmocka_unit_test(test_dereg_in_flight),
		cmocka_unit_test(test_zero_bound_and_pins),
		cmocka_unit_test(test_threads_manual),
		cmocka_unit_test(test_threads_progress_thread),
		cmocka_unit_test(test_threads_global),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
