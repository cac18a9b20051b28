/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * SRQ actions: create_srq, destroy_srq (EBUSY while a QP uses it, as the model predicts), post_srq_recv, and
 * the completions of SRQ receives (they name the consuming QP).  An SRQ serves one QP type with one receive
 * size: an RC receive on it is a credit of that size for the peer of one of its QPs, and fits whichever of
 * them the message comes to.  A device without SRQs (max_srq 0) redraws them.
 */
#include "cmd/walk/actions.h"
#include "cmd/walk/model.h"
#include "cmd/walk/oracle.h"

#define SRQ_QP_PROBABILITY	     0.5 /* a new QP goes on an SRQ of its type and PD, when one lives */
#define SRQ_UD_PROBABILITY	     0.5
#define SRQ_MAX_POSTED		     CREDITS /* receives an SRQ holds at most (they hold CQ room and MRs) */
#define SRQ_BUSY_DESTROY_PROBABILITY 0.25    /* destroy_srq with no idle SRQ: one in use, EBUSY */

#define device_has_srq(c) ((c)->dattr.max_srq > 0 && (c)->dattr.max_srq_wr > 0 && (c)->dattr.max_srq_sge > 0)

/* An SRQ for QPs of type w[0] on PD w[1]. */
static bool srq_for_qp(struct walk_client *c, int i, const void *arg)
{
	const int *w = arg;

	return c->srq[i].used && (int)c->srq[i].type == w[0] && c->srq[i].pd == w[1];
}

/* Now and then, mostly the SRQ with the most QPs (as with PDs and CQs: the others empty and can go). */
int walk_pick_srq_for_qp(struct walk_client *c, enum ibv_qp_type type, int p)
{
	int w[2] = {(int)type, p}, s = -1;

	if (c->hint.on && c->hint.srq >= 0 && c->hint.srq < MAX_SRQ) /* one toward.c found without QPs */
		return srq_for_qp(c, c->hint.srq, &w) ? c->hint.srq : -1;
	for (int i = 0; i < MAX_SRQ && s < 0; i++)
		s = srq_for_qp(c, i, &w) ? i : -1;
	if (s < 0 || !rng_bernoulli(&c->rng, SRQ_QP_PROBABILITY))
		return -1;
	if (!rng_range(&c->rng, 0, 3))
		return walk_pick_index(c, MAX_SRQ, srq_for_qp, &w);
	for (int i = 0; i < MAX_SRQ; i++)
		if (srq_for_qp(c, i, &w) && c->srq[i].users > c->srq[s].users)
			s = i;
	return s;
}

int walk_do_create_srq(struct walk_client *c)
{
	int wr_max = imin(c->dattr.max_srq_wr, imin(c->dattr.max_qp_wr / 8, SRQ_MAX_POSTED * 4));
	int sge_max = imin(c->dattr.max_srq_sge / 2, MAX_SGE_USED), sge_min, i, p, cq;
	struct ibv_srq_init_attr init = {0};
	enum ibv_qp_type type;
	struct ibv_srq *srq;
	uint32_t len;

	for (i = 0; i < MAX_SRQ && c->srq[i].used; i++)
		;
	if (!device_has_srq(c) || i == MAX_SRQ || (p = walk_pick_pd_for_new(c)) < 0 ||
	    (cq = walk_pick_cq_for_new(c)) < 0)
		return 0;
	wr_max = wr_max < MIN_QP_WR ? MIN_QP_WR : wr_max;
	sge_max = sge_max < 1 ? 1 : sge_max;
	sge_min = c->cfg->verify && sge_max >= 2 ? 2 : 1; /* --verify: a header takes an SGE of its own */
	type = rng_bernoulli(&c->rng, SRQ_UD_PROBABILITY) ? IBV_QPT_UD : IBV_QPT_RC;
	init.attr.max_wr = (uint32_t)rng_range(&c->rng, MIN_QP_WR, (uint64_t)wr_max);
	init.attr.max_sge = (uint32_t)rng_range(&c->rng, (uint64_t)sge_min, (uint64_t)sge_max);
	if (type == IBV_QPT_UD)
		len = UD_RECV_BYTES;
	else if (c->cfg->verify && (init.attr.max_sge < 2 || rng_bernoulli(&c->rng, 0.5)))
		len = (uint32_t)rng_range(&c->rng, 1, MSG_CELL); /* all in the message cell */
	else
		len = (uint32_t)rng_range(&c->rng, MSG_CELL + 1, RC_MSG_MAX);
	c->stats.issued[ACT_CREATE_SRQ]++;
	srq = hw_create_srq(c->pd[p].pd, &init);
	LOG_STEP(c, "create_srq pd[%d] cq=%d %s max_wr=%u max_sge=%u len=%u -> %s", p, cq,
		 type == IBV_QPT_UD ? "UD" : "RC", init.attr.max_wr, init.attr.max_sge, len,
		 srq ? "ok" : "error");
	if (!srq) {
		walk_verb_returned(c, ACT_CREATE_SRQ, "ibv_create_srq", "an SRQ within the device's limits",
				   errno ? errno : EIO);
		return 1;
	}
	c->srq[i] = (struct srq_rec){true, srq, type, p, cq, 0, 0, init.attr.max_wr, init.attr.max_sge, len};
	c->pd[p].users++;
	c->cq[cq].users++;
	c->stats.ok[ACT_CREATE_SRQ]++;
	return 1;
}

