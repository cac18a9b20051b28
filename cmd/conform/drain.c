/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Probe script (rcprobe.h): the Send Queue Drain state, and completions
 * left waiting in a CQ when one of the QPs sharing it is reset.
 *
 *  - a QP in SQD takes send WRs (ibv_post_send(3), IBTA 10.3.1) and starts
 *    none of them: RC WRITEs and SENDs, or UD datagrams, posted in SQD
 *    neither complete nor touch the remote memory until the QP is back in
 *    RTS, and then they run, in order; SQD -> ERR flushes them instead
 *    (WR_FLUSH_ERR, the memory untouched); half the time the RTS -> SQD
 *    carries IBV_QP_EN_SQD_ASYNC_NOTIFY with en_sqd_async_notify 0, and no
 *    IBV_EVENT_SQ_DRAINED may come (the value asks for it, not the mask bit);
 *  - RTS -> SQD with en_sqd_async_notify while a SEND posted before it
 *    waits on RNR (no receive at B, rnr_retry 7): ibv_query_qp says SQD
 *    with sq_draining 1, and no
 *    IBV_EVENT_SQ_DRAINED comes; once B posts the receive the SEND
 *    completes, the event comes (ibv_get_async_event(3)) and sq_draining
 *    reads 0; a drained QP takes SQD -> SQD attribute changes (IBTA
 *    11.2.1.2; a device that refuses them is skipped) and still holds
 *    what is posted to it;
 *  - two QPs on one small CQ whose head was moved along (and, some runs,
 *    around the ring) by completions polled earlier: with completions of
 *    both waiting, one QP is reset or destroyed; every waiting completion
 *    of the other comes out exactly once, in order, and no completion
 *    polled before comes back.  The reset QP's own waiting completions may
 *    stay or go (providers differ): not judged, beyond coming at most once.
 */
#include "cmd/conform/rcp.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define DRAIN_QUIET_NS (20 * 1000000ull) /* how long held work must stay held */
#define DRAIN_HELD     3		 /* WRs posted in SQD, at most */
#define DRAIN_LEN      16u
#define SHARED_QP_WR   4 /* rcp_qp's send queue */
#define SHARED_MAX     (2 * SHARED_QP_WR)

enum { DRAIN_POST_RC, DRAIN_POST_UD, DRAIN_RNR, DRAIN_SHARED_CQ, DRAIN_KINDS };

static const char *const drain_names[DRAIN_KINDS] = {
    "drain: RC WRs posted in SQD wait for RTS (or are flushed by ERR)",
    "drain: UD datagrams posted in SQD wait for RTS (or are flushed by ERR)",
    "drain: SQD with a SEND outstanding on RNR: sq_draining, SQ_DRAINED after it completes",
    "drain: a QP reset on a shared CQ whose head has moved on",
};

/* ---- ibv_query_qp in SQD ---- */

/*
 * qp_state SQD; sq_draining `draining` (-1: not judged).  cur_qp_state is
 * not judged: rxe reports the one last passed to ibv_modify_qp.
 */
static void expect_sqd(struct rcp *p, struct ibv_qp *qp, const char *who, int draining)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr init;

	memset(&a, 0, sizeof(a));
	if (hw_query_qp(qp, &a, IBV_QP_STATE, &init)) {
		rcp_fail(p, "ibv_query_qp of %s (QP %u) failed", who, qp->qp_num);
		return;
	}
	if (a.qp_state != IBV_QPS_SQD)
		rcp_fail(p, "ibv_query_qp of %s (QP %u): qp_state %s; expected SQD", who, qp->qp_num,
			 rcp_state_name(a.qp_state));
	else if (draining >= 0 && a.sq_draining != draining)
		rcp_fail(p, "ibv_query_qp of %s (QP %u): sq_draining %u; expected %d", who, qp->qp_num,
			 a.sq_draining, draining);
}

