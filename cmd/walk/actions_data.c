/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The data-path actions: SEND, RECV, RDMA READ/WRITE, atomics, the --verify checked WRITE and rkey probes. */
#include "cmd/walk/actions.h"
#include "cmd/walk/model.h"

static const uint32_t rdma_lengths[] = {32u << 10, 64u << 10, 128u << 10, 1u << 20};

/*
 * Immediate data (host order, as the verbs API defines it): random, or with --verify the message length and,
 * on UD, the sender's id, on RC the QP's own sequence of messages with immediate data, so the receiver checks
 * byte_len, the immediate itself and RC ordering without looking at memory.
 */
uint32_t walk_imm(struct walk_client *c, uint32_t len, int rc_qp)
{
	if (!c->cfg->verify)
		return (uint32_t)rng_next(&c->rng);
	return len << 8 | (rc_qp >= 0 ? c->qp[rc_qp].tx_imm_seq : (uint32_t)c->id);
}

/* A key of the peer of RC QP arg (on its PD, or a type-2 window bound to its QP) that it may WRITE to. */
static bool rkey_writable(struct walk_client *c, int i, const void *arg)
{
	const struct qp_rec *r = arg;
	const struct rkey_rec *k = &c->rkeys[i];

	return k->used && k->owner == r->peer &&
	       (k->kind == 2 ? k->qpn == r->peer_qpn : k->pd_id == r->peer_pd) &&
	       (k->access & r->peer_access & IBV_ACCESS_REMOTE_WRITE);
}

/*
 * An RC SEND within the receive credit.  With --verify, one of MSG_HDR bytes or more carries a header
 * (message.c): small ones (always when the credit is small) come whole from the WR slot's cell, others take
 * only the header from there.  Now and then, with immediate data, an RDMA_WRITE_WITH_IMM instead, as long as
 * the receive it consumes; its immediate data says so (WRITE_IMM_FLAG), for the receiver to judge.
 */
