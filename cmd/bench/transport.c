/* SPDX-License-Identifier: MIT */
/* bench latency / bandwidth / message-rate tests over core, both ends in one process. */
#include "bench.h"
#include "../../core/clock.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tctx {
	const struct bench_opts *o;
	const char *test;
	struct core_ep *a, *b;
	uint32_t pa, pb;
	char *src, *dst;
	struct core_mr dst_mr;
	_Atomic int stop;
	_Atomic long done;
	long per_thread;
};

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

static int reap(struct core_ep *ep, int want, int *errors)
{
	struct core_cqe e[32];
	int n = core_cq_read(ep, e, want < 32 ? want : 32);

	for (int i = 0; i < n; i++)
		if (e[i].status || e[i].err)
			(*errors)++;
	return n;
}

static int wait_n(struct core_ep *ep, int n, int *errors)
{
	uint64_t deadline = clock_ns() + 10000000000ull;

	while (n > 0) {
		n -= reap(ep, n, errors);
		if (clock_ns() > deadline)
			return -ETIMEDOUT;
	}
	return 0;
}

static int post_op(struct tctx *t, char *src, size_t len)
{
	const char *test = t->test;

	if (!strncmp(test, "send", 4) || !strcmp(test, "msg_rate"))
		return core_send(t->a, t->pa, src, len, NULL);
	if (!strncmp(test, "write", 5))
		return core_write(t->a, t->pa, src, len, (uintptr_t)t->dst, t->dst_mr.rkey, NULL);
	if (!strncmp(test, "read", 4))
		return core_read(t->a, t->pa, src, len, (uintptr_t)t->dst, t->dst_mr.rkey, NULL);
	static __thread uint64_t result;
	return core_fetch_add(t->a, t->pa, (uintptr_t)t->dst, t->dst_mr.rkey, 1, &result, NULL);
}

static int run_latency(struct tctx *t, struct bench_result *r)
{
	long n = t->o->iters;
	double *samples = malloc(sizeof(double) * (size_t)n);
	int errors = 0, rc = 0;
	bool two_sided = !strcmp(t->test, "send_lat");

	if (!samples)
		return -ENOMEM;
	for (long i = 0; i < n && !rc; i++) {
		uint64_t t0 = clock_ns();

		if (two_sided) {
			while (core_recv(t->b, t->dst, t->o->size, NULL) == -EAGAIN)
				core_cq_read(t->b, NULL, 0);
			while ((rc = core_send(t->a, t->pa, t->src, t->o->size, NULL)) == -EAGAIN)
				reap(t->a, 1, &errors);
			if (!rc && !(rc = wait_n(t->b, 1, &errors))) {
				core_recv(t->a, t->src, t->o->size, NULL);
				core_send(t->b, t->pb, t->dst, t->o->size, NULL);
				rc = wait_n(t->a, 2, &errors); /* our send + the pong */
				if (!rc)
					rc = wait_n(t->b, 1, &errors);
			}
		} else {
			while ((rc = post_op(t, t->src, t->o->size)) == -EAGAIN)
				reap(t->a, 1, &errors);
			if (!rc)
				rc = wait_n(t->a, 1, &errors);
		}
		/* Round trips are halved like perftest; reads and atomics are one round trip. */
		double us = (double)(clock_ns() - t0) / 1000.0;
		samples[i] = two_sided || !strncmp(t->test, "write", 5) ? us / 2 : us;
	}
	if (!rc && errors)
		rc = -EIO;
	if (!rc) {
		double sum = 0, sq = 0;

		qsort(samples, (size_t)n, sizeof(double), cmp_double);
		for (long i = 0; i < n; i++)
			sum += samples[i];
		r->t_avg = sum / (double)n;
		for (long i = 0; i < n; i++)
			sq += (samples[i] - r->t_avg) * (samples[i] - r->t_avg);
		r->t_min = samples[0];
		r->t_max = samples[n - 1];
		r->t_typical = samples[n / 2];
		r->t_stdev = sqrt(sq / (double)n);
		r->p99 = samples[(long)((double)(n - 1) * 0.99)];
		r->p999 = samples[(long)((double)(n - 1) * 0.999)];
		r->is_lat = 1;
	}
	free(samples);
	return rc;
}

