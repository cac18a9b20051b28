/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Actions on QPs and address handles: create (an RC pair via the peer), connect, move to ERR, destroy. */
#include "cmd/walk/actions.h"
#include "cmd/walk/model.h"
#include "cmd/walk/oracle.h"

static int qp_slot(struct walk_client *c)
{
	for (int i = 0; i < MAX_QP; i++)
		if (!c->qp[i].used)
			return i;
	return -1;
}

/* Creates a QP in RESET with caps sampled as the original (bounded for small WQEs), or on an SRQ. */
static int create_qp(struct walk_client *c, enum ibv_qp_type type, int pd)
{
	int p = pd >= 0 ? pd : walk_pick_pd_for_new(c), i = qp_slot(c);
	int scq = walk_pick_cq_for_new(c), rcq = walk_pick_cq_for_new(c);
	int srq = p >= 0 ? walk_pick_srq_for_qp(c, type, p) : -1;
	int wr_max = c->dattr.max_qp_wr / 8, sge_max = c->dattr.max_sge / 2, sge_min;
	struct ibv_qp_init_attr init = {.qp_type = type};
	struct ibv_qp *qp;

	if (p < 0 || i < 0 || scq < 0 || rcq < 0)
		return -1;
	wr_max = wr_max < MIN_QP_WR ? MIN_QP_WR : wr_max;
	sge_max = sge_max < 1 ? 1 : sge_max;
	/* --verify: a message header takes an SGE of its own */
	sge_min = c->cfg->verify && sge_max >= 2 ? 2 : 1;
	init.send_cq = c->cq[scq].cq;
	init.recv_cq = c->cq[rcq].cq;
	init.cap.max_send_wr = (uint32_t)rng_range(&c->rng, MIN_QP_WR, (uint64_t)wr_max);
	init.cap.max_recv_wr = (uint32_t)rng_range(&c->rng, MIN_QP_WR, (uint64_t)wr_max);
	init.cap.max_send_sge = (uint32_t)rng_range(&c->rng, (uint64_t)sge_min, (uint64_t)sge_max);
	init.cap.max_recv_sge = (uint32_t)rng_range(&c->rng, (uint64_t)sge_min, (uint64_t)sge_max);
	init.cap.max_inline_data =
	    rng_bernoulli(&c->rng, 0.5) ? (uint32_t)rng_range(&c->rng, 1, MSG_CELL) : 0;
	if (srq >= 0) {
		rcq = c->srq[srq].cq;
		init.recv_cq = c->cq[rcq].cq;
		init.srq = c->srq[srq].srq;
		init.cap.max_recv_wr = init.cap.max_recv_sge = 0;
	}
	qp = hw_create_qp(c->pd[p].pd, &init);
	if (!qp)
		return -2;
	init.cap.max_recv_wr *= srq < 0; /* on an SRQ, none of its own: recv and probes never post to it */
	c->qp[i] = (struct qp_rec){.used = true,
				   .qp = qp,
				   .type = type,
				   .state = QP_CONNECTING,
				   .pd = p,
				   .scq = scq,
				   .rcq = rcq,
				   .cap = init.cap,
				   .access = QP_ACCESS,
				   .peer_access = QP_ACCESS,
				   .peer = -1,
				   .srq = srq};
	if (srq >= 0)
		c->srq[srq].users++;
	c->pd[p].users++;
	c->cq[scq].users++;
	c->cq[rcq].users++;
	return i;
}

void walk_fill_ah_attr(struct walk_client *c, int target, struct ibv_ah_attr *ah)
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
 * A QP's initial send PSN: random-looking (a stranger cannot guess where a connection's sequence starts) yet
 * computable by both ends from the run's seed and the sending QP's number, so no message has to carry it and
 * a replay with the same seed uses the same PSNs.  24 bits, as in the BTH.
 */
static uint32_t initial_psn(const struct walk_client *c, uint32_t qpn)
{
	uint64_t x = c->cfg->seed ^ ((uint64_t)qpn * 0x9e3779b97f4a7c15ull);

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (uint32_t)x & 0xffffff;
}

int walk_qp_to(struct walk_client *c, struct ibv_qp *qp, enum ibv_qp_state last, uint32_t qkey,
	       uint32_t access, int peer, uint32_t peer_qpn)
{
	static const enum ibv_qp_state to[] = {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS};
	uint8_t rd_atom = (uint8_t)(c->dattr.max_qp_rd_atom > 0 ? imin(c->dattr.max_qp_rd_atom, 16) : 1);
	struct ibv_qp_attr a = {.qkey = qkey,
				.qp_access_flags = access,
				.port_num = (uint8_t)c->cfg->port,
				.path_mtu = c->pattr.active_mtu,
				.dest_qp_num = peer_qpn,
				.rq_psn = initial_psn(c, peer_qpn),
				.sq_psn = initial_psn(c, qp->qp_num),
				.max_dest_rd_atomic = rd_atom,
				.max_rd_atomic = rd_atom,
				.min_rnr_timer = 12,
				.timeout = 14,
				.retry_cnt = 7,
				.rnr_retry = 7};
	int req, opt, rc = 0;

	if (peer >= 0)
		walk_fill_ah_attr(c, peer, &a.ah_attr);
	for (int k = 1; k < 4 && to[k - 1] != last && !rc; k++) {
		a.qp_state = to[k];
		rc = model_qp_masks(qp->qp_type, to[k - 1], to[k], &req, &opt)
			 ? hw_modify_qp(qp, &a, req | IBV_QP_STATE)
			 : EINVAL;
	}
	return rc;
}