static int post_rc_send(struct walk_client *c, enum walk_action a, int q, const struct rkey_rec *inv,
			bool empty)
{
	struct qp_rec *r = &c->qp[q];
	struct ibv_sge sge[MAX_SGE_USED];
	struct ibv_send_wr wr = {.opcode = IBV_WR_SEND};
	uint32_t capacity = r->credit[r->credit_head], start = 0, len = 0, rstart = 0;
	uint32_t most = capacity < RC_MSG_MAX ? capacity : RC_MSG_MAX, head = 0;
	int k = a == ACT_SEND && !empty && rng_bernoulli(&c->rng, WRITE_IMM_PROBABILITY)
		    ? walk_pick_index(c, MAX_REMOTE_KEYS, rkey_writable, r)
		    : -1;
	bool headed = c->cfg->verify && !empty && most >= MSG_HDR && k < 0, small = false;
	int m = -1, slot;

	if (headed) {
		if (!c->pd[r->pd].msg_mr)
			return 0;
		small = most <= MSG_CELL || r->cap.max_send_sge < 2 || rng_bernoulli(&c->rng, 0.5);
		head = MSG_HDR;
	}
	if (small) {
		len = (uint32_t)rng_range(&c->rng, MSG_HDR, imin((int)most, MSG_CELL));
		if (r->cap.max_inline_data >= MSG_HDR &&
		    (int)r->cap.max_inline_data <= imin((int)most, MSG_CELL) &&
		    rng_bernoulli(&c->rng, 0.3)) /* now and then exactly the inline limit */
			len = r->cap.max_inline_data;
	} else if (!empty) {
		if ((m = walk_pick_busy_mr(c, r->pd, 1)) < 0)
			return 0;
		len = walk_choose_range(c, c->mr[m].off, c->mr[m].len,
					(uint32_t)rng_range(&c->rng, 1, most - head), false, 1, &start);
		if (k >= 0)
			len = walk_choose_range(c, c->rkeys[k].off, (uint32_t)c->rkeys[k].len, len, true, 1,
						&rstart);
		if (!len)
			return 0;
		len += head;
	}
	if ((slot = walk_alloc_wr(c, a, q, m, &wr.wr_id)) < 0)
		return 0;
	if (k >= 0) {
		wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = htobe32(walk_imm(c, len, q) | (c->cfg->verify ? WRITE_IMM_FLAG : 0));
		wr.wr.rdma.remote_addr = walk_remote_addr(&c->rkeys[k], rstart);
		wr.wr.rdma.rkey = c->rkeys[k].rkey;
	} else if (a == ACT_SEND_WITH_INV) {
		wr.opcode = IBV_WR_SEND_WITH_INV;
		wr.invalidate_rkey = inv->rkey;
	} else if (rng_bernoulli(&c->rng, SEND_IMM_PROBABILITY)) {
		wr.opcode = IBV_WR_SEND_WITH_IMM;
		wr.imm_data = htobe32(walk_imm(c, len, q));
	}
	if (headed) {
		walk_msg_fill(c, q, (uint32_t)slot, &wr, len, m, start, sge);
	} else if (m >= 0) {
		wr.sg_list = sge;
		wr.num_sge = walk_make_sges(c, c->mr[m].mr->lkey, start, len,
					    walk_sge_count(c, r->cap.max_send_sge), sge);
	}
	r->credit_head = (r->credit_head + 1) % CREDITS; /* the credit is spent */
	r->credit_count--;
	if (walk_post_send_wr(c, a, q, m, &wr, slot) == 0) {
		if (wr.send_flags & IBV_SEND_INLINE) /* ours again once posted: the data was taken */
			memset(c->buf + MSG_CELL_OFF(slot), 0xee, len);
		r->tx_imm_seq += wr.opcode == IBV_WR_SEND_WITH_IMM || k >= 0;
		c->stats.write_imms += k >= 0;
		r->tx_seq += headed;
		if (inv && inv->qpn != r->peer_qpn)
			walk_mark_inv_probe(c, (uint32_t)slot, inv);
	}
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

int walk_do_send(struct walk_client *c)
{
	bool ud = rng_bernoulli(&c->rng, MSG_UD_PROBABILITY);
	struct qp_want qw = {ud ? IBV_QPT_UD : IBV_QPT_RC, -1, true, false, !ud};
	struct ibv_sge sge[MAX_SGE_USED];
	struct ibv_send_wr wr = {.opcode = IBV_WR_SEND};
	struct ud_dest d;
	uint32_t start, head;
	int q, m, ah, rud, slot;

	if ((q = walk_pick_index(c, MAX_QP, walk_qp_match, &qw)) < 0)
		return 0;
	if (!ud)
		return post_rc_send(c, ACT_SEND, q, NULL, false);
	d.pd = c->qp[q].pd;
	/* --verify: the header comes from the slot's cell, the rest from an MR */
	head = c->cfg->verify ? MSG_HDR : 0;
	if (head && (!c->pd[d.pd].msg_mr || c->qp[q].cap.max_send_sge < 2))
		return 0;
	if ((ah = walk_pick_index(c, MAX_AH, ah_with_target, &d)) < 0 ||
	    (m = walk_pick_busy_mr(c, d.pd, UD_SEND_BYTES - head)) < 0)
		return 0;
	rud = walk_pick_index(c, MAX_REMOTE_UD, rud_of, &c->ah[ah].target);
	if (rud < 0 ||
	    !walk_choose_range(c, c->mr[m].off, c->mr[m].len, UD_SEND_BYTES - head, false, 1, &start))
		return 0;
	if ((slot = walk_alloc_wr(c, ACT_SEND, q, m, &wr.wr_id)) < 0)
		return 0;
	wr.wr.ud.ah = c->ah[ah].ah;
	wr.wr.ud.remote_qpn = c->ruds[rud].qpn;
	wr.wr.ud.remote_qkey = c->ruds[rud].qkey;
	if (c->cfg->verify && rng_bernoulli(&c->rng, WRONG_QKEY_PROBABILITY)) {
		/* another Q_Key: the one the QP had before, or one bit off (never the privileged top bit) */
		if (c->ruds[rud].changed && rng_bernoulli(&c->rng, 0.5))
			wr.wr.ud.remote_qkey = c->ruds[rud].prev_qkey;
		else
			wr.wr.ud.remote_qkey ^= 1;
		wr.opcode = IBV_WR_SEND_WITH_IMM;
		wr.imm_data = htobe32(WRONG_QKEY_IMM | (uint32_t)c->id);
	} else if (rng_bernoulli(&c->rng, SEND_IMM_PROBABILITY)) {
		wr.opcode = IBV_WR_SEND_WITH_IMM;
		wr.imm_data = htobe32(walk_imm(c, UD_SEND_BYTES, -1));
	}
	if (head) {
		walk_msg_fill(c, q, (uint32_t)slot, &wr, UD_SEND_BYTES, m, start, sge);
	} else {
		wr.sg_list = sge;
		wr.num_sge = walk_make_sges(c, c->mr[m].mr->lkey, start, UD_SEND_BYTES,
					    walk_sge_count(c, c->qp[q].cap.max_send_sge), sge);
	}
	walk_post_send_wr(c, ACT_SEND, q, m, &wr, slot);
	return 1;
}

/* A type-2 window's rkey and, on the QP it is bound to, a peer QP of ours with credit. */
static bool rkey_kind2(struct walk_client *c, int i, const void *arg)
{
	struct reach w = {&c->rkeys[i], true, 0};

	(void)arg;
	if (!c->rkeys[i].used || c->rkeys[i].kind != 2)
		return false;
	for (int q = 0; q < MAX_QP; q++)
		if (walk_qp_reaches(c, q, &w))
			return true;
	return false;
}

/* Our QP to the owner of type-2 key k, on the window's PD but not connected to the QP it is bound to. */
static bool qp_beside_window(struct walk_client *c, int q, const void *arg)
{
	const struct rkey_rec *k = arg;
	const struct qp_rec *r = &c->qp[q];

	return r->used && r->type == IBV_QPT_RC && r->state == QP_READY && r->peer == k->owner &&
	       r->peer_pd == k->pd_id && r->peer_qpn != k->qpn && r->credit_count && walk_can_post_send(c, q);
}

static bool rkey_kind2_beside(struct walk_client *c, int i, const void *arg)
{
	(void)arg;
	if (!c->rkeys[i].used || c->rkeys[i].kind != 2)
		return false;
	for (int q = 0; q < MAX_QP; q++)
		if (qp_beside_window(c, q, &c->rkeys[i]))
			return true;
	return false;
}

/*
 * --verify: now and then, a SEND_WITH_INV on a QP the window is not bound to (same PD, same peer): a probe,
 * it must fail with REM_INV_REQ_ERR and leave the window bound (the key stays in use).
 */
static int send_inv_beside(struct walk_client *c)
{
	int k, q;

	if ((k = walk_pick_index(c, MAX_REMOTE_KEYS, rkey_kind2_beside, NULL)) < 0 ||
	    (q = walk_pick_index(c, MAX_QP, qp_beside_window, &c->rkeys[k])) < 0)
		return 0;
	return post_rc_send(c, ACT_SEND_WITH_INV, q, &c->rkeys[k], rng_bernoulli(&c->rng, 0.5));
}

int walk_do_send_with_inv(struct walk_client *c)
{
	struct reach w;
	int k, q;

	if (c->cfg->verify && !c->probe_busy && rng_bernoulli(&c->rng, INV_BESIDE_PROBABILITY) &&
	    send_inv_beside(c))
		return 1;
	if ((k = walk_pick_index(c, MAX_REMOTE_KEYS, rkey_kind2, NULL)) < 0)
		return 0;
	w = (struct reach){&c->rkeys[k], true, 0};
	if ((q = walk_pick_index(c, MAX_QP, walk_qp_reaches, &w)) < 0)
		return 0;
	if (!post_rc_send(c, ACT_SEND_WITH_INV, q, &c->rkeys[k], rng_bernoulli(&c->rng, 0.5)))
		return 0;
	c->rkeys[k].used = false; /* invalidated: never used again from here */
	return 1;
}

/*
 * A receive's buffers on PD pd, `want` bytes (at most; exactly if `exact`): with --verify the header (after a
 * UD GRH) in the WR slot's cell and the rest from an MR, or all in the cell (`cell`).  The WR slot, or -1.
 */
int walk_recv_buffers(struct walk_client *c, enum walk_action a, int q, int pd, uint32_t max_sge, bool ud,
		      uint32_t want, bool cell, bool exact, struct ibv_recv_wr *wr, struct ibv_sge *sge)
{
	uint32_t head = !c->cfg->verify || cell ? 0 : ud ? UD_RECV_BYTES - UD_SEND_BYTES + MSG_HDR : MSG_HDR;
	uint32_t len = want, start = 0;
	int m = -1, slot;

	if (c->cfg->verify && (!c->pd[pd].msg_mr || (head && max_sge < 2)))
		return -1;
	if (!c->cfg->verify || head) {
		if ((m = walk_pick_busy_mr(c, pd, ud || exact ? want - head : 1)) < 0)
			return -1;
		len = walk_choose_range(c, c->mr[m].off, c->mr[m].len, want - head, true, 1, &start);
		if (!len || ((ud || exact) && len < want - head))
			return -1;
		len += head;
	}
	if ((slot = walk_alloc_wr(c, a, q, m, &wr->wr_id)) < 0)
		return -1;
	c->wr[slot].is_recv = true;
	c->wr[slot].len = len;
	if (c->cfg->verify) {
		walk_msg_recv_fill(c, pd, max_sge, (uint32_t)slot, wr, len, m, start, head, sge);
	} else {
		wr->sg_list = sge;
		wr->num_sge =
		    walk_make_sges(c, c->mr[m].mr->lkey, start, len, walk_sge_count(c, max_sge), sge);
	}
	return slot;
}

int walk_do_recv(struct walk_client *c)
{
	bool ud = rng_bernoulli(&c->rng, MSG_UD_PROBABILITY), cell = false;
	struct qp_want qw;
	struct ibv_sge sge[MAX_SGE_USED];
	struct ibv_recv_wr wr = {0}, *bad;
	uint32_t want;
	int q, m, slot, rc;

	if (c->hint.on && c->hint.qp >= 0 && c->qp[c->hint.qp].used)
		ud = c->qp[c->hint.qp].type == IBV_QPT_UD;
	qw = (struct qp_want){ud ? IBV_QPT_UD : IBV_QPT_RC, -1, false, true, false};
	if ((!ud && walk_outbox_busy(c)) ||
	    (q = walk_pick_hinted(c, MAX_QP, walk_qp_match, &qw, c->hint.qp)) < 0)
		return 0;
	want = ud ? UD_RECV_BYTES : (uint32_t)rng_range(&c->rng, 1, RC_MSG_MAX);
	/* --verify: an RC receive may be all cell */
	if (c->cfg->verify && !ud &&
	    (want <= MSG_HDR || c->qp[q].cap.max_recv_sge < 2 || rng_bernoulli(&c->rng, 0.5))) {
		cell = true;
		want = want < MSG_CELL ? want : (uint32_t)rng_range(&c->rng, 1, MSG_CELL);
	}
	if ((slot = walk_recv_buffers(c, ACT_RECV, q, c->qp[q].pd, c->qp[q].cap.max_recv_sge, ud, want, cell,
				      false, &wr, sge)) < 0)
		return 0;
	m = c->wr[slot].mr;
	c->stats.issued[ACT_RECV]++;
	rc = hw_post_recv(c->qp[q].qp, &wr, &bad);
	if (!rc)
		stats_inc(c->counters, STATS_POSTED);
	LOG_STEP(c, "recv qp=%u sges=%d len=%u wr=%llx -> %d", c->qp[q].qp->qp_num, wr.num_sge,
		 c->wr[slot].len, (unsigned long long)wr.wr_id, rc);
	if (rc) {
		walk_release_wr(c, (uint32_t)slot);
		walk_count_error(c, ACT_RECV, rc);
		return 1;
	}
	c->qp[q].recv_inflight++;
	c->cq[c->qp[q].rcq].outstanding++;
	if (m >= 0)
		c->mr[m].inflight++;
	if (!ud)
		walk_give_credit(c, q, c->wr[slot].len);
	return 1;
}

void walk_give_credit(struct walk_client *c, int q, uint32_t bytes)
{
	struct walk_msg msg = {.type = MSG_CREDIT,
			       .dst = (uint16_t)c->qp[q].peer,
			       .qpn = c->qp[q].qp->qp_num,
			       .peer_qpn = c->qp[q].peer_qpn,
			       .bytes = bytes};

	walk_publish(c, &msg);
}

int walk_remote_access(struct walk_client *c)
{
	static const int flags[] = {IBV_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_WRITE,
				    IBV_ACCESS_REMOTE_ATOMIC};
	int access = 0;

	if (!c->cfg->verify || !rng_bernoulli(&c->rng, SUBSET_PROBABILITY))
		return REMOTE_ACCESS;
	for (int i = 0; i < 3; i++)
		if (rng_bernoulli(&c->rng, 0.5))
			access |= flags[i];
	return access;
}

struct rdma_target {
	int k, q, m;
};

struct target_want {
	uint32_t min_len, access;
};

/* A remote region of at least min_len bytes granting `access` that one of our QPs can reach. */
static bool rkey_reachable(struct walk_client *c, int i, const void *arg)
{
	const struct target_want *t = arg;
	struct reach w = {&c->rkeys[i], false, t->access};

	if (!c->rkeys[i].used || c->rkeys[i].len < t->min_len ||
	    (c->rkeys[i].access & t->access) != t->access)
		return false;
	for (int q = 0; q < MAX_QP; q++)
		if (walk_qp_reaches(c, q, &w))
			return true;
	return false;
}

/* A remote region, an RC QP reaching it and a local MR on that QP's PD. */
static bool pick_target(struct walk_client *c, uint32_t min_len, uint32_t access, struct rdma_target *t)
{
	struct target_want tw = {min_len, access};
	struct reach w;

	if ((t->k = walk_pick_index(c, MAX_REMOTE_KEYS, rkey_reachable, &tw)) < 0)
		return false;
	w = (struct reach){&c->rkeys[t->k], false, access};
	if ((t->q = walk_pick_index(c, MAX_QP, walk_qp_reaches, &w)) < 0)
		return false;
	return (t->m = walk_pick_busy_mr(c, c->qp[t->q].pd, min_len)) >= 0;
}

struct check_want {
	uint32_t remote_off, local_off, len, access;
};

static bool rkey_covers(struct walk_client *c, int i, const void *arg)
{
	const struct check_want *w = arg;
	const struct rkey_rec *k = &c->rkeys[i];

	return k->used && k->off <= w->remote_off && k->off + k->len >= w->remote_off + w->len &&
	       (k->access & w->access) == w->access;
}

/* A local MR on pd covering our own slot's [from, from + len). */
struct own_want {
	int pd;
	uint32_t from, len;
};

static bool mr_covers_own(struct walk_client *c, int i, const void *arg)
{
	const struct own_want *w = arg;
	const struct mr_rec *m = &c->mr[i];

	return m->used && m->pd == w->pd && m->off <= w->from && m->off + m->len >= w->from + w->len;
}

/* A checked operation's remote key covering cw, a QP reaching it, and a local MR on its PD covering ow. */
static bool pick_checked(struct walk_client *c, const struct check_want *cw, struct own_want *ow,
			 const struct rkey_rec **k, int *q, int *m)
{
	int ki = walk_pick_index(c, MAX_REMOTE_KEYS, rkey_covers, cw);
	struct reach w = {ki >= 0 ? &c->rkeys[ki] : NULL, false, cw->access};

	if (ki < 0 || (*q = walk_pick_index(c, MAX_QP, walk_qp_reaches, &w)) < 0)
		return false;
	*k = w.k;
	ow->pd = c->qp[*q].pd;
	return (*m = walk_pick_index(c, MAX_MR, mr_covers_own, ow)) >= 0;
}

/*
 * --verify: WRITE a pattern into our own slot of a peer's check zone (no one else writes there), gathered
 * from several SGEs when the QP allows, READ it back on the same QP, scattered likewise, compare on
 * completion.
 */
static int checked_write(struct walk_client *c)
{
	uint32_t slot_off = SLOT_OFF(c->id);
	struct check_want cw = {slot_off + CHECK_SLOT / 2, slot_off,
				(uint32_t)rng_range(&c->rng, 8, CHECK_SLOT / 4),
				IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ};
	struct own_want ow = {0, slot_off, CHECK_SLOT / 2};
	struct ibv_send_wr wr = {.opcode = IBV_WR_RDMA_WRITE};
	struct ibv_sge srcs[MAX_SGE_USED], dsts[MAX_SGE_USED];
	const struct rkey_rec *k;
	int q, m, ws, rs;

	if (!pick_checked(c, &cw, &ow, &k, &q, &m) ||
	    c->qp[q].send_inflight + 2 > (int)c->qp[q].cap.max_send_wr ||
	    c->cq[c->qp[q].scq].outstanding + 2 > c->cq[c->qp[q].scq].cqe || c->nfree_wr < 2)
		return 0;
	c->check_seed = rng_next(&c->rng);
	c->check_len = cw.len;
	walk_fill_pattern(c->buf + slot_off, cw.len, c->check_seed);
	memset(c->buf + slot_off + CHECK_SLOT / 4, 0, cw.len);
	wr.sg_list = srcs;
	wr.num_sge = walk_make_sges(c, c->mr[m].mr->lkey, slot_off, cw.len,
				    walk_sge_count(c, c->qp[q].cap.max_send_sge), srcs);
	wr.wr.rdma.remote_addr = walk_remote_addr(k, cw.remote_off);
	wr.wr.rdma.rkey = k->rkey;
	ws = walk_alloc_wr(c, ACT_WRITE, q, m, &wr.wr_id);
	c->wr[ws].check = true;
	if (walk_post_send_wr(c, ACT_WRITE, q, m, &wr, ws))
		return 1;
	/* the read-back scatters over several SGEs when the QP allows */
	wr = (struct ibv_send_wr){.opcode = IBV_WR_RDMA_READ, .sg_list = dsts};
	wr.num_sge = walk_make_sges(c, c->mr[m].mr->lkey, slot_off + CHECK_SLOT / 4, cw.len,
				    walk_sge_count(c, c->qp[q].cap.max_send_sge), dsts);
	wr.wr.rdma.remote_addr = walk_remote_addr(k, cw.remote_off);
	wr.wr.rdma.rkey = k->rkey;
	rs = walk_alloc_wr(c, ACT_READ, q, m, &wr.wr_id);
	c->wr[rs].check = true;
	c->check_busy = true;
	c->check_write_ok = false;
	if (walk_post_send_wr(c, ACT_READ, q, m, &wr, rs))
		c->check_busy = false;
	LOG_STEP(c, "checked write to c%d rkey=%x len=%u seed=%llx", k->owner, k->rkey, cw.len,
		 (unsigned long long)c->check_seed);
	return 1;
}

int walk_do_read_write(struct walk_client *c, enum walk_action a)
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
	if (!pick_target(c, 1, model_access_for(wr.opcode), &t))
		return 0;
	k = &c->rkeys[t.k];
	/* A READ writes locally, a WRITE remotely: that side avoids the check zone. */
	len = walk_choose_range(c, c->mr[t.m].off, c->mr[t.m].len, want, a == ACT_READ, 1, &lstart);
	if (!len)
		return 0;
	len = walk_choose_range(c, k->off, (uint32_t)k->len, len, a == ACT_WRITE, 1, &rstart);
	if (!len || (slot = walk_alloc_wr(c, a, t.q, t.m, &wr.wr_id)) < 0)
		return 0;
	wr.sg_list = sge;
	wr.num_sge = walk_make_sges(c, c->mr[t.m].mr->lkey, lstart, len,
				    walk_sge_count(c, c->qp[t.q].cap.max_send_sge), sge);
	wr.wr.rdma.remote_addr = walk_remote_addr(k, rstart);
	wr.wr.rdma.rkey = k->rkey;
	walk_post_send_wr(c, a, t.q, t.m, &wr, slot);
	return 1;
}

