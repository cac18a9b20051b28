/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The data path: a thread picks its stripe through a thread-local index,
 * takes a request from the stripe's lock-free pool, spends a credit for
 * two-sided messages, and posts.  No lock unless the endpoint runs in the
 * global-lock baseline mode.
 */
#include "core/transport/endpoint_impl.h"
#include "hw/hw.h"

#include <errno.h>
#include <string.h>

static __thread int tls_stripe = -1;
static _Atomic int next_stripe;

void core_thread_set_stripe(int index)
{
	tls_stripe = index < 0 ? -1 : index;
}

int progress_own_stripe(const struct core_ep *ep)
{
	return tls_stripe < 0 || ep->nstripes == 1 ? -1 : tls_stripe % ep->nstripes;
}

static inline struct stripe *my_stripe(struct core_ep *ep)
{
	if (ep->nstripes == 1)
		return &ep->stripes[0];
	if (tls_stripe < 0)
		tls_stripe = atomic_fetch_add_explicit(&next_stripe, 1, memory_order_relaxed);
	return &ep->stripes[tls_stripe % ep->nstripes];
}

int conn_take_credit(struct conn *c, bool ctrl)
{
	uint32_t sent = atomic_load_explicit(&c->sent, memory_order_relaxed);

	for (;;) {
		uint32_t used = sent - atomic_load_explicit(&c->peer_consumed, memory_order_acquire);
		uint32_t reserve = ctrl ? 0 : 1; /* the last credit is for FIN and CREDIT */

		if (used + reserve >= c->remote_rx_depth)
			return -EAGAIN;
		if (atomic_compare_exchange_weak_explicit(&c->sent, &sent, sent + 1, memory_order_relaxed,
							  memory_order_relaxed))
			return 0;
	}
}

void fill_hdr(struct conn *c, struct msg_hdr *h, uint8_t type)
{
	uint32_t consumed = atomic_load_explicit(&c->consumed, memory_order_acquire);
	uint32_t rep = atomic_load_explicit(&c->reported, memory_order_relaxed);

	memset(h, 0, sizeof(*h));
	h->type = type;
	h->credits = consumed;
	while ((int32_t)(consumed - rep) > 0 &&
	       !atomic_compare_exchange_weak_explicit(&c->reported, &rep, consumed, memory_order_relaxed,
						      memory_order_relaxed))
		;
}

int conn_post(struct conn *c, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	int rc = hw_post_send(c->qp, wr, &bad);

	if (rc == ENOMEM)
		return -EAGAIN;
	return -rc;
}

int post_ctrl_msg(struct core_ep *ep, struct conn *c, uint8_t type, uint64_t sreq)
{
	struct stripe *s = rx_stripe(ep);
	struct core_req *r = stripe_req_alloc(s);
	int rc;

	if (!r)
		return -EAGAIN;
	if (conn_take_credit(c, true)) {
		stripe_req_free(s, r);
		stats_inc(s->stats, STATS_FLOW_CONTROL);
		return -EAGAIN;
	}
	r->kind = REQ_CTRL;
	r->conn = c;
	r->mr_entry = NULL;
	fill_hdr(c, (struct msg_hdr *)r->bounce, type);
	((struct msg_hdr *)r->bounce)->sreq = sreq;

	struct ibv_sge sge = { .addr = (uintptr_t)r->bounce, .length = HDR_SIZE, .lkey = s->bounce_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id_make(s->index, stripe_req_index(s, r)), .sg_list = &sge,
				  .num_sge = 1, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };

	rc = conn_post(c, &wr);
	if (rc) {
		atomic_fetch_sub_explicit(&c->sent, 1, memory_order_relaxed);
		stripe_req_free(s, r);
	}
	return rc;
}

/* Common prologue: peer, stripe, connection and a request. */
static int begin(struct core_ep *ep, uint32_t peer, struct stripe **ps, struct conn **pc, struct core_req **pr,
		 struct peer **pp)
{
	struct peer *p = ep_peer(ep, peer);
	struct stripe *s;
	struct conn *c;

