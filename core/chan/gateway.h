/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The gateway: client processes' requests for channels on other nodes, handed
 * to their local agent through shared memory (<dir>/gateway.<rank>, or
 * gateway.<rank>.<sibling> for the other agents of a node).
 *
 * It is a fixed array of request slots.  A client claims a FREE slot with a
 * compare-and-swap, fills it, stamps it with a ticket and marks it READY; the
 * agent (the single consumer) serves READY slots in ticket order, so one
 * client's requests keep their order.  No FREE slot: the call returns -EAGAIN
 * at once (the seed: gateway backpressure reaches the user as an error code).
 * The client sleeps on its slot's state word (a futex) until the agent marks
 * it DONE; it yields a few times first when the answer comes from the local
 * agent alone (buffered sends), and for up to twice the usual wait (a running
 * average, bounded) when it comes from another node, as long as its yields
 * find the CPU otherwise idle.  A client killed mid-request leaves a
 * CLAIMED or DONE slot that the agent reclaims once the client's pid is gone;
 * a client that gives up waiting marks its slot ABANDONED and the agent
 * frees it.
 * An agent that dies is noticed by clients through its pid file lock
 * (core/chan/pidfile.h): they get -ENOTCONN, not a hang.
 *
 * Layout: struct gw_shared, then GW_SLOTS slots of struct gw_slot.  Clients
 * copy and validate the header before use (gw_open); every slot index and
 * length comes from the caller's side or is bounded again on read.
 */
#ifndef RDMATOOL_CORE_CHAN_GATEWAY_H
#define RDMATOOL_CORE_CHAN_GATEWAY_H

#include "core/chan/channel.h"
#include "core/chan/flow.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Slots: requests a node's clients may have queued at once.  128, not 32:
 * with 32, four clients streaming small sends filled the gateway while the
 * agent's 4 eager buffers per peer were in flight, slept on EAGAIN, and the
 * next buffer left a quarter empty (18-20 items of 26; bench agent_rate
 * 64 B: 195-214k msg/s with 32, 250-278k with 128, 26 items per buffer).
 * Pages of the file are only taken as slots are written, and only the first
 * GW_LARGE_SLOTS take requests beyond GW_SMALL_INLINE bytes or receives
 * (whose answers may be as large): the memory a full gateway holds stays
 * about 32 x GW_INLINE, as it was.
 */
#define GW_SLOTS	128
#define GW_LARGE_SLOTS	32
#define GW_SMALL_INLINE 4096u
#define GW_INLINE	(512u << 10) /* payload carried in a slot */
#define GW_FILE_PREFIX	"gateway."
#define GW_MAX_NODES	256
#define GW_HOST_LEN	64

enum gw_op { GW_OP_SEND = 1, GW_OP_RECV = 2, GW_OP_POLL = 3 };

/* What a client asks for; the agent fills status, len and state. */
struct gw_request {
	uint32_t op;   /* enum gw_op */
	uint32_t mode; /* enum agent_send_mode, for sends */
	uint32_t node; /* target rank */
	int32_t timeout_ms;
	char name[CHAN_NAME_MAX + 1];
	/*
	 * A send larger than a slot goes as several requests, chunks in order:
	 * msg_total bytes in all (0: not chunked), this one at msg_offset, all
	 * with the client's msg_id.  Only the last chunk carries the caller's
	 * mode; the others are buffered.
	 */
	uint64_t msg_id, msg_total, msg_offset;
	uint64_t cap; /* receives: the caller's buffer; a larger message stays in the channel (-EMSGSIZE) */
};

