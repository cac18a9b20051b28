/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Actions on CQs, PDs, MRs and memory windows (create, destroy, register, bind). */
#include "cmd/walk/actions.h"
#include "cmd/walk/model.h"
#include "cmd/walk/oracle.h"

int walk_do_create_cq(struct walk_client *c)
{
	int i, cqe, maxcqe;
	struct ibv_cq *cq;

	if (WALK_COUNT_USED(c->cq) >= MAX_CQ)
		return 0;
	for (i = 0; c->cq[i].used; i++)
		;
	/* 50..max_cqe as the original; capped so a huge max_cqe stays affordable. */
	maxcqe = imin(c->dattr.max_cqe, 1 << 16);
	cqe = (int)rng_range(&c->rng, 50, (uint64_t)(maxcqe > 50 ? maxcqe : 50));
	cq = hw_create_cq(c->ctx, cqe, NULL, NULL, 0);
	if (!walk_created(c, ACT_CREATE_CQ, cq))
		return 1;
	c->cq[i] = (struct cq_rec){.used = true, .cq = cq, .cqe = cqe};
	LOG_STEP(c, "create_cq cqe=%d -> cq[%d]", cqe, i);
	return 1;
}

int walk_do_destroy_cq(struct walk_client *c)
{
	int i, rc;

	if (WALK_COUNT_USED(c->cq) <= MIN_CQ || (i = walk_pick_index(c, MAX_CQ, walk_idle_cq, NULL)) < 0)
		return 0;
	c->stats.issued[ACT_DESTROY_CQ]++;
	rc = hw_destroy_cq(c->cq[i].cq);
	LOG_STEP(c, "destroy_cq cq[%d] -> %d", i, rc);
	if (!walk_verb_returned(c, ACT_DESTROY_CQ, "ibv_destroy_cq", "an idle CQ", rc))
		return 1;
	c->cq[i].used = false;
	return 1;
}

int walk_do_alloc_pd(struct walk_client *c)
{
	struct ibv_pd *pd;
	int i;

	if (WALK_COUNT_USED(c->pd) >= MAX_PD)
		return 0;
	for (i = 0; c->pd[i].used; i++)
		;
	pd = hw_alloc_pd(c->ctx);
	if (!walk_created(c, ACT_ALLOC_PD, pd))
		return 1;
	c->pd[i] = (struct pd_rec){.used = true, .pd = pd, .id = ++c->next_pd_id};
	if (walk_msg_mr_reg(c, i))
		WALK_FAIL(c, "registering the message cells on a new PD failed: %s", strerror(errno));
	LOG_STEP(c, "alloc_pd -> pd[%d] id=%u", i, c->pd[i].id);
	return 1;
}

int walk_do_dealloc_pd(struct walk_client *c)
{
	int i, rc;

	if (WALK_COUNT_USED(c->pd) <= MIN_PD || (i = walk_pick_index(c, MAX_PD, walk_idle_pd, NULL)) < 0)
		return 0;
	c->stats.issued[ACT_DEALLOC_PD]++;
	if ((rc = walk_msg_mr_dereg(c, i)) == 0)
		rc = hw_dealloc_pd(c->pd[i].pd);
	LOG_STEP(c, "dealloc_pd pd[%d] -> %d", i, rc);
	if (!walk_verb_returned(c, ACT_DEALLOC_PD, "ibv_dealloc_pd", "an unused PD", rc))
		return 1;
	c->pd[i].used = false;
	return 1;
}

/* qp: the local QP a type-2 window is bound to, else -1 */
static void send_rkey(struct walk_client *c, int type, int kind, uint32_t rkey, uint32_t pd_id, int qp,
		      uint32_t off, uint32_t len, int access)
{
	struct walk_msg m = {
	    .access = (uint32_t)access,
	    .type = (uint16_t)type,
	    .kind = (uint16_t)kind,
	    .rkey = rkey,
	    .pd_id = pd_id,
	    .qpn = qp >= 0 ? c->qp[qp].qp->qp_num : 0,
	    .bytes = off,
	    .addr = (uintptr_t)(c->buf + off),
	    .length = len,
	    .event = c->nkey_events - 1, /* REMOVE_RKEY: the removal was the last key event */
	};

	walk_publish_key(c, &m, qp);
}

