/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* One walker client: its device context, its objects and their references. */
#ifndef RDMATOOL_CMD_WALK_CLIENT_H
#define RDMATOOL_CMD_WALK_CLIENT_H

#include "cmd/walk/walk.h"
#include "core/util/clock.h"

#define BUF_SIZE   (16u << 20) /* the per-client memory MRs are carved from */
#define CHECK_SLOT (64u << 10) /* --verify: one slot per writer at the end */
/* --verify: the check zone ending every buffer, where no WRITE, READ or receive of the random walk lands: one
 * message cell per WR slot (a SEND's header, or all of a small one: message.c), then the check slots. */
#define MSG_CELL	   256u
#define MSG_AREA	   (MAX_WR * MSG_CELL)
#define ZONE_START	   (BUF_SIZE - WALK_MAX_CLIENTS * CHECK_SLOT - MSG_AREA)
#define MSG_CELL_OFF(slot) (ZONE_START + (uint32_t)(slot)*MSG_CELL)
#define SLOT_OFF(id)	   (ZONE_START + MSG_AREA + (uint32_t)(id)*CHECK_SLOT)
/*
 * A client's check slot, in quarters: [0, 16K) checked-WRITE source, [16K, 32K) its read-back, [32K, 48K) its
 * target in the peer's buffer (16 KiB: four packets at the largest MTU, so a NIC that places only part of a
 * multi-packet WRITE or READ shows), then its atomic words in the peer's buffer at 48K and the local results
 * of its atomics at 56K.
 */
#define ATOM_WORDS	16
#define ATOM_REMOTE_OFF (CHECK_SLOT / 4 * 3)
#define ATOM_LOCAL_OFF	(CHECK_SLOT / 8 * 7)

/* Object bounds (the original's): minimums are bootstrapped. */
#define MIN_CQ		  2
#define MAX_CQ		  5
#define MIN_PD		  2
#define MAX_PD		  5
#define MIN_MR		  2
#define MAX_MR		  10
#define MIN_MW		  1
#define MAX_MW		  30 /* per type */
#define MAX_RC_INITIATED  10
#define MAX_QP		  96 /* RC initiated + responders (which may exceed) + UD */
#define MAX_UD		  8
#define MAX_AH		  16
#define MAX_SRQ		  4
#define MAX_REMOTE_KEYS	  1024
#define MAX_REMOTE_UD	  (MAX_UD * WALK_MAX_CLIENTS)
#define MAX_WR		  8192
#define CREDITS		  32
#define OUTBOX_SOFT_LIMIT 256  /* beyond this, actions that publish redraw */
#define KEY_EVENTS	  4096 /* --verify: recent rkey issues and removals */

struct cq_rec {
	bool used;
	struct ibv_cq *cq;
	int cqe, users, outstanding;
};

struct pd_rec {
	bool used;
	struct ibv_pd *pd;
	struct ibv_mr *msg_mr; /* --verify: local access to the message cells (message.c) */
	uint32_t id;
	int users;
};

struct mr_rec {
	bool used;
	struct ibv_mr *mr;
	int pd;
	uint32_t off, len;
	int bound_mws, inflight;
	int access;
};

enum mw_state { MW_FREE, MW_BINDING, MW_BOUND };

struct mw_rec {
	bool used;
	struct ibv_mw *mw;
	int type, pd, mr, qp;
	enum mw_state state;
	uint32_t rkey, new_rkey;
	uint64_t addr, len;
	uint64_t key_event; /* --verify: the key event that issued new_rkey */
	int access, new_access;
};

enum qp_state { QP_CONNECTING, QP_READY, QP_PEER_DOWN, QP_ERR };

