/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A walker client's life: open the device, bootstrap the minimum objects, step (updates in, one random
 * action, completions out), then drain and destroy everything in dependency order.
 */
#include "cmd/walk/actions.h"
#include "cmd/walk/bus.h"
#include "cmd/walk/client.h"
#include "cmd/walk/oracle.h"
#include "core/util/clock.h"
#include "core/stats/stats.h"

#include <errno.h>
#include <malloc.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_REDRAWS	  1000
#define OWED_MAX	  16 /* draws of one action that could not run, kept for later */
#define OWED_RETRY_STEPS  2
#define PACE_RUN_NS	  200000ULL
#define FLUSH_DEADLINE_NS (3ULL * 1000000000ULL)
/* Steps past the deadline before a flush is late: a process stalled by a loaded machine polled nothing. */
#define FLUSH_LATE_STEPS  256
#define DRAIN_TIMEOUT_NS  (5ULL * 1000000000ULL)
#define PROBE_PROBABILITY 0.3
#define TRIM_STEPS	  4096 /* steps between two malloc_trim(3) calls */

int walk_client_open(struct walk_client *c)
{
	memcpy(c->weight, c->cfg->weight, sizeof(c->weight));
	c->faults = getenv("RDMATOOL_SOFT_FAULTS") && *getenv("RDMATOOL_SOFT_FAULTS");
	rng_seed(&c->rng, c->cfg->seed, (uint64_t)c->id);
	if (walk_history_init(&c->hist, c->cfg->history))
		return -ENOMEM;
	c->ctx = hw_open_device(c->cfg->device, NULL);
	if (!c->ctx)
		return -(errno ? errno : ENODEV);
	if (hw_query_device(c->ctx, &c->dattr) || hw_query_port(c->ctx, (uint8_t)c->cfg->port, &c->pattr) ||
	    hw_query_gid(c->ctx, (uint8_t)c->cfg->port, c->cfg->gid_index, &c->gid))
		return -EINVAL;
	c->type2 = c->dattr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B;
	if (!c->type2)
		walk_drop_type2(c->weight);
	c->buf = aligned_alloc(4096, BUF_SIZE);
	c->wr = calloc(MAX_WR, sizeof(*c->wr));
	c->free_wr = calloc(MAX_WR, sizeof(*c->free_wr));
	if (!c->buf || !c->wr || !c->free_wr)
		return -ENOMEM;
	memset(c->buf, '-', BUF_SIZE);
	/* Counters for cqstat; a missing segment (RDMATOOL_STATS=0) leaves NULL, which the helpers ignore. */
	char name[STATS_NAME_LEN];

	snprintf(name, sizeof(name), "walk client %d", c->id);
	stats_segment_open("walk");
	const char *why = stats_segment_problem(); /* once per process, not per client */

	if (why)
		fprintf(stderr, "rdmatool walk: %s\n", why);
	c->counters = stats_entry_add(name, STATS_KIND_WALK_CLIENT, c->id);
	for (uint32_t i = 0; i < MAX_WR; i++)
		c->free_wr[i] = MAX_WR - 1 - i;
	c->nfree_wr = MAX_WR;
	return 0;
}

/* ---- completions ---- */

static int find_mw_by_rkey(struct walk_client *c, uint32_t rkey)
{
	for (int i = 0; i < 2 * MAX_MW; i++)
		if (c->mw[i].used && c->mw[i].type == 2 && c->mw[i].state == MW_BOUND &&
		    c->mw[i].rkey == rkey)
			return i;
	return -1;
}

static void publish_mw(struct walk_client *c, int i, int type)
{
	struct mw_rec *m = &c->mw[i];
	struct walk_msg msg = {.type = (uint16_t)type,
			       .access = (uint32_t)m->access,
			       .kind = (uint16_t)m->type,
			       .rkey = m->rkey,
			       .pd_id = c->pd[m->pd].id,
			       .qpn = m->qp >= 0 ? c->qp[m->qp].qp->qp_num : 0,
			       .bytes = (uint32_t)(m->addr - (uintptr_t)c->buf),
			       .addr = m->addr,
			       .length = m->len,
			       /* a removal follows its key event; an add names the bind's */
			       .event = type == MSG_ADD_RKEY ? m->key_event : c->nkey_events - 1};

	walk_publish_key(c, &msg, m->qp);
}

