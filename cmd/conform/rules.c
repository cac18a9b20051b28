/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Probe script (rcprobe.h): rules a NIC can get wrong without any data
 * going astray, each certain by the verbs spec or rdma-core's manuals:
 *
 *  - ranges: ibv_modify_qp takes every IB value of timeout (0..31),
 *    retry_cnt and rnr_retry (0..7) and min_rnr_timer (0..31), reports
 *    them back by ibv_query_qp, and refuses the value just past the range;
 *  - indexes: ibv_query_gid at gid_tbl_len, ibv_create_ah with a
 *    grh.sgid_index of gid_tbl_len and ibv_query_port of port 0 fail;
 *    on an Ethernet (RoCE) port so does ibv_create_ah without a GRH, as
 *    the kernel's rdma_check_ah_attr has it: the GRH is the address;
 *  - timeout 0: an RC request with IBV_QP_TIMEOUT 0 ("infinite") toward a
 *    responder in ERR never times out; it flushes when A enters ERR;
 *  - unsignaled local work: a BIND_MW and a LOCAL_INV posted without
 *    IBV_SEND_SIGNALED complete silently (ibv_post_send(3)), and on an
 *    sq_sig_all QP they complete;
 *  - a type-2 bind with no MR is no unbind (only LOCAL_INV or
 *    SEND_WITH_INV unbinds a type-2 window): it must not succeed;
 *  - ibv_wr_abort drops every WR built since ibv_wr_start: none executes;
 *    so does a builder call that failed (an SGE list longer than
 *    max_send_sge, inline data past max_inline_data), after which
 *    ibv_wr_complete fails and posts nothing of the batch (ibv_wr_post(3));
 *  - ibv_rereg_mr(IBV_REREG_MR_CHANGE_TRANSLATION): the MR then covers
 *    exactly the new [addr, addr + length), for local and remote access.
 */
#include "cmd/conform/rcp.h"

#include <stddef.h>
#include <string.h>

#define RULES_QUIET_NS (30 * 1000000ull) /* how long a request with timeout 0 must stay outstanding */

/* The four attributes with an IB range; MIN_RNR_TIMER last: it is set by RTS -> RTS (try_attr). */
#define RULES_MIN_RNR_TIMER 3
static const struct {
	const char *name;
	uint8_t max;
	size_t offset; /* of the uint8_t in struct ibv_qp_attr */
} rules_attr[4] = {
    {"timeout", 31, offsetof(struct ibv_qp_attr, timeout)},
    {"retry_cnt", 7, offsetof(struct ibv_qp_attr, retry_cnt)},
    {"rnr_retry", 7, offsetof(struct ibv_qp_attr, rnr_retry)},
    {"min_rnr_timer", 31, offsetof(struct ibv_qp_attr, min_rnr_timer)},
};

static uint8_t *attr_field(struct ibv_qp_attr *a, int k)
{
	return (uint8_t *)a + rules_attr[k].offset;
}

/*
 * qp in RTR toward B (*rts: already moved on to RTS): RTS with one attribute
 * at v; min_rnr_timer is set by RTS -> RTS once the QP is in RTS.
 */
static int try_attr(struct rcp *p, struct ibv_qp *qp, int k, uint8_t v, bool *rts)
{
	struct ibv_qp_attr a;
	int mask, rc;

	if (!*rts) {
		rcp_rts_attr(p, qp, 0, &a, &mask);
		if (k != RULES_MIN_RNR_TIMER)
			*attr_field(&a, k) = v;
		if ((rc = hw_modify_qp(qp, &a, mask)) || k != RULES_MIN_RNR_TIMER)
			return rc;
		*rts = true;
	}
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTS, .min_rnr_timer = v};
	return hw_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER);
}

