/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* What the walker's actions share: error counting, which objects an action may pick, ranges and posting. */
#include "cmd/walk/actions.h"

void walk_count_error(struct walk_client *c, enum walk_action a, int err)
{
	c->stats.errors[a]++;
	LOG_STEP(c, "%s -> error %d (%s)", walk_action_names[a], err, strerror(err));
}

bool walk_created(struct walk_client *c, enum walk_action a, const void *made)
{
	c->stats.issued[a]++;
	if (!made)
		walk_count_error(c, a, errno);
	else
		c->stats.ok[a]++;
	return made != NULL;
}

/* ---- eligibility predicates for pick_index ---- */

static bool any_pd(struct walk_client *c, int i, const void *arg)
{
	(void)arg;
	return c->pd[i].used;
}

/*
 * The PD a new object goes on: mostly the one that holds the most objects, as applications keep to a few PDs.
 * Spreading every object over every PD leaves none idle for long, and dealloc_pd then (almost) never finds
 * one; and remote keys on one PD are reachable through the same QPs.
 */
int walk_pick_pd_for_new(struct walk_client *c)
{
	int p = -1;

	if (c->hint.on && c->hint.pd >= 0 && c->hint.pd < MAX_PD && c->pd[c->hint.pd].used)
		return c->hint.pd;
	if (rng_range(&c->rng, 0, 7))
		for (int i = 0; i < MAX_PD; i++)
			if (c->pd[i].used && (p < 0 || c->pd[i].users > c->pd[p].users))
				p = i;
	return p >= 0 ? p : walk_pick_index(c, MAX_PD, any_pd, NULL);
}

/* The same for the CQs of a new QP: mostly the busiest, so the others drain and can be destroyed. */
int walk_pick_cq_for_new(struct walk_client *c)
{
	int q = -1;

	if (rng_range(&c->rng, 0, 3))
		for (int i = 0; i < MAX_CQ; i++)
			if (c->cq[i].used && (q < 0 || c->cq[i].users > c->cq[q].users))
				q = i;
	return q >= 0 ? q : walk_pick_index(c, MAX_CQ, walk_any_cq, NULL);
}

bool walk_any_cq(struct walk_client *c, int i, const void *arg)
{
	(void)arg;
	return c->cq[i].used;
}

bool walk_idle_cq(struct walk_client *c, int i, const void *arg)
{
	(void)arg;
	return c->cq[i].used && !c->cq[i].users && !c->cq[i].outstanding;
}

bool walk_idle_pd(struct walk_client *c, int i, const void *arg)
{
	(void)arg;
	return c->pd[i].used && !c->pd[i].users;
}

bool walk_idle_mr(struct walk_client *c, int i, const void *arg)
{
	(void)arg;
	return c->mr[i].used && !c->mr[i].bound_mws && !c->mr[i].inflight;
}

static bool mr_on_pd(struct walk_client *c, int i, const void *arg)
{
	const struct mr_want *w = arg;

	return c->mr[i].used && c->mr[i].pd == w->pd && c->mr[i].len >= w->min_len;
}

bool walk_mw_match(struct walk_client *c, int i, const void *arg)
{
	const struct mw_want *w = arg;
	const struct mw_rec *m = &c->mw[i];

	return m->used && m->type == w->type && m->state != MW_BINDING &&
	       (!w->free_only || m->state == MW_FREE);
}

static bool cq_has_room(struct walk_client *c, int cq)
{
	return c->cq[cq].outstanding < c->cq[cq].cqe;
}

bool walk_can_post_send(struct walk_client *c, int q)
{
	const struct qp_rec *r = &c->qp[q];

	return r->send_inflight < (int)r->cap.max_send_wr && cq_has_room(c, r->scq) && c->nfree_wr;
}

static bool can_post_recv(struct walk_client *c, int q)
{
	const struct qp_rec *r = &c->qp[q];

	return r->recv_inflight < (int)r->cap.max_recv_wr && cq_has_room(c, r->rcq) && c->nfree_wr;
}

bool walk_qp_match(struct walk_client *c, int i, const void *arg)
{
	const struct qp_want *w = arg;
	const struct qp_rec *r = &c->qp[i];

	if (!r->used || r->type != w->type || r->state != QP_READY || (w->pd >= 0 && r->pd != w->pd) ||
	    (w->credit && !r->credit_count))
		return false;
	if (w->recv && r->srq >= 0) /* its receives go to its SRQ (post_srq_recv) */
		return false;
	/* RC receives are bounded by the peer's credit ring. */
	if (w->recv && r->type == IBV_QPT_RC && r->recv_inflight >= CREDITS)
		return false;
	return (!w->send || walk_can_post_send(c, i)) && (!w->recv || can_post_recv(c, i));
}

