/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Requests in: whole ones queued, large ones put together from chunks or rma READs (link_impl.h). */
#include "core/agent/link/link_impl.h"

/*
 * The message a chunk belongs to: chunks of one message come in order (one
 * link, the sender's ticket order).  NULL when the chunk is dropped: a piece
 * of a message whose start was lost (answered with -EPROTO if last), or no
 * memory.  *pp is where the message sits in the list.
 */
static struct reasm *reasm_for(struct agent_links *lk, uint32_t from, const struct proto_header *h,
			       const struct proto_chunk *c, bool last, struct reasm ***pp)
{
	struct reasm *r;

	for (*pp = &lk->reasm; **pp; *pp = &(**pp)->next)
		if ((**pp)->from == from && (**pp)->id == c->id)
			return **pp;
	if (c->offset != 0) {
		struct target_item t = {.from = from, .h = *h};

		lk->errors.count[PROTO_ERR_SIZE]++;
		if (last)
			link_answer(lk, &t, -EPROTO, NULL, 0);
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	*r = (struct reasm){.from = from, .id = c->id, .total = c->total, .next = lk->reasm};
	/* Its buffer is taken when the first READ goes (link_target_reserve): READs wait for heap room. */
	if (c->total > AGENT_REMOTE_MAX || c->total > lk->flow[FLOW_HEAP].cap)
		r->status = -EMSGSIZE;
	else if (!(r->t = malloc(sizeof(*r->t))))
		r->status = -ENOMEM;
	else {
		*r->t = (struct target_item){.from = from, .big_len = c->total, .heap = &lk->flow[FLOW_HEAP]};
		lk->reasm_bytes += c->total;
	}
	lk->reasm = r;
	*pp = &lk->reasm;
	return r;
}

/*
 * The last chunk is in: the message becomes a request like any other, with
 * its own header (mode, answer), queued now so it keeps its place among its
 * port's items even while rma reads still fill it.  A message that cannot be
 * put together is answered with the error.
 */
static void reasm_last(struct agent_links *lk, struct reasm *r, struct reasm **pp, uint32_t from,
		       const struct proto_header *h)
{
	struct target_item *t = r->t;

	*pp = r->next;
	lk->reasm_bytes -= t ? r->total : 0;
	if (r->status && (!t || !t->reads_left)) {
		struct target_item err = {.from = from, .h = *h};

		lk->peers[from].stats.last_error = r->status;
		link_answer(lk, &err, r->status, NULL, 0);
		link_target_destroy(t);
	} else {
		struct target_item was = *t;

		*t = (struct target_item){.from = from,
					  .h = *h,
					  .len = r->total,
					  .reads_left = was.reads_left,
					  .read_status = r->status ? r->status : was.read_status,
					  .big = was.big,
					  .big_len = was.big_len,
					  .heap = was.heap};
		link_queue_request(lk, t);
	}
	free(r);
}

/* A chunk of a large p2p SENDMSG: appended to its message. */
void link_take_chunk(struct agent_links *lk, uint32_t from, const struct proto_header *h,
		     const struct proto_chunk *c, const uint8_t *data, size_t len)
{
	bool last = c->offset + len == c->total;
	struct reasm **pp, *r = reasm_for(lk, from, h, c, last, &pp);

	if (!r)
		return;
	if (!r->status && (c->offset != r->got || c->total != r->total))
		r->status = -EPROTO;
	/* p2p chunks arrive with their data: no heap room now fails the message. */
	if (!r->status && link_target_reserve(r->t))
		r->status = -ENOBUFS;
	if (!r->status) {
		memcpy(target_data(r->t) + c->offset, data, len);
		lk->copied += len;
		r->got += len;
	}
	if (last)
		reasm_last(lk, r, pp, from, h);
}

/* Tells the sender its chunk at addr was read (or will never be): it may reuse the slot. */
static void rma_done(struct agent_links *lk, uint32_t to, uint64_t port, uint64_t addr, int status)
{
	struct proto_header h = {.type = PROTO_ACK, .protocol = PROTO_RMA, .port = port};
	uint8_t done[PROTO_RMA_DONE_SIZE];
	int32_t s = status;
	int rc;

	memcpy(done, &s, 4);
	memcpy(done + 4, &addr, 8);
	rc = link_tx_item(lk, to, h, done, sizeof(done), LINK_NO_TOKEN, FLOW_INJECTION, 0);
	if (rc && rc != -EINPROGRESS && rc != -EHOSTDOWN)
		agent_logf(&lk->cfg.log, "could not tell rank %u a chunk was read: %s", to, strerror(-rc));
}

/*
 * Posts one READ: 0; -EAGAIN when core or the ejection cap has no room now;
 * -ENOBUFS when its message has no buffer yet and the heap gauge no room.
 */
static int read_post(struct agent_links *lk, struct rma_read *rd)
{
	int rc;

	if (!flow_fits(&lk->flow[FLOW_EJECTION], rd->rma.len))
		return -EAGAIN;
	rc = link_target_reserve(rd->t);
	if (rc)
		return rc == -EAGAIN ? -ENOBUFS : rc;
	rc = core_read(lk->ep, lk->peers[rd->from].core_peer, target_data(rd->t) + rd->offset, rd->rma.len,
		       rd->rma.addr, rd->rma.rkey, rd);
	if (!rc) {
		flow_take(&lk->flow[FLOW_EJECTION], rd->rma.len);
		lk->nic_bytes += rd->rma.len;
	}
	return rc;
}

/* A READ is over (status 0: done, else a negative errno): the sender gets its slot back. */
void link_read_finish(struct agent_links *lk, struct rma_read *rd, int status)
{
	struct target_item *t = rd->t;

	if (status)
		t->read_status = status;
	if (rd->epoch == lk->peers[rd->from].epoch && lk->peers[rd->from].up)
		rma_done(lk, rd->from, rd->port, rd->rma.addr, status);
	if (--t->reads_left == 0 && t->orphan)
		link_target_destroy(t);
	free(rd);
}

/*
 * Posts the READs that waited, in order, while there is room.  One whose
 * message waits for heap room is passed over: the READs of messages that
 * already have their buffer go on, so those finish and give the heap back
 * (else two messages from two peers could each wait for the other).
 */
int link_reads_progress(struct agent_links *lk)
{
	int n = 0;

	for (struct rma_read **pp = &lk->reads_waiting; *pp;) {
		struct rma_read *rd = *pp;
		int rc = read_post(lk, rd);

		if (rc == -EAGAIN)
			break;
		if (rc == -ENOBUFS) {
			pp = &rd->next;
			continue;
		}
		*pp = rd->next;
		if (rc)
			link_read_finish(lk, rd, rc); /* not posted: its message fails */
		n++;
	}
	lk->reads_tail = &lk->reads_waiting;
	while (*lk->reads_tail)
		lk->reads_tail = &(*lk->reads_tail)->next;
	return n;
}

/* A READ finished: the sender may reuse its slot; the message may now be complete. */
void link_read_complete(struct agent_links *lk, struct rma_read *rd, int status)
{
	flow_give(&lk->flow[FLOW_EJECTION], rd->rma.len);
	link_read_finish(lk, rd, status);
}

/* A chunk of a large rma SENDMSG: read from the sender's buffer straight into its message. */
void link_take_rma(struct agent_links *lk, uint32_t from, const struct proto_header *h,
		   const struct proto_chunk *c, const struct proto_rma *rma)
{
	bool last = c->offset + rma->len == c->total;
	struct reasm **pp, *r = reasm_for(lk, from, h, c, last, &pp);
	struct rma_read *rd;

	if (!r) {
		rma_done(lk, from, h->port, rma->addr, -EPROTO);
		return;
	}
	if (!r->status && (c->offset != r->got || c->total != r->total))
		r->status = -EPROTO;
	rd = r->status ? NULL : malloc(sizeof(*rd));
	if (!rd) {
		r->status = r->status ? r->status : -ENOMEM;
		rma_done(lk, from, h->port, rma->addr, r->status);
	} else {
		*rd = (struct rma_read){.t = r->t,
					.from = from,
					.epoch = lk->peers[from].epoch,
					.offset = c->offset,
					.port = h->port,
					.rma = *rma};
		r->got += rma->len;
		r->t->reads_left++;
		if (lk->reads_waiting || read_post(lk, rd)) { /* in order behind the others */
			*lk->reads_tail = rd;
			lk->reads_tail = &rd->next;
		}
	}
	if (last)
		reasm_last(lk, r, pp, from, h);
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

/* A request item from a peer: to the queue of requests, in arrival order. */
void link_take_request(struct agent_links *lk, uint32_t from, const struct proto_header *h,
		       const uint8_t *payload, size_t payload_len)
{
	struct proto_chunk c;
	struct target_item *t;

	if ((h->type == PROTO_POLL && payload_len) ||
	    (h->type == PROTO_GETMSG && payload_len != 0 && payload_len != 8) ||
	    (h->port >> 32) >= PORT_BINDINGS) {
		lk->errors.count[PROTO_ERR_CONNECT]++;
		return;
	}
	if (h->type == PROTO_SENDMSG && h->protocol == PROTO_RMA) {
		struct proto_rma rma;

		if (!proto_rma_decode(payload, payload_len, &c, &rma, &lk->errors))
			link_take_rma(lk, from, h, &c, &rma);
		return;
	}
	if (h->type == PROTO_SENDMSG && h->protocol == PROTO_P2P) {
		if (proto_chunk_decode(payload, payload_len, &c, &lk->errors))
			return;
		payload += PROTO_CHUNK_SIZE;
		payload_len -= PROTO_CHUNK_SIZE;
		if (c.offset != 0 || c.total != payload_len) {
			link_take_chunk(lk, from, h, &c, payload, payload_len);
			return;
		}
	}
	t = malloc(sizeof(*t) + payload_len);
	if (!t)
		return;
	*t = (struct target_item){.from = from, .h = *h, .len = payload_len};
	if (payload_len)
		memcpy(t->data, payload, payload_len);
	link_queue_request(lk, t);
}