static uint64_t nonzero_other(struct walk_client *c, uint64_t a, uint64_t b)
{
	uint64_t v;

	do
		v = rng_next(&c->rng);
	while (v == 0 || v == a || v == b);
	return v;
}

/*
 * A compare value that does not match: half the time one that differs from the value in one 32-bit half only
 * (a device comparing part of the word swaps on it), else any other value.
 */
static uint64_t near_miss(struct walk_client *c, uint64_t value, bool known)
{
	uint64_t half = nonzero_other(c, 0, 0) & 0xffffffffull;

	if (!known || !rng_bernoulli(&c->rng, 0.5))
		return nonzero_other(c, value, value);
	return value ^ (rng_bernoulli(&c->rng, 0.5) ? half << 32 : half);
}

/*
 * --verify: an atomic on a word only this client operates on (its slot in the owner's check zone), so the
 * original value it returns and the value it leaves are known: FETCH_ADD adds, CMP_SWP swaps on a match (half
 * the time the compare is the known value) and not otherwise, with compare, swap and the value all distinct.
 * A failed or flushed atomic makes the word unknown until the next one that works tells its value.
 */
static int checked_atomic(struct walk_client *c, enum walk_action a)
{
	uint32_t slot_off = SLOT_OFF(c->id);
	int word = (int)rng_range(&c->rng, 0, ATOM_WORDS - 1);
	struct check_want cw = {slot_off + ATOM_REMOTE_OFF + 8u * (uint32_t)word, 0, 8,
				IBV_ACCESS_REMOTE_ATOMIC};
	struct own_want ow = {0, slot_off + ATOM_LOCAL_OFF + 8u * (uint32_t)word, 8};
	struct ibv_send_wr wr = {.opcode = a == ACT_FETCH_ADD ? IBV_WR_ATOMIC_FETCH_AND_ADD
							      : IBV_WR_ATOMIC_CMP_AND_SWP,
				 .num_sge = 1};
	const struct rkey_rec *k;
	struct ibv_sge sge;
	uint64_t value, sentinel;
	bool known;
	int q, m, slot;

	if (!pick_checked(c, &cw, &ow, &k, &q, &m) || (slot = walk_alloc_wr(c, a, q, m, &wr.wr_id)) < 0)
		return 0;
	value = c->atom[k->owner][word].value;
	known = c->atom[k->owner][word].known;
	c->atom_pending.owner = k->owner;
	c->atom_pending.word = word;
	c->atom_pending.op = a;
	c->atom_pending.rkey = k->rkey;
	if (a == ACT_FETCH_ADD) {
		c->atom_pending.compare_add = nonzero_other(c, 0, 0);
		c->atom_pending.swap = 0;
	} else {
		c->atom_pending.compare_add =
		    known && rng_bernoulli(&c->rng, 0.5) ? value : near_miss(c, value, known);
		c->atom_pending.swap = nonzero_other(c, value, c->atom_pending.compare_add);
	}
	/* The result lands here: a sentinel that no correct answer has, if the value is known */
	sentinel = ~value;
	memcpy(c->buf + ow.from, &sentinel, 8);
	sge = (struct ibv_sge){(uintptr_t)(c->buf + ow.from), 8, c->mr[m].mr->lkey};
	wr.sg_list = &sge;
	wr.wr.atomic.remote_addr = walk_remote_addr(k, cw.remote_off);
	wr.wr.atomic.rkey = k->rkey;
	wr.wr.atomic.compare_add = c->atom_pending.compare_add;
	wr.wr.atomic.swap = c->atom_pending.swap;
	c->wr[slot].atom_check = true;
	if (walk_post_send_wr(c, a, q, m, &wr, slot) == 0) {
		c->atom_pending.busy = true;
		LOG_STEP(c, "checked %s on c%d word %d rkey=%x value %s%llx compare/add %llx swap %llx",
			 walk_action_names[a], k->owner, word, k->rkey, known ? "" : "unknown ",
			 (unsigned long long)value, (unsigned long long)c->atom_pending.compare_add,
			 (unsigned long long)c->atom_pending.swap);
	}
	return 1;
}