int walk_do_reg_mr(struct walk_client *c)
{
	uint32_t len, off;
	struct ibv_mr *mr;
	int i, p, access;

	if (WALK_COUNT_USED(c->mr) >= MAX_MR || walk_outbox_busy(c) || (p = walk_pick_pd_for_new(c)) < 0)
		return 0;
	for (i = 0; c->mr[i].used; i++)
		;
	len = (uint32_t)rng_range(&c->rng, 1, BUF_SIZE);
	off = (uint32_t)rng_range(&c->rng, 0, BUF_SIZE - len);
	access = (MR_ACCESS & ~REMOTE_ACCESS) | walk_remote_access(c);
	mr = hw_reg_mr(c->pd[p].pd, c->buf + off, len, access);
	if (!walk_created(c, ACT_REG_MR, mr))
		return 1;
	c->mr[i] = (struct mr_rec){.used = true, .mr = mr, .pd = p, .off = off, .len = len, .access = access};
	c->pd[p].users++;
	LOG_STEP(c, "reg_mr pd[%d] off=%u len=%u access=%x -> lkey=%x rkey=%x event %llu", p, off, len,
		 access, mr->lkey, mr->rkey, (unsigned long long)c->nkey_events);
	walk_note_key(c, mr->rkey, true);
	send_rkey(c, MSG_ADD_RKEY, 0, mr->rkey, c->pd[p].id, -1, off, len, access);
	return 1;
}

int walk_do_dereg_mr(struct walk_client *c)
{
	uint32_t rkey, pd_id, off, len;
	int i, rc;

	if (WALK_COUNT_USED(c->mr) <= MIN_MR || walk_outbox_busy(c) ||
	    (i = walk_pick_hinted(c, MAX_MR, walk_idle_mr, NULL, c->hint.mr)) < 0)
		return 0;
	rkey = c->mr[i].mr->rkey;
	pd_id = c->pd[c->mr[i].pd].id;
	off = c->mr[i].off;
	len = c->mr[i].len;
	c->stats.issued[ACT_DEREG_MR]++;
	rc = hw_dereg_mr(c->mr[i].mr);
	LOG_STEP(c, "dereg_mr mr[%d] rkey=%x -> %d", i, rkey, rc);
	if (!walk_verb_returned(c, ACT_DEREG_MR, "ibv_dereg_mr", "an idle MR", rc))
		return 1;
	c->pd[c->mr[i].pd].users--;
	c->mr[i].used = false;
	walk_note_key(c, rkey, false);
	send_rkey(c, MSG_REMOVE_RKEY, 0, rkey, pd_id, -1, off, len, c->mr[i].access);
	return 1;
}

/* An idle MR with a type-1 window bound to it (no peer can invalidate that one). */
static bool mr_bound(struct walk_client *c, int i, const void *arg)
{
	(void)arg;
	for (int w = 0; w < 2 * MAX_MW; w++)
		if (c->mw[w].used && c->mw[w].type == 1 && c->mw[w].state == MW_BOUND && c->mw[w].mr == i)
			return !c->mr[i].inflight;
	return false;
}

/*
 * --verify: ibv_rereg_mr(3) of an idle MR to a new range, PD or access (any of them); the peers learn the key
 * as after dereg_mr and reg_mr, and the walk uses the MR as it is now.  Now and then first a request the
 * model says the verb must refuse (no change asked, remote write without local write, windows bound to it):
 * nothing may change.
 */