/* The agent's view of itself, for clients and `agent status`. */
/* Traffic with one remote agent, as its link counted it (agent status shows it). */
struct gw_peer_stats {
	uint64_t msgs_sent, bytes_sent, msgs_recv, bytes_recv;
	uint64_t retries;   /* tries of a peer's request that found its channel not ready */
	int32_t last_error; /* 0 or the last negative errno of a send or a request to that peer */
	/* Aggregation: eager buffers sent and the items they carried (items / buffers = the factor). */
	uint64_t buffers_sent, buffer_items_sent, buffers_recv;
	uint64_t large_sent;	       /* items too big for an eager buffer, each a message of its own */
	uint32_t eager_in_use;	       /* eager buffers filling, queued or in flight now (of 4) */
	uint32_t waiting, waiting_hwm; /* items waiting for a free eager buffer, now and at most */
	uint32_t agents_per_node;      /* what the peer's node said it runs (0: not met yet) */
};

/* This agent's own counters (not per peer). */
#define GW_AGENT_STATS 18
struct gw_agent_stats {
	uint64_t steals, steal_bytes;		      /* large-message READs this agent did for a sibling */
	uint64_t stolen;			      /* READs of this agent's backlog that siblings did */
	uint64_t pool_bytes;			      /* the region registered once (core/agent/pool.h) */
	uint64_t pool_slots, slots_in_use, slots_hwm; /* its rma staging slots */
	uint64_t hugepages, hugepages_asked;	      /* 1: the region is on hugepages / they were asked for */
	uint64_t tx_buffers, tx_hwm;		      /* eager send buffers in the region, taken at most */
	uint64_t frames, frames_hwm;		      /* large frames (GETMSG data, p2p chunks) likewise */
	uint64_t fallbacks;			      /* buffers taken from the heap: the region's were all taken */
	uint64_t registrations;			      /* MR cache misses of the link endpoint (the pool's is one) */
	uint64_t registered_now;		      /* registrations the endpoint holds now */
	uint64_t copied;    /* bytes of requests, answers and messages the agent copied with the CPU */
	uint64_t nic_bytes; /* bytes it had its NIC send or READ (a real NIC's DMA; the soft NIC's CPU copies) */
};

struct gw_info {
	int32_t pid;
	uint32_t rank, nodes;
	uint32_t sibling, siblings; /* this agent among the node's agents (core/chan/sibling.h) */
	struct gw_agent_stats agent;
	uint64_t start_realtime_ns;
	char hosts[GW_MAX_NODES][GW_HOST_LEN];
	uint64_t requests, completed, failed, eagain, reaped;
	uint32_t depth; /* slots in use now */
	bool peer_up[GW_MAX_NODES];
	struct gw_peer_stats peer_stats[GW_MAX_NODES];
	struct flow_gauge flow[FLOW_NKINDS]; /* bytes held, high-water marks and caps */
	bool running;
};

struct gateway;

/* Agent side: creates the gateway (replacing a stale one: the caller holds the pid file lock). */
int gw_create(const char *dir, const struct gw_info *self, struct gateway **out);
/* Agent side: stops taking requests, fails the waiting ones with -ESHUTDOWN, removes the file. */
void gw_destroy(struct gateway *g, const char *dir);

/*
 * Agent side: serves READY requests in ticket order through fn, then
 * reclaims slots of dead clients.  Returns how many it served.  fn returns
 * 0 or a negative errno and may fill out[0..*outlen) up to GW_INLINE; or it
 * returns -EINPROGRESS, keeps the slot number and finishes the request
 * later with gw_complete() (in and out stay valid until then); or GW_DEFER:
 * the request stays queued for a later gw_serve and this one stops there.
 */
#define GW_DEFER (-EBUSY) /* a handler's "not now": the request stays queued, serving stops */
typedef int (*gw_handler)(void *arg, uint32_t slot, const struct gw_request *req, const void *in,
			  size_t inlen, void *out, size_t *outlen);
int gw_serve(struct gateway *g, gw_handler fn, void *arg);
/* Agent side: finishes a request fn left in progress (once); out is copied to the client. */
void gw_complete(struct gateway *g, uint32_t slot, int status, const void *out, size_t outlen);
/*
 * Agent side, finishing a request fn left in progress: a copy of it in *req,
 * and true when its client has died (nobody will read the answer).
 */
