/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Links between agents over the core transport (core/transport/endpoint.h,
 * on any device: the soft device here).  Agent ranks connect all to all: the
 * higher rank dials the lower one's out-of-band port (its --hosts entry),
 * they exchange ranks and endpoint addresses over that TCP connection, and
 * keep it open to notice a peer that dies.  A peer that is down is retried
 * every 200 ms, so an agent that comes back rejoins.
 *
 * Requests and answers are items (a proto header and its eager data,
 * core/agent/proto.h) packed into 2 KB eager buffers (core/agent/aggregate.h):
 * per target node 4 buffers, one filling, the others queued or in flight; a
 * buffer goes out when full, at 128 items, or after two idle progress passes;
 * a lone item on an idle link (the only one a pass added, nothing queued or
 * in flight to that peer) goes at the end of that pass: aggregation is for a
 * backlog, not a reason to delay a single item.
 * The first request for a channel is preceded by a CONNECT binding a port
 * (a slot of a direct-mapped table of channel names) at the target; later
 * items name the port, and answers the request (port | origin tag).  An item
 * too big for an eager buffer is a large frame of its own; messages over a
 * chunk arrive as chunks in order and are put together at the target.  Eager
 * buffers and large frames go under their own core tags into their own
 * receive buffers; frames core moves by rendezvous are never in flight
 * together with ones it sends eagerly, and every message carries its
 * sequence number on the link in the core tag (above the kind bits), so the
 * target reads a peer's messages in the order sent even when one waited in
 * core's unexpected list for a receive.  The
 * target tries the channel operation with timeout 0 and retries, in arrival
 * order per channel, until the request's own timeout; it then answers with
 * an ACK (SENDMSG deposited/received), DATA (GETMSG) or STATE (POLL)
 * carrying the status; immediately and buffered SENDMSGs get no answer.  A
 * GETMSG that times out takes nothing, so no message is lost.
 *
 * Large SENDMSGs move by rma unless RDMATOOL_AGENT_TRANSPORT_TYPE=p2p (then
 * as large frames: core's rendezvous into a posted large receive, then
 * copied into the message).  With rma each chunk is copied into a slot
 * of a buffer registered once (core/agent/pool.h) and announced by a
 * 40-byte item in an eager buffer; the target RDMA READs it straight into
 * its place in the message, several chunks in flight, and answers each read
 * with an ACK that frees the slot.  The message is queued for its channel
 * when its last chunk's item arrives (so it keeps its place among the port's
 * items) and served once every read is done.  A buffered chunk is done for
 * the client once copied: the agent's slot, not the client's buffer, must
 * live until read.
 *
 * Flow control (core/chan/flow.h): request data counts toward the injection
 * cap until its send completes (an rma slot: until the target read it);
 * posted large receives and rma READs in flight toward the ejection cap
 * (receives get what it allows, at most LINK_RX_LARGE_MAX, minus what is
 * kept for READs: half the cap with rma); GETMSG
 * data toward the GETMSG cap until its answer's send completes, and a GETMSG
 * that would go over it waits in its channel's queue.
 *
 * Several agents per node (core/chan/sibling.h): link ranks are virtual
 * (node rank x siblings + sibling), ranks of one node never link, and an
 * rma READ backlog is shared with the siblings through a board in shared
 * memory (core/chan/steal.h): an idle sibling READs a chunk over its own
 * link to the sender, the owner copies it into the message and answers.
 *
 * Single-threaded: every call, and every callback, runs in the agent's
 * engine loop.
 */
#ifndef RDMATOOL_CORE_AGENT_LINK_LINK_H
#define RDMATOOL_CORE_AGENT_LINK_LINK_H

#include "core/agent/agent_log.h"
#include "core/agent/path.h"
#include "core/chan/flow.h"
#include "core/chan/gateway.h"
#include "core/agent/proto.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LINK_DEFAULT_PORT  17470			   /* the OOB port of an --hosts entry without one */
#define LINK_TRANSPORT_ENV "RDMATOOL_AGENT_TRANSPORT_TYPE" /* rma (default) or p2p */
#define LINK_HUGEPAGES_ENV "RDMATOOL_AGENT_HUGEPAGES"	   /* 1: the rma pool on hugepages if any */
#define LINK_STEAL_ENV	   "RDMATOOL_AGENT_STEAL"	   /* 0: siblings do not steal READs */
#define LINK_NO_TOKEN	   UINT64_MAX /* links_request: nobody to tell (done is not called) */

