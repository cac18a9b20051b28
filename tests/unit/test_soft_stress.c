/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Soft device under threads: posters and pollers on shared and separate QPs
 * and CQs; every completion is counted exactly once (by wr_id), and
 * concurrent atomics from several QPs on one word add up exactly.  Two
 * threads post on the two QPs of one connected pair at once, each the
 * other's responder, while a third allocates and frees memory windows: no
 * deadlock, every message arrives once, in order.
 */
#include "tests/unit/soft_fixture.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>

#define THREADS 4
#define PER_THREAD 2000
#define DEPTH 32

struct stress {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *shared_cq;
	struct ibv_qp *shared_qp; /* loopback, posted to by every thread */
	uint8_t *buf;
	struct ibv_mr *mr;
	uint64_t *counter;
	_Atomic uint8_t seen[THREADS * 2][PER_THREAD];
	atomic_int shared_done;
};

static struct ibv_qp *loop_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC, .sq_sig_all = 1,
		.cap = { .max_send_wr = 256, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = hw_create_qp(pd, &init);

	fx_rc_to_rts(qp, qp->qp_num, NULL, 14, 7, 7, 1);
	return qp;
}

struct worker {
	struct stress *s;
	int id;
	int errors;
};

static void post_faa(struct ibv_qp *qp, struct stress *s, uint64_t wr_id, uint8_t *local)
{
	struct ibv_sge sge = { .addr = (uintptr_t)local, .length = 8, .lkey = s->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD }, *bad;

	wr.wr.atomic.remote_addr = (uintptr_t)s->counter;
	wr.wr.atomic.rkey = s->mr->rkey;
	wr.wr.atomic.compare_add = 1;
	assert_int_equal(hw_post_send(qp, &wr, &bad), 0);
}

static void count(struct stress *s, struct worker *w, const struct ibv_wc *wc)
{
	uint64_t src = wc->wr_id >> 32, idx = wc->wr_id & 0xffffffff;

	if (wc->status != IBV_WC_SUCCESS || src >= THREADS * 2 || idx >= PER_THREAD ||
	    atomic_fetch_add(&s->seen[src][idx], 1) != 0)
		w->errors++;
}

/* Own QP and CQ: post FAAs with a bounded window, poll own completions. */
static void *private_worker(void *arg)
{
	struct worker *w = arg;
	struct stress *s = w->s;
	struct ibv_cq *cq = hw_create_cq(s->ctx, 256, NULL, NULL, 0);
	struct ibv_qp *qp = loop_qp(s->pd, cq);
	uint8_t *local = s->buf + 4096 + (size_t)w->id * 64;
	int posted = 0, done = 0;
	struct ibv_wc wc[16];

	while (done < PER_THREAD) {
		while (posted < PER_THREAD && posted - done < DEPTH)
			post_faa(qp, s, ((uint64_t)w->id << 32) | (uint64_t)posted++, local);
		int n = hw_poll_cq(cq, 16, wc);

		for (int i = 0; i < n; i++)
			count(s, w, &wc[i]);
		done += n;
	}
	hw_destroy_qp(qp);
	hw_destroy_cq(cq);
	return NULL;
}

/* The shared QP: every shared worker posts to it and polls the shared CQ. */
static void *shared_worker(void *arg)
{
	struct worker *w = arg;
	struct stress *s = w->s;
	uint8_t *local = s->buf + 8192 + (size_t)w->id * 64;
	int posted = 0;
	struct ibv_wc wc[8];

	while (atomic_load(&s->shared_done) < THREADS * PER_THREAD) {
		if (posted < PER_THREAD) {
			struct ibv_sge sge = { .addr = (uintptr_t)local, .length = 8, .lkey = s->mr->lkey };
			struct ibv_send_wr wr = { .wr_id = ((uint64_t)(THREADS + w->id) << 32) | (uint64_t)posted,
						  .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE }, *bad;

			wr.wr.rdma.remote_addr = (uintptr_t)s->buf + 16384 + (size_t)w->id * 64;
			wr.wr.rdma.rkey = s->mr->rkey;
			if (hw_post_send(s->shared_qp, &wr, &bad) == 0)
				posted++;
			/* ENOMEM: the shared SQ is full for now; poll and try again. */
		}
		int n = hw_poll_cq(s->shared_cq, 8, wc);

		for (int i = 0; i < n; i++)
			count(s, w, &wc[i]);
		atomic_fetch_add(&s->shared_done, n);
	}
	return NULL;
}