bool gw_slot_orphaned(struct gateway *g, uint32_t slot, struct gw_request *req);
/* Agent side: publishes whether the link to node is up, for `agent status`. */
void gw_set_peer_up(struct gateway *g, uint32_t node, bool up);
/* Agent side: publishes the traffic counters of the link to node. */
void gw_set_peer_stats(struct gateway *g, uint32_t node, const struct gw_peer_stats *st);
/* Agent side: publishes the flow-control gauges. */
void gw_set_flow(struct gateway *g, const struct flow_gauge flow[FLOW_NKINDS]);
/* Agent side: publishes its own counters. */
void gw_set_agent_stats(struct gateway *g, const struct gw_agent_stats *st);
/* Agent side: sleeps until a request arrives or timeout_us microseconds pass. */
void gw_wait_for_work(struct gateway *g, int timeout_us);
/*
 * Agent side, sleeping in its own poll(): gw_bell_fd() becomes readable when
 * a client rings (-1: no doorbell, nap instead).  gw_sleep_begin() tells
 * clients to ring and returns false when a request is already waiting (do
 * not sleep); gw_sleep_end() after the poll in any case.
 */
int gw_bell_fd(const struct gateway *g);
bool gw_sleep_begin(struct gateway *g);
void gw_sleep_end(struct gateway *g);

/*
 * Client side: maps and validates the gateway of the agent of `rank` (an
 * agent id: core/chan/sibling.h).  -ENOTCONN if none runs.
 */
int gw_open(const char *dir, uint32_t rank, struct gateway **out);
void gw_close(struct gateway *g);
/*
 * Client side: whether the agent still serves this gateway (its running flag
 * on every call; its pid file lock, a few system calls, at most every 50 ms).
 */
bool gw_alive(struct gateway *g);
/*
 * Client side, on the node's first agent: the sibling a new remote handle
 * (a port) goes through, dealt round robin over the node's agents to every
 * process of the node (0 with one agent).  It stays there while that agent
 * lives and has its link to the target node (core/agent/client.c).
 */
uint32_t gw_deal_sibling(struct gateway *g);
/* Client side: the node's agent count, and whether this agent's link to node is up (cheap reads). */
uint32_t gw_siblings(struct gateway *g);
bool gw_peer_is_up(struct gateway *g, uint32_t node);
/* A private, validated copy of the agent's information and counters. */
void gw_info(struct gateway *g, struct gw_info *info);

/*
 * Client side: one request.  With wait false (send mode "immediately") it
 * returns once the request is queued.  Otherwise it sleeps until the agent
 * answers (its status is returned, the reply copied to out[0..cap), *outlen
 * set), the agent dies (-ENOTCONN when it never took the request, so nothing
 * of it was sent; -ECONNABORTED when it had: its fate is unknown), or timeout_ms (plus a second of grace for
 * the agent, which enforces the request's own timeout) passes (-ETIMEDOUT).
 * A receive the agent has taken on is never given up while the agent lives:
 * its answer may hold a message already taken from the channel.  An answer
 * larger than a slot comes through a spill file the agent writes in the
 * agent directory (owner-only, O_EXCL) and the client reads and removes.
 */
int gw_call(struct gateway *g, const struct gw_request *req, const void *in, size_t inlen, void *out,
	    size_t cap, size_t *outlen, bool wait);

/*
 * gw_call in two halves, so a client can have several requests in the
 * agent's hands at once (the chunks of a large message): gw_post queues the
 * request (-EAGAIN when every slot is taken, -ENOTCONN when the agent is
 * gone, -EMSGSIZE); with wait true the caller must then gw_wait on it
 * exactly once, which returns what gw_call would have.
 */
struct gw_posted {
	uint32_t slot;
	uint32_t op, mode; /* the request's */
	int32_t timeout_ms;
};
int gw_post(struct gateway *g, const struct gw_request *req, const void *in, size_t inlen, bool wait,
	    struct gw_posted *p);
int gw_wait(struct gateway *g, const struct gw_posted *p, void *out, size_t cap, size_t *outlen);

#endif
