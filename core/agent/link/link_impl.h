/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * What the link files share (core/agent/link/link.h is the contract): the
 * state of an agent's links and the functions one part calls in another.
 * The files are layers by role, and every call points down (the structure
 * test, tests/agent_calls.py, fails on a loop):
 *   open.c      top: opening and closing the links; what a peer going down drops
 *   link.c      top: the progress pass and its dispatch of what comes in, stats, sleeping
 *   connect.c   the out-of-band handshake: ranks, key proof, addresses; peers joining
 *   steal.c     siblings sharing the READ backlog (core/chan/steal.h)
 *   target_in.c requests in: whole ones queued, large ones put together from chunks or READs
 *   target.c    channel operations for queued requests, answers out; target items
 *   origin.c    requests out, their answers in
 *   rx.c        receives in link order, parsed into items handed to the caller's dispatch
 *   tx.c        eager buffers, large frames, aggregation, posting
 *   peer.c      bottom: the peer table; a peer going down (the layers above hear of it through
 *               peer_gone, set by open.c)
 */
#ifndef RDMATOOL_CORE_AGENT_LINK_LINK_IMPL_H
#define RDMATOOL_CORE_AGENT_LINK_LINK_IMPL_H

#include "core/agent/link/link.h"

#include "core/agent/agent.h"
#include "core/chan/agent_key.h"
#include "core/agent/aggregate.h"
#include "core/chan/channel.h"
#include "core/chan/flow.h"
#include "core/agent/pool.h"
#include "core/chan/sibling.h"
#include "core/chan/steal.h"
#include "core/agent/strip.h"
#include "core/oob/oob.h"
#include "core/transport/endpoint.h"
#include "core/util/clock.h"
#include "core/util/sha256.h"

#include <errno.h>
#include <malloc.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#define LINK_TX_BUFS	   4 /* eager buffers per target node */
#define LINK_LARGE_MAX	   (PROTO_HEADER_SIZE + PROTO_CHUNK_SIZE + GW_INLINE) /* a chunk, or a DATA answer */
#define LINK_TAG_EAGER	   1 /* core tags: eager buffers and large frames land in their own receives */
#define LINK_TAG_LARGE	   2
#define LINK_TAG_SEQ_SHIFT 8
#define LINK_ORIGIN_MAX	   1024 /* requests in flight from this agent */
#define LINK_RETRY_NS	   200000000ull
#define LINK_CHAN_CACHE	   32
#define PORT_BIND_BITS	   10 /* a port's binding: a slot of a direct-mapped table per peer */
#define PORT_BINDINGS	   (1u << PORT_BIND_BITS)

/* What went out to a peer, waiting for its send completion (the core context of the send). */
enum unit_kind { UNIT_EAGER, UNIT_LARGE };

struct unit {
	uint8_t kind;
	uint64_t charge[FLOW_NKINDS]; /* bytes it holds of the flow-control gauges, given back when sent */
	bool orphan;		      /* its peer went down meanwhile: freed on completion, nothing else */
	bool rndv;		      /* core moves it by rendezvous (longer than its eager limit) */
	uint32_t rank;
	struct unit *next; /* in the peer's post queue */
};

/* One of a peer's LINK_TX_BUFS eager buffers. */
struct txbuf {
	struct unit u;
	bool busy; /* queued to post or in flight */
	struct agg_buffer agg;
};

/* A large frame: one item (header, then its body) in a message of its own. */
struct large {
	struct unit u;
	size_t len;
	uint8_t frame[];
};

/*
 * A message that arrived before one sent ahead of it: eager buffers and
 * large frames land in different receives, and one that found no receive
 * posted waits in core's unexpected list while later ones complete.  It is
 * read once the ones before it are (its receive stays taken meanwhile).
 */
struct held {
	struct held *next;
	uint64_t seq;
	uint8_t *buf;
	size_t len;
	bool large, ok;
};

