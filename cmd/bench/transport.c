/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * bench latency / bandwidth / message-rate tests over core.  The measuring
 * side (endpoint a) is the same whether the far end (b) lives in this
 * process or in a server: a's completions land in one queue that every
 * sending thread reads, so each post carries its thread's counters as the
 * completion context and whoever reads a completion credits the thread
 * that posted it.
 */
#include "cmd/bench/bench.h"
#include "cmd/bench/pin.h"
#include "cmd/cmd.h"
#include "core/util/clock.h"
#include "core/oob/oob.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW	       128	      /* operations in flight per sender: perftest's tx depth */
#define DRAIN_NS       10000000000ull /* a completion later than this is a transport hang */
#define PEAK_WINDOW_NS 10000000ull    /* BW peak: the best 10 ms */
#define WARMUP_OPS     WINDOW	      /* untimed operations before a sender's clock starts */
#define RECV_CTX       ((void *)1)
#define SEND_CTX       ((void *)2)

struct tstate {
	_Alignas(64) _Atomic long outstanding;
	_Atomic long completed;
	_Atomic long errors;
	uint64_t first_post_ns, done_ns; /* the sender's own, read after it is joined */
};

/*
 * The first error completion of a run: once a QP is in ERR every later post
 * fails with ECONNRESET, which says nothing of why, so the report names this
 * one.  first packs seen(bit 63), receive(bit 62), status(bits 32..61), err.
 */
struct cq_failure {
	_Atomic long count;
	_Atomic uint64_t first;
};

struct run {
	const char *test;
	const struct bench_opts *o;
	struct bench_link *l;
	int cpu[2]; /* with several senders, sender i runs on cpu[i % 2] (-1: not pinned) */
	_Atomic int stop;
	_Atomic int finished;
	_Atomic int failed; /* a negative errno */
	struct cq_failure fail;
	struct tstate ts[64];
};

struct sender_arg {
	struct run *run;
	struct tstate *ts;
};

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

static void note_failure(struct cq_failure *f, const struct core_cqe *e)
{
	uint64_t none = 0, packed = 1ull << 63 | (uint64_t)(e->context == RECV_CTX) << 62 |
				    (uint64_t)(e->status & 0x3fffffff) << 32 | (uint32_t)e->err;

	atomic_fetch_add_explicit(&f->count, 1, memory_order_relaxed);
	atomic_compare_exchange_strong(&f->first, &none, packed);
}

bool bench_two_sided(const char *test)
{
	return !strncmp(test, "send", 4) || !strcmp(test, "msg_rate");
}

/* The opcode a test posts, as post_op() chooses it. */
static const char *test_opcode(const char *test)
{
	return bench_two_sided(test)	    ? "SEND"
	       : !strncmp(test, "write", 5) ? "RDMA WRITE"
	       : !strncmp(test, "read", 4)  ? "RDMA READ"
					    : "ATOMIC FETCH_ADD";
}

/* "a RDMA WRITE completed with status remote operation error (11)", or "" if no completion failed. */
static void describe_failure(const struct run *run, char *out, size_t outlen)
{
	uint64_t first = atomic_load(&((struct run *)run)->fail.first);
	uint32_t status = (uint32_t)(first >> 32) & 0x3fffffff;
	int32_t err = (int32_t)(uint32_t)first;

	if (!first) {
		*out = 0;
		return;
	}
	if (status)
		snprintf(out, outlen, "%s completed with status '%s' (%u)",
			 first >> 62 & 1 ? "a RECV" : test_opcode(run->test),
			 ibv_wc_status_str((enum ibv_wc_status)status), status);
	else
		snprintf(out, outlen, "%s completed with error '%s'",
			 first >> 62 & 1 ? "a RECV" : test_opcode(run->test), strerror(-err));
}

/* Reads completions and credits each to the thread that posted it; returns the count. */
static int reap(struct core_ep *ep, int max, struct cq_failure *fail)
{
	struct core_cqe e[32];
	int n = core_cq_read(ep, e, max < 32 ? max : 32);

	for (int i = 0; i < n; i++) {
		bool bad = e[i].status || e[i].err;
		struct tstate *ts = e[i].context;

		if (bad && fail)
			note_failure(fail, &e[i]);
		if (!ts || ts == RECV_CTX || ts == SEND_CTX)
			continue;
		if (bad)
			atomic_fetch_add_explicit(&ts->errors, 1, memory_order_relaxed);
		else
			atomic_fetch_add_explicit(&ts->completed, 1, memory_order_relaxed);
		atomic_fetch_sub_explicit(&ts->outstanding, 1, memory_order_release);
	}
	return n;
}