int walk_pick_mr(struct walk_client *c, int pd, uint32_t min_len)
{
	struct mr_want w = {pd, min_len};

	return walk_pick_index(c, MAX_MR, mr_on_pd, &w);
}

/*
 * Work in flight pins its local MR until it completes (receives until a peer sends, and a peer across
 * processes takes milliseconds): mostly the MR that already holds the most, so the others stay free to
 * deregister.
 */
int walk_pick_busy_mr(struct walk_client *c, int pd, uint32_t min_len)
{
	int m = -1;

	if (rng_range(&c->rng, 0, 3))
		for (int i = 0; i < MAX_MR; i++)
			if (c->mr[i].used && c->mr[i].pd == pd && c->mr[i].len >= min_len &&
			    (m < 0 || c->mr[i].inflight > c->mr[m].inflight))
				m = i;
	return m >= 0 ? m : walk_pick_mr(c, pd, min_len);
}

/* ---- ranges and scatter lists ---- */

/*
 * A range of up to `want` bytes inside buffer offsets [off, off + avail), aligned to `align`.  With --verify,
 * ranges that will be written (`dest`) stay out of the check zone at the end of every buffer.  Returns the
 * length (0: impossible) and the start in *start.
 */
uint32_t walk_choose_range(struct walk_client *c, uint32_t off, uint32_t avail, uint32_t want, bool dest,
			   uint32_t align, uint32_t *start)
{
	uint32_t end = off + avail, first, len, slots;

	if (dest && c->cfg->verify && end > ZONE_START)
		end = ZONE_START;
	first = (off + align - 1) / align * align;
	if (end <= first)
		return 0;
	len = want < end - first ? want : end - first;
	if (!len)
		return 0;
	slots = (end - first - len) / align;
	*start = first + (uint32_t)rng_range(&c->rng, 0, slots) * align;
	return len;
}

/* Splits buffer offsets [start, start + len) of a local MR (lkey) into n contiguous SGEs. */
int walk_make_sges(struct walk_client *c, uint32_t lkey, uint32_t start, uint32_t len, int n,
		   struct ibv_sge *sge)
{
	uint32_t cut[MAX_SGE_USED + 1];

