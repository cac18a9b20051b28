/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Steps toward a drawn action that cannot run.  A redraw (the original's answer) lets the state settle where
 * only cheap actions remain (every CQ, PD and MR pinned, every cap reached); instead the walker takes one
 * real step that brings the action closer (tears down a dependent, retires a QP, connects a pair to a key's
 * PD, posts receives for credit, registers an MR a window needs), counted as the action it is; stats.toward
 * counts the draws served.  0: nothing to do now (a handshake or flush must finish first).
 */
#include "cmd/walk/actions.h"

#define TOWARD_DEPTH  3
#define CREDIT_TARGET 4 /* receives a step toward a SEND keeps posted per QP */

static int toward(struct walk_client *c, enum walk_action a, int depth);

/* A hint naming a PD and a QP (-1: none), nothing else. */
static struct walk_hint hint_at(int pd, int qp)
{
	return (struct walk_hint){.pd = pd, .qp = qp, .mr = -1, .mw = -1, .ah = -1, .peer = -1, .srq = -1};
}

/* A hint naming one object (an MR, window or AH; -1: none), nothing else. */
static struct walk_hint hint_obj(int mr, int mw, int ah)
{
	return (struct walk_hint){.pd = -1, .qp = -1, .mr = mr, .mw = mw, .ah = ah, .peer = -1, .srq = -1};
}

/* Runs action a with the hint in place; if it cannot run either, a step toward it. */
static int step(struct walk_client *c, enum walk_action a, struct walk_hint h, int depth)
{
	int done;

	if (!c->weight[a] && a != ACT_MODIFY_QP_ERROR && a != ACT_DESTROY_QP && a != ACT_RECV)
		return 0; /* never issue an action the user weighted out, except to retire and credit */
	h.on = true;
	c->hint = h;
	done = walk_do_action(c, a);
	c->hint = hint_at(-1, -1);
	if (!done && depth > 0)
		done = toward(c, a, depth - 1);
	return done;
}

static int dealloc_mw(struct walk_client *c, int i, int depth)
{
	return step(c, c->mw[i].type == 1 ? ACT_DEALLOC_MW_TYPE1 : ACT_DEALLOC_MW_TYPE2, hint_obj(-1, i, -1),
		    depth);
}

/* One step toward destroying QP q: ERR first, then release what pins it, then destroy. */
static int retire_qp(struct walk_client *c, int q, int depth)
{
	struct qp_rec *r = &c->qp[q];

	if (!r->used || r->state == QP_CONNECTING)
		return 0; /* the handshake decides first */
	if (r->state != QP_ERR)
		return r->send_inflight && r->state != QP_PEER_DOWN
			   ? 0
			   : step(c, ACT_MODIFY_QP_ERROR, hint_at(-1, q), depth);
	if (r->type2_bound) {
		for (int i = 0; i < 2 * MAX_MW; i++)
			if (c->mw[i].used && c->mw[i].type == 2 && c->mw[i].state == MW_BOUND &&
			    c->mw[i].qp == q)
				return dealloc_mw(c, i, depth);
		return 0;
	}
	if (r->send_inflight || r->recv_inflight)
		return 0; /* flushing */
	return step(c, ACT_DESTROY_QP, hint_at(-1, q), depth);
}

/* A QP worth retiring among those ok() accepts: ERR first, then peer down, then any ready one. */
static int retire_some_qp(struct walk_client *c, bool (*ok)(struct walk_client *, int, const void *),
			  const void *arg, int depth)
{
	static const enum qp_state order[] = {QP_ERR, QP_PEER_DOWN, QP_READY};

	for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++)
		for (int q = 0; q < MAX_QP; q++)
			if (c->qp[q].used && c->qp[q].state == order[k] && ok(c, q, arg) &&
			    retire_qp(c, q, depth))
				return 1;
	return 0;
}

static bool qp_any(struct walk_client *c, int q, const void *arg)
{
	(void)c, (void)q, (void)arg;
	return true;
}

static bool qp_uses_cq(struct walk_client *c, int q, const void *arg)
{
	int cq = *(const int *)arg;

	return c->qp[q].scq == cq || c->qp[q].rcq == cq;
}

static bool qp_on_pd(struct walk_client *c, int q, const void *arg)
{
	return c->qp[q].pd == *(const int *)arg;
}

static bool qp_initiated_rc(struct walk_client *c, int q, const void *arg)
{
	(void)arg;
	return c->qp[q].type == IBV_QPT_RC && c->qp[q].initiator;
}