static void unbind_mw(struct walk_client *c, int i)
{
	struct mw_rec *m = &c->mw[i];

	c->mr[m->mr].bound_mws--;
	if (m->qp >= 0)
		c->qp[m->qp].type2_bound--;
	m->state = MW_FREE;
	m->mr = m->qp = -1;
}

static void bind_done(struct walk_client *c, int i, bool ok)
{
	struct mw_rec *m = &c->mw[i];

	if (!ok) {
		unbind_mw(c, i);
		return;
	}
	m->state = MW_BOUND;
	m->rkey = m->new_rkey;
	m->access = m->new_access;
	m->mw->rkey = m->new_rkey; /* type 2: the consumer owns the key */
	publish_mw(c, i, MSG_ADD_RKEY);
}

static void handle_wc(struct walk_client *c, const struct ibv_wc *wc)
{
	uint32_t slot = (uint32_t)wc->wr_id, gen = (uint32_t)(wc->wr_id >> 32);
	struct wr_rec *w;
	struct qp_rec *r;
	bool ok = wc->status == IBV_WC_SUCCESS, unknown_qp;

	if (slot >= MAX_WR || !c->wr[slot].busy || c->wr[slot].gen != gen) {
		LOG(c, "c%d completion for unknown wr=%llx status=%s", c->id, (unsigned long long)wc->wr_id,
		    ibv_wc_status_str(wc->status));
		if (!c->cfg->allow_outstanding_ops)
			WALK_FAIL(c,
				  "completion for wr_id %llx (qp %u, %s) that is not outstanding: a "
				  "duplicate or a WR never posted",
				  (unsigned long long)wc->wr_id, wc->qp_num, ibv_wc_status_str(wc->status));
		return;
	}
	w = &c->wr[slot];
	if ((unsigned)wc->status < WALK_WC_STATUSES)
		c->stats.wc[w->action][wc->status]++;
	else
		c->stats.wc_other++;
	LOG(c, "c%d cqe %s wr=%llx qp=%u %s", c->id, walk_action_names[w->action],
	    (unsigned long long)wc->wr_id, wc->qp_num, ibv_wc_status_str(wc->status));
	unknown_qp = w->srq_recv && !walk_srq_recv_done(c, slot, wc);
	if (w->mr >= 0)
		c->mr[w->mr].inflight--;
	if (unknown_qp) {
		walk_release_wr(c, slot);
		return;
	}
	r = &c->qp[w->qp];
	if (w->srq_recv) { /* walk_srq_recv_done did the SRQ's accounting */
	} else if (w->is_recv) {
		r->recv_inflight--;
		c->cq[r->rcq].outstanding--;
	} else {
		r->send_inflight--;
		c->cq[r->scq].outstanding--;
	}
	c->stats.ok[w->action] += ok;
	c->stats.errors[w->action] += !ok;
	if (c->cfg->verify)
		walk_oracle(c, &(struct walk_obs){.kind = WALK_OBS_WC, .slot = slot, .wc = wc});
	if (!ok && r->state != QP_ERR) {
		/* Any error completion leaves the QP in an error state. */
		r->state = QP_ERR;
		r->err_since_ns = clock_ns();
		r->err_seq = c->seq;
		r->credit_count = 0;
	}
	if (w->mw >= 0)
		bind_done(c, w->mw, ok);
	if (w->is_recv && ok && (wc->wc_flags & IBV_WC_WITH_INV)) {
		int i = find_mw_by_rkey(c, wc->invalidated_rkey);

		/* Not found: we deallocated it after the NIC invalidated it. */
		if (i >= 0) {
			walk_note_key(c, wc->invalidated_rkey, false);
			publish_mw(c, i, MSG_REMOVE_RKEY);
			unbind_mw(c, i);
		}
	}
	walk_release_wr(c, slot);
}

