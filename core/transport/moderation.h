/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Completion moderation for RDMA WRITEs and READs (the user's, and the
 * rendezvous READs of large receives): while a connection has a deep
 * pipeline of them, only every MOD_SIGNAL_EVERY-th is posted signaled, as
 * perftest's bandwidth tests (cq_mod) and UCX's tx moderation do.  The core
 * API still owes one completion per operation, so the unsignaled ones wait
 * in a per-connection FIFO: on RC a completion implies every earlier WR of
 * the same send queue completed (IBTA 10.8.6), so the completion of any
 * later sequenced WR completes them, in order; a READ's data is placed
 * before any later WR of its queue completes.  A WR that fails completes
 * on its own, signaled or not, as does every WR flushed after it.
 */
#ifndef RDMATOOL_CORE_MODERATION_H
#define RDMATOOL_CORE_MODERATION_H

#include <stdatomic.h>
#include <stdint.h>

#define MOD_SIGNAL_EVERY 16 /* at most this many WRs per signaled one */
#define MOD_FIFO 256	    /* unsignaled WRs in flight per connection (more: signaled) */

/* Per connection; zero-initialised. */
struct mod_state {
	/* The poster in the sequence: one at a time (try, never wait: others post signaled). */
	_Atomic int posting;
	uint32_t seq; /* the poster's: next sequence number */
	uint32_t run; /* the poster's: unsignaled posts since the last signaled one */
	/* Unsignaled requests' wr_ids, oldest first: the poster pushes, the CQ's drainer pops. */
	_Atomic uint32_t fifo_head, fifo_tail;
	_Atomic uint32_t inflight;     /* sequenced WRs not completed yet */
	_Atomic uint32_t signaled_out; /* sequenced signaled WRs not completed yet */
	struct mod_entry {
		/* Atomic: a failed post takes its entry back, and the slot is written again. */
		_Atomic uint64_t wr_id;
		_Atomic uint32_t seq;
	} fifo[MOD_FIFO];
};

struct core_ep;
struct stripe;
struct conn;
struct core_req;
struct ibv_send_wr;

/* Posts wr (signaled, r's) on c, leaving it unsignaled when the pipeline allows. */
int mod_post(struct core_ep *ep, struct conn *c, struct core_req *r, struct ibv_send_wr *wr);
/*
 * r (sequenced) completed on its connection: the unsignaled requests posted
 * before it completed successfully; they are emitted and freed here.
 */
void mod_complete(struct core_ep *ep, struct stripe *drainer, struct core_req *r, uint64_t wr_id);
/*
 * s's CQ is empty: a connection whose newest WRs are unsignaled, with no
 * signaled one left to complete them, gets a zero-length signaled WRITE.
 */
void mod_flush_tails(struct core_ep *ep, struct stripe *s);

#endif
