/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The receive engine: posted user receives arrive through a lock-free ring
 * (core_recv never takes a lock while the RX state is ENABLED); the engine,
 * run by one thread at a time, matches them in order against arriving
 * messages, copies eager payloads, starts rendezvous READs, answers FINs,
 * reposts receive buffers and returns credits.
 *
 * Credits: each connection has remote_rx_depth receive buffers posted at the
 * peer; a sender spends one per message and every header carries the
 * sender's cumulative count of receives it consumed, so credits flow back
 * with ordinary traffic.  When none flows back, a CREDIT message is sent
 * once half the buffers are consumed; the last credit is reserved for
 * control messages (FIN, CREDIT), so a sender never triggers an RNR and
 * credit return can never deadlock.
 */
#include "core/transport/endpoint_impl.h"
#include "hw/hw.h"
#include "core/util/clock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define KEEPALIVE_CHECK_NS 10000000ull  /* look for connections to probe every 10 ms */
#define KEEPALIVE_PROBE_NS 100000000ull /* probe one at most every 100 ms */

static inline uint64_t recv_wr_id(const struct conn *c, uint32_t slot)
{
	return ((uint64_t)c->peer << 32) | ((uint64_t)c->stripe << 16) | slot;
}

/* The receive WR of one buffer slot, in wr and its sge. */
static void rx_recv_wr(const struct conn *c, uint32_t slot, struct ibv_recv_wr *wr, struct ibv_sge *sge)
{
	*sge = (struct ibv_sge){
		.addr = (uintptr_t)(c->rxbuf + (size_t)slot * c->slot_size),
		.length = c->slot_size,
		.lkey = c->rx_mr->lkey,
	};
	*wr = (struct ibv_recv_wr){.wr_id = recv_wr_id(c, slot), .sg_list = sge, .num_sge = 1};
}

int rx_post_buffer(struct conn *c, uint32_t slot)
{
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge sge;

	rx_recv_wr(c, slot, &wr, &sge);
	return -hw_post_recv(c->qp, &wr, &bad);
}

/*
 * The buffers a poll emptied, posted again with one call per connection: one
 * doorbell (on the soft device, one lock) for a batch instead of one each.
 * A connection's credits count a buffer once it is posted (c->consumed).
 */
static void rx_repost(struct conn **conn, const uint32_t *slot, int n)
{
	struct ibv_recv_wr wr[16], *bad;
	struct ibv_sge sge[16];
	bool done[16] = {false};

	for (int i = 0; i < n; i++) {
		struct conn *c = conn[i];
		int k = 0;

		if (done[i])
			continue;
		for (int j = i; j < n; j++) {
			if (done[j] || conn[j] != c)
				continue;
			done[j] = true;
			rx_recv_wr(c, slot[j], &wr[k], &sge[k]);
			if (k)
				wr[k - 1].next = &wr[k];
			k++;
		}
		/* On a failure the WRs before bad were posted: only those count. */
		bad = NULL;
		if (hw_post_recv(c->qp, wr, &bad))
			k = bad ? (int)(bad - wr) : 0;
		atomic_fetch_add_explicit(&c->consumed, (uint32_t)k, memory_order_release);
	}
}

int rx_init(struct core_ep *ep)
{
	uint32_t cap = 2;
	int rc;

	while (cap < ep->attr.max_recv)
		cap <<= 1;
	ep->recv_pool = calloc(cap, sizeof(*ep->recv_pool));
	if (!ep->recv_pool)
		return -ENOMEM;
	if ((rc = ring_create(cap, sizeof(uint32_t), &ep->recv_free)) ||
	    (rc = ring_create(cap, sizeof(uint32_t), &ep->recv_post)) ||
	    (rc = ring_create(1024, sizeof(struct fin_retry), &ep->fin_retry)))
		return rc;
	for (uint32_t i = 0; i < cap; i++)
		ring_push(ep->recv_free, &i, NULL);
	rx_sm_init(&ep->rx_sm);
	atomic_init(&ep->rx_busy, 0);
	return rx_transition(&ep->rx_sm, RX_DISABLED, RX_ENABLED);
}

void rx_fini(struct core_ep *ep)
{
	struct rx_unexpected *u, *un;
	struct rx_pending_read *p, *pn;

	for (u = ep->unexp_head; u; u = un) {
		un = u->next;
		free(u->data);
		free(u);
	}
	for (p = ep->pending_reads; p; p = pn) {
		pn = p->next;
		free(p);
	}
	ring_destroy(ep->recv_free);
	ring_destroy(ep->recv_post);
	ring_destroy(ep->fin_retry);
	free(ep->recv_pool);
	rx_sm_destroy(&ep->rx_sm);
}

