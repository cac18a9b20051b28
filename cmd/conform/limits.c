/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Probe script (rcprobe.h): limits at exactly their value.  What
 * ibv_query_device or ibv_create_qp reports is a promise: the value itself
 * must work, one more must be refused (and leave things as they were).
 *
 *  - rd_atomic: the pair reconnected with max_dest_rd_atomic =
 *    max_qp_rd_atom and max_rd_atomic = max_qp_init_rd_atom (or values
 *    below); one more is refused with the QP still in INIT or RTR;
 *    ibv_query_qp reports the values; more READs and atomics than
 *    max_rd_atomic posted at once all complete, in order (the excess
 *    waits, it does not fail);
 *  - resize: ibv_resize_cq to exactly the number of completions waiting
 *    succeeds and keeps them all, in order (ibv_resize_cq(3): cqe must be
 *    at least that number);
 *    A resize below that number fails, or keeps them all (cqe at least
 *    that number);
 *  - cqe: a CQ of exactly max_cqe entries is created, a CQ resized to
 *    exactly max_cqe, and neither to max_cqe + 1;
 *  - inline: an inline SEND of exactly the max_inline_data ibv_create_qp
 *    reported arrives intact; one byte more is refused at post;
 *  - sge: a SEND gathered from exactly max_send_sge SGEs into a receive
 *    of max_recv_sge SGEs arrives intact; one SGE more is refused at post.
 */
#include "cmd/conform/rcp.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define LIM_OPS	    24
#define LIM_MAX_SGE 32

enum { LIM_RD_ATOMIC, LIM_RESIZE, LIM_INLINE, LIM_SGE, LIM_CQE, LIM_KINDS };

static const char *const lim_names[LIM_KINDS] = {
    "limits: max_rd_atomic and max_dest_rd_atomic at the device's maximum",
    "limits: ibv_resize_cq to exactly the completions waiting",
    "limits: an inline SEND of exactly max_inline_data",
    "limits: a SEND of exactly max_send_sge SGEs",
    "limits: a CQ of exactly max_cqe entries",
};

static enum ibv_qp_state state_now(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr init;

	return hw_query_qp(qp, &a, IBV_QP_STATE, &init) ? (enum ibv_qp_state) - 1 : a.qp_state;
}

/* modify_qp with `field` one above its limit must fail and leave qp in `st`. */
static void refuse_one_more(struct rcp *p, struct ibv_qp *qp, struct ibv_qp_attr *a, int mask,
			    const char *field, int limit, enum ibv_qp_state st)
{
	int rc = hw_modify_qp(qp, a, mask);

	if (!rc)
		rcp_fail(p, "QP %u: modify_qp to %s with %s = %d, one above the device's limit, succeeded",
			 qp->qp_num, rcp_state_name(a->qp_state), field, limit + 1);
	else if (state_now(qp) != st)
		rcp_fail(p, "QP %u: a refused modify_qp to %s (%s = %d) left it in %s; expected %s",
			 qp->qp_num, rcp_state_name(a->qp_state), field, limit + 1,
			 rcp_state_name(state_now(qp)), rcp_state_name(st));
}

