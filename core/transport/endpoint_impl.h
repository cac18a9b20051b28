/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The endpoint's insides, shared by endpoint*.c, cq.c, progress.c and mr_cache.c. */
#ifndef RDMATOOL_CORE_ENDPOINT_IMPL_H
#define RDMATOOL_CORE_ENDPOINT_IMPL_H

#include "hw/hw.h"
#include "core/transport/endpoint.h"
#include "core/transport/ring.h"
#include "core/transport/rx.h"
#include "core/stats/stats.h"
#include "core/transport/stripe.h"

#include <pthread.h>
#include <stdatomic.h>

#define CORE_MAX_PEERS 256

enum msg_type { CORE_MSG_EAGER = 1, CORE_MSG_RTS, CORE_MSG_FIN, CORE_MSG_CREDIT };

/* Every two-sided message starts with this header (receive buffers hold hdr + eager_max). */
struct msg_hdr {
	uint8_t type;
	uint8_t tagged;
	uint16_t reserved;
	uint32_t credits; /* the sender's cumulative consumed receives on this connection */
	uint64_t tag;
	uint64_t len;
	uint64_t addr;	  /* RTS: where to READ from */
	uint32_t rkey;
	uint32_t reserved2;
	uint64_t sreq;	  /* RTS: the sender's wr_id, echoed by FIN */
};

/*
 * One RC QP: stripe `stripe` of this endpoint to the same stripe of one peer.
 * A peer with fewer stripes gets fewer of these; stripes beyond share them.
 */
struct rdma_cm_id;
/*
 * Every RC connection's transport timers, whichever path connected it (the
 * address exchange's modify_qp or the connection manager's
 * RDMA_OPTION_ID_ACK_TIMEOUT and retry_count): see conn_connect.
 */
#define CORE_QP_TIMEOUT	  18
#define CORE_QP_RETRY_CNT 7

struct conn {
	struct ibv_qp *qp;
	struct rdma_cm_id *cm_id; /* the connection manager's id that connected qp (NULL: oob) */
	uint32_t peer, stripe;
	uint32_t remote_rx_depth;
	uint32_t sq_psn; /* our initial send PSN, sent to the peer in the address blob */
	_Atomic uint32_t sent;		/* messages sent = receive credits used */
	_Atomic uint32_t peer_consumed; /* peer's consumed receives, from headers */
	_Atomic uint32_t consumed;	/* our consumed (reposted) receives */
	_Atomic uint32_t reported;	/* highest `consumed` we told the peer */
	_Atomic int dead;		/* the QP reported an error: posts fail */
	_Atomic uint32_t rndv_out;	/* rendezvous sends waiting for a FIN */
	uint64_t last_probe_ns;		/* receive engine's: last keepalive while rndv_out > 0 */
	unsigned char *rxbuf;
	struct ibv_mr *rx_mr;
	uint32_t slot_size;
	struct mod_state mod; /* completion moderation of writes (moderation.c) */
};

struct peer {
	uint32_t id;
	uint32_t nconn;
	uint32_t eager_max; /* min of both ends */
	struct conn *conns;
};

/* A posted user receive; indices travel through the post ring. */
struct rx_recv {
	void *buf;
	size_t len;
	uint64_t tag, ignore;
	bool tagged;
	void *context;
	struct rx_recv *next; /* receive engine's list */
};

/* An arrived message nobody was waiting for. */
struct rx_unexpected {
	struct msg_hdr hdr;
	uint32_t peer;
	struct conn *conn;
	void *data; /* eager payload copy */
	struct rx_unexpected *next;
};

struct rx_pending_read {
	struct rx_recv *recv;
	struct msg_hdr hdr;
	struct conn *conn;
	struct rx_pending_read *next;
};

struct fin_retry {
	struct conn *conn;
	uint64_t sreq;
};

/*
 * One cached registration.  Allocated on its own (requests in flight point
 * at it); the counters sit on their own cache line so that threads bumping
 * them do not slow down the lookups scanning the slot array.
 */