void walk_srq_orphan(struct walk_client *c, int s)
{
	struct srq_rec *r = &c->srq[s];

	for (uint32_t slot = 0; slot < MAX_WR; slot++) {
		struct wr_rec *w = &c->wr[slot];

		if (!w->busy || !w->srq_recv || w->srq != s)
			continue;
		if (w->mr >= 0)
			c->mr[w->mr].inflight--;
		walk_release_wr(c, slot);
	}
	c->cq[r->cq].outstanding -= r->posted;
	c->srq_posted -= r->posted;
	c->cq[r->cq].users--;
	c->pd[r->pd].users--;
	r->used = false;
}

/* Any SRQ (arg non-NULL), or an idle one (destroy_qp waits until the receives its QPs took were seen). */
static bool srq_to_destroy(struct walk_client *c, int i, const void *arg)
{
	return c->srq[i].used && (arg || !c->srq[i].users);
}

/* An idle SRQ; else now and then one in use, which must stay (EBUSY); else a redraw (toward.c frees one). */
int walk_do_destroy_srq(struct walk_client *c)
{
	int s = -1, rc, want, users;

	if (!device_has_srq(c) ||
	    ((s = walk_pick_hinted(c, MAX_SRQ, srq_to_destroy, NULL, c->hint.srq)) < 0 &&
	     (!rng_bernoulli(&c->rng, SRQ_BUSY_DESTROY_PROBABILITY) ||
	      (s = walk_pick_index(c, MAX_SRQ, srq_to_destroy, c)) < 0)))
		return 0;
	users = c->srq[s].users;
	want = model_destroy_srq(users);
	c->stats.issued[ACT_DESTROY_SRQ]++;
	rc = hw_destroy_srq(c->srq[s].srq);
	LOG_STEP(c, "destroy_srq srq[%d] qps=%d posted=%d -> %d (expected %d)", s, users, c->srq[s].posted,
		 rc, want);
	if (c->cfg->verify)
		walk_judge_verb(c, "ibv_destroy_srq", users ? "an SRQ that QPs use" : "an SRQ no QP uses", rc,
				want);
	c->stats.srq_busy += users && rc == EBUSY;
	c->stats.ok[ACT_DESTROY_SRQ] += rc == want;
	c->stats.errors[ACT_DESTROY_SRQ] += rc != want;
	if (!rc) {
		for (int q = 0; q < MAX_QP; q++)
			if (c->qp[q].used && c->qp[q].srq == s)
				c->qp[q].srq = -1;
		walk_srq_orphan(c, s);
	}
	return 1;
}