/* The slow path: not ENABLED.  Recovery re-checks the pool under the state lock. */
static int recv_slow(struct core_ep *ep, uint32_t *idx)
{
	enum rx_state st = rx_state_get(&ep->rx_sm);

	if (st == RX_DISABLED)
		return -ESHUTDOWN;
	if (ring_pop(ep->recv_free, idx))
		return -EAGAIN;
	rx_transition(&ep->rx_sm, RX_FLOW_CONTROL, RX_ENABLED); /* -EBUSY: someone else recovered */
	return 0;
}

static int post_recv_common(struct core_ep *ep, void *buf, size_t len, uint64_t tag, uint64_t ignore, bool tagged,
			    void *context)
{
	uint32_t idx;
	int rc = 0;

	ep_lock(ep);
	if (rx_state_get(&ep->rx_sm) == RX_ENABLED) {
		if (ring_pop(ep->recv_free, &idx)) {
			if (rx_transition(&ep->rx_sm, RX_ENABLED, RX_FLOW_CONTROL) == 0)
				stats_inc(rx_stripe(ep)->stats, STATS_FLOW_CONTROL);
			rc = -EAGAIN;
		}
	} else {
		rc = recv_slow(ep, &idx);
	}
	if (rc) {
		stats_inc(rx_stripe(ep)->stats, STATS_EAGAIN);
		ep_unlock(ep);
		return rc;
	}
	ep->recv_pool[idx] = (struct rx_recv){
		.buf = buf, .len = len, .tag = tag, .ignore = ignore, .tagged = tagged, .context = context,
	};
	/* recv_post holds every index, so it cannot be full. */
	ring_push(ep->recv_post, &idx, NULL);
	stats_inc(rx_stripe(ep)->stats, STATS_POSTED);
	ep_unlock(ep);
	/* The receive may match a message already here: a sleeping reader must look. */
	cq_wake(ep);
	return 0;
}

int core_recv(struct core_ep *ep, void *buf, size_t len, void *context)
{
	return post_recv_common(ep, buf, len, 0, 0, false, context);
}

int core_trecv(struct core_ep *ep, void *buf, size_t len, uint64_t tag, uint64_t ignore, void *context)
{
	return post_recv_common(ep, buf, len, tag, ignore, true, context);
}

static bool matches(const struct rx_recv *r, const struct msg_hdr *h)
{
	if (r->tagged != (h->tagged != 0))
		return false;
	return !r->tagged || ((r->tag ^ h->tag) & ~r->ignore) == 0;
}

static void free_recv(struct core_ep *ep, struct rx_recv *r)
{
	uint32_t idx = (uint32_t)(r - ep->recv_pool);

	ring_push(ep->recv_free, &idx, NULL);
}

static void deliver_eager(struct core_ep *ep, struct rx_recv *r, const struct msg_hdr *h, const void *data,
			  uint32_t peer)
{
	size_t n = h->len <= r->len ? h->len : r->len;
	struct core_cqe e = {
		.context = r->context,
		.len = h->len,
		.tag = h->tag,
		.flags = CORE_CQE_RECV | (h->tagged ? CORE_CQE_TAGGED : 0),
		.peer = peer,
		.err = h->len > r->len ? -EMSGSIZE : 0,
	};

	if (n)
		memcpy(r->buf, data, n);
	free_recv(ep, r);
	progress_emit(ep, rx_stripe(ep), &e);
}

/* Pulls a rendezvous payload; false when no request is free (the caller queues it). */
static bool start_read(struct core_ep *ep, struct rx_recv *r, const struct msg_hdr *h, struct conn *c)
{
	struct stripe *s = rx_stripe(ep);
	size_t n = h->len <= r->len ? h->len : r->len;
	struct mr_cache_entry *mr;
	struct core_req *q;

	if (atomic_load_explicit(&c->dead, memory_order_relaxed) || mr_cache_lookup(ep, r->buf, n, &mr)) {
		struct core_cqe e = { .context = r->context, .len = h->len, .tag = h->tag,
				      .flags = CORE_CQE_RECV | CORE_CQE_RNDV, .status = IBV_WC_LOC_PROT_ERR,
				      .peer = c->peer, .err = -EIO };

		free_recv(ep, r);
		progress_emit(ep, s, &e);
		return true;
	}
	q = stripe_req_alloc(s);
	if (!q) {
		mr_cache_release(ep, mr);
		return false;
	}
	q->mr_entry = mr; /* held until the READ completes */
	q->kind = REQ_RNDV_READ;
	q->recv = r;
	q->conn = c;
	q->len = h->len;
	q->tag = h->tag;
	q->flags = h->tagged ? CORE_CQE_TAGGED : 0;
	q->remote_sreq = h->sreq;
	q->context = r->context;

	struct ibv_sge sge = { .addr = (uintptr_t)r->buf, .length = (uint32_t)n, .lkey = mr->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id_make(s->index, stripe_req_index(s, q)),
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_READ,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = h->addr, .rkey = h->rkey },
	};

	/* In a deep pipeline of large receives most READs go unsignaled (moderation.h). */
	if (mod_post(ep, c, q, &wr)) {
		req_release_mr(ep, q);
		stripe_req_free(s, q);
		return false;
	}
	stats_inc(s->stats, STATS_POSTED);
	return true;
}

