/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Links between agents (link.h): peers going down, the progress pass, stats and sleeping. */
#include "core/agent/link/link_impl.h"

#define LINK_OOB_CHECK_NS    5000000ull	  /* accepting, and noticing a peer that died */
#define LINK_ORPHAN_CHECK_NS 100000000ull /* GETMSGs of clients that died */

/* A link rank as the user knows it: the node's rank, and "R.S" when the node runs several agents. */
const char *link_peer_name(const struct agent_links *lk, uint32_t rank, char *out, size_t len)
{
	uint32_t n = lk->cfg.siblings ? lk->cfg.siblings : 1;

	agent_id_text(agent_id(rank / n, rank % n), out, len);
	return out;
}

void link_peer_addr(struct agent_links *lk, uint32_t rank, char *out, size_t len)
{
	uint16_t port = lk->cfg.ports && lk->cfg.ports[rank] ? lk->cfg.ports[rank] : LINK_DEFAULT_PORT;

	snprintf(out, len, "%s:%u", lk->cfg.hosts[rank], (unsigned)port);
}

void link_finish_origin(struct agent_links *lk, uint32_t idx, int status, const void *data, size_t len)
{
	struct origin *o = &lk->origins[idx];

	o->used = false;
	if (status < 0)
		lk->peers[o->node].stats.last_error = status;
	if (o->token != LINK_NO_TOKEN && lk->cfg.done)
		lk->cfg.done(lk->cfg.arg, o->token, status, data, len);
	if (o->answer)
		flow_give(&lk->flow[FLOW_HEAP], o->answer_total);
	free(o->answer);
	o->answer = NULL;
}

/* Drops what waits to go to rank: the requests among it fail with status. */
void link_drop_waiting(struct agent_links *lk, uint32_t rank, int status)
{
	struct link_peer *p = &lk->peers[rank];

	while (p->wait_head) {
		struct waiting *w = p->wait_head;

		p->wait_head = w->next;
		if (w->token != LINK_NO_TOKEN && lk->cfg.done)
			lk->cfg.done(lk->cfg.arg, w->token, status, NULL, 0);
		flow_give(&lk->flow[w->kind], w->charge);
		free(w);
	}
	p->wait_tail = &p->wait_head;
	p->nwaiting = 0;
	/* Units queued to post never went out: free large frames, mark the buffers free again. */
	for (struct unit *u = p->post_head, *next; u; u = next) {
		next = u->next;
		link_unit_release(lk, u);
		if (u->kind == UNIT_LARGE)
			link_unit_free(lk, u);
		else
			((struct txbuf *)u)->busy = false;
	}
	p->post_head = NULL;
	p->post_tail = &p->post_head;
}

/* A target item that may still have reads landing in it: freed by the last one then. */
void link_target_free(struct target_item *t)
{
	if (t && t->reads_left)
		t->orphan = true;
	else
		link_target_destroy(t);
}

/* Frees a target item and its large message's buffer, which the heap gauge gets back. */
void link_target_destroy(struct target_item *t)
{
	if (t && t->big) {
		free(t->big);
		flow_give(t->heap, t->big_len);
	}
	free(t);
}

/*
 * Takes a large message's buffer when it has none yet: 0 (also when it needs
 * none), -EAGAIN while the heap gauge has no room (try again once a message
 * left), -ENOMEM.
 */
int link_target_reserve(struct target_item *t)
{
	if (t->big || !t->big_len)
		return 0;
	if (!flow_fits(t->heap, t->big_len))
		return -EAGAIN;
	t->big = malloc(t->big_len);
	if (!t->big)
		return -ENOMEM;
	flow_take(t->heap, t->big_len);
	return 0;
}

void link_drop_reasm(struct agent_links *lk, uint32_t from, bool all)
{
	for (struct reasm **pp = &lk->reasm; *pp;) {
		struct reasm *r = *pp;

		if (all || r->from == from) {
			*pp = r->next;
			lk->reasm_bytes -= r->t ? r->total : 0;
			link_target_free(r->t);
			free(r);
		} else {
			pp = &r->next;
		}
	}
}

/* READs not posted yet, from rank (or all): never will be; their messages lose a reader. */
void link_drop_reads(struct agent_links *lk, uint32_t from, bool all)
{
	for (struct rma_read **pp = &lk->reads_waiting; *pp;) {
		struct rma_read *rd = *pp;

		if (all || rd->from == from) {
			*pp = rd->next;
			rd->t->read_status = -EHOSTDOWN;
			if (--rd->t->reads_left == 0 && rd->t->orphan)
				link_target_destroy(rd->t);
			free(rd);
		} else {
			pp = &rd->next;
		}
	}
	lk->reads_tail = &lk->reads_waiting;
	while (*lk->reads_tail)
		lk->reads_tail = &(*lk->reads_tail)->next;
}

