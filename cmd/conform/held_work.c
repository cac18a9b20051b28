/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Probe script (rcprobe.h): work a device must hold back, and what it must
 * leave alone.
 *
 *  - a QP in SQD starts no new send WR (IBTA 10.3.1, SQ Drain): a SEND
 *    posted to A in SQD neither completes nor arrives at B until A is back
 *    in RTS, and then it does both;
 *  - a UC responder drops a request that fails its checks and stays as it
 *    was (UC has no NAK, IBTA 9.7.5.1.5): after A's WRITE through an rkey
 *    without remote write rights, B is still in RTS and the SEND that
 *    follows lands in the receive B had posted, not flushed; so after a
 *    SEND that found no receive (no RNR NAK in UC either);
 *  - LOCAL_INV invalidates only a window of its own QP's PD (IBTA 10.6.7.2.4):
 *    posted on a QP of a second PD, it fails, and the window still holds
 *    its MR (ibv_dereg_mr: EBUSY).
 */
#include "cmd/conform/rcp.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define HOLD_QUIET_NS (20 * 1000000ull) /* how long held work must stay held */
#define HOLD_SLOT_MR  5u		/* TGT slot of the window's MR */

enum { HOLD_SQD, HOLD_UC_DROP, HOLD_INV_OTHER_PD, HOLD_KINDS };

static const char *const hold_names[HOLD_KINDS] = {
    "hold: a SEND posted in SQD waits for RTS",
    "hold: a UC responder drops a request it refuses and stays in RTS",
    "hold: LOCAL_INV through a QP of another PD leaves the window bound",
};

/* A's SEND of 16 bytes into B's receive `i`, posted (the caller expects the completions). */
static int post_message(struct rcp *p, int i, struct rcp_exp *recv, struct rcp_exp *send)
{
	struct ibv_sge sge = {(uintptr_t)(p->buf + RCP_SRC), 16, p->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = p->base_id + (uint64_t)i,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;

	*recv = rcp_done(p->base_id + 0x40 + (uint64_t)i, IBV_WC_SUCCESS, IBV_WC_RECV);
	*send = rcp_done(wr.wr_id, IBV_WC_SUCCESS, IBV_WC_SEND);
	if (rcp_recv1(p->b, recv->wr_id,
		      (struct ibv_sge){(uintptr_t)(p->buf + RCP_RECV + 64 * (uint32_t)i), 64, p->mr->lkey})) {
		rcp_fail(p, "B's receive %d refused at post", i + 1);
		return -1;
	}
	if (hw_post_send(p->a, &wr, &bad))
		return -1;
	memcpy(p->model + RCP_RECV + 64 * (uint32_t)i, p->model + RCP_SRC, 16);
	return 0;
}

/* ---- SQD holds new work ---- */

static void sqd_holds(struct rcp *p)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_SQD};
	struct rcp_exp recv, send;
	uint64_t end;
	unsigned idle = 0;

	if (hw_modify_qp(p->a, &a, IBV_QP_STATE)) {
		p->abandoned = true; /* SQD is optional */
		return;
	}
	rcp_expect_state(p, p->a, "A after RTS -> SQD", IBV_QPS_SQD);
	if (rcp_failed(p))
		return;
	if (post_message(p, 0, &recv, &send)) {
		if (!rcp_failed(p))
			p->abandoned = true; /* a device may refuse posts in SQD */
		return;
	}
	for (end = clock_ns() + HOLD_QUIET_NS; clock_ns() < end && !rcp_failed(p);) {
		rcp_expect_empty(p, p->scq, "A's send CQ (a SEND posted while A is in SQD)");
		rcp_expect_empty(p, p->rcq, "B's receive CQ (A's SEND, posted while A is in SQD)");
		rcp_idle(&idle);
	}
	a.qp_state = IBV_QPS_RTS;
	if (rcp_failed(p) || hw_modify_qp(p->a, &a, IBV_QP_STATE))
		return;
	rcp_expect(p, p->rcq, "B's receive CQ (A's SEND held in SQD, A back in RTS)", &recv, 1);
	rcp_expect(p, p->scq, "A's send CQ (the SEND held in SQD, A back in RTS)", &send, 1);
	rcp_check_memory(p);
}

/* ---- a UC responder drops what it refuses ---- */

