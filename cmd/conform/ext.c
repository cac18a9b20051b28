/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Probe scripts (rcprobe.h) for the extended verbs the walk never calls:
 *
 *  - ext: A made by ibv_create_qp_ex posts a batch with the ibv_wr_* API
 *    (a WRITE, a matching and a non-matching ibv_wr_atomic_cmp_swp, a
 *    FETCH_ADD, a WRITE to an MR whose rights ibv_rereg_mr changed), and
 *    its send CQ, made by ibv_create_cq_ex, is read with ibv_start_poll /
 *    ibv_next_poll / ibv_wc_read_*: every field of every completion, an
 *    error one included.  Then modify_qp with an IBV_QP_CUR_STATE that is
 *    not the QP's state must fail (IBTA 11.2.5.2: "Invalid current QP
 *    state"; the verbs take it as an assertion, not as an override);
 *  - resize: ibv_resize_cq of a CQ with completions waiting, after some
 *    were polled, keeps them all, in order (ibv_resize_cq(3)).
 */
#include "cmd/conform/rcp.h"

#include <errno.h>

#define RCP_REREG_SLOT 7u /* the TGT slot the re-registered MR covers */

static void wr_sge(struct rcp *p, uint32_t off, uint32_t len)
{
	ibv_wr_set_sge(hw_qp_to_qp_ex(p->a), p->mr->lkey, (uintptr_t)(p->buf + off), len);
}

/* One atomic in TGT slot `slot`, its original value to RDST slot `slot`; the model follows. */
static struct rcp_exp atomic(struct rcp *p, uint32_t slot, bool cas, bool match)
{
	struct ibv_qp_ex *qx = hw_qp_to_qp_ex(p->a);
	uint32_t t = RCP_TGT + slot * RCP_SLOT + 8 * (uint32_t)rng_range(p->rng, 0, 7);
	uint32_t res = RCP_RDST + slot * RCP_SLOT;
	uint64_t orig, arg = rng_next(p->rng), swap = rng_next(p->rng), next;

	memcpy(&orig, p->model + t, 8);
	if (swap == orig)
		swap = ~orig;
	qx->wr_id = p->base_id + slot;
	qx->wr_flags = IBV_SEND_SIGNALED;
	if (cas) {
		/* compare, swap and memory all distinct: arguments swapped show either way */
		arg = match ? orig : orig ^ (arg | 1);
		if (!match && arg == swap)
			arg ^= 2;
		next = match ? swap : orig;
		ibv_wr_atomic_cmp_swp(qx, p->mr->rkey, (uintptr_t)(p->buf + t), arg, swap);
	} else {
		next = orig + arg;
		ibv_wr_atomic_fetch_add(qx, p->mr->rkey, (uintptr_t)(p->buf + t), arg);
	}
	wr_sge(p, res, 8);
	memcpy(p->model + res, &orig, 8);
	memcpy(p->model + t, &next, 8);
	return rcp_done(qx->wr_id, IBV_WC_SUCCESS, cas ? IBV_WC_COMP_SWAP : IBV_WC_FETCH_ADD);
}

/*
 * An MR over one TGT slot registered with one remote right, then given the
 * other by ibv_rereg_mr(IBV_REREG_MR_CHANGE_ACCESS): the rights checked
 * from then on are the new ones.  *writable: whether a WRITE must work.
 */
static struct ibv_mr *reregistered(struct rcp *p, bool *writable)
{
	int rd = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ,
	    wr = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	struct ibv_mr *mr;
	int rc;

	*writable = rng_bernoulli(p->rng, 0.5);
	mr = hw_reg_mr(p->pd, p->buf + RCP_TGT + RCP_REREG_SLOT * RCP_SLOT, RCP_SLOT, *writable ? rd : wr);
	if (!mr)
		return NULL;
	rc = hw_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, *writable ? wr : rd);
	if (rc) { /* a device may refuse to re-register; then there is nothing to judge */
		hw_dereg_mr(mr);
		return NULL;
	}
	return mr;
}

/* modify_qp asserting a current state the QP is not in must fail and change nothing. */
static void check_cur_state(struct rcp *p)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTS, .cur_qp_state = IBV_QPS_RTS};

	if (rcp_to_err(p->a))
		return;
	if (!hw_modify_qp(p->a, &a, IBV_QP_STATE | IBV_QP_CUR_STATE))
		rcp_fail(p, "modify_qp of A (in ERR) to RTS with IBV_QP_CUR_STATE = RTS succeeded: "
			    "the current state given must match the real one");
	rcp_expect_state(p, p->a, "A after a refused modify_qp", IBV_QPS_ERR);
}