static int poll_all(struct walk_client *c)
{
	struct ibv_wc wc[16];
	int total = 0;

	for (int i = 0; i < MAX_CQ; i++) {
		int n;

		if (!c->cq[i].used)
			continue;
		while ((n = hw_poll_cq(c->cq[i].cq, 16, wc)) > 0) {
			stats_inc(c->counters, STATS_POLLS);
			stats_add(c->counters, STATS_COMPLETED, (uint64_t)n);
			for (int k = 0; k < n; k++) {
				if (wc[k].status != IBV_WC_SUCCESS)
					stats_wc_error(c->counters, wc[k].status);
				handle_wc(c, &wc[k]);
			}
			total += n;
		}
		stats_inc(c->counters, STATS_POLLS);
		stats_inc(c->counters, STATS_EMPTY_POLLS);
	}
	return total;
}

/* --verify: a QP in ERR must flush every outstanding WR promptly. */
static void check_flush_deadlines(struct walk_client *c)
{
	uint64_t now = clock_ns();

	if (!c->cfg->verify)
		return;
	for (int q = 0; q < MAX_QP; q++) {
		struct qp_rec *r = &c->qp[q];

		if (!r->used || r->state != QP_ERR || !r->err_since_ns ||
		    !(r->send_inflight + r->recv_inflight))
			continue;
		if (now - r->err_since_ns <= FLUSH_DEADLINE_NS) {
			r->err_late_steps = 0;
		} else if (++r->err_late_steps > FLUSH_LATE_STEPS) {
			WALK_FAIL(c,
				  "QP %u still has %d send and %d receive WRs 3 s after entering ERR (they "
				  "must flush)",
				  r->qp->qp_num, r->send_inflight, r->recv_inflight);
			r->err_since_ns = 0;
		}
	}
}

/* ---- updates from other clients ---- */

static int qp_by_num(struct walk_client *c, uint32_t qpn)
{
	for (int q = 0; q < MAX_QP; q++)
		if (c->qp[q].used && c->qp[q].qp->qp_num == qpn)
			return q;
	return -1;
}

static void on_rc_request(struct walk_client *c, const struct walk_msg *m)
{
	struct walk_msg reply = {.type = MSG_RC_REPLY, .dst = m->src, .peer_qpn = m->qpn};
	int q = -1;

	/* Responders may exceed the initiator bound; only the table limits them. */
	for (int i = 0; i < MAX_QP && q < 0; i++)
		if (!c->qp[i].used)
			q = i;
	if (q >= 0 && (q = walk_create_rc_responder(c, m->bytes)) >= 0) {
		c->qp[q].access = (uint32_t)walk_remote_access(c);
		c->qp[q].peer_access = m->access & QP_ACCESS;
	}
	if (q >= 0 && walk_qp_to(c, c->qp[q].qp, IBV_QPS_RTS, 0, c->qp[q].access, m->src, m->qpn) != 0) {
		walk_destroy_qp_rec(c, q);
		q = -1;
	}
	if (q >= 0) {
		struct qp_rec *r = &c->qp[q];

		r->peer = m->src;
		r->peer_qpn = m->qpn;
		r->peer_pd = m->pd_id;
		r->state = QP_CONNECTING; /* usable once the initiator says RC_READY */
		reply.qpn = r->qp->qp_num;
		reply.pd_id = c->pd[r->pd].id;
		reply.access = r->access;
	}
	LOG(c, "c%d rc request from c%d qp=%u -> %s qp=%u", c->id, m->src, m->qpn,
	    q >= 0 ? "accepted" : "refused", reply.qpn);
	walk_publish(c, &reply);
}

