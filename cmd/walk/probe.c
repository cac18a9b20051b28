/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * --verify probes: accesses the protection rules decide, not timing.  Through a removed key, one byte past a
 * region or before it, from a QP of another PD (type-2 window: another QP): it must fail; the last byte: it
 * must work.  Only the key's owner knows whether the key changed meanwhile (devices reuse key values), so a
 * wrong outcome goes to the owner, who decides.  One probe at a time per client (an expected failure costs
 * the QP).  Also: a WR posted to a QP already in ERR must flush, never execute.
 */
#include "cmd/walk/actions.h"
#include "cmd/walk/model.h"

#include <stdio.h>

#define PROBE_STEP_PROBABILITY 0.02 /* a step that also posts a probe */

static const char *const probe_names[PROBE_KINDS] = {
    [PROBE_REMOVED] = "through a removed rkey",
    [PROBE_OUTSIDE] = "outside the region",
    [PROBE_OTHER_PD] = "from a QP the key does not belong to",
    [PROBE_LAST_BYTE] = "at the last byte of the region",
    [PROBE_FORBIDDEN] = "that the key's access flags do not grant,",
    [PROBE_UNALIGNED] = "on an address not 8-byte aligned through",
    [PROBE_QP_ACCESS] = "that the responder QP's access flags do not grant, through",
    [PROBE_INV_OTHER_QP] = "on a QP of the PD the type-2 window is not bound to, invalidating",
};

/* The opcodes a probe posts: their names, and the action each counts as. */
static const struct {
	const char *name;
	enum walk_action action;
} probe_ops[IBV_WR_SEND_WITH_INV + 1] = {
    [IBV_WR_RDMA_READ] = {"READ", ACT_READ},
    [IBV_WR_RDMA_WRITE] = {"WRITE", ACT_WRITE},
    [IBV_WR_ATOMIC_FETCH_AND_ADD] = {"FETCH_ADD", ACT_FETCH_ADD},
    [IBV_WR_ATOMIC_CMP_AND_SWP] = {"CMP_SWP", ACT_COMP_SWAP},
    [IBV_WR_SEND_WITH_INV] = {"SEND_WITH_INV", ACT_SEND_WITH_INV},
};

static enum ibv_wr_opcode any_rdma_op(struct walk_client *c)
{
	static const enum ibv_wr_opcode ops[] = {IBV_WR_RDMA_READ, IBV_WR_RDMA_WRITE,
						 IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_CMP_AND_SWP};

	return ops[rng_range(&c->rng, 0, 3)];
}

static const char *opcode_name(uint32_t op)
{
	return op <= IBV_WR_SEND_WITH_INV && probe_ops[op].name ? probe_ops[op].name : "?";
}

/*
 * The opcode of a probe at the owner's buffer offset `off`: a WRITE or an atomic only where a wrongly
 * accepted one cannot land on checked memory (the check zone) or outside the owner's buffer; READ elsewhere.
 */
static enum ibv_wr_opcode pick_opcode(struct walk_client *c, int64_t off, uint32_t len)
{
	enum ibv_wr_opcode op = any_rdma_op(c);

	if (off < 0 || off + 8 > (int64_t)ZONE_START || len > 8)
		return IBV_WR_RDMA_READ;
	if ((op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) &&
	    (c->dattr.atomic_cap == IBV_ATOMIC_NONE || off % 8))
		return IBV_WR_RDMA_READ;
	return op;
}