struct mr_cache_entry {
	struct ibv_mr *mr;
	uint32_t pins;			/* core_mr_reg holds (under ctrl): never evicted */
	struct mr_cache_entry *next;	/* on the dropped list, or a victim list */
	/*
	 * One atomic for the hit path: the low MR_USERS_BITS count operations in
	 * flight (at most stripes * depth + the receive engine's requests, far
	 * below 2^24), the bits above count lookups that found it (hits).
	 */
	_Alignas(64) _Atomic uint64_t uses;
	_Atomic uint64_t last_use;	/* ep->mr_clock at the latest lookup: LRU order */
};
#define MR_USERS_BITS 24
#define MR_USERS_MASK ((1ull << MR_USERS_BITS) - 1)
#define MR_HIT (1ull << MR_USERS_BITS)

/* What lookups scan: the range next to the entry, in one contiguous array. */
struct mr_cache_slot {
	uintptr_t start, end;
	struct mr_cache_entry *entry;
};

struct core_ep {
	struct core_ep_attr attr;
	char label[16]; /* attr.name, else "ep<N>": its stats entries' prefix */
	struct ibv_context *ctx;
	struct hw_device device; /* which device ctx is */
	struct ibv_pd *pd;
	union ibv_gid gid;
	uint16_t lid;
	enum ibv_mtu mtu;
	int nstripes;
	struct stripe *stripes;	 /* nstripes + 1: the last is the receive engine's */
	struct ibv_cq *rx_cq;
	/* Every hardware CQ above reports here: manual-progress cq_sread sleeps on its fd. */
	struct ibv_comp_channel *cq_channel;
	/* The connection manager's event channel for this endpoint's ids (endpoint_cm.c), NULL until used. */
	struct rdma_event_channel *cm_channel;

	/* Completion queue: the MPSC ring, its wait fd and sleepers count. */
	struct ring *cq_ring;
	int cq_fd;
	_Atomic int cq_sleepers;
	struct stats_entry *cq_stats;

	/* Receive engine: one owner at a time (try-acquire), everything below is its own. */
	struct rx_sm rx_sm;
	_Alignas(64) _Atomic int rx_busy;
	struct rx_recv *recv_pool;
	struct ring *recv_free, *recv_post; /* uint32_t indices */
	struct rx_recv *posted_head, *posted_tail;
	struct rx_unexpected *unexp_head, *unexp_tail;
	struct rx_pending_read *pending_reads;
	struct ring *fin_retry; /* struct fin_retry: FINs that found no credit */
	uint64_t last_keepalive_ns;

	/* Control plane. */
	pthread_mutex_t ctrl;
	/* MR cache (mr_cache.c): the slots change under ctrl + the write side of mr_lock. */
	pthread_rwlock_t mr_lock;
	struct mr_cache_slot *mrs;
	int nmrs, mr_cap;
	struct mr_cache_entry *mr_dropped; /* core_mr_dereg'd, still in flight */
	_Atomic uint64_t mr_clock;	   /* ticks at each miss */
	_Atomic int mr_trim;		   /* over the bound or dropped entries pending: releases trim */
	uint64_t mr_misses, mr_evictions, mr_drops, mr_gone_hits; /* under ctrl */
	struct peer *peers[CORE_MAX_PEERS];
	_Atomic uint32_t npeers;	/* published: peers[0..npeers) are immutable */
	uint32_t nprepared;

	/* Global lock mode. */
	pthread_mutex_t glock;
	bool global;

	/* Progress thread. */
	pthread_t progress_tid;
	_Atomic int progress_run;
	bool progress_started;
};

#define HDR_SIZE ((uint32_t)sizeof(struct msg_hdr))

static inline void ep_lock(struct core_ep *ep)
{
	if (ep->global)
		pthread_mutex_lock(&ep->glock);
}
static inline void ep_unlock(struct core_ep *ep)
{
	if (ep->global)
		pthread_mutex_unlock(&ep->glock);
}

static inline struct stripe *rx_stripe(struct core_ep *ep)
{
	return &ep->stripes[ep->nstripes];
}

/* Published peer, or NULL. */
static inline struct peer *ep_peer(struct core_ep *ep, uint32_t id)
{
	if (id >= atomic_load_explicit(&ep->npeers, memory_order_acquire))
		return NULL;
	return ep->peers[id];
}

/* A connection's non-zero id within its endpoint (rndv_armed). */
static inline uint32_t conn_id(const struct conn *c)
{
	return c->peer * 128u + c->stripe + 1;
}

/* cq.c */
int cq_init(struct core_ep *ep, uint32_t size);
void cq_fini(struct core_ep *ep);
/* Pushes one completion; -EAGAIN when the ring is full. */
int cq_push(struct core_ep *ep, const struct core_cqe *e);
/* Wakes a manual-progress cq_sread sleeper: work arrived that no CQ event announces. */
void cq_wake(struct core_ep *ep);
/* Takes and acknowledges every pending channel event (before the CQs are destroyed). */
void cq_channel_drain(struct core_ep *ep);

