/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The conformance cases' pair: a connected RC pair of the device's own (A
 * sends to B through its own GID), driven by one short script per case and
 * judged against an exact model of the memory and of every completion.
 * Nothing else touches these objects, so every expectation is unracy.
 */
#ifndef RDMATOOL_CMD_CONFORM_RCP_H
#define RDMATOOL_CMD_CONFORM_RCP_H

#include "cmd/conform/dev.h"
#include "core/util/clock.h"
#include "core/util/rng.h"
#include "hw/hw.h"

#include <errno.h>
#include <string.h>

static inline int imin(int a, int b)
{
	return a < b ? a : b;
}

/* The probe's memory, one MR: A's sources, B's receives, B's WRITE targets, A's READ results. */
#define RCP_SLOT      4096u /* each WR of a script has its own slot in RECV, TGT and RDST */
#define RCP_AREA      (8 * RCP_SLOT)
#define RCP_BYTES     (4 * RCP_AREA)
#define RCP_SRC	      0u
#define RCP_RECV      RCP_AREA
#define RCP_TGT	      (2 * RCP_AREA)
#define RCP_RDST      (3 * RCP_AREA)
#define RCP_MAX_WR    34
#define RCP_MAX_SGE   4
#define RCP_MAX_MSG   3500u /* mostly small, but more than an MTU too */
#define RCP_SMALL_MSG 300u
#define RCP_CQE	      64

struct rcp_shape {
	int scqe; /* A's send CQ */
	uint32_t a_send_wr, a_recv_wr, b_recv_wr;
	uint8_t a_rnr_retry;
	bool sig_all, uc; /* A signals every WR; the pair is UC */
	bool channel;	  /* B's receive CQ has a completion channel */
	bool ext;	  /* A's send CQ made by ibv_create_cq_ex, A by ibv_create_qp_ex (the ibv_wr_* API) */
	bool ext_inv;	  /* ext: A also takes ibv_wr_send_inv */
	bool ext_aw;	  /* ext: A also takes ibv_wr_atomic_write */
	bool ext_local_inv; /* ext: A also takes ibv_wr_local_inv and ibv_wr_bind_mw */
	uint64_t ext_wc_flags; /* ext: more wc_flags for A's send CQ (timestamps) */
	uint8_t timeout, retry_cnt; /* A's, when timeout is not 0 */
	bool timeout0;		    /* A's timeout is 0: infinite */
};

/* An expected completion. */
struct rcp_exp {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	bool check_len, imm;
	bool ud;  /* a receive: IBV_WC_GRH is set exactly on UD */
	bool inv; /* a receive: IBV_WC_WITH_INV set, invalidated_rkey inv_rkey (else the flag is clear) */
	uint32_t byte_len, imm_data, inv_rkey;
	uint32_t src_qp; /* UD receive: the sender's QP number (0: not checked) */
};

struct rcp {
	struct cf_dev *dev;
	struct rng *rng;
	const char *name;
	unsigned char *buf, *model; /* the registered memory and what it must hold */
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *scq, *rcq, *ocq; /* A's sends, B's receives, the rest */
	struct ibv_comp_channel *ch;
	struct ibv_cq *xcq; /* notify: a second CQ on ch, armed, never given a completion */
	struct ibv_cq_ex *scq_ex; /* shape.ext: scq's extended face */
	struct ibv_cq_ex *rcq_ex; /* rcq made by ibv_create_cq_ex: rcp_expect reads it with ibv_wc_read_* */
	struct ibv_qp *a, *b;
	struct ibv_qp_cap acap, bcap;
	struct rcp_shape shape;
	uint32_t psn_a, psn_b;
	enum ibv_mtu path_mtu; /* the pair's (both ways); 0 before rcp_setup: the port's active MTU */
	struct ibv_ah_attr path; /* the pair's sl and GRH fields (rcp_legal_path); hop_limit 0 before rcp_setup */
	uint64_t base_id;
	unsigned round; /* the case's round: rcp_variant walks a script's variants in turn */
	int failures_at_start;
	bool ran;	/* the pair was set up: the script was judged */
	bool scq_dirty; /* A's send CQ was left full or in overflow */
	bool abandoned; /* the device refused what it need not support: nothing to judge */
	int setup_errno; /* rcp_setup could not create the pair's objects (abandoned): why */
};

/* A piece of the probe's memory an SGE covers. */
struct rcp_piece {
	uint32_t off, len;
};