struct qp_rec {
	bool used;
	struct ibv_qp *qp;
	enum ibv_qp_type type;
	enum qp_state state;
	int pd, scq, rcq;
	int srq;	/* the SRQ its receives come from (srq_rec index), -1: its own receive queue */
	int srq_credit; /* RC on an SRQ: receive credits given to the peer, not yet consumed */
	int srq_failed; /* --verify: receives it took from its SRQ that completed with an error */
	struct ibv_qp_cap cap;
	bool initiator, down_sent;
	int peer;
	uint32_t peer_qpn, peer_pd, qkey;
	uint32_t access, peer_access; /* RC: this QP's remote access flags, and its peer QP's */
	int send_inflight, recv_inflight, type2_bound;
	uint32_t credit[CREDITS]; /* bytes of each receive the peer posted for us */
	int credit_head, credit_count;
	uint64_t err_since_ns, err_seq; /* when it entered ERR, and in which step */
	uint32_t err_late_steps;	/* --verify: steps (each polls) since the flush deadline passed */
	bool sq_failed;			/* --verify: an error completion came from the send queue */
	bool narrowed;			/* --verify: modify_qp took access flags from it (modify.c) */
	uint8_t tx_imm_seq, rx_imm_seq; /* --verify: RC SEND_WITH_IMM sequence, sent and received */
	uint32_t tx_seq, rx_seq;	/* --verify: RC messages with a header, sent and received */
};

/* An SRQ of one QP type and receive size (any of its QPs fits any receive); its CQ is their receive CQ. */
struct srq_rec {
	bool used;
	struct ibv_srq *srq;
	enum ibv_qp_type type;
	int pd, cq, users, posted;
	uint32_t max_wr, max_sge, recv_len;
};

struct ah_rec {
	bool used;
	struct ibv_ah *ah;
	int pd, target;
};

struct rkey_rec {
	bool used;
	int owner, kind;
	uint32_t rkey, pd_id, qpn;
	uint32_t off; /* offset of addr in the owner's buffer */
	uint64_t addr, len;
	uint64_t event;	 /* the owner's key event that issued it */
	uint32_t access; /* its remote access flags */
};

struct rud_rec {
	bool used, changed; /* changed: the owner moved the QP to another Q_Key, prev_qkey */
	int owner;
	uint32_t qpn, qkey, prev_qkey;
};

struct wr_rec {
	bool busy, is_recv, probe, check, expect_flush, atom_check;
	bool msg, msg_private; /* --verify receive: its message cell holds the header (and all of it) */
	bool srq_recv;	       /* posted to SRQ `srq`; qp is the consuming QP once it completes */
	uint8_t action, probe_kind;
	uint8_t opcode; /* a send's enum ibv_wr_opcode as posted (a bind has mw >= 0 instead) */
	int8_t qp, mr, mw, srq;
	uint32_t gen, len;
	uint32_t probe_rkey;
	int probe_owner;
	uint64_t probe_event, probe_addr;
};

/* Which objects the next action should take (a step toward a drawn action that cannot run yet, toward.c);
 * honoured when the hinted object is eligible, else the pick is random.  -1: no hint. */
struct walk_hint {
	bool on;
	int pd, qp, mr, mw, ah, peer;
	uint32_t peer_pd_id; /* create_rc_qp_pair: the PD the responder should use (0: any) */
	int srq;	     /* a new QP goes on this SRQ (of its type and PD); destroy_srq takes it */
};

struct walk_devprobe; /* --verify device probes on objects of their own (devprobe.c) */

struct walk_client {
	int id, clients;
	const struct walk_config *cfg;
	struct walk_bus *bus;
	const struct walk_peer_addr *peers;
	atomic_bool *stop;
	atomic_uint_fast64_t live_steps;
	/* Waits until every client stopped issuing (in-process or via the hub). */
	void (*barrier)(struct walk_client *c);
	void *barrier_arg;

