/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The links' receives: read in the order sent, parsed into items for the caller's dispatch (link_impl.h). */
#include "core/agent/link/link_impl.h"

#define LINK_TAG_KIND 0xffull /* the rest of a core tag: the message's sequence number on its link */

uint8_t *link_rx_buf(struct agent_links *lk, int i)
{
	return i < lk->nrx ? lk->rx_pool + (size_t)i * PROTO_EAGER_BUFFER
			   : lk->rx_pool + (size_t)lk->nrx * PROTO_EAGER_BUFFER +
				 (size_t)(i - lk->nrx) * LINK_LARGE_MAX;
}

/* A large receive's bytes count toward the ejection cap while it is posted. */
int link_rx_post(struct agent_links *lk, uint8_t *buf, bool large)
{
	int rc;

	if (!large)
		return core_trecv(lk->ep, buf, PROTO_EAGER_BUFFER, LINK_TAG_EAGER, ~LINK_TAG_KIND, buf);
	if (!flow_fits(&lk->flow[FLOW_EJECTION], LINK_LARGE_MAX))
		return -ENOBUFS;
	rc = core_trecv(lk->ep, buf, LINK_LARGE_MAX, LINK_TAG_LARGE, ~LINK_TAG_KIND, buf);
	if (!rc)
		flow_take(&lk->flow[FLOW_EJECTION], LINK_LARGE_MAX);
	return rc;
}

struct take_ctx {
	struct agent_links *lk;
	uint32_t from;
	link_take_fn *take;
};

static void take_parsed(void *arg, const struct proto_header *h, const uint8_t *data, size_t len)
{
	struct take_ctx *ctx = arg;
	struct link_peer *p = &ctx->lk->peers[ctx->from];

	p->stats.msgs_recv++;
	p->stats.bytes_recv += PROTO_HEADER_SIZE + len;
	ctx->take(ctx->lk, ctx->from, h, data, len);
}

/* A message from a peer: an eager buffer of items, or one large frame (checked by proto_parse). */
static void take_message(struct agent_links *lk, uint32_t core_peer, const uint8_t *buf, size_t len,
			 bool large, link_take_fn *take)
{
	struct take_ctx ctx = {.lk = lk, .take = take};

	for (ctx.from = 0; ctx.from < lk->cfg.nodes; ctx.from++)
		if (lk->peers[ctx.from].up && lk->peers[ctx.from].core_peer == core_peer)
			break;
	if (ctx.from == lk->cfg.nodes)
		return; /* not from a peer we know: dropped */
	if (!large)
		lk->peers[ctx.from].stats.buffers_recv++;
	proto_parse(buf, len, large, take_parsed, &ctx, &lk->errors);
}

/* Reads one received message (if it came whole) and posts its receive again. */
static void rx_done(struct agent_links *lk, uint32_t core_peer, uint8_t *buf, size_t len, bool large, bool ok,
		    link_take_fn *take)
{
	if (ok && take)
		take_message(lk, core_peer, buf, len, large, take);
	if (large)
		flow_give(&lk->flow[FLOW_EJECTION], LINK_LARGE_MAX);
	if (link_rx_post(lk, buf, large))
		agent_logf(&lk->cfg.log, "could not repost a receive buffer");
}

/* Receives held for a peer go back to the device unread (the peer went down or joined again). */
void link_drop_held(struct agent_links *lk, uint32_t rank)
{
	struct link_peer *p = &lk->peers[rank];

	while (p->held) {
		struct held *h = p->held;

		p->held = h->next;
		rx_done(lk, 0, h->buf, 0, h->large, false, NULL);
		free(h);
	}
	p->rx_next = 0;
}

/*
 * A completed receive: read in the order its peer sent it (the sequence number in its tag), its
 * items handed to take (the caller's dispatch: rx only demultiplexes).
 */
void link_rx_complete(struct agent_links *lk, const struct core_cqe *e, link_take_fn *take)
{
	bool large = (e->tag & LINK_TAG_KIND) == LINK_TAG_LARGE;
	/* A message longer than the buffer was cut: never read past the buffer. */
	bool ok =
	    e->status == IBV_WC_SUCCESS && !e->err && e->len <= (large ? LINK_LARGE_MAX : PROTO_EAGER_BUFFER);
	uint64_t seq = e->tag >> LINK_TAG_SEQ_SHIFT;
	struct link_peer *p = NULL;

	for (uint32_t r = 0; r < lk->cfg.nodes && !p && e->status == IBV_WC_SUCCESS; r++)
		if (lk->peers[r].up && lk->peers[r].core_peer == e->peer)
			p = &lk->peers[r];
	if (!p) {
		rx_done(lk, e->peer, e->context, e->len, large, false, take);
		return;
	}
	if (seq != p->rx_next) {
		struct held *h = malloc(sizeof(*h));

		if (h) {
			*h = (struct held){.next = p->held,
					   .seq = seq,
					   .buf = e->context,
					   .len = e->len,
					   .large = large,
					   .ok = ok};
			p->held = h;
			return;
		}
		lk->errors.count[PROTO_ERR_TRUNCATED]++; /* no memory to wait: read out of order */
	}
	rx_done(lk, e->peer, e->context, e->len, large, ok, take);
	p->rx_next = seq + 1;
	for (struct held **pp = &p->held; *pp;) {
		struct held *h = *pp;

		if (h->seq != p->rx_next) {
			pp = &h->next;
			continue;
		}
		*pp = h->next;
		rx_done(lk, e->peer, h->buf, h->len, h->large, h->ok, take);
		p->rx_next++;
		free(h);
		pp = &p->held; /* the next one may sit anywhere in the list */
	}
}
