/* SPDX-License-Identifier: MIT */
/*
 * The 25 actions.  Each checks its preconditions against the client's
 * bookkeeping (returning 0 asks for a redraw), samples its parameters the
 * way the original does, issues the verb and records the result.
 */
#include "cmd/walk/bus.h"
#include "cmd/walk/client.h"
#include "core/stats/stats.h"

#include <errno.h>
#include <string.h>

#define MR_ACCESS                                                                                            \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |                         \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)
#define QP_ACCESS	     (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
#define MW_ACCESS	     (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
#define MIN_QP_WR	     20
#define MSG_UD_PROBABILITY   0.5
#define SEND_IMM_PROBABILITY 0.5
#define RC_MSG_MAX	     (64u << 10)
#define UD_SEND_BYTES	     1000
#define UD_RECV_BYTES	     1040 /* 40 bytes of GRH in front of the payload */
#define MAX_SGE_USED	     16

static const uint32_t rdma_lengths[] = {32u << 10, 64u << 10, 128u << 10, 1u << 20};

#define LOG(c, ...) walk_history_add(&(c)->hist, __VA_ARGS__)

static int imin(int a, int b)
{
	return a < b ? a : b;
}

static void count_error(struct walk_client *c, enum walk_action a, int err)
{
	c->stats.errors[a]++;
	LOG(c, "c%d #%llu %s -> error %d (%s)", c->id, (unsigned long long)c->seq, walk_action_names[a], err,
	    strerror(err));
}

static void count_ok(struct walk_client *c, enum walk_action a)
{
	c->stats.ok[a]++;
}

/* ---- eligibility predicates for pick_index ---- */

static bool any_pd(struct walk_client *c, int i, const void *arg)
{
	(void)arg;
	return c->pd[i].used;
}

static bool busy_pd(struct walk_client *c, int i, const void *arg)
{
	(void)arg;
	return c->pd[i].used && c->pd[i].users;
}

/*
 * The PD a new object goes on: mostly one that already holds objects, as
 * applications keep to a few PDs.  Spreading every object over every PD
 * leaves none idle for long, and dealloc_pd then (almost) never finds one.
 */
static int pick_pd_for_new(struct walk_client *c)
{
	int p = rng_range(&c->rng, 0, 3) ? pick_index(c, MAX_PD, busy_pd, NULL) : -1;

	return p >= 0 ? p : pick_index(c, MAX_PD, any_pd, NULL);
}

static bool any_cq(struct walk_client *c, int i, const void *arg)
{
	(void)arg;
	return c->cq[i].used;
}

static bool idle_cq(struct walk_client *c, int i, const void *arg)
{
	(void)arg;
	return c->cq[i].used && !c->cq[i].users && !c->cq[i].outstanding;
}

static bool idle_pd(struct walk_client *c, int i, const void *arg)
{
	(void)arg;
	return c->pd[i].used && !c->pd[i].users;
}

static bool idle_mr(struct walk_client *c, int i, const void *arg)
{
	(void)arg;
	return c->mr[i].used && !c->mr[i].bound_mws && !c->mr[i].inflight;
}

struct mr_want {
	int pd;
	uint32_t min_len;
};

static bool mr_on_pd(struct walk_client *c, int i, const void *arg)
{
	const struct mr_want *w = arg;

	return c->mr[i].used && c->mr[i].pd == w->pd && c->mr[i].len >= w->min_len;
}

struct mw_want {
	int type;
	bool free_only;
};

static bool mw_match(struct walk_client *c, int i, const void *arg)
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

static bool can_post_send(struct walk_client *c, int q)
{
	const struct qp_rec *r = &c->qp[q];

	return r->send_inflight < (int)r->cap.max_send_wr && cq_has_room(c, r->scq) && c->nfree_wr;
}

static bool can_post_recv(struct walk_client *c, int q)
{
	const struct qp_rec *r = &c->qp[q];

	return r->recv_inflight < (int)r->cap.max_recv_wr && cq_has_room(c, r->rcq) && c->nfree_wr;
}

struct qp_want {
	enum ibv_qp_type type;
	int pd; /* -1: any */
	bool send, recv, credit;
};

static bool qp_match(struct walk_client *c, int i, const void *arg)
{
	const struct qp_want *w = arg;
	const struct qp_rec *r = &c->qp[i];

	if (!r->used || r->type != w->type || r->state != QP_READY)
		return false;
	if (w->pd >= 0 && r->pd != w->pd)
		return false;
	if (w->credit && !r->credit_count)
		return false;
	/* RC receives are bounded by the peer's credit ring. */
	if (w->recv && r->type == IBV_QPT_RC && r->recv_inflight >= CREDITS)
		return false;
	return (!w->send || can_post_send(c, i)) && (!w->recv || can_post_recv(c, i));
}

static int pick_mr(struct walk_client *c, int pd, uint32_t min_len)
{
	struct mr_want w = {pd, min_len};

	return pick_index(c, MAX_MR, mr_on_pd, &w);
}

/* ---- ranges and scatter lists ---- */

/*
 * A range of up to `want` bytes inside buffer offsets [off, off + avail),
 * aligned to `align`.  With --verify, ranges that will be written
 * (`dest`) stay out of the check zone at the end of every buffer.
 * Returns the length (0: impossible) and the start in *start.
 */
static uint32_t choose_range(struct walk_client *c, uint32_t off, uint32_t avail, uint32_t want, bool dest,
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

/* Splits [start, start + len) of a local MR into n contiguous SGEs. */
static int make_sges(struct walk_client *c, int m, uint32_t start, uint32_t len, int n, struct ibv_sge *sge)
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
		sge[i].lkey = c->mr[m].mr->lkey;
	}
	return n;
}

static int sge_count(struct walk_client *c, uint32_t max)
{
	return (int)rng_range(&c->rng, 1, max < MAX_SGE_USED ? (max ? max : 1) : MAX_SGE_USED);
}

/* ---- posting with accounting ---- */

static int post_send_wr(struct walk_client *c, enum walk_action a, int q, int m, struct ibv_send_wr *wr,
			int slot)
{
	struct ibv_send_wr *bad = NULL;
	int rc;

	wr->send_flags |= IBV_SEND_SIGNALED;
	rc = hw_post_send(c->qp[q].qp, wr, &bad);
	if (!rc)
		stats_inc(c->counters, STATS_POSTED);
	c->stats.issued[a]++;
	if (rc) {
		release_wr(c, (uint32_t)slot);
		count_error(c, a, rc);
		return rc;
	}
	c->qp[q].send_inflight++;
	c->cq[c->qp[q].scq].outstanding++;
	if (m >= 0)
		c->mr[m].inflight++;
	LOG(c, "c%d #%llu %s qp=%u opcode=%d sges=%d len0=%u wr=%llx -> posted", c->id,
	    (unsigned long long)c->seq, walk_action_names[a], c->qp[q].qp->qp_num, wr->opcode, wr->num_sge,
	    wr->num_sge ? wr->sg_list[0].length : 0, (unsigned long long)wr->wr_id);
	return 0;
}

