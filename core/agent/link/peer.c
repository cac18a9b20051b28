/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The peer table (link_impl.h): names, addresses, state; a peer going down.  It calls nothing above it. */
#include "core/agent/link/link_impl.h"

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

/*
 * A peer went down: its table entry only (connection, state, bindings, epoch); what the layers
 * above hold for it (queues, requests, reads) goes through lk->peer_gone, which the top sets.
 */
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
	/* Ports are bound again after a rejoin. */
	memset(p->bind_out, 0, PORT_BINDINGS * sizeof(*p->bind_out));
	memset(p->bind_in, 0, PORT_BINDINGS * sizeof(*p->bind_in));
	/* Requests from it can no longer be answered (a deposited message stays where it is). */
	p->epoch++;
	if (lk->peer_gone)
		lk->peer_gone(lk, rank);
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
