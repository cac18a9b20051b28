/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Probe script (rcprobe.h): what a device must refuse, and leave as it was.
 *
 *  - a bind across PDs (ibv_bind_mw(3), IBTA 10.6.7.2.2: the QP, the
 *    window and the MR share one PD): the MR is on a second PD, and the
 *    window either with it or with A: MW_BIND_ERR, A in ERR, the WR behind
 *    the bind flushed (a refusal at post is right too);
 *  - an error completion is solicited (ibv_req_notify_cq(3)): it wakes a CQ
 *    armed with solicited_only=1, a receive flushed by its QP's move to ERR
 *    as much as one too short for the message it takes;
 *  - a type-2 window's previous rkey, already invalidated, invalidates
 *    nothing once the window is bound again under a new one: LOCAL_INV of
 *    it and SEND_WITH_INV of it fail, and the current binding still holds
 *    its MR (ibv_dereg_mr: EBUSY);
 *  - ibv_modify_qp with an attribute its transition does not allow (IBTA
 *    11.2.1.2, the kernel's qp_state_table) fails with EINVAL and changes
 *    nothing ibv_query_qp reports; on a UD QP in RTS, not the Q_Key the
 *    same call carried either.
 */
#include "cmd/conform/rcp.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#define RF_SLOT_MR 6u /* TGT slots: the second PD's MR, the stale-key window's MR */
#define RF_SLOT_X  7u

enum { RF_BIND_OTHER_PD, RF_ERROR_EVENT, RF_STALE_INV, RF_MODIFY_EXTRA, RF_KINDS };

static const char *const rf_names[RF_KINDS] = {
    "refuse: a window bound through a QP of another PD",
    "refuse: an error completion wakes a CQ armed for solicited completions",
    "refuse: a type-2 window's stale rkey invalidates nothing",
    "refuse: modify_qp with an attribute the transition does not allow",
};

/* ---- a bind through a QP of another PD ---- */

static void bind_other_pd(struct rcp *p)
{
	uint64_t caps = p->dev->dattr.device_cap_flags;
	bool type2 = (caps & IBV_DEVICE_MEM_WINDOW_TYPE_2B) &&
		     (!(caps & IBV_DEVICE_MEM_WINDOW) || rng_bernoulli(p->rng, 0.5));
	uint32_t at = RCP_TGT + RF_SLOT_MR * RCP_SLOT;
	struct ibv_pd *pd2 = hw_alloc_pd(p->dev->ctx);
	bool mw_with_qp = rng_bernoulli(p->rng, 0.5); /* the window on A's PD: only the MR is foreign */
	struct ibv_mr *mr2 = NULL;
	struct ibv_mw *mw = NULL;
	struct ibv_mw_bind_info info;
	struct ibv_sge sge = {(uintptr_t)(p->buf + RCP_SRC), 8, p->mr->lkey};
	struct ibv_send_wr wr[2], *bad;
	struct rcp_exp exp[2];
	int rc;

	if (!(caps & (IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B)) || !pd2 ||
	    !(mr2 = hw_reg_mr(pd2, p->buf + at, RCP_SLOT,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND | RCP_REMOTE_RIGHTS)) ||
	    !(mw = hw_alloc_mw(mw_with_qp ? p->pd : pd2, type2 ? IBV_MW_TYPE_2 : IBV_MW_TYPE_1)))
		goto out;
	if (mw_with_qp)
		p->name = "refuse: a window of A's PD bound to an MR of another PD";
	info = (struct ibv_mw_bind_info){.mr = mr2,
					 .addr = (uintptr_t)(p->buf + at),
					 .length = 64,
					 .mw_access_flags = IBV_ACCESS_REMOTE_READ};
	exp[0] = rcp_done(p->base_id + 0x60, IBV_WC_MW_BIND_ERR, IBV_WC_BIND_MW);
	exp[1] = rcp_done(p->base_id + 0x61, IBV_WC_WR_FLUSH_ERR, IBV_WC_RDMA_WRITE);
	wr[1] = (struct ibv_send_wr){.wr_id = exp[1].wr_id,
				     .sg_list = &sge,
				     .num_sge = 1,
				     .opcode = IBV_WR_RDMA_WRITE,
				     .send_flags = IBV_SEND_SIGNALED};
	wr[1].wr.rdma.remote_addr = (uintptr_t)(p->buf + RCP_TGT);
	wr[1].wr.rdma.rkey = p->mr->rkey;
	if (type2) {
		wr[0] = (struct ibv_send_wr){.wr_id = exp[0].wr_id,
					     .next = &wr[1],
					     .opcode = IBV_WR_BIND_MW,
					     .send_flags = IBV_SEND_SIGNALED};
		wr[0].bind_mw.mw = mw;
		wr[0].bind_mw.rkey = ibv_inc_rkey(mw->rkey);
		wr[0].bind_mw.bind_info = info;
		rc = hw_post_send(p->a, wr, &bad);
	} else {
		struct ibv_mw_bind bind = {
		    .wr_id = exp[0].wr_id, .send_flags = IBV_SEND_SIGNALED, .bind_info = info};

		if ((rc = hw_bind_mw(p->a, mw, &bind)) == 0)
			rc = hw_post_send(p->a, &wr[1], &bad);
		else
			bad = wr;
	}
	if (rc && bad == wr)
		goto out; /* the bind was refused at post: right too */
	if (rc) {
		rcp_fail(p, "a WR behind a type-%d bind was refused at post: %s", type2 ? 2 : 1,
			 strerror(rc));
		goto out;
	}
	rcp_expect(p, p->scq,
		   mw_with_qp ? (type2 ? "A's send CQ (a type-2 window of PD 1 bound to an MR of PD 2, then a WRITE)"
				       : "A's send CQ (a type-1 window of PD 1 bound to an MR of PD 2, then a WRITE)")
		   : type2    ? "A's send CQ (a type-2 window of PD 2 bound through A on PD 1, then a WRITE)"
			      : "A's send CQ (a type-1 window of PD 2 bound through A on PD 1, then a WRITE)",
		   exp, 2);
	rcp_expect_state(p, p->a, "A after a bind through a QP of another PD", IBV_QPS_ERR);
	rcp_check_memory(p);
out:
	if (mw)
		hw_dealloc_mw(mw);
	if (mr2)
		hw_dereg_mr(mr2);
	if (pd2)
		hw_dealloc_pd(pd2);
}

/* ---- an error completion on a CQ armed for solicited completions ---- */

static void error_event(struct rcp *p)
{
	bool flush = rng_bernoulli(p->rng, 0.5);
	struct ibv_sge src = {(uintptr_t)(p->buf + RCP_SRC), 64, p->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = p->base_id + 0x62,
				 .sg_list = &src,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	struct rcp_exp r = rcp_done(p->base_id + 0x63, flush ? IBV_WC_WR_FLUSH_ERR : IBV_WC_LOC_LEN_ERR,
				    IBV_WC_RECV),
		       s = rcp_done(wr.wr_id, IBV_WC_REM_INV_REQ_ERR, IBV_WC_SEND);
	const char *what =
	    flush ? "a receive flushed by B's move to ERR" : "a receive shorter than its message";
	unsigned acked = 0;
	int n;

	if (!p->ch || fcntl(p->ch->fd, F_SETFL, fcntl(p->ch->fd, F_GETFL) | O_NONBLOCK) ||
	    hw_req_notify_cq(p->rcq, 1))
		return;
	if (rcp_recv1(p->b, r.wr_id,
		      (struct ibv_sge){(uintptr_t)(p->buf + RCP_RECV), flush ? 64 : 16, p->mr->lkey})) {
		rcp_fail(p, "a receive on B refused at post");
		return;
	}
	if (flush ? rcp_to_err(p->b) : hw_post_send(p->a, &wr, &bad)) {
		rcp_fail(p, "%s refused", flush ? "B's move to ERR" : "a 64-byte SEND");
		return;
	}
	n = rcp_cq_events(p, p->ch, RCP_EVENT_NS, &acked);
	if (n != 1)
		rcp_fail(
		    p,
		    "%s completed with an error on B's receive CQ, armed with solicited_only=1: %d "
		    "completion events; expected 1 (a completion whose status is not success is solicited)",
		    what, n);
	if (!rcp_failed(p))
		rcp_expect(p, p->rcq, "B's receive CQ (an error completion)", &r, 1);
	if (!rcp_failed(p) && !flush)
		rcp_expect(p, p->scq, "A's send CQ (a SEND too long for its receive)", &s, 1);
	if (flush)
		rcp_check_memory(p); /* a short receive's buffer is undefined */
	hw_ack_cq_events(p->rcq, acked);
}

/* ---- a type-2 window's stale rkey ---- */

static int bind2(struct rcp *p, struct ibv_mw *mw, struct ibv_mr *mr, uint32_t rkey, uint64_t id,
		 const char *what)
{
	struct ibv_send_wr wr = {.wr_id = p->base_id + id, .opcode = IBV_WR_BIND_MW};

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
	    .mr = mr, .addr = (uintptr_t)mr->addr, .length = 64, .mw_access_flags = IBV_ACCESS_REMOTE_WRITE};
	return rcp_post_a(p, &wr, IBV_WC_BIND_MW, what);
}

/* The completion of wr_id on cq (others, such as A's receive on the same CQ, are skipped); 0: none came. */
static int poll_for(struct ibv_cq *cq, uint64_t wr_id, struct ibv_wc *wc)
{
	uint64_t end = clock_ns() + RCP_DEADLINE_NS;
	unsigned idle = 0, late = 0;
	int k;

	for (;;) {
		if ((k = hw_poll_cq(cq, 1, wc)) < 0)
			return 0;
		if (k && wc->wr_id == wr_id)
			return 1;
		if (!k && rcp_late(end, &late))
			return 0;
		if (!k)
			rcp_idle(&idle);
	}
}

/* LOCAL_INV of the stale rkey on A, or SEND_WITH_INV of it from B to A: it must fail. */
static void invalidate_stale(struct rcp *p, uint32_t stale, bool remote)
{
	struct ibv_send_wr wr = {.wr_id = p->base_id + 0x66,
				 .send_flags = IBV_SEND_SIGNALED,
				 .invalidate_rkey = stale},
			   *bad;
	struct ibv_sge sge = {(uintptr_t)(p->buf + RCP_SRC), 16, p->mr->lkey};
	struct ibv_qp *qp = remote ? p->b : p->a;
	struct ibv_wc wc;

	if (remote) {
		wr.opcode = IBV_WR_SEND_WITH_INV;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		if (rcp_recv1(p->a, p->base_id + 0x67,
			      (struct ibv_sge){(uintptr_t)(p->buf + RCP_RECV + RCP_SLOT), 64, p->mr->lkey})) {
			rcp_fail(p, "a receive on A refused at post");
			return;
		}
	} else {
		wr.opcode = IBV_WR_LOCAL_INV;
	}
	if (hw_post_send(qp, &wr, &bad))
		return; /* refused at post: right too */
	if (!poll_for(qp->send_cq, wr.wr_id, &wc))
		rcp_fail(p, "%s of a stale rkey %#x: no completion within %llu ms",
			 remote ? "SEND_WITH_INV (B to A)" : "LOCAL_INV on A", stale,
			 RCP_DEADLINE_NS / 1000000);
	else if (wc.status == IBV_WC_SUCCESS)
		rcp_fail(p,
			 "%s of rkey %#x, the window's previous key (invalidated, then bound again under a "
			 "new one) completed with SUCCESS; expected %s",
			 remote ? "SEND_WITH_INV (B to A)" : "LOCAL_INV on A", stale,
			 remote ? "REM_INV_REQ_ERR" : "an error (LOC_QP_OP_ERR)");
}

static void stale_inv(struct rcp *p)
{
	bool remote = rng_bernoulli(p->rng, 0.5);
	struct ibv_mr *x;
	struct ibv_mw *mw;
	struct ibv_send_wr inv = {.wr_id = p->base_id + 0x65, .opcode = IBV_WR_LOCAL_INV};
	uint32_t k1, k2;
	char why[96];

	if (!(p->dev->dattr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) ||
	    !(x = hw_reg_mr(p->pd, p->buf + RCP_TGT + RF_SLOT_X * RCP_SLOT, RCP_SLOT,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND)))
		return;
	if (!(mw = hw_alloc_mw(p->pd, IBV_MW_TYPE_2))) {
		hw_dereg_mr(x);
		return;
	}
	k1 = ibv_inc_rkey(mw->rkey);
	k2 = ibv_inc_rkey(k1);
	inv.invalidate_rkey = k1;
	if (bind2(p, mw, x, k1, 0x64, "A's send CQ (a type-2 window bound under rkey 1)") ||
	    rcp_post_a(p, &inv, IBV_WC_LOCAL_INV, "A's send CQ (LOCAL_INV of rkey 1)") ||
	    bind2(p, mw, x, k2, 0x68, "A's send CQ (the window bound again under rkey 2)"))
		goto out;
	invalidate_stale(p, k1, remote);
	snprintf(why, sizeof(why), "MR X, its type-2 window is bound under rkey %#x after a stale %s of %#x",
		 k2, remote ? "SEND_WITH_INV" : "LOCAL_INV", k1);
	if (!rcp_failed(p))
		rcp_dereg_expect(p, &x, EBUSY, why);
out:
	hw_dealloc_mw(mw);
	if (x)
		hw_dereg_mr(x);
}

/* ---- modify_qp with an attribute the transition does not allow ---- */

/* What ibv_query_qp reports of the attributes the refused modifies try to change. */
static int query(struct ibv_qp *qp, struct ibv_qp_attr *a)
{
	struct ibv_qp_init_attr init;

	memset(a, 0, sizeof(*a));
	return hw_query_qp(qp, a,
			   IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_TIMEOUT |
			       IBV_QP_RETRY_CNT | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_ACCESS_FLAGS,
			   &init);
}

static const char *changed(const struct ibv_qp_attr *a, const struct ibv_qp_attr *b)
{
	if (a->qp_state != b->qp_state)
		return "qp_state";
	if (a->qp_state == IBV_QPS_INIT)
		return a->qp_access_flags != b->qp_access_flags ? "qp_access_flags" : NULL;
	if (a->path_mtu != b->path_mtu)
		return "path_mtu";
	if (a->dest_qp_num != b->dest_qp_num)
		return "dest_qp_num";
	if (a->timeout != b->timeout)
		return "timeout";
	if (a->retry_cnt != b->retry_cnt)
		return "retry_cnt";
	if (a->max_dest_rd_atomic != b->max_dest_rd_atomic)
		return "max_dest_rd_atomic";
	return NULL;
}

/* RTS -> RTS of A with one attribute only INIT -> RTR or RTR -> RTS may set. */
static const char *extra_rts(struct rcp *p, const struct ibv_qp_attr *now, struct ibv_qp_attr *a, int *mask)
{
	*a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTS};
	switch (rng_range(p->rng, 0, 4)) {
	case 0:
		a->dest_qp_num = (now->dest_qp_num + 1) & 0xffffff;
		*mask = IBV_QP_DEST_QPN;
		return "RTS -> RTS with IBV_QP_DEST_QPN";
	case 1:
		a->path_mtu = now->path_mtu == IBV_MTU_256 ? IBV_MTU_512 : IBV_MTU_256;
		*mask = IBV_QP_PATH_MTU;
		return "RTS -> RTS with IBV_QP_PATH_MTU";
	case 2:
		a->timeout = (uint8_t)(now->timeout == 20 ? 21 : 20);
		*mask = IBV_QP_TIMEOUT;
		return "RTS -> RTS with IBV_QP_TIMEOUT";
	case 3:
		a->retry_cnt = (uint8_t)(now->retry_cnt ? 0 : 1);
		*mask = IBV_QP_RETRY_CNT;
		return "RTS -> RTS with IBV_QP_RETRY_CNT";
	default:
		a->max_dest_rd_atomic = (uint8_t)(now->max_dest_rd_atomic + 1);
		*mask = IBV_QP_MAX_DEST_RD_ATOMIC;
		return "RTS -> RTS with IBV_QP_MAX_DEST_RD_ATOMIC";
	}
}

