/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * --verify: random RTS-to-RTS ibv_modify_qp(3) of a live QP, with the attributes the transition accepts and
 * now and then one it does not (or IBV_QP_CUR_STATE naming another state), the return as the model predicts
 * and ibv_query_qp showing the change (or none).  Changes then take effect on the data path: a UD QP's new
 * Q_Key is what its peers send with (the old one must be dropped), an RC QP's narrowed access flags what its
 * peer's probes find refused.  Also ibv_resize_cq(3) of a CQ in use (any size holding the work in flight; its
 * completions kept, in order) and ibv_rereg_mr(3) of an MR (actions_objects.c).
 */
#include "cmd/walk/actions.h"
#include "cmd/walk/model.h"
#include "cmd/walk/oracle.h"

#include <stdio.h>

#define MODIFY_STEP_PROBABILITY 0.006
#define ILLEGAL_PROBABILITY	0.3
#define ACCESS_PROBABILITY                                                                                   \
	0.3 /* an RC QP's access flags narrowed, told to the peer, refused on the data path */

static bool qp_live(struct walk_client *c, int i, const void *arg)
{
	const struct qp_rec *r = &c->qp[i];

	(void)arg;
	return r->used && r->state == QP_READY && (r->type == IBV_QPT_UD || r->type == IBV_QPT_RC);
}

/* An attribute RTS to RTS refuses, with a value that would be valid elsewhere: only the mask is wrong. */
static int illegal_attr(struct walk_client *c, const struct qp_rec *r, struct ibv_qp_attr *attr)
{
	static const int rc_bad[] = {IBV_QP_PATH_MTU,		IBV_QP_DEST_QPN, IBV_QP_RQ_PSN, IBV_QP_SQ_PSN,
				     IBV_QP_MAX_DEST_RD_ATOMIC, IBV_QP_QKEY,	 IBV_QP_TIMEOUT};
	static const int ud_bad[] = {IBV_QP_PATH_MTU, IBV_QP_SQ_PSN, IBV_QP_ACCESS_FLAGS,
				     IBV_QP_MIN_RNR_TIMER, IBV_QP_PKEY_INDEX};
	int bit = r->type == IBV_QPT_RC ? rc_bad[rng_range(&c->rng, 0, 6)] : ud_bad[rng_range(&c->rng, 0, 4)];

	attr->path_mtu = IBV_MTU_1024;
	attr->dest_qp_num = r->peer_qpn;
	attr->rq_psn = attr->sq_psn = 1;
	attr->max_dest_rd_atomic = 1;
	attr->timeout = 14;
	attr->qp_access_flags = 0;
	attr->pkey_index = 0;
	if (bit == IBV_QP_QKEY)
		attr->qkey = r->qkey ^ 2;
	if (bit == IBV_QP_MIN_RNR_TIMER)
		attr->min_rnr_timer = 12;
	return bit;
}

/* The QP's state and Q_Key on the device; false if the query failed (judged). */
static bool query(struct walk_client *c, int q, struct ibv_qp_attr *got)
{
	struct ibv_qp_init_attr init;
	int rc = hw_query_qp(c->qp[q].qp, got, IBV_QP_STATE | IBV_QP_QKEY | IBV_QP_ACCESS_FLAGS, &init);

	walk_judge_verb(c, "ibv_query_qp", "a live QP", rc, 0);
	return rc == 0;
}

static void announce_qkey(struct walk_client *c, int q)
{
	struct walk_msg m = {.type = MSG_ADD_UD_QP, .qpn = c->qp[q].qp->qp_num, .qkey = c->qp[q].qkey};

	walk_broadcast(c, &m);
}

static void resize_cq(struct walk_client *c)
{
	int maxcqe = imin(c->dattr.max_cqe, 1 << 16), i, lo, cqe, rc;
	char what[96];

	if ((i = walk_pick_index(c, MAX_CQ, walk_any_cq, NULL)) < 0)
		return;
	lo = c->cq[i].outstanding > 1 ? c->cq[i].outstanding : 1; /* what may be waiting in it, at most */
	if (lo > maxcqe)
		return;
	cqe = (int)rng_range(&c->rng, (uint64_t)lo, (uint64_t)imin(maxcqe, lo + 2 * c->cq[i].cqe));
	rc = hw_resize_cq(c->cq[i].cq, cqe);
	LOG_STEP(c, "resize_cq cq[%d] %d -> %d (outstanding %d) -> %d", i, c->cq[i].cqe, cqe,
		 c->cq[i].outstanding, rc);
	if (rc == EOPNOTSUPP || rc == ENOSYS)
		return; /* an optional verb */
	c->stats.cq_resizes++;
	snprintf(what, sizeof(what), "a CQ of %d entries with %d in flight, to %d", c->cq[i].cqe,
		 c->cq[i].outstanding, cqe);
	if (!walk_judge_verb(c, "ibv_resize_cq", what, rc, 0))
		return;
	walk_judge_attr(c, "the CQ's cqe", what, imin(c->cq[i].cq->cqe, cqe), cqe); /* at least as asked */
	c->cq[i].cqe = cqe;
}