/* Polls cq (the device's progress may ride on polls) for ns: nothing must come. */
static void quiet(struct rcp *p, struct ibv_cq *cq, const char *who, uint64_t ns)
{
	uint64_t end = clock_ns() + ns;
	unsigned idle = 0;

	while (clock_ns() < end && !rcp_failed(p)) {
		rcp_expect_empty(p, cq, who);
		rcp_idle(&idle);
	}
}

/* Takes the async events already queued (a stale SQ_DRAINED of an earlier QP at qp's address among them). */
static void drop_events(struct rcp *p, struct ibv_qp *qp)
{
	for (int i = 0; i < 64 && rcp_async_event(p, IBV_EVENT_SQ_DRAINED, qp, 0) == 1; i++)
		;
}

/* ---- WRs posted in SQD ---- */

struct held {
	int n;
	struct ibv_send_wr wr[DRAIN_HELD];
	struct ibv_sge sge[DRAIN_HELD];
	struct rcp_piece src[DRAIN_HELD], dst[DRAIN_HELD];
	struct rcp_exp a[DRAIN_HELD], b[DRAIN_HELD]; /* A's completions; B's receives (one per SEND) */
	int nb;
	bool ud;
};

/*
 * Posts 1..DRAIN_HELD WRs to p->a, which is in SQD: RC WRITEs into B's
 * targets and SENDs into receives B posts now; UD (ah set) datagrams.
 * 0: posted; -1: refused (a failure) or nothing to judge.
 */
static int post_held(struct rcp *p, struct held *h, struct ibv_ah *ah, uint32_t slot0)
{
	struct ibv_send_wr *bad = NULL;
	int rc;

	h->n = (int)rng_range(p->rng, 1, DRAIN_HELD);
	h->nb = 0;
	h->ud = ah != NULL;
	for (int i = 0; i < h->n; i++) {
		uint32_t slot = slot0 + (uint32_t)i;
		bool send = h->ud || rng_bernoulli(p->rng, 0.5);
		uint64_t id = p->base_id + 0x60 + slot;

		h->src[i] = (struct rcp_piece){
		    RCP_SRC + slot * RCP_SLOT + 8 * (uint32_t)rng_range(p->rng, 0, 63), DRAIN_LEN};
		h->sge[i] = (struct ibv_sge){(uintptr_t)(p->buf + h->src[i].off), DRAIN_LEN, p->mr->lkey};
		h->wr[i] = (struct ibv_send_wr){.wr_id = id,
						.next = i + 1 < h->n ? &h->wr[i + 1] : NULL,
						.sg_list = &h->sge[i],
						.num_sge = 1,
						.opcode = send ? IBV_WR_SEND : IBV_WR_RDMA_WRITE,
						.send_flags = IBV_SEND_SIGNALED};
		h->a[i] = rcp_done(id, IBV_WC_SUCCESS, send ? IBV_WC_SEND : IBV_WC_RDMA_WRITE);
		if (send) {
			/* UD: the GRH comes first in the receive buffer. */
			uint32_t grh = h->ud ? 40u : 0u;
			struct rcp_exp *r = &h->b[h->nb];

			h->dst[i] = (struct rcp_piece){RCP_RECV + slot * RCP_SLOT + grh, DRAIN_LEN};
			*r = rcp_done(p->base_id + 0x80 + slot, IBV_WC_SUCCESS, IBV_WC_RECV);
			r->check_len = true;
			r->byte_len = grh + DRAIN_LEN;
			r->ud = h->ud;
			if (h->ud)
				r->src_qp = p->a->qp_num;
			if (rcp_recv1(p->b, r->wr_id,
				      (struct ibv_sge){(uintptr_t)(p->buf + RCP_RECV + slot * RCP_SLOT), 256,
						       p->mr->lkey})) {
				rcp_fail(p, "B's receive %d refused at post", h->nb + 1);
				return -1;
			}
			h->nb++;
			if (h->ud) {
				h->wr[i].wr.ud.ah = ah;
				h->wr[i].wr.ud.remote_qpn = p->b->qp_num;
				h->wr[i].wr.ud.remote_qkey = RCP_UD_QKEY;
			}
		} else {
			h->dst[i] = (struct rcp_piece){
			    RCP_TGT + slot * RCP_SLOT + 8 * (uint32_t)rng_range(p->rng, 0, 63), DRAIN_LEN};
			h->wr[i].wr.rdma.remote_addr = (uintptr_t)(p->buf + h->dst[i].off);
			h->wr[i].wr.rdma.rkey = p->mr->rkey;
		}
	}
	if ((rc = hw_post_send(p->a, h->wr, &bad))) {
		rcp_fail(
		    p,
		    "ibv_post_send of %d WR(s) on %s QP %u in SQD refused (%s, *bad_wr WR %d); a QP in SQD "
		    "takes send WRs and holds them until RTS (IBTA 10.3.1, ibv_post_send(3))",
		    h->n, h->ud ? "UD" : "RC", p->a->qp_num, strerror(rc), bad ? (int)(bad - h->wr) + 1 : 0);
		return -1;
	}
	return 0;
}