/* One attribute: one past its range refused (the QP left as it was), then v taken and reported back. */
static void range_of(struct rcp *p, int k)
{
	uint8_t max = rules_attr[k].max;
	uint8_t v = rng_bernoulli(p->rng, 0.75) ? max : (uint8_t)rng_range(p->rng, 0, max);
	struct ibv_qp *qp = rcp_qp(p, IBV_QPT_RC, p->ocq, p->ocq);
	struct ibv_qp_attr got;
	struct ibv_qp_init_attr init;
	bool rts = false;
	int rc;

	if (!qp)
		return;
	if (rcp_bring(p, qp, p->b, IBV_QPS_RTR))
		goto out;
	if (!try_attr(p, qp, k, (uint8_t)(max + 1), &rts)) {
		rcp_fail(p, "a fresh RC QP (qpn %u) took %s %u; the IB range is 0..%u", qp->qp_num,
			 rules_attr[k].name, max + 1, max);
		goto out;
	}
	if ((rc = try_attr(p, qp, k, v, &rts))) {
		rcp_fail(p, "a fresh RC QP (qpn %u) refused %s %u (%s); the IB range is 0..%u", qp->qp_num,
			 rules_attr[k].name, v, strerror(rc), max);
		goto out;
	}
	if (hw_query_qp(qp, &got,
			IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			    IBV_QP_MIN_RNR_TIMER,
			&init))
		goto out;
	if (*attr_field(&got, k) != v)
		rcp_fail(p, "a fresh RC QP (qpn %u) given %s %u: ibv_query_qp reports %u", qp->qp_num,
			 rules_attr[k].name, v, *attr_field(&got, k));
out:
	hw_destroy_qp(qp);
}

static void ranges(struct rcp *p)
{
	for (int k = 0; k < 4 && !rcp_failed(p); k++)
		range_of(p, k);
}

static void indexes(struct rcp *p)
{
	struct ibv_context *ctx = p->dev->ctx;
	uint8_t port = (uint8_t)p->dev->port;
	struct ibv_port_attr pa;
	union ibv_gid gid;

	if (hw_query_port(ctx, port, &pa))
		return;
	if (pa.gid_tbl_len > 0 && pa.gid_tbl_len < 0x10000 && !hw_query_gid(ctx, port, pa.gid_tbl_len, &gid))
		rcp_fail(p, "ibv_query_gid of port %u at index %d = gid_tbl_len succeeded; expected an error",
			 port, pa.gid_tbl_len);
	if (pa.gid_tbl_len > 0 && pa.gid_tbl_len <= 0xff && !rcp_failed(p)) {
		/* An address whose source GID index has no table entry names no source GID. */
		struct ibv_ah_attr aha = rcp_self_ah_attr(p);
		struct ibv_ah *ah;

		aha.grh.sgid_index = (uint8_t)pa.gid_tbl_len;
		ah = hw_create_ah(p->pd, &aha);

		if (ah) {
			rcp_fail(p, "ibv_create_ah with grh.sgid_index %d = gid_tbl_len of port %u succeeded; expected "
				    "an error",
				 pa.gid_tbl_len, port);
			hw_destroy_ah(ah);
		}
	}
	if (pa.link_layer == IBV_LINK_LAYER_ETHERNET && !rcp_failed(p)) {
		struct ibv_ah_attr aha = rcp_self_ah_attr(p);
		struct ibv_ah *ah;

		aha.is_global = 0;
		if ((ah = hw_create_ah(p->pd, &aha))) {
			rcp_fail(p, "ibv_create_ah without a GRH (is_global 0) on Ethernet port %u succeeded; "
				    "expected EINVAL",
				 port);
			hw_destroy_ah(ah);
		}
	}
	if (!hw_query_port(ctx, 0, &pa))
		rcp_fail(p, "ibv_query_port of port 0 succeeded; ports are numbered from 1");
}

static void timeout_zero(struct rcp *p)
{
	struct ibv_sge sge = {(uintptr_t)(p->buf + RCP_SRC), 16, p->mr->lkey};
	struct rcp_exp e = rcp_done(p->base_id + 1, IBV_WC_WR_FLUSH_ERR, IBV_WC_SEND);
	uint64_t end;

	if (rcp_to_err(p->b) || rcp_post1(p, p->a, IBV_WR_SEND, e.wr_id, sge, 0))
		return;
	for (end = clock_ns() + RULES_QUIET_NS; clock_ns() < end && !rcp_failed(p);) {
		rcp_wait_ns(1000000);
		rcp_expect_empty(p, p->scq, "A's send CQ (a SEND with timeout 0, infinite, to B in ERR)");
	}
	if (rcp_failed(p) || rcp_to_err(p->a))
		return;
	rcp_expect(p, p->scq, "A's send CQ (the SEND with timeout 0 outstanding when A entered ERR)", &e, 1);
}