/* RESET -> INIT -> RTR -> RTS with max_dest_rd_atomic kd and max_rd_atomic k; 0: done. */
static int connect_rd(struct rcp *p, struct ibv_qp *qp, struct ibv_qp *dest, int kd, int k)
{
	const struct ibv_device_attr *d = &p->dev->dattr;
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RESET};
	int mask, rc;

	if (hw_modify_qp(qp, &a, IBV_QP_STATE) || rcp_to_init(p, qp))
		return -1;
	rcp_rtr_attr(p, dest, &a, &mask);
	if (kd == d->max_qp_rd_atom && kd < 255) {
		a.max_dest_rd_atomic = (uint8_t)(kd + 1);
		refuse_one_more(p, qp, &a, mask, "max_dest_rd_atomic", kd, IBV_QPS_INIT);
	}
	a.max_dest_rd_atomic = (uint8_t)kd;
	if ((rc = hw_modify_qp(qp, &a, mask))) {
		rcp_fail(p,
			 "QP %u: modify_qp INIT -> RTR with max_dest_rd_atomic = %d (max_qp_rd_atom %d) "
			 "failed: %s",
			 qp->qp_num, kd, d->max_qp_rd_atom, strerror(rc));
		return -1;
	}
	rcp_rts_attr(p, qp, 7, &a, &mask);
	if (k == d->max_qp_init_rd_atom && k < 255) {
		a.max_rd_atomic = (uint8_t)(k + 1);
		refuse_one_more(p, qp, &a, mask, "max_rd_atomic", k, IBV_QPS_RTR);
	}
	a.max_rd_atomic = (uint8_t)k;
	if ((rc = hw_modify_qp(qp, &a, mask))) {
		rcp_fail(
		    p,
		    "QP %u: modify_qp RTR -> RTS with max_rd_atomic = %d (max_qp_init_rd_atom %d) failed: %s",
		    qp->qp_num, k, d->max_qp_init_rd_atom, strerror(rc));
		return -1;
	}
	if (hw_query_qp(qp, &a, IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC,
			&(struct ibv_qp_init_attr){0}))
		return -1;
	if (a.max_rd_atomic != k || a.max_dest_rd_atomic != kd)
		rcp_fail(
		    p,
		    "QP %u: ibv_query_qp reports max_rd_atomic %u, max_dest_rd_atomic %u; %d and %d were set",
		    qp->qp_num, a.max_rd_atomic, a.max_dest_rd_atomic, k, kd);
	return rcp_failed(p) ? -1 : 0;
}

/* READs (and FETCH_ADDs of 1) on A, more than max_rd_atomic, posted as one chain. */
static void many_reads(struct rcp *p, int n)
{
	struct ibv_send_wr wr[LIM_OPS], *bad;
	struct ibv_sge sge[LIM_OPS];
	struct rcp_exp e[LIM_OPS];

	for (int i = 0; i < n; i++) {
		bool atomic = rng_bernoulli(p->rng, 0.3);
		struct rcp_piece from = {RCP_TGT + 64 * (uint32_t)i, atomic ? 8 : 64},
				 to = {RCP_RDST + 64 * (uint32_t)i, from.len};
		uint64_t old;

		sge[i] = (struct ibv_sge){(uintptr_t)(p->buf + to.off), to.len, p->mr->lkey};
		wr[i] =
		    (struct ibv_send_wr){.wr_id = p->base_id + (uint64_t)i,
					 .next = i + 1 < n ? &wr[i + 1] : NULL,
					 .sg_list = sge + i,
					 .num_sge = 1,
					 .opcode = atomic ? IBV_WR_ATOMIC_FETCH_AND_ADD : IBV_WR_RDMA_READ,
					 .send_flags = IBV_SEND_SIGNALED};
		e[i] = rcp_done(wr[i].wr_id, IBV_WC_SUCCESS, atomic ? IBV_WC_FETCH_ADD : IBV_WC_RDMA_READ);
		if (atomic) {
			wr[i].wr.atomic.remote_addr = (uintptr_t)(p->buf + from.off);
			wr[i].wr.atomic.rkey = p->mr->rkey;
			wr[i].wr.atomic.compare_add = 1;
			rcp_model_move(p, &from, 1, &to, 1);
			memcpy(&old, p->model + from.off, 8);
			old += 1;
			memcpy(p->model + from.off, &old, 8);
		} else {
			wr[i].wr.rdma.remote_addr = (uintptr_t)(p->buf + from.off);
			wr[i].wr.rdma.rkey = p->mr->rkey;
			rcp_model_move(p, &from, 1, &to, 1);
			e[i].check_len = true;
			e[i].byte_len = to.len;
		}
	}
	if (hw_post_send(p->a, wr, &bad)) {
		rcp_fail(p, "a chain of %d READs and atomics (within max_send_wr) refused at post", n);
		return;
	}
	rcp_expect(p, p->scq, "A's send CQ (more READs and atomics than max_rd_atomic)", e, n);
}