void walk_atomic_check_done(struct walk_client *c, enum ibv_wc_status st)
{
	uint32_t slot_off = SLOT_OFF(c->id);
	int owner = c->atom_pending.owner, word = c->atom_pending.word;
	uint64_t got, *value = &c->atom[owner][word].value;
	bool *known = &c->atom[owner][word].known;

	c->atom_pending.busy = false;
	if (st != IBV_WC_SUCCESS) {
		*known = false; /* it may or may not have executed */
		return;
	}
	memcpy(&got, c->buf + slot_off + ATOM_LOCAL_OFF + 8u * (uint32_t)word, 8);
	c->stats.atomics_checked += *known;
	if (*known && got != *value)
		WALK_FAIL(c,
			  "%s on client %d's word %d (rkey %x) returned %llx; expected %llx, the value the "
			  "previous atomics left (compare/add %llx swap %llx)",
			  walk_action_names[c->atom_pending.op], owner, word, c->atom_pending.rkey,
			  (unsigned long long)got, (unsigned long long)*value,
			  (unsigned long long)c->atom_pending.compare_add,
			  (unsigned long long)c->atom_pending.swap);
	if (c->atom_pending.op == ACT_FETCH_ADD)
		*value = got + c->atom_pending.compare_add;
	else
		*value = got == c->atom_pending.compare_add ? c->atom_pending.swap : got;
	*known = true;
}