static void queue_read(struct core_ep *ep, struct rx_recv *r, const struct msg_hdr *h, struct conn *c)
{
	struct rx_pending_read *p = malloc(sizeof(*p)), **tail = &ep->pending_reads;

	if (!p) {
		struct core_cqe e = { .context = r->context, .flags = CORE_CQE_RECV, .status = IBV_WC_GENERAL_ERR,
				      .err = -ENOMEM };

		free_recv(ep, r);
		progress_emit(ep, rx_stripe(ep), &e);
		return;
	}
	*p = (struct rx_pending_read){ .recv = r, .hdr = *h, .conn = c };
	while (*tail)
		tail = &(*tail)->next;
	*tail = p;
}

static void matched(struct core_ep *ep, struct rx_recv *r, const struct msg_hdr *h, const void *data,
		    struct conn *c)
{
	if (h->type == CORE_MSG_EAGER)
		deliver_eager(ep, r, h, data, c->peer);
	else if (ep->pending_reads || !start_read(ep, r, h, c))
		queue_read(ep, r, h, c);
}

/* New user receives: first against the unexpected list, else to the posted list. */
static int take_posted(struct core_ep *ep)
{
	uint32_t idx;
	int n = 0;

	while (ring_pop(ep->recv_post, &idx) == 0) {
		struct rx_recv *r = &ep->recv_pool[idx];
		struct rx_unexpected **pu = &ep->unexp_head, *u;

		n++;
		r->next = NULL;
		while ((u = *pu) && !matches(r, &u->hdr))
			pu = &u->next;
		if (u) {
			*pu = u->next;
			if (ep->unexp_tail == u) {
				ep->unexp_tail = NULL;
				for (struct rx_unexpected *t = ep->unexp_head; t; t = t->next)
					ep->unexp_tail = t;
			}
			matched(ep, r, &u->hdr, u->data, u->conn);
			free(u->data);
			free(u);
			continue;
		}
		if (ep->posted_tail)
			ep->posted_tail->next = r;
		else
			ep->posted_head = r;
		ep->posted_tail = r;
	}
	return n;
}

static void arrived(struct core_ep *ep, struct conn *c, const struct msg_hdr *h)
{
	struct rx_recv **pr = &ep->posted_head, *r, *prev = NULL;

	if (h->type == CORE_MSG_FIN) {
		progress_fin(ep, h->sreq, rx_stripe(ep));
		return;
	}
	if (h->type == CORE_MSG_CREDIT)
		return;
	while ((r = *pr) && !matches(r, h)) {
		prev = r;
		pr = &r->next;
	}
	if (r) {
		*pr = r->next;
		if (ep->posted_tail == r)
			ep->posted_tail = prev;
		matched(ep, r, h, h + 1, c);
		return;
	}
	struct rx_unexpected *u = calloc(1, sizeof(*u));

	if (!u)
		return;
	u->hdr = *h;
	u->peer = c->peer;
	u->conn = c;
	if (h->type == CORE_MSG_EAGER && h->len) {
		u->data = malloc(h->len);
		if (!u->data) {
			free(u);
			return;
		}
		memcpy(u->data, h + 1, h->len);
	}
	if (ep->unexp_tail)
		ep->unexp_tail->next = u;
	else
		ep->unexp_head = u;
	ep->unexp_tail = u;
}