static bool qp_ud(struct walk_client *c, int q, const void *arg)
{
	(void)arg;
	return c->qp[q].type == IBV_QPT_UD;
}

static int free_cq(struct walk_client *c, int depth)
{
	int best = -1;

	if (WALK_COUNT_USED(c->cq) <= MIN_CQ)
		return step(c, ACT_CREATE_CQ, hint_at(-1, -1), depth);
	for (int i = 0; i < MAX_CQ; i++)
		if (c->cq[i].used && (best < 0 || c->cq[i].users < c->cq[best].users))
			best = i;
	if (best < 0 || !c->cq[best].users)
		return 0; /* completions still to come */
	return retire_some_qp(c, qp_uses_cq, &best, depth);
}

/* One step toward MR i being idle (no window bound, nothing in flight). */
static int free_mr(struct walk_client *c, int m, int depth)
{
	for (int i = 0; i < 2 * MAX_MW; i++)
		if (c->mw[i].used && c->mw[i].state == MW_BOUND && c->mw[i].mr == m)
			return dealloc_mw(c, i, depth);
	return 0;
}

/* One step toward PD p having no users. */
static int strip_pd(struct walk_client *c, int p, int depth)
{
	for (int i = 0; i < MAX_AH; i++)
		if (c->ah[i].used && c->ah[i].pd == p)
			return step(c, ACT_DESTROY_AH, hint_obj(-1, -1, i), depth);
	for (int i = 0; i < 2 * MAX_MW; i++)
		if (c->mw[i].used && c->mw[i].pd == p && c->mw[i].state != MW_BINDING &&
		    walk_count_mw(c, c->mw[i].type) > MIN_MW)
			return dealloc_mw(c, i, depth);
	if (retire_some_qp(c, qp_on_pd, &p, depth))
		return 1;
	for (int i = 0; i < MAX_MR; i++)
		if (c->mr[i].used && c->mr[i].pd == p)
			return walk_idle_mr(c, i, NULL) ? step(c, ACT_DEREG_MR, hint_obj(i, -1, -1), depth)
							: free_mr(c, i, depth);
	return 0;
}

/* The PD with the fewest users first; the next one if nothing can be done for it now. */
static int free_pd(struct walk_client *c, int depth)
{
	bool tried[MAX_PD] = {false};

	if (WALK_COUNT_USED(c->pd) <= MIN_PD)
		return step(c, ACT_ALLOC_PD, hint_at(-1, -1), depth);
	for (int n = 0; n < MAX_PD; n++) {
		int p = -1;

		for (int i = 0; i < MAX_PD; i++)
			if (c->pd[i].used && !tried[i] && (p < 0 || c->pd[i].users < c->pd[p].users))
				p = i;
		if (p < 0)
			return 0;
		tried[p] = true;
		if (strip_pd(c, p, depth))
			return 1;
	}
	return 0;
}

/* Every MR holds posted receives: retire a QP whose receives pin the least busy one. */
static int unpin_mr(struct walk_client *c, int depth)
{
	int m = -1;

	for (int i = 0; i < MAX_MR; i++)
		if (c->mr[i].used && (m < 0 || c->mr[i].inflight < c->mr[m].inflight))
			m = i;
	if (m < 0)
		return 0;
	for (uint32_t s = 0; s < MAX_WR; s++)
		if (c->wr[s].busy && c->wr[s].is_recv && c->wr[s].mr == m)
			return c->wr[s].srq_recv ? 0 : retire_qp(c, c->wr[s].qp, depth);
	return 0;
}

static int free_some_mr(struct walk_client *c, int depth)
{
	bool tried[MAX_MR] = {false};

	if (WALK_COUNT_USED(c->mr) <= MIN_MR)
		return step(c, ACT_REG_MR, hint_at(-1, -1), depth);
	/* The MR with the fewest bound windows first; the next one if nothing can be done for it now. */
	for (int n = 0; n < MAX_MR; n++) {
		int best = -1;

		for (int i = 0; i < MAX_MR; i++)
			if (c->mr[i].used && !c->mr[i].inflight && !tried[i] &&
			    (best < 0 || c->mr[i].bound_mws < c->mr[best].bound_mws))
				best = i;
		if (best < 0)
			break;
		tried[best] = true;
		if (walk_idle_mr(c, best, NULL)) /* nothing holds it: dereg it now (free_mr only unbinds) */
			return step(c, ACT_DEREG_MR, hint_obj(best, -1, -1), depth);
		if (free_mr(c, best, depth))
			return 1;
	}
	return unpin_mr(c, depth);
}