int walk_do_atomic(struct walk_client *c, enum walk_action a)
{
	struct ibv_send_wr wr = {.opcode = a == ACT_FETCH_ADD ? IBV_WR_ATOMIC_FETCH_AND_ADD
							      : IBV_WR_ATOMIC_CMP_AND_SWP};
	struct ibv_sge sge;
	struct rdma_target t;
	uint32_t lstart, rstart;
	int slot;

	if (c->dattr.atomic_cap == IBV_ATOMIC_NONE)
		return 0;
	if (c->cfg->verify && !c->atom_pending.busy && rng_bernoulli(&c->rng, 0.5) && checked_atomic(c, a))
		return 1;
	if (!pick_target(c, 8, IBV_ACCESS_REMOTE_ATOMIC, &t))
		return 0;
	if (walk_choose_range(c, c->mr[t.m].off, c->mr[t.m].len, 8, true, 8, &lstart) != 8 ||
	    walk_choose_range(c, c->rkeys[t.k].off, (uint32_t)c->rkeys[t.k].len, 8, true, 8, &rstart) != 8)
		return 0;
	if ((slot = walk_alloc_wr(c, a, t.q, t.m, &wr.wr_id)) < 0)
		return 0;
	sge = (struct ibv_sge){(uintptr_t)(c->buf + lstart), 8, c->mr[t.m].mr->lkey};
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.atomic.remote_addr = walk_remote_addr(&c->rkeys[t.k], rstart);
	wr.wr.atomic.rkey = c->rkeys[t.k].rkey;
	wr.wr.atomic.compare_add = rng_next(&c->rng);
	wr.wr.atomic.swap = rng_next(&c->rng);
	walk_post_send_wr(c, a, t.q, t.m, &wr, slot);
	return 1;
}
