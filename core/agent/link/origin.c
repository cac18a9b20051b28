/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The origin side of the links: requests out, their answers in, slots read (link_impl.h). */
#include "core/agent/link/link_impl.h"

/* The binding slot of a channel name (FNV-1a), for the direct-mapped port tables. */
static uint32_t bind_slot(const char *name)
{
	uint32_t h = 2166136261u;

	for (; *name; name++)
		h = (h ^ (uint8_t)*name) * 16777619u;
	return h & (PORT_BINDINGS - 1);
}

int links_request(struct agent_links *lk, const struct gw_request *req, const void *data, size_t len,
		  uint64_t token)
{
	static const uint8_t op_type[] = {
	    [GW_OP_SEND] = PROTO_SENDMSG, [GW_OP_RECV] = PROTO_GETMSG, [GW_OP_POLL] = PROTO_POLL};
	struct link_peer *p;
	bool chunked = req->op == GW_OP_SEND && req->msg_total;
	bool last = !chunked || req->msg_offset + len == req->msg_total;
	bool answered = req->op != GW_OP_SEND || (req->mode > AGENT_SEND_BUFFERED && last);
	uint8_t *body = NULL, *slot_mem = NULL, cap_le[8], rma_item[PROTO_RMA_ITEM_SIZE];
	uint32_t slot, idx = 0;
	int rc;

	if (req->op < GW_OP_SEND || req->op > GW_OP_POLL)
		return -EINVAL;
	if (req->node < lk->cfg.nodes && lk->peers[req->node].stats.agents_per_node &&
	    lk->peers[req->node].stats.agents_per_node != (lk->cfg.siblings ? lk->cfg.siblings : 1))
		return -EBADE; /* its node runs another count of agents (link_peer_mismatch) */
	if (!links_up(lk, req->node))
		return -EHOSTDOWN;
	if (len > GW_INLINE || (req->op != GW_OP_SEND && len) ||
	    (chunked && (req->msg_total > AGENT_REMOTE_MAX || req->msg_offset > req->msg_total ||
			 len > req->msg_total - req->msg_offset)))
		return -EMSGSIZE;
	p = &lk->peers[req->node];
	if (answered) {
		for (idx = 0;
		     idx < LINK_ORIGIN_MAX && lk->origins[(lk->next_origin + idx) % LINK_ORIGIN_MAX].used;
		     idx++)
			;
		if (idx == LINK_ORIGIN_MAX)
			return -EAGAIN;
		idx = (lk->next_origin + idx) % LINK_ORIGIN_MAX;
	}
	/* The first item on a port binds it to its channel at the target (a CONNECT); later ones name the
	 * port.
	 */
	slot = bind_slot(req->name);
	if (strcmp(p->bind_out[slot], req->name)) {
		struct proto_connect bind = {.node = (uint16_t)req->node};
		uint8_t eager[3 + PROTO_NAME_MAX];
		struct proto_header ch = {.type = PROTO_CONNECT, .port = (uint64_t)slot << 32};
		int n;

		snprintf(bind.name, sizeof(bind.name), "%s", req->name);
		n = proto_connect_encode(&bind, eager, sizeof(eager));
		if (n < 0)
			return n;
		rc = link_tx_item(lk, req->node, ch, eager, (size_t)n, LINK_NO_TOKEN, FLOW_INJECTION, 0);
		if (rc && rc != -EINPROGRESS)
			return rc;
		snprintf(p->bind_out[slot], sizeof(p->bind_out[slot]), "%s", req->name);
	}
	struct origin *o = &lk->origins[idx];
	struct proto_header h = {.type = op_type[req->op],
				 .protocol = PROTO_EAGER,
				 .mode = (uint8_t)(req->mode & 3),
				 .timeout = proto_timeout_encode(req->timeout_ms),
				 .port = (uint64_t)slot << 32};

	if (answered)
		h.port |= (uint64_t)(uint16_t)(o->gen + 1) << 16 | idx;
	if (req->op == GW_OP_RECV) {
		uint64_t cap = req->cap ? req->cap : GW_INLINE;

		memcpy(cap_le, &cap, sizeof(cap));
		data = cap_le;
		len = sizeof(cap_le);
	} else if (req->op != GW_OP_SEND) {
		len = 0;
	} else if ((chunked || PROTO_HEADER_SIZE + len > PROTO_EAGER_BUFFER) && lk->rma && len &&
		   len <= PROTO_RMA_MAX && (slot_mem = pool_take_slot(&lk->pool, req->node))) {
		/* A copy the target reads, announced by an eager item (proto.h). */
		struct proto_chunk c = {.total = chunked ? req->msg_total : len,
					.offset = chunked ? req->msg_offset : 0,
					.id = chunked ? req->msg_id : 0};
		struct proto_rma r = {
		    .addr = (uintptr_t)slot_mem, .rkey = lk->pool.rkey, .len = (uint32_t)len};

		memcpy(slot_mem, data, len);
		lk->copied += len;
		flow_take(&lk->flow[FLOW_INJECTION], lk->pool.slot_size); /* until the target has read it */
		proto_rma_encode(&c, &r, rma_item);
		data = rma_item;
		len = sizeof(rma_item);
		h.protocol = PROTO_RMA;
	} else if (chunked || PROTO_HEADER_SIZE + len > PROTO_EAGER_BUFFER) {
		/* A large frame of its own, its body opened by the chunk descriptor (proto.h). */
		struct proto_chunk c = {.total = chunked ? req->msg_total : len,
					.offset = chunked ? req->msg_offset : 0,
					.id = chunked ? req->msg_id : 0};

		body = malloc(PROTO_CHUNK_SIZE + len);
		if (!body)
			return -ENOMEM;
		proto_chunk_encode(&c, body);
		memcpy(body + PROTO_CHUNK_SIZE, data, len);
		lk->copied += len;
		data = body;
		len += PROTO_CHUNK_SIZE;
		h.protocol = PROTO_P2P;
	}
	rc = link_tx_item(lk, req->node, h, data, len, answered ? LINK_NO_TOKEN : token, FLOW_INJECTION,
			  PROTO_HEADER_SIZE + len);
	free(body);
	if (rc && rc != -EINPROGRESS && slot_mem &&
	    !pool_give_slot(&lk->pool, (uintptr_t)slot_mem, req->node))
		flow_give(&lk->flow[FLOW_INJECTION], lk->pool.slot_size);
	if (rc && rc != -EINPROGRESS)
		return rc;
	if (!answered)
		return rc; /* 0: on the link; -EINPROGRESS: done() once it is */
	lk->next_origin = idx + 1;
	o->used = true;
	o->gen++;
	o->node = req->node;
	o->op = h.type;
	o->token = token;
	o->port = h.port;
	o->cancelled = false;
	return -EINPROGRESS;
}