static void on_rc_reply(struct walk_client *c, const struct walk_msg *m)
{
	struct walk_msg ready = {.type = MSG_RC_READY, .dst = m->src, .peer_qpn = m->qpn};
	int q = qp_by_num(c, m->peer_qpn), rc;
	struct qp_rec *r;

	if (q < 0 || !c->qp[q].initiator || c->qp[q].state != QP_CONNECTING || c->qp[q].peer != m->src)
		return;
	r = &c->qp[q];
	if (!m->qpn) {
		c->stats.errors[ACT_CREATE_RC_QP_PAIR]++;
		r->state = QP_ERR;
		r->down_sent = true;
		return;
	}
	r->peer_qpn = m->qpn;
	r->peer_pd = m->pd_id;
	r->peer_access = m->access & QP_ACCESS;
	rc = walk_qp_to(c, c->qp[q].qp, IBV_QPS_RTS, 0, c->qp[q].access, m->src, m->qpn);
	LOG(c, "c%d rc reply from c%d: qp %u <-> %u -> %d", c->id, m->src, r->qp->qp_num, m->qpn, rc);
	if (rc) {
		c->stats.errors[ACT_CREATE_RC_QP_PAIR]++;
		r->state = QP_ERR;
		r->err_since_ns = clock_ns();
		ready.type = MSG_RC_DOWN;
		r->down_sent = true;
	} else {
		c->stats.ok[ACT_CREATE_RC_QP_PAIR]++;
		r->state = QP_READY;
	}
	ready.qpn = r->qp->qp_num;
	walk_publish(c, &ready);
}

static void add_rkey(struct walk_client *c, const struct walk_msg *m)
{
	for (int i = 0; i < MAX_REMOTE_KEYS; i++)
		if (!c->rkeys[i].used) {
			c->rkeys[i] = (struct rkey_rec){.used = true,
							.owner = m->src,
							.kind = m->kind,
							.rkey = m->rkey,
							.pd_id = m->pd_id,
							.qpn = m->qpn,
							.off = m->bytes,
							.addr = m->addr,
							.len = m->length,
							.event = m->event,
							.access = m->access};
			return;
		}
}

static void remove_rkey(struct walk_client *c, const struct walk_msg *m)
{
	for (int i = 0; i < MAX_REMOTE_KEYS; i++)
		if (c->rkeys[i].used && c->rkeys[i].owner == m->src && c->rkeys[i].rkey == m->rkey)
			c->rkeys[i].used = false;
	if (c->cfg->verify && rng_bernoulli(&c->rng, PROBE_PROBABILITY))
		walk_post_probe(c, m);
}