static void retry_deferred(struct core_ep *ep)
{
	struct fin_retry f;
	int n = (int)ring_count(ep->fin_retry);

	while (n-- > 0 && ring_pop(ep->fin_retry, &f) == 0)
		if (post_ctrl_msg(ep, f.conn, CORE_MSG_FIN, f.sreq))
			ring_push(ep->fin_retry, &f, NULL);
	while (ep->pending_reads) {
		struct rx_pending_read *p = ep->pending_reads;

		if (!start_read(ep, p->recv, &p->hdr, p->conn))
			break;
		ep->pending_reads = p->next;
		free(p);
	}
}

static void return_credits(struct core_ep *ep)
{
	uint32_t np = atomic_load_explicit(&ep->npeers, memory_order_acquire);

	for (uint32_t i = 0; i < np; i++) {
		struct peer *p = ep->peers[i];

		for (uint32_t k = 0; k < p->nconn; k++) {
			struct conn *c = &p->conns[k];
			uint32_t owed = atomic_load_explicit(&c->consumed, memory_order_relaxed) -
					atomic_load_explicit(&c->reported, memory_order_relaxed);

			if (owed >= ep->attr.rx_depth / 2 && !atomic_load_explicit(&c->dead, memory_order_relaxed))
				post_ctrl_msg(ep, c, CORE_MSG_CREDIT, 0);
		}
	}
}

/*
 * A connection with rendezvous sends waiting for FINs may have nothing in
 * flight, and RC notices a dead peer only through a request in flight: probe
 * such connections with a CREDIT message now and then, so a dead peer turns
 * into an error completion (and the sweep fails the waiting sends).
 */
static void keepalive(struct core_ep *ep)
{
	uint64_t now = clock_ns();
	uint32_t np;

	if (now - ep->last_keepalive_ns < KEEPALIVE_CHECK_NS)
		return;
	ep->last_keepalive_ns = now;
	np = atomic_load_explicit(&ep->npeers, memory_order_acquire);
	for (uint32_t i = 0; i < np; i++) {
		struct peer *p = ep->peers[i];

		for (uint32_t k = 0; k < p->nconn; k++) {
			struct conn *c = &p->conns[k];

			if (!atomic_load_explicit(&c->rndv_out, memory_order_relaxed) ||
			    atomic_load_explicit(&c->dead, memory_order_relaxed) ||
			    now - c->last_probe_ns < KEEPALIVE_PROBE_NS)
				continue;
			c->last_probe_ns = now;
			post_ctrl_msg(ep, c, CORE_MSG_CREDIT, 0);
		}
	}
}

int rx_progress(struct core_ep *ep)
{
	struct stripe *s = rx_stripe(ep);
	struct ibv_wc wc[16];
	struct conn *emptied[16];
	uint32_t emptied_slot[16];
	int n, work, nempty = 0;

	if (!progress_flush_backlog(ep, s))
		return 0;
	work = take_posted(ep);
	retry_deferred(ep);
	keepalive(ep);
	n = hw_poll_cq(ep->rx_cq, 16, wc);
	stats_inc(s->stats, STATS_POLLS);
	if (n <= 0) {
		stats_inc(s->stats, STATS_EMPTY_POLLS);
		return work;
	}
	stats_add(s->stats, STATS_COMPLETED, (uint64_t)n);
	for (int i = 0; i < n; i++) {
		uint32_t pid = (uint32_t)(wc[i].wr_id >> 32), st = (uint32_t)(wc[i].wr_id >> 16) & 0xffff;
		uint32_t slot = (uint32_t)wc[i].wr_id & 0xffff;
		struct peer *p = ep_peer(ep, pid);
		struct conn *c;

		if (!p || st >= p->nconn)
			continue;
		c = &p->conns[st];
		if (wc[i].status != IBV_WC_SUCCESS) {
			if (wc[i].status != IBV_WC_WR_FLUSH_ERR)
				stats_wc_error(s->stats, wc[i].status);
			progress_conn_dead(ep, c, s);
			continue;
		}
		const struct msg_hdr *h = (const void *)(c->rxbuf + (size_t)slot * c->slot_size);
		uint32_t pc = atomic_load_explicit(&c->peer_consumed, memory_order_relaxed);

		if ((int32_t)(h->credits - pc) > 0)
			atomic_store_explicit(&c->peer_consumed, h->credits, memory_order_release);
		if (wc[i].byte_len >= HDR_SIZE && (h->type != CORE_MSG_EAGER || wc[i].byte_len >= HDR_SIZE + h->len))
			arrived(ep, c, h);
		else
			stats_error(s->stats, STATS_ERR_REMOTE);
		emptied[nempty] = c;
		emptied_slot[nempty++] = slot;
	}
	rx_repost(emptied, emptied_slot, nempty);
	return_credits(ep);
	return work + n;
}