/* Posts one probe of remote [raddr, raddr + len) on QP q; 1 if posted. */
static int post_probe(struct walk_client *c, int q, enum walk_probe_kind kind, enum ibv_wr_opcode op,
		      const struct rkey_rec *k, uint64_t raddr, uint32_t len)
{
	enum walk_action a = probe_ops[op].action;
	struct ibv_send_wr wr = {.opcode = op, .num_sge = 1};
	struct ibv_sge sge;
	uint32_t lstart;
	int mr, slot;

	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP)
		len = 8;
	if (!walk_can_post_send(c, q) || (mr = walk_pick_mr(c, c->qp[q].pd, 8)) < 0 ||
	    walk_choose_range(c, c->mr[mr].off, c->mr[mr].len, 8, true, 8, &lstart) != 8 ||
	    (slot = walk_alloc_wr(c, a, q, mr, &wr.wr_id)) < 0)
		return 0;
	c->wr[slot].probe = true;
	c->wr[slot].probe_kind = (uint8_t)kind;
	c->wr[slot].probe_rkey = k->rkey;
	c->wr[slot].probe_owner = k->owner;
	c->wr[slot].probe_event = k->event;
	c->wr[slot].probe_addr = raddr;
	/* A WRITE sends what our buffer holds: its result is never checked. */
	sge = (struct ibv_sge){(uintptr_t)(c->buf + lstart), len, c->mr[mr].mr->lkey};
	wr.sg_list = &sge;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = k->rkey;
		wr.wr.atomic.compare_add = 0; /* adds nothing; a swap on a match stores the same value */
		wr.wr.atomic.swap = 0;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = k->rkey;
	}
	if (walk_post_send_wr(c, a, q, mr, &wr, slot) != 0)
		return 1;
	c->probe_busy = true;
	c->stats.probes[kind]++;
	LOG_STEP(c, "probe %s: %s rkey %x of c%d addr %llx len %u qp=%u", probe_names[kind], opcode_name(op),
		 k->rkey, k->owner, (unsigned long long)raddr, len, c->qp[q].qp->qp_num);
	return 1;
}

/* The SEND_WITH_INV in WR slot `slot` invalidates window key k bound to another QP: it must fail. */
void walk_mark_inv_probe(struct walk_client *c, uint32_t slot, const struct rkey_rec *k)
{
	c->wr[slot].probe = true;
	c->wr[slot].probe_kind = PROBE_INV_OTHER_QP;
	c->wr[slot].probe_rkey = k->rkey;
	c->wr[slot].probe_owner = k->owner;
	c->wr[slot].probe_event = k->event;
	c->wr[slot].probe_addr = k->addr;
	c->probe_busy = true;
	c->stats.probes[PROBE_INV_OTHER_QP]++;
	LOG_STEP(c, "probe SEND_WITH_INV of rkey %x (c%d's window on its QP %u) on qp=%u", k->rkey, k->owner,
		 k->qpn, c->qp[c->wr[slot].qp].qp->qp_num);
}

/* After an owner removed an rkey, an access through it must fail with REM_ACCESS_ERR. */
int walk_post_probe(struct walk_client *c, const struct walk_msg *m)
{
	struct rkey_rec k = {
	    .owner = m->src, .kind = m->kind, .rkey = m->rkey, .pd_id = m->pd_id, .qpn = m->qpn};
	struct reach w = {&k, false, 0};
	int q;

	k.event = m->event;
	if (c->probe_busy || m->length < 8 || (q = walk_pick_index(c, MAX_QP, walk_qp_reaches, &w)) < 0)
		return 0;
	return post_probe(c, q, PROBE_REMOVED, pick_opcode(c, (int64_t)m->bytes, 8), &k, m->addr, 8);
}

static bool key_usable(struct walk_client *c, int i, const void *arg)
{
	const struct rkey_rec *k = &c->rkeys[i];

	(void)arg;
	return k->used && k->len >= 8;
}

static bool key_restricted(struct walk_client *c, int i, const void *arg)
{
	(void)arg;
	return key_usable(c, i, NULL) && (c->rkeys[i].access & REMOTE_ACCESS) != REMOTE_ACCESS;
}

/* A QP to the key's owner that the key does not admit: another PD, or (type 2) another QP. */
static bool qp_not_admitted(struct walk_client *c, int i, const void *arg)
{
	const struct rkey_rec *k = arg;
	const struct qp_rec *r = &c->qp[i];

	if (!r->used || r->type != IBV_QPT_RC || r->state != QP_READY || r->peer != k->owner ||
	    !walk_can_post_send(c, i))
		return false;
	return k->kind == 2 ? r->peer_qpn != k->qpn : r->peer_pd != k->pd_id;
}

/* The buffer offset of an 8-byte aligned word in the middle of k (buffers are page aligned). */
static int64_t mid_word(const struct rkey_rec *k)
{
	int64_t off = ((int64_t)k->off + (int64_t)(k->len / 2)) / 8 * 8;

	return off >= (int64_t)k->off && off + 8 <= (int64_t)k->off + (int64_t)k->len ? off : (int64_t)k->off;
}