/*
 * The WRs of h wait: nothing completes, nothing lands, for DRAIN_QUIET_NS.
 * Then A goes back to RTS (they run, in order) or to ERR (they are flushed).
 */
static void judge_held(struct rcp *p, struct held *h, const char *why)
{
	bool to_err = rng_bernoulli(p->rng, 0.35);
	struct ibv_qp_attr a = {.qp_state = to_err ? IBV_QPS_ERR : IBV_QPS_RTS};
	char who[160];

	snprintf(who, sizeof(who), "A's send CQ (%d WR(s) posted in SQD%s)", h->n, why);
	quiet(p, p->scq, who, DRAIN_QUIET_NS);
	snprintf(who, sizeof(who), "B's receive CQ (A's SENDs posted in SQD%s)", why);
	if (!rcp_failed(p))
		rcp_expect_empty(p, p->rcq, who);
	rcp_check_memory(p); /* nothing landed yet */
	if (rcp_failed(p))
		return;
	if (hw_modify_qp(p->a, &a, IBV_QP_STATE)) {
		rcp_fail(p, "ibv_modify_qp of A (QP %u) SQD -> %s refused", p->a->qp_num,
			 to_err ? "ERR" : "RTS");
		return;
	}
	if (to_err) {
		for (int i = 0; i < h->n; i++)
			h->a[i].status = IBV_WC_WR_FLUSH_ERR;
		snprintf(who, sizeof(who), "A's send CQ (WRs held in SQD%s, then SQD -> ERR)", why);
		rcp_expect(p, p->scq, who, h->a, h->n);
		quiet(p, p->rcq, "B's receive CQ (A's SENDs held in SQD were flushed by ERR)",
		      RCP_DEADLINE_NS / 300);
		rcp_check_memory(p); /* the flushed WRITEs and SENDs never ran */
		return;
	}
	for (int i = 0; i < h->n; i++)
		rcp_model_move(p, &h->src[i], 1, &h->dst[i], 1);
	snprintf(who, sizeof(who), "A's send CQ (WRs held in SQD%s, then SQD -> RTS)", why);
	rcp_expect(p, p->scq, who, h->a, h->n);
	snprintf(who, sizeof(who), "B's receive CQ (A's SENDs held in SQD%s, then SQD -> RTS)", why);
	rcp_expect(p, p->rcq, who, h->b, h->nb);
	if (h->ud) /* the GRHs are rcp_case_ud's to judge */
		for (int i = 0; i < h->n; i++)
			memcpy(p->model + h->dst[i].off - 40, p->buf + h->dst[i].off - 40, 40);
	rcp_check_memory(p);
}