struct link_config {
	uint32_t rank, nodes;	/* link ranks: node rank x siblings + sibling (core/chan/sibling.h) */
	uint32_t siblings;	/* agents per node (0 counts as 1): ranks of one node never link */
	struct agent_path path; /* the links' endpoint: device, port, GID index, SL, MTU */
	const char (*hosts)[GW_HOST_LEN];
	const uint16_t *ports; /* 0: LINK_DEFAULT_PORT */
	const char *dir;       /* the agent directory: where targets open channels */
	/*
	 * The address the link port listens on: NULL binds this rank's own --hosts entry (so several
	 * agents of one machine can share a port on distinct addresses, and the port is not open on
	 * every interface); "0.0.0.0" or "::" every address.
	 */
	const char *bind;
	/*
	 * An origin request finished: the answer of the target; -EHOSTDOWN when it never went out
	 * (certainly not done there), -ECONNRESET when the link went down with it in flight (it may
	 * have been done: outcome unknown).
	 */
	void (*done)(void *arg, uint64_t token, int status, const void *data, size_t len);
	void *arg; /* done's */
	/*
	 * Whether the client of the request token has died (NULL: never): a GETMSG of such a client is
	 * withdrawn at its target (a CANCEL), so it takes no message.
	 */
	bool (*orphaned)(void *arg, uint64_t token);
	struct flow_caps caps;
	struct agent_log log;
};

struct agent_links;

int links_open(const struct link_config *cfg, struct agent_links **out, char *why, size_t whylen);
/* Fails every request in flight (-ESHUTDOWN through done) and closes. */
void links_close(struct agent_links *lk);
bool links_up(struct agent_links *lk, uint32_t node);
/* The traffic counters of the link to node (zeros for an unknown node). */
void links_peer_stats(struct agent_links *lk, uint32_t node, struct gw_peer_stats *out);
/*
 * Sends one gateway request to its node.  -EINPROGRESS: done(token) will
 * follow (also for buffered and immediately sends, which the caller may
 * finish at once); -EHOSTDOWN, -EMSGSIZE, -EAGAIN: nothing was sent.
 */
int links_request(struct agent_links *lk, const struct gw_request *req, const void *data, size_t len,
		  uint64_t token);
/* Connects peers, reads the transport, serves and retries requests, answers; returns the work it found. */
int links_progress(struct agent_links *lk);
/*
 * A progress pass over the sending side only (no network read): what the
 * engine runs when a pass found nothing new, so the eager buffers being
 * filled meet their two idle passes at once instead of after two rounds
 * of polling the network.  Returns the work done.
 */
int links_tx_pass(struct agent_links *lk);
/*
 * Posts the buffers and frames queued to go out, and a lone item on an idle
 * link, without the rest of a progress pass: what the engine runs right
 * after it took gateway requests.  Returns the work done.
 */
int links_post(struct agent_links *lk);
/*
 * Whether the injection cap leaves room for one more gateway request; when
 * not, the engine leaves requests in the gateway (core/chan/flow.h).
 */
bool links_can_inject(struct agent_links *lk);
/* This agent's own counters: stealing, and the registered pool. */
void links_agent_stats(struct agent_links *lk, struct gw_agent_stats *out);
/* The flow-control gauges: bytes held now, high-water marks, caps. */
void links_flow_stats(struct agent_links *lk, struct flow_gauge out[FLOW_NKINDS]);
/* Nothing waits to go out (an eager buffer being filled goes out after two idle passes). */
bool links_idle(struct agent_links *lk);
/*
 * Sleeping in the engine's poll(): fills fds (up to max) with what wakes the
 * links (network completions, the listener, each peer's connection) and
 * lowers *timeout_ms (-1: none) to when they need a look anyway.  Returns the
 * count, or -EAGAIN when there is work now (do not sleep).  links_sleep_end()
 * after the poll.
 */
struct pollfd;
int links_sleep_prepare(struct agent_links *lk, struct pollfd *fds, int max, int *timeout_ms);
void links_sleep_end(struct agent_links *lk, const struct pollfd *fds, int n);

#endif
