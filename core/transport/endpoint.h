/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The striped transport (a lock-free, striped redesign of a global-lock
 * transport, applied to verbs): an endpoint owns N
 * stripes; a thread posts through its stripe (thread-local index), each
 * stripe owns one RC QP per peer, a send CQ, a request pool and request
 * table.  Completions of every stripe and of the receive engine go through
 * one lock-free MPSC ring that core_cq_read() pops.
 *
 * Every data call returns 0 or a negative errno; -EAGAIN means "no
 * resource right now (requests, credits, ring): read completions, retry".
 * Transport failures come back as completions with status != IBV_WC_SUCCESS.
 */
#ifndef RDMATOOL_CORE_ENDPOINT_H
#define RDMATOOL_CORE_ENDPOINT_H

#include "core/util/env.h"

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum core_threading {
	CORE_THREAD_SINGLE, /* one stripe, one thread: no atomics beyond what is needed */
	CORE_THREAD_SAFE,   /* N stripes, any thread */
};

enum core_lock_mode {
	CORE_LOCK_STRIPED, /* the lock-free data path */
	CORE_LOCK_GLOBAL,  /* one mutex around every operation: the global-lock design being replaced */
};

struct core_ep_attr {
	const char *device;	  /* NULL: hw_open_device's default */
	const char *name;	  /* stats label: the CQ entry is "<name>.cq" (NULL: "cq") */
	enum core_threading threading;
	enum core_lock_mode lock;
	struct core_env env;	  /* stripes, progress thread, ring size */
	uint32_t depth;		  /* outstanding user requests per stripe (default 128) */
	uint32_t eager_max;	  /* largest eager payload; 0 (the default): the device's (core_ep_eager_max) */
	uint32_t rx_depth;	  /* receive buffers per connection (default 64) */
	uint32_t max_recv;	  /* posted user receives (default 1024) */
	/* The path, as perftest's -i, -x, --sl, --mtu choose it; 0 is each one's default. */
	uint8_t port;		  /* the device's port (0: port 1) */
	uint8_t gid_index;	  /* the source GID (0: index 0); RoCEv2 GIDs sit at other indexes */
	uint8_t sl;		  /* service level (0) */
	uint8_t hop_limit;	  /* GRH hop limit (0: 64, so routed RoCE reaches its peer) */
	enum ibv_mtu mtu;	  /* path MTU (0: the port's active MTU); at most the port's */
};

void core_ep_attr_defaults(struct core_ep_attr *attr);

/* Completion flags */
#define CORE_CQE_SEND (1u << 0)
#define CORE_CQE_RECV (1u << 1)
#define CORE_CQE_WRITE (1u << 2)
#define CORE_CQE_READ (1u << 3)
#define CORE_CQE_ATOMIC (1u << 4)
#define CORE_CQE_TAGGED (1u << 5)
#define CORE_CQE_RNDV (1u << 6) /* moved by rendezvous */

struct core_cqe {
	void *context;	   /* the caller's, from the post */
	uint64_t len;	   /* bytes moved (receives: the message length) */
	uint64_t tag;	   /* tagged receives: the sender's tag */
	uint32_t flags;	   /* CORE_CQE_* */
	uint32_t status;   /* enum ibv_wc_status, IBV_WC_SUCCESS = 0 */
	uint32_t peer;	   /* receives: the sender's peer id */
	int32_t err;	   /* 0, or a negative errno (e.g. -EMSGSIZE: truncated) */
};

struct core_ep;

/* Opens the device, PD, stripes, ring; err gets a message on failure. */
int core_ep_open(const struct core_ep_attr *attr, struct core_ep **out, char *err, size_t errlen);
void core_ep_close(struct core_ep *ep);
int core_ep_stripes(const struct core_ep *ep);
/* The device the endpoint runs on (its name, and "verbs" or "soft"). */
const char *core_ep_device_name(const struct core_ep *ep);
/* The device context the endpoint runs on (for a device's own counters). */
struct ibv_context *core_ep_context(const struct core_ep *ep);
/*
 * Sends up to this many bytes go eager (copied through registered buffers),
 * longer ones by rendezvous (the receiver READs the sender's buffer).  By
 * default 8 KiB on a NIC, whose READ moves data without the CPU, and 64 KiB
 * on the soft device, whose READ costs the CPU what a copy does and adds a
 * round trip and a FIN (bench send_bw 64 KiB: 0.86x perftest's ib_send_bw
 * by rendezvous, 0.98x eager).  RDMATOOL_EAGER_MAX sets it when the caller
 * did not (attr.eager_max).
 */
uint32_t core_ep_eager_max(const struct core_ep *ep);
const char *core_ep_provider_name(const struct core_ep *ep);

/*
 * Connecting (control plane, one mutex): core_ep_prepare() creates the QPs
 * and receive buffers for one new peer and writes the local half into blob
 * (CORE_ADDR_MAX bytes; *len its size).  The blob travels to the peer by any
 * means (core_ep_connect_oob() uses core/oob), then core_ep_connect() moves
 * the QPs to RTS and publishes the peer; *peer gets the id data calls take.
 */