static void handle_msg(struct walk_client *c, const struct walk_msg *m)
{
	int q;

	switch (m->type) {
	case MSG_ADD_RKEY:
		add_rkey(c, m);
		break;
	case MSG_REMOVE_RKEY:
		remove_rkey(c, m);
		break;
	case MSG_RC_REQUEST:
		on_rc_request(c, m);
		break;
	case MSG_RC_REPLY:
		on_rc_reply(c, m);
		break;
	case MSG_RC_READY:
		q = qp_by_num(c, m->peer_qpn);
		if (q >= 0 && c->qp[q].peer == m->src && c->qp[q].peer_qpn == m->qpn &&
		    c->qp[q].state == QP_CONNECTING)
			c->qp[q].state = QP_READY;
		break;
	case MSG_RC_DOWN:
		q = qp_by_num(c, m->peer_qpn);
		if (q >= 0 && c->qp[q].type == IBV_QPT_RC && c->qp[q].peer == m->src &&
		    (c->qp[q].state == QP_READY || c->qp[q].state == QP_CONNECTING)) {
			c->qp[q].state = QP_PEER_DOWN;
			c->qp[q].credit_count = 0;
		}
		break;
	case MSG_ADD_UD_QP: {
		int free_i = -1;

		for (int i = 0; i < MAX_REMOTE_UD; i++) {
			struct rud_rec *u = &c->ruds[i];

			if (u->used && u->owner == m->src && u->qpn == m->qpn) { /* a new Q_Key (modify.c) */
				u->changed = u->qkey != m->qkey;
				u->prev_qkey = u->qkey;
				u->qkey = m->qkey;
				free_i = -2;
				break;
			}
			if (!u->used && free_i == -1)
				free_i = i;
		}
		if (free_i >= 0)
			c->ruds[free_i] =
			    (struct rud_rec){.used = true, .owner = m->src, .qpn = m->qpn, .qkey = m->qkey};
		break;
	}
	case MSG_REMOVE_UD_QP:
		for (int i = 0; i < MAX_REMOTE_UD; i++)
			if (c->ruds[i].used && c->ruds[i].owner == m->src && c->ruds[i].qpn == m->qpn)
				c->ruds[i].used = false;
		break;
	case MSG_PROBE_HIT:
		walk_probe_hit(c, m);
		break;
	case MSG_RC_ACCESS: /* from now on the peer QP refuses what it no longer grants */
		if ((q = qp_by_num(c, m->peer_qpn)) >= 0 && c->qp[q].peer == m->src &&
		    c->qp[q].peer_qpn == m->qpn)
			c->qp[q].peer_access &= m->access;
		break;
	case MSG_CREDIT:
		q = qp_by_num(c, m->peer_qpn);
		if (q >= 0 && c->qp[q].peer == m->src && c->qp[q].peer_qpn == m->qpn &&
		    (c->qp[q].state == QP_READY || c->qp[q].state == QP_CONNECTING) &&
		    c->qp[q].credit_count < CREDITS) {
			struct qp_rec *r = &c->qp[q];

			r->credit[(r->credit_head + r->credit_count) % CREDITS] = m->bytes;
			r->credit_count++;
		}
		break;
	}
}

void walk_client_take_messages(struct walk_client *c)
{
	struct walk_msg m;

	while (walk_bus_recv(c->bus, c->id, &m) == 0)
		if (walk_msg_valid(&m, c->clients) && m.dst == c->id)
			handle_msg(c, &m);
}

/* ---- the walk ---- */

static int bootstrap(struct walk_client *c)
{
	static const struct {
		enum walk_action a;
		int n;
	} boot[] = {{ACT_CREATE_CQ, MIN_CQ},
		    {ACT_ALLOC_PD, MIN_PD},
		    {ACT_REG_MR, MIN_MR},
		    {ACT_ALLOC_MW_TYPE1, MIN_MW},
		    {ACT_ALLOC_MW_TYPE2, MIN_MW}};

	for (size_t i = 0; i < sizeof(boot) / sizeof(boot[0]); i++) {
		if (boot[i].a == ACT_ALLOC_MW_TYPE2 && !c->type2)
			continue;
		for (int k = 0; k < boot[i].n; k++) {
			uint64_t before = c->stats.ok[boot[i].a];

			walk_do_action(c, boot[i].a);
			if (c->stats.ok[boot[i].a] == before)
				return -1;
		}
	}
	return 0;
}

static bool sends_outstanding(struct walk_client *c)
{
	for (int q = 0; q < MAX_QP; q++)
		if (c->qp[q].used && c->qp[q].send_inflight)
			return true;
	return false;
}

/* Waits (bounded) for every send-side WR: makes single-client steps repeatable. */
static void quiesce_sends(struct walk_client *c, uint64_t timeout_ns)
{
	uint64_t end = clock_ns() + timeout_ns;

	while (sends_outstanding(c) && clock_ns() < end) {
		if (!poll_all(c))
			sched_yield();
		walk_flush_outbox(c);
	}
}

/* Serves the next owed draw (round robin) that can run now; true if one ran. */
static bool serve_owed(struct walk_client *c)
{
	for (int k = 0; k < ACT_COUNT; k++) {
		int a = (c->owed_next + k) % ACT_COUNT;

		if (c->owed[a] && walk_do_action(c, (enum walk_action)a)) {
			c->owed[a]--;
			c->owed_next = (a + 1) % ACT_COUNT;
			return true;
		}
	}
	return false;
}

