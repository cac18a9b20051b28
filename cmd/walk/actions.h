/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Shared by the walker's action files (actions_*.c): the access flags and sizes the actions use, the history
 * macros, the eligibility predicates and posting helpers (actions_common.c) and the actions themselves, one
 * file per kind of verbs object, as iproute2's rdma/res-*.c are.
 */
#ifndef RDMATOOL_CMD_WALK_ACTIONS_H
#define RDMATOOL_CMD_WALK_ACTIONS_H

#include "cmd/walk/bus.h"
#include "cmd/walk/client.h"
#include "core/stats/stats.h"

#include <errno.h>
#include <string.h>

#define MR_ACCESS                                                                                            \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |                         \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)
#define QP_ACCESS	       (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
#define MW_ACCESS	       (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
#define REMOTE_ACCESS	       MW_ACCESS
#define SUBSET_PROBABILITY     0.3 /* --verify: an MR or window gets a random subset of the remote flags */
#define MIN_QP_WR	       20
#define MSG_UD_PROBABILITY     0.5
#define SEND_IMM_PROBABILITY   0.5
#define RC_MSG_MAX	       (64u << 10)
#define UD_SEND_BYTES	       1000
#define UD_RECV_BYTES	       1040	   /* 40 bytes of GRH in front of the payload */
#define INV_BESIDE_PROBABILITY 0.1	   /* --verify: a SEND_WITH_INV on a QP its window is not bound to */
#define WRONG_QKEY_PROBABILITY 0.05	   /* --verify: a UD send with a wrong Q_Key, which must be dropped */
#define WRONG_QKEY_IMM	       0xffffff00u /* its immediate data (| the sender's id): no length is that large */
#define MAX_SGE_USED	       16
#define WR_API_PROBABILITY     0.3	   /* a WR posted through the ibv_wr_* API (when the QP has it) */
#define WRITE_IMM_PROBABILITY  0.25	   /* an RC SEND_WITH_IMM becomes an RDMA_WRITE_WITH_IMM */
#define WRITE_IMM_FLAG	       0x80000000u /* --verify: in its immediate data, beside length and sequence */
#define MSG_HDR		       32u /* --verify: the header in front of every SEND of at least this size */