/* Waits for n completions on ep; -ETIMEDOUT means the transport lost one. */
static int wait_n(struct core_ep *ep, int n, struct cq_failure *errors)
{
	uint64_t deadline = clock_ns() + DRAIN_NS;

	while (n > 0) {
		n -= reap(ep, n, errors);
		if (n > 0 && clock_ns() > deadline)
			return -ETIMEDOUT;
	}
	return 0;
}

static int post_op(struct run *run, void *context)
{
	struct bench_link *l = run->l;
	const char *test = run->test;
	size_t len = run->o->size;
	static __thread uint64_t result;

	if (bench_two_sided(test))
		return core_send(l->a, l->pa, l->src, len, context);
	if (!strncmp(test, "write", 5))
		return core_write(l->a, l->pa, l->src, len, l->raddr, l->rkey, context);
	if (!strncmp(test, "read", 4))
		return core_read(l->a, l->pa, l->src, len, l->raddr, l->rkey, context);
	return core_fetch_add(l->a, l->pa, l->raddr, l->rkey, 1, &result, context);
}

struct bench_device bench_device;

void bench_ep_path(struct core_ep_attr *attr, const struct bench_opts *o)
{
	attr->port = o->port;
	attr->gid_index = o->gid_index;
	attr->sl = o->sl;
	attr->mtu = o->mtu;
}

/*
 * Says once which device the measurements run on: in the report, as
 * perftest's header does (and walk's), or, for a server, which has none, on
 * stderr.
 */
void bench_announce_device(const struct core_ep *ep)
{
	if (*bench_device.name)
		return;
	snprintf(bench_device.name, sizeof(bench_device.name), "%s", core_ep_device_name(ep));
	snprintf(bench_device.provider, sizeof(bench_device.provider), "%s", core_ep_provider_name(ep));
	if (bench_device.in_report)
		return;
	if (progress_wanted())
		fputs("\r\033[K", stderr); /* not glued onto the progress line */
	notice("bench", "device %s (%s)", bench_device.name, bench_device.provider);
}

void bench_stats_latency(double *samples, long n, struct bench_result *r)
{
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
	r->iters = n;
	r->is_lat = 1;
}

/*
 * Waits for the in-process far end's receive while reaping a's queue too: a
 * SEND the far end refused fails on a's side, and b would then wait forever.
 */
static int wait_far_receive(struct bench_link *l, struct cq_failure *errors, int *a_done)
{
	uint64_t deadline = clock_ns() + DRAIN_NS;

	for (;;) {
		if (reap(l->b, 1, errors))
			return 0;
		*a_done += reap(l->a, 2 - *a_done, errors);
		if (atomic_load_explicit(&errors->count, memory_order_relaxed))
			return -EIO;
		if (clock_ns() > deadline)
			return -ETIMEDOUT;
	}
}

/* One ping-pong: the in-process far end answers inline, a server answers by itself. */
static int ping_pong(struct run *run, bool last, struct cq_failure *errors)
{
	struct bench_link *l = run->l;
	size_t len = run->o->size;
	int rc, a_done = 0;

	l->src[0] = last;
	if (l->b) {
		while ((rc = core_recv(l->b, l->dst, len, RECV_CTX)) == -EAGAIN)
			reap(l->b, 1, errors);
		if (rc)
			return rc;
	}
	while ((rc = core_recv(l->a, l->dst, len, RECV_CTX)) == -EAGAIN)
		reap(l->a, 1, errors);
	if (rc)
		return rc;
	while ((rc = core_send(l->a, l->pa, l->src, len, SEND_CTX)) == -EAGAIN)
		reap(l->a, 1, errors);
	if (rc)
		return rc;
	if (l->b) {
		if ((rc = wait_far_receive(l, errors, &a_done)))
			return rc;
		while ((rc = core_send(l->b, l->pb, l->dst, len, SEND_CTX)) == -EAGAIN)
			reap(l->b, 1, errors);
		if (rc || (rc = wait_n(l->b, 1, errors)))
			return rc;
	}
	return wait_n(l->a, 2 - a_done, errors); /* our send + the pong */
}