/* progress.c */
int progress_start(struct core_ep *ep, char *err, size_t errlen);
void progress_stop(struct core_ep *ep);
/* Drains this thread's own stripe, and every PROGRESS_FULL_EVERY calls all of them (progress.c). */
int progress_once(struct core_ep *ep);
/* Drains every stripe: the progress thread, core_progress(), and before a sleep. */
int progress_all(struct core_ep *ep);
/* The stripe this thread posts on (endpoint_ops.c), or -1: none yet, or only one stripe. */
int progress_own_stripe(const struct core_ep *ep);
bool progress_flush_backlog(struct core_ep *ep, struct stripe *s);
void progress_emit(struct core_ep *ep, struct stripe *s, const struct core_cqe *e);
/* r (of stripe owner) completed with status: its registration and slot go back, the user hears. */
void progress_complete_req(struct core_ep *ep, struct stripe *drainer, struct stripe *owner, struct core_req *r,
			   uint32_t status);
/* r's work request completed with status: what its kind does then (a rendezvous READ sends its FIN...). */
void progress_complete_op(struct core_ep *ep, struct stripe *drainer, struct stripe *owner, struct core_req *r,
			  uint32_t status);
/* A FIN names one of our rendezvous sends. */
void progress_fin(struct core_ep *ep, uint64_t sreq, struct stripe *drainer);
/* Marks c dead (first caller only) and fails its rendezvous sends still waiting for a FIN. */
void progress_conn_dead(struct core_ep *ep, struct conn *c, struct stripe *drainer);

/* endpoint_rx.c */
int rx_init(struct core_ep *ep);
void rx_fini(struct core_ep *ep);
int rx_progress(struct core_ep *ep);
int rx_post_buffer(struct conn *c, uint32_t slot);

/* endpoint_ops.c */
int conn_take_credit(struct conn *c, bool ctrl);
/* Posts wr on c's QP: 0, -EAGAIN (send queue full) or another negative errno. */
int conn_post(struct conn *c, struct ibv_send_wr *wr);
int post_ctrl_msg(struct core_ep *ep, struct conn *c, uint8_t type, uint64_t sreq);
void fill_hdr(struct conn *c, struct msg_hdr *h, uint8_t type);

/* mr_cache.c */
/* A registration covering [addr, addr+len), held for one operation until mr_cache_release. */
int mr_cache_lookup(struct core_ep *ep, const void *addr, size_t len, struct mr_cache_entry **entry);
/* The operation holding entry completed (NULL: none held). */
void mr_cache_release(struct core_ep *ep, struct mr_cache_entry *entry);
/* A request's registration, if it holds one, goes back before the request is freed. */
static inline void req_release_mr(struct core_ep *ep, struct core_req *r)
{
	struct mr_cache_entry *e = r->mr_entry;

	r->mr_entry = NULL;
	mr_cache_release(ep, e);
}
void mr_cache_fini(struct core_ep *ep);

struct oob_conn;
/* endpoint.c: the connect path's pieces, shared with the connection manager's (endpoint_cm.c). */
/* Creates c's QP (through the CM id when there is one, else directly) in INIT, its receives posted. */
int conn_create(struct core_ep *ep, struct conn *c, uint32_t peer, uint32_t stripe, struct rdma_cm_id *cm_id);
/* Adds a peer slot with nconn (empty) connections; it must be published before the next one. */
int peer_add(struct core_ep *ep, uint32_t nconn, struct peer **out);
/* Publishes p (all its connections up): data calls may use it from now on. */
int peer_publish(struct core_ep *ep, struct peer *p, uint32_t remote_eager_max, uint32_t *peer);
/* A connect that failed gives its unpublished slot back (the newest one only). */
void peer_drop(struct core_ep *ep, uint32_t slot);

/* endpoint_cm.c */
bool ep_uses_cm(const struct core_ep *ep);
int ep_cm_connect_oob(struct core_ep *ep, struct oob_conn *conn, uint32_t *peer);
int ep_cm_connect_pair(struct core_ep *a, struct core_ep *b, uint32_t *pa, uint32_t *pb);
void ep_cm_close(struct core_ep *ep);

#endif