static void post_in_sqd(struct rcp *p, bool ud)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_SQD};
	struct ibv_qp *rc_a = p->a, *rc_b = p->b, *ua = NULL, *ub = NULL;
	struct ibv_ah *ah = NULL;
	/* The mask bit with the value 0: no SQ_DRAINED was asked for (it is the value that asks). */
	bool notify_off = rng_bernoulli(p->rng, 0.5);
	struct held h;

	if (ud) {
		if (!(ua = rcp_qp(p, IBV_QPT_UD, p->scq, p->ocq)) ||
		    !(ub = rcp_qp(p, IBV_QPT_UD, p->ocq, p->rcq)) || rcp_bring(p, ua, NULL, IBV_QPS_RTS) ||
		    rcp_bring(p, ub, NULL, IBV_QPS_RTS) || !(ah = rcp_self_ah(p)))
			goto out;
		p->a = ua;
		p->b = ub;
	}
	drop_events(p, p->a);
	if (hw_modify_qp(p->a, &a, IBV_QP_STATE | (notify_off ? IBV_QP_EN_SQD_ASYNC_NOTIFY : 0))) {
		p->abandoned = true; /* SQD is optional */
		goto out;
	}
	expect_sqd(p, p->a, "A after RTS -> SQD, nothing outstanding", -1);
	if (notify_off && !rcp_failed(p) && rcp_async_event(p, IBV_EVENT_SQ_DRAINED, p->a, DRAIN_QUIET_NS / 2) == 1)
		rcp_fail(p,
			 "IBV_EVENT_SQ_DRAINED for A (QP %u) after RTS -> SQD with IBV_QP_EN_SQD_ASYNC_NOTIFY in the "
			 "mask and en_sqd_async_notify 0: nobody asked for the event",
			 p->a->qp_num);
	if (!rcp_failed(p) && !post_held(p, &h, ah, 0))
		judge_held(p, &h, "");
out:
	if (ud)
		rcp_ud_pair_free(p, rc_a, rc_b, ua, ub, ah);
}

/* ---- SQD with a SEND outstanding ---- */

/* B's WRITE into its target slot 7, posted after A's SEND: once it completed, the SEND has been sent. */
static void after_send(struct rcp *p)
{
	struct rcp_piece src = {RCP_SRC + 7 * RCP_SLOT, DRAIN_LEN}, tgt = {RCP_TGT + 7 * RCP_SLOT, DRAIN_LEN};
	struct rcp_exp w = rcp_done(p->base_id + 0x5f, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);

	if (rcp_post1(p, p->b, IBV_WR_RDMA_WRITE, w.wr_id,
		      (struct ibv_sge){(uintptr_t)(p->buf + src.off), src.len, p->mr->lkey},
		      (uintptr_t)(p->buf + tgt.off))) {
		rcp_fail(p, "B's WRITE refused at post");
		return;
	}
	rcp_model_move(p, &src, 1, &tgt, 1);
	rcp_expect(p, p->ocq, "B's send CQ (a WRITE posted after A's SEND that waits on RNR)", &w, 1);
	rcp_wait_ns(1000000); /* and a moment more */
}

/* RTS -> SQD -> SQD with new timeout and retry_cnt, where the device takes it; -1: it refused. */
static int sqd_to_sqd(struct rcp *p)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_SQD,
				.timeout = (uint8_t)rng_range(p->rng, 12, 20),
				.retry_cnt = (uint8_t)rng_range(p->rng, 1, 6)},
			   got;
	struct ibv_qp_init_attr init;

	if (hw_modify_qp(p->a, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT))
		return -1; /* optional */
	if (hw_query_qp(p->a, &got, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT, &init)) {
		rcp_fail(p, "ibv_query_qp of A (QP %u) after SQD -> SQD failed", p->a->qp_num);
		return 0;
	}
	if (got.timeout != a.timeout || got.retry_cnt != a.retry_cnt)
		rcp_fail(
		    p,
		    "A (QP %u) took SQD -> SQD with timeout %u retry_cnt %u; ibv_query_qp says timeout %u "
		    "retry_cnt %u",
		    p->a->qp_num, a.timeout, a.retry_cnt, got.timeout, got.retry_cnt);
	expect_sqd(p, p->a, "A after SQD -> SQD", 0);
	return 0;
}