static int bind_toward(struct walk_client *c, int type, int depth)
{
	struct mw_want want = {type, true};
	int i = walk_pick_index(c, 2 * MAX_MW, walk_mw_match, &want), p;

	if (i < 0) {
		enum walk_action alloc = type == 1 ? ACT_ALLOC_MW_TYPE1 : ACT_ALLOC_MW_TYPE2;

		if (walk_count_mw(c, type) < MAX_MW)
			return step(c, alloc, hint_at(-1, -1), depth);
		for (int k = 0; k < 2 * MAX_MW; k++)
			if (c->mw[k].used && c->mw[k].type == type && c->mw[k].state == MW_BOUND)
				return dealloc_mw(c, k, depth);
		return 0;
	}
	p = c->mw[i].pd;
	if (walk_pick_mr(c, p, 1) < 0)
		return step(c, ACT_REG_MR, hint_at(p, -1), depth);
	for (int q = 0; q < MAX_QP; q++)
		if (c->qp[q].used && c->qp[q].type == IBV_QPT_RC && c->qp[q].pd == p &&
		    (c->qp[q].state == QP_CONNECTING || c->qp[q].state == QP_READY))
			return 0; /* connecting, or its queue is full for now */
	return step(c, ACT_CREATE_RC_QP_PAIR, hint_at(p, -1), depth);
}

/* Posts a receive on one of our RC QPs (one ok() accepts): credit for its peer. */
static int credit_peer(struct walk_client *c, bool (*ok)(struct walk_client *, int, const void *), int target,
		       int depth)
{
	struct qp_want qw = {IBV_QPT_RC, -1, false, true, false};
	int n = 0, pick = -1;

	/* A few receives per QP are credit enough; more would only pin MRs until the QP is retired. */
	for (int q = 0; q < MAX_QP; q++)
		if (walk_qp_match(c, q, &qw) && c->qp[q].recv_inflight < target && (!ok || ok(c, q, NULL)) &&
		    rng_range(&c->rng, 0, (uint64_t)n++) == 0)
			pick = q;
	return pick < 0 ? 0 : step(c, ACT_RECV, hint_at(-1, pick), depth);
}

static bool qp_has_type2(struct walk_client *c, int q, const void *arg)
{
	(void)arg;
	return c->qp[q].type2_bound > 0;
}

/* Our RC QP in ERR whose peer QP holds a window we have the key of: the key waits for a pair that is gone. */
static bool qp_err_with_window(struct walk_client *c, int q, const void *arg)
{
	const struct qp_rec *r = &c->qp[q];

	(void)arg;
	if (r->type != IBV_QPT_RC || r->state == QP_READY)
		return false;
	for (int i = 0; i < MAX_REMOTE_KEYS; i++)
		if (c->rkeys[i].used && c->rkeys[i].kind == 2 && c->rkeys[i].owner == r->peer &&
		    c->rkeys[i].qpn == r->peer_qpn)
			return true;
	return false;
}

static bool rc_ready(struct walk_client *c, int q)
{
	return c->qp[q].used && c->qp[q].type == IBV_QPT_RC && c->qp[q].state == QP_READY;
}

static bool rc_pending(struct walk_client *c)
{
	for (int q = 0; q < MAX_QP; q++)
		if (c->qp[q].used && c->qp[q].type == IBV_QPT_RC && c->qp[q].initiator &&
		    c->qp[q].state == QP_CONNECTING)
			return true;
	return false;
}

/* A new RC pair (peer, local PD, responder PD as hinted); at the cap, one step to retire one. */
static int new_pair(struct walk_client *c, struct walk_hint h, int depth)
{
	if (walk_count_qp(c, IBV_QPT_RC, true) >= MAX_RC_INITIATED)
		return retire_some_qp(c, qp_initiated_rc, NULL, depth);
	return step(c, ACT_CREATE_RC_QP_PAIR, h, depth);
}