/* An item that found no room on the link yet; kept in order behind the others of its peer. */
struct waiting {
	struct waiting *next;
	struct proto_header h;
	uint64_t token; /* a request to finish (status 0) once the item is on the link, or LINK_NO_TOKEN */
	size_t len;	/* eager data, or a large frame's body */
	bool large;
	enum flow_kind kind; /* the gauge charge counts in */
	uint64_t charge;
	uint8_t data[];
};

struct link_peer {
	bool up;
	struct oob_conn *oob;
	uint32_t core_peer;
	uint64_t next_try_ns;
	struct gw_peer_stats stats;
	/* Sending: the buffer being filled, the units ready to post in order, and what is in flight. */
	struct txbuf *tx[LINK_TX_BUFS];
	struct txbuf *open;
	struct unit *post_head, **post_tail;
	uint32_t eager_out, rndv_out; /* in flight, by how core moves them (see post_units) */
	uint32_t epoch;		      /* links down so far: a READ from an older link answers nobody */
	uint64_t tx_seq, rx_next;     /* sequence numbers (in the core tag) of the next message each way */
	struct held *held;
	struct waiting *wait_head, **wait_tail;
	uint32_t nwaiting;
	/* Ports: our bindings toward it (name per slot, "" = none) and its bindings toward us. */
	char (*bind_out)[PROTO_NAME_MAX + 1];
	char (*bind_in)[PROTO_NAME_MAX + 1];
};

struct origin {
	bool used;
	bool cancelled; /* a CANCEL went out: its client died (GETMSG only) */
	uint64_t port;	/* the request's, which a CANCEL names */
	uint32_t node;
	uint16_t gen;
	uint8_t op;
	uint64_t token;
	uint8_t *answer; /* a GETMSG answer arriving in chunks */
	uint64_t answer_total, answer_got;
};

/* A large message from a peer being put together from its chunks. */
struct reasm {
	struct reasm *next;
	uint32_t from;
	uint64_t id, total, got;
	int status;	       /* 0, or why the message will be answered with an error */
	struct target_item *t; /* its data fills t->data */
};

/* A request from a peer waiting for its channel. */
struct target_item {
	struct target_item *next;
	uint32_t from;
	struct proto_header h;
	char name[PROTO_NAME_MAX + 1];
	uint64_t deadline_ns; /* 0: forever */
	bool deposited;
	uint64_t seq;
	uint32_t reads_left; /* rma chunks still being read into data: not served before they are */
	int read_status;     /* 0, or why a chunk could not be read */
	bool orphan;	     /* dropped while reads_left: the last read frees it */
	/*
	 * A large message's bytes are on the heap, big_len of them, taken (and charged to the heap
	 * gauge) when its first READ is posted, so READs wait while the gauge is full; else in data.
	 */
	uint8_t *big;
	uint64_t big_len;
	struct flow_gauge *heap;
	size_t len;
	uint8_t data[];
};

/* Where a request's data is: its large message's buffer, or the bytes after it. */
static inline uint8_t *target_data(struct target_item *t)
{
	return t->big ? t->big : t->data;
}

/*
 * A READ of one rma chunk into its message (the core context of the READ),
 * or, with board set, one stolen from a sibling into that sibling's board.
 */
struct rma_read {
	struct rma_read *next; /* waiting for a request or ejection room */
	struct target_item *t;
	struct steal_board *board; /* a sibling's: this READ is stolen (t is NULL) */
	int slot;		   /* its slot there */
	uint32_t sibling;	   /* its owner */
	uint32_t from, epoch;
	uint64_t offset, port;
	struct proto_rma rma;
};

/* A connection not proven yet (connect.c): advanced a frame at a time, never waited for. */
#define LINK_HS_MAX 32
#define NONCE_LEN   16
enum hs_state { HS_WAIT_CHALLENGE, HS_WAIT_HELLO, HS_WAIT_PROOF };
struct hello {
	uint32_t rank, node, siblings;
	uint8_t nonce[NONCE_LEN];
};
struct handshake {
	struct oob_conn *c; /* NULL: a free slot */
	int32_t dialing;    /* the rank we dialled; an acceptor learns the dialer's from its HELLO */
	enum hs_state state;
	uint64_t deadline_ns;
	struct hello hello;	  /* ours (dialer) or theirs (acceptor) */
	uint8_t nonce[NONCE_LEN]; /* the acceptor's, which the PROOF covers */
	uint32_t node, siblings;  /* the peer's, once proven */
};