static void drain_rnr(struct rcp *p)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_SQD, .en_sqd_async_notify = 1};
	struct ibv_sge sge = {(uintptr_t)(p->buf + RCP_SRC + 6 * RCP_SLOT), DRAIN_LEN, p->mr->lkey};
	struct rcp_piece src = {RCP_SRC + 6 * RCP_SLOT, DRAIN_LEN},
			 dst = {RCP_RECV + 6 * RCP_SLOT, DRAIN_LEN};
	struct rcp_exp s = rcp_done(p->base_id + 0x56, IBV_WC_SUCCESS, IBV_WC_SEND),
		       r = rcp_done(p->base_id + 0x57, IBV_WC_SUCCESS, IBV_WC_RECV);
	struct held h;
	int ev;

	drop_events(p, p->a);
	/* No receive at B: the SEND waits on RNR NAKs for as long as it takes (rnr_retry 7). */
	if (rcp_post1(p, p->a, IBV_WR_SEND, s.wr_id, sge, 0)) {
		rcp_fail(p, "A's SEND refused at post");
		return;
	}
	after_send(p);
	if (rcp_failed(p))
		return;
	if (hw_modify_qp(p->a, &a, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY)) {
		p->abandoned = true; /* SQD is optional */
		return;
	}
	expect_sqd(p, p->a, "A after RTS -> SQD, its SEND still waiting on RNR", 1);
	if (rcp_failed(p))
		return;
	if (rcp_async_event(p, IBV_EVENT_SQ_DRAINED, p->a, DRAIN_QUIET_NS) == 1) {
		rcp_fail(p,
			 "IBV_EVENT_SQ_DRAINED for A (QP %u) came while the SEND it posted before RTS -> SQD "
			 "was still outstanding (no receive at B, RNR)",
			 p->a->qp_num);
		return;
	}
	quiet(p, p->scq, "A's send CQ (a SEND waiting on RNR, rnr_retry 7, A in SQD)",
	      RCP_DEADLINE_NS / 3000);
	expect_sqd(p, p->a, "A in SQD, its SEND still waiting on RNR", 1);
	if (rcp_failed(p))
		return;
	/* The receive: the SEND completes, and then the drain. */
	if (rcp_recv1(p->b, r.wr_id, (struct ibv_sge){(uintptr_t)(p->buf + dst.off), 64, p->mr->lkey})) {
		rcp_fail(p, "B's receive refused at post");
		return;
	}
	rcp_model_move(p, &src, 1, &dst, 1);
	rcp_expect(p, p->rcq, "B's receive CQ (A's SEND that waited on RNR while A went to SQD)", &r, 1);
	rcp_expect(p, p->scq, "A's send CQ (its SEND outstanding at RTS -> SQD)", &s, 1);
	if (rcp_failed(p))
		return;
	ev = rcp_async_event(p, IBV_EVENT_SQ_DRAINED, p->a, RCP_EVENT_NS);
	if (ev < 0) {
		p->abandoned = true;
		return;
	}
	if (!ev) {
		rcp_fail(p,
			 "no IBV_EVENT_SQ_DRAINED for A (QP %u, RTS -> SQD with en_sqd_async_notify) within "
			 "%llu ms of its last outstanding SEND completing",
			 p->a->qp_num, RCP_EVENT_NS / 1000000);
		return;
	}
	expect_sqd(p, p->a, "A after IBV_EVENT_SQ_DRAINED", 0);
	rcp_check_memory(p);
	if (rcp_failed(p))
		return;
	if (rng_bernoulli(p->rng, 0.6) && sqd_to_sqd(p) == 0 && rcp_failed(p))
		return;
	if (!post_held(p, &h, NULL, 0))
		judge_held(p, &h, ", after the drain");
}

/* ---- a QP reset on a shared CQ ---- */

struct sq_track {
	struct ibv_qp *qp;
	uint32_t qpn;
	uint64_t ids[64]; /* every WR posted, in order */
	int posted, polled;
};