static int run_latency(struct run *run, struct bench_result *r)
{
	const struct bench_opts *o = run->o;
	long cap = o->iters ? o->iters : 1l << 22, n = 0;
	struct cq_failure *errors = &run->fail;
	bool two_sided = !strcmp(run->test, "send_lat");
	uint64_t end = o->duration > 0 ? clock_ns() + (uint64_t)(o->duration * 1e9) : UINT64_MAX;
	double *samples = malloc(sizeof(double) * (size_t)cap);
	int rc = 0;

	if (!samples)
		return -ENOMEM;
	while (n < cap && !rc) {
		bool last = n + 1 == cap || clock_ns() >= end || bench_interrupted;
		uint64_t t0 = clock_ns();

		if (two_sided) {
			rc = ping_pong(run, last, errors);
		} else {
			while ((rc = post_op(run, SEND_CTX)) == -EAGAIN)
				reap(run->l->a, 1, errors);
			if (!rc)
				rc = wait_n(run->l->a, 1, errors);
		}
		/* Round trips are halved like perftest; reads and atomics are one round trip. */
		double us = (double)(clock_ns() - t0) / 1000.0;

		samples[n++] = two_sided || !strncmp(run->test, "write", 5) ? us / 2 : us;
		if (last)
			break;
	}
	if (!rc && atomic_load(&errors->count))
		rc = -EIO;
	if (!rc)
		bench_stats_latency(samples, n, r);
	free(samples);
	return rc;
}

/*
 * Posts `count` operations (0: until the run stops), at most WINDOW in flight;
 * 0 or a negative errno.  At least one, even when the run stopped before this
 * thread began (a short -D on a slow machine): a result measures something.
 */
static int post_stream(struct run *run, struct tstate *ts, long count)
{
	long posted = 0;

	while ((!posted || !atomic_load_explicit(&run->stop, memory_order_relaxed)) &&
	       (!count || posted < count)) {
		if (atomic_load_explicit(&ts->outstanding, memory_order_acquire) < WINDOW) {
			int rc;

			atomic_fetch_add_explicit(&ts->outstanding, 1, memory_order_relaxed);
			rc = post_op(run, ts);
			if (rc == 0) {
				posted++;
				continue;
			}
			atomic_fetch_sub_explicit(&ts->outstanding, 1, memory_order_relaxed);
			if (rc != -EAGAIN)
				return rc;
		}
		reap(run->l->a, 32, &run->fail);
	}
	return 0;
}

/* Reaps until none of the sender's operations is in flight; -ETIMEDOUT after DRAIN_NS. */
static int drain_sender(struct run *run, struct tstate *ts)
{
	uint64_t deadline = clock_ns() + DRAIN_NS;

	while (atomic_load_explicit(&ts->outstanding, memory_order_acquire) > 0) {
		reap(run->l->a, 32, &run->fail);
		if (clock_ns() > deadline)
			return -ETIMEDOUT;
	}
	return 0;
}

/*
 * A sender's first WARMUP_OPS operations, untimed and uncounted, as osu_bw
 * skips its first iterations: they pay one-time costs (the MR cache's first
 * registration of the buffer, the far end's first buffers and READs) that are
 * not bandwidth.  perftest registers and connects before its clock starts too.
 */
static int warm_up(struct run *run, struct tstate *ts)
{
	int rc = post_stream(run, ts, WARMUP_OPS);

	if (!rc)
		rc = drain_sender(run, ts);
	/* Nothing of this thread is in flight: no reader credits it now. */
	atomic_store_explicit(&ts->completed, 0, memory_order_relaxed);
	return rc;
}

static void *sender(void *arg)
{
	struct sender_arg *sa = arg;
	struct run *run = sa->run;
	struct tstate *ts = sa->ts;
	int rc;

	core_thread_set_stripe((int)(ts - run->ts));
	if (run->cpu[0] >= 0)
		bench_pin_to(run->cpu[(ts - run->ts) % 2]);
	rc = warm_up(run, ts);
	ts->first_post_ns = clock_ns();
	if (!rc)
		rc = post_stream(run, ts, run->o->iters);
	if (drain_sender(run, ts))
		rc = -ETIMEDOUT;
	ts->done_ns = clock_ns();
	if (!rc && atomic_load(&ts->errors))
		rc = -EIO;
	if (rc)
		atomic_store(&run->failed, rc);
	atomic_fetch_add(&run->finished, 1);
	return NULL;
}

struct rx_arg {
	struct core_ep *ep;
	char *buf;
	size_t len;
	_Atomic int *stop;
};

static void *receiver(void *arg)
{
	struct rx_arg *ra = arg;

	bench_serve_receives(ra->ep, ra->buf, ra->len, ra->stop, NULL);
	return NULL;
}

