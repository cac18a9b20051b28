/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * What the gateway's files share (core/chan/gateway.h is the contract): the
 * layout of the shared mapping and the functions one side calls in another.
 *   gateway.c         the mapping: created, opened, described; file names, spill files
 *   gateway_agent.c   the agent's side: serving slots, completing them, sleeping, removing
 *                     the gateway (it calls gateway.c, never the other way round)
 *   gateway_client.c  the clients' side: posting requests and waiting for answers
 */
#ifndef RDMATOOL_CORE_CHAN_GATEWAY_IMPL_H
#define RDMATOOL_CORE_CHAN_GATEWAY_IMPL_H

#include "core/chan/gateway.h"
#include "core/chan/agent_dir.h"

#include "core/agent/agent.h"
#include "core/chan/pidfile.h"
#include "core/chan/sibling.h"
#include "core/util/clock.h"
#include "core/util/futex.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define GW_MAGIC 0x5957544754414452ULL /* "RDATGTWY" little-endian */
#define GW_VERSION                                                                                           \
	12 /* 2: per-peer traffic counters, 3: aggregation, 4: chunked sends, 5: flow caps, 6: siblings, 7:  \
	      the peers' agents per node, 8: pooled send buffers, 9: 512 KiB slots, 10: 128 slots, 11: heap gauge, 12: bytes copied */

enum slot_state { SLOT_FREE, SLOT_CLAIMED, SLOT_READY, SLOT_BUSY, SLOT_DONE, SLOT_ABANDONED };

struct gw_slot {
	_Atomic uint32_t state; /* enum slot_state; the client sleeps on it */
	int32_t pid;		/* the client that claimed it */
	uint64_t ticket;
	uint32_t detached;	   /* "immediately": nobody waits, the agent frees the slot */
	_Atomic uint32_t sleeping; /* the client sleeps on state: the agent must wake it */
	int32_t status;
	uint32_t inlen, outlen;
	uint32_t spilled;   /* the answer is in the spill file (gw_spill_path), outlen unused */
	uint64_t spill_len; /* its size */
	struct gw_request req;
	unsigned char data[GW_INLINE];
};

/* gw_peer_stats in shared memory: each field read and written whole. */
struct gw_shared_peer {
	_Atomic uint64_t msgs_sent, bytes_sent, msgs_recv, bytes_recv, retries;
	_Atomic uint64_t buffers_sent, buffer_items_sent, buffers_recv, large_sent;
	_Atomic int32_t last_error;
	_Atomic uint32_t eager_in_use, waiting, waiting_hwm, agents_per_node;
};

/* What a client checks before it maps the segment (read alone: the whole segment is megabytes). */
struct gw_ident {
	uint64_t magic;
	uint32_t version;
	uint32_t slot_size;
	uint32_t nslots;
	int32_t pid;
	uint32_t rank, nodes;
	uint32_t sibling, siblings; /* core/chan/sibling.h */
};

struct gw_shared {
	struct gw_ident id;
	uint64_t start_realtime_ns;
	char hosts[GW_MAX_NODES][GW_HOST_LEN];
	_Atomic uint8_t peer_up[GW_MAX_NODES];
	struct gw_shared_peer peers[GW_MAX_NODES];
	_Atomic uint64_t flow[FLOW_NKINDS][3];	/* now, hwm, cap */
	_Atomic uint64_t agent[GW_AGENT_STATS]; /* struct gw_agent_stats, field by field */
	_Atomic uint32_t ports_dealt;		/* remote handles given a sibling (gw_deal_sibling) */
	uint32_t pad2;
	_Atomic uint32_t running;
	_Atomic uint32_t doorbell; /* the agent sleeps on it */
	_Atomic uint32_t agent_sleeping;
	uint32_t pad;
	_Atomic uint64_t next_ticket;
	_Atomic uint64_t requests, completed, failed, eagain, reaped;
	struct gw_slot slots[GW_SLOTS];
};

struct gateway {
	struct gw_shared *s;
	char dir[PATH_MAX];
	uint32_t rank;
	bool agent_side;
	uint64_t next_reap_ns;	 /* agent side: looking for dead clients costs a system call per slot */
	uint32_t bell_seen;	 /* agent side: the doorbell count the last full scan started from */
	bool deferred;		 /* agent side: the last scan left a request queued (GW_DEFER) */
	uint64_t alive_until_ns; /* client side: the agent was seen alive; checked again after that */
	int bell_fd;		 /* the doorbell socket: bound (agent), or to send from (client); -1: none */
	struct sockaddr_un bell;
	socklen_t bell_len;
	_Atomic uint64_t answer_ns; /* client side: a running average of remote answers' waits */
};

#define GW_ALIVE_NS   50000000ull
#define GW_CALL_SPINS 32 /* yields before a client waiting for its local agent sleeps */
/*
 * A client waiting for an answer from another node polls (yielding) up to
 * twice the usual wait before it sleeps, at most this long; when answers
 * usually take longer it sleeps at once.
 */
#define GW_REMOTE_SPIN_MAX_NS 250000ull
#define GW_YIELD_SHARED_NS    10000ull /* a yield that took longer ran another thread */

#define GW_REAP_NS 20000000ull

/* An answer larger than a slot: <dir>/gateway.<rank>.spill.<slot>.<ticket>, named from the slot alone. */
#define SPILL_PATH_MAX (PATH_MAX + 64)

/* gateway.c */
/* The gateway file of agent id rank in dir. */
void gw_path(char *path, size_t len, const char *dir, uint32_t rank);
bool gw_spill_path(char *path, size_t len, const char *dir, uint32_t rank, uint32_t slot, uint64_t ticket);
int gw_spill_write(const char *path, const void *data, size_t len);
int gw_spill_read(const char *path, void *out, size_t cap, uint64_t len);
/* gateway_agent.c */
void gw_slot_complete(struct gw_shared *s, struct gw_slot *sl, int status);

#endif