/* A signaled WRITE of DRAIN_LEN bytes from t's source slot to a target slot; 0: posted. */
static int shared_write(struct rcp *p, struct sq_track *t, int who)
{
	uint32_t k = (uint32_t)t->posted % 16;
	struct rcp_piece src = {RCP_SRC + (uint32_t)who * 4 * RCP_SLOT + 64 * k, DRAIN_LEN},
			 dst = {RCP_TGT + (uint32_t)who * 4 * RCP_SLOT + 64 * k, DRAIN_LEN};
	uint64_t id = p->base_id + ((uint64_t)who << 7) + (uint64_t)t->posted;

	if (t->posted >= 64 ||
	    rcp_post1(p, t->qp, IBV_WR_RDMA_WRITE, id,
		      (struct ibv_sge){(uintptr_t)(p->buf + src.off), src.len, p->mr->lkey},
		      (uintptr_t)(p->buf + dst.off)))
		return -1;
	memcpy(p->model + dst.off, p->buf + src.off, DRAIN_LEN); /* sources are never written */
	t->ids[t->posted++] = id;
	return 0;
}

/* A completion of t: the next one it owes (1), one it already gave (-1), or not its own (0). */
static int owed(const struct sq_track *t, const struct ibv_wc *wc)
{
	if (wc->qp_num != t->qpn)
		return 0;
	if (t->polled < t->posted && wc->wr_id == t->ids[t->polled])
		return 1;
	for (int i = 0; i < t->polled; i++)
		if (t->ids[i] == wc->wr_id)
			return -1;
	return 0;
}