/* A QP reaching the key whose peer QP does not grant `access`. */
static bool qp_denies(struct walk_client *c, int i, const void *arg)
{
	const struct reach *w = arg;
	struct reach any = {w->k, false, 0};

	return walk_qp_reaches(c, i, &any) && !(c->qp[i].peer_access & w->access);
}

/* An access the key grants on a QP whose peer QP does not: must fail whatever the key's state. */
static void qp_access_probe(struct walk_client *c, const struct rkey_rec *k)
{
	enum ibv_wr_opcode op = any_rdma_op(c);
	struct reach w = {k, false, model_access_for(op)};
	int64_t off = mid_word(k);
	int q;

	if (!(k->access & w.access) || (op != IBV_WR_RDMA_READ && off + 8 > (int64_t)ZONE_START) ||
	    (op != IBV_WR_RDMA_READ && op != IBV_WR_RDMA_WRITE && c->dattr.atomic_cap == IBV_ATOMIC_NONE) ||
	    (q = walk_pick_index(c, MAX_QP, qp_denies, &w)) < 0)
		return;
	post_probe(c, q, PROBE_QP_ACCESS, op, k, walk_remote_addr(k, (uint32_t)off), 8);
}

/* --verify: now and then, a step also posts one probe of a live key. */
void walk_probe_step(struct walk_client *c)
{
	const struct rkey_rec *k;
	struct reach w;
	int ki, q;
	int64_t off;

	if (!c->cfg->verify || c->probe_busy || !rng_bernoulli(&c->rng, PROBE_STEP_PROBABILITY))
		return;
	if ((ki = walk_pick_index(c, MAX_REMOTE_KEYS, key_usable, NULL)) < 0)
		return;
	k = &c->rkeys[ki];
	w = (struct reach){k, false, 0};
	switch (rng_range(&c->rng, 0, 5)) {
	case 3: /* an atomic 4 bytes off alignment (adding 0: harmless if wrongly executed) */
		off = mid_word(k) + 4;
		if (c->dattr.atomic_cap == IBV_ATOMIC_NONE || k->len < 16 ||
		    !(k->access & IBV_ACCESS_REMOTE_ATOMIC) || off + 8 > (int64_t)k->off + (int64_t)k->len ||
		    off + 16 > (int64_t)ZONE_START ||
		    (q = walk_pick_index(c, MAX_QP, walk_qp_reaches, &w)) < 0)
			return;
		post_probe(c, q, PROBE_UNALIGNED, IBV_WR_ATOMIC_FETCH_AND_ADD, k,
			   walk_remote_addr(k, (uint32_t)off), 8);
		return;
	case 0: /* one byte past the end, or the byte before the start */
		if ((q = walk_pick_index(c, MAX_QP, walk_qp_reaches, &w)) < 0)
			return;
		if (k->len >= 8 && rng_bernoulli(&c->rng, 0.3)) {
			/* a READ of 8 bytes, 4 inside the end and 4 past it: the whole range is checked */
			off = (int64_t)k->off + (int64_t)k->len - 4;
			post_probe(c, q, PROBE_OUTSIDE, IBV_WR_RDMA_READ, k,
				   walk_remote_addr(k, (uint32_t)off), 8);
		} else if (rng_bernoulli(&c->rng, 0.5) || k->off == 0) {
			off = (int64_t)k->off + (int64_t)k->len;
			/* an atomic needs 8 aligned bytes: the first aligned word past the end */
			off = (off + 7) / 8 * 8;
			post_probe(c, q, PROBE_OUTSIDE, pick_opcode(c, off, 1), k,
				   walk_remote_addr(k, (uint32_t)off), 1);
		} else {
			/* the aligned word just before the start, else the byte */
			uint32_t len = k->off >= 8 && k->off % 8 == 0 ? 8 : 1;

			off = (int64_t)k->off - len;
			post_probe(c, q, PROBE_OUTSIDE, pick_opcode(c, off, len), k, k->addr - len, len);
		}
		return;
	case 1: /* from a QP the key does not admit */
		if ((q = walk_pick_index(c, MAX_QP, qp_not_admitted, k)) < 0)
			return;
		off = mid_word(k);
		post_probe(c, q, PROBE_OTHER_PD, pick_opcode(c, off, 8), k,
			   walk_remote_addr(k, (uint32_t)off), 8);
		return;
	case 2: { /* an opcode the key does not grant */
		enum ibv_wr_opcode op = any_rdma_op(c);

		if ((ki = walk_pick_index(c, MAX_REMOTE_KEYS, key_restricted, NULL)) < 0)
			return;
		k = &c->rkeys[ki];
		w = (struct reach){k, false, 0};
		if ((k->access & model_access_for(op)) ||
		    (q = walk_pick_index(c, MAX_QP, walk_qp_reaches, &w)) < 0)
			return;
		off = mid_word(k);
		/* a wrongly granted WRITE or atomic must not land in the check zone */
		if (op != IBV_WR_RDMA_READ && off + 8 > (int64_t)ZONE_START)
			return;
		if (op != IBV_WR_RDMA_READ && op != IBV_WR_RDMA_WRITE &&
		    c->dattr.atomic_cap == IBV_ATOMIC_NONE)
			return;
		post_probe(c, q, PROBE_FORBIDDEN, op, k, walk_remote_addr(k, (uint32_t)off), 8);
		return;
	}
	case 4:
		qp_access_probe(c, k);
		return;
	default: { /* the last byte: must work, on a QP whose peer grants the access */
		enum ibv_wr_opcode op;

		off = (int64_t)k->off + (int64_t)k->len - 1;
		/* a WRITE only outside the check zone, and either only if the key grants it */
		if ((k->access & IBV_ACCESS_REMOTE_WRITE) && off + 8 <= (int64_t)ZONE_START &&
		    (!(k->access & IBV_ACCESS_REMOTE_READ) || rng_bernoulli(&c->rng, 0.5)))
			op = IBV_WR_RDMA_WRITE;
		else if (k->access & IBV_ACCESS_REMOTE_READ)
			op = IBV_WR_RDMA_READ;
		else
			return;
		w.access = model_access_for(op);
		if ((q = walk_pick_index(c, MAX_QP, walk_qp_reaches, &w)) < 0)
			return;
		post_probe(c, q, PROBE_LAST_BYTE, op, k, walk_remote_addr(k, (uint32_t)off), 1);
		return;
	}
	}
}