/* ---- control path ---- */

static int do_create_cq(struct walk_client *c)
{
	int i, cqe, maxcqe;
	struct ibv_cq *cq;

	if (count_used_cq(c) >= MAX_CQ)
		return 0;
	for (i = 0; c->cq[i].used; i++)
		;
	/* 50..max_cqe as the original; capped so a huge max_cqe stays affordable. */
	maxcqe = imin(c->dattr.max_cqe, 1 << 16);
	cqe = (int)rng_range(&c->rng, 50, (uint64_t)(maxcqe > 50 ? maxcqe : 50));
	c->stats.issued[ACT_CREATE_CQ]++;
	cq = hw_create_cq(c->ctx, cqe, NULL, NULL, 0);
	if (!cq) {
		count_error(c, ACT_CREATE_CQ, errno);
		return 1;
	}
	c->cq[i] = (struct cq_rec){.used = true, .cq = cq, .cqe = cqe};
	count_ok(c, ACT_CREATE_CQ);
	LOG(c, "c%d #%llu create_cq cqe=%d -> cq[%d]", c->id, (unsigned long long)c->seq, cqe, i);
	return 1;
}

static int do_destroy_cq(struct walk_client *c)
{
	int i, rc;

	if (count_used_cq(c) <= MIN_CQ || (i = pick_index(c, MAX_CQ, idle_cq, NULL)) < 0)
		return 0;
	c->stats.issued[ACT_DESTROY_CQ]++;
	rc = hw_destroy_cq(c->cq[i].cq);
	LOG(c, "c%d #%llu destroy_cq cq[%d] -> %d", c->id, (unsigned long long)c->seq, i, rc);
	if (rc) {
		count_error(c, ACT_DESTROY_CQ, rc);
		if (c->cfg->verify)
			walk_stats_fail(&c->stats, "client %d: ibv_destroy_cq of an idle CQ failed: %s",
					c->id, strerror(rc));
		return 1;
	}
	c->cq[i].used = false;
	count_ok(c, ACT_DESTROY_CQ);
	return 1;
}

static int do_alloc_pd(struct walk_client *c)
{
	struct ibv_pd *pd;
	int i;

	if (count_used_pd(c) >= MAX_PD)
		return 0;
	for (i = 0; c->pd[i].used; i++)
		;
	c->stats.issued[ACT_ALLOC_PD]++;
	pd = hw_alloc_pd(c->ctx);
	if (!pd) {
		count_error(c, ACT_ALLOC_PD, errno);
		return 1;
	}
	c->pd[i] = (struct pd_rec){.used = true, .pd = pd, .id = ++c->next_pd_id};
	count_ok(c, ACT_ALLOC_PD);
	LOG(c, "c%d #%llu alloc_pd -> pd[%d] id=%u", c->id, (unsigned long long)c->seq, i, c->pd[i].id);
	return 1;
}

static int do_dealloc_pd(struct walk_client *c)
{
	int i, rc;

	if (count_used_pd(c) <= MIN_PD || (i = pick_index(c, MAX_PD, idle_pd, NULL)) < 0)
		return 0;
	c->stats.issued[ACT_DEALLOC_PD]++;
	rc = hw_dealloc_pd(c->pd[i].pd);
	LOG(c, "c%d #%llu dealloc_pd pd[%d] -> %d", c->id, (unsigned long long)c->seq, i, rc);
	if (rc) {
		count_error(c, ACT_DEALLOC_PD, rc);
		if (c->cfg->verify)
			walk_stats_fail(&c->stats, "client %d: ibv_dealloc_pd of an unused PD failed: %s",
					c->id, strerror(rc));
		return 1;
	}
	c->pd[i].used = false;
	count_ok(c, ACT_DEALLOC_PD);
	return 1;
}

static void send_rkey(struct walk_client *c, int type, int kind, uint32_t rkey, uint32_t pd_id, uint32_t qpn,
		      uint32_t off, uint32_t len)
{
	struct walk_msg m = {
	    .type = (uint16_t)type,
	    .kind = (uint16_t)kind,
	    .rkey = rkey,
	    .pd_id = pd_id,
	    .qpn = qpn,
	    .bytes = off,
	    .addr = (uintptr_t)(c->buf + off),
	    .length = len,
	};

	broadcast(c, &m);
}

static int do_reg_mr(struct walk_client *c)
{
	uint32_t len, off;
	struct ibv_mr *mr;
	int i, p;

	if (count_used_mr(c) >= MAX_MR || outbox_busy(c) || (p = pick_pd_for_new(c)) < 0)
		return 0;
	for (i = 0; c->mr[i].used; i++)
		;
	len = (uint32_t)rng_range(&c->rng, 1, BUF_SIZE);
	off = (uint32_t)rng_range(&c->rng, 0, BUF_SIZE - len);
	c->stats.issued[ACT_REG_MR]++;
	mr = hw_reg_mr(c->pd[p].pd, c->buf + off, len, MR_ACCESS);
	if (!mr) {
		count_error(c, ACT_REG_MR, errno);
		return 1;
	}
	c->mr[i] = (struct mr_rec){.used = true, .mr = mr, .pd = p, .off = off, .len = len};
	c->pd[p].users++;
	count_ok(c, ACT_REG_MR);
	LOG(c, "c%d #%llu reg_mr pd[%d] off=%u len=%u -> lkey=%x rkey=%x", c->id, (unsigned long long)c->seq,
	    p, off, len, mr->lkey, mr->rkey);
	note_key(c, mr->rkey, true);
	send_rkey(c, MSG_ADD_RKEY, 0, mr->rkey, c->pd[p].id, 0, off, len);
	return 1;
}

static int do_dereg_mr(struct walk_client *c)
{
	uint32_t rkey, pd_id, off, len;
	int i, rc;

	if (count_used_mr(c) <= MIN_MR || outbox_busy(c) || (i = pick_index(c, MAX_MR, idle_mr, NULL)) < 0)
		return 0;
	rkey = c->mr[i].mr->rkey;
	pd_id = c->pd[c->mr[i].pd].id;
	off = c->mr[i].off;
	len = c->mr[i].len;
	c->stats.issued[ACT_DEREG_MR]++;
	rc = hw_dereg_mr(c->mr[i].mr);
	LOG(c, "c%d #%llu dereg_mr mr[%d] rkey=%x -> %d", c->id, (unsigned long long)c->seq, i, rkey, rc);
	if (rc) {
		count_error(c, ACT_DEREG_MR, rc);
		if (c->cfg->verify)
			walk_stats_fail(&c->stats, "client %d: ibv_dereg_mr of an idle MR failed: %s", c->id,
					strerror(rc));
		return 1;
	}
	c->pd[c->mr[i].pd].users--;
	c->mr[i].used = false;
	count_ok(c, ACT_DEREG_MR);
	note_key(c, rkey, false);
	send_rkey(c, MSG_REMOVE_RKEY, 0, rkey, pd_id, 0, off, len);
	return 1;
}

