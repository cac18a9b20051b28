/* SPDX-License-Identifier: MIT */
/*
 * Soft device under threads: posters and pollers on shared and separate QPs
 * and CQs; every completion is counted exactly once (by wr_id), and
 * concurrent atomics from several QPs on one word add up exactly.
 */
#include "tests/unit/soft_fixture.h"

#include <pthread.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(threads_count_every_completion_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
