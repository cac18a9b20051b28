/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Links between agents (link.h), the top: the progress pass and its dispatch, stats and sleeping. */
#include "core/agent/link/link_impl.h"

#define LINK_OOB_CHECK_NS    5000000ull	  /* accepting, and noticing a peer that died */
#define LINK_ORPHAN_CHECK_NS 100000000ull /* GETMSGs of clients that died */

/* The progress pass's dispatch of what rx reads: requests to the target side, answers to the origin. */
static void take_item(struct agent_links *lk, uint32_t from, const struct proto_header *h,
		      const uint8_t *body, size_t len)
{
	if (h->type == PROTO_CONNECT)
		link_take_connect(lk, from, h, body, len);
	else if (h->type == PROTO_CANCEL)
		link_take_cancel(lk, from, h);
	else if (h->type <= PROTO_POLL)
		link_take_request(lk, from, h, body, len);
	else
		link_take_answer(lk, from, h, body, len);
}

/* A READ finished: one stolen for a sibling goes back to its board, one of ours into its message. */
static void read_done(struct agent_links *lk, struct rma_read *rd, const struct core_cqe *e)
{
	int status = e->status == IBV_WC_SUCCESS && !e->err ? 0 : e->err ? e->err : -EIO;

	if (rd->board)
		link_steal_complete(lk, rd, status);
	else
		link_read_complete(lk, rd, status);
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
				link_rx_complete(lk, &e[i], take_item);
			else if ((e[i].flags & CORE_CQE_SEND) && e[i].context)
				link_send_done(lk, e[i].context, &e[i]);
			else if ((e[i].flags & CORE_CQE_READ) && e[i].context)
				read_done(lk, e[i].context, &e[i]);
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