static int do_alloc_mw(struct walk_client *c, int type)
{
	enum walk_action a = type == 1 ? ACT_ALLOC_MW_TYPE1 : ACT_ALLOC_MW_TYPE2;
	struct ibv_mw *mw;
	int i, p;

	if (count_mw(c, type) >= MAX_MW || (p = pick_pd_for_new(c)) < 0)
		return 0;
	for (i = 0; c->mw[i].used; i++)
		;
	c->stats.issued[a]++;
	mw = hw_alloc_mw(c->pd[p].pd, type == 1 ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2);
	if (!mw) {
		count_error(c, a, errno);
		return 1;
	}
	c->mw[i] = (struct mw_rec){.used = true, .mw = mw, .type = type, .pd = p, .mr = -1, .qp = -1};
	c->pd[p].users++;
	count_ok(c, a);
	LOG(c, "c%d #%llu %s pd[%d] -> mw[%d] rkey=%x", c->id, (unsigned long long)c->seq,
	    walk_action_names[a], p, i, mw->rkey);
	return 1;
}

static int do_dealloc_mw(struct walk_client *c, int type)
{
	enum walk_action a = type == 1 ? ACT_DEALLOC_MW_TYPE1 : ACT_DEALLOC_MW_TYPE2;
	struct mw_want want = {type, false};
	struct mw_rec *m;
	int i, rc;

	if (count_mw(c, type) <= MIN_MW || outbox_busy(c) ||
	    (i = pick_index(c, 2 * MAX_MW, mw_match, &want)) < 0)
		return 0;
	m = &c->mw[i];
	c->stats.issued[a]++;
	rc = hw_dealloc_mw(m->mw);
	LOG(c, "c%d #%llu %s mw[%d] %s rkey=%x -> %d", c->id, (unsigned long long)c->seq,
	    walk_action_names[a], i, m->state == MW_BOUND ? "bound" : "unbound", m->rkey, rc);
	if (rc) {
		count_error(c, a, rc);
		if (c->cfg->verify)
			walk_stats_fail(&c->stats, "client %d: ibv_dealloc_mw failed: %s", c->id,
					strerror(rc));
		return 1;
	}
	c->pd[m->pd].users--;
	if (m->state == MW_BOUND) {
		note_key(c, m->rkey, false);
		c->mr[m->mr].bound_mws--;
		if (m->qp >= 0)
			c->qp[m->qp].type2_bound--;
		send_rkey(c, MSG_REMOVE_RKEY, type, m->rkey, c->pd[m->pd].id,
			  m->qp >= 0 ? c->qp[m->qp].qp->qp_num : 0, (uint32_t)(m->addr - (uintptr_t)c->buf),
			  (uint32_t)m->len);
	}
	m->used = false;
	count_ok(c, a);
	return 1;
}

static int do_bind_mw(struct walk_client *c, int type)
{
	enum walk_action a = type == 1 ? ACT_BIND_MW_TYPE1 : ACT_BIND_MW_TYPE2;
	struct mw_want want = {type, true};
	struct qp_want qw = {IBV_QPT_RC, -1, true, false, false};
	struct ibv_mw_bind_info info;
	uint32_t start, len;
	uint64_t wr_id;
	int i, q, m, slot, rc;

	if (outbox_busy(c) || (i = pick_index(c, 2 * MAX_MW, mw_match, &want)) < 0)
		return 0;
	qw.pd = c->mw[i].pd;
	if ((q = pick_index(c, MAX_QP, qp_match, &qw)) < 0 || (m = pick_mr(c, c->mw[i].pd, 1)) < 0)
		return 0;
	len = choose_range(c, c->mr[m].off, c->mr[m].len, (uint32_t)rng_range(&c->rng, 1, c->mr[m].len),
			   false, 1, &start);
	if (!len || (slot = alloc_wr(c, a, q, -1, &wr_id)) < 0)
		return 0;
	c->wr[slot].mw = (int8_t)i;
	info = (struct ibv_mw_bind_info){.mr = c->mr[m].mr,
					 .addr = (uintptr_t)(c->buf + start),
					 .length = len,
					 .mw_access_flags = MW_ACCESS};
	c->stats.issued[a]++;
	if (type == 1) {
		struct ibv_mw_bind bind = {
		    .wr_id = wr_id, .send_flags = IBV_SEND_SIGNALED, .bind_info = info};

		rc = hw_bind_mw(c->qp[q].qp, c->mw[i].mw, &bind);
		c->mw[i].new_rkey = c->mw[i].mw->rkey;
	} else {
		struct ibv_send_wr wr = {
		    .wr_id = wr_id, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED};
		struct ibv_send_wr *bad;

		/* A new tag for every bind, so the previous rkey stops working. */
		c->mw[i].new_rkey = ibv_inc_rkey(c->mw[i].mw->rkey);
		wr.bind_mw.mw = c->mw[i].mw;
		wr.bind_mw.rkey = c->mw[i].new_rkey;
		wr.bind_mw.bind_info = info;
		rc = hw_post_send(c->qp[q].qp, &wr, &bad);
	}
	if (!rc)
		stats_inc(c->counters, STATS_POSTED);
	LOG(c, "c%d #%llu %s mw[%d] qp=%u mr[%d] off=%u len=%u rkey=%x wr=%llx -> %d", c->id,
	    (unsigned long long)c->seq, walk_action_names[a], i, c->qp[q].qp->qp_num, m, start, len,
	    c->mw[i].new_rkey, (unsigned long long)wr_id, rc);
	if (rc) {
		release_wr(c, (uint32_t)slot);
		count_error(c, a, rc);
		return 1;
	}
	note_key(c, c->mw[i].new_rkey, true);
	c->qp[q].send_inflight++;
	c->cq[c->qp[q].scq].outstanding++;
	c->mr[m].bound_mws++;
	c->mw[i].state = MW_BINDING;
	c->mw[i].mr = m;
	c->mw[i].qp = type == 2 ? q : -1;
	if (type == 2)
		c->qp[q].type2_bound++;
	c->mw[i].addr = info.addr;
	c->mw[i].len = len;
	return 1;
}

/* ---- QPs and AHs ---- */

static int qp_slot(struct walk_client *c)
{
	for (int i = 0; i < MAX_QP; i++)
		if (!c->qp[i].used)
			return i;
	return -1;
}