static void *receiver(void *arg)
{
	struct tctx *t = arg;
	int errors = 0;

	while (!atomic_load(&t->stop)) {
		while (core_recv(t->b, t->dst, t->o->size, NULL) == 0)
			;
		reap(t->b, 32, &errors);
	}
	return NULL;
}

static void *sender(void *arg)
{
	struct tctx *t = arg;
	int errors = 0, outstanding = 0;
	long posted = 0, completed = 0;

	while (completed < t->per_thread) {
		if (posted < t->per_thread && outstanding < 64 && post_op(t, t->src, t->o->size) == 0) {
			posted++;
			outstanding++;
			continue;
		}
		int n = reap(t->a, 32, &errors);

		/* Completions land in one queue: whoever reads them counts them. */
		atomic_fetch_add(&t->done, n);
		completed = atomic_load(&t->done) / t->o->threads;
		outstanding -= n;
		if (outstanding < 0)
			outstanding = 0;
		if (atomic_load(&t->done) >= t->per_thread * t->o->threads)
			break;
	}
	return NULL;
}

static int run_bandwidth(struct tctx *t, struct bench_result *r)
{
	pthread_t rx, tx[64];
	bool two_sided = !strncmp(t->test, "send", 4) || !strcmp(t->test, "msg_rate");
	uint64_t t0;

	t->per_thread = t->o->iters;
	if (two_sided)
		pthread_create(&rx, NULL, receiver, t);
	t0 = clock_ns();
	for (int i = 0; i < t->o->threads; i++)
		pthread_create(&tx[i], NULL, sender, t);
	for (int i = 0; i < t->o->threads; i++)
		pthread_join(tx[i], NULL);
	double secs = (double)(clock_ns() - t0) / 1e9;

	atomic_store(&t->stop, 1);
	if (two_sided)
		pthread_join(rx, NULL);
	long total = atomic_load(&t->done);

	r->msg_rate = (double)total / secs / 1e6;
	r->bw_avg = (double)total * (double)t->o->size / secs / (1024.0 * 1024.0);
	r->bw_peak = r->bw_avg;
	r->iters = total;
	return 0;
}

int bench_transport(const char *test, const struct bench_opts *o, struct bench_result *r, char *err, size_t errlen)
{
	struct tctx t = { .o = o, .test = test };
	struct core_ep_attr attr;
	size_t buf_len = o->size < 8 ? 8 : o->size;
	int rc;

	core_ep_attr_defaults(&attr);
	attr.device = o->device;
	attr.lock = o->lock;
	attr.env.tx_stripes = o->stripes;
	attr.env.progress_thread = o->progress_thread;
	memset(r, 0, sizeof(*r));
	r->size = o->size;
	r->iters = o->iters;
	if ((rc = core_ep_open(&attr, &t.a, err, errlen)) || (rc = core_ep_open(&attr, &t.b, err, errlen)))
		goto out;
	if ((rc = core_ep_connect_pair(t.a, t.b, &t.pa, &t.pb))) {
		snprintf(err, errlen, "cannot connect the two endpoints: %s", strerror(-rc));
		goto out;
	}
	t.src = aligned_alloc(4096, (buf_len + 4095) & ~(size_t)4095);
	t.dst = aligned_alloc(4096, (buf_len + 4095) & ~(size_t)4095);
	if (!t.src || !t.dst) {
		rc = -ENOMEM;
		goto out;
	}
	memset(t.src, 1, buf_len);
	memset(t.dst, 0, buf_len);
	if ((rc = core_mr_reg(t.b, t.dst, buf_len, &t.dst_mr))) {
		snprintf(err, errlen, "cannot register memory: %s", strerror(-rc));
		goto out;
	}
	rc = strstr(test, "_lat") ? run_latency(&t, r) : run_bandwidth(&t, r);
	if (rc)
		snprintf(err, errlen, "%s failed: %s", test, strerror(-rc));
out:
	core_ep_close(t.a);
	core_ep_close(t.b);
	free(t.src);
	free(t.dst);
	return rc;
}