int bench_serve_receives(struct core_ep *ep, char *buf, size_t len, _Atomic int *stop, struct oob_conn *oob)
{
	unsigned spins = 0;

	for (;;) {
		if (stop && atomic_load(stop))
			return 0;
		if (oob && ++spins % 1024 == 0) {
			struct pollfd p = {.fd = oob_conn_fd(oob), .events = POLLIN};

			if (poll(&p, 1, 0) > 0)
				return 0; /* the client's next control message: it is done */
		}
		while (core_recv(ep, buf, len, RECV_CTX) == 0)
			;
		reap(ep, 32, NULL);
	}
}

/*
 * The target's NIC serves READ, WRITE and atomics without the application, as
 * perftest's server lets it: polling here would only take a core from the two
 * NICs on a small machine.
 */
int bench_serve_passive(struct oob_conn *oob)
{
	struct pollfd p = {.fd = oob_conn_fd(oob), .events = POLLIN};

	for (;;) {
		int rc = poll(&p, 1, 250);

		if (rc > 0)
			return 0;
		if (rc < 0 && errno != EINTR)
			return -errno;
		if (bench_interrupted)
			return -EINTR;
	}
}

/*
 * Busy-polls for one completion, as perftest does by default: a latency test
 * must not pay a wake-up per message, which core_cq_sread (it sleeps) would add.
 */
static int poll_one(struct core_ep *ep, struct core_cqe *e, int timeout_ms)
{
	uint64_t deadline = clock_ns() + (uint64_t)timeout_ms * 1000000ull;

	for (unsigned spins = 0;; spins++) {
		int rc = core_cq_read(ep, e, 1);

		if (rc)
			return rc;
		if ((spins & 1023) == 1023 && clock_ns() >= deadline)
			return -ETIMEDOUT;
	}
}

int bench_serve_pong(struct core_ep *ep, uint32_t peer, char *buf, size_t len)
{
	for (;;) {
		struct core_cqe e;
		int rc;

		while ((rc = core_recv(ep, buf, len, RECV_CTX)) == -EAGAIN)
			core_cq_read(ep, &e, 1);
		if (rc)
			return rc;
		for (;;) {
			rc = poll_one(ep, &e, 30000);
			if (rc < 0)
				return rc;
			if (e.status || e.err)
				return -EIO;
			if (e.context == RECV_CTX)
				break;
		}
		while ((rc = core_send(ep, peer, buf, len, SEND_CTX)) == -EAGAIN)
			core_cq_read(ep, &e, 1);
		if (rc)
			return rc;
		if (buf[0]) {
			rc = poll_one(ep, &e, 30000);
			return rc < 0 ? rc : e.status || e.err ? -EIO : 0;
		}
	}
}

static long total_completed(struct run *run)
{
	long t = 0;

	for (int i = 0; i < run->o->threads; i++)
		t += atomic_load_explicit(&run->ts[i].completed, memory_order_relaxed);
	return t;
}

/* From the first post to the last completion of any sender, as perftest times its bandwidth. */
static double sending_seconds(const struct run *run, int started, uint64_t t0)
{
	uint64_t first = UINT64_MAX, last = 0;

	for (int i = 0; i < started; i++) {
		first = run->ts[i].first_post_ns < first ? run->ts[i].first_post_ns : first;
		last = run->ts[i].done_ns > last ? run->ts[i].done_ns : last;
	}
	if (!started || last <= first)
		return (double)(clock_ns() - t0) / 1e9;
	return (double)(last - first) / 1e9;
}