/* What rx hands each item it reads to: the progress pass's dispatch (link.c). */
typedef void link_take_fn(struct agent_links *lk, uint32_t from, const struct proto_header *h,
			  const uint8_t *body, size_t len);

struct agent_links {
	struct link_config cfg;
	/* A peer went down (link_peer_down): what the layers above hold for it goes (set by open.c). */
	void (*peer_gone)(struct agent_links *lk, uint32_t rank);
	char dir[4096];
	struct core_ep *ep;
	struct oob_listener *listener;
	struct link_peer *peers;
	uint32_t max_items;	/* per eager buffer: AGG_MAX_ITEMS, or 1 with aggregation off */
	bool rma;		/* RDMATOOL_AGENT_TRANSPORT_TYPE=rma: large SENDMSGs are read by the target */
	bool hugepages;		/* RDMATOOL_AGENT_HUGEPAGES=1 */
	bool steal;		/* RDMATOOL_AGENT_STEAL (default 1): siblings share the READ backlog */
	struct agent_pool pool; /* receive buffers, and rma's slots targets read chunks from */
	struct rma_read *reads_waiting, **reads_tail;
	/* Stealing (core/chan/steal.h): our board and what waits on it, and the siblings' boards. */
	struct steal_board *board;
	struct rma_read *offered[STEAL_SLOTS];
	uint64_t offered_ns[STEAL_SLOTS];
	struct steal_board *sib[AGENT_SIBLINGS_MAX];
	uint32_t sib_reads[AGENT_SIBLINGS_MAX]; /* READs in flight into each sibling's board */
	uint32_t stealing;			/* all of them */
	uint64_t steals, steal_bytes, stolen, next_steal_check_ns;
	struct strip strip;	 /* the random order targets get their next unit in */
	uint32_t core_eager_max; /* core sends longer messages by rendezvous */
	struct origin origins[LINK_ORIGIN_MAX];
	uint32_t next_origin;
	struct target_item *pending, **pending_tail;
	char (*blocked)[PROTO_NAME_MAX + 1]; /* link_serve_pending's channels blocked this pass */
	size_t nblocked_max;
	struct reasm *reasm; /* large messages arriving in chunks */
	uint64_t reasm_bytes;
	uint8_t *rx_pool; /* eager receive buffers, then large ones: the start of pool */
	int nrx, nlarge;
	struct flow_gauge flow[FLOW_NKINDS];
	uint8_t *scratch; /* a DATA body: status, then a GETMSG's message */
	struct proto_errors errors;
	uint64_t next_oob_check_ns;
	unsigned char key[AGENT_KEY_LEN];
	/* Channels this agent serves, kept mapped: mapping and unmapping per request costs more than the
	 * request. */
	struct cached_chan {
		char name[PROTO_NAME_MAX + 1];
		struct chan *c;
		dev_t dev;
		ino_t ino;
		uint64_t checked_ns; /* when the name last led to this file (LINK_CHAN_RECHECK_NS) */
	} cache[LINK_CHAN_CACHE];
	uint32_t cache_next;
	uint64_t corrupt_log_ns; /* a corrupt channel is logged again after this */
	uint64_t next_orphan_check_ns;
	uint64_t copied;    /* bytes of items and messages this agent copied with the CPU (gw_agent_stats) */
	uint64_t nic_bytes; /* bytes this agent had its NIC send or READ */
	struct handshake hs[LINK_HS_MAX];
	uint64_t hs_log_ns[2]; /* a failed handshake is logged again after this (other failures, the key's) */
};

/* Ranks of one node are siblings: they never link (they share work through memory instead). */
static inline bool same_node(const struct agent_links *lk, uint32_t a, uint32_t b)
{
	uint32_t n = lk->cfg.siblings ? lk->cfg.siblings : 1;

	return a / n == b / n;
}