/* Creates a QP in RESET with caps sampled as the original (bounded for small WQEs). */
static int create_qp(struct walk_client *c, enum ibv_qp_type type)
{
	int p = pick_pd_for_new(c), i = qp_slot(c);
	int scq = pick_index(c, MAX_CQ, any_cq, NULL), rcq = pick_index(c, MAX_CQ, any_cq, NULL);
	int wr_max = c->dattr.max_qp_wr / 8, sge_max = c->dattr.max_sge / 2;
	struct ibv_qp_init_attr init = {.qp_type = type};
	struct ibv_qp *qp;

	if (p < 0 || i < 0 || scq < 0 || rcq < 0)
		return -1;
	wr_max = wr_max < MIN_QP_WR ? MIN_QP_WR : wr_max;
	sge_max = sge_max < 1 ? 1 : sge_max;
	init.send_cq = c->cq[scq].cq;
	init.recv_cq = c->cq[rcq].cq;
	init.cap.max_send_wr = (uint32_t)rng_range(&c->rng, MIN_QP_WR, (uint64_t)wr_max);
	init.cap.max_recv_wr = (uint32_t)rng_range(&c->rng, MIN_QP_WR, (uint64_t)wr_max);
	init.cap.max_send_sge = (uint32_t)rng_range(&c->rng, 1, (uint64_t)sge_max);
	init.cap.max_recv_sge = (uint32_t)rng_range(&c->rng, 1, (uint64_t)sge_max);
	qp = hw_create_qp(c->pd[p].pd, &init);
	if (!qp)
		return -2;
	c->qp[i] = (struct qp_rec){.used = true,
				   .qp = qp,
				   .type = type,
				   .state = QP_CONNECTING,
				   .pd = p,
				   .scq = scq,
				   .rcq = rcq,
				   .cap = init.cap,
				   .peer = -1};
	c->pd[p].users++;
	c->cq[scq].users++;
	c->cq[rcq].users++;
	return i;
}