	if (!p)
		return -EINVAL;
	s = my_stripe(ep);
	c = &p->conns[s->index % p->nconn];
	if (atomic_load_explicit(&c->dead, memory_order_relaxed))
		return -ECONNRESET;
	*pr = stripe_req_alloc(s);
	if (!*pr) {
		stats_inc(s->stats, STATS_EAGAIN);
		return -EAGAIN;
	}
	(*pr)->conn = c;
	(*pr)->mr_entry = NULL;
	*ps = s;
	*pc = c;
	if (pp)
		*pp = p;
	return 0;
}

/* Posts wr; a READ or WRITE may go unsignaled, its completion then deduced (moderation.h). */
static int finish(struct core_ep *ep, struct stripe *s, struct conn *c, struct core_req *r, struct ibv_send_wr *wr,
		  bool moderate)
{
	int rc = moderate ? mod_post(ep, c, r, wr) : conn_post(c, wr);

	if (rc) {
		stripe_req_free(s, r);
		stats_inc(s->stats, rc == -EAGAIN ? STATS_EAGAIN : STATS_ERRORS);
		return rc;
	}
	stats_inc(s->stats, STATS_POSTED);
	return 0;
}

static int send_common(struct core_ep *ep, uint32_t peer, const void *buf, size_t len, uint64_t tag, bool tagged,
		       void *context)
{
	struct stripe *s;
	struct conn *c;
	struct core_req *r;
	struct peer *p;
	struct mr_cache_entry *mr = NULL;
	int rc;

	ep_lock(ep);
	rc = begin(ep, peer, &s, &c, &r, &p);
	if (rc)
		goto out;
	if (conn_take_credit(c, false)) {
		stripe_req_free(s, r);
		stats_inc(s->stats, STATS_FLOW_CONTROL);
		rc = -EAGAIN;
		goto out;
	}
	struct msg_hdr *h = (struct msg_hdr *)r->bounce;
	struct ibv_sge sge = { .addr = (uintptr_t)r->bounce, .lkey = s->bounce_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id_make(s->index, stripe_req_index(s, r)), .sg_list = &sge,
				  .num_sge = 1, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };

	r->context = context;
	r->len = len;
	r->tag = tag;
	r->flags = CORE_CQE_SEND | (tagged ? CORE_CQE_TAGGED : 0);
	if (len <= p->eager_max) {
		r->kind = REQ_SEND_EAGER;
		fill_hdr(c, h, CORE_MSG_EAGER);
		if (len)
			memcpy(h + 1, buf, len);
		sge.length = HDR_SIZE + (uint32_t)len;
	} else {
		rc = mr_cache_lookup(ep, buf, len, &mr);
		if (rc) {
			atomic_fetch_sub_explicit(&c->sent, 1, memory_order_relaxed);
			stripe_req_free(s, r);
			goto out;
		}
		/* Held until the send completes: the peer READs the buffer until its FIN. */
		r->mr_entry = mr;
		r->kind = REQ_SEND_RNDV;
		r->flags |= CORE_CQE_RNDV;
		atomic_store_explicit(&r->rndv_status, IBV_WC_SUCCESS, memory_order_relaxed);
		atomic_store_explicit(&r->rndv_events, 2, memory_order_relaxed);
		atomic_fetch_add_explicit(&c->rndv_out, 1, memory_order_relaxed);
		/* Release: a sweep that claims the request sees its fields. */
		atomic_store_explicit(&r->rndv_armed, conn_id(c), memory_order_release);
		fill_hdr(c, h, CORE_MSG_RTS);
		h->addr = (uintptr_t)buf;
		h->rkey = mr->mr->rkey;
		h->sreq = wr.wr_id;
		sge.length = HDR_SIZE;
	}
	h->len = len;
	h->tag = tag;
	h->tagged = tagged;
	rc = finish(ep, s, c, r, &wr, false);
	if (rc) {
		atomic_fetch_sub_explicit(&c->sent, 1, memory_order_relaxed);
		if (r->kind == REQ_SEND_RNDV) {
			atomic_store_explicit(&r->rndv_armed, 0, memory_order_relaxed);
			atomic_fetch_sub_explicit(&c->rndv_out, 1, memory_order_relaxed);
		}
		mr_cache_release(ep, mr); /* r went back to the pool: no completion will */
	}
out:
	ep_unlock(ep);
	return rc;
}