/* A marker WRITE, signaled: the only completion an unsignaled BIND_MW and LOCAL_INV before it allow. */
static void unsignaled_local(struct rcp *p)
{
	struct ibv_mw *mw = hw_alloc_mw(p->pd, IBV_MW_TYPE_2);
	struct ibv_send_wr wr[3], *bad;
	struct ibv_sge sge = {(uintptr_t)(p->buf + RCP_SRC), 8, p->mr->lkey};
	struct rcp_exp e = rcp_done(p->base_id + 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	uint32_t rkey;
	int rc;

	if (!mw)
		return;
	rkey = ibv_inc_rkey(mw->rkey);
	wr[0] = (struct ibv_send_wr){.wr_id = p->base_id, .next = &wr[1], .opcode = IBV_WR_BIND_MW};
	wr[0].bind_mw.mw = mw;
	wr[0].bind_mw.rkey = rkey;
	wr[0].bind_mw.bind_info = (struct ibv_mw_bind_info){.mr = p->mr,
							    .addr = (uintptr_t)(p->buf + RCP_TGT),
							    .length = 64,
							    .mw_access_flags = IBV_ACCESS_REMOTE_WRITE};
	wr[1] = (struct ibv_send_wr){
	    .wr_id = p->base_id + 1, .next = &wr[2], .opcode = IBV_WR_LOCAL_INV, .invalidate_rkey = rkey};
	wr[2] = (struct ibv_send_wr){.wr_id = e.wr_id,
				     .sg_list = &sge,
				     .num_sge = 1,
				     .opcode = IBV_WR_RDMA_WRITE,
				     .send_flags = IBV_SEND_SIGNALED};
	wr[2].wr.rdma.remote_addr = (uintptr_t)(p->buf + RCP_TGT + RCP_SLOT);
	wr[2].wr.rdma.rkey = p->mr->rkey;
	memcpy(p->model + RCP_TGT + RCP_SLOT, p->model + RCP_SRC, 8);
	if ((rc = hw_post_send(p->a, wr, &bad))) {
		if (bad != wr) /* a device without type-2 binds may refuse the bind itself */
			rcp_fail(p, "an unsignaled BIND_MW, LOCAL_INV and a WRITE: WR %d refused: %s",
				 (int)(bad - wr) + 1, strerror(rc));
		goto out;
	}
	if (p->shape.sig_all) { /* sq_sig_all: every WR completes, signaled or not */
		struct rcp_exp all[3] = {rcp_done(wr[0].wr_id, IBV_WC_SUCCESS, IBV_WC_BIND_MW),
					 rcp_done(wr[1].wr_id, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV), e};

		rcp_expect(p, p->scq, "A's send CQ (sq_sig_all: a BIND_MW, a LOCAL_INV and a WRITE)", all, 3);
	} else
		rcp_expect(p, p->scq,
			   "A's send CQ (an unsignaled BIND_MW and LOCAL_INV, then a signaled WRITE)", &e, 1);
	rcp_wait_ns(1000000);
	rcp_expect_empty(p, p->scq, "A's send CQ (unsignaled BIND_MW and LOCAL_INV complete silently)");
	rcp_check_memory(p);
out:
	hw_dealloc_mw(mw);
}

static void type2_no_mr(struct rcp *p)
{
	struct ibv_mw *mw = hw_alloc_mw(p->pd, IBV_MW_TYPE_2);
	struct ibv_send_wr wr = {.wr_id = p->base_id + 3,
				 .opcode = IBV_WR_BIND_MW,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	struct ibv_wc wc;

	if (!mw)
		return;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){.mr = NULL, .addr = 0, .length = 0};
	if (!hw_post_send(p->a, &wr, &bad) && rcp_poll1(p, p->scq, &wc) && wc.status == IBV_WC_SUCCESS)
		rcp_fail(
		    p,
		    "a BIND_MW of a free type-2 window (rkey %x) with no MR and length 0 succeeded; only "
		    "LOCAL_INV or SEND_WITH_INV unbind a type-2 window, a bind needs an MR (expected "
		    "MW_BIND_ERR)",
		    mw->rkey);
	hw_dealloc_mw(mw);
}

#define RULES_MAX_SGE_LIST 64 /* a longer max_send_sge is tried with inline data instead */

/*
 * The last WR of a batch given what it cannot take: an SGE list one entry longer than max_send_sge,
 * or inline data one byte past max_inline_data.  False when neither fits the probe.
 */
static bool wr_overflow(struct rcp *p, struct ibv_qp_ex *qx)
{
	struct ibv_sge sge[RULES_MAX_SGE_LIST + 1];
	uint32_t nsge = p->acap.max_send_sge + 1, inl = p->acap.max_inline_data + 1;
	bool use_sges = nsge <= RULES_MAX_SGE_LIST && (inl > RCP_AREA || rng_bernoulli(p->rng, 0.5));

	if (!use_sges && inl > RCP_AREA)
		return false;
	qx->wr_id = p->base_id + 9;
	qx->wr_flags = IBV_SEND_SIGNALED | (use_sges ? 0 : IBV_SEND_INLINE);
	ibv_wr_rdma_write(qx, p->mr->rkey, (uintptr_t)(p->buf + RCP_TGT + 4 * RCP_SLOT));
	if (!use_sges) {
		ibv_wr_set_inline_data(qx, p->buf + RCP_SRC, inl);
		return true;
	}
	for (uint32_t i = 0; i < nsge; i++)
		sge[i] = (struct ibv_sge){(uintptr_t)(p->buf + RCP_SRC + 8 * i), 8, p->mr->lkey};
	ibv_wr_set_sge_list(qx, nsge, sge);
	return true;
}

/* A batch of WRITEs dropped, by ibv_wr_abort or by a builder call that failed; then one WRITE works. */
static void wr_abort(struct rcp *p)
{
	struct ibv_qp_ex *qx = hw_qp_to_qp_ex(p->a);
	int k = (int)rng_range(p->rng, 1, 3), rc;
	struct rcp_exp e = rcp_done(p->base_id + 0x10, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	bool by_error = rng_bernoulli(p->rng, 0.5);
	struct ibv_wc wc;

	if (!qx)
		return;
	ibv_wr_start(qx);
	for (int i = 0; i < k; i++) {
		qx->wr_id = p->base_id + (uint64_t)i;
		qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(qx, p->mr->rkey, (uintptr_t)(p->buf + RCP_TGT + (uint32_t)i * RCP_SLOT));
		ibv_wr_set_sge(qx, p->mr->lkey, (uintptr_t)(p->buf + RCP_SRC + (uint32_t)i * 64), 64);
	}
	if (by_error && wr_overflow(p, qx)) {
		if (!(rc = ibv_wr_complete(qx))) {
			rcp_fail(p, "ibv_wr_complete of %d WRITEs and one given more SGEs or inline data than the "
				    "QP takes returned 0; expected an error, and nothing of the batch posted",
				 k);
			return;
		}
		rcp_wait_ns(1000000);
		rcp_expect_empty(p, p->scq, "A's send CQ (the WRs of an ibv_wr_* batch whose ibv_wr_complete failed)");
		rcp_check_memory(p);
		if (rcp_failed(p))
			return;
	} else {
		ibv_wr_abort(qx);
	}
	ibv_wr_start(qx);
	qx->wr_id = e.wr_id;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qx, p->mr->rkey, (uintptr_t)(p->buf + RCP_TGT + 5 * RCP_SLOT));
	ibv_wr_set_sge(qx, p->mr->lkey, (uintptr_t)(p->buf + RCP_SRC + 5 * 64), 64);
	memcpy(p->model + RCP_TGT + 5 * RCP_SLOT, p->model + RCP_SRC + 5 * 64, 64);
	if ((rc = ibv_wr_complete(qx))) {
		rcp_fail(p, "ibv_wr_complete of one WRITE after an ibv_wr_abort of %d returned %d", k, rc);
		return;
	}
	rcp_judge(p, p->scq, "A's extended send CQ (one WRITE posted after an ibv_wr_abort of others)", &wc,
		  rcp_poll_ex(p, p->scq_ex, &wc, 1), &e, 1);
	rcp_wait_ns(1000000);
	rcp_expect_empty(p, p->scq, "A's send CQ (the WRs of an aborted ibv_wr_* batch never complete)");
	rcp_check_memory(p);
}

static void rereg_translation(struct rcp *p)
{
	uint32_t old = RCP_TGT + 3 * RCP_SLOT, at = RCP_TGT + 5 * RCP_SLOT;
	uint32_t len = (uint32_t)rng_range(p->rng, 128, RCP_SLOT);
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	struct ibv_mr *mr = hw_reg_mr(p->pd, p->buf + old, RCP_SLOT, acc);
	struct ibv_sge s2;
	struct rcp_exp e[2] = {rcp_done(p->base_id + 4, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE),
			       rcp_done(p->base_id + 5, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE)};
	struct rcp_piece w1 = {at, 32}, w1src = {RCP_SRC, 32}, w2src = {at + len - 32, 32},
			 w2 = {RCP_TGT + RCP_SLOT, 32};

	if (!mr)
		return;
	if (hw_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, p->buf + at, len, acc))
		goto out; /* a device may refuse to re-register */
	if (mr->addr != p->buf + at || mr->length != len) {
		rcp_fail(p, "ibv_rereg_mr(CHANGE_TRANSLATION) to %p, %u bytes: the MR reports %p, %zu bytes",
			 (void *)(p->buf + at), len, mr->addr, mr->length);
		goto out;
	}
	s2 = (struct ibv_sge){(uintptr_t)(p->buf + w2src.off), 32, mr->lkey};
	rcp_model_move(p, &w1src, 1, &w1, 1);
	rcp_model_move(p, &w2src, 1, &w2, 1);
	if (rcp_post1_rkey(p, p->a, e[0].wr_id, w1src, (uintptr_t)(p->buf + at), mr->rkey) ||
	    rcp_post1(p, p->a, IBV_WR_RDMA_WRITE, e[1].wr_id, s2, (uintptr_t)(p->buf + w2.off))) {
		rcp_fail(p, "two WRITEs through an MR moved by ibv_rereg_mr refused at post");
		goto out;
	}
	rcp_expect(p, p->scq,
		   "A's send CQ (a WRITE into, then one from, the new range of an MR moved by ibv_rereg_mr)",
		   e, 2);
	rcp_check_memory(p);
out:
	hw_dereg_mr(mr);
}