/*
 * GETMSGs in flight whose client died are withdrawn at their targets, so no
 * message is taken for nobody (issue 44 N6).  A target that already took
 * one answers with it, and the engine puts it back in its channel.
 */
int link_cancel_orphans(struct agent_links *lk)
{
	int n = 0;

	if (!lk->cfg.orphaned)
		return 0;
	for (uint32_t i = 0; i < LINK_ORIGIN_MAX; i++) {
		struct origin *o = &lk->origins[i];
		struct proto_header h = {.type = PROTO_CANCEL, .port = o->port};
		int rc;

		if (!o->used || o->cancelled || o->op != PROTO_GETMSG || o->token == LINK_NO_TOKEN ||
		    !lk->cfg.orphaned(lk->cfg.arg, o->token))
			continue;
		rc = link_tx_item(lk, o->node, h, NULL, 0, LINK_NO_TOKEN, FLOW_INJECTION, 0);
		o->cancelled = !rc || rc == -EINPROGRESS;
		n += o->cancelled;
	}
	return n;
}

/* A chunk of a GETMSG answer larger than a slot: chunks come in order; the last one finishes the request. */
static void take_answer_chunk(struct agent_links *lk, uint32_t idx, const uint8_t *body, size_t len)
{
	struct origin *o = &lk->origins[idx];
	struct proto_chunk c;

	if (proto_chunk_decode(body, len, &c, &lk->errors)) {
		link_finish_origin(lk, idx, -EPROTO, NULL, 0);
		return;
	}
	len -= PROTO_CHUNK_SIZE;
	if (c.offset == 0 && !o->answer) {
		if (c.total > AGENT_REMOTE_MAX || !(o->answer = malloc(c.total))) {
			link_finish_origin(lk, idx, c.total > AGENT_REMOTE_MAX ? -EPROTO : -ENOMEM, NULL, 0);
			return;
		}
		o->answer_total = c.total;
		o->answer_got = 0;
		/* Counted, not refused: the target already took the message from its channel. */
		flow_take(&lk->flow[FLOW_HEAP], c.total);
	}
	if (!o->answer || c.offset != o->answer_got || c.total != o->answer_total) {
		lk->errors.count[PROTO_ERR_RESPONSE]++;
		link_finish_origin(lk, idx, -EPROTO, NULL, 0);
		return;
	}
	memcpy(o->answer + c.offset, body + PROTO_CHUNK_SIZE, len);
	lk->copied += len;
	o->answer_got += len;
	if (o->answer_got == o->answer_total)
		link_finish_origin(lk, idx, 0, o->answer, (size_t)o->answer_total);
}