/* peer.c */
const char *link_peer_name(const struct agent_links *lk, uint32_t rank, char *out, size_t len);
void link_peer_addr(struct agent_links *lk, uint32_t rank, char *out, size_t len);
void link_peer_down(struct agent_links *lk, uint32_t rank, const char *why);
/* tx.c */
int link_peer_tx_init(struct agent_links *lk, uint32_t rank);
void link_unit_free(struct agent_links *lk, struct unit *u);
void link_unit_release(struct agent_links *lk, struct unit *u);
void link_close_open(struct link_peer *p);
int link_tx_item(struct agent_links *lk, uint32_t rank, struct proto_header h, const void *body, size_t len,
		 uint64_t token, enum flow_kind kind, uint64_t charge);
bool link_lone_on_idle_link(const struct link_peer *p);
int link_tx_post(struct agent_links *lk);
int link_tx_progress(struct agent_links *lk);
void link_send_done(struct agent_links *lk, struct unit *u, const struct core_cqe *e);
void link_drop_waiting(struct agent_links *lk, uint32_t rank, int status);
/* rx.c */
uint8_t *link_rx_buf(struct agent_links *lk, int i);
int link_rx_post(struct agent_links *lk, uint8_t *buf, bool large);
void link_drop_held(struct agent_links *lk, uint32_t rank);
void link_rx_complete(struct agent_links *lk, const struct core_cqe *e, link_take_fn *take);
/* origin.c */
void link_finish_origin(struct agent_links *lk, uint32_t idx, int status, const void *data, size_t len);
int link_cancel_orphans(struct agent_links *lk);
void link_take_answer(struct agent_links *lk, uint32_t from, const struct proto_header *h,
		      const uint8_t *body, size_t len);
void link_take_read_done(struct agent_links *lk, uint32_t from, const uint8_t *body);
void link_origins_down(struct agent_links *lk, uint32_t rank);
/* target.c */
void link_target_free(struct target_item *t);
void link_target_destroy(struct target_item *t);
int link_target_reserve(struct target_item *t);
void link_answer(struct agent_links *lk, const struct target_item *t, int status, const struct chan_state *st,
		 size_t msg_len);
void link_serve_pending(struct agent_links *lk);
void link_queue_request(struct agent_links *lk, struct target_item *t);
void link_take_connect(struct agent_links *lk, uint32_t from, const struct proto_header *h,
		       const uint8_t *eager, size_t len);
void link_take_cancel(struct agent_links *lk, uint32_t from, const struct proto_header *h);
void link_drop_pending(struct agent_links *lk, uint32_t rank);
/* target_in.c */
void link_take_request(struct agent_links *lk, uint32_t from, const struct proto_header *h,
		       const uint8_t *payload, size_t payload_len);
void link_take_chunk(struct agent_links *lk, uint32_t from, const struct proto_header *h,
		     const struct proto_chunk *c, const uint8_t *data, size_t len);
void link_take_rma(struct agent_links *lk, uint32_t from, const struct proto_header *h,
		   const struct proto_chunk *c, const struct proto_rma *rma);
void link_read_finish(struct agent_links *lk, struct rma_read *rd, int status);
int link_reads_progress(struct agent_links *lk);
void link_read_complete(struct agent_links *lk, struct rma_read *rd, int status);
void link_drop_reasm(struct agent_links *lk, uint32_t from, bool all);
void link_drop_reads(struct agent_links *lk, uint32_t from, bool all);
/* steal.c */
void link_steal_open(struct agent_links *lk);
bool link_offered_any(const struct agent_links *lk);
void link_steal_complete(struct agent_links *lk, struct rma_read *rd, int status);
int link_steal_pass(struct agent_links *lk, uint64_t now);
void link_drop_offered(struct agent_links *lk, uint32_t from, bool all);
/* connect.c */
bool link_handshakes_pending(const struct agent_links *lk);
int link_handshake_fds(const struct agent_links *lk, struct pollfd *fds, int max);
void link_handshakes_close(struct agent_links *lk);
void link_peer_mismatch(struct agent_links *lk, uint32_t node, uint32_t theirs);
int link_connect_peers(struct agent_links *lk);

#endif
