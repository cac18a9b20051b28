/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Shared set-up for the soft device tests: a context, a PD, CQs and connected QPs. */
#ifndef RDMATOOL_TEST_SOFT_FIXTURE_H
#define RDMATOOL_TEST_SOFT_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <sys/time.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "cmd/conform/rcp.h"
#include "hw/hw.h"

#define FX_BUF 65536

struct fx {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq; /* a: scq for both, b: rcq for both */
	struct ibv_qp *a, *b;
	uint8_t *abuf, *bbuf;
	struct ibv_mr *amr, *bmr;
};

static inline uint64_t fx_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Polls one completion, failing the test after timeout_ms. */
static inline void fx_wait(struct ibv_cq *cq, struct ibv_wc *wc, unsigned timeout_ms)
{
	uint64_t end = fx_now_ms() + timeout_ms;
	int n;

	while ((n = hw_poll_cq(cq, 1, wc)) == 0 && fx_now_ms() < end)
		;
	assert_int_equal(n, 1);
}

/* Asserts no completion arrives within ms. */
static inline void fx_none(struct ibv_cq *cq, unsigned ms)
{
	struct ibv_wc wc;
	uint64_t end = fx_now_ms() + ms;

	while (fx_now_ms() < end)
		assert_int_equal(hw_poll_cq(cq, 1, &wc), 0);
}

static inline struct ibv_qp *fx_qp(struct ibv_pd *pd, struct ibv_cq *cq, enum ibv_qp_type type, int sig_all)
{
	struct ibv_qp_init_attr init = {
	    .send_cq = cq,
	    .recv_cq = cq,
	    .qp_type = type,
	    .sq_sig_all = sig_all,
	    .cap = {.max_send_wr = 64,
		    .max_recv_wr = 64,
		    .max_send_sge = 4,
		    .max_recv_sge = 4,
		    .max_inline_data = 64},
	};

	return hw_create_qp(pd, &init);
}