#define RCP_UD_QKEY	  0x2a6b0000u /* the Q_Key of the probes' UD QPs */
#define RCP_REMOTE_RIGHTS (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

static inline struct rcp_exp rcp_done(uint64_t wr_id, enum ibv_wc_status st, enum ibv_wc_opcode op)
{
	return (struct rcp_exp){.wr_id = wr_id, .status = st, .opcode = op};
}

/* One signaled WR of `sge` on qp (RDMA and atomics at raddr through the probe MR's rkey); 0 or an errno. */
int rcp_post1(struct rcp *p, struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, struct ibv_sge sge,
	      uint64_t raddr);
int rcp_recv1(struct ibv_qp *qp, uint64_t wr_id, struct ibv_sge sge);
/* rcp_post1 through any rkey (RDMA: raddr, rkey; a FETCH_ADD adds 1). */
int rcp_post1_through(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, struct ibv_sge sge, uint64_t raddr,
		      uint32_t rkey);
/* A signaled WRITE of `from` to raddr through rkey. */
int rcp_post1_rkey(struct rcp *p, struct ibv_qp *qp, uint64_t wr_id, struct rcp_piece from, uint64_t raddr,
		   uint32_t rkey);

/* Which of a script's k named variants this round runs: each in turn, so k rounds run them all. */
static inline int rcp_variant(const struct rcp *p, int k)
{
	return (int)(p->round % (unsigned)k);
}