static void uc_drops(struct rcp *p)
{
	struct ibv_mr *ro = hw_reg_mr(p->pd, p->buf + RCP_TGT + HOLD_SLOT_MR * RCP_SLOT, RCP_SLOT,
				      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	struct rcp_exp w, recv, send;

	if (!ro)
		return;
	w = rcp_done(p->base_id + 0x20, IBV_WC_SUCCESS,
		     IBV_WC_RDMA_WRITE); /* UC: the requester never knows */
	if (rcp_post1_rkey(p, p->a, w.wr_id, (struct rcp_piece){RCP_SRC, 32},
			   (uintptr_t)(p->buf + RCP_TGT + HOLD_SLOT_MR * RCP_SLOT), ro->rkey)) {
		rcp_fail(p, "A's UC WRITE refused at post");
		goto out;
	}
	rcp_expect(p, p->scq, "A's send CQ (a UC WRITE through an rkey without REMOTE_WRITE)", &w, 1);
	if (rcp_failed(p) || post_message(p, 1, &recv, &send)) {
		if (!rcp_failed(p))
			rcp_fail(p, "A's SEND after the refused UC WRITE refused at post");
		goto out;
	}
	rcp_expect(p, p->rcq, "B's receive CQ (a SEND after B dropped a UC WRITE it refused)", &recv, 1);
	rcp_expect(p, p->scq, "A's send CQ (a SEND after B dropped a UC WRITE it refused)", &send, 1);
	rcp_expect_state(p, p->b, "B after dropping a UC WRITE without rights", IBV_QPS_RTS);
	rcp_check_memory(p); /* the refused WRITE changed nothing */
out:
	hw_dereg_mr(ro);
}

/*
 * A UC SEND that finds no receive at B: dropped (UC has no RNR NAK, IBTA
 * 9.7.5.1.5), B stays in RTS.  A's WRITE after it, once its bytes are in
 * B's memory, says the SEND reached B (UC keeps a QP's order); then a SEND
 * into a receive B posts lands there.
 */
static void uc_drops_unreceived(struct rcp *p)
{
	struct ibv_sge sge = {(uintptr_t)(p->buf + RCP_SRC), 16, p->mr->lkey};
	struct rcp_piece mark_src = {RCP_SRC + RCP_SLOT + 8 * (uint32_t)rng_range(p->rng, 0, 31), 8},
			 mark_dst = {RCP_TGT + 8 * (uint32_t)rng_range(p->rng, 0, 31), 8};
	struct rcp_exp s = rcp_done(p->base_id + 0x30, IBV_WC_SUCCESS, IBV_WC_SEND),
		       w = rcp_done(p->base_id + 0x31, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE), recv, send;

	if (rcp_post1(p, p->a, IBV_WR_SEND, s.wr_id, sge, 0)) {
		rcp_fail(p, "A's UC SEND refused at post");
		return;
	}
	rcp_expect(p, p->scq, "A's send CQ (a UC SEND toward B, which has no receive posted)", &s, 1);
	if (rcp_failed(p) || rcp_post1_rkey(p, p->a, w.wr_id, mark_src, (uintptr_t)(p->buf + mark_dst.off),
					    p->mr->rkey)) {
		if (!rcp_failed(p))
			rcp_fail(p, "A's UC WRITE after the unreceived SEND refused at post");
		return;
	}
	rcp_model_move(p, &mark_src, 1, &mark_dst, 1);
	rcp_expect(p, p->scq, "A's send CQ (a UC WRITE after a SEND B had no receive for)", &w, 1);
	if (rcp_failed(p) ||
	    rcp_wait_landed(p, mark_dst.off, mark_dst.len, "A's UC WRITE after a SEND B had no receive for"))
		return;
	rcp_expect_empty(p, p->rcq, "B's receive CQ (a UC SEND that found no receive)");
	if (rcp_failed(p))
		return;
	rcp_expect_state(p, p->b, "B after dropping a UC SEND it had no receive for", IBV_QPS_RTS);
	if (rcp_failed(p) || post_message(p, 1, &recv, &send)) {
		if (!rcp_failed(p))
			rcp_fail(p, "A's SEND after the unreceived UC SEND refused at post");
		return;
	}
	rcp_expect(p, p->rcq, "B's receive CQ (a UC SEND after B dropped one it had no receive for)", &recv, 1);
	rcp_expect(p, p->scq, "A's send CQ (a UC SEND after B dropped one it had no receive for)", &send, 1);
	rcp_expect_state(p, p->b, "B after dropping a UC SEND it had no receive for, then receiving one", IBV_QPS_RTS);
	rcp_check_memory(p);
}

/* ---- LOCAL_INV through a QP of another PD ---- */

/* An RC QP on pd connected to itself, in RTS, both queues on cq. */
static struct ibv_qp *self_connected(struct rcp *p, struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr init = {
	    .send_cq = cq,
	    .recv_cq = cq,
	    .cap = {.max_send_wr = 2, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1},
	    .qp_type = IBV_QPT_RC};
	struct ibv_qp *qp = hw_create_qp(pd, &init);
	struct ibv_qp_attr a;
	int mask;

	if (!qp)
		return NULL;
	if (rcp_to_init(p, qp))
		goto fail;
	rcp_rtr_attr(p, qp, &a, &mask);
	if (hw_modify_qp(qp, &a, mask))
		goto fail;
	rcp_rts_attr(p, qp, 7, &a, &mask); /* its send PSN is the one its RTR expects: it is its own peer */
	if (hw_modify_qp(qp, &a, mask))
		goto fail;
	return qp;
fail:
	hw_destroy_qp(qp);
	return NULL;
}

static void inv_other_pd(struct rcp *p)
{
	struct ibv_pd *pd2 = NULL;
	struct ibv_cq *cq2 = NULL;
	struct ibv_qp *c = NULL;
	struct ibv_mr *x = NULL;
	struct ibv_mw *mw = NULL;
	struct ibv_send_wr bind = {.wr_id = p->base_id + 0x30, .opcode = IBV_WR_BIND_MW},
			   inv = {.wr_id = p->base_id + 0x31,
				  .opcode = IBV_WR_LOCAL_INV,
				  .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	struct ibv_wc wc;
	char why[96];

	if (!(p->dev->dattr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) ||
	    !(x = hw_reg_mr(p->pd, p->buf + RCP_TGT + HOLD_SLOT_MR * RCP_SLOT, RCP_SLOT,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND)) ||
	    !(mw = hw_alloc_mw(p->pd, IBV_MW_TYPE_2)) || !(pd2 = hw_alloc_pd(p->dev->ctx)) ||
	    !(cq2 = hw_create_cq(p->dev->ctx, 4, NULL, NULL, 0)) || !(c = self_connected(p, pd2, cq2)))
		goto out;
	bind.bind_mw.mw = mw;
	bind.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	bind.bind_mw.bind_info = (struct ibv_mw_bind_info){
	    .mr = x, .addr = (uintptr_t)x->addr, .length = 64, .mw_access_flags = IBV_ACCESS_REMOTE_WRITE};
	if (rcp_post_a(p, &bind, IBV_WC_BIND_MW, "A's send CQ (a type-2 window bound on A's PD)"))
		goto out;
	inv.invalidate_rkey = bind.bind_mw.rkey;
	if (hw_post_send(c, &inv, &bad))
		goto out; /* refused at post: right too */
	if (!rcp_poll1(p, cq2, &wc))
		rcp_fail(p, "LOCAL_INV of rkey %#x through a QP of another PD: no completion within %llu ms",
			 inv.invalidate_rkey, RCP_DEADLINE_NS / 1000000);
	else if (wc.status == IBV_WC_SUCCESS)
		rcp_fail(p,
			 "LOCAL_INV of rkey %#x, a type-2 window of another PD, completed with SUCCESS "
			 "on QP %u; expected an error",
			 inv.invalidate_rkey, c->qp_num);
	snprintf(why, sizeof(why), "its type-2 window %#x survived a LOCAL_INV from another PD",
		 inv.invalidate_rkey);
	if (!rcp_failed(p))
		rcp_dereg_expect(p, &x, EBUSY, why);
out:
	if (c)
		hw_destroy_qp(c);
	if (cq2)
		hw_destroy_cq(cq2);
	if (mw)
		hw_dealloc_mw(mw);
	if (x)
		hw_dereg_mr(x);
	if (pd2)
		hw_dealloc_pd(pd2);
}

void rcp_case_hold(struct rcp *p)
{
	int kind = rcp_variant(p, HOLD_KINDS);

	p->name = hold_names[kind];
	p->shape = (struct rcp_shape){.scqe = RCP_CQE,
				      .a_send_wr = 4,
				      .a_recv_wr = 1,
				      .b_recv_wr = 4,
				      .a_rnr_retry = 7,
				      .uc = kind == HOLD_UC_DROP};
	if (rcp_setup(p))
		return;
	switch (kind) {
	case HOLD_SQD:
		sqd_holds(p);
		break;
	case HOLD_UC_DROP:
		if (rng_bernoulli(p->rng, 0.5))
			uc_drops_unreceived(p);
		else
			uc_drops(p);
		break;
	default:
		inv_other_pd(p);
	}
}