void link_take_answer(struct agent_links *lk, uint32_t from, const struct proto_header *h,
		      const uint8_t *body, size_t len)
{
	uint32_t idx = (uint32_t)(h->port & 0xffff);
	uint16_t gen = (uint16_t)(h->port >> 16);
	struct origin *o;
	int32_t status;

	if (h->type == PROTO_ACK && h->protocol == PROTO_RMA && len == PROTO_RMA_DONE_SIZE) {
		link_take_read_done(lk, from, body);
		return;
	}
	if (idx >= LINK_ORIGIN_MAX || len < 4) {
		lk->errors.count[PROTO_ERR_RESPONSE]++;
		return;
	}
	o = &lk->origins[idx];
	/* Only the answer to a request of ours in flight to that very peer. */
	if (!o->used || o->gen != gen || o->node != from || h->type != o->op + PROTO_ACK)
		return;
	memcpy(&status, body, 4);
	if (status > 0 || status < -4095)
		status = -EPROTO;
	if (h->type == PROTO_DATA && h->protocol == PROTO_P2P && h->mode == PROTO_MODE_CHUNKED) {
		take_answer_chunk(lk, idx, body + 4, len - 4);
		return;
	}
	if (h->type == PROTO_STATE) {
		struct chan_state st;

		if (len != PROTO_STATE_LEN) {
			lk->errors.count[PROTO_ERR_RESPONSE]++;
			link_finish_origin(lk, idx, -EPROTO, NULL, 0);
			return;
		}
		proto_state_decode(body + 4, &st);
		link_finish_origin(lk, idx, status, &st, sizeof(st));
		return;
	}
	link_finish_origin(lk, idx, status, body + 4, h->type == PROTO_DATA ? len - 4 : 0);
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

/* The target read our chunk at the address in body: its slot is free again. */
void link_take_read_done(struct agent_links *lk, uint32_t from, const uint8_t *body)
{
	int32_t status;
	uint64_t addr;

	memcpy(&status, body, 4);
	memcpy(&addr, body + 4, 8);
	if (pool_give_slot(&lk->pool, addr, from)) {
		lk->errors.count[PROTO_ERR_RESPONSE]++;
		return;
	}
	flow_give(&lk->flow[FLOW_INJECTION], lk->pool.slot_size);
	if (status < 0)
		lk->peers[from].stats.last_error = status;
}

/*
 * Rank went down with requests in flight to it: they may have been done there (a message
 * deposited, or taken by a GETMSG) with only the answer lost, so "outcome unknown" (-ECONNRESET),
 * never -EHOSTDOWN, which says nothing was sent (agent.h).  The rma slots it was to read are ours
 * again.
 */
void link_origins_down(struct agent_links *lk, uint32_t rank)
{
	for (uint32_t i = 0; i < LINK_ORIGIN_MAX; i++)
		if (lk->origins[i].used && lk->origins[i].node == rank)
			link_finish_origin(lk, i, -ECONNRESET, NULL, 0);
	flow_give(&lk->flow[FLOW_INJECTION], pool_give_slots(&lk->pool, rank) * lk->pool.slot_size);
}