void walk_rereg_mr(struct walk_client *c)
{
	static const char *const wrong[] = {"no change", "remote write without local write", "windows bound"};
	int i = walk_pick_index(c, MAX_MR, walk_idle_mr, NULL), flags = (int)rng_range(&c->rng, 1, 7), bad;
	struct mr_rec *m = &c->mr[i < 0 ? 0 : i], n;
	int rc, want;

	bad = (int)rng_range(&c->rng, 0, 7);
	if (bad < 3 && (i = walk_pick_index(c, MAX_MR, bad == 2 ? mr_bound : walk_idle_mr, NULL)) >= 0) {
		m = &c->mr[i];
		flags = bad ? IBV_REREG_MR_CHANGE_ACCESS : 0;
		want = model_rereg_mr(flags, bad == 1 ? IBV_ACCESS_REMOTE_WRITE : m->access, bad == 2);
		rc = hw_rereg_mr(m->mr, flags, NULL, NULL, 0, bad == 1 ? IBV_ACCESS_REMOTE_WRITE : m->access);
		LOG_STEP(c, "rereg_mr mr[%d] refused (%s) -> %d", i, wrong[bad], rc);
		walk_judge_verb(c, "ibv_rereg_mr", wrong[bad], rc, want ? -1 : 0);
		return;
	}
	if (walk_outbox_busy(c) || i < 0)
		return;
	n = *m;
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		n.len = (uint32_t)rng_range(&c->rng, 1, BUF_SIZE);
		n.off = (uint32_t)rng_range(&c->rng, 0, BUF_SIZE - n.len);
	}
	if ((flags & IBV_REREG_MR_CHANGE_PD) && (n.pd = walk_pick_pd_for_new(c)) < 0)
		return;
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		n.access = (MR_ACCESS & ~REMOTE_ACCESS) | walk_remote_access(c);
	walk_note_key(c, m->mr->rkey, false);
	send_rkey(c, MSG_REMOVE_RKEY, 0, m->mr->rkey, c->pd[m->pd].id, -1, m->off, m->len, m->access);
	rc = hw_rereg_mr(m->mr, flags, c->pd[n.pd].pd, c->buf + n.off, n.len, n.access);
	LOG_STEP(c, "rereg_mr mr[%d] flags=%x pd[%d] off=%u len=%u access=%x -> %d lkey=%x rkey=%x", i, flags,
		 n.pd, n.off, n.len, n.access, rc, m->mr->lkey, m->mr->rkey);
	c->stats.reregs++;
	if (!walk_judge_verb(c, "ibv_rereg_mr", "an idle MR", rc, model_rereg_mr(flags, n.access, 0)))
		return; /* the run failed; the records keep what the walk asked before */
	c->pd[m->pd].users--;
	c->pd[n.pd].users++;
	*m = n;
	walk_note_key(c, m->mr->rkey, true);
	send_rkey(c, MSG_ADD_RKEY, 0, m->mr->rkey, c->pd[m->pd].id, -1, m->off, m->len, m->access);
}

int walk_do_alloc_mw(struct walk_client *c, int type)
{
	enum walk_action a = type == 1 ? ACT_ALLOC_MW_TYPE1 : ACT_ALLOC_MW_TYPE2;
	struct ibv_mw *mw;
	int i, p;

	if (walk_count_mw(c, type) >= MAX_MW || (p = walk_pick_pd_for_new(c)) < 0)
		return 0;
	for (i = 0; c->mw[i].used; i++)
		;
	mw = hw_alloc_mw(c->pd[p].pd, type == 1 ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2);
	if (!walk_created(c, a, mw))
		return 1;
	c->mw[i] = (struct mw_rec){.used = true, .mw = mw, .type = type, .pd = p, .mr = -1, .qp = -1};
	c->pd[p].users++;
	LOG_STEP(c, "%s pd[%d] -> mw[%d] rkey=%x", walk_action_names[a], p, i, mw->rkey);
	return 1;
}

/* A type-2 window whose rkey a peer cannot use for SEND_WITH_INV now: unbound, or its QP not ready. */
static bool mw_spent(struct walk_client *c, int i, const void *arg)
{
	const struct mw_rec *m = &c->mw[i];

	return walk_mw_match(c, i, arg) &&
	       (m->state != MW_BOUND || m->qp < 0 || c->qp[m->qp].state != QP_READY);
}

int walk_do_dealloc_mw(struct walk_client *c, int type)
{
	enum walk_action a = type == 1 ? ACT_DEALLOC_MW_TYPE1 : ACT_DEALLOC_MW_TYPE2;
	struct mw_want want = {type, false};
	struct mw_rec *m;
	int i = -1, rc;

	if (walk_count_mw(c, type) <= MIN_MW || walk_outbox_busy(c))
		return 0;
	/* Mostly spare the type-2 windows a peer could still invalidate: SEND_WITH_INV needs their keys. */
	if (type == 2 && !(c->hint.on && c->hint.mw >= 0) && rng_range(&c->rng, 0, 3))
		i = walk_pick_index(c, 2 * MAX_MW, mw_spent, &want);
	if (i < 0 && (i = walk_pick_hinted(c, 2 * MAX_MW, walk_mw_match, &want, c->hint.mw)) < 0)
		return 0;
	m = &c->mw[i];
	c->stats.issued[a]++;
	rc = hw_dealloc_mw(m->mw);
	LOG_STEP(c, "%s mw[%d] %s rkey=%x -> %d", walk_action_names[a], i,
		 m->state == MW_BOUND ? "bound" : "unbound", m->rkey, rc);
	if (!walk_verb_returned(c, a, "ibv_dealloc_mw", "a window", rc))
		return 1;
	c->pd[m->pd].users--;
	if (m->state == MW_BOUND) {
		walk_note_key(c, m->rkey, false);
		c->mr[m->mr].bound_mws--;
		if (m->qp >= 0)
			c->qp[m->qp].type2_bound--;
		send_rkey(c, MSG_REMOVE_RKEY, type, m->rkey, c->pd[m->pd].id, m->qp,
			  (uint32_t)(m->addr - (uintptr_t)c->buf), (uint32_t)m->len, m->access);
	}
	m->used = false;
	return 1;
}

