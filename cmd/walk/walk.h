/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rdmatool walk: the RDMA random walker (after Google rdma-unit-test's random_walk).  Each client owns one
 * device context and issues random, mostly valid verbs; metadata that other clients need (rkeys, QP numbers,
 * receive credits) travels as struct walk_msg through the bus.
 */
#ifndef RDMATOOL_CMD_WALK_H
#define RDMATOOL_CMD_WALK_H

#include "core/util/rng.h"
#include "hw/hw.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * The actions: X(ENUM, name, default weight), one list for the enum, the names and the weights.  The default
 * weights are the original's, except modify_qp_error and send_with_inv, which it leaves at 0: here they run
 * too, so the whole action space is covered.  modify_qp_error weighs as much as destroy_qp because every QP
 * the walker destroys goes through ERR first (its WRs must flush).  The SRQ actions (not in the original)
 * weigh as their CQ and RECV counterparts.
 */
#define WALK_ACTIONS(X)                                                                                      \
	X(CREATE_CQ, create_cq, 1)                                                                           \
	X(DESTROY_CQ, destroy_cq, 1)                                                                         \
	X(ALLOC_PD, alloc_pd, 2)                                                                             \
	X(DEALLOC_PD, dealloc_pd, 1)                                                                         \
	X(REG_MR, reg_mr, 2)                                                                                 \
	X(DEREG_MR, dereg_mr, 2)                                                                             \
	X(ALLOC_MW_TYPE1, alloc_mw_type1, 5)                                                                 \
	X(ALLOC_MW_TYPE2, alloc_mw_type2, 5)                                                                 \
	X(DEALLOC_MW_TYPE1, dealloc_mw_type1, 5)                                                             \
	X(DEALLOC_MW_TYPE2, dealloc_mw_type2, 5)                                                             \
	X(BIND_MW_TYPE1, bind_mw_type1, 5)                                                                   \
	X(BIND_MW_TYPE2, bind_mw_type2, 5)                                                                   \
	X(CREATE_RC_QP_PAIR, create_rc_qp_pair, 2)                                                           \
	X(CREATE_UD_QP, create_ud_qp, 1)                                                                     \
	X(MODIFY_QP_ERROR, modify_qp_error, 2)                                                               \
	X(DESTROY_QP, destroy_qp, 2)                                                                         \
	X(CREATE_AH, create_ah, 5)                                                                           \
	X(DESTROY_AH, destroy_ah, 5)                                                                         \
	X(SEND, send, 5)                                                                                     \
	X(SEND_WITH_INV, send_with_inv, 5)                                                                   \
	X(RECV, recv, 5)                                                                                     \
	X(READ, read, 10)                                                                                    \
	X(WRITE, write, 10)                                                                                  \
	X(FETCH_ADD, fetch_add, 10)                                                                          \
	X(COMP_SWAP, comp_swap, 10)                                                                          \
	X(CREATE_SRQ, create_srq, 1)                                                                         \
	X(DESTROY_SRQ, destroy_srq, 1)                                                                       \
	X(POST_SRQ_RECV, post_srq_recv, 5)

#define WALK_ACTION_ENUM(e, name, weight) ACT_##e,
enum walk_action { WALK_ACTIONS(WALK_ACTION_ENUM) ACT_COUNT };

extern const char *const walk_action_names[ACT_COUNT];

/* ---- configuration (config.c) ---- */

#define WALK_MAX_CLIENTS  64
#define WALK_MAX_FAILURES 16
#define WALK_FAILURE_LEN  240

struct walk_config {
	int clients;
	int duration_s;
	bool multinode;
	const char *device;
	int port;
	int gid_index;
	uint64_t steps; /* 0: run for duration_s */
	uint64_t seed;
	bool seed_given;
	uint32_t weight[ACT_COUNT];
	int history;
	const char *history_file;
	int heartbeat_s; /* multinode: a client or the hub silent this long is out */
	bool verify;
	bool allow_outstanding_ops;
};

int walk_action_from_name(const char *name);
/* Fills weight[] from a preset name; -1 for an unknown preset. */
int walk_preset(const char *name, uint32_t *weight);
/* Applies "ACTION=W"; on error returns -1 and fills why. */
int walk_apply_weight(const char *spec, uint32_t *weight, char *why, size_t why_len);
/* Zeroes the type-2 MW weights; returns true if any was non-zero. */
bool walk_drop_type2(uint32_t *weight);

/* --verify probes (probe.c): what a probe expects; a wrong outcome is reported to the key's owner. */
enum walk_probe_kind {
	PROBE_REMOVED,	    /* through a removed key: must fail */
	PROBE_OUTSIDE,	    /* one byte past the end or before the start: must fail */
	PROBE_OTHER_PD,	    /* from a QP on another PD (type 2: another QP): must fail */
	PROBE_LAST_BYTE,    /* the last byte of the range: must succeed */
	PROBE_FORBIDDEN,    /* an access the key's access flags do not grant: must fail */
	PROBE_UNALIGNED,    /* an atomic on an address that is not 8-byte aligned: must fail */
	PROBE_QP_ACCESS,    /* an access the responder QP's access flags do not grant: must fail */
	PROBE_INV_OTHER_QP, /* SEND_WITH_INV of a type-2 window bound to another QP of the PD: must fail */
	PROBE_KINDS
};

/* ---- per-client statistics, merged at the end (report.c) ---- */

#define WALK_WC_STATUSES (IBV_WC_TM_RNDV_INCOMPLETE + 1)

struct walk_stats { /* issued[] .. outbox_full: uint64_t counts only (walk_stats_merge adds them) */
	uint64_t steps;
	double seconds;
	uint64_t issued[ACT_COUNT];
	uint64_t ok[ACT_COUNT];
	uint64_t redraws[ACT_COUNT];
	uint64_t toward[ACT_COUNT]; /* draws served by a step toward the action (toward.c) */
	uint64_t errors[ACT_COUNT];
	uint64_t wc[ACT_COUNT][WALK_WC_STATUSES];
	uint64_t wc_other;		      /* a status outside the known enum */
	uint64_t probes[PROBE_KINDS];	      /* --verify probes posted, by kind */
	uint64_t devprobes[7];		      /* --verify device probes, by kind (devprobe.c) */
	uint64_t flush_posts;		      /* --verify: WRs posted to a QP in ERR (they must flush) */
	uint64_t modifies, qkey_changes;      /* --verify: RTS-to-RTS modify_qp calls, UD Q_Key changes */
	uint64_t cq_resizes;		      /* --verify: ibv_resize_cq of CQs in use */
	uint64_t srq_recvs_checked, srq_busy; /* --verify: SRQ receives judged, destroy_srq refused (EBUSY) */
	uint64_t atomics_checked;	      /* --verify: atomics on owned words whose result was compared */
	uint64_t msgs_checked, msgs_content_checked; /* --verify: received headers, and payloads compared */
	uint64_t wr_api_posts, write_imms, reregs; /* WRs posted by ibv_wr_*, WRITE_WITH_IMMs, ibv_rereg_mr */
	uint64_t alive_end;			   /* objects alive when the walk stopped */
	uint64_t outbox_full;			   /* times backpressure held an update back */
	int destroy_failures;
	int nfailures;
	char failures[WALK_FAILURE_LEN * WALK_MAX_FAILURES];
};

void walk_stats_merge(struct walk_stats *into, const struct walk_stats *from);
/* --verify: a data-path class issued often that never succeeded is a failure (unless faults were asked). */
void walk_check_classes(const struct walk_config *cfg, struct walk_stats *total);
void walk_stats_fail(struct walk_stats *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *walk_stats_failure(const struct walk_stats *s, int i);

/* ---- out-of-band messages (bus.c) ---- */

enum walk_msg_type {
	MSG_ADD_RKEY = 1,
	MSG_REMOVE_RKEY,
	MSG_RC_REQUEST, /* handshake 1: initiator's QP exists */
	MSG_RC_REPLY,	/* handshake 2: responder's QP is RTS (or refused) */
	MSG_RC_READY,	/* handshake 3: initiator's QP is RTS */
	MSG_RC_DOWN,	/* the sender's side of a pair is gone or in ERR */
	MSG_ADD_UD_QP,
	MSG_REMOVE_UD_QP,
	MSG_CREDIT,    /* one receive of `bytes` posted for the peer's QP */
	MSG_PROBE_HIT, /* --verify: a READ through the owner's removed rkey worked */
	MSG_RC_ACCESS, /* --verify: the sender's RC QP `qpn` now grants only `access` (modify_qp) */
	MSG_TYPE_MAX
};

struct walk_msg {
	uint16_t type;
	uint16_t src;
	uint16_t dst;
	uint16_t kind; /* ADD/REMOVE_RKEY: 0 MR, 1 type-1 MW, 2 type-2 MW */
	uint32_t rkey;
	uint32_t qpn;	   /* the sender's QP */
	uint32_t peer_qpn; /* the receiver's QP */
	uint32_t pd_id;	   /* sender-local PD serial */
	uint32_t qkey;
	uint32_t bytes;
	uint64_t addr;
	uint64_t length;
	uint64_t event;	     /* ADD/REMOVE_RKEY: the owner's key event of it; PROBE_HIT: the probed one */
	uint32_t access;     /* ADD_RKEY: the remote access flags; PROBE_HIT: the opcode */
	uint32_t probe_kind; /* PROBE_HIT: enum walk_probe_kind */
};

/* Validates a message from a peer; false means drop it. */
bool walk_msg_valid(const struct walk_msg *m, int clients);

struct walk_bus;
struct walk_peer_addr {
	union ibv_gid gid;
	uint16_t lid;
	bool valid;
};

/* ---- history ring (history.c) ---- */

#define WALK_HISTORY_LINE 192

struct walk_history {
	int size;
	atomic_uint_fast64_t next; /* entries written so far */
	char (*lines)[WALK_HISTORY_LINE];
};

int walk_history_init(struct walk_history *h, int size);
void walk_history_free(struct walk_history *h);
void walk_history_add(struct walk_history *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* write(2)-only: safe in a signal handler.  Oldest first. */
void walk_history_dump(const struct walk_history *h, int fd, int client);

#endif