#define CORE_ADDR_MAX 1024
int core_ep_prepare(struct core_ep *ep, void *blob, uint32_t *len, uint32_t *slot);
int core_ep_connect(struct core_ep *ep, uint32_t slot, const void *remote, uint32_t len, uint32_t *peer);
struct oob_conn;
/* prepare + exchange over an OOB connection + connect. */
int core_ep_connect_oob(struct core_ep *ep, struct oob_conn *conn, uint32_t *peer);
/* Both ends in one process: connects a <-> b; ids of each other in *pa (in a) and *pb (in b). */
int core_ep_connect_pair(struct core_ep *a, struct core_ep *b, uint32_t *pa, uint32_t *pb);

/*
 * Memory registration through the read-mostly MR cache.  Data calls register
 * the caller's buffer on first use and keep up to attr.env.mr_cache_max
 * (RDMATOOL_MR_CACHE_MAX) idle registrations, dropping the least recently
 * used one that no operation is using.  core_mr_reg registers a buffer a
 * peer will access with the rkey: it stays registered (and does not count
 * against the bound) until core_mr_dereg or core_ep_close.
 *
 * Contract: a buffer that was registered, by core_mr_reg or by any data
 * call, must be dropped with core_mr_dereg before it is freed (or the
 * endpoint closed first).  A registration pins the pages it was made on; if
 * the buffer is freed and new memory is later allocated at the same address,
 * a cached registration still points at the old pages on real hardware, and
 * data would silently move to or from them.
 */
struct core_mr {
	void *addr;
	size_t len;
	uint32_t lkey, rkey;
};
int core_mr_reg(struct core_ep *ep, void *addr, size_t len, struct core_mr *out);
/*
 * The application is about to free [addr, addr+len): every cached
 * registration overlapping it is dropped, deregistered now if idle or when
 * its last operation in flight completes, and never handed out again.
 * Returns how many registrations it dropped.
 */
int core_mr_dereg(struct core_ep *ep, void *addr, size_t len);

struct core_mr_cache_stats {
	uint64_t hits, misses;	/* lookups that found / had to make a registration */
	uint64_t evictions;	/* idle registrations dropped to stay within the bound */
	uint64_t drops;		/* registrations dropped by core_mr_dereg */
	uint32_t entries;	/* registrations held now, dropped ones in flight included */
	uint32_t idle;		/* ... of which cached, unpinned, no operation in flight */
	uint32_t in_flight;	/* ... of which used by an operation in flight */
	uint32_t pinned;	/* ... of which held by core_mr_reg */
};
void core_mr_cache_stats(struct core_ep *ep, struct core_mr_cache_stats *out);

/* Two-sided: tag is matched against (tag & ~ignore) of posted tagged receives. */
int core_send(struct core_ep *ep, uint32_t peer, const void *buf, size_t len, void *context);
int core_tsend(struct core_ep *ep, uint32_t peer, const void *buf, size_t len, uint64_t tag, void *context);
int core_recv(struct core_ep *ep, void *buf, size_t len, void *context);
int core_trecv(struct core_ep *ep, void *buf, size_t len, uint64_t tag, uint64_t ignore, void *context);

/* One-sided; the local buffer is registered through the cache if needed. */
int core_write(struct core_ep *ep, uint32_t peer, const void *buf, size_t len, uint64_t raddr, uint32_t rkey,
	       void *context);
int core_read(struct core_ep *ep, uint32_t peer, void *buf, size_t len, uint64_t raddr, uint32_t rkey,
	      void *context);
/* 8-byte aligned remote word; *result receives the value before the operation. */
int core_fetch_add(struct core_ep *ep, uint32_t peer, uint64_t raddr, uint32_t rkey, uint64_t add, uint64_t *result,
		   void *context);
int core_cmp_swp(struct core_ep *ep, uint32_t peer, uint64_t raddr, uint32_t rkey, uint64_t compare, uint64_t swap,
		 uint64_t *result, void *context);

/*
 * Completions: up to n entries, 0 when none.  With manual progress the call
 * first drives progress.  core_cq_sread blocks up to timeout_ms (-1:
 * forever) for at least one; returns the count or -ETIMEDOUT.
 */
int core_cq_read(struct core_ep *ep, struct core_cqe *entries, int n);
int core_cq_sread(struct core_ep *ep, struct core_cqe *entries, int n, int timeout_ms);
/* The wait fd (eventfd) that becomes readable on the empty -> non-empty edge. */
int core_cq_fd(const struct core_ep *ep);
/*
 * For a caller that sleeps in its own poll() with other fds (manual progress,
 * one thread): arms every CQ of the endpoint to report its next completion
 * and returns the completion channel's fd, readable once one arrived.  A
 * completion that landed before the arming raises no event, so read the
 * completions once more after arming, and arm again right before sleeping
 * (reading may tell the device the caller drives it).  After waking,
 * core_cq_ack_events() takes the events.  -EINVAL with a progress thread.
 */
int core_cq_arm(struct core_ep *ep);
void core_cq_ack_events(struct core_ep *ep);
/* Drives progress once (what the progress thread loops on); returns work done. */
int core_progress(struct core_ep *ep);

/* Pins the calling thread to stripe index % nstripes (default: round robin on first use). */
void core_thread_set_stripe(int index);

#endif