static void rd_atomic(struct rcp *p)
{
	const struct ibv_device_attr *d = &p->dev->dattr;
	bool exact = rng_bernoulli(p->rng, 0.6);
	int kd, k;

	if (d->max_qp_rd_atom < 1 || d->max_qp_init_rd_atom < 1 || p->acap.max_send_wr < LIM_OPS)
		return;
	kd = exact ? d->max_qp_rd_atom : (int)rng_range(p->rng, 1, (uint64_t)d->max_qp_rd_atom);
	k = exact ? d->max_qp_init_rd_atom : (int)rng_range(p->rng, 1, (uint64_t)d->max_qp_init_rd_atom);
	if (k > kd) /* the requester never has more outstanding than the responder takes */
		k = kd;
	p->psn_a = (uint32_t)rng_next(p->rng) & 0xffffff;
	p->psn_b = (uint32_t)rng_next(p->rng) & 0xffffff;
	if (connect_rd(p, p->b, p->a, kd, d->max_qp_init_rd_atom < kd ? d->max_qp_init_rd_atom : kd) ||
	    connect_rd(p, p->a, p->b, kd, k))
		return;
	many_reads(p, k + 1 < LIM_OPS ? (int)rng_range(p->rng, (uint64_t)k + 1, LIM_OPS) : LIM_OPS);
	rcp_check_memory(p);
}

/* k SENDs into B's receives, none polled; B's receive CQ resized to exactly k. */
static void resize_exact(struct rcp *p)
{
	struct rcp_exp r[16], s[16];
	uint32_t k = (uint32_t)rng_range(p->rng, 1, 16);
	int rc;

	for (uint32_t i = 0; i < k; i++) {
		struct rcp_piece from = {RCP_SRC + 32 * i, 32}, to = {RCP_RECV + 64 * i, 32};
		struct ibv_sge sge = {(uintptr_t)(p->buf + from.off), from.len, p->mr->lkey};

		r[i] = rcp_done(p->base_id + 0x40 + i, IBV_WC_SUCCESS, IBV_WC_RECV);
		r[i].check_len = true;
		r[i].byte_len = 32;
		s[i] = rcp_done(p->base_id + i, IBV_WC_SUCCESS, IBV_WC_SEND);
		if (rcp_recv1(p->b, r[i].wr_id,
			      (struct ibv_sge){(uintptr_t)(p->buf + to.off), 64, p->mr->lkey}) ||
		    rcp_post1(p, p->a, IBV_WR_SEND, s[i].wr_id, sge, 0))
			return;
		rcp_model_move(p, &from, 1, &to, 1);
	}
	/* A's completions: each SEND was received, so its completion is in B's CQ (or on its way). */
	rcp_expect(p, p->scq, "A's send CQ", s, (int)k);
	if (rcp_failed(p))
		return;
	if (k > 1 && rng_bernoulli(p->rng, 0.3) && hw_resize_cq(p->rcq, (int)k - 1) == 0 &&
	    p->rcq->cqe < (int)k) {
		rcp_fail(p,
			 "ibv_resize_cq to %u entries, below the %u completions waiting, succeeded with "
			 "cq->cqe %d",
			 k - 1, k, p->rcq->cqe);
		return;
	}
	if ((rc = hw_resize_cq(p->rcq, (int)k))) {
		rcp_fail(p,
			 "ibv_resize_cq of B's receive CQ to exactly the %u completions it holds failed: %s",
			 k, strerror(rc));
		return;
	}
	if (p->rcq->cqe < (int)k)
		rcp_fail(p, "ibv_resize_cq to %u entries left cq->cqe at %d", k, p->rcq->cqe);
	rcp_expect(p, p->rcq, "B's receive CQ (resized to exactly the completions it held)", r, (int)k);
	rcp_expect_empty(p, p->rcq, "B's receive CQ (after ibv_resize_cq)");
	rcp_check_memory(p);
}

