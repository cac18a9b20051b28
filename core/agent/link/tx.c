/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The links' sending side: eager buffers, large frames, aggregation, posting, peers' queues (link_impl.h). */
#include "core/agent/link/link_impl.h"

/*
 * Frees a unit that is not in flight: a block goes back to the pool; one from
 * the heap (the pool ran out) drops its MR cache registration first, as core
 * requires of memory a send used (core/transport/endpoint.h).
 */
void link_unit_free(struct agent_links *lk, struct unit *u)
{
	size_t len =
	    u->kind == UNIT_LARGE ? sizeof(struct large) + ((struct large *)u)->len : sizeof(struct txbuf);

	if (pool_give(u->kind == UNIT_LARGE ? &lk->pool.frames : &lk->pool.tx, u))
		return;
	if (lk->ep)
		core_mr_dereg(lk->ep, u, len);
	free(u);
}

void link_unit_release(struct agent_links *lk, struct unit *u)
{
	for (int k = 0; k < FLOW_NKINDS; k++) {
		flow_give(&lk->flow[k], u->charge[k]);
		u->charge[k] = 0;
	}
}

/* Posts the units queued for rank, in order, as far as the link allows; returns how many. */
static int post_units(struct agent_links *lk, uint32_t rank, int max)
{
	struct link_peer *p = &lk->peers[rank];
	int n = 0;

	while (p->post_head && n < max) {
		struct unit *u = p->post_head;
		bool large = u->kind == UNIT_LARGE;
		int rc;

		/*
		 * Core delivers messages up to its eager limit in order, and rendezvous ones in order, but a
		 * rendezvous message completes at the target after an eager one sent later: the two are
		 * never in flight together, so items keep their order.
		 */
		u->rndv = large && ((struct large *)u)->len > lk->core_eager_max;
		if (u->rndv ? p->eager_out > 0 : p->rndv_out > 0)
			break;
		if (large) {
			struct large *f = (struct large *)u;

			rc = core_tsend(lk->ep, p->core_peer, f->frame, f->len,
					LINK_TAG_LARGE | p->tx_seq << LINK_TAG_SEQ_SHIFT, u);
		} else {
			struct txbuf *b = (struct txbuf *)u;

			rc = core_tsend(lk->ep, p->core_peer, b->agg.data, b->agg.used,
					LINK_TAG_EAGER | p->tx_seq << LINK_TAG_SEQ_SHIFT, u);
		}
		if (rc) {
			if (rc != -EAGAIN) {
				p->stats.last_error = rc;
				link_peer_down(lk, rank, "a send on it failed");
			}
			break; /* -EAGAIN: no credit or request now; completions will free some */
		}
		lk->nic_bytes += large ? ((struct large *)u)->len : ((struct txbuf *)u)->agg.used;
		p->tx_seq++;
		p->post_head = u->next;
		if (!p->post_head)
			p->post_tail = &p->post_head;
		u->next = NULL;
		if (u->rndv)
			p->rndv_out++;
		else
			p->eager_out++;
		if (large) {
			p->stats.large_sent++;
		} else {
			p->stats.buffers_sent++;
			p->stats.buffer_items_sent += ((struct txbuf *)u)->agg.items;
		}
		n++;
	}
	return n;
}

static void queue_unit(struct link_peer *p, struct unit *u)
{
	u->next = NULL;
	*p->post_tail = u;
	p->post_tail = &u->next;
}

/* The buffer being filled goes into the post queue. */
void link_close_open(struct link_peer *p)
{
	if (!p->open)
		return;
	p->open->busy = true;
	queue_unit(p, &p->open->u);
	p->open = NULL;
}

/* The buffer being filled, taking a free one when none is; NULL when all are busy. */
static struct txbuf *open_buffer(struct link_peer *p)
{
	if (p->open)
		return p->open;
	for (int i = 0; i < LINK_TX_BUFS; i++)
		if (!p->tx[i]->busy) {
			p->open = p->tx[i];
			agg_reset(&p->open->agg);
			return p->open;
		}
	return NULL;
}