int walk_create_rc_responder(struct walk_client *c, uint32_t pd_id)
{
	int pd = -1;

	for (int i = 0; pd_id && i < MAX_PD; i++)
		if (c->pd[i].used && c->pd[i].id == pd_id)
			pd = i;
	return create_qp(c, IBV_QPT_RC, pd);
}

int walk_do_create_rc_qp_pair(struct walk_client *c)
{
	struct walk_msg m = {.type = MSG_RC_REQUEST};
	int peer, q;

	if (walk_count_qp(c, IBV_QPT_RC, true) >= MAX_RC_INITIATED || walk_outbox_busy(c) || qp_slot(c) < 0)
		return 0;
	peer = (int)rng_range(&c->rng, 0, (uint64_t)c->clients - 1);
	if (c->hint.on && c->hint.peer >= 0 && c->hint.peer < c->clients) {
		peer = c->hint.peer;
		m.bytes = c->hint.peer_pd_id; /* the responder's PD, when it still has it */
	}
	c->stats.issued[ACT_CREATE_RC_QP_PAIR]++;
	q = create_qp(c, IBV_QPT_RC, -1);
	if (q < 0) {
		walk_count_error(c, ACT_CREATE_RC_QP_PAIR, errno);
		return 1;
	}
	c->qp[q].initiator = true;
	c->qp[q].peer = peer;
	c->qp[q].access = (uint32_t)walk_remote_access(c);
	/* ok is counted when the handshake completes (handle RC_REPLY) */
	LOG_STEP(c, "create_rc_qp_pair qp=%u pd[%d] cq=%d/%d srq=%d access=%x peer=c%d -> requested",
		 c->qp[q].qp->qp_num, c->qp[q].pd, c->qp[q].scq, c->qp[q].rcq, c->qp[q].srq, c->qp[q].access,
		 peer);
	m.dst = (uint16_t)peer;
	m.qpn = c->qp[q].qp->qp_num;
	m.pd_id = c->pd[c->qp[q].pd].id;
	m.access = c->qp[q].access;
	walk_publish(c, &m);
	return 1;
}

int walk_do_create_ud_qp(struct walk_client *c)
{
	struct walk_msg m = {.type = MSG_ADD_UD_QP};
	uint32_t qkey;
	int q, rc;

	if (walk_count_qp(c, IBV_QPT_UD, false) >= MAX_UD || walk_outbox_busy(c) || qp_slot(c) < 0)
		return 0;
	c->stats.issued[ACT_CREATE_UD_QP]++;
	q = create_qp(c, IBV_QPT_UD, -1);
	if (q < 0) {
		walk_count_error(c, ACT_CREATE_UD_QP, errno);
		return 1;
	}
	/* Q_Keys with the top bit set are privileged (Linux 6.4+): never sample them. */
	qkey = (uint32_t)rng_next(&c->rng) & 0x7fffffffu;
	c->qp[q].qkey = qkey;
	rc = walk_qp_to(c, c->qp[q].qp, IBV_QPS_RTS, qkey, 0, -1, 0);
	LOG_STEP(c, "create_ud_qp qp=%u srq=%d qkey=%x -> %d", c->qp[q].qp->qp_num, c->qp[q].srq, qkey, rc);
	c->qp[q].state = rc ? QP_ERR : QP_READY; /* ERR: destroy_qp reclaims it */
	if (!walk_verb_returned(c, ACT_CREATE_UD_QP, "ibv_modify_qp", "a new UD QP, RESET to RTS", rc))
		return 1;
	m.qpn = c->qp[q].qp->qp_num;
	m.qkey = qkey;
	walk_broadcast(c, &m);
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
		walk_broadcast(c, &m);
	} else if (r->peer >= 0 && r->peer_qpn) {
		m.type = MSG_RC_DOWN;
		m.dst = (uint16_t)r->peer;
		m.peer_qpn = r->peer_qpn;
		walk_publish(c, &m);
	}
}

static bool qp_for_error(struct walk_client *c, int i, const void *arg)
{
	const struct qp_rec *r = &c->qp[i];

	(void)arg;
	/* Posted receives do not pin a QP (they must flush), nor sends to a peer that announced its side down
	 * (no ACK will come: they would hold their MRs and CQ entries through every retry). */
	return r->used && r->state != QP_ERR && r->state != QP_CONNECTING &&
	       (c->cfg->allow_outstanding_ops || !r->send_inflight || r->state == QP_PEER_DOWN);
}