/* An inline SEND of exactly max_inline_data bytes (from the source area, any alignment). */
static void inline_exact(struct rcp *p)
{
	uint32_t max = p->acap.max_inline_data, off = RCP_SRC + (uint32_t)rng_range(p->rng, 0, 63);
	struct ibv_sge sge = {(uintptr_t)(p->buf + off), max, p->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = p->base_id,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE},
			   *bad;
	struct rcp_exp s = rcp_done(wr.wr_id, IBV_WC_SUCCESS, IBV_WC_SEND),
		       r = rcp_done(p->base_id + 0x40, IBV_WC_SUCCESS, IBV_WC_RECV);
	struct rcp_piece from = {off, max}, to = {RCP_RECV, max};
	int rc;

	if (!max || max + 64 > RCP_SLOT)
		return;
	if (rcp_recv1(p->b, r.wr_id, (struct ibv_sge){(uintptr_t)(p->buf + RCP_RECV), max + 64, p->mr->lkey}))
		return;
	sge.length = max + 1;
	if (!hw_post_send(p->a, &wr, &bad)) {
		rcp_fail(p, "an inline SEND of max_inline_data + 1 = %u bytes was accepted", max + 1);
		return;
	}
	sge.length = max;
	if ((rc = hw_post_send(p->a, &wr, &bad))) {
		rcp_fail(
		    p,
		    "an inline SEND of exactly max_inline_data = %u bytes (as ibv_create_qp reported) was "
		    "refused: %s",
		    max, strerror(rc));
		return;
	}
	/* Inline: the source may change once posted; what was there at post must arrive. */
	rcp_model_move(p, &from, 1, &to, 1);
	memset(p->buf + off, 0xa5, max);
	memset(p->model + off, 0xa5, max);
	r.check_len = true;
	r.byte_len = max;
	rcp_expect(p, p->rcq, "B's receive CQ (an inline SEND of max_inline_data)", &r, 1);
	rcp_expect(p, p->scq, "A's send CQ (an inline SEND of max_inline_data)", &s, 1);
	rcp_check_memory(p);
}