void walk_modify_step(struct walk_client *c)
{
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_RTS, .cur_qp_state = IBV_QPS_RTS}, got;
	struct qp_rec *r;
	int q, mask = IBV_QP_STATE, bad = 0, want, rc;
	uint32_t old_qkey;
	char what[160];

	if (!c->cfg->verify || c->faults || !rng_bernoulli(&c->rng, MODIFY_STEP_PROBABILITY))
		return;
	switch (rng_range(&c->rng, 0, 3)) {
	case 0:
		resize_cq(c);
		return;
	case 1:
		walk_rereg_mr(c);
		return;
	}
	if (walk_outbox_busy(c) || (q = walk_pick_index(c, MAX_QP, qp_live, NULL)) < 0)
		return;
	r = &c->qp[q];
	if (!query(c, q, &got) || got.qp_state != IBV_QPS_RTS)
		return;			   /* it left RTS by itself (an error completion not polled yet) */
	if (rng_bernoulli(&c->rng, 0.5)) { /* now and then claiming a state the QP is not in */
		mask |= IBV_QP_CUR_STATE;
		if (rng_bernoulli(&c->rng, ILLEGAL_PROBABILITY))
			attr.cur_qp_state = r->type == IBV_QPT_UD ? IBV_QPS_SQE : IBV_QPS_SQD;
	}
	if (r->type == IBV_QPT_UD && rng_bernoulli(&c->rng, 0.7)) {
		mask |= IBV_QP_QKEY;
		attr.qkey = (uint32_t)rng_next(&c->rng) & 0x7fffffffu; /* never a privileged Q_Key */
	} else if (r->type == IBV_QPT_RC && rng_bernoulli(&c->rng, 0.7)) {
		mask |= IBV_QP_MIN_RNR_TIMER;
		attr.min_rnr_timer = (uint8_t)rng_range(&c->rng, 12, 20); /* rnr_retry is 7: only the pace */
	}
	if (r->type == IBV_QPT_RC && rng_bernoulli(&c->rng, ACCESS_PROBABILITY)) { /* only ever narrowed */
		mask |= IBV_QP_ACCESS_FLAGS;
		attr.qp_access_flags = r->access & ((uint32_t)rng_range(&c->rng, 0, 7) << 1);
	}
	if (rng_bernoulli(&c->rng, ILLEGAL_PROBABILITY))
		mask |= bad = illegal_attr(c, r, &attr);
	want = model_modify_qp_claimed(r->type, IBV_QPS_RTS, attr.cur_qp_state, IBV_QPS_RTS, mask);
	old_qkey = r->qkey;
	rc = hw_modify_qp(r->qp, &attr, mask);
	c->stats.modifies++;
	LOG_STEP(c, "modify_qp qp=%u RTS->RTS mask=%#x qkey=%x -> %d (model: %d)", r->qp->qp_num, mask,
		 attr.qkey, rc, want);
	if (!query(c, q, &got))
		return;
	if (rc && !want && got.qp_state != IBV_QPS_RTS)
		return; /* racy: it left RTS between the two calls; any return is right */
	snprintf(what, sizeof(what), "%s QP %u, RTS to RTS, attr_mask %#x%s%s",
		 r->type == IBV_QPT_UD ? "UD" : "RC", r->qp->qp_num, mask,
		 bad ? " (one attribute the transition does not accept)" : "",
		 attr.cur_qp_state != IBV_QPS_RTS ? " (IBV_QP_CUR_STATE: not its state)" : "");
	walk_judge_verb(c, "ibv_modify_qp", what, rc, want ? -1 : 0);
	if (rc == 0 && (mask & IBV_QP_QKEY) && r->type == IBV_QPT_UD)
		r->qkey = attr.qkey;
	if (rc == 0 && (mask & IBV_QP_ACCESS_FLAGS) && r->type == IBV_QPT_RC &&
	    attr.qp_access_flags != r->access) {
		r->access = attr.qp_access_flags;
		r->narrowed = true;
		walk_publish(c, &(struct walk_msg){.type = MSG_RC_ACCESS,
						   .dst = (uint16_t)r->peer,
						   .qpn = r->qp->qp_num,
						   .peer_qpn = r->peer_qpn,
						   .access = r->access});
	}
	walk_judge_attr(c, r->type == IBV_QPT_UD ? "ibv_query_qp's qkey" : "ibv_query_qp's access", what,
			(int)(r->type == IBV_QPT_UD ? got.qkey : got.qp_access_flags),
			(int)(r->type == IBV_QPT_UD ? r->qkey : r->access));
	if (r->qkey != old_qkey) { /* the peers send with the new Q_Key from now on */
		c->stats.qkey_changes++;
		announce_qkey(c, q);
	}
}
