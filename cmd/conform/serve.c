/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Probe scripts (rcprobe.h): who a responder serves.
 *
 *  - serve: the receive side works in every state that has one (IBTA
 *    10.3.1): B in RTR, RTS or SQD (UD also in SQE, whose error is the send
 *    queue's alone) takes A's SEND into its receive, and an RC or UC B
 *    has A's WRITE placed (and an RC B answers A's READ), all checked
 *    byte for byte; a UD B moved from SQE back to RTS sends again;
 *  - deaf: a QP in INIT has no receive side yet: A's SEND to B in INIT
 *    (a receive posted, as INIT allows) is not delivered (RC: A runs out of
 *    transport retries, UC and UD: the message is lost);
 *  - stranger: an RC or UC QP serves only the QP it is connected to (IBTA
 *    9.6.1.1: the destination QP and the source QPN must match): a third
 *    QP C connected toward B, with the PSN B expects, sends, writes or
 *    reads; nothing reaches B (RC: C runs out of transport retries), and
 *    A's next SEND lands in the receive C's could have taken.
 */
#include "cmd/conform/rcp.h"

#include <stdio.h>
#include <string.h>

#define SV_GRH 40u

/* A's SEND of len bytes from src into B's receive at dst (len + grh bytes of room); expectations filled. */
static int send_to_b(struct rcp *p, struct ibv_ah *ah, uint32_t src, uint32_t dst, uint32_t len, int i,
		     struct rcp_exp *s, struct rcp_exp *r)
{
	uint32_t grh = ah ? SV_GRH : 0;
	struct ibv_sge sge = {(uintptr_t)(p->buf + src), len, p->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = p->base_id + 0x10 + (uint64_t)i,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND_WITH_IMM,
				 .send_flags = IBV_SEND_SIGNALED,
				 .imm_data = (uint32_t)rng_next(p->rng)},
			   *bad;
	struct rcp_piece from = {src, len}, to = {dst + grh, len};

	*s = rcp_done(wr.wr_id, IBV_WC_SUCCESS, IBV_WC_SEND);
	*r = rcp_done(p->base_id + 0x20 + (uint64_t)i, IBV_WC_SUCCESS, IBV_WC_RECV);
	r->check_len = true;
	r->byte_len = len + grh;
	r->imm = true;
	r->imm_data = wr.imm_data;
	r->ud = ah != NULL;
	if (ah) {
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = p->b->qp_num;
		wr.wr.ud.remote_qkey = RCP_UD_QKEY;
		r->src_qp = p->a->qp_num;
	}
	if (rcp_recv1(p->b, r->wr_id,
		      (struct ibv_sge){(uintptr_t)(p->buf + dst), len + grh + 16, p->mr->lkey})) {
		rcp_fail(p, "a receive posted to B in its state was refused");
		return -1;
	}
	if (hw_post_send(p->a, &wr, &bad)) {
		rcp_fail(p, "A's SEND refused at post");
		return -1;
	}
	if (len)
		rcp_model_move(p, &from, 1, &to, 1);
	return 0;
}

/* The GRH a UD receive starts with is the device's: the model takes it as it is. */
static void take_grh(struct rcp *p, uint32_t dst)
{
	memcpy(p->model + dst, p->buf + dst, SV_GRH);
}