/*
 * --multinode on fewer CPUs than clients: a never-blocking client left to the scheduler ran for milliseconds
 * while the others waited, so updates came later than a QP pair lives and most work went to pairs already
 * gone.  Each runs PACE_RUN_NS, then sleeps to its share of the CPUs (walk_pace_for); sleeps, as under EEVDF
 * a client yielding every 200 us starved for seconds.
 */
static void pace(struct walk_client *c)
{
	struct timespec pause = {0, (long)c->pause_ns};

	if (!c->pause_ns || clock_ns() - c->last_pause_ns < PACE_RUN_NS)
		return;
	nanosleep(&pause, NULL);
	c->last_pause_ns = clock_ns();
}

uint64_t walk_pace_for(int clients, long cpus)
{
	if (cpus < 1 || clients <= cpus)
		return 0;
	return PACE_RUN_NS * (uint64_t)(clients - cpus) / (uint64_t)cpus;
}

static void one_step(struct walk_client *c)
{
	int a = rng_weighted(&c->rng, c->weight, ACT_COUNT);

	walk_client_take_messages(c);
	c->seq++;
	/*
	 * A drawn action that can neither run nor be stepped toward is owed (a redraw alone shifts the mix
	 * toward the cheap actions while the state blocks the others); every few steps one owed draw is
	 * served first.
	 */
	if (!(c->seq % OWED_RETRY_STEPS) && serve_owed(c))
		a = -1;
	for (int tries = 0; a >= 0 && tries < MAX_REDRAWS; tries++) {
		if (walk_do_action(c, (enum walk_action)a))
			break;
		if (c->owed[a] < OWED_MAX)
			c->owed[a]++;
		if (walk_toward(c, (enum walk_action)a))
			break;
		c->stats.redraws[a]++;
		a = rng_weighted(&c->rng, c->weight, ACT_COUNT);
	}
	walk_probe_step(c);
	walk_devprobe_step(c);
	walk_modify_step(c);
	poll_all(c);
	walk_flush_outbox(c);
	check_flush_deadlines(c);
	if (c->lockstep)
		quiesce_sends(c, 2000000000ULL);
	else
		pace(c);
}

static void move_all_to_error(struct walk_client *c)
{
	for (int q = 0; q < MAX_QP; q++) {
		struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};
		struct qp_rec *r = &c->qp[q];

		if (!r->used || r->state == QP_ERR)
			continue;
		if (hw_modify_qp(r->qp, &attr, IBV_QP_STATE) == 0) {
			r->state = QP_ERR;
			r->err_since_ns = clock_ns();
		}
	}
}

static void destroy_failed(struct walk_client *c, const char *what, int rc)
{
	c->stats.destroy_failures++;
	WALK_FAIL(c, "at shutdown %s returned %d (%s)", what, rc, strerror(rc));
}

