/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A stripe: what one producing thread posts through.  It owns a send CQ,
 * a request table, a free-list of request indices (a lock-free ring, so any
 * thread may allocate and the completion drainer may free) and registered
 * bounce slots, one per request.  wr_id = stripe << WR_ID_STRIPE_SHIFT |
 * request index, so a completion drained by any thread finds its request
 * with two array lookups and no lock.
 */
#ifndef RDMATOOL_CORE_STRIPE_H
#define RDMATOOL_CORE_STRIPE_H

#include "core/transport/endpoint.h"
#include "core/transport/moderation.h"
#include "core/transport/ring.h"
#include "core/stats/stats.h"

#include <infiniband/verbs.h>
#include <stdatomic.h>
#include <stdint.h>

#define WR_ID_STRIPE_SHIFT 48
#define WR_ID_INDEX_MASK ((1ull << WR_ID_STRIPE_SHIFT) - 1)
#define WR_ID_MAX_STRIPE 0xffffu

static inline uint64_t wr_id_make(uint32_t stripe, uint32_t index)
{
	return ((uint64_t)stripe << WR_ID_STRIPE_SHIFT) | index;
}
static inline uint32_t wr_id_stripe(uint64_t wr_id)
{
	return (uint32_t)(wr_id >> WR_ID_STRIPE_SHIFT);
}
static inline uint32_t wr_id_index(uint64_t wr_id)
{
	return (uint32_t)(wr_id & WR_ID_INDEX_MASK);
}

enum req_kind {
	REQ_SEND_EAGER,
	REQ_SEND_RNDV, /* RTS sent; completes when its WC and the FIN both arrived */
	REQ_WRITE,
	REQ_READ,
	REQ_ATOMIC,
	REQ_CTRL,      /* FIN or CREDIT: no user completion */
	REQ_RNDV_READ, /* receiver pulling a rendezvous payload */
	REQ_MOD_FLUSH, /* zero-length signaled WRITE completing unsignaled ones (moderation.h) */
};

/* A request's place in its connection's moderation sequence (moderation.h). */
enum req_mod { MOD_NONE, MOD_UNSIGNALED, MOD_SIGNALED };

struct rx_recv;
struct conn;
struct mr_cache_entry;

struct core_req {
	uint8_t kind;
	uint8_t mod;	  /* enum req_mod */
	uint32_t mod_seq; /* sequence number on its connection, unless MOD_NONE */
	void *context;
	uint64_t len;
	uint64_t tag;
	uint32_t flags;
	uint64_t *result;	/* atomics */
	struct rx_recv *recv;	/* REQ_RNDV_READ */
	struct conn *conn;
	uint64_t remote_sreq;	/* REQ_RNDV_READ: the sender's request, echoed in FIN */
	_Atomic int rndv_events; /* REQ_SEND_RNDV: 2 = WC + FIN */
	_Atomic uint32_t rndv_status;
	/* REQ_SEND_RNDV waiting for its FIN: the connection's id (conn_id), else 0.
	 * Whoever clears it (the FIN, or the sweep of a dead connection) owns the FIN's share. */
	_Atomic uint32_t rndv_armed;
	unsigned char *bounce;	/* registered, hdr + eager_max bytes */
	struct mr_cache_entry *mr_entry; /* the user buffer's registration, held until completion */
};

/* Room for a full poll's completions, each completing a moderated run before it. */
#define STRIPE_BACKLOG (STRIPE_POLL * (MOD_SIGNAL_EVERY + 1))
#define STRIPE_POLL 16 /* work completions a drain takes at once */

struct stripe {
	uint32_t index;
	struct ibv_cq *cq; /* NULL for the receive engine's pseudo-stripe */
	struct core_req *reqs;
	uint32_t nreqs;
	struct ring *free; /* uint32_t request indices */
	unsigned char *bounce;
	struct ibv_mr *bounce_mr;
	uint32_t bounce_size;
	/* Drain ownership: one thread drains this stripe's CQ at a time (try, never wait). */
	_Alignas(64) _Atomic int draining;
	/* Completions the ring had no room for, owned by the draining thread. */
	struct core_cqe backlog[STRIPE_BACKLOG];
	int backlog_head, backlog_len;
	/* Unsignaled writes waiting in the moderation FIFOs of this stripe's connections. */
	_Atomic uint32_t mod_unsignaled;
	struct stats_entry *stats;
};

/* label names the endpoint in the stats entry ("a.stripe0"): two endpoints of one process stay apart. */
int stripe_init(struct stripe *s, const char *label, uint32_t index, struct ibv_pd *pd, struct ibv_cq *cq,
		uint32_t nreqs, uint32_t bounce_size);
void stripe_fini(struct stripe *s);
/* A free request, or NULL (pool empty: the caller returns -EAGAIN). */
struct core_req *stripe_req_alloc(struct stripe *s);
void stripe_req_free(struct stripe *s, struct core_req *r);
static inline uint32_t stripe_req_index(const struct stripe *s, const struct core_req *r)
{
	return (uint32_t)(r - s->reqs);
}

#endif