/* RC/UC: A's WRITE into B, then (RC) A's READ of it back. */
static void rdma_to_b(struct rcp *p, enum ibv_qp_state st)
{
	struct rcp_piece src = {RCP_SRC + RCP_SLOT + 8 * (uint32_t)rng_range(p->rng, 0, 63), 64},
			 tgt = {RCP_TGT + 8 * (uint32_t)rng_range(p->rng, 0, 255), 64},
			 dst = {RCP_RDST + 8 * (uint32_t)rng_range(p->rng, 0, 255), 64};
	struct ibv_sge sge = {(uintptr_t)(p->buf + src.off), src.len, p->mr->lkey};
	struct rcp_exp w = rcp_done(p->base_id + 0x30, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE),
		       r = rcp_done(p->base_id + 0x31, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	char who[96];

	if (rcp_post1(p, p->a, IBV_WR_RDMA_WRITE, w.wr_id, sge, (uintptr_t)(p->buf + tgt.off))) {
		rcp_fail(p, "A's WRITE refused at post");
		return;
	}
	rcp_model_move(p, &src, 1, &tgt, 1);
	snprintf(who, sizeof(who), "A's send CQ (a WRITE to B in %s)", rcp_state_name(st));
	rcp_expect(p, p->scq, who, &w, 1);
	if (rcp_failed(p))
		return;
	if (p->a->qp_type != IBV_QPT_RC) { /* UC completes once sent: B may place it later */
		rcp_wait_landed(p, tgt.off, tgt.len, who);
		return;
	}
	sge = (struct ibv_sge){(uintptr_t)(p->buf + dst.off), dst.len, p->mr->lkey};
	if (rcp_post1(p, p->a, IBV_WR_RDMA_READ, r.wr_id, sge, (uintptr_t)(p->buf + tgt.off))) {
		rcp_fail(p, "A's READ refused at post");
		return;
	}
	rcp_model_move(p, &tgt, 1, &dst, 1);
	r.check_len = true;
	r.byte_len = dst.len;
	snprintf(who, sizeof(who), "A's send CQ (a READ from B in %s)", rcp_state_name(st));
	rcp_expect(p, p->scq, who, &r, 1);
}

/* A UD B back from SQE to RTS sends a datagram to itself: the send and its receive both complete. */
static void ud_recovered(struct rcp *p, struct ibv_ah *ah)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTS, .cur_qp_state = IBV_QPS_SQE};
	struct ibv_qp *ua = p->a;
	struct rcp_exp s, r;
	uint32_t len = (uint32_t)rng_range(p->rng, 0, 200), dst = RCP_RECV + 5 * RCP_SLOT;

	if (hw_modify_qp(p->b, &a, IBV_QP_STATE | (rng_bernoulli(p->rng, 0.5) ? IBV_QP_CUR_STATE : 0))) {
		rcp_fail(p, "UD QP %u: modify_qp SQE -> RTS failed; the transition is legal", p->b->qp_num);
		return;
	}
	p->a = p->b; /* B sends to itself: its send completion on the other CQ */
	if (!send_to_b(p, ah, RCP_SRC + 5 * RCP_SLOT, dst, len, 5, &s, &r)) {
		rcp_expect(p, p->ocq, "B's send CQ (UD, back in RTS from SQE)", &s, 1);
		rcp_expect(p, p->rcq, "B's receive CQ (its own datagram)", &r, 1);
		take_grh(p, dst);
	}
	p->a = ua;
}