	if ((uint32_t)n > len)
		n = (int)len;
	if (n < 1)
		n = 1;
	cut[0] = 0;
	cut[n] = len;
	for (int i = 1; i < n; i++)
		cut[i] = (uint32_t)rng_range(&c->rng, 1, len - 1);
	/* sort the inner cuts (n is small) */
	for (int i = 1; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (cut[j] < cut[i]) {
				uint32_t t = cut[i];

				cut[i] = cut[j];
				cut[j] = t;
			}
	for (int i = 0; i < n; i++) {
		sge[i].addr = (uintptr_t)(c->buf + start + cut[i]);
		sge[i].length = cut[i + 1] - cut[i];
		sge[i].lkey = lkey;
	}
	return n;
}

int walk_sge_count(struct walk_client *c, uint32_t max)
{
	return (int)rng_range(&c->rng, 1, max < MAX_SGE_USED ? (max ? max : 1) : MAX_SGE_USED);
}

/* ---- posting with accounting ---- */

/* Stages one WR through the ibv_wr_* API (ibv_wr_post(3)); false: an opcode it does not take here. */
static bool stage_wr(struct walk_client *c, struct ibv_qp_ex *qx, const struct ibv_send_wr *wr)
{
	const struct ibv_send_wr *w = wr;

	qx->wr_id = wr->wr_id;
	qx->wr_flags = wr->send_flags & ~(unsigned int)IBV_SEND_INLINE;
	switch (wr->opcode) {
	case IBV_WR_SEND:
		ibv_wr_send(qx);
		break;
	case IBV_WR_SEND_WITH_IMM:
		ibv_wr_send_imm(qx, wr->imm_data);
		break;
	case IBV_WR_SEND_WITH_INV:
		ibv_wr_send_inv(qx, wr->invalidate_rkey);
		break;
	case IBV_WR_RDMA_WRITE:
		ibv_wr_rdma_write(qx, w->wr.rdma.rkey, w->wr.rdma.remote_addr);
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		ibv_wr_rdma_write_imm(qx, w->wr.rdma.rkey, w->wr.rdma.remote_addr, wr->imm_data);
		break;
	case IBV_WR_RDMA_READ:
		ibv_wr_rdma_read(qx, w->wr.rdma.rkey, w->wr.rdma.remote_addr);
		break;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		ibv_wr_atomic_fetch_add(qx, w->wr.atomic.rkey, w->wr.atomic.remote_addr,
					w->wr.atomic.compare_add);
		break;
	case IBV_WR_BIND_MW:
		ibv_wr_bind_mw(qx, wr->bind_mw.mw, wr->bind_mw.rkey, &wr->bind_mw.bind_info);
		return true; /* no address, no SGE */
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		ibv_wr_atomic_cmp_swp(qx, w->wr.atomic.rkey, w->wr.atomic.remote_addr,
				      w->wr.atomic.compare_add, w->wr.atomic.swap);
		break;
	default:
		return false;
	}
	if (qx->qp_base.qp_type == IBV_QPT_UD)
		ibv_wr_set_ud_addr(qx, w->wr.ud.ah, w->wr.ud.remote_qpn, w->wr.ud.remote_qkey);
	if (wr->send_flags & IBV_SEND_INLINE) {
		struct ibv_data_buf data[MAX_SGE_USED];

		for (int i = 0; i < wr->num_sge; i++)
			data[i] = (struct ibv_data_buf){(void *)(uintptr_t)wr->sg_list[i].addr,
							wr->sg_list[i].length};
		ibv_wr_set_inline_data_list(qx, (size_t)wr->num_sge, data);
	} else if (wr->num_sge == 1 && rng_bernoulli(&c->rng, 0.5))
		ibv_wr_set_sge(qx, wr->sg_list[0].lkey, wr->sg_list[0].addr, wr->sg_list[0].length);
	else
		ibv_wr_set_sge_list(qx, (size_t)wr->num_sge, wr->sg_list);
	return true;
}

int walk_post_send(struct walk_client *c, struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_qp_ex *qx = rng_bernoulli(&c->rng, WR_API_PROBABILITY) ? hw_qp_to_qp_ex(qp) : NULL;
	struct ibv_send_wr *bad = NULL, aborted = *wr;

	if (!qx)
		return hw_post_send(qp, wr, &bad);
	aborted.wr_id |= 0xffffffffull << 32; /* a generation no slot has */
	ibv_wr_start(qx);
	if (rng_bernoulli(&c->rng, 0.2) && stage_wr(c, qx, &aborted)) {
		ibv_wr_abort(qx);
		ibv_wr_start(qx);
	}
	if (!stage_wr(c, qx, wr)) {
		ibv_wr_abort(qx);
		return hw_post_send(qp, wr, &bad);
	}
	c->stats.wr_api_posts++;
	return ibv_wr_complete(qx);
}

int walk_post_send_wr(struct walk_client *c, enum walk_action a, int q, int m, struct ibv_send_wr *wr,
		      int slot)
{
	int rc;

	wr->send_flags |= IBV_SEND_SIGNALED;
	c->wr[slot].opcode = (uint8_t)wr->opcode;
	rc = walk_post_send(c, c->qp[q].qp, wr);
	if (!rc)
		stats_inc(c->counters, STATS_POSTED);
	c->stats.issued[a]++;
	if (rc) {
		walk_release_wr(c, (uint32_t)slot);
		walk_count_error(c, a, rc);
		if (c->cfg->verify) /* room in its queue and CQ, SGEs and inline data within the QP's caps */
			WALK_FAIL(
			    c,
			    "ibv_post_send of a WR the QP's capabilities admit failed: %s; expected success",
			    strerror(rc));
		return rc;
	}
	c->qp[q].send_inflight++;
	c->cq[c->qp[q].scq].outstanding++;
	if (m >= 0)
		c->mr[m].inflight++;
	c->wr[slot].len = 0; /* the bytes of the local SGEs: what a READ must report */
	for (int i = 0; i < wr->num_sge; i++)
		c->wr[slot].len += wr->sg_list[i].length;
	LOG_STEP(c, "%s qp=%u opcode=%d flags=%x sges=%d len0=%u wr=%llx -> posted", walk_action_names[a],
		 c->qp[q].qp->qp_num, wr->opcode, wr->send_flags, wr->num_sge,
		 wr->num_sge ? wr->sg_list[0].length : 0, (unsigned long long)wr->wr_id);
	return 0;
}

bool walk_qp_reaches(struct walk_client *c, int i, const void *arg)
{
	const struct reach *w = arg;
	const struct qp_rec *r = &c->qp[i];

	return r->used && r->type == IBV_QPT_RC && r->state == QP_READY && r->peer == w->k->owner &&
	       (w->k->kind == 2 ? r->peer_qpn == w->k->qpn : r->peer_pd == w->k->pd_id) &&
	       (!w->credit || r->credit_count) && (r->peer_access & w->access) == w->access &&
	       walk_can_post_send(c, i);
}

/* Remote address of buffer offset `off` (inside remote region k). */
uint64_t walk_remote_addr(const struct rkey_rec *k, uint32_t off)
{
	return k->addr + (off - k->off);
}
