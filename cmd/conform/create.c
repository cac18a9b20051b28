/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Probe script (rcprobe.h): what creation and registration must refuse, and
 * what they must report, on objects of the script's own (freed after).
 * Each run checks a random few of:
 *
 *  - ibv_create_cq: a comp_vector of num_comp_vectors or more fails, one of
 *    num_comp_vectors - 1 works, and the CQ reports cqe >= the cqe asked
 *    for (ibv_create_cq(3));
 *  - ibv_create_cq_ex: a wc_flags bit no provider defines, or a comp_mask
 *    or flags bit libibverbs does not define, fails; the single-threaded
 *    hint (IBV_CREATE_CQ_ATTR_SINGLE_THREADED) works; wc_flags beyond the standard
 *    ones (CVLAN, FLOW_TAG, TM_INFO, the timestamps) are optional: a
 *    device refuses what it cannot report (EOPNOTSUPP), so a CQ it does
 *    create must have a reader for every field asked for, and a real
 *    completion read through them (ibv_start_poll) must be sane;
 *  - ibv_create_qp of RC, UC and UD: max_send_wr/max_recv_wr past
 *    max_qp_wr and max_send_sge/max_recv_sge past max_sge fail (rcprobe.c
 *    checks RC; here UC and UD too); max_inline_data of 64 KiB or 1 MiB
 *    fails or is reported as at least that; every QP made reports caps at
 *    least those asked for, and ibv_query_qp's cap is what create reported;
 *  - ibv_create_srq (a device with max_srq > 0): max_wr past max_srq_wr and
 *    max_sge past max_srq_sge fail, the SRQ reports at least what was asked
 *    for, ibv_query_srq agrees, srq_limit above max_wr is refused;
 *  - ibv_rereg_mr(IBV_REREG_MR_CHANGE_ACCESS) to REMOTE_WRITE or
 *    REMOTE_ATOMIC without LOCAL_WRITE fails (EINVAL, as ibv_reg_mr does,
 *    IBTA 10.6.3.1) and leaves the MR as it was: its lkey still gathers, a
 *    remote WRITE through its rkey is still refused;
 *  - ibv_alloc_mw of a type that is neither 1 nor 2 fails.
 *
 * Already checked elsewhere and not repeated: ibv_reg_mr of remote write or
 * atomic without LOCAL_WRITE, create_cq past max_cqe, RC QPs past the
 * limits (rcprobe.c's check_device_limits), a valid CHANGE_ACCESS taking
 * effect (rcprobe_ext.c), a comp channel in use refused (check_busy).
 */
#include "cmd/conform/rcp.h"

#include <stdio.h>
#include <string.h>

static const char *qpt_name(enum ibv_qp_type t)
{
	return t == IBV_QPT_RC ? "RC" : t == IBV_QPT_UC ? "UC" : "UD";
}

/* ibv_create_cq(3): comp_vector must be below the context's num_comp_vectors. */
static void cq_vectors(struct rcp *p)
{
	struct ibv_context *ctx = p->dev->ctx;
	int n = ctx->num_comp_vectors, cqe = (int)rng_range(p->rng, 1, 100), bad;
	struct ibv_cq *cq;

	if (n <= 0 || n > 1 << 16)
		return;
	if (!(cq = hw_create_cq(ctx, cqe, NULL, NULL, n - 1))) {
		if (errno != ENOMEM)
			rcp_fail(
			    p,
			    "ibv_create_cq of %d entries on comp_vector %d (num_comp_vectors %d) failed: %s",
			    cqe, n - 1, n, strerror(errno));
		return;
	}
	if (cq->cqe < cqe)
		rcp_fail(p, "ibv_create_cq of %d entries reported cqe %d; expected at least %d", cqe, cq->cqe,
			 cqe);
	hw_destroy_cq(cq);
	bad = rng_bernoulli(p->rng, 0.5) ? n : n + (int)rng_range(p->rng, 1, 1000);
	if ((cq = hw_create_cq(ctx, cqe, NULL, NULL, bad))) {
		hw_destroy_cq(cq);
		rcp_fail(p,
			 "ibv_create_cq on comp_vector %d succeeded; the context has num_comp_vectors %d: "
			 "expected EINVAL",
			 bad, n);
	}
}

/* The optional wc_flags and whether their reader is there. */
static const struct {
	uint64_t flag;
	const char *name;
} optional_wc[] = {
    {IBV_WC_EX_WITH_CVLAN, "IBV_WC_EX_WITH_CVLAN"},
    {IBV_WC_EX_WITH_FLOW_TAG, "IBV_WC_EX_WITH_FLOW_TAG"},
    {IBV_WC_EX_WITH_TM_INFO, "IBV_WC_EX_WITH_TM_INFO"},
    {IBV_WC_EX_WITH_COMPLETION_TIMESTAMP, "IBV_WC_EX_WITH_COMPLETION_TIMESTAMP"},
    {IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK, "IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK"},
};

static bool has_reader(const struct ibv_cq_ex *cx, uint64_t flag)
{
	switch (flag) {
	case IBV_WC_EX_WITH_CVLAN:
		return cx->read_cvlan;
	case IBV_WC_EX_WITH_FLOW_TAG:
		return cx->read_flow_tag;
	case IBV_WC_EX_WITH_TM_INFO:
		return cx->read_tm_info;
	case IBV_WC_EX_WITH_COMPLETION_TIMESTAMP:
		return cx->read_completion_ts;
	default:
		return cx->read_completion_wallclock_ns;
	}
}

/* A UD SEND from ua to ub (both on cx), read back through every reader asked for (wc_flags). */
static void cq_ex_traffic(struct rcp *p, struct ibv_cq_ex *cx, uint64_t wc_flags, const char *asked)
{
	struct ibv_cq *cq = ibv_cq_ex_to_cq(cx);
	struct ibv_qp *ua = rcp_qp(p, IBV_QPT_UD, cq, cq), *ub = ua ? rcp_qp(p, IBV_QPT_UD, cq, cq) : NULL;
	struct ibv_ah *ah = ub ? rcp_self_ah(p) : NULL;
	uint32_t len = (uint32_t)rng_range(p->rng, 1, 256);
	struct ibv_sge rs = {(uintptr_t)(p->buf + RCP_RECV), len + 40, p->mr->lkey},
		       ss = {(uintptr_t)(p->buf + RCP_SRC), len, p->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = p->base_id + 0x51,
				 .sg_list = &ss,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	uint64_t end = clock_ns() + RCP_DEADLINE_NS;
	unsigned idle = 0, late = 0;
	bool seen_send = false, seen_recv = false;
	int rc;

	if (!ah || rcp_bring(p, ua, NULL, IBV_QPS_RTS) || rcp_bring(p, ub, NULL, IBV_QPS_RTS) ||
	    rcp_recv1(ub, p->base_id + 0x52, rs))
		goto out;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = ub->qp_num;
	wr.wr.ud.remote_qkey = RCP_UD_QKEY;
	if ((rc = hw_post_send(ua, &wr, &bad))) {
		rcp_fail(p, "a UD SEND of %u bytes to itself was refused at post: %s", len, strerror(rc));
		goto out;
	}
	while (!(seen_send && seen_recv) && !rcp_failed(p)) {
		struct ibv_poll_cq_attr pa = {0};
		bool recv;

		if ((rc = ibv_start_poll(cx, &pa)) == ENOENT) {
			if (rcp_late(end, &late)) {
				rcp_fail(p, "a CQ made with wc_flags %s: the UD SEND's %s did not arrive",
					 asked,
					 seen_send   ? "receive"
					 : seen_recv ? "send completion"
						     : "completions");
				break;
			}
			rcp_idle(&idle);
			continue;
		}
		if (rc) {
			rcp_fail(p, "ibv_start_poll of a CQ made with wc_flags %s returned %d", asked, rc);
			break;
		}
		recv = cx->wr_id == p->base_id + 0x52;
		if (cx->status != IBV_WC_SUCCESS || (!recv && cx->wr_id != wr.wr_id))
			rcp_fail(
			    p,
			    "a CQ made with wc_flags %s: completion wr_id %llx, status %s; expected %llx or "
			    "%llx, SUCCESS",
			    asked, (unsigned long long)cx->wr_id, ibv_wc_status_str(cx->status),
			    (unsigned long long)wr.wr_id, (unsigned long long)p->base_id + 0x52);
		else if (ibv_wc_read_opcode(cx) != (recv ? IBV_WC_RECV : IBV_WC_SEND) ||
			 ibv_wc_read_qp_num(cx) != (recv ? ub : ua)->qp_num ||
			 (recv &&
			  (ibv_wc_read_byte_len(cx) != len + 40 || ibv_wc_read_src_qp(cx) != ua->qp_num)))
			rcp_fail(p,
				 "a CQ made with wc_flags %s: the %s completion reads opcode %d, qp_num %u, "
				 "byte_len "
				 "%u, src_qp %u; expected opcode %d, qp_num %u%s",
				 asked, recv ? "receive" : "send", ibv_wc_read_opcode(cx),
				 ibv_wc_read_qp_num(cx), ibv_wc_read_byte_len(cx),
				 recv ? ibv_wc_read_src_qp(cx) : 0, recv ? IBV_WC_RECV : IBV_WC_SEND,
				 (recv ? ub : ua)->qp_num,
				 recv ? ", byte_len payload + 40 (the GRH), src_qp the sender" : "");
		else {
			/* Each field asked for is read (the values of these optional ones are the device's).
			 */
			struct ibv_wc_tm_info tm;

			if (wc_flags & IBV_WC_EX_WITH_CVLAN)
				(void)ibv_wc_read_cvlan(cx);
			if (wc_flags & IBV_WC_EX_WITH_FLOW_TAG)
				(void)ibv_wc_read_flow_tag(cx);
			if (wc_flags & IBV_WC_EX_WITH_TM_INFO)
				ibv_wc_read_tm_info(cx, &tm);
			if ((wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK) &&
			    !ibv_wc_read_completion_wallclock_ns(cx))
				rcp_fail(
				    p, "a CQ made with wc_flags %s: the %s completion's wallclock time is 0",
				    asked, recv ? "receive" : "send");
			if (wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
				(void)ibv_wc_read_completion_ts(cx);
		}
		if (recv && !rcp_failed(p)) {
			if (memcmp(p->buf + RCP_RECV + 40, p->model + RCP_SRC, len))
				rcp_fail(p,
					 "a CQ made with wc_flags %s: the UD SEND's %u bytes arrived changed",
					 asked, len);
			memcpy(p->model + RCP_RECV, p->buf + RCP_RECV, len + 40);
		}
		seen_recv |= recv;
		seen_send |= !recv;
		ibv_end_poll(cx);
	}
out:
	rcp_ud_free(ua, ub, ah);
}

static void cq_ex_flags(struct rcp *p)
{
	struct ibv_cq_init_attr_ex ca = {.cqe = 8, .wc_flags = IBV_WC_STANDARD_FLAGS | (1ull << 40)};
	struct ibv_cq_ex *cx;
	uint64_t extra = 0;
	char asked[256] = "IBV_WC_STANDARD_FLAGS";

	/* A bit no provider defines. */
	if ((cx = ibv_create_cq_ex(p->dev->ctx, &ca))) {
		hw_destroy_cq(ibv_cq_ex_to_cq(cx));
		rcp_fail(p, "ibv_create_cq_ex with wc_flags bit 1 << 40 (defined by none) succeeded");
		return;
	}
	/* A comp_mask bit libibverbs does not define. */
	ca = (struct ibv_cq_init_attr_ex){
	    .cqe = 8, .wc_flags = IBV_WC_STANDARD_FLAGS, .comp_mask = IBV_CQ_INIT_ATTR_MASK_PD << 8};
	if ((cx = ibv_create_cq_ex(p->dev->ctx, &ca))) {
		hw_destroy_cq(ibv_cq_ex_to_cq(cx));
		rcp_fail(p, "ibv_create_cq_ex with comp_mask %#x (an undefined bit) succeeded", ca.comp_mask);
		return;
	}
	/*
	 * IBV_CREATE_CQ_ATTR_SINGLE_THREADED only says the application serializes its use of the CQ: a
	 * device may ignore the hint but not refuse it (mlx4 and mlx5 take it, and applications set it
	 * without a fallback).  A flag bit libibverbs does not define is refused.
	 */
	ca = (struct ibv_cq_init_attr_ex){.cqe = 8,
					  .wc_flags = IBV_WC_STANDARD_FLAGS,
					  .comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS,
					  .flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED};
	if (!(cx = ibv_create_cq_ex(p->dev->ctx, &ca))) {
		rcp_fail(p,
			 "ibv_create_cq_ex with flags IBV_CREATE_CQ_ATTR_SINGLE_THREADED failed: %s; the "
			 "flag is a hint a device may ignore, never a reason to refuse",
			 strerror(errno));
		return;
	}
	hw_destroy_cq(ibv_cq_ex_to_cq(cx));
	ca.flags = 1u << 7;
	if ((cx = ibv_create_cq_ex(p->dev->ctx, &ca))) {
		hw_destroy_cq(ibv_cq_ex_to_cq(cx));
		rcp_fail(p, "ibv_create_cq_ex with flags 1 << 7 (defined by none) succeeded");
		return;
	}
	/* Optional fields: refused, or there with a reader each. */
	while (!extra)
		for (size_t i = 0; i < sizeof(optional_wc) / sizeof(optional_wc[0]); i++)
			if (rng_bernoulli(p->rng, 0.3)) {
				extra |= optional_wc[i].flag;
				snprintf(asked + strlen(asked), sizeof(asked) - strlen(asked), " | %s",
					 optional_wc[i].name);
			}
	ca = (struct ibv_cq_init_attr_ex){.cqe = 8, .wc_flags = IBV_WC_STANDARD_FLAGS | extra};
	if (!(cx = ibv_create_cq_ex(p->dev->ctx, &ca)))
		return; /* the device cannot report them: right */
	for (size_t i = 0; i < sizeof(optional_wc) / sizeof(optional_wc[0]); i++)
		if ((extra & optional_wc[i].flag) && !has_reader(cx, optional_wc[i].flag)) {
			rcp_fail(
			    p,
			    "ibv_create_cq_ex with wc_flags %s succeeded but the CQ has no reader for %s: "
			    "a device that cannot report a field must refuse it (EOPNOTSUPP)",
			    asked, optional_wc[i].name);
			break;
		}
	if (!rcp_failed(p))
		cq_ex_traffic(p, cx, extra, asked);
	hw_destroy_cq(ibv_cq_ex_to_cq(cx));
}

static bool cap_below(const struct ibv_qp_cap *got, const struct ibv_qp_cap *want)
{
	return got->max_send_wr < want->max_send_wr || got->max_recv_wr < want->max_recv_wr ||
	       got->max_send_sge < want->max_send_sge || got->max_recv_sge < want->max_recv_sge ||
	       got->max_inline_data < want->max_inline_data;
}

static bool cap_differs(const struct ibv_qp_cap *a, const struct ibv_qp_cap *b)
{
	return a->max_send_wr != b->max_send_wr || a->max_recv_wr != b->max_recv_wr ||
	       a->max_send_sge != b->max_send_sge || a->max_recv_sge != b->max_recv_sge ||
	       a->max_inline_data != b->max_inline_data;
}

/* A QP made: its caps at least those asked for, and ibv_query_qp's the ones create reported. */
static void qp_caps_made(struct rcp *p, struct ibv_qp *qp, enum ibv_qp_type t, const struct ibv_qp_cap *want,
			 const struct ibv_qp_cap *got)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr qi;
	int rc;

	if (cap_below(got, want))
		rcp_fail(
		    p,
		    "ibv_create_qp (%s) asked for wr %u/%u, sge %u/%u, inline %u; reported smaller caps: wr "
		    "%u/%u, sge %u/%u, inline %u",
		    qpt_name(t), want->max_send_wr, want->max_recv_wr, want->max_send_sge, want->max_recv_sge,
		    want->max_inline_data, got->max_send_wr, got->max_recv_wr, got->max_send_sge,
		    got->max_recv_sge, got->max_inline_data);
	else if ((rc = hw_query_qp(qp, &a, IBV_QP_CAP, &qi)))
		rcp_fail(p, "ibv_query_qp(IBV_QP_CAP) of a new %s QP failed: %s", qpt_name(t), strerror(rc));
	else if (cap_differs(&qi.cap, got))
		rcp_fail(p,
			 "ibv_query_qp of a new %s QP reports init_attr.cap wr %u/%u, sge %u/%u, inline %u; "
			 "ibv_create_qp reported wr %u/%u, sge %u/%u, inline %u",
			 qpt_name(t), qi.cap.max_send_wr, qi.cap.max_recv_wr, qi.cap.max_send_sge,
			 qi.cap.max_recv_sge, qi.cap.max_inline_data, got->max_send_wr, got->max_recv_wr,
			 got->max_send_sge, got->max_recv_sge, got->max_inline_data);
}

static struct ibv_qp_init_attr some_qp(struct rcp *p, enum ibv_qp_type t)
{
	const struct ibv_device_attr *d = &p->dev->dattr;

	return (struct ibv_qp_init_attr){
	    .send_cq = p->ocq,
	    .recv_cq = p->ocq,
	    .qp_type = t,
	    .cap = {.max_send_wr = (uint32_t)rng_range(p->rng, 1, (uint64_t)imin(d->max_qp_wr, 64)),
		    .max_recv_wr = (uint32_t)rng_range(p->rng, 1, (uint64_t)imin(d->max_qp_wr, 64)),
		    .max_send_sge = (uint32_t)rng_range(p->rng, 1, (uint64_t)imin(d->max_sge, 4)),
		    .max_recv_sge = (uint32_t)rng_range(p->rng, 1, (uint64_t)imin(d->max_sge, 4))}};
}

/* UC and UD past max_qp_wr or max_sge (RC: rcprobe.c's check_device_limits). */
static void qp_past_limits(struct rcp *p)
{
	enum ibv_qp_type t = rng_bernoulli(p->rng, 0.5) ? IBV_QPT_UC : IBV_QPT_UD;
	struct ibv_qp_init_attr init = some_qp(p, t);
	struct ibv_qp *qp;
	const char *what;

	what = rcp_cap_past_limit(p, &init.cap);
	if ((qp = hw_create_qp(p->pd, &init))) {
		hw_destroy_qp(qp);
		rcp_fail(p, "ibv_create_qp (%s) with %s succeeded; expected EINVAL", qpt_name(t), what);
	}
}

/*
 * A QP of type t: with inline 64 KiB or 1 MiB (absurd: refused, or really reported), else with a modest
 * inline (a device without inline may refuse it: then none); what it reports is then checked.
 */
static void qp_made(struct rcp *p, enum ibv_qp_type t, bool absurd)
{
	struct ibv_qp_init_attr init = some_qp(p, t);
	struct ibv_qp_cap want;
	struct ibv_qp *qp;

	init.cap.max_inline_data = absurd ? (rng_bernoulli(p->rng, 0.5) ? 1u << 20 : 1u << 16)
				   : rng_bernoulli(p->rng, 0.5) ? (uint32_t)rng_range(p->rng, 1, 64)
								: 0;
	want = init.cap;
	if (!(qp = hw_create_qp(p->pd, &init)) && want.max_inline_data && !absurd) {
		init.cap = want;
		init.cap.max_inline_data = 0;
		want = init.cap;
		qp = hw_create_qp(p->pd, &init);
	}
	if (!qp) {
		if (!absurd && errno != ENOMEM)
			rcp_fail(p,
				 "ibv_create_qp (%s) of wr %u/%u, sge %u/%u, no inline (within the device's "
				 "limits) "
				 "failed: %s",
				 qpt_name(t), want.max_send_wr, want.max_recv_wr, want.max_send_sge,
				 want.max_recv_sge, strerror(errno));
		return;
	}
	qp_caps_made(p, qp, t, &want, &init.cap);
	hw_destroy_qp(qp);
}

static void qp_caps(struct rcp *p)
{
	static const enum ibv_qp_type types[] = {IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD};
	const struct ibv_device_attr *d = &p->dev->dattr;

	if (d->max_qp_wr <= 0 || d->max_qp_wr >= 1 << 20 || d->max_sge <= 0 || d->max_sge >= 1 << 16)
		return;
	qp_past_limits(p);
	if (!rcp_failed(p))
		qp_made(p, types[rng_range(p->rng, 0, 2)], true);
	if (!rcp_failed(p))
		qp_made(p, types[rng_range(p->rng, 0, 2)], false);
}

/* ibv_create_srq(3), ibv_modify_srq(3): only on a device with SRQs. */
static void srq_limits(struct rcp *p)
{
	const struct ibv_device_attr *d = &p->dev->dattr;
	struct ibv_srq_init_attr init = {.attr = {.max_wr = 1, .max_sge = 1}};
	struct ibv_srq_attr want, q, lim;
	struct ibv_srq *srq;
	int rc;

	if (d->max_srq <= 0 || d->max_srq_wr <= 1 || d->max_srq_wr >= 1 << 24 || d->max_srq_sge <= 0 ||
	    d->max_srq_sge >= 1 << 16)
		return;
	if (rng_bernoulli(p->rng, 0.5))
		init.attr.max_wr = (uint32_t)d->max_srq_wr + 1;
	else
		init.attr.max_sge = (uint32_t)d->max_srq_sge + 1;
	if ((srq = hw_create_srq(p->pd, &init))) {
		hw_destroy_srq(srq);
		rcp_fail(p,
			 "ibv_create_srq with max_wr %u, max_sge %u (device max_srq_wr %d, max_srq_sge %d) "
			 "succeeded",
			 init.attr.max_wr, init.attr.max_sge, d->max_srq_wr, d->max_srq_sge);
		return;
	}
	init.attr = (struct ibv_srq_attr){
	    .max_wr = (uint32_t)rng_range(p->rng, 2, (uint64_t)imin(d->max_srq_wr, 64)),
	    .max_sge = (uint32_t)rng_range(p->rng, 1, (uint64_t)imin(d->max_srq_sge, 4))};
	want = init.attr;
	if (!(srq = hw_create_srq(p->pd, &init))) {
		p->abandoned = true;
		return;
	}
	if (init.attr.max_wr < want.max_wr || init.attr.max_sge < want.max_sge)
		rcp_fail(p, "ibv_create_srq of max_wr %u, max_sge %u reported max_wr %u, max_sge %u",
			 want.max_wr, want.max_sge, init.attr.max_wr, init.attr.max_sge);
	else if ((rc = hw_query_srq(srq, &q)))
		rcp_fail(p, "ibv_query_srq of a new SRQ failed: %s", strerror(rc));
	else if (q.max_wr < want.max_wr || q.max_sge < want.max_sge)
		rcp_fail(
		    p,
		    "ibv_query_srq of an SRQ made with max_wr %u, max_sge %u reports max_wr %u, max_sge %u",
		    want.max_wr, want.max_sge, q.max_wr, q.max_sge);
	else {
		lim = (struct ibv_srq_attr){.srq_limit = q.max_wr + 1};
		if (!hw_modify_srq(srq, &lim, IBV_SRQ_LIMIT))
			rcp_fail(p, "ibv_modify_srq to srq_limit %u above the SRQ's max_wr %u succeeded",
				 lim.srq_limit, q.max_wr);
	}
	hw_destroy_srq(srq);
}

/* The MR's old rights still hold: its lkey gathers for a WRITE, a remote WRITE through its rkey fails. */
static void rereg_kept(struct rcp *p, struct ibv_mr *mr, uint32_t at)
{
	struct ibv_sge sge = {(uintptr_t)(p->buf + at), 64, mr->lkey};
	struct rcp_exp e = rcp_done(p->base_id + 0x61, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	struct ibv_wc wc;
	int rc;

	if ((rc = rcp_post1(p, p->a, IBV_WR_RDMA_WRITE, e.wr_id, sge, (uintptr_t)(p->buf + RCP_TGT)))) {
		rcp_fail(p,
			 "a WRITE gathered through the lkey of an MR whose rereg was refused was refused at "
			 "post: %s",
			 strerror(rc));
		return;
	}
	memcpy(p->model + RCP_TGT, p->model + at, 64);
	rcp_expect(p, p->scq, "A's send CQ (a WRITE gathered through an MR whose rereg was refused)", &e, 1);
	if (rcp_failed(p))
		return;
	if ((rc = rcp_post1_rkey(p, p->a, p->base_id + 0x62, (struct rcp_piece){RCP_SRC, 64},
				 (uintptr_t)(p->buf + at), mr->rkey)))
		return;	     /* refused at post: the WRITE did not happen either */
	p->scq_dirty = true; /* A is in error from here */
	if (rcp_poll1(p, p->scq, &wc) && wc.status == IBV_WC_SUCCESS)
		rcp_fail(
		    p, "a remote WRITE through the rkey of an MR without REMOTE_WRITE completed with SUCCESS "
		       "(a rereg adding REMOTE_WRITE without LOCAL_WRITE was refused, so nothing changed)");
	rcp_check_memory(p);
}

/* ibv_rereg_mr(3) CHANGE_ACCESS obeys ibv_reg_mr's rule: no remote write or atomic without LOCAL_WRITE. */
static void rereg_bad_access(struct rcp *p)
{
	static const int bad[] = {IBV_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_ATOMIC,
				  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
				  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC};
	uint32_t at = RCP_SRC + 5 * RCP_SLOT;
	int old = rng_bernoulli(p->rng, 0.5) ? IBV_ACCESS_LOCAL_WRITE
					     : IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;
	int acc = bad[rng_range(p->rng, 0, 3)], rc;
	struct ibv_mr *mr = hw_reg_mr(p->pd, p->buf + at, RCP_SLOT, old);

	if (!mr)
		return;
	if (!(rc = hw_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, acc)))
		rcp_fail(
		    p,
		    "ibv_rereg_mr(IBV_REREG_MR_CHANGE_ACCESS) to access %#x (remote write or atomic, no "
		    "LOCAL_WRITE) returned 0; expected IBV_REREG_MR_ERR_INPUT (EINVAL) as ibv_reg_mr refuses",
		    acc);
	else
		rereg_kept(p, mr, at);
	hw_dereg_mr(mr);
}

/* ibv_alloc_mw(3): the type is IBV_MW_TYPE_1 or IBV_MW_TYPE_2. */
static void mw_bad_type(struct rcp *p)
{
	int type = rng_bernoulli(p->rng, 0.5) ? 0 : (int)rng_range(p->rng, 3, 255);
	struct ibv_mw *mw;

	if (!(p->dev->dattr.device_cap_flags & IBV_DEVICE_MEM_WINDOW))
		return;
	if ((mw = hw_alloc_mw(p->pd, (enum ibv_mw_type)type))) {
		hw_dealloc_mw(mw);
		rcp_fail(p, "ibv_alloc_mw of type %d (neither IBV_MW_TYPE_1 nor IBV_MW_TYPE_2) succeeded",
			 type);
	}
}

void rcp_case_create(struct rcp *p)
{
	static void (*const check[])(struct rcp *) = {cq_vectors, cq_ex_flags,	    qp_caps,
						      srq_limits, rereg_bad_access, mw_bad_type};
	static const char *const names[] = {"creation: ibv_create_cq comp_vector and cqe",
					    "creation: ibv_create_cq_ex wc_flags, comp_mask and flags",
					    "creation: ibv_create_qp caps (RC, UC, UD)",
					    "creation: ibv_create_srq and ibv_modify_srq limits",
					    "creation: ibv_rereg_mr CHANGE_ACCESS without LOCAL_WRITE",
					    "creation: ibv_alloc_mw of an undefined type"};
	enum { N = sizeof(check) / sizeof(check[0]), REREG = 4 };
	bool chosen[N] = {false};

	p->name = "creation and registration parameters";
	p->shape = (struct rcp_shape){
	    .scqe = RCP_CQE, .a_send_wr = 4, .a_recv_wr = 1, .b_recv_wr = 1, .a_rnr_retry = 7};
	if (rcp_setup(p))
		return;
	for (int i = (int)rng_range(p->rng, 2, 4); i > 0; i--)
		chosen[rng_range(p->rng, 0, N - 1)] = true;
	/* The rereg check breaks the pair: it goes last. */
	for (int k = 0; k <= N; k++) {
		int c = k == N ? REREG : k;

		if (!chosen[c] || (c == REREG && k != N) || rcp_failed(p))
			continue;
		p->name = names[c];
		check[c](p);
	}
}