/* A probe completed: a wrong outcome goes to the owner, who knows whether the key changed. */
void walk_probe_done(struct walk_client *c, const struct wr_rec *w, enum ibv_wc_status st)
{
	bool must_fail = w->probe_kind != PROBE_LAST_BYTE;
	struct walk_msg hit = {.type = MSG_PROBE_HIT,
			       .dst = (uint16_t)w->probe_owner,
			       .rkey = w->probe_rkey,
			       .event = w->probe_event,
			       .addr = w->probe_addr,
			       .probe_kind = w->probe_kind};

	c->probe_busy = false;
	hit.access = w->opcode;
	hit.qpn = c->qp[w->qp].peer_qpn;
	if (w->probe_kind == PROBE_QP_ACCESS) {
		/* the responder QP's flags only ever narrow, and we learn it after: judged here */
		if (st == IBV_WC_SUCCESS)
			WALK_FAIL(c,
				  "%s at %llx through rkey %x of client %d worked on QP %u whose peer QP %u "
				  "grants only access %x; expected an error completion",
				  opcode_name(hit.access), (unsigned long long)w->probe_addr, w->probe_rkey,
				  w->probe_owner, c->qp[w->qp].qp->qp_num, c->qp[w->qp].peer_qpn,
				  c->qp[w->qp].peer_access);
		return;
	}
	if (w->probe_kind == PROBE_UNALIGNED) {
		/* the rule does not depend on the key: judged here */
		if (st == IBV_WC_SUCCESS)
			WALK_FAIL(c,
				  "FETCH_ADD at %llx (not 8-byte aligned) through rkey %x of client %d "
				  "worked; an atomic needs an aligned address",
				  (unsigned long long)w->probe_addr, w->probe_rkey, w->probe_owner);
		return;
	}
	if ((must_fail && st == IBV_WC_SUCCESS) || (!must_fail && st == IBV_WC_REM_ACCESS_ERR))
		walk_publish(c, &hit);
}