static int send_toward(struct walk_client *c, int depth)
{
	if (rng_bernoulli(&c->rng, MSG_UD_PROBABILITY)) {
		int q = walk_pick_index(c, MAX_QP, qp_ud, NULL), p, peer = -1;

		if (q < 0 || c->qp[q].state != QP_READY)
			return step(c, ACT_CREATE_UD_QP, hint_at(-1, -1), depth);
		p = c->qp[q].pd;
		if (walk_pick_mr(c, p, UD_SEND_BYTES) < 0)
			return step(c, ACT_REG_MR, hint_at(p, -1), depth);
		for (int r = 0, n = 0; r < MAX_REMOTE_UD; r++)
			if (c->ruds[r].used && rng_range(&c->rng, 0, (uint64_t)n++) == 0)
				peer = c->ruds[r].owner;
		if (peer < 0)
			return 0;
		struct walk_hint h = hint_at(p, -1);

		h.peer = peer;
		return step(c, ACT_CREATE_AH, h, depth);
	}
	for (int q = 0; q < MAX_QP; q++)
		if (rc_ready(c, q))
			return credit_peer(c, NULL, CREDIT_TARGET, depth);
	return rc_pending(c) ? 0 : new_pair(c, hint_at(-1, -1), depth);
}

/*
 * Our peers SEND_WITH_INV to the QPs our type-2 windows are bound to: post receives there (credit), else bind
 * another window on a QP whose peer already has credit from us.
 */
static int send_inv_toward(struct walk_client *c, int depth)
{
	struct walk_hint h = hint_at(-1, -1);

	if (retire_some_qp(c, qp_err_with_window, NULL, depth) ||
	    credit_peer(c, qp_has_type2, 2 * CREDIT_TARGET, depth))
		return 1;
	for (int q = 0, n = 0; q < MAX_QP; q++)
		if (rc_ready(c, q) && c->qp[q].recv_inflight && rng_range(&c->rng, 0, (uint64_t)n++) == 0)
			h.qp = q;
	return step(c, ACT_BIND_MW_TYPE2, h, depth);
}

/* The local PD with the largest MR (a READ/WRITE/atomic needs one on the QP's PD). */
static int pd_with_mr(struct walk_client *c, uint32_t min_len)
{
	int best = -1;

	for (int i = 0; i < MAX_MR; i++)
		if (c->mr[i].used && c->mr[i].len >= min_len && (best < 0 || c->mr[i].len > c->mr[best].len))
			best = i;
	return best < 0 ? -1 : c->mr[best].pd;
}

/* READ, WRITE and atomics need an RC QP to the owner of a remote key, on the key's PD. */
static int rdma_toward(struct walk_client *c, uint32_t min_len, uint32_t access, int depth)
{
	struct walk_hint h = hint_at(-1, -1);
	int n = 0, k = -1, p;

	for (int i = 0; i < MAX_REMOTE_KEYS; i++)
		if (c->rkeys[i].used && c->rkeys[i].kind != 2 && c->rkeys[i].len >= min_len &&
		    (c->rkeys[i].access & access) == access && rng_range(&c->rng, 0, (uint64_t)n++) == 0)
			k = i;
	if (k < 0)
		return 0;
	for (int q = 0; q < MAX_QP; q++) {
		const struct qp_rec *r = &c->qp[q];

		if (!r->used || r->type != IBV_QPT_RC || r->peer != c->rkeys[k].owner ||
		    r->peer_pd != c->rkeys[k].pd_id)
			continue;
		if (r->state == QP_CONNECTING)
			return 0;
		if (r->state == QP_READY) {
			/* It reaches the key: what is missing is an MR on its PD, or room. */
			if (walk_pick_mr(c, r->pd, min_len) < 0)
				return step(c, ACT_REG_MR, hint_at(r->pd, -1), depth);
			return 0;
		}
	}
	if (rc_pending(c))
		return 0; /* one handshake at a time: its answer may be what we need */
	p = pd_with_mr(c, min_len);
	h.pd = p;
	h.peer = c->rkeys[k].owner;
	h.peer_pd_id = c->rkeys[k].pd_id;
	return new_pair(c, h, depth);
}

/* A receive needs a ready QP (with room: if all are full, the peers' sends will empty them). */
static int recv_toward(struct walk_client *c, int depth)
{
	for (int q = 0; q < MAX_QP; q++)
		if (c->qp[q].used && c->qp[q].state != QP_ERR && c->qp[q].state != QP_PEER_DOWN)
			return 0;
	if (rng_bernoulli(&c->rng, MSG_UD_PROBABILITY))
		return step(c, ACT_CREATE_UD_QP, hint_at(-1, -1), depth);
	return rc_pending(c) ? 0 : new_pair(c, hint_at(-1, -1), depth);
}