/* From INIT on an RC QP: INIT -> INIT with a Q_Key (UD's), or INIT -> RTR with one of RTR -> RTS's. */
static const char *extra_init(struct rcp *p, struct ibv_qp_attr *a, int *mask)
{
	switch (rng_range(p->rng, 0, 2)) {
	case 0:
		*a = (struct ibv_qp_attr){
		    .qp_state = IBV_QPS_INIT, .qkey = 0x11111111u, .qp_access_flags = IBV_ACCESS_REMOTE_READ};
		*mask = IBV_QP_STATE | IBV_QP_QKEY | IBV_QP_ACCESS_FLAGS;
		return "RC INIT -> INIT with IBV_QP_QKEY (and new access flags)";
	case 1:
		rcp_rtr_attr(p, p->b, a, mask);
		a->sq_psn = 0x123;
		*mask |= IBV_QP_SQ_PSN;
		return "INIT -> RTR with IBV_QP_SQ_PSN";
	default:
		rcp_rtr_attr(p, p->b, a, mask);
		a->timeout = 20;
		*mask |= IBV_QP_TIMEOUT;
		return "INIT -> RTR with IBV_QP_TIMEOUT";
	}
}

static void modify_extra(struct rcp *p)
{
	bool rts = rng_bernoulli(p->rng, 0.5);
	struct ibv_qp_init_attr init = {
	    .send_cq = p->ocq,
	    .recv_cq = p->ocq,
	    .qp_type = IBV_QPT_RC,
	    .cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp *qp = rts ? p->a : hw_create_qp(p->pd, &init);
	struct ibv_qp_attr before, after, a;
	const char *what, *field;
	int mask, rc;

	if (!qp || (!rts && rcp_to_init(p, qp)) || query(qp, &before))
		goto out;
	if (rts) {
		what = extra_rts(p, &before, &a, &mask);
		mask |= IBV_QP_STATE;
	} else {
		what = extra_init(p, &a, &mask);
	}
	rc = hw_modify_qp(qp, &a, mask);
	if (rc != EINVAL)
		rcp_fail(p,
			 "ibv_modify_qp of %s %u (%s) returned %d (%s); expected EINVAL (the transition does "
			 "not allow the attribute)",
			 rts ? "A, QP" : "a new RC QP in INIT,", qp->qp_num, what, rc,
			 rc ? strerror(rc) : "success");
	else if (query(qp, &after))
		rcp_fail(p, "ibv_query_qp of QP %u after a refused modify (%s) failed", qp->qp_num, what);
	else if ((field = changed(&before, &after)))
		rcp_fail(p, "a refused ibv_modify_qp of QP %u (%s) changed its %s", qp->qp_num, what, field);
out:
	if (qp && !rts)
		hw_destroy_qp(qp);
}

/*
 * A UD QP in RTS: RTS -> RTS with a new Q_Key, which UD takes there, and an
 * attribute UD never takes.  The Q_Key must stay the old one: a device that
 * applied it before finding the bad attribute now drops every datagram its
 * senders address with the key they were given.
 */
static void modify_ud_qkey(struct rcp *p)
{
	struct ibv_qp *qp = rcp_qp(p, IBV_QPT_UD, p->ocq, p->ocq);
	struct ibv_qp_attr before, after, a;
	struct ibv_qp_init_attr init;
	const char *what;
	int mask = IBV_QP_STATE | IBV_QP_QKEY, rc;

	memset(&before, 0, sizeof(before));
	memset(&after, 0, sizeof(after));
	if (!qp || rcp_bring(p, qp, NULL, IBV_QPS_RTS) || hw_query_qp(qp, &before, IBV_QP_STATE | IBV_QP_QKEY, &init))
		goto out;
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTS, .qkey = before.qkey ^ 0x5a5a0001u};
	if (rng_bernoulli(p->rng, 0.5)) {
		a.path_mtu = IBV_MTU_256;
		mask |= IBV_QP_PATH_MTU;
		what = "UD RTS -> RTS with a new IBV_QP_QKEY and IBV_QP_PATH_MTU, which UD never takes";
	} else {
		a.timeout = 14;
		mask |= IBV_QP_TIMEOUT;
		what = "UD RTS -> RTS with a new IBV_QP_QKEY and IBV_QP_TIMEOUT, which UD never takes";
	}
	rc = hw_modify_qp(qp, &a, mask);
	if (rc != EINVAL)
		rcp_fail(p, "ibv_modify_qp of QP %u (%s) returned %d (%s); expected EINVAL", qp->qp_num, what, rc,
			 rc ? strerror(rc) : "success");
	else if (hw_query_qp(qp, &after, IBV_QP_STATE | IBV_QP_QKEY, &init))
		rcp_fail(p, "ibv_query_qp of QP %u after a refused modify (%s) failed", qp->qp_num, what);
	else if (after.qkey != before.qkey)
		rcp_fail(p, "a refused ibv_modify_qp of QP %u (%s) changed its qkey %#x -> %#x", qp->qp_num, what,
			 before.qkey, after.qkey);
	else if (after.qp_state != IBV_QPS_RTS)
		rcp_fail(p, "a refused ibv_modify_qp of QP %u (%s) left it in %s", qp->qp_num, what,
			 rcp_state_name(after.qp_state));
out:
	if (qp)
		hw_destroy_qp(qp);
}

void rcp_case_refuse(struct rcp *p)
{
	int kind = rcp_variant(p, RF_KINDS);

	p->name = rf_names[kind];
	p->shape = (struct rcp_shape){.scqe = RCP_CQE,
				      .a_send_wr = 8,
				      .a_recv_wr = 2,
				      .b_recv_wr = 4,
				      .a_rnr_retry = 7,
				      .channel = kind == RF_ERROR_EVENT};
	if (rcp_setup(p))
		return;
	switch (kind) {
	case RF_BIND_OTHER_PD:
		bind_other_pd(p);
		break;
	case RF_ERROR_EVENT:
		error_event(p);
		break;
	case RF_STALE_INV:
		stale_inv(p);
		break;
	default:
		if (rng_bernoulli(p->rng, 0.3))
			modify_ud_qkey(p);
		else
			modify_extra(p);
		break;
	}
}