/* A line of the client's history ring. */
#define LOG(c, ...) walk_history_add(&(c)->hist, __VA_ARGS__)
/* The same for an action: "c<client> #<step> " goes in front. */
#define LOG_STEP(c, fmt, ...)                                                                                \
	walk_history_add(&(c)->hist, "c%d #%llu " fmt, (c)->id, (unsigned long long)(c)->seq, ##__VA_ARGS__)

static inline int imin(int a, int b)
{
	return a < b ? a : b;
}

struct mr_want {
	int pd;
	uint32_t min_len;
};

struct mw_want {
	int type;
	bool free_only;
};

struct qp_want {
	enum ibv_qp_type type;
	int pd; /* -1: any */
	bool send, recv, credit;
};

/* A local RC QP that can reach remote memory `k` (walk_qp_reaches), with credit and access if asked. */
struct reach {
	const struct rkey_rec *k;
	bool credit;
	uint32_t access; /* remote access flags the peer QP must grant */
};

bool walk_qp_reaches(struct walk_client *c, int i, const void *arg);
/* Remote address of the owner's buffer offset `off` (inside remote region k). */
uint64_t walk_remote_addr(const struct rkey_rec *k, uint32_t off);
uint32_t walk_imm(struct walk_client *c, uint32_t len, int rc_qp);
/* --verify: now and then a random subset of the remote access flags, else all of them. */
int walk_remote_access(struct walk_client *c);

/* actions_common.c: counting, eligibility predicates for walk_pick_index, ranges, posting */
void walk_count_error(struct walk_client *c, enum walk_action a, int err);
/* Action a was issued and its create verb returned `made` (NULL: error in errno): counted.  True if made. */
bool walk_created(struct walk_client *c, enum walk_action a, const void *made);
int walk_pick_pd_for_new(struct walk_client *c);
int walk_pick_cq_for_new(struct walk_client *c);
bool walk_any_cq(struct walk_client *c, int i, const void *arg);
bool walk_idle_cq(struct walk_client *c, int i, const void *arg);
bool walk_idle_pd(struct walk_client *c, int i, const void *arg);
bool walk_idle_mr(struct walk_client *c, int i, const void *arg);
bool walk_mw_match(struct walk_client *c, int i, const void *arg);
bool walk_can_post_send(struct walk_client *c, int q);
bool walk_qp_match(struct walk_client *c, int i, const void *arg);
int walk_pick_mr(struct walk_client *c, int pd, uint32_t min_len);
/* An MR for work that will be in flight: mostly the one already pinned most. */
int walk_pick_busy_mr(struct walk_client *c, int pd, uint32_t min_len);
int walk_make_sges(struct walk_client *c, uint32_t lkey, uint32_t start, uint32_t len, int n,
		   struct ibv_sge *sge);
int walk_sge_count(struct walk_client *c, uint32_t max);
/* ibv_post_send(3) of one WR, or now and then the same through the ibv_wr_* API, sometimes after a batch
 * (with a wr_id no slot has) that ibv_wr_abort(3) drops: it must never run.  0 or an errno. */
int walk_post_send(struct walk_client *c, struct ibv_qp *qp, struct ibv_send_wr *wr);
int walk_post_send_wr(struct walk_client *c, enum walk_action a, int q, int m, struct ibv_send_wr *wr,
		      int slot);
uint32_t walk_choose_range(struct walk_client *c, uint32_t off, uint32_t avail, uint32_t want, bool dest,
			   uint32_t align, uint32_t *start);

/* message.c (--verify): message headers in the WR slots' cells, checked on receipt */
int walk_msg_mr_reg(struct walk_client *c, int p);
int walk_msg_mr_dereg(struct walk_client *c, int p);
/* A SEND of len bytes: all in the cell (m < 0, with content) or the header there, the rest from MR m. */
void walk_msg_fill(struct walk_client *c, int q, uint32_t slot, struct ibv_send_wr *wr, uint32_t len, int m,
		   uint32_t start, struct ibv_sge *sge);
/* A receive of len bytes (a QP's or an SRQ's on PD pd, up to max_sge SGEs): all in the cell (m < 0) or its
 * first `head` bytes there, the rest from MR m. */
void walk_msg_recv_fill(struct walk_client *c, int pd, uint32_t max_sge, uint32_t slot,
			struct ibv_recv_wr *wr, uint32_t len, int m, uint32_t start, uint32_t head,
			struct ibv_sge *sge);
void walk_msg_check(struct walk_client *c, uint32_t slot, struct qp_rec *r, const struct ibv_wc *wc);

/* Receive credit: the peer of RC QP q may now send up to `bytes` once. */
void walk_give_credit(struct walk_client *c, int q, uint32_t bytes);
int walk_recv_buffers(struct walk_client *c, enum walk_action a, int q, int pd, uint32_t max_sge, bool ud,
		      uint32_t want, bool cell, bool exact, struct ibv_recv_wr *wr, struct ibv_sge *sge);

/* The actions: 1 done (issued), 0 precondition not met (redraw). */
int walk_do_create_cq(struct walk_client *c);
int walk_do_destroy_cq(struct walk_client *c);
int walk_do_alloc_pd(struct walk_client *c);
int walk_do_dealloc_pd(struct walk_client *c);
int walk_do_reg_mr(struct walk_client *c);
int walk_do_dereg_mr(struct walk_client *c);
int walk_do_alloc_mw(struct walk_client *c, int type);
int walk_do_dealloc_mw(struct walk_client *c, int type);
int walk_do_bind_mw(struct walk_client *c, int type);
int walk_do_create_rc_qp_pair(struct walk_client *c);
int walk_do_create_ud_qp(struct walk_client *c);
int walk_do_modify_qp_error(struct walk_client *c);
int walk_do_destroy_qp(struct walk_client *c);
int walk_do_create_ah(struct walk_client *c);
int walk_do_destroy_ah(struct walk_client *c);
int walk_do_send(struct walk_client *c);
int walk_do_send_with_inv(struct walk_client *c);
int walk_do_recv(struct walk_client *c);
int walk_do_read_write(struct walk_client *c, enum walk_action a);
int walk_do_atomic(struct walk_client *c, enum walk_action a);
int walk_do_create_srq(struct walk_client *c);
int walk_do_destroy_srq(struct walk_client *c);
int walk_do_post_srq_recv(struct walk_client *c);
/* --verify, not an action of its own (modify.c calls it now and then): ibv_rereg_mr of an MR. */
void walk_rereg_mr(struct walk_client *c);

#endif