static bool qp_with_receives(struct walk_client *c, int i, const void *arg)
{
	return walk_qp_match(c, i, arg) && c->qp[i].recv_inflight;
}

int walk_do_bind_mw(struct walk_client *c, int type)
{
	enum walk_action a = type == 1 ? ACT_BIND_MW_TYPE1 : ACT_BIND_MW_TYPE2;
	struct mw_want want = {type, true};
	struct qp_want qw = {IBV_QPT_RC, -1, true, false, false};
	struct ibv_mw_bind_info info;
	uint32_t start, len;
	uint64_t wr_id;
	int i, q = -1, m, slot, rc;

	if (walk_outbox_busy(c) ||
	    (i = walk_pick_hinted(c, 2 * MAX_MW, walk_mw_match, &want, c->hint.mw)) < 0)
		return 0;
	qw.pd = c->mw[i].pd;
	/* Mostly a type-2 window on a QP with receives posted: its peer has the credit to SEND_WITH_INV. */
	if (type == 2 && !(c->hint.on && c->hint.qp >= 0) && rng_range(&c->rng, 0, 3))
		q = walk_pick_index(c, MAX_QP, qp_with_receives, &qw);
	if ((q < 0 && (q = walk_pick_hinted(c, MAX_QP, walk_qp_match, &qw, c->hint.qp)) < 0) ||
	    (m = walk_pick_mr(c, c->mw[i].pd, 1)) < 0)
		return 0;
	len = walk_choose_range(c, c->mr[m].off, c->mr[m].len, (uint32_t)rng_range(&c->rng, 1, c->mr[m].len),
				false, 1, &start);
	if (!len || (slot = walk_alloc_wr(c, a, q, -1, &wr_id)) < 0)
		return 0;
	c->wr[slot].mw = (int8_t)i;
	info = (struct ibv_mw_bind_info){.mr = c->mr[m].mr,
					 .addr = (uintptr_t)(c->buf + start),
					 .length = len,
					 .mw_access_flags = (unsigned)walk_remote_access(c)};
	c->stats.issued[a]++;
	if (type == 1) {
		struct ibv_mw_bind bind = {
		    .wr_id = wr_id, .send_flags = IBV_SEND_SIGNALED, .bind_info = info};

		rc = hw_bind_mw(c->qp[q].qp, c->mw[i].mw, &bind);
		c->mw[i].new_rkey = c->mw[i].mw->rkey;
	} else {
		struct ibv_send_wr wr = {
		    .wr_id = wr_id, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED};

		/* A new tag for every bind, so the previous rkey stops working. */
		c->mw[i].new_rkey = ibv_inc_rkey(c->mw[i].mw->rkey);
		wr.bind_mw.mw = c->mw[i].mw;
		wr.bind_mw.rkey = c->mw[i].new_rkey;
		wr.bind_mw.bind_info = info;
		rc = walk_post_send(c, c->qp[q].qp, &wr);
	}
	if (!rc)
		stats_inc(c->counters, STATS_POSTED);
	LOG_STEP(c, "%s mw[%d] qp=%u mr[%d] off=%u len=%u rkey=%x wr=%llx -> %d", walk_action_names[a], i,
		 c->qp[q].qp->qp_num, m, start, len, c->mw[i].new_rkey, (unsigned long long)wr_id, rc);
	if (rc) {
		walk_release_wr(c, (uint32_t)slot);
		walk_count_error(c, a, rc);
		return 1;
	}
	walk_note_key(c, c->mw[i].new_rkey, true);
	c->mw[i].key_event = c->nkey_events - 1;
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
	c->mw[i].new_access = (int)info.mw_access_flags;
	return 1;
}