/* B in INIT: A's SEND is not taken (RC: RETRY_EXC_ERR), B's receive stays posted and untouched. */
static void deaf_b(struct rcp *p, struct ibv_ah *ah)
{
	enum ibv_qp_type t = p->b->qp_type;
	struct ibv_sge sge = {(uintptr_t)(p->buf + RCP_SRC), 64, p->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = p->base_id + 0x10,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	struct rcp_exp e =
	    rcp_done(wr.wr_id, t == IBV_QPT_RC ? IBV_WC_RETRY_EXC_ERR : IBV_WC_SUCCESS, IBV_WC_SEND);

	if (ah) {
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = p->b->qp_num;
		wr.wr.ud.remote_qkey = RCP_UD_QKEY;
	}
	if (rcp_recv1(p->b, p->base_id + 0x20,
		      (struct ibv_sge){(uintptr_t)(p->buf + RCP_RECV), 128, p->mr->lkey})) {
		rcp_fail(p, "a receive posted to B in INIT was refused (INIT takes receives)");
		return;
	}
	if (hw_post_send(p->a, &wr, &bad))
		return;
	rcp_expect(p, p->scq, "A's send CQ (a SEND to B in INIT)", &e, 1);
	rcp_wait_ns(2 * 1000000ull);
	rcp_expect_empty(p, p->rcq, "B's receive CQ (B in INIT has no receive side)");
	rcp_check_memory(p);
}

/* B brought to st (RC/UC: A reconnected too, both fresh), then A's SEND (and WRITE, READ) served; 0: all
 * well. */
static int serve_in(struct rcp *p, struct ibv_ah *ah, enum ibv_qp_state st, int i)
{
	uint32_t len = (uint32_t)rng_range(p->rng, 0, RCP_SMALL_MSG), dst = RCP_RECV + (uint32_t)i * RCP_SLOT;
	struct rcp_exp s, r;
	char who[96];

	if (rcp_bring(p, p->b, p->a, st) || (!ah && rcp_bring(p, p->a, p->b, IBV_QPS_RTS))) {
		if (!rcp_failed(p))
			rcp_fail(p, "B could not be brought to %s (and A to RTS) along the legal path",
				 rcp_state_name(st));
		return -1;
	}
	if (send_to_b(p, ah, RCP_SRC + (uint32_t)i * RCP_SLOT, dst, len, i, &s, &r))
		return -1;
	snprintf(who, sizeof(who), "B's receive CQ (B in %s)", rcp_state_name(st));
	rcp_expect(p, p->rcq, who, &r, 1);
	snprintf(who, sizeof(who), "A's send CQ (a SEND to B in %s)", rcp_state_name(st));
	rcp_expect(p, p->scq, who, &s, 1);
	if (ah)
		take_grh(p, dst);
	if (!rcp_failed(p) && !ah)
		rdma_to_b(p, st);
	if (!rcp_failed(p)) {
		snprintf(who, sizeof(who), "B after it served in %s", rcp_state_name(st));
		rcp_expect_state(p, p->b, who, st);
	}
	if (!rcp_failed(p) && st == IBV_QPS_SQE)
		ud_recovered(p, ah);
	return rcp_failed(p) ? -1 : 0;
}

void rcp_case_serve(struct rcp *p)
{
	static const enum ibv_qp_type types[] = {IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD};
	enum ibv_qp_state states[] = {IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_SQD, IBV_QPS_SQE};
	enum ibv_qp_type t = types[rng_range(p->rng, 0, 2)];
	int nst = t == IBV_QPT_UD ? 4 : 3;
	bool deaf = rng_bernoulli(p->rng, 0.2);
	struct ibv_qp *rc_a, *rc_b, *ua = NULL, *ub = NULL;
	struct ibv_ah *ah = NULL;

	p->name = t == IBV_QPT_UD   ? "serve: a UD QP receives in RTR, RTS, SQD and SQE"
		  : t == IBV_QPT_UC ? "serve: a UC QP receives in RTR, RTS and SQD"
				    : "serve: an RC QP answers in RTR, RTS and SQD";
	p->shape = (struct rcp_shape){.scqe = RCP_CQE,
				      .a_send_wr = 4,
				      .a_recv_wr = 1,
				      .b_recv_wr = 4,
				      .a_rnr_retry = 7,
				      .uc = t == IBV_QPT_UC};
	if (deaf) { /* B deaf: A's transport retries run out soon */
		p->name = "serve: a QP in INIT receives nothing";
		p->shape.timeout = (uint8_t)rng_range(p->rng, 1, 4);
		p->shape.retry_cnt = (uint8_t)rng_range(p->rng, 0, 1);
	}
	if (rcp_setup(p))
		return;
	rc_a = p->a;
	rc_b = p->b;
	if (t == IBV_QPT_UD) {
		if (!(ua = rcp_qp(p, t, p->scq, p->ocq)) || !(ub = rcp_qp(p, t, p->ocq, p->rcq)) ||
		    !(ah = rcp_self_ah(p)) || rcp_bring(p, ua, NULL, IBV_QPS_RTS))
			goto out;
		p->a = ua;
		p->b = ub;
	}
	if (deaf) {
		if (rcp_bring(p, p->b, p->a, IBV_QPS_INIT) == 0)
			deaf_b(p, ah);
		goto out;
	}
	/* Every state that receives, in a random order. */
	for (int i = nst - 1; i > 0; i--) {
		int j = (int)rng_range(p->rng, 0, (uint64_t)i);
		enum ibv_qp_state x = states[i];

		states[i] = states[j];
		states[j] = x;
	}
	for (int i = 0; i < nst && !serve_in(p, ah, states[i], i); i++)
		;
	rcp_check_memory(p);
out:
	rcp_ud_pair_free(p, rc_a, rc_b, ua, ub, ah);
}

/* A's SEND of 64 bytes, into the receive B posted before C's request. */
static void a_sends_after(struct rcp *p)
{
	struct rcp_piece from = {RCP_SRC, 64}, to = {RCP_RECV, 64};
	struct ibv_sge sge = {(uintptr_t)(p->buf + from.off), from.len, p->mr->lkey};
	struct rcp_exp s = rcp_done(p->base_id + 0x11, IBV_WC_SUCCESS, IBV_WC_SEND),
		       r = rcp_done(p->base_id + 0x20, IBV_WC_SUCCESS, IBV_WC_RECV);

	if (rcp_post1(p, p->a, IBV_WR_SEND, s.wr_id, sge, 0)) {
		rcp_fail(p, "A's SEND refused at post");
		return;
	}
	rcp_model_move(p, &from, 1, &to, 1);
	r.check_len = true;
	r.byte_len = from.len;
	rcp_expect(p, p->rcq, "B's receive CQ (A's SEND after C's request)", &r, 1);
	rcp_expect(p, p->scq, "A's send CQ (a SEND after C's request)", &s, 1);
	rcp_check_memory(p);
}

/* C, a QP of A's type, connected toward B with the PSN B expects next from A, and short transport retries. */
static struct ibv_qp *stranger(struct rcp *p)
{
	struct ibv_qp *c = rcp_qp(p, p->a->qp_type, p->ocq, p->ocq);
	struct ibv_qp_attr a;
	int mask;

	if (!c)
		return NULL;
	if (rcp_to_init(p, c))
		goto fail;
	rcp_rtr_attr(p, p->b, &a, &mask);
	if (hw_modify_qp(c, &a, mask))
		goto fail;
	rcp_rts_attr(p, c, 0, &a, &mask);
	a.sq_psn = p->psn_a;
	a.timeout = (uint8_t)rng_range(p->rng, 1, 4);
	a.retry_cnt = (uint8_t)rng_range(p->rng, 0, 1);
	if (hw_modify_qp(c, &a, mask))
		goto fail;
	return c;
fail:
	hw_destroy_qp(c);
	return NULL;
}

void rcp_case_stranger(struct rcp *p)
{
	bool uc = rng_bernoulli(p->rng, 0.3);
	int kind = (int)rng_range(p->rng, 0, uc ? 1 : 2); /* SEND, WRITE, READ */
	static const enum ibv_wr_opcode ops[] = {IBV_WR_SEND, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ};
	static const char *const op_names[] = {"SEND", "WRITE", "READ"};
	struct ibv_qp *c;
	struct ibv_wc wc;
	uint32_t tgt = RCP_TGT + 8 * (uint32_t)rng_range(p->rng, 0, 255);
	struct ibv_sge sge;
	enum ibv_wc_status want = uc ? IBV_WC_SUCCESS : IBV_WC_RETRY_EXC_ERR;

	p->name = uc ? "stranger: a UC QP takes nothing from a QP it is not connected to"
		     : "stranger: an RC QP answers nothing from a QP it is not connected to";
	p->shape = (struct rcp_shape){
	    .scqe = RCP_CQE, .a_send_wr = 4, .a_recv_wr = 1, .b_recv_wr = 4, .a_rnr_retry = 7, .uc = uc};
	if (rcp_setup(p) || !(c = stranger(p)))
		return;
	sge = (struct ibv_sge){(uintptr_t)(p->buf + (kind == 2 ? RCP_RDST : RCP_SRC + RCP_SLOT)), 64,
			       p->mr->lkey};
	if (rcp_recv1(p->b, p->base_id + 0x20,
		      (struct ibv_sge){(uintptr_t)(p->buf + RCP_RECV), 128, p->mr->lkey}) ||
	    rcp_post1(p, c, ops[kind], p->base_id + 0x70, sge, (uintptr_t)(p->buf + tgt))) {
		hw_destroy_qp(c);
		return;
	}
	if (rcp_poll1(p, p->ocq, &wc) && (wc.wr_id != p->base_id + 0x70 || wc.status != want))
		rcp_fail(p,
			 "QP %u (C), connected toward B but B not toward it: its %s to B completed with %s "
			 "(wr_id %llx); expected %s (B serves only QP %u)",
			 c->qp_num, op_names[kind], ibv_wc_status_str(wc.status),
			 (unsigned long long)wc.wr_id, ibv_wc_status_str(want), p->a->qp_num);
	rcp_expect_empty(p, p->rcq, "B's receive CQ (only a QP B is not connected to sent)");
	if (!rcp_failed(p))
		rcp_check_memory(p);
	/* B still waits for A's PSN, and its receive is still posted: A's SEND lands there. */
	if (!rcp_failed(p))
		a_sends_after(p);
	hw_destroy_qp(c);
}