void rcp_case_ext(struct rcp *p)
{
	struct rcp_exp exp[8];
	struct ibv_wc wc[8];
	struct ibv_qp_ex *qx;
	struct ibv_mr *mr2;
	bool writable;
	int n = 0, rc, got;
	uint32_t len;

	p->name = "extended verbs: ibv_wr_* batch, ibv_start_poll, ibv_rereg_mr, IBV_QP_CUR_STATE";
	p->shape = (struct rcp_shape){
	    .scqe = RCP_CQE, .a_send_wr = 8, .a_recv_wr = 1, .b_recv_wr = 1, .a_rnr_retry = 7, .ext = true};
	if (rcp_setup(p) || !(qx = hw_qp_to_qp_ex(p->a)))
		return;
	mr2 = reregistered(p, &writable);
	len = (uint32_t)rng_range(p->rng, 1, RCP_SMALL_MSG);
	ibv_wr_start(qx);
	qx->wr_id = p->base_id + 0x10;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qx, p->mr->rkey, (uintptr_t)(p->buf + RCP_TGT));
	wr_sge(p, RCP_SRC, len);
	memcpy(p->model + RCP_TGT, p->model + RCP_SRC, len);
	exp[n++] = rcp_done(qx->wr_id, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	exp[n++] = atomic(p, 1, true, true);
	exp[n++] = atomic(p, 2, true, false);
	exp[n++] = atomic(p, 3, false, false);
	if (mr2) {
		uint32_t at = RCP_TGT + RCP_REREG_SLOT * RCP_SLOT;

		qx->wr_id = p->base_id + 0x20;
		qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(qx, mr2->rkey, (uintptr_t)(p->buf + at));
		wr_sge(p, RCP_SRC + RCP_SLOT, 64);
		if (writable)
			memcpy(p->model + at, p->model + RCP_SRC + RCP_SLOT, 64);
		exp[n] =
		    rcp_done(qx->wr_id, writable ? IBV_WC_SUCCESS : IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_WRITE);
		n++;
		/* after an error every later WR flushes (ibv_poll_cq(3)) */
		qx->wr_id = p->base_id + 0x21;
		qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(qx, p->mr->rkey, (uintptr_t)(p->buf + RCP_TGT + 4 * RCP_SLOT));
		wr_sge(p, RCP_SRC, 8);
		if (writable)
			memcpy(p->model + RCP_TGT + 4 * RCP_SLOT, p->model + RCP_SRC, 8);
		exp[n++] =
		    rcp_done(qx->wr_id, writable ? IBV_WC_SUCCESS : IBV_WC_WR_FLUSH_ERR, IBV_WC_RDMA_WRITE);
	}
	if ((rc = ibv_wr_complete(qx)))
		rcp_fail(p, "ibv_wr_complete of %d WRs (max_send_wr %u) returned %d", n, p->acap.max_send_wr,
			 rc);
	else {
		got = rcp_poll_ex(p, p->scq_ex, wc, n);
		rcp_judge(p, p->scq, "A's extended send CQ (ibv_start_poll)", wc, got, exp, n);
		if (!rcp_failed(p))
			rcp_check_memory(p);
		if (!rcp_failed(p))
			check_cur_state(p);
	}
	if (mr2)
		hw_dereg_mr(mr2);
}

/* B's receive CQ holds k completions, some polled, then it is resized: the rest come out, in order. */
void rcp_case_resize_cq(struct rcp *p)
{
	struct rcp_exp r[16], s[16];
	int k = (int)rng_range(p->rng, 2, 12), before = (int)rng_range(p->rng, 1, (uint64_t)k - 1);
	int cqe = (int)rng_range(p->rng, 16, 3 * RCP_CQE);

	p->name = "ibv_resize_cq with completions waiting";
	p->shape = (struct rcp_shape){
	    .scqe = RCP_CQE, .a_send_wr = 16, .a_recv_wr = 1, .b_recv_wr = 16, .a_rnr_retry = 7};
	if (rcp_setup(p))
		return;
	for (int i = 0; i < k; i++) {
		uint32_t len = (uint32_t)rng_range(p->rng, 0, 64), dst = RCP_RECV + (uint32_t)i * 64;
		struct ibv_sge sge = {(uintptr_t)(p->buf + RCP_SRC + (uint32_t)i * 64), len, p->mr->lkey};

		r[i] = rcp_done(p->base_id + 0x40 + (uint64_t)i, IBV_WC_SUCCESS, IBV_WC_RECV);
		r[i].check_len = true;
		r[i].byte_len = len;
		s[i] = rcp_done(p->base_id + (uint64_t)i, IBV_WC_SUCCESS, IBV_WC_SEND);
		memcpy(p->model + dst, p->model + RCP_SRC + (uint32_t)i * 64, len);
		if (rcp_recv1(p->b, r[i].wr_id,
			      (struct ibv_sge){(uintptr_t)(p->buf + dst), 64, p->mr->lkey}) ||
		    rcp_post1(p, p->a, IBV_WR_SEND, s[i].wr_id, sge, 0)) {
			rcp_fail(p, "message %d of %d refused at post", i + 1, k);
			return;
		}
	}
	/*
	 * The sends' completions first: most receives have completed by then.
	 * One still on its way during the resize only weakens the check.
	 */
	rcp_expect(p, p->scq, "A's send CQ", s, k);
	rcp_expect(p, p->rcq, "B's receive CQ (before ibv_resize_cq)", r, before);
	if (rcp_failed(p))
		return;
	if (hw_resize_cq(p->rcq, cqe)) /* a device may not resize; nothing to judge then */
		return;
	if (p->rcq->cqe < cqe)
		rcp_fail(p, "ibv_resize_cq to %d entries left cq->cqe at %d", cqe, p->rcq->cqe);
	rcp_expect(p, p->rcq, "B's receive CQ (after ibv_resize_cq)", r + before, k - before);
	rcp_expect_empty(p, p->rcq, "B's receive CQ (after ibv_resize_cq)");
	rcp_check_memory(p);
}