void link_peer_down(struct agent_links *lk, uint32_t rank, const char *why)
{
	struct link_peer *p = &lk->peers[rank];
	char name[32];

	if (p->oob)
		oob_close(p->oob);
	p->oob = NULL;
	if (p->up)
		agent_logf(&lk->cfg.log, "link to rank %s (%s) down: %s",
			   link_peer_name(lk, rank, name, sizeof(name)), lk->cfg.hosts[rank], why);
	p->up = false;
	p->next_try_ns = clock_ns() + LINK_RETRY_NS;
	link_drop_waiting(lk, rank, -EHOSTDOWN);
	link_drop_held(lk, rank);
	if (link_peer_tx_init(lk, rank))
		agent_logf(&lk->cfg.log, "out of memory for the eager buffers of rank %u", rank);
	/* Ports are bound again after a rejoin. */
	memset(p->bind_out, 0, PORT_BINDINGS * sizeof(*p->bind_out));
	memset(p->bind_in, 0, PORT_BINDINGS * sizeof(*p->bind_in));
	/*
	 * Requests in flight to it: they may have been done there (a message deposited, or taken by a
	 * GETMSG) with only the answer lost, so "outcome unknown" (-ECONNRESET), never -EHOSTDOWN,
	 * which says nothing was sent (agent.h).
	 */
	for (uint32_t i = 0; i < LINK_ORIGIN_MAX; i++)
		if (lk->origins[i].used && lk->origins[i].node == rank)
			link_finish_origin(lk, i, -ECONNRESET, NULL, 0);
	/* Requests from it can no longer be answered (a deposited message stays where it is). */
	p->epoch++;
	flow_give(&lk->flow[FLOW_INJECTION], pool_give_slots(&lk->pool, rank) * lk->pool.slot_size);
	link_drop_reads(lk, rank, false);
	link_drop_offered(lk, rank, false);
	link_drop_reasm(lk, rank, false);
	for (struct target_item **t = &lk->pending; *t;) {
		if ((*t)->from == rank) {
			struct target_item *dead = *t;

			*t = dead->next;
			link_target_free(dead);
		} else {
			t = &(*t)->next;
		}
	}
	lk->pending_tail = &lk->pending;
	while (*lk->pending_tail)
		lk->pending_tail = &(*lk->pending_tail)->next;
}

bool links_up(struct agent_links *lk, uint32_t node)
{
	return node < lk->cfg.nodes && lk->peers[node].up;
}

void links_peer_stats(struct agent_links *lk, uint32_t node, struct gw_peer_stats *out)
{
	static const struct gw_peer_stats none;
	const struct link_peer *p;

	if (node >= lk->cfg.nodes) {
		*out = none;
		return;
	}
	p = &lk->peers[node];
	*out = p->stats;
	out->eager_in_use = 0;
	for (int i = 0; i < LINK_TX_BUFS; i++)
		out->eager_in_use += p->tx[i] && (p->tx[i]->busy || p->tx[i] == p->open);
	out->waiting = p->nwaiting;
}

int links_progress(struct agent_links *lk)
{
	struct core_cqe e[16];
	uint64_t now = clock_ns();
	int n, work = 0;

	/* Accepting and the death checks are system calls: not on every pass of a busy loop. */
	if (now >= lk->next_oob_check_ns) {
		lk->next_oob_check_ns = now + LINK_OOB_CHECK_NS;
		work += link_connect_peers(lk);
	}
	while ((n = core_cq_read(lk->ep, e, 16)) > 0) {
		work += n;
		for (int i = 0; i < n; i++) {
			if (e[i].flags & CORE_CQE_RECV)
				link_rx_complete(lk, &e[i]);
			else if ((e[i].flags & CORE_CQE_SEND) && e[i].context)
				link_send_done(lk, e[i].context, &e[i]);
			else if ((e[i].flags & CORE_CQE_READ) && e[i].context)
				link_read_complete(lk, e[i].context, &e[i]);
		}
	}
	if (lk->reads_waiting)
		work += link_reads_progress(lk);
	work += link_steal_pass(lk, now);
	if (lk->pending)
		link_serve_pending(lk);
	if (now >= lk->next_orphan_check_ns) {
		lk->next_orphan_check_ns = now + LINK_ORPHAN_CHECK_NS;
		work += link_cancel_orphans(lk);
	}
	return work + link_tx_progress(lk);
}