int core_send(struct core_ep *ep, uint32_t peer, const void *buf, size_t len, void *context)
{
	return send_common(ep, peer, buf, len, 0, false, context);
}

int core_tsend(struct core_ep *ep, uint32_t peer, const void *buf, size_t len, uint64_t tag, void *context)
{
	return send_common(ep, peer, buf, len, tag, true, context);
}

static int rma(struct core_ep *ep, uint32_t peer, void *buf, size_t len, uint64_t raddr, uint32_t rkey,
	       void *context, bool write)
{
	struct stripe *s;
	struct conn *c;
	struct core_req *r;
	struct mr_cache_entry *mr;
	int rc;

	ep_lock(ep);
	rc = begin(ep, peer, &s, &c, &r, NULL);
	if (rc)
		goto out;
	rc = mr_cache_lookup(ep, buf, len, &mr);
	if (rc) {
		stripe_req_free(s, r);
		goto out;
	}
	r->mr_entry = mr;
	r->kind = write ? REQ_WRITE : REQ_READ;
	r->context = context;
	r->len = len;
	r->tag = 0;
	r->flags = write ? CORE_CQE_WRITE : CORE_CQE_READ;

	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = (uint32_t)len, .lkey = mr->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id_make(s->index, stripe_req_index(s, r)),
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	};

	rc = finish(ep, s, c, r, &wr, true);
	if (rc)
		mr_cache_release(ep, mr); /* r went back to the pool: no completion will */
out:
	ep_unlock(ep);
	return rc;
}

int core_write(struct core_ep *ep, uint32_t peer, const void *buf, size_t len, uint64_t raddr, uint32_t rkey,
	       void *context)
{
	return rma(ep, peer, (void *)buf, len, raddr, rkey, context, true);
}

int core_read(struct core_ep *ep, uint32_t peer, void *buf, size_t len, uint64_t raddr, uint32_t rkey,
	      void *context)
{
	return rma(ep, peer, buf, len, raddr, rkey, context, false);
}

static int atomic_op(struct core_ep *ep, uint32_t peer, uint64_t raddr, uint32_t rkey, enum ibv_wr_opcode op,
		     uint64_t compare_add, uint64_t swap, uint64_t *result, void *context)
{
	struct stripe *s;
	struct conn *c;
	struct core_req *r;
	int rc;

	if (raddr & 7)
		return -EINVAL;
	ep_lock(ep);
	rc = begin(ep, peer, &s, &c, &r, NULL);
	if (rc)
		goto out;
	r->kind = REQ_ATOMIC;
	r->context = context;
	r->len = sizeof(uint64_t);
	r->tag = 0;
	r->flags = CORE_CQE_ATOMIC;
	r->result = result;

	struct ibv_sge sge = { .addr = (uintptr_t)r->bounce, .length = 8, .lkey = s->bounce_mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id_make(s->index, stripe_req_index(s, r)),
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.atomic = { .remote_addr = raddr, .compare_add = compare_add, .swap = swap, .rkey = rkey },
	};

	rc = finish(ep, s, c, r, &wr, false);
out:
	ep_unlock(ep);
	return rc;
}

int core_fetch_add(struct core_ep *ep, uint32_t peer, uint64_t raddr, uint32_t rkey, uint64_t add, uint64_t *result,
		   void *context)
{
	return atomic_op(ep, peer, raddr, rkey, IBV_WR_ATOMIC_FETCH_AND_ADD, add, 0, result, context);
}

int core_cmp_swp(struct core_ep *ep, uint32_t peer, uint64_t raddr, uint32_t rkey, uint64_t compare, uint64_t swap,
		 uint64_t *result, void *context)
{
	return atomic_op(ep, peer, raddr, rkey, IBV_WR_ATOMIC_CMP_AND_SWP, compare, swap, result, context);
}
