/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The walker's reference model of a verbs device: pure functions of the verbs' structs and small records of
 * what the caller created (no device, threads or clock).  What a correct device must do: ibv_modify_qp(3)'s
 * return for a transition and mask (RC, UC, UD), the status the key rules give a local SGE or remote access,
 * ibv_rereg_mr(3)'s return, and a work request's completion (the statuses it may end with, "any of these"
 * when racy; opcode, byte_len).  oracle.c holds the walker's records against it; tests/unit/test_walk_model.c
 * tests it alone.
 */
#ifndef RDMATOOL_CMD_WALK_MODEL_H
#define RDMATOOL_CMD_WALK_MODEL_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the QP state machine ---- */

/* ibv_modify_qp(3): 0 if moving a `type` QP from `cur` to `next` with `mask` is legal, else EINVAL. */
int model_modify_qp(enum ibv_qp_type type, enum ibv_qp_state cur, enum ibv_qp_state next, int mask);
/* The attributes a transition requires, and those it also accepts (IBV_QP_STATE excluded); false: illegal. */
bool model_qp_masks(enum ibv_qp_type type, enum ibv_qp_state cur, enum ibv_qp_state next, int *required,
		    int *optional);
/* The same with the state the caller claims the QP is in (IBV_QP_CUR_STATE in mask): EINVAL if it is not. */
int model_modify_qp_claimed(enum ibv_qp_type type, enum ibv_qp_state cur, enum ibv_qp_state claimed,
			    enum ibv_qp_state next, int mask);
/* Whether a QP in `state` accepts work: posting sends (RTS, SQD; ERR and SQE flush) and receives. */
bool model_can_post_send(enum ibv_qp_state state);
bool model_can_post_recv(enum ibv_qp_state state);

/* ---- keys ---- */

/* A memory region or bound window, as its owner registered it. */
struct model_key {
	bool valid;	 /* registered / bound and not invalidated */
	uint64_t addr;	 /* first byte */
	uint64_t length; /* bytes */
	uint32_t access; /* IBV_ACCESS_* */
	uint32_t pd;	 /* the owner's PD (any identifier) */
	uint32_t qpn;	 /* a type-2 window: the QP it is bound to; 0: any QP of the PD */
};

/* The status of a local SGE [addr, addr + len) through key k from a QP on `pd`; `write`: the device stores
 * there (a receive, a READ's or an atomic's result). */
enum ibv_wc_status model_local_sge(const struct model_key *k, uint32_t pd, uint64_t addr, uint32_t len,
				   bool write);
/*
 * The status the requester sees for a remote access needing `access` (one IBV_ACCESS_REMOTE_* flag) of [addr,
 * addr + len) through key k, from responder QP qpn on `pd` whose own access flags are qp_access; atomics also
 * need an 8-byte aligned address.
 */
enum ibv_wc_status model_remote_access(const struct model_key *k, uint32_t pd, uint32_t qpn,
				       uint32_t qp_access, uint32_t access, uint64_t addr, uint64_t len);
/* The remote access flag an RDMA opcode needs (0: none). */
uint32_t model_access_for(enum ibv_wr_opcode op);

/* ibv_rereg_mr(3): 0, or EINVAL (no change asked, access flags that need local write without it) or EBUSY
 * (windows bound to the MR). */
int model_rereg_mr(int flags, int access, int windows_bound);

/* A local invalidate (LOCAL_INV, or remote: SEND_WITH_INV) of a valid window of `mw_type` on the QP's PD:
 * only type 2 may be invalidated. */
enum ibv_wc_status model_invalidate_mw(int mw_type, bool remote);
/* The Q_Key a UD send with remote Q_Key `dqkey` carries from a QP whose own Q_Key is `own` (ibv_post_send(3):
 * a privileged one, high bit set, is replaced by the QP's). */
uint32_t model_ud_qkey(uint32_t dqkey, uint32_t own);
/* A receive of recv_bytes taking a message of msg_bytes (RC, UC): LOC_LEN_ERR if it does not fit. */
enum ibv_wc_status model_recv_fits(uint32_t recv_bytes, uint32_t msg_bytes);
/* ibv_post_srq_recv(3) with `posted` receives outstanding on an SRQ of max_wr: ENOMEM when full. */
int model_post_srq_recv(uint32_t posted, uint32_t max_wr);

/* ---- completions ---- */

#define MODEL_ANY_LEN UINT32_MAX

/* A predicted completion: any of `statuses`; on success, opcode and byte_len (in [len_min, len_max]). */
struct model_wc {
	uint64_t statuses; /* bit s: status s is right */
	int opcode;	   /* enum ibv_wc_opcode; -1: not predicted */
	uint32_t len_min, len_max;
	uint32_t qp_num;
	unsigned int flags_set, flags_clear; /* wc_flags that must be set / clear on success */
};

#define MODEL_ST(s) (1ull << (s))

/* The completion a posted send WR earns; racy statuses added by the caller. */
void model_send_wc(struct model_wc *e, enum ibv_wr_opcode op, uint32_t sge_bytes, uint32_t qp_num);
/* The completion a posted receive earns on a QP of `type` (UD: the GRH in front). */
void model_recv_wc(struct model_wc *e, enum ibv_qp_type type, uint32_t recv_bytes, uint32_t qp_num);
/* The completion of a WR posted to a QP in ERR: a flush, nothing else. */
void model_flush_wc(struct model_wc *e, uint32_t qp_num);
/* ---- shared receive queues ---- */

/* ibv_destroy_srq(3): EBUSY while `qps` QPs use the SRQ, else 0. */
int model_destroy_srq(int qps);
/* Whether a receive a QP took from an SRQ may fail (or flush), after `failed_before` did: a QP on an SRQ
 * entering ERR flushes its sends and at most the receive it was filling, the SRQ's others stay. */
bool model_srq_recv_may_fail(int failed_before);

/*
 * Compares a completion with the prediction.  Returns true if it fits; else false with what differs in why (a
 * sentence without subject: "completed with ...; expected ...").
 */
bool model_wc_matches(const struct model_wc *e, const struct ibv_wc *wc, char *why, size_t why_len);

#endif