/* A ready QP on SRQ *arg (RC: with room for one more credit to its peer). */
static bool qp_on_srq(struct walk_client *c, int q, const void *arg)
{
	const struct qp_rec *r = &c->qp[q];

	return r->used && r->srq == *(const int *)arg && r->state == QP_READY && r->srq_credit < CREDITS;
}

/* An SRQ that can take a receive: room in it and its CQ, and a QP of its own to serve. */
static bool srq_for_post(struct walk_client *c, int i, const void *arg)
{
	const struct srq_rec *s = &c->srq[i];

	(void)arg;
	if (!s->used || s->posted >= imin((int)s->max_wr, SRQ_MAX_POSTED) ||
	    c->cq[s->cq].outstanding >= c->cq[s->cq].cqe || !c->nfree_wr)
		return false;
	for (int q = 0; q < MAX_QP; q++)
		if (qp_on_srq(c, q, &i))
			return true;
	return false;
}

int walk_do_post_srq_recv(struct walk_client *c)
{
	struct ibv_sge sge[MAX_SGE_USED];
	struct ibv_recv_wr wr = {0}, *bad;
	struct srq_rec *r;
	int s, q, slot, rc;

	if (!device_has_srq(c) || walk_outbox_busy(c) ||
	    (s = walk_pick_index(c, MAX_SRQ, srq_for_post, NULL)) < 0)
		return 0;
	r = &c->srq[s];
	q = walk_pick_index(c, MAX_QP, qp_on_srq, &s);
	/* the SRQ's size exactly, laid out as RECV lays out its own */
	if ((slot = walk_recv_buffers(
		 c, ACT_POST_SRQ_RECV, -1, r->pd, r->max_sge, r->type == IBV_QPT_UD, r->recv_len,
		 c->cfg->verify && r->type == IBV_QPT_RC && r->recv_len <= MSG_CELL, true, &wr, sge)) < 0)
		return 0;
	c->wr[slot].srq_recv = true;
	c->wr[slot].srq = (int8_t)s;
	c->stats.issued[ACT_POST_SRQ_RECV]++;
	rc = hw_post_srq_recv(r->srq, &wr, &bad);
	if (!rc)
		stats_inc(c->counters, STATS_POSTED);
	LOG_STEP(c, "post_srq_recv srq[%d] sges=%d len=%u wr=%llx qp=%u -> %d", s, wr.num_sge, r->recv_len,
		 (unsigned long long)wr.wr_id, c->qp[q].qp->qp_num, rc);
	if (rc) {
		walk_release_wr(c, (uint32_t)slot);
		walk_verb_returned(c, ACT_POST_SRQ_RECV, "ibv_post_srq_recv",
				   "a receive within the SRQ's max_wr and max_sge", rc);
		return 1;
	}
	r->posted++; /* ok is counted when it completes, as RECV's */
	c->srq_posted++;
	c->cq[r->cq].outstanding++;
	if (c->wr[slot].mr >= 0)
		c->mr[c->wr[slot].mr].inflight++;
	if (r->type == IBV_QPT_RC) { /* the credit goes to the peer of one of the SRQ's QPs */
		c->qp[q].srq_credit++;
		walk_give_credit(c, q, r->recv_len);
	}
	return 1;
}

bool walk_srq_recv_done(struct walk_client *c, uint32_t slot, const struct ibv_wc *wc)
{
	struct wr_rec *w = &c->wr[slot];

	c->srq[w->srq].posted--;
	c->srq_posted--;
	c->cq[c->srq[w->srq].cq].outstanding--;
	for (int q = 0; q < MAX_QP; q++)
		if (c->qp[q].used && c->qp[q].qp->qp_num == wc->qp_num && c->qp[q].srq == w->srq) {
			w->qp = (int8_t)q;
			c->qp[q].srq_credit -= c->qp[q].srq_credit > 0;
			return true;
		}
	c->stats.errors[w->action]++;
	WALK_FAIL(c,
		  "a receive posted to SRQ srq[%d] completed (%s) naming QP %u, which is not on that SRQ; "
		  "expected the QP that consumed it",
		  w->srq, ibv_wc_status_str(wc->status), wc->qp_num);
	return false;
}