static int run_bandwidth(struct run *run, struct bench_result *r)
{
	const struct bench_opts *o = run->o;
	struct bench_link *l = run->l;
	pthread_t rx, tx[64];
	struct sender_arg sa[64];
	_Atomic int stop_rx = 0;
	struct rx_arg ra = {.ep = l->b, .buf = l->dst, .len = o->size, .stop = &stop_rx};
	bool rx_thread = bench_two_sided(run->test) && l->b;
	uint64_t t0, last_t, end;
	long last_n = 0;
	double peak = 0;
	int started = 0;

	/*
	 * Several senders each get a CPU of their own, as message-rate tests bind
	 * one thread per core: left to the scheduler, two that poll without
	 * yielding sometimes share one and take turns by time slice, which says
	 * nothing of the transport.  Striped and global runs are placed alike.
	 */
	if (o->threads < 2 || !bench_two_cpus(run->cpu))
		run->cpu[0] = run->cpu[1] = -1;
	if (rx_thread && pthread_create(&rx, NULL, receiver, &ra))
		return -EAGAIN;
	t0 = last_t = clock_ns();
	end = o->duration > 0 ? t0 + (uint64_t)(o->duration * 1e9) : UINT64_MAX;
	for (; started < o->threads; started++) {
		sa[started] = (struct sender_arg){.run = run, .ts = &run->ts[started]};
		if (pthread_create(&tx[started], NULL, sender, &sa[started]))
			break;
	}
	if (started < o->threads)
		atomic_store(&run->stop, 1);
	while (atomic_load(&run->finished) < started) {
		struct timespec ts = {0, 2000000};
		uint64_t now;

		nanosleep(&ts, NULL);
		now = clock_ns();
		if (now >= end || bench_interrupted)
			atomic_store(&run->stop, 1);
		if (now - last_t >= PEAK_WINDOW_NS) {
			long n = total_completed(run);
			double rate = (double)(n - last_n) / ((double)(now - last_t) / 1e9);

			peak = rate > peak ? rate : peak;
			last_n = n;
			last_t = now;
		}
	}
	for (int i = 0; i < started; i++)
		pthread_join(tx[i], NULL);
	double secs = sending_seconds(run, started, t0);

	atomic_store(&stop_rx, 1);
	if (rx_thread)
		pthread_join(rx, NULL);
	if (started < o->threads)
		return -EAGAIN;
	long total = total_completed(run);
	double mib = (double)o->size / (1024.0 * 1024.0);

	r->msg_rate = (double)total / secs / 1e6;
	r->bw_avg = (double)total * mib / secs;
	r->bw_peak = peak * mib > r->bw_avg ? peak * mib : r->bw_avg;
	r->iters = total;
	return atomic_load(&run->failed);
}

int bench_measure(const char *test, const struct bench_opts *o, struct bench_link *l, struct bench_result *r,
		  char *err, size_t errlen)
{
	struct run *run = calloc(1, sizeof(*run));
	int rc;

	if (!run)
		return -ENOMEM;
	run->test = test;
	run->o = o;
	run->l = l;
	memset(r, 0, sizeof(*r));
	r->size = o->size;
	rc = strstr(test, "_lat") ? run_latency(run, r) : run_bandwidth(run, r);
	if (rc) {
		char why[160];

		describe_failure(run, why, sizeof(why));
		if (*why)
			snprintf(err, errlen, "%s failed: %s; the connection is in the error state after it",
				 test, why);
		else
			snprintf(err, errlen, "%s failed: %s", test, strerror(-rc));
	}
	free(run);
	return rc;
}

int bench_transport(const char *test, const struct bench_opts *o, struct bench_result *r, char *err,
		    size_t errlen)
{
	struct bench_link l = {0};
	struct core_ep_attr attr;
	struct core_mr mr;
	size_t buf_len = o->size < 8 ? 8 : o->size;
	size_t alloc = (buf_len + 4095) & ~(size_t)4095;
	int rc;

	core_ep_attr_defaults(&attr);
	attr.env = o->env;
	attr.device = o->device;
	bench_ep_path(&attr, o);
	attr.lock = o->lock;
	attr.env.tx_stripes = o->stripes;
	attr.env.progress_thread = o->progress_thread;
	attr.name = "a";
	if ((rc = core_ep_open(&attr, &l.a, err, errlen)))
		goto out;
	bench_announce_device(l.a);
	attr.name = "b";
	if ((rc = core_ep_open(&attr, &l.b, err, errlen)))
		goto out;
	if ((rc = core_ep_connect_pair(l.a, l.b, &l.pa, &l.pb))) {
		snprintf(err, errlen, "cannot connect the two endpoints: %s", strerror(-rc));
		goto out;
	}
	l.src = aligned_alloc(4096, alloc);
	l.dst = aligned_alloc(4096, alloc);
	if (!l.src || !l.dst) {
		rc = -ENOMEM;
		snprintf(err, errlen, "out of memory for %zu-byte buffers", buf_len);
		goto out;
	}
	memset(l.src, 0x5a, buf_len);
	memset(l.dst, 0, buf_len);
	if ((rc = core_mr_reg(l.b, l.dst, buf_len, &mr))) {
		snprintf(err, errlen, "cannot register memory: %s", strerror(-rc));
		goto out;
	}
	l.raddr = (uintptr_t)l.dst;
	l.rkey = mr.rkey;
	rc = bench_measure(test, o, &l, r, err, errlen);
out:
	core_ep_close(l.a);
	core_ep_close(l.b);
	free(l.src);
	free(l.dst);
	return rc;
}