void rcp_case_rules(struct rcp *p)
{
	static const char *const names[7] = {
	    "rules: timeout, retry_cnt, rnr_retry, min_rnr_timer at and past their range",
	    "rules: query_gid, create_ah and query_port past their tables",
	    "rules: timeout 0 never times out",
	    "rules: unsignaled BIND_MW and LOCAL_INV complete silently",
	    "rules: a type-2 bind without an MR",
	    "rules: ibv_wr_abort, or a builder call that failed, drops the batch",
	    "rules: ibv_rereg_mr(CHANGE_TRANSLATION) moves the MR"};
	int kind = rcp_variant(p, 7);

	p->name = names[kind];
	p->shape = (struct rcp_shape){.scqe = RCP_CQE,
				      .a_send_wr = 8,
				      .a_recv_wr = 1,
				      .b_recv_wr = 2,
				      .a_rnr_retry = 7,
				      .ext = kind == 5,
				      .sig_all = kind == 3 && rng_bernoulli(p->rng, 0.3),
				      .timeout0 = kind == 2};
	if (rcp_setup(p))
		return;
	if (kind == 0)
		ranges(p);
	else if (kind == 1)
		indexes(p);
	else if (kind == 2)
		timeout_zero(p);
	else if (kind == 3)
		unsignaled_local(p);
	else if (kind == 4)
		type2_no_mr(p);
	else if (kind == 5)
		wr_abort(p);
	else
		rereg_translation(p);
}