void rcp_fail(struct rcp *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool rcp_failed(const struct rcp *p);
int rcp_setup(struct rcp *p);
void rcp_teardown(struct rcp *p);
/* len bytes from off in k pieces with gaps of up to `gap` bytes between them; returns the pieces used. */
int rcp_pieces(struct rcp *p, uint32_t off, uint32_t len, int k, uint32_t gap, struct rcp_piece *out);
void rcp_sges(const struct rcp *p, const struct rcp_piece *pc, int n, struct ibv_sge *sge);
/* The model: the bytes of `src` pieces land in `dst` pieces, in order (a gather then a scatter). */
void rcp_model_move(struct rcp *p, const struct rcp_piece *src, int ns, const struct rcp_piece *dst, int nd);
/* Polls cq until n completions arrived (or the deadline passed) and checks each against exp. */
void rcp_expect(struct rcp *p, struct ibv_cq *cq, const char *who, const struct rcp_exp *exp, int n);
/* Checks the completions wc[0..got) taken from cq against exp[0..n); fewer than n: a failure. */
void rcp_judge(struct rcp *p, struct ibv_cq *cq, const char *who, const struct ibv_wc *wc, int got,
	       const struct rcp_exp *exp, int n);
#define RCP_DEADLINE_NS (3000 * 1000000ull)
/* One completion of any status from cq within the deadline (1), else a failure (0). */
int rcp_poll1(struct rcp *p, struct ibv_cq *cq, struct ibv_wc *wc);
/* The same wait, judging nothing: 1, 0 (nothing by the deadline) or ibv_poll_cq's error. */
int rcp_poll1_within(struct ibv_cq *cq, struct ibv_wc *wc);
/* Completions of cx read field by field (ibv_start_poll / ibv_wc_read_*) until n arrived or the deadline. */
int rcp_poll_ex(struct rcp *p, struct ibv_cq_ex *cx, struct ibv_wc *wc, int n);
/* Polls cq once more: nothing must be there. */
void rcp_expect_empty(struct rcp *p, struct ibv_cq *cq, const char *who);
void rcp_expect_state(struct rcp *p, struct ibv_qp *qp, const char *who, enum ibv_qp_state st);
void rcp_check_memory(struct rcp *p);
/* Waits until the buffer at [off, off + len) holds the model's bytes (what was written landed); -1 after a failure naming what. */
int rcp_wait_landed(struct rcp *p, uint32_t off, uint32_t len, const char *what);
int rcp_to_err(struct ibv_qp *qp);
/* The address of this client's own port (GRH, the configured GID index, hop limit 64). */
struct ibv_ah_attr rcp_self_ah_attr(const struct rcp *p);
/* An address handle to this client's own port, as a UD QP's datagrams to itself need. */
struct ibv_ah *rcp_self_ah(struct rcp *p);
/* The end of a script that swapped a UD (or UC) pair in for p's RC pair: the RC pair back, the rest freed. */
void rcp_ud_pair_free(struct rcp *p, struct ibv_qp *rc_a, struct ibv_qp *rc_b, struct ibv_qp *ua,
		      struct ibv_qp *ub, struct ibv_ah *ah);
/* The UD QPs and AH a script made (any may be NULL). */
void rcp_ud_free(struct ibv_qp *ua, struct ibv_qp *ub, struct ibv_ah *ah);
int rcp_reconnect(struct rcp *p);
/* One of cap's four fields, at random, one past the device's limit (max_qp_wr or max_sge); says which. */
const char *rcp_cap_past_limit(struct rcp *p, struct ibv_qp_cap *cap);
/*
 * Waits up to wait_ns for an async event of this type on obj (a CQ for
 * IBV_EVENT_CQ_ERR, else a QP; events for others are taken and dropped):
 * 1 seen, 0 not, -1 the events cannot be read without blocking.
 */
int rcp_async_event(struct rcp *p, enum ibv_event_type type, const void *obj, uint64_t wait_ns);
void rcp_wait_ns(uint64_t ns);
/*
 * True once `end` has passed and the caller has polled RCP_LATE_POLLS more
 * times: on a loaded machine the process (and the soft device's progress
 * with it) can stall past a deadline, so time alone does not make a device late.
 * Only for the waits for what must come: a short wait for what must not
 * come ends on time (polling on would only slow the probes down).
 */
#define RCP_LATE_POLLS 256
bool rcp_late(uint64_t end, unsigned *late);
void rcp_idle(unsigned *idle);

/*
 * The path attributes every device must take, now and then not the usual
 * ones: any SL (0-15), a DSCP traffic class, any flow label, a hop limit of
 * 64-255 (ibv_modify_qp(3), ibv_create_ah(3)).
 */
void rcp_legal_path(struct rcp *p, struct ibv_ah_attr *ah);
/* RESET -> INIT with the probe's port and access flags; the RTR attributes toward dest, and their mask. */
int rcp_to_init(struct rcp *p, struct ibv_qp *qp);
void rcp_rtr_attr(struct rcp *p, struct ibv_qp *dest, struct ibv_qp_attr *a, int *mask);
/* The RTR -> RTS attributes of qp (its send PSN is the one rcp_rtr_attr gives its peer), and their mask. */
void rcp_rts_attr(struct rcp *p, struct ibv_qp *qp, uint8_t rnr_retry, struct ibv_qp_attr *a, int *mask);
/* One signaled WR on A (a type-2 bind or a LOCAL_INV) that must succeed, and its completion; 0: it did. */
int rcp_post_a(struct rcp *p, struct ibv_send_wr *wr, enum ibv_wc_opcode op, const char *what);
/* ibv_dereg_mr of *mr must return want (0 or EBUSY); *mr is NULL once gone. */
void rcp_dereg_expect(struct rcp *p, struct ibv_mr **mr, int want, const char *why);
/* Completion events of ch (each must name the probe's receive CQ) within wait_ns; *acked counts them. */
#define RCP_EVENT_NS (3000 * 1000000ull)
int rcp_cq_events(struct rcp *p, struct ibv_comp_channel *ch, uint64_t wait_ns, unsigned *acked);

/* The scripts (rcprobe_cases.c). */
void rcp_case_data(struct rcp *p);
void rcp_case_recv_short(struct rcp *p);
void rcp_case_rnr(struct rcp *p);
void rcp_case_rq_flush(struct rcp *p);
void rcp_case_cq_overflow(struct rcp *p);
/* rcprobe_more.c: events, UD, SQD, a dead peer; rcprobe_access.c: access rights, windows */
void rcp_case_local(struct rcp *p);
void rcp_case_notify(struct rcp *p);
/* B's receive CQ armed with a completion waiting (or, resize, armed and then resized): one event next. */
void rcp_notify_after(struct rcp *p, bool resize);
void rcp_case_ud(struct rcp *p);
void rcp_case_window(struct rcp *p);
void rcp_case_sqd(struct rcp *p);
void rcp_case_dead_peer(struct rcp *p);
void rcp_case_remote(struct rcp *p);
void rcp_case_bind_error(struct rcp *p);
/* rcprobe_ext.c: the extended verbs (ibv_create_cq_ex, ibv_wr_*, ibv_rereg_mr, ibv_resize_cq) */
void rcp_case_ext(struct rcp *p);
void rcp_case_resize_cq(struct rcp *p);
/* rcprobe_keys.c: key rotation, stale keys, a window's hold on its MR */
void rcp_case_keys(struct rcp *p);
/* rcprobe_partial.c: a chain refused part-way (*bad_wr), a QP reset or destroyed on a shared CQ */
void rcp_case_partial_post(struct rcp *p);
void rcp_case_shared_cq(struct rcp *p);
/* rcprobe_refuse.c: what a device must refuse and leave as it was (binds, stale keys, modify_qp, events) */
void rcp_case_refuse(struct rcp *p);
/* rcprobe_hold.c: work a device must hold back, what it must leave alone (SQD, UC drops, LOCAL_INV's PD) */
void rcp_case_hold(struct rcp *p);
/* rcprobe_states.c: the QP state machine; a fresh QP of any type brought to any state */
const char *rcp_state_name(enum ibv_qp_state s);
/* A QP of type t on the probe's PD, 4 WRs and 1 SGE each way. */
struct ibv_qp *rcp_qp(struct rcp *p, enum ibv_qp_type t, struct ibv_cq *scq, struct ibv_cq *rcq);
/* RESET, then along the legal path to st (RC/UC: connected toward dest; SQE: UD only, by a send error). */
int rcp_bring(struct rcp *p, struct ibv_qp *qp, struct ibv_qp *dest, enum ibv_qp_state st);
/* A reconnected (RESET -> RTS toward B) with send PSN psn; 0, or -1 after a failure naming it. */
int rcp_reconnect_a_at(struct rcp *p, uint32_t psn);
void rcp_case_transitions(struct rcp *p);
/* rcprobe_serve.c: the receive side in every state that receives; requests from a QP not connected */
void rcp_case_serve(struct rcp *p);
void rcp_case_stranger(struct rcp *p);
/* rcprobe_limits.c: device and QP limits at exactly their value */
void rcp_case_limits(struct rcp *p);
/* rcprobe_retry.c: rnr_retry and retry_cnt counted */
void rcp_case_retry(struct rcp *p);
/* rcprobe_psn.c: an RC responder goes by PSN (duplicates acknowledged, not executed; a gap waits) */
void rcp_case_psn(struct rcp *p);
/* rcprobe_replay.c: a duplicate atomic answered from the saved result, not executed again */
void rcp_case_replay(struct rcp *p);
/* rcprobe_resync.c: a UC responder takes a message whatever its PSN */
void rcp_case_resync(struct rcp *p);
/* rcprobe_refused_imm.c: a refused WRITE_WITH_IMM loses no receive (RC: all complete; UC: all kept) */
void rcp_case_refused_imm(struct rcp *p);
/* rcprobe_opcodes.c: opcodes a transport does not have (UC: READ, atomics; UD: RDMA, atomics) */
void rcp_case_opcodes(struct rcp *p);
/* rcprobe_zero.c: zero-length operations */
void rcp_case_zero(struct rcp *p);
/* rcprobe_rules.c: attribute ranges, table indexes, timeout 0, unsignaled local work, ibv_wr_abort, rereg */
void rcp_case_rules(struct rcp *p);
/* rcprobe_claims.c: what ibv_query_device claims works; an unsignaled WR that fails completes */
void rcp_case_claims(struct rcp *p);
/* rcprobe_wrapi.c: ibv_wr_send/send_imm/rdma_write_imm/rdma_read with SGE and inline lists */
void rcp_case_wrapi(struct rcp *p);
/* rcprobe_life.c: CQ arming across waiting completions and resize; PDs held by their users, rereg CHANGE_PD
 */
void rcp_case_life(struct rcp *p);
/* rcprobe_clock.c: completion timestamps against the host's clock */
void rcp_case_clock(struct rcp *p);
/* rcprobe_holds.c: channels and CQs held by their users only, REMOTE_READ alone, atomic_cap */
void rcp_case_holds(struct rcp *p);
/* rcprobe_iova.c: an MR registered at an IOVA of its own */
void rcp_case_iova(struct rcp *p);
/* rcprobe_create.c: what creating CQs, QPs, SRQs, windows and ibv_rereg_mr refuse or report */
void rcp_case_create(struct rcp *p);
/* rcprobe_drain.c: WRs posted in SQD, SQ_DRAINED and sq_draining with a SEND outstanding, a shared CQ's head
 */
void rcp_case_drain(struct rcp *p);
/* pair.c: objects in use refuse to go (a CQ a QP uses, a channel a CQ uses, an MR a window is bound to) */
void rcp_case_busy(struct rcp *p);

#endif