/* Destroys everything in dependency order; every destroy must return 0. */
static void teardown(struct walk_client *c)
{
	uint64_t end = clock_ns() + DRAIN_TIMEOUT_NS;
	int rc;

	walk_devprobe_end(c);
	move_all_to_error(c);
	/* receives posted to an SRQ stay there: only the QPs' own WRs flush */
	while (c->inflight > c->srq_posted && clock_ns() < end)
		if (!poll_all(c))
			sched_yield();
	if (c->inflight > c->srq_posted && !c->cfg->allow_outstanding_ops)
		WALK_FAIL(c, "%d WRs never completed within 5 s of their QP entering ERR",
			  c->inflight - c->srq_posted);
	poll_all(c); /* the last receives the QPs took from SRQs, while the QPs live */
	for (int i = 0; i < 2 * MAX_MW; i++)
		if (c->mw[i].used && (rc = hw_dealloc_mw(c->mw[i].mw)))
			destroy_failed(c, "ibv_dealloc_mw", rc);
	for (int q = 0; q < MAX_QP; q++)
		if (c->qp[q].used) {
			c->qp[q].type2_bound = 0;
			c->qp[q].down_sent = true;
			if ((rc = hw_destroy_qp(c->qp[q].qp)))
				destroy_failed(c, "ibv_destroy_qp", rc);
		}
	for (int i = 0; i < MAX_SRQ; i++)
		if (c->srq[i].used) {
			if ((rc = hw_destroy_srq(c->srq[i].srq)))
				destroy_failed(c, "ibv_destroy_srq", rc);
			walk_srq_orphan(c, i);
		}
	for (int i = 0; i < MAX_AH; i++)
		if (c->ah[i].used && (rc = hw_destroy_ah(c->ah[i].ah)))
			destroy_failed(c, "ibv_destroy_ah", rc);
	for (int i = 0; i < MAX_MR; i++)
		if (c->mr[i].used && (rc = hw_dereg_mr(c->mr[i].mr)))
			destroy_failed(c, "ibv_dereg_mr", rc);
	for (int i = 0; i < MAX_PD; i++)
		if (c->pd[i].used && (rc = walk_msg_mr_dereg(c, i)))
			destroy_failed(c, "ibv_dereg_mr (message cells)", rc);
		else if (c->pd[i].used && (rc = hw_dealloc_pd(c->pd[i].pd)))
			destroy_failed(c, "ibv_dealloc_pd", rc);
	for (int i = 0; i < MAX_CQ; i++)
		if (c->cq[i].used && (rc = hw_destroy_cq(c->cq[i].cq)))
			destroy_failed(c, "ibv_destroy_cq", rc);
	memset(c->mw, 0, sizeof(c->mw));
	memset(c->qp, 0, sizeof(c->qp));
	memset(c->ah, 0, sizeof(c->ah));
	memset(c->srq, 0, sizeof(c->srq));
	memset(c->mr, 0, sizeof(c->mr));
	memset(c->pd, 0, sizeof(c->pd));
	memset(c->cq, 0, sizeof(c->cq));
}

int walk_client_run(struct walk_client *c)
{
	uint64_t start = clock_ns(), end = start + (uint64_t)c->cfg->duration_s * 1000000000ULL;
	uint64_t steps = 0;

	c->lockstep = c->clients == 1 || c->cfg->steps;
	if (bootstrap(c)) {
		WALK_FAIL(c, "cannot create the minimum objects (CQs, PDs, MRs, MWs)");
	} else {
		while (!atomic_load_explicit(c->stop, memory_order_relaxed) &&
		       (c->cfg->steps ? steps < c->cfg->steps : clock_ns() < end)) {
			one_step(c);
			steps++;
			/* the free pages the device's short-lived blocks leave in every thread's heap arena,
			 * given back now and then (else RSS creeps) */
			if (steps % TRIM_STEPS == 0)
				malloc_trim(0);
			atomic_store_explicit(&c->live_steps, steps, memory_order_relaxed);
		}
	}
	c->stats.steps = steps;
	c->stats.seconds = (double)(clock_ns() - start) / 1e9;
	c->stats.alive_end = walk_objects_alive(c);
	/* Phase 1: stop issuing, let handshakes and sends finish, then wait for all. */
	quiesce_sends(c, 2000000000ULL);
	walk_client_take_messages(c);
	walk_flush_outbox(c);
	c->barrier(c);
	/* Phase 2: nobody issues any more; updates are moot. */
	walk_bus_close_inbox(c->bus, c->id);
	teardown(c);
	return c->stats.nfailures ? 1 : 0;
}

void walk_client_close(struct walk_client *c)
{
	if (c->ctx)
		hw_close_device(c->ctx);
	c->ctx = NULL;
	free(c->buf);
	free(c->wr);
	free(c->free_wr);
	free(c->outbox);
	stats_entry_remove(c->counters);
	c->counters = NULL;
	c->buf = NULL;
	c->wr = NULL;
	c->free_wr = NULL;
	c->outbox = NULL;
}
