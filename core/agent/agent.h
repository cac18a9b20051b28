/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The agent's client API: what a process uses to exchange messages through
 * channels, on this node directly and on other nodes through its local agent
 * (DESIGN.md "agent"; the design follows Dragon's HSTA transport agent).
 *
 * Contract:
 * - Every call returns 0 or a negative errno; nothing prints.
 * - Addresses are "NODE/NAME" or "NAME" (this node).  NODE is an agent rank
 *   (0..N-1) or a host name; this node's rank or host name means this node.
 * - A channel on this node is used straight through shared memory: no agent
 *   and no system call on the fast path.  A channel on another node needs the
 *   local agent: -ENOTCONN when none runs (or it died), -EAGAIN when its
 *   gateway is full, -EHOSTUNREACH when no such node exists.
 * - Failures toward another node say whether the request may have been done:
 *     certainly not done, safe to retry:
 *       -ENOTCONN     no local agent, or it died before it took the request
 *       -EHOSTDOWN    the agent has no link to that node: nothing was sent
 *       -EHOSTUNREACH no such node
 *     outcome unknown (a message may have been deposited, or taken by a
 *     receive whose answer was lost):
 *       -ECONNRESET   the link to that node went down with the request in
 *                     flight
 *       -ECONNABORTED the local agent died holding the request
 *   An immediately send to a node whose link is known to be down fails
 *   with -EHOSTDOWN at once; one whose link goes down after it was queued
 *   is lost, and only the agent's counters show it.
 * - Timeouts in milliseconds: < 0 forever, 0 try once (-EAGAIN), > 0 bounded
 *   (-ETIMEDOUT).  A signal ends a wait early with -EINTR.
 * - Send return modes (HSTA's names):
 *     immediately  returns once the request is queued; the buffer may be reused
 *     buffered     once the data is copied out of the caller's buffer (default)
 *     deposited    once the message is in the target channel
 *     received     once a receiver has taken it from the channel
 *   On this node the copy into the channel is the deposit, so the first three
 *   return at the same moment; received then waits for a receiver, and on
 *   -ETIMEDOUT the message stays deposited.  Toward another node, immediately
 *   does not wait for the agent at all; errors of such sends only show in the
 *   agent's counters.
 * - Handles are not shared between threads without the caller's own locking;
 *   several handles (threads or processes) on one channel are fine: channels
 *   are multi-producer multi-consumer.
 */
#ifndef RDMATOOL_CORE_AGENT_AGENT_H
#define RDMATOOL_CORE_AGENT_AGENT_H

#include "core/chan/channel.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A message to another node is cut into chunks of RDMATOOL_AGENT_CHUNK_KB
 * KiB (1..508, default 508) on its way, and put together again at the target:
 * it reaches the channel whole, once, in order with the port's other
 * messages.  At most AGENT_REMOTE_MAX bytes (the target channel's max_msg
 * applies too).  A GETMSG brings back messages of any such size that fit
 * the caller's buffer and the target agent's GETMSG cap (flow.h).
 */
#define AGENT_REMOTE_MAX (256ull << 20)
#define AGENT_CHUNK_ENV	 "RDMATOOL_AGENT_CHUNK_KB"
/*
 * A chunk is one RDMA READ (PROTO_RMA_MAX): a gateway slot less 4 KiB, so
 * that one READ fits beside one posted large receive (a slot and its
 * headers) under the smallest ejection cap, 1 MiB (core/agent/link/open.c).
 */
#define AGENT_CHUNK_MAX_KB 508

enum agent_send_mode {
	AGENT_SEND_IMMEDIATELY = 0,
	AGENT_SEND_BUFFERED = 1,
	AGENT_SEND_DEPOSITED = 2,
	AGENT_SEND_RECEIVED = 3,
};

#define AGENT_NODE_LOCAL UINT32_MAX

struct agent_addr {
	uint32_t node; /* a rank, or AGENT_NODE_LOCAL */
	char host[64]; /* the NODE part when it named a host, else "" */
	char name[CHAN_NAME_MAX + 1];
};

/* "immediately", "buffered", "deposited", "received"; -EINVAL otherwise. */
int agent_send_mode_parse(const char *text, enum agent_send_mode *mode);
const char *agent_send_mode_name(enum agent_send_mode mode);
/* Splits "NODE/NAME" or "NAME"; -EINVAL for an empty part or a bad channel name. */
int agent_addr_parse(const char *text, struct agent_addr *addr);

struct agent_client;
struct agent_chan;

/*
 * Attaches to this node's agent directory (core/chan/agent_dir.h), and to
 * its agent when one runs (rank: the local agent's rank, 0 unless several
 * agents share the machine).  Local channels work without an agent.  why
 * gets a message for the user on failure; -EINVAL is the user's to fix (a
 * bad RDMATOOL_AGENT_CHUNK_KB, see agent_client_env_check).
 */
int agent_attach(uint32_t rank, struct agent_client **out, char *why, size_t whylen);
/* The sending process's own settings (RDMATOOL_AGENT_CHUNK_KB): 0, or -EINVAL with why saying what to give.
 */
int agent_client_env_check(char *why, size_t whylen);
void agent_detach(struct agent_client *cl);
/* The agent directory in use. */
const char *agent_client_dir(const struct agent_client *cl);
/* True when the local agent runs (and answers for other nodes). */
bool agent_client_connected(struct agent_client *cl);

int agent_chan_create(struct agent_client *cl, const char *name, const struct chan_attr *attr);
int agent_chan_destroy(struct agent_client *cl, const char *name);
/* Opens the channel at an address; a remote one is checked only when used. */
int agent_chan_open(struct agent_client *cl, const char *addr, struct agent_chan **out);
void agent_chan_close(struct agent_chan *h);
bool agent_chan_is_local(const struct agent_chan *h);

int agent_send(struct agent_chan *h, const void *buf, size_t len, enum agent_send_mode mode, int timeout_ms);
/* *len gets the message size; -EMSGSIZE (message kept) when it exceeds cap. */
int agent_recv(struct agent_chan *h, void *buf, size_t cap, size_t *len, int timeout_ms);
/* With timeout_ms != 0 waits until there is a message (HSTA's POLL request). */
int agent_poll(struct agent_chan *h, struct chan_state *st, int timeout_ms);

#endif