/* A large frame into the post queue, behind the buffer being filled. */
static int queue_large(struct agent_links *lk, uint32_t rank, const struct proto_header *h, const void *body,
		       size_t len, enum flow_kind kind, uint64_t charge)
{
	struct link_peer *p = &lk->peers[rank];
	struct large *f = PROTO_HEADER_SIZE + len <= LINK_LARGE_MAX ? pool_take(&lk->pool.frames) : NULL;

	if (!f && !(f = malloc(sizeof(*f) + PROTO_HEADER_SIZE + len)))
		return -ENOMEM;
	f->u = (struct unit){.kind = UNIT_LARGE, .rank = rank};
	f->u.charge[kind] = charge;
	f->len = PROTO_HEADER_SIZE + len;
	proto_header_encode(h, f->frame);
	memcpy(f->frame + PROTO_HEADER_SIZE, body, len);
	lk->copied += len;
	link_close_open(p);
	queue_unit(p, &f->u);
	p->stats.msgs_sent++;
	p->stats.bytes_sent += f->len;
	return 0;
}

/* Packs one eager item: 0, or -ENOSPC when no eager buffer has room now. */
static int pack_eager(struct agent_links *lk, uint32_t rank, const struct proto_header *h, const void *data,
		      enum flow_kind kind, uint64_t charge)
{
	struct link_peer *p = &lk->peers[rank];

	for (int tries = 0; tries < 2; tries++) {
		struct txbuf *b = open_buffer(p);
		int rc;

		if (!b)
			return -ENOSPC;
		rc = agg_add(&b->agg, h, data);
		if (rc == 0) {
			lk->copied += h->eager_size;
			b->u.charge[kind] += charge;
			p->stats.msgs_sent++;
			p->stats.bytes_sent += PROTO_HEADER_SIZE + h->eager_size;
			if (b->agg.items >= b->agg.max_items)
				link_close_open(p); /* full by count: no reason to wait */
			return 0;
		}
		if (rc != -ENOSPC)
			return rc;
		link_close_open(p); /* full: the next buffer */
	}
	return -ENOSPC;
}

/*
 * Sends one item to rank: eager (its data in h->eager_size bytes) when it
 * fits an eager buffer with its header, else as a large frame of its own
 * (h->eager_size 0, protocol p2p).  Items keep their order per peer: behind
 * the ones still waiting for room.  Returns 0 when the item is on the link
 * (packed or queued to post), -EINPROGRESS when it waits for room (token, if
 * any, is finished with status 0 once it is on the link), or a negative errno.
 */
int link_tx_item(struct agent_links *lk, uint32_t rank, struct proto_header h, const void *body, size_t len,
		 uint64_t token, enum flow_kind kind, uint64_t charge)
{
	struct link_peer *p = &lk->peers[rank];
	bool large = h.protocol == PROTO_P2P || PROTO_HEADER_SIZE + len > PROTO_EAGER_BUFFER;
	struct waiting *w;

	if (!p->up)
		return -EHOSTDOWN;
	flow_take(&lk->flow[kind], charge); /* given back once sent (link_unit_release), or when dropped */
	if (large) {
		h.eager_size = 0;
		h.protocol = PROTO_P2P;
	} else {
		h.eager_size = (uint16_t)len;
	}
	if (!p->wait_head) {
		int rc = large ? queue_large(lk, rank, &h, body, len, kind, charge)
			       : pack_eager(lk, rank, &h, body, kind, charge);

		if (rc && rc != -ENOSPC)
			flow_give(&lk->flow[kind], charge); /* neither on the link nor waiting */
		if (rc != -ENOSPC)
			return rc;
	}
	w = malloc(sizeof(*w) + len);
	if (!w) {
		flow_give(&lk->flow[kind], charge);
		return -ENOMEM;
	}
	*w = (struct waiting){
	    .h = h, .token = token, .len = len, .large = large, .kind = kind, .charge = charge};
	memcpy(w->data, body, len);
	lk->copied += len;
	*p->wait_tail = w;
	p->wait_tail = &w->next;
	p->nwaiting++;
	if (p->nwaiting > p->stats.waiting_hwm)
		p->stats.waiting_hwm = p->nwaiting;
	return -EINPROGRESS;
}