static void shared_cq(struct rcp *p)
{
	struct ibv_cq *cq = hw_create_cq(p->dev->ctx, (int)rng_range(p->rng, 4, 8), NULL, NULL, 0);
	struct sq_track t[2] = {{0}};
	bool destroy = rng_bernoulli(p->rng, 0.3), wrap;
	int victim = (int)rng_range(p->rng, 0, 1), size, before, n[2];
	uint64_t end;
	unsigned idle = 0, late = 0;
	struct ibv_wc wc;
	struct ibv_qp_attr reset = {.qp_state = IBV_QPS_RESET};

	if (!cq)
		return;
	size = cq->cqe < SHARED_MAX ? cq->cqe : SHARED_MAX;
	for (int i = 0; i < 2; i++)
		if (!(t[i].qp = rcp_qp(p, IBV_QPT_RC, cq, p->ocq)))
			goto out;
	for (int i = 0; i < 2; i++) {
		t[i].qpn = t[i].qp->qp_num;
		if (rcp_bring(p, t[i].qp, t[1 - i].qp, IBV_QPS_RTS))
			goto out;
	}
	/* Completions polled first: the CQ's head moves along, and some runs all the way around. */
	wrap = rng_bernoulli(p->rng, 0.5);
	before = wrap ? cq->cqe + 1 + (int)rng_range(p->rng, 0, (uint64_t)cq->cqe)
		      : (int)rng_range(p->rng, 1, (uint64_t)(cq->cqe > 1 ? cq->cqe - 1 : 1));
	if (before > 40)
		before = 40;
	while (before > 0 && !rcp_failed(p)) {
		int k = before < size ? before : size, got = 0;

		for (int i = 0; i < k; i++)
			if (shared_write(p, &t[i % 2], i % 2))
				goto out;
		before -= k;
		end = clock_ns() + RCP_DEADLINE_NS;
		while (got < k && !rcp_failed(p)) {
			int o;

			if (hw_poll_cq(cq, 1, &wc) != 1) {
				if (rcp_late(end, &late))
					rcp_fail(p, "the shared CQ: %d of %d WRITEs completed within %llu ms",
						 got, k, RCP_DEADLINE_NS / 1000000);
				rcp_idle(&idle);
				continue;
			}
			o = wc.qp_num == t[0].qpn ? 0 : 1;
			if (wc.status != IBV_WC_SUCCESS || owed(&t[o], &wc) != 1)
				rcp_fail(p,
					 "the shared CQ gave wr_id %llx status %s qp_num %u; expected QP "
					 "%u's %llx",
					 (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status),
					 wc.qp_num, t[o].qpn, (unsigned long long)t[o].ids[t[o].polled]);
			t[o].polled++;
			got++;
		}
	}
	if (rcp_failed(p))
		goto out;
	/* Completions of both QPs left waiting: each QP's last WRITE landed, and a moment more. */
	n[0] = (int)rng_range(p->rng, 1, SHARED_QP_WR);
	n[1] = (int)rng_range(p->rng, 1, SHARED_QP_WR);
	while (n[0] + n[1] > size)
		n[n[0] > n[1] ? 0 : 1]--;
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < n[i]; j++)
			if (shared_write(p, &t[i], i))
				goto out;
	if (rcp_wait_landed(p, RCP_TGT, RCP_AREA, "the WRITEs of the shared CQ's QPs"))
		goto out;
	rcp_wait_ns(1000000);
	if (destroy ? hw_destroy_qp(t[victim].qp) : hw_modify_qp(t[victim].qp, &reset, IBV_QP_STATE))
		goto out;
	if (destroy)
		t[victim].qp = NULL;
	/* The survivor's waiting completions, exactly once and in order; the victim's at most once. */
	end = clock_ns() + RCP_DEADLINE_NS;
	idle = late = 0;
	for (;;) {
		struct sq_track *s = &t[1 - victim], *v = &t[victim];
		bool all = s->polled == s->posted;
		int o;

		if (hw_poll_cq(cq, 1, &wc) != 1) {
			if (all ? clock_ns() > end - RCP_DEADLINE_NS + 2000000 : rcp_late(end, &late))
				break;
			rcp_idle(&idle);
			continue;
		}
		if ((o = owed(s, &wc)) == 1 && wc.status == IBV_WC_SUCCESS) {
			s->polled++;
			continue;
		}
		if (o == 0 && owed(v, &wc) == 1) {
			v->polled++; /* the reset QP's own: may stay or go */
			continue;
		}
		rcp_fail(
		    p,
		    "the CQ QPs %u and %u share, after QP %u was %s: wr_id %llx status %s qp_num %u (%s); "
		    "expected QP %u's %llx, in order",
		    t[0].qpn, t[1].qpn, v->qpn, destroy ? "destroyed" : "reset", (unsigned long long)wc.wr_id,
		    ibv_wc_status_str(wc.status), wc.qp_num,
		    owed(s, &wc) < 0 || owed(v, &wc) < 0 ? "a completion polled before, back again"
							 : "not the next one waiting",
		    s->qpn, all ? 0ull : (unsigned long long)s->ids[s->polled]);
		goto out;
	}
	if (t[1 - victim].polled != t[1 - victim].posted)
		rcp_fail(
		    p,
		    "the CQ QPs %u and %u share: after QP %u was %s, %d of QP %u's %d waiting completions "
		    "came out",
		    t[0].qpn, t[1].qpn, t[victim].qpn, destroy ? "destroyed" : "reset",
		    n[1 - victim] - (t[1 - victim].posted - t[1 - victim].polled), t[1 - victim].qpn,
		    n[1 - victim]);
	rcp_check_memory(p);
out:
	for (int i = 0; i < 2; i++)
		if (t[i].qp)
			hw_destroy_qp(t[i].qp);
	hw_destroy_cq(cq);
}

void rcp_case_drain(struct rcp *p)
{
	int kind = rcp_variant(p, DRAIN_KINDS);

	p->name = drain_names[kind];
	p->shape = (struct rcp_shape){
	    .scqe = RCP_CQE, .a_send_wr = DRAIN_HELD + 1, .a_recv_wr = 1, .b_recv_wr = 4, .a_rnr_retry = 7};
	if (rcp_setup(p))
		return;
	switch (kind) {
	case DRAIN_POST_RC:
		post_in_sqd(p, false);
		break;
	case DRAIN_POST_UD:
		post_in_sqd(p, true);
		break;
	case DRAIN_RNR:
		drain_rnr(p);
		break;
	default:
		shared_cq(p);
	}
}