/* RESET -> INIT -> RTR towards dest_qpn (dgid NULL: this NIC's own GID). */
static inline void fx_rc_to_rtr(struct ibv_qp *qp, uint32_t dest_qpn, const union ibv_gid *dgid,
				uint8_t min_rnr_timer)
{
	struct ibv_qp_attr a = {
	    .qp_state = IBV_QPS_INIT,
	    .port_num = 1,
	    .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
	};

	assert_int_equal(
	    hw_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_4096;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = 100;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = min_rnr_timer;
	a.ah_attr.port_num = 1;
	a.ah_attr.is_global = 1;
	if (dgid)
		a.ah_attr.grh.dgid = *dgid;
	else /* in-process peer: this NIC's own GID */
		assert_int_equal(hw_query_gid(qp->context, 1, 0, &a.ah_attr.grh.dgid), 0);
	assert_int_equal(hw_modify_qp(qp, &a,
				      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
			 0);
}

static inline void fx_rc_to_rts(struct ibv_qp *qp, uint32_t dest_qpn, const union ibv_gid *dgid,
				uint8_t timeout, uint8_t retry, uint8_t rnr_retry, uint8_t min_rnr_timer)
{
	struct ibv_qp_attr a = {0};

	fx_rc_to_rtr(qp, dest_qpn, dgid, min_rnr_timer);
	a.qp_state = IBV_QPS_RTS;
	a.timeout = timeout;
	a.retry_cnt = retry;
	a.rnr_retry = rnr_retry;
	a.sq_psn = 100;
	a.max_rd_atomic = 4;
	assert_int_equal(hw_modify_qp(qp, &a,
				      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC),
			 0);
}

static inline void fx_ud_to_rts(struct ibv_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = qkey};

	assert_int_equal(hw_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY),
			 0);
	a.qp_state = IBV_QPS_RTR;
	assert_int_equal(hw_modify_qp(qp, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	assert_int_equal(hw_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
}

/* What one side of a two-process test tells the other: where its QP and memory are. */
struct fx_info {
	union ibv_gid gid;
	uint32_t qpn, rkey;
	uint64_t addr;
};

/* One side of a two-process test: its own soft NIC, a CQ, one MR of len bytes and one RC QP. */
struct fx_side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint8_t *buf;
	size_t len;
	struct ibv_mr *mr;
	struct fx_info me, peer;
};

/*
 * Opens soft0, registers len zeroed bytes (a whole number of pages) with
 * access, swaps fx_info with the peer over fd and takes the RC QP to RTS
 * towards the peer's.  -1 on any failure (the peer's side sees fd close).
 */
static inline int fx_side_open(struct fx_side *s, int fd, size_t len, int access)
{
	char msg[sizeof(struct fx_info)];

	s->len = len;
	s->ctx = hw_open_device("soft0", NULL);
	if (!s->ctx)
		return -1;
	s->pd = hw_alloc_pd(s->ctx);
	s->cq = hw_create_cq(s->ctx, 4096, NULL, NULL, 0);
	s->buf = aligned_alloc(4096, len);
	if (!s->pd || !s->cq || !s->buf)
		return -1;
	memset(s->buf, 0, len);
	s->mr = hw_reg_mr(s->pd, s->buf, len, access);
	s->qp = fx_qp(s->pd, s->cq, IBV_QPT_RC, 1);
	if (!s->mr || !s->qp)
		return -1;
	hw_query_gid(s->ctx, 1, 0, &s->me.gid);
	s->me.qpn = s->qp->qp_num;
	s->me.rkey = s->mr->rkey;
	s->me.addr = (uintptr_t)s->buf;
	memcpy(msg, &s->me, sizeof(msg));
	if (write(fd, msg, sizeof(msg)) != (ssize_t)sizeof(msg) ||
	    read(fd, msg, sizeof(msg)) != (ssize_t)sizeof(msg))
		return -1;
	memcpy(&s->peer, msg, sizeof(msg));
	fx_rc_to_rts(s->qp, s->peer.qpn, &s->peer.gid, 14, 7, 7, 1);
	return 0;
}

/* Closes what fx_side_open made, however far it got; twice is harmless. */
static inline void fx_side_close(struct fx_side *s)
{
	if (s->qp)
		hw_destroy_qp(s->qp);
	if (s->mr)
		hw_dereg_mr(s->mr);
	if (s->cq)
		hw_destroy_cq(s->cq);
	if (s->pd)
		hw_dealloc_pd(s->pd);
	if (s->ctx)
		hw_close_device(s->ctx);
	free(s->buf);
	memset(s, 0, sizeof(*s));
}

/* The longest one step with a forked peer may take: a deadline against a hang, not a speed. */
#define FX_PEER_WAIT_MS 60000

struct fx_peer_run {
	int (*child)(int fd);
	int fd, rc;
};

/* The peer's body as a test of its own, so that an assertion failing in the peer ends the peer. */
static inline void fx_peer_body(void **state)
{
	struct fx_peer_run *run = *state;

	run->rc = run->child(run->fd);
	if (run->rc)
		fail_msg("the forked peer stopped at its step %d", run->rc);
}

/*
 * Forks a peer process that runs child(fd) on one end of a socketpair and
 * exits with its result (1 when one of its assertions failed); returns the
 * parent's end.  The peer opens its own soft NIC after the fork, so the two
 * really talk over the wire.  The peer runs as a cmocka group of its own:
 * without one, a failed assertion in the peer would jump back into the
 * parent's copied test runner and run the remaining tests a second time.
 * Reads and writes on either end give up after FX_PEER_WAIT_MS.
 */
static inline int fx_fork_peer(int (*child)(int fd), pid_t *pid)
{
	struct timeval tv = {.tv_sec = FX_PEER_WAIT_MS / 1000};
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(setsockopt(sv[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
		assert_int_equal(setsockopt(sv[i], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)), 0);
	}
	*pid = fork();
	assert_true(*pid >= 0);
	if (*pid == 0) {
		struct fx_peer_run run = {.child = child, .fd = sv[1]};
		const struct CMUnitTest peer[] = {
		    {.name = "forked peer", .test_func = fx_peer_body, .initial_state = &run}};

		close(sv[0]);
		_exit(cmocka_run_group_tests_name("forked peer", peer, NULL, NULL) ? (run.rc ? run.rc : 1)
										   : 0);
	}
	close(sv[1]);
	return sv[0];
}

/*
 * Waits for the forked peer, which must have exited with status 0; after
 * FX_PEER_WAIT_MS it kills the peer and fails.
 */
static inline void fx_expect_clean_exit(pid_t pid)
{
	uint64_t end = fx_now_ms() + FX_PEER_WAIT_MS;
	int status = 0;
	pid_t got;

	while ((got = waitpid(pid, &status, WNOHANG)) == 0 && fx_now_ms() < end)
		usleep(1000);
	if (got == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		fail_msg("the forked peer %d did not exit within %d ms", (int)pid, FX_PEER_WAIT_MS);
	}
	assert_int_equal(got, pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static inline void expect_state(struct ibv_qp *qp, enum ibv_qp_state state)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr init;

	assert_int_equal(hw_query_qp(qp, &a, IBV_QP_STATE, &init), 0);
	assert_int_equal(a.qp_state, state);
}

/* Releases whatever a (possibly partial) setup created. */
static inline void fx_free(struct fx *f)
{
	if (!f)
		return;
	if (f->a)
		hw_destroy_qp(f->a);
	if (f->b)
		hw_destroy_qp(f->b);
	if (f->amr)
		hw_dereg_mr(f->amr);
	if (f->bmr)
		hw_dereg_mr(f->bmr);
	if (f->scq)
		hw_destroy_cq(f->scq);
	if (f->rcq)
		hw_destroy_cq(f->rcq);
	if (f->pd)
		hw_dealloc_pd(f->pd);
	if (f->ctx)
		hw_close_device(f->ctx);
	free(f->abuf);
	free(f->bbuf);
	free(f);
}

static inline int fx_teardown(void **state)
{
	fx_free(*state);
	return 0;
}

static inline int fx_setup_common(void **state, int sig_all)
{
	struct fx *f = calloc(1, sizeof(*f));
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		     IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND;

	if (!f)
		return -1;
	f->ctx = hw_open_device("soft0", NULL);
	if (!f->ctx) {
		fx_free(f);
		return -1;
	}
	f->pd = hw_alloc_pd(f->ctx);
	f->scq = hw_create_cq(f->ctx, 256, NULL, NULL, 0);
	f->rcq = hw_create_cq(f->ctx, 256, NULL, NULL, 0);
	f->a = fx_qp(f->pd, f->scq, IBV_QPT_RC, sig_all);
	f->b = fx_qp(f->pd, f->rcq, IBV_QPT_RC, sig_all);
	f->abuf = aligned_alloc(64, FX_BUF);
	f->bbuf = aligned_alloc(64, FX_BUF);
	if (!f->pd || !f->scq || !f->rcq || !f->a || !f->b || !f->abuf || !f->bbuf) {
		fx_free(f);
		return -1;
	}
	memset(f->abuf, 0, FX_BUF);
	memset(f->bbuf, 0, FX_BUF);
	f->amr = hw_reg_mr(f->pd, f->abuf, FX_BUF, access);
	f->bmr = hw_reg_mr(f->pd, f->bbuf, FX_BUF, access);
	if (!f->amr || !f->bmr) {
		fx_free(f);
		return -1;
	}
	fx_rc_to_rts(f->a, f->b->qp_num, NULL, 8, 3, 3, 1);
	fx_rc_to_rts(f->b, f->a->qp_num, NULL, 8, 3, 3, 1);
	*state = f;
	return 0;
}

static inline int fx_setup(void **state)
{
	return fx_setup_common(state, 1);
}

/* One receive, and one signaled send WR of one SGE: the same helpers as rdmatool conform's loopback pair. */
static inline int fx_post_recv(struct ibv_qp *qp, uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey)
{
	return rcp_recv1(qp, wr_id, (struct ibv_sge){.addr = (uintptr_t)addr, .length = len, .lkey = lkey});
}

static inline int fx_post(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, void *addr, uint32_t len,
			  uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	return rcp_post1_through(qp, op, wr_id,
				 (struct ibv_sge){.addr = (uintptr_t)addr, .length = len, .lkey = lkey},
				 raddr, rkey);
}

#endif