/* The owner's verdict on a probe that went the wrong way. */
void walk_probe_hit(struct walk_client *c, const struct walk_msg *m)
{
	const char *op = opcode_name(m->access);
	int verdict;

	if (m->probe_kind >= PROBE_KINDS)
		return;
	if (m->probe_kind == PROBE_REMOVED) {
		if (walk_key_since(c, m->rkey, m->event, false) == 1)
			WALK_FAIL(
			    c,
			    "client %d %s through rkey %x addr %llx worked after the key was removed (dereg, "
			    "dealloc or invalidate) and before it was issued again; expected REM_ACCESS_ERR",
			    m->src, op, m->rkey, (unsigned long long)m->addr);
		return;
	}
	/* Excused if the key was removed (and maybe issued again) since the issue the prober saw. */
	verdict = walk_key_since(c, m->rkey, m->event, true);
	if (verdict != 1)
		return;
	for (int q = 0; m->probe_kind == PROBE_LAST_BYTE && q < MAX_QP; q++)
		if (c->qp[q].used && c->qp[q].qp->qp_num == m->qpn && !c->qp[q].narrowed)
			verdict = 2; /* the responder QP is ours still, its access flags as first granted */
	if (m->probe_kind == PROBE_LAST_BYTE) {
		char what[96] = "not found";

		if (verdict != 2)
			return; /* its access flags were narrowed (modify.c), or it is gone */

		for (int i = 0; i < MAX_MR; i++)
			if (c->mr[i].used && c->mr[i].mr->rkey == m->rkey)
				snprintf(what, sizeof(what), "MR [%llx, +%u) access %x",
					 (unsigned long long)(uintptr_t)(c->buf + c->mr[i].off), c->mr[i].len,
					 c->mr[i].access);
		for (int i = 0; i < 2 * MAX_MW; i++)
			if (c->mw[i].used && c->mw[i].state == MW_BOUND && c->mw[i].rkey == m->rkey)
				snprintf(what, sizeof(what), "type-%d MW [%llx, +%llu) access %x",
					 c->mw[i].type, (unsigned long long)c->mw[i].addr,
					 (unsigned long long)c->mw[i].len, c->mw[i].access);
		WALK_FAIL(c,
			  "client %d %s of the last byte of rkey %x (addr %llx) failed with REM_ACCESS_ERR "
			  "while the key was live (%s, issue event %llu); expected success",
			  m->src, op, m->rkey, (unsigned long long)m->addr, what,
			  (unsigned long long)m->event);
	} else
		WALK_FAIL(c, "client %d %s %s rkey %x (addr %llx) worked; expected %s", m->src, op,
			  probe_names[m->probe_kind], m->rkey, (unsigned long long)m->addr,
			  m->probe_kind == PROBE_INV_OTHER_QP ? "REM_INV_REQ_ERR" : "REM_ACCESS_ERR");
}

/* --verify: right after QP q entered ERR, a send and a receive posted to it must flush. */
void walk_post_to_err(struct walk_client *c, int q)
{
	struct ibv_send_wr swr = {.opcode = IBV_WR_SEND};
	struct ibv_recv_wr rwr = {0}, *rbad;
	struct qp_rec *r = &c->qp[q];
	int slot;

	if (!c->cfg->verify || !r->used || r->state != QP_ERR)
		return;
	/* RC only: a UD send needs an AH even to be posted */
	if (r->type == IBV_QPT_RC && walk_can_post_send(c, q) &&
	    (slot = walk_alloc_wr(c, ACT_SEND, q, -1, &swr.wr_id)) >= 0) {
		c->wr[slot].expect_flush = true;
		c->stats.flush_posts += walk_post_send_wr(c, ACT_SEND, q, -1, &swr, slot) == 0;
	}
	if (r->recv_inflight < (int)r->cap.max_recv_wr && c->cq[r->rcq].outstanding < c->cq[r->rcq].cqe &&
	    (slot = walk_alloc_wr(c, ACT_RECV, q, -1, &rwr.wr_id)) >= 0) {
		c->wr[slot].expect_flush = true;
		c->wr[slot].is_recv = true;
		if (hw_post_recv(r->qp, &rwr, &rbad) == 0) {
			c->stats.issued[ACT_RECV]++;
			c->stats.flush_posts++;
			r->recv_inflight++;
			c->cq[r->rcq].outstanding++;
		} else {
			walk_release_wr(c, (uint32_t)slot);
		}
	}
	LOG_STEP(c, "posted a send and a receive to qp=%u in ERR: they must flush", r->qp->qp_num);
}