static void threads_count_every_completion_once(void **state)
{
	static struct stress s;
	pthread_t t[THREADS * 2];
	struct worker w[THREADS * 2];

	(void)state;
	s.ctx = hw_open_device("soft0", NULL);
	s.pd = hw_alloc_pd(s.ctx);
	s.buf = aligned_alloc(4096, 65536);
	s.mr = hw_reg_mr(s.pd, s.buf, 65536, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	s.counter = (uint64_t *)s.buf;
	*s.counter = 0;
	s.shared_cq = hw_create_cq(s.ctx, 4096, NULL, NULL, 0);
	s.shared_qp = loop_qp(s.pd, s.shared_cq);
	for (int i = 0; i < THREADS * 2; i++) {
		w[i] = (struct worker){ .s = &s, .id = i % THREADS };
		assert_int_equal(pthread_create(&t[i], NULL, i < THREADS ? private_worker : shared_worker, &w[i]), 0);
	}
	for (int i = 0; i < THREADS * 2; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(w[i].errors, 0);
	}
	for (int i = 0; i < THREADS * 2; i++)
		for (int j = 0; j < PER_THREAD; j++)
			assert_int_equal(s.seen[i][j], 1);
	assert_int_equal(*s.counter, THREADS * PER_THREAD);
	hw_destroy_qp(s.shared_qp);
	hw_destroy_cq(s.shared_cq);
	hw_dereg_mr(s.mr);
	hw_dealloc_pd(s.pd);
	hw_close_device(s.ctx);
	free(s.buf);
}

/* A TSan build runs this 10x slower: fewer messages, the same crossing each time. */
#if defined(__SANITIZE_THREAD__)
#define CROSS_MSGS 40000
#else
#define CROSS_MSGS 200000
#endif
/* Only a stall fails: this long with no completion on either side (a deadlock), never a slow run. */
#define CROSS_STALL_S 60
#define CROSS_RECVS 64
#define CROSS_SLOT  16

struct cross {
	struct ibv_pd *pd;
	struct ibv_qp *qp[2];
	struct ibv_cq *cq[2];
	uint8_t *buf; /* per side: CROSS_RECVS receive slots, then one WRITE target word */
	struct ibv_mr *mr;
	atomic_int done;
	long windows; /* memory windows the churn thread allocated */
};

/* Completions seen by both sides so far: the watchdog's sign of progress. */
static atomic_long cross_progress;

struct cross_side {
	struct cross *c;
	int id;
	const char *error; /* the first thing that went wrong, NULL when none */
	long got;
};

static uint8_t *cross_area(struct cross *c, int side)
{
	return c->buf + (size_t)side * (CROSS_RECVS * CROSS_SLOT + 64);
}

static int cross_post(struct cross_side *cs, enum ibv_wr_opcode op, uint64_t value)
{
	struct cross *c = cs->c;
	struct ibv_sge sge = {.addr = (uintptr_t)&value, .length = 8};
	struct ibv_send_wr wr = {.wr_id = op, .sg_list = &sge, .num_sge = 1, .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE}, *bad;

	wr.wr.rdma.remote_addr = (uintptr_t)cross_area(c, 1 - cs->id) + CROSS_RECVS * CROSS_SLOT;
	wr.wr.rdma.rkey = c->mr->rkey;
	return hw_post_send(c->qp[cs->id], &wr, &bad);
}

/* One side: SENDs and WRITEs to the other, its receives checked in order and posted again. */
static void *cross_worker(void *arg)
{
	struct cross_side *cs = arg;
	struct cross *c = cs->c;
	uint8_t *area = cross_area(c, cs->id);
	long sent = 0, completed = 0, expect = 0;
	uint64_t deadline = fx_now_ms() + CROSS_STALL_S * 1000;
	struct ibv_wc wc[16];

	for (int i = 0; i < CROSS_RECVS; i++)
		if (fx_post_recv(c->qp[cs->id], (uint64_t)i, area + i * CROSS_SLOT, CROSS_SLOT, c->mr->lkey))
			cs->error = "post_recv";
	while (!cs->error && (completed < 2 * CROSS_MSGS || expect < CROSS_MSGS)) {
		if (fx_now_ms() > deadline) {
			cs->error = "no completion in 60 s";
			break;
		}
		if (sent < CROSS_MSGS && 2 * sent - completed < 32) {
			uint64_t value = (uint64_t)cs->id << 32 | (uint64_t)sent;

			if (cross_post(cs, IBV_WR_SEND, value) || cross_post(cs, IBV_WR_RDMA_WRITE, value))
				cs->error = "post_send";
			sent++;
		}
		int n = hw_poll_cq(c->cq[cs->id], 16, wc);

		if (n > 0) {
			deadline = fx_now_ms() + CROSS_STALL_S * 1000;
			atomic_fetch_add_explicit(&cross_progress, n, memory_order_relaxed);
		}

		for (int i = 0; i < n && !cs->error; i++) {
			uint64_t got;

			if (wc[i].status != IBV_WC_SUCCESS) {
				cs->error = "a completion failed";
			} else if (wc[i].opcode != IBV_WC_RECV) {
				completed++;
			} else if (wc[i].byte_len != 8) {
				cs->error = "a receive's byte_len is not 8";
			} else {
				memcpy(&got, area + wc[i].wr_id * CROSS_SLOT, 8);
				if (got != ((uint64_t)(1 - cs->id) << 32 | (uint64_t)expect))
					cs->error = "a message arrived out of order, twice or changed";
				expect++;
				if (fx_post_recv(c->qp[cs->id], wc[i].wr_id, area + wc[i].wr_id * CROSS_SLOT, CROSS_SLOT,
						 c->mr->lkey))
					cs->error = "post_recv again";
			}
		}
	}
	cs->got = expect;
	atomic_fetch_add(&c->done, 1);
	return NULL;
}

/* Windows come and go: while one exists the posters' work goes through the engine's rounds. */
static void *window_churn(void *arg)
{
	struct cross *c = arg;

	while (atomic_load(&c->done) < 2) {
		struct ibv_mw *mw = hw_alloc_mw(c->pd, IBV_MW_TYPE_1);

		if (mw) {
			c->windows++;
			sched_yield();
			hw_dealloc_mw(mw);
		}
		sched_yield();
	}
	return NULL;
}

/* Every CROSS_STALL_S: fine if either side completed anything since, else a deadlock. */
static void cross_watchdog(int sig)
{
	static const char msg[] = "crossed_pair_posts_both_ways: no progress in 60 s (a deadlock?)\n";
	static long seen = -1;
	long now = atomic_load(&cross_progress);
	ssize_t n;

	(void)sig;
	if (now != seen) {
		seen = now;
		alarm(CROSS_STALL_S);
		return;
	}
	n = write(2, msg, sizeof(msg) - 1);
	(void)n;
	_exit(1);
}

static void crossed_pair_posts_both_ways(void **state)
{
	static struct cross c;
	struct ibv_context *ctx = hw_open_device("soft0", NULL);
	struct cross_side side[2];
	pthread_t t[3];

	(void)state;
	assert_non_null(ctx);
	c.pd = hw_alloc_pd(ctx);
	c.buf = aligned_alloc(4096, 8192);
	c.mr = hw_reg_mr(c.pd, c.buf, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(c.mr);
	for (int i = 0; i < 2; i++) {
		struct ibv_qp_init_attr init = {
		    .qp_type = IBV_QPT_RC,
		    .cap = {.max_send_wr = 64, .max_recv_wr = CROSS_RECVS, .max_send_sge = 1, .max_recv_sge = 1,
			    .max_inline_data = 64},
		};

		c.cq[i] = hw_create_cq(ctx, 256, NULL, NULL, 0);
		init.send_cq = init.recv_cq = c.cq[i];
		c.qp[i] = hw_create_qp(c.pd, &init);
		assert_non_null(c.qp[i]);
	}
	/* rnr_retry 7: a receive posted late is waited for, never an error. */
	for (int i = 0; i < 2; i++)
		fx_rc_to_rts(c.qp[i], c.qp[1 - i]->qp_num, NULL, 14, 7, 7, 1);
	/* Posters deadlocked on each other's QP never reach their own deadline. */
	signal(SIGALRM, cross_watchdog);
	alarm(CROSS_STALL_S);
	for (int i = 0; i < 2; i++) {
		side[i] = (struct cross_side){.c = &c, .id = i};
		assert_int_equal(pthread_create(&t[i], NULL, cross_worker, &side[i]), 0);
	}
	assert_int_equal(pthread_create(&t[2], NULL, window_churn, &c), 0);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	alarm(0);
	for (int i = 0; i < 2; i++) {
		if (side[i].error)
			fail_msg("side %d after %ld messages: %s", i, side[i].got, side[i].error);
		assert_int_equal(side[i].got, CROSS_MSGS);
	}
	assert_true(c.windows > 0);
	for (int i = 0; i < 2; i++) {
		hw_destroy_qp(c.qp[i]);
		hw_destroy_cq(c.cq[i]);
	}
	hw_dereg_mr(c.mr);
	hw_dealloc_pd(c.pd);
	hw_close_device(ctx);
	free(c.buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(threads_count_every_completion_once),
		cmocka_unit_test(crossed_pair_posts_both_ways),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