int walk_do_modify_qp_error(struct walk_client *c)
{
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};
	int q, rc;

	if (walk_outbox_busy(c) || (q = walk_pick_hinted(c, MAX_QP, qp_for_error, NULL, c->hint.qp)) < 0)
		return 0;
	c->stats.issued[ACT_MODIFY_QP_ERROR]++;
	rc = hw_modify_qp(c->qp[q].qp, &attr, IBV_QP_STATE);
	LOG_STEP(c, "modify_qp_error qp=%u inflight=%d/%d -> %d", c->qp[q].qp->qp_num, c->qp[q].send_inflight,
		 c->qp[q].recv_inflight, rc);
	if (!walk_verb_returned(c, ACT_MODIFY_QP_ERROR, "ibv_modify_qp", "a live QP, to ERR", rc))
		return 1;
	c->qp[q].state = QP_ERR;
	c->qp[q].err_since_ns = clock_ns();
	c->qp[q].err_seq = c->seq;
	announce_down(c, q);
	walk_post_to_err(c, q);
	return 1;
}

static bool qp_for_destroy(struct walk_client *c, int i, const void *arg)
{
	const struct qp_rec *r = &c->qp[i];

	(void)arg;
	/* on an SRQ: a whole poll of the CQs since it entered ERR saw the last receives it took */
	return r->used && r->state == QP_ERR && !r->type2_bound && (r->srq < 0 || c->seq > r->err_seq + 1) &&
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
		if (w->atom_check)
			walk_atomic_check_done(c, IBV_WC_WR_FLUSH_ERR); /* never known now */
		if (w->probe)
			c->probe_busy = false;
		if (w->mw >= 0 && c->mw[w->mw].state == MW_BINDING) {
			c->mw[w->mw].state = MW_FREE;
			c->mr[c->mw[w->mw].mr].bound_mws--;
		}
		walk_release_wr(c, s);
	}
	c->cq[c->qp[q].scq].outstanding -= c->qp[q].send_inflight;
	c->cq[c->qp[q].rcq].outstanding -= c->qp[q].recv_inflight;
}

int walk_destroy_qp_rec(struct walk_client *c, int q)
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
	if (r->srq >= 0)
		c->srq[r->srq].users--;
	r->used = false;
	return 0;
}

int walk_do_destroy_qp(struct walk_client *c)
{
	int q, rc;
	uint32_t qpn;

	if (walk_outbox_busy(c) || (q = walk_pick_hinted(c, MAX_QP, qp_for_destroy, NULL, c->hint.qp)) < 0)
		return 0;
	qpn = c->qp[q].qp->qp_num;
	c->stats.issued[ACT_DESTROY_QP]++;
	rc = walk_destroy_qp_rec(c, q);
	LOG_STEP(c, "destroy_qp qp=%u -> %d", qpn, rc);
	if (!walk_verb_returned(c, ACT_DESTROY_QP, "ibv_destroy_qp", "a QP without work in flight", rc))
		return 1;
	return 1;
}

int walk_do_create_ah(struct walk_client *c)
{
	struct ibv_ah_attr attr;
	struct ibv_ah *ah;
	int i, p, target;

	if ((p = walk_pick_pd_for_new(c)) < 0)
		return 0;
	for (i = 0; i < MAX_AH && c->ah[i].used; i++)
		;
	if (i == MAX_AH)
		return 0;
	target = (int)rng_range(&c->rng, 0, (uint64_t)c->clients - 1);
	if (c->hint.on && c->hint.peer >= 0 && c->hint.peer < c->clients)
		target = c->hint.peer;
	walk_fill_ah_attr(c, target, &attr);
	ah = hw_create_ah(c->pd[p].pd, &attr);
	LOG_STEP(c, "create_ah pd[%d] target=c%d lid=%u -> %s", p, target, attr.dlid, ah ? "ok" : "error");
	if (!walk_created(c, ACT_CREATE_AH, ah))
		return 1;
	c->ah[i] = (struct ah_rec){.used = true, .ah = ah, .pd = p, .target = target};
	c->pd[p].users++;
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

int walk_do_destroy_ah(struct walk_client *c)
{
	int i, rc;

	if ((i = walk_pick_hinted(c, MAX_AH, ah_idle, NULL, c->hint.ah)) < 0)
		return 0;
	c->stats.issued[ACT_DESTROY_AH]++;
	rc = hw_destroy_ah(c->ah[i].ah);
	LOG_STEP(c, "destroy_ah ah[%d] -> %d", i, rc);
	if (!walk_verb_returned(c, ACT_DESTROY_AH, "ibv_destroy_ah", "an AH no send in flight uses", rc))
		return 1;
	c->pd[c->ah[i].pd].users--;
	c->ah[i].used = false;
	return 1;
}