/* Moves waiting items onto the link while there is room. */
static int drain_waiting(struct agent_links *lk, uint32_t rank)
{
	struct link_peer *p = &lk->peers[rank];
	int n = 0;

	while (p->wait_head) {
		struct waiting *w = p->wait_head;
		int rc = w->large ? queue_large(lk, rank, &w->h, w->data, w->len, w->kind, w->charge)
				  : pack_eager(lk, rank, &w->h, w->data, w->kind, w->charge);

		if (rc == -ENOSPC)
			break;
		if (rc)
			flow_give(&lk->flow[w->kind], w->charge);
		p->wait_head = w->next;
		if (!p->wait_head)
			p->wait_tail = &p->wait_head;
		p->nwaiting--;
		if (w->token != LINK_NO_TOKEN && lk->cfg.done)
			lk->cfg.done(lk->cfg.arg, w->token, rc, NULL, 0);
		free(w);
		n++;
	}
	return n;
}

/*
 * The buffer being filled holds a single item, and nothing else is queued,
 * waiting or in flight to the peer: nothing will keep it company soon, since
 * company comes with a backlog.  Waiting for its idle passes would only add
 * latency (a request, or its answer, in a ping-pong).
 */
bool link_lone_on_idle_link(const struct link_peer *p)
{
	return p->open && p->open->agg.items == 1 && !p->post_head && !p->eager_out && !p->rndv_out &&
	       !p->wait_head;
}

/*
 * Rank's items that waited for room go into buffers; a buffer idle for two
 * passes closes, and so does a lone item on an idle link at the end of the
 * pass that added it.
 */
static int tx_prepare(struct agent_links *lk, uint32_t rank)
{
	struct link_peer *p = &lk->peers[rank];
	int n;

	if (!p->up)
		return 0;
	n = drain_waiting(lk, rank);
	if (p->open && (agg_pass(&p->open->agg) || link_lone_on_idle_link(p)))
		link_close_open(p);
	return n;
}

/* Posts what is queued: strip mining (strip.h), one unit per target per round. */
int link_tx_post(struct agent_links *lk)
{
	uint32_t order[GW_MAX_NODES];
	int work = 0, n;

	do {
		n = 0;
		strip_order(&lk->strip, lk->cfg.nodes, order);
		for (uint32_t i = 0; i < lk->cfg.nodes; i++)
			if (lk->peers[order[i]].up)
				n += post_units(lk, order[i], 1);
		work += n;
	} while (n);
	return work;
}

/* One progress pass over the sending side. */
int link_tx_progress(struct agent_links *lk)
{
	int work = 0;

	for (uint32_t r = 0; r < lk->cfg.nodes; r++)
		work += tx_prepare(lk, r);
	return work + link_tx_post(lk);
}

void link_send_done(struct agent_links *lk, struct unit *u, const struct core_cqe *e)
{
	struct link_peer *p = &lk->peers[u->rank];

	link_unit_release(lk, u);
	if (u->orphan) {
		link_unit_free(lk, u);
		return;
	}
	if (u->rndv)
		p->rndv_out--;
	else
		p->eager_out--;
	if (u->kind == UNIT_LARGE)
		link_unit_free(lk, u);
	else
		((struct txbuf *)u)->busy = false;
	if (e->status != IBV_WC_SUCCESS || e->err)
		p->stats.last_error = e->err ? e->err : -EIO;
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

/* A fresh set of eager buffers for a peer (the old ones may still be in flight on a dead link). */
int link_peer_tx_init(struct agent_links *lk, uint32_t rank)
{
	struct link_peer *p = &lk->peers[rank];

	for (int i = 0; i < LINK_TX_BUFS; i++) {
		struct txbuf *b = p->tx[i];

		if (b && b->busy) {
			b->u.orphan = true; /* its completion frees it */
			b = NULL;
		}
		if (!b && !(b = pool_take(&lk->pool.tx)) && !(b = calloc(1, sizeof(*b))))
			return -ENOMEM;
		link_unit_release(lk, &b->u);
		b->u = (struct unit){.kind = UNIT_EAGER, .rank = rank};
		b->busy = false;
		agg_init(&b->agg, lk->max_items);
		p->tx[i] = b;
	}
	p->open = NULL;
	p->post_head = NULL;
	p->post_tail = &p->post_head;
	p->eager_out = p->rndv_out = 0;
	p->tx_seq = 0;
	return 0;
}