/* A SEND of exactly max_send_sge pieces into a receive of exactly max_recv_sge pieces. */
static void sge_exact(struct rcp *p)
{
	int ns = (int)p->acap.max_send_sge, nr = (int)p->bcap.max_recv_sge, rc;
	struct rcp_piece src[LIM_MAX_SGE + 1], dst[LIM_MAX_SGE];
	struct ibv_sge ss[LIM_MAX_SGE + 1], rs[LIM_MAX_SGE];
	struct ibv_send_wr wr = {.wr_id = p->base_id,
				 .sg_list = ss,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	struct ibv_recv_wr rw = {.wr_id = p->base_id + 0x40, .sg_list = rs, .num_sge = nr}, *rbad;
	struct rcp_exp s = rcp_done(wr.wr_id, IBV_WC_SUCCESS, IBV_WC_SEND),
		       r = rcp_done(rw.wr_id, IBV_WC_SUCCESS, IBV_WC_RECV);

	if (ns < 1 || ns > LIM_MAX_SGE || nr < 1 || nr > LIM_MAX_SGE)
		return;
	for (int i = 0; i <= ns; i++) {
		src[i] =
		    (struct rcp_piece){RCP_SRC + 128 * (uint32_t)i + (uint32_t)rng_range(p->rng, 0, 7), 40};
		ss[i] = (struct ibv_sge){(uintptr_t)(p->buf + src[i].off), src[i].len, p->mr->lkey};
	}
	for (int i = 0; i < nr; i++) {
		dst[i] =
		    (struct rcp_piece){RCP_RECV + 256 * (uint32_t)i + (uint32_t)rng_range(p->rng, 0, 7), 64};
		rs[i] = (struct ibv_sge){(uintptr_t)(p->buf + dst[i].off), dst[i].len, p->mr->lkey};
	}
	if ((rc = hw_post_recv(p->b, &rw, &rbad))) {
		rcp_fail(p, "a receive of exactly max_recv_sge = %d SGEs was refused: %s", nr, strerror(rc));
		return;
	}
	wr.num_sge = ns + 1;
	if (!hw_post_send(p->a, &wr, &bad)) {
		rcp_fail(p, "a SEND of max_send_sge + 1 = %d SGEs was accepted", ns + 1);
		return;
	}
	wr.num_sge = ns;
	if ((rc = hw_post_send(p->a, &wr, &bad))) {
		rcp_fail(p, "a SEND of exactly max_send_sge = %d SGEs was refused: %s", ns, strerror(rc));
		return;
	}
	rcp_model_move(p, src, ns, dst, nr);
	r.check_len = true;
	r.byte_len = 40u * (uint32_t)ns;
	rcp_expect(p, p->rcq, "B's receive CQ (a SEND of max_send_sge SGEs)", &r, 1);
	rcp_expect(p, p->scq, "A's send CQ (a SEND of max_send_sge SGEs)", &s, 1);
	rcp_check_memory(p);
}

static void cqe_exact(struct rcp *p)
{
	int max = p->dev->dattr.max_cqe, rc;
	struct ibv_cq *cq;

	if (max <= 0 || max > 1 << 20)
		return;
	if (!(cq = hw_create_cq(p->dev->ctx, max, NULL, NULL, 0))) {
		rcp_fail(p, "ibv_create_cq of exactly max_cqe = %d entries failed: %s", max, strerror(errno));
		return;
	}
	if (cq->cqe < max)
		rcp_fail(p, "ibv_create_cq of max_cqe = %d entries reported cqe %d", max, cq->cqe);
	hw_destroy_cq(cq);
	if (rcp_failed(p))
		return;
	if ((cq = hw_create_cq(p->dev->ctx, max + 1, NULL, NULL, 0))) {
		hw_destroy_cq(cq);
		rcp_fail(p, "ibv_create_cq of max_cqe + 1 = %d entries succeeded", max + 1);
		return;
	}
	if (!hw_resize_cq(p->ocq, max + 1))
		rcp_fail(p, "ibv_resize_cq to max_cqe + 1 = %d entries succeeded", max + 1);
	else if ((rc = hw_resize_cq(p->ocq, max)))
		rcp_fail(p, "ibv_resize_cq of an empty CQ to exactly max_cqe = %d entries failed: %s", max,
			 strerror(rc));
	else if (p->ocq->cqe < max)
		rcp_fail(p, "ibv_resize_cq to max_cqe = %d entries left cq->cqe at %d", max, p->ocq->cqe);
}

void rcp_case_limits(struct rcp *p)
{
	int kind = rcp_variant(p, LIM_KINDS);

	p->name = lim_names[kind];
	p->shape = (struct rcp_shape){.scqe = RCP_CQE,
				      .a_send_wr = kind == LIM_RD_ATOMIC ? LIM_OPS : 16,
				      .a_recv_wr = 1,
				      .b_recv_wr = 16,
				      .a_rnr_retry = 7};
	if (rcp_setup(p))
		return;
	switch (kind) {
	case LIM_RD_ATOMIC:
		rd_atomic(p);
		break;
	case LIM_RESIZE:
		resize_exact(p);
		break;
	case LIM_INLINE:
		inline_exact(p);
		break;
	case LIM_CQE:
		cqe_exact(p);
		break;
	default:
		sge_exact(p);
	}
}