	struct ibv_context *ctx;
	struct ibv_device_attr dattr;
	struct ibv_port_attr pattr;
	union ibv_gid gid;
	uint32_t weight[ACT_COUNT];
	struct rng rng;
	struct walk_history hist;
	struct walk_stats stats;
	struct stats_entry *counters; /* this client's row in `rdmatool cqstat` */
	unsigned char *buf;
	uint32_t next_pd_id;
	struct walk_hint hint;
	uint8_t owed[ACT_COUNT]; /* draws that could not run, still to serve (one_step) */
	int owed_next;		 /* where the round-robin over owed actions resumes */
	struct walk_devprobe *devprobe;
	uint64_t seq;
	uint64_t pause_ns; /* --multinode on fewer CPUs than clients: the pause after each run (one_step) */
	uint64_t last_pause_ns; /* when the last pause ended */

	struct cq_rec cq[MAX_CQ];
	struct pd_rec pd[MAX_PD];
	struct mr_rec mr[MAX_MR];
	struct mw_rec mw[2 * MAX_MW];
	struct qp_rec qp[MAX_QP];
	struct ah_rec ah[MAX_AH];
	struct srq_rec srq[MAX_SRQ];
	int srq_posted; /* receives posted to SRQs: they complete only when a message consumes them */
	struct rkey_rec rkeys[MAX_REMOTE_KEYS];
	struct rud_rec ruds[MAX_REMOTE_UD];

	struct wr_rec *wr;
	uint32_t *free_wr;
	int nfree_wr, inflight;
	uint32_t gen;

	struct walk_msg *outbox;
	int nout, outcap;

	/* --verify: one checked WRITE + READ-back at a time, one probe */
	bool check_busy, check_write_ok, probe_busy, type2;
	bool lockstep; /* each step waits for its sends: single-client replay */
	bool faults;   /* RDMATOOL_SOFT_FAULTS is set: statuses a fault explains are not judged */
	/* Devices reuse key values (8-bit tags), so a probe that worked is a failure only if the owner did
	 * not issue that key again since. */
	struct {
		uint32_t rkey;
		bool issued;
	} key_event[KEY_EVENTS];
	uint64_t nkey_events;
	uint32_t check_len;
	uint64_t check_seed;
	/* --verify: each word this client owns (only it operates on) in each peer's buffer */
	struct {
		uint64_t value;
		bool known;
	} atom[WALK_MAX_CLIENTS][ATOM_WORDS];
	struct {
		bool busy;
		int owner, word;
		enum walk_action op;
		uint32_t rkey;
		uint64_t compare_add, swap;
	} atom_pending;
};

/* client.c */
int walk_client_open(struct walk_client *c);
int walk_client_run(struct walk_client *c);
/* Handles every message waiting for this client (a barrier must keep its inbox moving too). */
void walk_client_take_messages(struct walk_client *c);
void walk_client_close(struct walk_client *c);
/* The pause that keeps one of `clients` never-blocking processes to its share of `cpus` (0: none needed). */
uint64_t walk_pace_for(int clients, long cpus);

/* objects.c: bookkeeping */
/* A key update: a type-2 key to the bound QP's peer only (unless --verify), else everyone. */
void walk_publish_key(struct walk_client *c, struct walk_msg *m, int qp);
int walk_pick_index(struct walk_client *c, int n, bool (*ok)(struct walk_client *, int, const void *),
		    const void *arg);
/* The hinted index if hints are on and it is eligible, else walk_pick_index. */
int walk_pick_hinted(struct walk_client *c, int n, bool (*ok)(struct walk_client *, int, const void *),
		     const void *arg, int hint);