static int modify_init(struct walk_client *c, struct ibv_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr attr = {
	    .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = (uint8_t)c->cfg->port};
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	if (qp->qp_type == IBV_QPT_UD) {
		attr.qkey = qkey;
		mask |= IBV_QP_QKEY;
	} else {
		attr.qp_access_flags = QP_ACCESS;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	return hw_modify_qp(qp, &attr, mask);
}

static void fill_ah_attr(struct walk_client *c, int target, struct ibv_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	ah->dlid = c->peers[target].lid;
	ah->port_num = (uint8_t)c->cfg->port;
	ah->is_global = 1;
	ah->grh.dgid = c->peers[target].gid;
	ah->grh.sgid_index = (uint8_t)c->cfg->gid_index;
	ah->grh.hop_limit = 64;
}

/*
 * A QP's initial send PSN: random-looking (a stranger cannot guess where a
 * connection's sequence starts) yet computable by both ends from the run's
 * seed and the sending QP's number, so no message has to carry it and a
 * replay with the same seed uses the same PSNs.  24 bits, as in the BTH.
 */
static uint32_t initial_psn(const struct walk_client *c, uint32_t qpn)
{
	uint64_t x = c->cfg->seed ^ ((uint64_t)qpn * 0x9e3779b97f4a7c15ull);

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (uint32_t)x & 0xffffff;
}

/* RESET -> INIT -> RTR -> RTS toward (peer, peer_qpn). */
int connect_rc(struct walk_client *c, int q, int peer, uint32_t peer_qpn)
{
	struct ibv_qp *qp = c->qp[q].qp;
	int rd_atom = c->dattr.max_qp_rd_atom > 0 ? imin(c->dattr.max_qp_rd_atom, 16) : 1;
	struct ibv_qp_attr attr;
	int rc = modify_init(c, qp, 0);

	if (rc)
		return rc;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	attr.path_mtu = c->pattr.active_mtu;
	attr.dest_qp_num = peer_qpn;
	attr.rq_psn = initial_psn(c, peer_qpn);
	attr.max_dest_rd_atomic = (uint8_t)rd_atom;
	attr.min_rnr_timer = 12;
	fill_ah_attr(c, peer, &attr.ah_attr);
	rc = hw_modify_qp(qp, &attr,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (rc)
		return rc;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	attr.timeout = 14;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.sq_psn = initial_psn(c, qp->qp_num);
	attr.max_rd_atomic = (uint8_t)rd_atom;
	return hw_modify_qp(qp, &attr,
			    IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

int walk_create_rc_responder(struct walk_client *c)
{
	return create_qp(c, IBV_QPT_RC);
}

static int do_create_rc_qp_pair(struct walk_client *c)
{
	struct walk_msg m = {.type = MSG_RC_REQUEST};
	int peer, q;

	if (count_qp(c, IBV_QPT_RC, true) >= MAX_RC_INITIATED || outbox_busy(c) || qp_slot(c) < 0)
		return 0;
	peer = (int)rng_range(&c->rng, 0, (uint64_t)c->clients - 1);
	c->stats.issued[ACT_CREATE_RC_QP_PAIR]++;
	q = create_qp(c, IBV_QPT_RC);
	if (q < 0) {
		count_error(c, ACT_CREATE_RC_QP_PAIR, errno);
		return 1;
	}
	c->qp[q].initiator = true;
	c->qp[q].peer = peer;
	/* ok is counted when the handshake completes (handle RC_REPLY) */
	LOG(c, "c%d #%llu create_rc_qp_pair qp=%u pd[%d] cq=%d/%d peer=c%d -> requested", c->id,
	    (unsigned long long)c->seq, c->qp[q].qp->qp_num, c->qp[q].pd, c->qp[q].scq, c->qp[q].rcq, peer);
	m.dst = (uint16_t)peer;
	m.qpn = c->qp[q].qp->qp_num;
	m.pd_id = c->pd[c->qp[q].pd].id;
	publish(c, &m);
	return 1;
}

static int do_create_ud_qp(struct walk_client *c)
{
	struct walk_msg m = {.type = MSG_ADD_UD_QP};
	struct ibv_qp_attr attr;
	uint32_t qkey;
	int q, rc;

	if (count_qp(c, IBV_QPT_UD, false) >= MAX_UD || outbox_busy(c) || qp_slot(c) < 0)
		return 0;
	c->stats.issued[ACT_CREATE_UD_QP]++;
	q = create_qp(c, IBV_QPT_UD);
	if (q < 0) {
		count_error(c, ACT_CREATE_UD_QP, errno);
		return 1;
	}
	/* Q_Keys with the top bit set are privileged (Linux 6.4+): never sample them. */
	qkey = (uint32_t)rng_next(&c->rng) & 0x7fffffffu;
	c->qp[q].qkey = qkey;
	rc = modify_init(c, c->qp[q].qp, qkey);
	if (!rc) {
		memset(&attr, 0, sizeof(attr));
		attr.qp_state = IBV_QPS_RTR;
		rc = hw_modify_qp(c->qp[q].qp, &attr, IBV_QP_STATE);
	}
	if (!rc) {
		memset(&attr, 0, sizeof(attr));
		attr.qp_state = IBV_QPS_RTS;
		attr.sq_psn = initial_psn(c, c->qp[q].qp->qp_num);
		rc = hw_modify_qp(c->qp[q].qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN);
	}
	LOG(c, "c%d #%llu create_ud_qp qp=%u qkey=%x -> %d", c->id, (unsigned long long)c->seq,
	    c->qp[q].qp->qp_num, qkey, rc);
	if (rc) {
		count_error(c, ACT_CREATE_UD_QP, rc);
		c->qp[q].state = QP_ERR; /* destroy_qp reclaims it */
		return 1;
	}
	c->qp[q].state = QP_READY;
	count_ok(c, ACT_CREATE_UD_QP);
	m.qpn = c->qp[q].qp->qp_num;
	m.qkey = qkey;
	broadcast(c, &m);
	return 1;
}

static void announce_down(struct walk_client *c, int q)
{
	struct qp_rec *r = &c->qp[q];
	struct walk_msg m = {.qpn = r->qp->qp_num};

	if (r->down_sent)
		return;
	r->down_sent = true;
	if (r->type == IBV_QPT_UD) {
		m.type = MSG_REMOVE_UD_QP;
		broadcast(c, &m);
	} else if (r->peer >= 0 && r->peer_qpn) {
		m.type = MSG_RC_DOWN;
		m.dst = (uint16_t)r->peer;
		m.peer_qpn = r->peer_qpn;
		publish(c, &m);
	}
}

static bool qp_for_error(struct walk_client *c, int i, const void *arg)
{
	const struct qp_rec *r = &c->qp[i];

	(void)arg;
	return r->used && r->state != QP_ERR && r->state != QP_CONNECTING &&
	       (c->cfg->allow_outstanding_ops || (!r->send_inflight && !r->recv_inflight));
}

static int do_modify_qp_error(struct walk_client *c)
{
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};
	int q, rc;

	if (outbox_busy(c) || (q = pick_index(c, MAX_QP, qp_for_error, NULL)) < 0)
		return 0;
	c->stats.issued[ACT_MODIFY_QP_ERROR]++;
	rc = hw_modify_qp(c->qp[q].qp, &attr, IBV_QP_STATE);
	LOG(c, "c%d #%llu modify_qp_error qp=%u inflight=%d/%d -> %d", c->id, (unsigned long long)c->seq,
	    c->qp[q].qp->qp_num, c->qp[q].send_inflight, c->qp[q].recv_inflight, rc);
	if (rc) {
		count_error(c, ACT_MODIFY_QP_ERROR, rc);
		return 1;
	}
	c->qp[q].state = QP_ERR;
	c->qp[q].err_since_ns = walk_now_ns();
	count_ok(c, ACT_MODIFY_QP_ERROR);
	announce_down(c, q);
	return 1;
}

static bool qp_for_destroy(struct walk_client *c, int i, const void *arg)
{
	const struct qp_rec *r = &c->qp[i];

	(void)arg;
	return r->used && r->state == QP_ERR && !r->type2_bound &&
	       (c->cfg->allow_outstanding_ops || (!r->send_inflight && !r->recv_inflight));
}

/* Forgets WRs still outstanding on a destroyed QP (--allow-outstanding-ops). */
static void orphan_wrs(struct walk_client *c, int q)
{
	for (uint32_t s = 0; s < MAX_WR; s++) {
		struct wr_rec *w = &c->wr[s];

		if (!w->busy || w->qp != q)
			continue;
		if (w->mr >= 0)
			c->mr[w->mr].inflight--;
		if (w->mw >= 0 && c->mw[w->mw].state == MW_BINDING) {
			c->mw[w->mw].state = MW_FREE;
			c->mr[c->mw[w->mw].mr].bound_mws--;
		}
		release_wr(c, s);
	}
	c->cq[c->qp[q].scq].outstanding -= c->qp[q].send_inflight;
	c->cq[c->qp[q].rcq].outstanding -= c->qp[q].recv_inflight;
}

int destroy_qp_rec(struct walk_client *c, int q)
{
	struct qp_rec *r = &c->qp[q];
	int rc;

	announce_down(c, q);
	rc = hw_destroy_qp(r->qp);
	if (rc)
		return rc;
	if (r->send_inflight || r->recv_inflight)
		orphan_wrs(c, q);
	c->pd[r->pd].users--;
	c->cq[r->scq].users--;
	c->cq[r->rcq].users--;
	r->used = false;
	return 0;
}

static int do_destroy_qp(struct walk_client *c)
{
	int q, rc;
	uint32_t qpn;

	if (outbox_busy(c) || (q = pick_index(c, MAX_QP, qp_for_destroy, NULL)) < 0)
		return 0;
	qpn = c->qp[q].qp->qp_num;
	c->stats.issued[ACT_DESTROY_QP]++;
	rc = destroy_qp_rec(c, q);
	LOG(c, "c%d #%llu destroy_qp qp=%u -> %d", c->id, (unsigned long long)c->seq, qpn, rc);
	if (rc) {
		count_error(c, ACT_DESTROY_QP, rc);
		if (c->cfg->verify)
			walk_stats_fail(&c->stats, "client %d: ibv_destroy_qp of QP %u failed: %s", c->id,
					qpn, strerror(rc));
		return 1;
	}
	count_ok(c, ACT_DESTROY_QP);
	return 1;
}

static int do_create_ah(struct walk_client *c)
{
	struct ibv_ah_attr attr;
	struct ibv_ah *ah;
	int i, p, target;

	if ((p = pick_pd_for_new(c)) < 0)
		return 0;
	for (i = 0; i < MAX_AH && c->ah[i].used; i++)
		;
	if (i == MAX_AH)
		return 0;
	target = (int)rng_range(&c->rng, 0, (uint64_t)c->clients - 1);
	fill_ah_attr(c, target, &attr);
	c->stats.issued[ACT_CREATE_AH]++;
	ah = hw_create_ah(c->pd[p].pd, &attr);
	LOG(c, "c%d #%llu create_ah pd[%d] target=c%d lid=%u -> %s", c->id, (unsigned long long)c->seq, p,
	    target, attr.dlid, ah ? "ok" : "error");
	if (!ah) {
		count_error(c, ACT_CREATE_AH, errno);
		return 1;
	}
	c->ah[i] = (struct ah_rec){.used = true, .ah = ah, .pd = p, .target = target};
	c->pd[p].users++;
	count_ok(c, ACT_CREATE_AH);
	return 1;
}

static bool ah_idle(struct walk_client *c, int i, const void *arg)
{
	(void)arg;
	if (!c->ah[i].used)
		return false;
	/* A UD send in flight may still need its AH. */
	for (int q = 0; q < MAX_QP; q++)
		if (c->qp[q].used && c->qp[q].type == IBV_QPT_UD && c->qp[q].pd == c->ah[i].pd &&
		    c->qp[q].send_inflight)
			return false;
	return true;
}

static int do_destroy_ah(struct walk_client *c)
{
	int i, rc;

	if ((i = pick_index(c, MAX_AH, ah_idle, NULL)) < 0)
		return 0;
	c->stats.issued[ACT_DESTROY_AH]++;
	rc = hw_destroy_ah(c->ah[i].ah);
	LOG(c, "c%d #%llu destroy_ah ah[%d] -> %d", c->id, (unsigned long long)c->seq, i, rc);
	if (rc) {
		count_error(c, ACT_DESTROY_AH, rc);
		return 1;
	}
	c->pd[c->ah[i].pd].users--;
	c->ah[i].used = false;
	count_ok(c, ACT_DESTROY_AH);
	return 1;
}

/* ---- data path ---- */

static uint32_t pop_credit(struct qp_rec *r)
{
	uint32_t bytes = r->credit[r->credit_head];

	r->credit_head = (r->credit_head + 1) % CREDITS;
	r->credit_count--;
	return bytes;
}

static int post_rc_send(struct walk_client *c, enum walk_action a, int q, uint32_t inv_rkey, bool empty)
{
	struct qp_rec *r = &c->qp[q];
	struct ibv_sge sge[MAX_SGE_USED];
	struct ibv_send_wr wr = {.opcode = IBV_WR_SEND};
	uint32_t capacity = r->credit[r->credit_head], start = 0, len = 0;
	int m = -1, slot;

	if (!empty) {
		if ((m = pick_mr(c, r->pd, 1)) < 0)
			return 0;
		len = choose_range(
		    c, c->mr[m].off, c->mr[m].len,
		    (uint32_t)rng_range(&c->rng, 1, capacity < RC_MSG_MAX ? capacity : RC_MSG_MAX), false, 1,
		    &start);
		if (!len)
			return 0;
	}
	if ((slot = alloc_wr(c, a, q, m, &wr.wr_id)) < 0)
		return 0;
	if (m >= 0) {
		wr.sg_list = sge;
		wr.num_sge = make_sges(c, m, start, len, sge_count(c, r->cap.max_send_sge), sge);
	}
	if (a == ACT_SEND_WITH_INV) {
		wr.opcode = IBV_WR_SEND_WITH_INV;
		wr.invalidate_rkey = inv_rkey;
	} else if (rng_bernoulli(&c->rng, SEND_IMM_PROBABILITY)) {
		wr.opcode = IBV_WR_SEND_WITH_IMM;
		wr.imm_data = htobe32((uint32_t)rng_next(&c->rng));
	}
	pop_credit(r);
	post_send_wr(c, a, q, m, &wr, slot);
	return 1;
}

struct ud_dest {
	int pd;
};

static bool ah_with_target(struct walk_client *c, int i, const void *arg)
{
	const struct ud_dest *d = arg;

	if (!c->ah[i].used || c->ah[i].pd != d->pd)
		return false;
	for (int r = 0; r < MAX_REMOTE_UD; r++)
		if (c->ruds[r].used && c->ruds[r].owner == c->ah[i].target)
			return true;
	return false;
}

static bool rud_of(struct walk_client *c, int i, const void *arg)
{
	return c->ruds[i].used && c->ruds[i].owner == *(const int *)arg;
}

static int do_send(struct walk_client *c)
{
	bool ud = rng_bernoulli(&c->rng, MSG_UD_PROBABILITY);
	struct qp_want qw = {ud ? IBV_QPT_UD : IBV_QPT_RC, -1, true, false, !ud};
	struct ibv_sge sge[MAX_SGE_USED];
	struct ibv_send_wr wr = {.opcode = IBV_WR_SEND};
	struct ud_dest d;
	uint32_t start;
	int q, m, ah, rud, slot;

	if ((q = pick_index(c, MAX_QP, qp_match, &qw)) < 0)
		return 0;
	if (!ud)
		return post_rc_send(c, ACT_SEND, q, 0, false);
	d.pd = c->qp[q].pd;
	if ((ah = pick_index(c, MAX_AH, ah_with_target, &d)) < 0 || (m = pick_mr(c, d.pd, UD_SEND_BYTES)) < 0)
		return 0;
	rud = pick_index(c, MAX_REMOTE_UD, rud_of, &c->ah[ah].target);
	if (rud < 0 || !choose_range(c, c->mr[m].off, c->mr[m].len, UD_SEND_BYTES, false, 1, &start))
		return 0;
	if ((slot = alloc_wr(c, ACT_SEND, q, m, &wr.wr_id)) < 0)
		return 0;
	wr.sg_list = sge;
	wr.num_sge = make_sges(c, m, start, UD_SEND_BYTES, sge_count(c, c->qp[q].cap.max_send_sge), sge);
	wr.wr.ud.ah = c->ah[ah].ah;
	wr.wr.ud.remote_qpn = c->ruds[rud].qpn;
	wr.wr.ud.remote_qkey = c->ruds[rud].qkey;
	if (rng_bernoulli(&c->rng, SEND_IMM_PROBABILITY)) {
		wr.opcode = IBV_WR_SEND_WITH_IMM;
		wr.imm_data = htobe32((uint32_t)rng_next(&c->rng));
	}
	post_send_wr(c, ACT_SEND, q, m, &wr, slot);
	return 1;
}

/* A local RC QP that can reach remote memory `k`, or -1. */
struct reach {
	const struct rkey_rec *k;
	bool credit;
};

static bool qp_reaches(struct walk_client *c, int i, const void *arg)
{
	const struct reach *w = arg;
	const struct qp_rec *r = &c->qp[i];

	if (!r->used || r->type != IBV_QPT_RC || r->state != QP_READY || r->peer != w->k->owner)
		return false;
	if (w->k->kind == 2 ? r->peer_qpn != w->k->qpn : r->peer_pd != w->k->pd_id)
		return false;
	if (w->credit && !r->credit_count)
		return false;
	return can_post_send(c, i);
}

static bool rkey_kind2(struct walk_client *c, int i, const void *arg)
{
	(void)arg;
	return c->rkeys[i].used && c->rkeys[i].kind == 2;
}

static int do_send_with_inv(struct walk_client *c)
{
	struct reach w;
	int k, q;

	if ((k = pick_index(c, MAX_REMOTE_KEYS, rkey_kind2, NULL)) < 0)
		return 0;
	w = (struct reach){&c->rkeys[k], true};
	if ((q = pick_index(c, MAX_QP, qp_reaches, &w)) < 0)
		return 0;
	if (!post_rc_send(c, ACT_SEND_WITH_INV, q, c->rkeys[k].rkey, rng_bernoulli(&c->rng, 0.5)))
		return 0;
	c->rkeys[k].used = false; /* invalidated: never used again from here */
	return 1;
}

static int do_recv(struct walk_client *c)
{
	bool ud = rng_bernoulli(&c->rng, MSG_UD_PROBABILITY);
	struct qp_want qw = {ud ? IBV_QPT_UD : IBV_QPT_RC, -1, false, true, false};
	struct ibv_sge sge[MAX_SGE_USED];
	struct ibv_recv_wr wr = {0}, *bad;
	uint32_t start, len, want;
	int q, m, slot, rc;

	if ((!ud && outbox_busy(c)) || (q = pick_index(c, MAX_QP, qp_match, &qw)) < 0)
		return 0;
	want = ud ? UD_RECV_BYTES : (uint32_t)rng_range(&c->rng, 1, RC_MSG_MAX);
	if ((m = pick_mr(c, c->qp[q].pd, ud ? UD_RECV_BYTES : 1)) < 0)
		return 0;
	len = choose_range(c, c->mr[m].off, c->mr[m].len, want, true, 1, &start);
	if (!len || (ud && len < UD_RECV_BYTES) || (slot = alloc_wr(c, ACT_RECV, q, m, &wr.wr_id)) < 0)
		return 0;
	c->wr[slot].is_recv = true;
	wr.sg_list = sge;
	wr.num_sge = make_sges(c, m, start, len, sge_count(c, c->qp[q].cap.max_recv_sge), sge);
	c->stats.issued[ACT_RECV]++;
	rc = hw_post_recv(c->qp[q].qp, &wr, &bad);
	if (!rc)
		stats_inc(c->counters, STATS_POSTED);
	LOG(c, "c%d #%llu recv qp=%u sges=%d len=%u wr=%llx -> %d", c->id, (unsigned long long)c->seq,
	    c->qp[q].qp->qp_num, wr.num_sge, len, (unsigned long long)wr.wr_id, rc);
	if (rc) {
		release_wr(c, (uint32_t)slot);
		count_error(c, ACT_RECV, rc);
		return 1;
	}
	c->qp[q].recv_inflight++;
	c->cq[c->qp[q].rcq].outstanding++;
	c->mr[m].inflight++;
	if (!ud) {
		/* Receive credit: the peer may now send up to len bytes once. */
		struct walk_msg msg = {.type = MSG_CREDIT,
				       .dst = (uint16_t)c->qp[q].peer,
				       .qpn = c->qp[q].qp->qp_num,
				       .peer_qpn = c->qp[q].peer_qpn,
				       .bytes = len};

		publish(c, &msg);
	}
	return 1;
}

/* Remote address of buffer offset `off` (inside remote region k). */
static uint64_t remote_addr(const struct rkey_rec *k, uint32_t off)
{
	return k->addr + (off - k->off);
}

struct rdma_target {
	int k, q, m;
};

/* A remote region of at least min_len bytes that one of our QPs can reach. */
static bool rkey_reachable(struct walk_client *c, int i, const void *arg)
{
	struct reach w = {&c->rkeys[i], false};

	if (!c->rkeys[i].used || c->rkeys[i].len < *(const uint32_t *)arg)
		return false;
	for (int q = 0; q < MAX_QP; q++)
		if (qp_reaches(c, q, &w))
			return true;
	return false;
}

/* A remote region, an RC QP reaching it and a local MR on that QP's PD. */
static bool pick_target(struct walk_client *c, uint32_t min_len, struct rdma_target *t)
{
	struct reach w;

	if ((t->k = pick_index(c, MAX_REMOTE_KEYS, rkey_reachable, &min_len)) < 0)
		return false;
	w = (struct reach){&c->rkeys[t->k], false};
	if ((t->q = pick_index(c, MAX_QP, qp_reaches, &w)) < 0)
		return false;
	return (t->m = pick_mr(c, c->qp[t->q].pd, min_len)) >= 0;
}

struct check_want {
	uint32_t remote_off, local_off, len;
};

static bool rkey_covers(struct walk_client *c, int i, const void *arg)
{
	const struct check_want *w = arg;
	const struct rkey_rec *k = &c->rkeys[i];

	return k->used && k->off <= w->remote_off && k->off + k->len >= w->remote_off + w->len;
}

static bool mr_covers(struct walk_client *c, int i, const void *arg)
{
	const struct mr_want *w = arg;
	const struct mr_rec *m = &c->mr[i];
	uint32_t slot_off = ZONE_START + (uint32_t)c->id * CHECK_SLOT;

	return m->used && m->pd == w->pd && m->off <= slot_off &&
	       m->off + m->len >= slot_off + CHECK_SLOT / 2;
}

/*
 * --verify: WRITE a pattern into our own slot of a peer's check zone (no one
 * else writes there), READ it back on the same QP, compare on completion.
 */
static int checked_write(struct walk_client *c)
{
	uint32_t slot_off = ZONE_START + (uint32_t)c->id * CHECK_SLOT;
	struct check_want cw = {slot_off + CHECK_SLOT / 2, slot_off,
				(uint32_t)rng_range(&c->rng, 8, CHECK_SLOT / 4)};
	struct ibv_send_wr wr = {.opcode = IBV_WR_RDMA_WRITE, .num_sge = 1};
	struct ibv_sge src, dst;
	const struct rkey_rec *k;
	struct mr_want mw;
	struct reach w;
	int ki, q, m, ws, rs;

	if ((ki = pick_index(c, MAX_REMOTE_KEYS, rkey_covers, &cw)) < 0)
		return 0;
	k = &c->rkeys[ki];
	w = (struct reach){k, false};
	if ((q = pick_index(c, MAX_QP, qp_reaches, &w)) < 0)
		return 0;
	mw = (struct mr_want){c->qp[q].pd, 1};
	if ((m = pick_index(c, MAX_MR, mr_covers, &mw)) < 0 ||
	    c->qp[q].send_inflight + 2 > (int)c->qp[q].cap.max_send_wr ||
	    c->cq[c->qp[q].scq].outstanding + 2 > c->cq[c->qp[q].scq].cqe || c->nfree_wr < 2)
		return 0;
	src = (struct ibv_sge){(uintptr_t)(c->buf + slot_off), cw.len, c->mr[m].mr->lkey};
	dst = (struct ibv_sge){(uintptr_t)(c->buf + slot_off + CHECK_SLOT / 4), cw.len, c->mr[m].mr->lkey};
	c->check_seed = rng_next(&c->rng);
	c->check_len = cw.len;
	fill_pattern(c->buf + slot_off, cw.len, c->check_seed);
	memset(c->buf + slot_off + CHECK_SLOT / 4, 0, cw.len);
	wr.sg_list = &src;
	wr.wr.rdma.remote_addr = remote_addr(k, cw.remote_off);
	wr.wr.rdma.rkey = k->rkey;
	ws = alloc_wr(c, ACT_WRITE, q, m, &wr.wr_id);
	c->wr[ws].check = true;
	if (post_send_wr(c, ACT_WRITE, q, m, &wr, ws))
		return 1;
	wr = (struct ibv_send_wr){.opcode = IBV_WR_RDMA_READ, .sg_list = &dst, .num_sge = 1};
	wr.wr.rdma.remote_addr = remote_addr(k, cw.remote_off);
	wr.wr.rdma.rkey = k->rkey;
	rs = alloc_wr(c, ACT_READ, q, m, &wr.wr_id);
	c->wr[rs].check = true;
	c->check_busy = true;
	c->check_write_ok = false;
	if (post_send_wr(c, ACT_READ, q, m, &wr, rs))
		c->check_busy = false;
	LOG(c, "c%d #%llu checked write to c%d rkey=%x len=%u seed=%llx", c->id, (unsigned long long)c->seq,
	    k->owner, k->rkey, cw.len, (unsigned long long)c->check_seed);
	return 1;
}

static int do_read_write(struct walk_client *c, enum walk_action a)
{
	uint32_t want = rdma_lengths[rng_range(&c->rng, 0, 3)], lstart, rstart, len;
	struct ibv_sge sge[MAX_SGE_USED];
	struct ibv_send_wr wr = {.opcode = a == ACT_READ ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE};
	struct rdma_target t;
	const struct rkey_rec *k;
	int slot;

	if (a == ACT_WRITE && c->cfg->verify && !c->check_busy && rng_bernoulli(&c->rng, 0.5) &&
	    checked_write(c))
		return 1;
	if (!pick_target(c, 1, &t))
		return 0;
	k = &c->rkeys[t.k];
	/* A READ writes locally, a WRITE remotely: that side avoids the check zone. */
	len = choose_range(c, c->mr[t.m].off, c->mr[t.m].len, want, a == ACT_READ, 1, &lstart);
	if (!len)
		return 0;
	len = choose_range(c, k->off, (uint32_t)k->len, len, a == ACT_WRITE, 1, &rstart);
	if (!len || (slot = alloc_wr(c, a, t.q, t.m, &wr.wr_id)) < 0)
		return 0;
	wr.sg_list = sge;
	wr.num_sge = make_sges(c, t.m, lstart, len, sge_count(c, c->qp[t.q].cap.max_send_sge), sge);
	wr.wr.rdma.remote_addr = remote_addr(k, rstart);
	wr.wr.rdma.rkey = k->rkey;
	post_send_wr(c, a, t.q, t.m, &wr, slot);
	return 1;
}

static int do_atomic(struct walk_client *c, enum walk_action a)
{
	struct ibv_send_wr wr = {.opcode = a == ACT_FETCH_ADD ? IBV_WR_ATOMIC_FETCH_AND_ADD
							      : IBV_WR_ATOMIC_CMP_AND_SWP};
	struct ibv_sge sge;
	struct rdma_target t;
	uint32_t lstart, rstart;
	int slot;

	if (c->dattr.atomic_cap == IBV_ATOMIC_NONE || !pick_target(c, 8, &t))
		return 0;
	if (choose_range(c, c->mr[t.m].off, c->mr[t.m].len, 8, true, 8, &lstart) != 8 ||
	    choose_range(c, c->rkeys[t.k].off, (uint32_t)c->rkeys[t.k].len, 8, true, 8, &rstart) != 8)
		return 0;
	if ((slot = alloc_wr(c, a, t.q, t.m, &wr.wr_id)) < 0)
		return 0;
	sge = (struct ibv_sge){(uintptr_t)(c->buf + lstart), 8, c->mr[t.m].mr->lkey};
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.atomic.remote_addr = remote_addr(&c->rkeys[t.k], rstart);
	wr.wr.atomic.rkey = c->rkeys[t.k].rkey;
	wr.wr.atomic.compare_add = rng_next(&c->rng);
	wr.wr.atomic.swap = rng_next(&c->rng);
	post_send_wr(c, a, t.q, t.m, &wr, slot);
	return 1;
}

/*
 * --verify: after an owner removed an rkey, an access through it must fail
 * with REM_ACCESS_ERR.  One probe at a time: it costs the QP (an access
 * error moves it to ERR).
 */
int post_probe(struct walk_client *c, const struct walk_msg *m)
{
	struct rkey_rec k = {
	    .owner = m->src, .kind = m->kind, .rkey = m->rkey, .pd_id = m->pd_id, .qpn = m->qpn};
	struct reach w = {&k, false};
	struct ibv_send_wr wr = {.opcode = IBV_WR_RDMA_READ};
	struct ibv_sge sge;
	uint32_t lstart;
	int q, mr, slot;

	if (c->probe_busy || m->length < 8 || (q = pick_index(c, MAX_QP, qp_reaches, &w)) < 0 ||
	    (mr = pick_mr(c, c->qp[q].pd, 8)) < 0)
		return 0;
	if (choose_range(c, c->mr[mr].off, c->mr[mr].len, 8, true, 8, &lstart) != 8 ||
	    (slot = alloc_wr(c, ACT_READ, q, mr, &wr.wr_id)) < 0)
		return 0;
	c->wr[slot].probe = true;
	c->wr[slot].probe_rkey = m->rkey;
	c->wr[slot].probe_owner = m->src;
	sge = (struct ibv_sge){(uintptr_t)(c->buf + lstart), 8, c->mr[mr].mr->lkey};
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = m->addr;
	wr.wr.rdma.rkey = m->rkey;
	if (post_send_wr(c, ACT_READ, q, mr, &wr, slot) == 0) {
		c->probe_busy = true;
		LOG(c, "c%d probe of removed rkey %x of c%d qp=%u", c->id, m->rkey, m->src,
		    c->qp[q].qp->qp_num);
	}
	return 1;
}

int walk_do_action(struct walk_client *c, enum walk_action a)
{
	switch (a) {
	case ACT_CREATE_CQ:
		return do_create_cq(c);
	case ACT_DESTROY_CQ:
		return do_destroy_cq(c);
	case ACT_ALLOC_PD:
		return do_alloc_pd(c);
	case ACT_DEALLOC_PD:
		return do_dealloc_pd(c);
	case ACT_REG_MR:
		return do_reg_mr(c);
	case ACT_DEREG_MR:
		return do_dereg_mr(c);
	case ACT_ALLOC_MW_TYPE1:
		return do_alloc_mw(c, 1);
	case ACT_ALLOC_MW_TYPE2:
		return do_alloc_mw(c, 2);
	case ACT_DEALLOC_MW_TYPE1:
		return do_dealloc_mw(c, 1);
	case ACT_DEALLOC_MW_TYPE2:
		return do_dealloc_mw(c, 2);
	case ACT_BIND_MW_TYPE1:
		return do_bind_mw(c, 1);
	case ACT_BIND_MW_TYPE2:
		return do_bind_mw(c, 2);
	case ACT_CREATE_RC_QP_PAIR:
		return do_create_rc_qp_pair(c);
	case ACT_CREATE_UD_QP:
		return do_create_ud_qp(c);
	case ACT_MODIFY_QP_ERROR:
		return do_modify_qp_error(c);
	case ACT_DESTROY_QP:
		return do_destroy_qp(c);
	case ACT_CREATE_AH:
		return do_create_ah(c);
	case ACT_DESTROY_AH:
		return do_destroy_ah(c);
	case ACT_SEND:
		return do_send(c);
	case ACT_SEND_WITH_INV:
		return do_send_with_inv(c);
	case ACT_RECV:
		return do_recv(c);
	case ACT_READ:
	case ACT_WRITE:
		return do_read_write(c, a);
	case ACT_FETCH_ADD:
	case ACT_COMP_SWAP:
		return do_atomic(c, a);
	case ACT_COUNT:
		break;
	}
	return 0;
}