/*
 * One step toward an idle SRQ (free: retire a QP of the least used one, then destroy it) or toward
 * post_srq_recv (an SRQ, then a QP on it).
 */
static int srq_toward(struct walk_client *c, bool free, int depth)
{
	struct walk_hint h = hint_at(-1, -1);
	int s = -1;

	for (int i = 0; i < MAX_SRQ; i++)
		if (c->srq[i].used && (s < 0 || c->srq[i].users < c->srq[s].users))
			s = i;
	if (s < 0)
		return free ? 0 : step(c, ACT_CREATE_SRQ, h, depth);
	h.srq = s;
	if (free && !c->srq[s].users)
		return step(c, ACT_DESTROY_SRQ, h, depth);
	for (int q = 0; free && q < MAX_QP; q++)
		if (c->qp[q].used && c->qp[q].srq == s && retire_qp(c, q, depth))
			return 1;
	if (free || c->srq[s].users)
		return 0; /* its QPs connect, or its receives wait for room */
	h.pd = c->srq[s].pd;
	return c->srq[s].type == IBV_QPT_UD ? step(c, ACT_CREATE_UD_QP, h, depth) : new_pair(c, h, depth);
}

static int toward(struct walk_client *c, enum walk_action a, int depth)
{
	switch (a) {
	case ACT_CREATE_CQ:
		return WALK_COUNT_USED(c->cq) >= MAX_CQ ? free_cq(c, depth) : 0;
	case ACT_DESTROY_CQ:
		return free_cq(c, depth);
	case ACT_ALLOC_PD:
		return WALK_COUNT_USED(c->pd) >= MAX_PD ? free_pd(c, depth) : 0;
	case ACT_DEALLOC_PD:
		return free_pd(c, depth);
	case ACT_REG_MR:
		return WALK_COUNT_USED(c->mr) >= MAX_MR ? free_some_mr(c, depth) : 0;
	case ACT_DEREG_MR:
		return free_some_mr(c, depth);
	case ACT_BIND_MW_TYPE1:
		return bind_toward(c, 1, depth);
	case ACT_BIND_MW_TYPE2:
		return bind_toward(c, 2, depth);
	case ACT_CREATE_RC_QP_PAIR:
		return retire_some_qp(c, qp_initiated_rc, NULL, depth);
	case ACT_CREATE_UD_QP:
		return retire_some_qp(c, qp_ud, NULL, depth);
	case ACT_MODIFY_QP_ERROR:
		return rc_pending(c) ? 0 : new_pair(c, hint_at(-1, -1), depth);
	case ACT_DESTROY_QP:
		return retire_some_qp(c, qp_any, NULL, depth);
	case ACT_CREATE_AH:
		return step(c, ACT_DESTROY_AH, hint_at(-1, -1), depth);
	case ACT_DESTROY_AH:
		return step(c, ACT_CREATE_AH, hint_at(-1, -1), depth);
	case ACT_SEND:
		return send_toward(c, depth);
	case ACT_SEND_WITH_INV:
		return send_inv_toward(c, depth);
	case ACT_RECV:
		return recv_toward(c, depth);
	case ACT_READ:
		return rdma_toward(c, 1, IBV_ACCESS_REMOTE_READ, depth);
	case ACT_WRITE:
		return rdma_toward(c, 1, IBV_ACCESS_REMOTE_WRITE, depth);
	case ACT_FETCH_ADD:
	case ACT_COMP_SWAP:
		return c->dattr.atomic_cap == IBV_ATOMIC_NONE
			   ? 0
			   : rdma_toward(c, 8, IBV_ACCESS_REMOTE_ATOMIC, depth);
	case ACT_CREATE_SRQ: /* all slots taken (without SRQs on the device, there is none to free) */
	case ACT_DESTROY_SRQ:
		return srq_toward(c, true, depth);
	case ACT_POST_SRQ_RECV:
		return c->dattr.max_srq > 0 ? srq_toward(c, false, depth) : 0;
	default: /* allocating and deallocating windows: only the cap stops them, each as likely */
		return 0;
	}
}

int walk_toward(struct walk_client *c, enum walk_action a)
{
	int done;

	c->hint = hint_at(-1, -1);
	done = toward(c, a, TOWARD_DEPTH);
	if (done)
		c->stats.toward[a]++;
	return done;
}
