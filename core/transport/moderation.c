/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Completion moderation of RDMA WRITEs and READs (moderation.h).  A sequenced post
 * takes the connection's posting flag (try, never wait), so the order of
 * sequence numbers is the order of the send queue; the FIFO of unsignaled
 * wr_ids has one producer (the flag's holder) and one consumer (the
 * drainer of the connection's CQ, itself exclusive), so it needs no lock.
 */
#include "core/transport/endpoint_impl.h"

#include <errno.h>

static bool mod_try_own(const struct core_ep *ep, struct mod_state *m)
{
	if (ep->attr.threading == CORE_THREAD_SINGLE)
		return true;
	return atomic_load_explicit(&m->posting, memory_order_relaxed) == 0 &&
	       atomic_exchange_explicit(&m->posting, 1, memory_order_acquire) == 0;
}

static void mod_release(const struct core_ep *ep, struct mod_state *m)
{
	if (ep->attr.threading != CORE_THREAD_SINGLE)
		atomic_store_explicit(&m->posting, 0, memory_order_release);
}

static struct stripe *conn_cq_stripe(struct core_ep *ep, const struct conn *c)
{
	return &ep->stripes[c->stripe];
}

/* Posts wr as the next of c's sequence (the caller holds the posting flag). */
static int mod_post_owned(struct core_ep *ep, struct conn *c, struct core_req *r, struct ibv_send_wr *wr,
			  bool signaled)
{
	struct mod_state *m = &c->mod;
	struct stripe *cq_stripe = conn_cq_stripe(ep, c);
	uint32_t tail = atomic_load_explicit(&m->fifo_tail, memory_order_relaxed);
	int rc;

	r->mod_seq = m->seq;
	r->mod = signaled ? MOD_SIGNALED : MOD_UNSIGNALED;
	/* Counted before the post: its completion may be drained before conn_post returns. */
	atomic_fetch_add_explicit(&m->inflight, 1, memory_order_relaxed);
	if (signaled) {
		wr->send_flags |= IBV_SEND_SIGNALED;
		atomic_fetch_add_explicit(&m->signaled_out, 1, memory_order_relaxed);
	} else {
		wr->send_flags &= ~(unsigned)IBV_SEND_SIGNALED;
		atomic_store_explicit(&m->fifo[tail % MOD_FIFO].wr_id, wr->wr_id, memory_order_relaxed);
		atomic_store_explicit(&m->fifo[tail % MOD_FIFO].seq, m->seq, memory_order_relaxed);
		atomic_fetch_add_explicit(&cq_stripe->mod_unsignaled, 1, memory_order_relaxed);
		atomic_store_explicit(&m->fifo_tail, tail + 1, memory_order_release);
	}
	rc = conn_post(c, wr);
	if (rc) {
		/*
		 * Not posted: no completion names it or comes after it, and a
		 * drainer that still reads its entry sees a sequence number no
		 * completion has reached (the number is used again by the next post).
		 */
		if (signaled) {
			atomic_fetch_sub_explicit(&m->signaled_out, 1, memory_order_relaxed);
		} else {
			atomic_store_explicit(&m->fifo_tail, tail, memory_order_relaxed);
			atomic_fetch_sub_explicit(&cq_stripe->mod_unsignaled, 1, memory_order_relaxed);
		}
		atomic_fetch_sub_explicit(&m->inflight, 1, memory_order_relaxed);
		r->mod = MOD_NONE;
		return rc;
	}
	m->seq++;
	m->run = signaled ? 0 : m->run + 1;
	return 0;
}

int mod_post(struct core_ep *ep, struct conn *c, struct core_req *r, struct ibv_send_wr *wr)
{
	struct mod_state *m = &c->mod;
	int rc;

	if (!mod_try_own(ep, m))
		return conn_post(c, wr); /* another thread posts in the sequence: this one stays signaled */
	uint32_t queued = atomic_load_explicit(&m->fifo_tail, memory_order_relaxed) -
			  atomic_load_explicit(&m->fifo_head, memory_order_acquire);
	/*
	 * Signaled when the pipeline is shallow (a lone write must not wait for
	 * company), every MOD_SIGNAL_EVERY-th, and when the FIFO is full.
	 */
	bool signaled = atomic_load_explicit(&m->inflight, memory_order_relaxed) < MOD_SIGNAL_EVERY ||
			m->run + 1 >= MOD_SIGNAL_EVERY || queued >= MOD_FIFO;

	rc = mod_post_owned(ep, c, r, wr, signaled);
	mod_release(ep, m);
	return rc;
}

static struct core_req *req_of_wr_id(struct core_ep *ep, uint64_t wr_id, struct stripe **owner)
{
	*owner = &ep->stripes[wr_id_stripe(wr_id)];
	return &(*owner)->reqs[wr_id_index(wr_id)];
}

void mod_complete(struct core_ep *ep, struct stripe *drainer, struct core_req *r, uint64_t wr_id)
{
	struct conn *c = r->conn;
	struct mod_state *m = &c->mod;
	struct stripe *cq_stripe = conn_cq_stripe(ep, c);
	uint32_t head = atomic_load_explicit(&m->fifo_head, memory_order_relaxed);
	uint32_t tail = atomic_load_explicit(&m->fifo_tail, memory_order_acquire);

	while (head != tail) {
		struct mod_entry *f = &m->fifo[head % MOD_FIFO];
		uint64_t id = atomic_load_explicit(&f->wr_id, memory_order_relaxed);
		struct stripe *owner;
		struct core_req *q;

		if ((int32_t)(atomic_load_explicit(&f->seq, memory_order_relaxed) - r->mod_seq) > 0)
			break; /* posted after r: a later completion covers it */
		q = req_of_wr_id(ep, id, &owner);
		head++;
		atomic_store_explicit(&m->fifo_head, head, memory_order_release);
		atomic_fetch_sub_explicit(&cq_stripe->mod_unsignaled, 1, memory_order_relaxed);
		atomic_fetch_sub_explicit(&m->inflight, 1, memory_order_relaxed);
		if (id == wr_id)
			return; /* an unsignaled WR that failed or was flushed: the caller completes it */
		progress_complete_op(ep, drainer, owner, q, IBV_WC_SUCCESS);
	}
	if (r->mod == MOD_SIGNALED) {
		atomic_fetch_sub_explicit(&m->signaled_out, 1, memory_order_relaxed);
		atomic_fetch_sub_explicit(&m->inflight, 1, memory_order_relaxed);
	}
}

/* c's newest WRs are unsignaled and nothing signaled will complete them. */
static bool mod_tail_uncovered(struct mod_state *m)
{
	return atomic_load_explicit(&m->fifo_tail, memory_order_acquire) !=
		   atomic_load_explicit(&m->fifo_head, memory_order_relaxed) &&
	       !atomic_load_explicit(&m->signaled_out, memory_order_relaxed);
}

/*
 * A zero-length RDMA WRITE checks no key and moves no data (IBTA 9.7.4.1.5),
 * so it needs no remote buffer: UCX flushes its unsignaled WRs the same way.
 */
static void mod_flush_conn(struct core_ep *ep, struct stripe *s, struct conn *c)
{
	struct mod_state *m = &c->mod;
	struct core_req *r;

	if (!mod_tail_uncovered(m) || atomic_load_explicit(&c->dead, memory_order_relaxed) || !mod_try_own(ep, m))
		return;
	if (mod_tail_uncovered(m) && (r = stripe_req_alloc(s))) {
		struct ibv_send_wr wr = {
		    .wr_id = wr_id_make(s->index, stripe_req_index(s, r)),
		    .opcode = IBV_WR_RDMA_WRITE,
		    .send_flags = IBV_SEND_SIGNALED,
		};

		r->kind = REQ_MOD_FLUSH;
		r->conn = c;
		r->mr_entry = NULL;
		if (mod_post_owned(ep, c, r, &wr, true))
			stripe_req_free(s, r); /* the queue is full: its completions will come, and the next empty poll retries */
	}
	mod_release(ep, m);
}

void mod_flush_tails(struct core_ep *ep, struct stripe *s)
{
	uint32_t npeers;

	if (!atomic_load_explicit(&s->mod_unsignaled, memory_order_relaxed))
		return;
	npeers = atomic_load_explicit(&ep->npeers, memory_order_acquire);
	for (uint32_t i = 0; i < npeers; i++) {
		struct peer *p = ep->peers[i];

		/* Connection k reports to stripe k's CQ: the others are flushed where they drain. */
		if (p && s->index < p->nconn)
			mod_flush_conn(ep, s, &p->conns[s->index]);
	}
}