/* A failure of the run, named by client and step. */
#define WALK_FAIL(c, fmt, ...)                                                                               \
	walk_stats_fail(&(c)->stats, "client %d #%llu: " fmt, (c)->id, (unsigned long long)(c)->seq,         \
			##__VA_ARGS__)
/* How many records of array `recs` (c->cq, c->pd, c->mr ...) are in use. */
#define WALK_COUNT_USED(recs)                                                                                \
	({                                                                                                   \
		int n_ = 0;                                                                                  \
		for (size_t i_ = 0; i_ < sizeof(recs) / sizeof((recs)[0]); i_++)                             \
			n_ += (recs)[i_].used;                                                               \
		n_;                                                                                          \
	})
int walk_count_mw(struct walk_client *c, int type);
int walk_count_qp(struct walk_client *c, enum ibv_qp_type type, bool initiated_only);
int walk_alloc_wr(struct walk_client *c, enum walk_action a, int qp, int mr, uint64_t *wr_id);
void walk_release_wr(struct walk_client *c, uint32_t slot);
void walk_publish(struct walk_client *c, struct walk_msg *m);
void walk_broadcast(struct walk_client *c, struct walk_msg *m);
bool walk_outbox_busy(struct walk_client *c);
void walk_flush_outbox(struct walk_client *c);
uint64_t walk_objects_alive(struct walk_client *c);
void walk_fill_pattern(unsigned char *p, uint32_t len, uint64_t seed);
void walk_note_key(struct walk_client *c, uint32_t rkey, bool issued);
/* Since issue event `event` (issued): 1 no other event on that key, 0 removed (or issued) since; since
 * removal event `event` (!issued): 1 never issued again, 0 issued again; -1 unknown (aged out). */
int walk_key_since(struct walk_client *c, uint32_t rkey, uint64_t event, bool issued);

/* actions.c */
/* Returns 1 done (issued), 0 precondition not met (redraw). */
int walk_do_action(struct walk_client *c, enum walk_action a);
/* RESET -> INIT -> RTR -> RTS, up to state `last`, each transition with the attributes the model
 * (model_qp_masks) says it requires: a UD QP's Q_Key; a connected QP's access flags and its peer, QP peer_qpn
 * of client `peer`. */
int walk_qp_to(struct walk_client *c, struct ibv_qp *qp, enum ibv_qp_state last, uint32_t qkey,
	       uint32_t access, int peer, uint32_t peer_qpn);
void walk_fill_ah_attr(struct walk_client *c, int target, struct ibv_ah_attr *ah); /* toward client target */
void walk_atomic_check_done(struct walk_client *c, enum ibv_wc_status st);

/* probe.c (--verify) */
int walk_post_probe(struct walk_client *c, const struct walk_msg *m);
void walk_probe_step(struct walk_client *c);
void walk_devprobe_step(struct walk_client *c);
void walk_devprobe_end(struct walk_client *c);
void walk_mark_inv_probe(struct walk_client *c, uint32_t slot, const struct rkey_rec *k);
void walk_probe_done(struct walk_client *c, const struct wr_rec *w, enum ibv_wc_status st);
void walk_probe_hit(struct walk_client *c, const struct walk_msg *m);
void walk_post_to_err(struct walk_client *c, int q);
int walk_destroy_qp_rec(struct walk_client *c, int q);
/* actions_srq.c: a completion of an SRQ receive; false: it names no QP that was on the SRQ (reported). */
bool walk_srq_recv_done(struct walk_client *c, uint32_t slot, const struct ibv_wc *wc);
/* The SRQ a new QP of `type` on PD p takes (-1: its own receive queue). */
int walk_pick_srq_for_qp(struct walk_client *c, enum ibv_qp_type type, int p);
/* Forgets SRQ s's receives still posted (the device drops them with the SRQ). */
void walk_srq_orphan(struct walk_client *c, int s);
/* pd_id: the PD serial the initiator asked for (0 or unknown: any PD). */
int walk_create_rc_responder(struct walk_client *c, uint32_t pd_id);

/* modify.c (--verify): now and then, a random RTS-to-RTS modify_qp, judged by the model */
void walk_modify_step(struct walk_client *c);

/* toward.c: one step toward a drawn action that cannot run; 1 if it issued one. */
int walk_toward(struct walk_client *c, enum walk_action a);

#endif