int links_tx_pass(struct agent_links *lk)
{
	return link_tx_progress(lk);
}

int links_post(struct agent_links *lk)
{
	for (uint32_t r = 0; r < lk->cfg.nodes; r++)
		if (lk->peers[r].up && link_lone_on_idle_link(&lk->peers[r]))
			link_close_open(&lk->peers[r]);
	return link_tx_post(lk);
}

bool links_can_inject(struct agent_links *lk)
{
	return flow_fits(&lk->flow[FLOW_INJECTION], LINK_LARGE_MAX) && (!lk->rma || lk->pool.nfree > 0);
}

void links_agent_stats(struct agent_links *lk, struct gw_agent_stats *out)
{
	struct core_mr_cache_stats mr;

	core_mr_cache_stats(lk->ep, &mr);
	*out = (struct gw_agent_stats){.pool_bytes = lk->pool.len,
				       .pool_slots = lk->pool.nslots,
				       .slots_in_use = lk->pool.nslots - lk->pool.nfree,
				       .slots_hwm = lk->pool.slots_hwm,
				       .hugepages = lk->pool.huge,
				       .hugepages_asked = lk->pool.huge_asked,
				       .tx_buffers = lk->pool.tx.n,
				       .tx_hwm = lk->pool.tx.hwm,
				       .frames = lk->pool.frames.n,
				       .frames_hwm = lk->pool.frames.hwm,
				       .fallbacks = lk->pool.tx.fallbacks + lk->pool.frames.fallbacks,
				       .registrations = mr.misses,
				       .registered_now = mr.entries,
				       .steals = lk->steals,
				       .steal_bytes = lk->steal_bytes,
				       .stolen = lk->stolen,
				       .copied = lk->copied,
				       .nic_bytes = lk->nic_bytes};
}

void links_flow_stats(struct agent_links *lk, struct flow_gauge out[FLOW_NKINDS])
{
	memcpy(out, lk->flow, sizeof(lk->flow));
}

bool links_idle(struct agent_links *lk)
{
	for (uint32_t r = 0; r < lk->cfg.nodes; r++) {
		struct link_peer *p = &lk->peers[r];

		if (p->up && ((p->open && p->open->agg.items) || p->post_head || p->wait_head))
			return false;
	}
	return true;
}

int links_sleep_prepare(struct agent_links *lk, struct pollfd *fds, int max, int *timeout_ms)
{
	int n = 0, fd = core_cq_arm(lk->ep);

	/* A completion that landed before the arming raised no event: look once more. */
	if (fd < 0 || links_progress(lk) || !links_idle(lk))
		return -EAGAIN;
	core_cq_arm(lk->ep); /* looking may have told the device we drive it: it must watch the wire again */
	fds[n++] = (struct pollfd){.fd = fd, .events = POLLIN};
	if (n < max)
		fds[n++] = (struct pollfd){.fd = oob_listener_fd(lk->listener), .events = POLLIN};
	for (uint32_t r = 0; r < lk->cfg.nodes && n < max; r++)
		if (lk->peers[r].up)
			fds[n++] = (struct pollfd){.fd = oob_conn_fd(lk->peers[r].oob), .events = POLLIN};
	/* Handshakes wake us when their next frame comes, and are looked at for their deadlines. */
	n += link_handshake_fds(lk, fds + n, max - n);
	if (link_handshakes_pending(lk) && (*timeout_ms < 0 || *timeout_ms > 50))
		*timeout_ms = 50;
	/* Requests waiting for their channel are tried again, and peers that are down dialled again. */
	if ((lk->pending || lk->stealing || link_offered_any(lk)) && (*timeout_ms < 0 || *timeout_ms > 1))
		*timeout_ms = 1;
	for (uint32_t r = 0; r < lk->cfg.rank; r++)
		if (!lk->peers[r].up && !same_node(lk, r, lk->cfg.rank) &&
		    (*timeout_ms < 0 || *timeout_ms > (int)(LINK_RETRY_NS / 1000000)))
			*timeout_ms = (int)(LINK_RETRY_NS / 1000000);
	return n;
}

void links_sleep_end(struct agent_links *lk, const struct pollfd *fds, int n)
{
	core_cq_ack_events(lk->ep);
	/* The listener or a peer's connection has news: look at the peers on the next pass. */
	for (int i = 1; i < n; i++)
		if (fds[i].revents)
			lk->next_oob_check_ns = 0;
}
