/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The soft RDMA device: a user-space NIC, the embedded default provider.
 *
 * One NIC per process (struct soft_nic), shared by every context opened on
 * soft0 and reference counted: an rkey registered through one context is
 * reachable from another.  The NIC's engine executes every send queue
 * (requester), serves every incoming request (responder: SEND, WRITE, READ,
 * atomics) and runs the retry and RNR timers, one round at a time.  A
 * progress thread per NIC runs the rounds; while the NIC talks over the
 * wire, an application thread that posts to a remote peer or polls an
 * empty CQ runs a round itself when nobody else does, and the progress
 * thread naps meanwhile (engine.c), so a message crosses no thread
 * hand-off on either side.
 *
 * Addressing (like rxe/RoCE): the port's link layer is Ethernet, its LID is
 * 0, and GID[0] names the NIC's TCP "wire" endpoint:
 *
 *	raw[0..1]   fe 80            link-local prefix
 *	raw[2..7]   00               (zero)
 *	raw[8..11]  IPv4 address     network order
 *	raw[12..13] TCP port         network order
 *	raw[14..15] 53 57            "SW", marks a soft GID
 *
 * A remote peer is addressed with ah_attr.is_global = 1 and grh.dgid = the
 * peer's GID[0] (RC: IBV_QP_AV at INIT->RTR; UD: ibv_create_ah), plus
 * dest_qp_num / remote_qpn as usual.  A dgid equal to this NIC's own GID
 * means in-process delivery (no socket involved).  is_global = 0 is
 * rejected with EINVAL (modify_qp to RTR, create_ah), as rxe does on an
 * Ethernet port.
 *
 * The NIC listens on RDMATOOL_SOFT_ADDR=ip:port (default 127.0.0.1, port 0
 * = any free port).  RDMATOOL_SOFT_FAULTS configures fault injection
 * (faults.c).  RDMATOOL_SOFT_SPIN_US (default 50, 0..1000000) is how long
 * the engine busy-polls after its last work before it sleeps (engine.c):
 * 0 saves CPU, a doorbell then always wakes the engine through an eventfd.
 */
#ifndef RDMATOOL_HW_SOFT_H
#define RDMATOOL_HW_SOFT_H

#include "hw/hw.h"

#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <poll.h>
#include <stdatomic.h>
#include <stddef.h>

#define SOFT_DEVICE_NAME "soft0"

/* Device limits, reported by query_device and enforced. */
#define SOFT_MAX_QP	     1024
#define SOFT_MAX_QP_WR	     4096
#define SOFT_MAX_SGE	     16
#define SOFT_MAX_CQ	     1024
#define SOFT_MAX_CQE	     65536
#define SOFT_MAX_MR	     4096
#define SOFT_MAX_MW	     4096
#define SOFT_MAX_PD	     1024
#define SOFT_MAX_AH	     4096
#define SOFT_MAX_SRQ	     1024
#define SOFT_MAX_SRQ_WR	     16384
#define SOFT_MAX_DM	     (256u << 10) /* bytes of one device memory allocation */
#define SOFT_MAX_INLINE	     256
#define SOFT_MAX_MSG	     (1u << 30)
#define SOFT_MTU	     4096
#define SOFT_GRH_LEN	     40
#define SOFT_QKEY_PRIVILEGED 0x80000000u
#define SOFT_RING_START	     0xffffffc0u /* first ring index: 64 requests before the 32-bit wrap */
/* Key index space: MRs and MWs share one table, index = key >> 8. */
#define SOFT_MAX_KEYS (SOFT_MAX_MR + SOFT_MAX_MW + 1)

struct soft_nic;

struct soft_faults {
	double drop, corrupt, error;
	unsigned delay_us;
	uint64_t rng;
};

/*
 * A context is a libibverbs "extended" context (abi_compat =
 * __VERBS_ABI_IS_EXTENDED): libibverbs' inline helpers (ibv_create_cq_ex,
 * ibv_create_qp_ex, ibv_query_port, ibv_query_device_ex) find the soft
 * device's extended ops in front of the struct ibv_context, which must be
 * verbs_context's last field.
 */
struct soft_async_item;

struct soft_context {
	struct verbs_context vctx;
	struct soft_nic *nic;
	int async_wr; /* write end of the async event pipe (a byte per event); ibv.async_fd reads */
	pthread_mutex_t async_lock;
	struct soft_async_item *async_head, *async_tail; /* the events themselves (async.c) */
	unsigned async_queued;
};

struct soft_pd {
	struct ibv_pd ibv;
	_Atomic int users;   /* MRs, MWs, QPs and AHs made on it: dealloc_pd refuses while any lives */
	struct ibv_pd *base; /* a parent domain (ibv_alloc_parent_domain): the PD it stands for */
};

/*
 * The protection domain an object made on pd belongs to: a parent domain's
 * PD, else pd itself.  Every object is made on it, so the protection checks
 * compare PDs as they are.
 */
static inline struct ibv_pd *soft_pd_base(struct ibv_pd *pd)
{
	struct ibv_pd *base = ((struct soft_pd *)pd)->base;

	return base ? base : pd;
}

/* An object made on pd takes a reference; its destruction gives it back. */
static inline void soft_pd_hold(struct ibv_pd *pd)
{
	atomic_fetch_add(&((struct soft_pd *)pd)->users, 1);
}

static inline void soft_pd_release(struct ibv_pd *pd)
{
	atomic_fetch_sub(&((struct soft_pd *)pd)->users, 1);
}

struct soft_dm {
	struct ibv_dm ibv;
	uint8_t *buf;
	size_t len;
	atomic_int mrs; /* MRs registered on it: free_dm refuses (EBUSY) while any lives */
};

struct soft_mr {
	struct ibv_mr ibv;
	struct soft_dm *dm; /* ibv_reg_dm_mr: the device memory it covers, else NULL */
	uint64_t iova;	    /* the address keys and SGEs name ibv.addr by (ibv_reg_mr_iova; else ibv.addr) */
	int access;
	int mw_bound; /* windows bound to this MR (progress thread, under obj_lock) */
};

struct soft_mw {
	struct ibv_mw ibv;
	uint32_t key; /* current rkey (type 2 changes at each bind) */
	bool valid;
	struct soft_mr *mr;
	uint64_t addr, length;
	int access;
	uint32_t qpn; /* type 2: the QP it is bound to */
};

enum soft_key_kind { SOFT_KEY_FREE, SOFT_KEY_MR, SOFT_KEY_MW };

struct soft_key_slot {
	enum soft_key_kind kind;
	uint8_t gen; /* rotating low key byte */
	void *obj;
};

struct soft_channel {
	struct ibv_comp_channel ibv;
	int wr_fd; /* ibv.fd is the read end of this pipe */
};

struct soft_cq {
	union {
		struct ibv_cq ibv;
		struct ibv_cq_ex ibv_ex; /* same leading fields: ibv_cq_ex_to_cq() casts */
	};
	struct ibv_wc current; /* the extended-poll API's current completion (cq_ex.c) */
	uint64_t current_ns;   /* ... and when it was polled */
	pthread_mutex_t lock;
	struct ibv_wc *ring;
	uint32_t size, head, count;
	bool overflow;
	int armed; /* 0, or 1 + solicited_only */
	atomic_int qp_refs;
	atomic_uint events_unacked;
	uint32_t async_reported; /* its async events handed to the application (async.c) */
};

struct soft_ah {
	struct ibv_ah ibv;
	struct ibv_ah_attr attr;
};

/* A send WR as the NIC holds it: a private copy, with its own SGEs. */
struct soft_swqe {
	struct ibv_send_wr wr;
	struct ibv_sge sge[SOFT_MAX_SGE];
	uint32_t inline_len;
	uint8_t inline_data[SOFT_MAX_INLINE];
	union ibv_gid dgid; /* UD: from the AH */
	bool dgid_local;
	uint8_t sgid_index; /* UD: from the AH */
	uint32_t dqpn, dqkey;
	bool signaled;
	uint32_t psn;
	bool sent;
	uint64_t deadline_ns, rnr_until_ns;
	unsigned retries, rnr_retries;
	unsigned wire_waits; /* timeouts forgiven because the request was still on the wire */
	bool peer_lost;	     /* its peer's connection closed: fails when its timer expires */
};

struct soft_rwqe {
	uint64_t wr_id;
	int num_sge;
	struct ibv_sge sge[SOFT_MAX_SGE];
};

/*
 * A shared receive queue (srq.c): one ring of receive WQEs that every QP
 * created on it takes its receives from, on the engine, in posting order.
 */
struct soft_srq {
	struct ibv_srq ibv;
	struct soft_nic *nic;
	pthread_mutex_t lock; /* the ring, its size and the limit */
	struct soft_rwqe *rq;
	uint32_t size, mask, head, tail; /* free-running indices, as a QP's ring */
	uint32_t max_sge;
	uint32_t limit;		 /* armed when non-zero: fewer WQEs than this raises SRQ_LIMIT_REACHED once */
	atomic_int users;	 /* QPs created on it: destroy_srq refuses (EBUSY) while any lives */
	uint32_t async_reported; /* its async events handed to the application (async.c) */
};

struct soft_wr_stage;

struct soft_qp {
	union {
		struct ibv_qp ibv;
		struct ibv_qp_ex ibv_ex; /* the ibv_wr_* API, whose first field is the ibv_qp */
	};
	/* ibv_wr_start .. ibv_wr_complete: the WRs built so far (qp_ex.c) */
	struct soft_wr_stage *stage;
	uint32_t stage_len, stage_cap;
	int stage_err;
	struct soft_nic *nic;
	pthread_mutex_t lock; /* state, attributes, send queue */
	pthread_mutex_t rq_lock;
	struct ibv_qp_attr attr; /* the attributes set so far */
	struct ibv_qp_cap cap;
	bool sq_sig_all;
	/*
	 * Send queue ring: [head, tail); [head, next) are in flight.  Indices
	 * run freely and wrap; size is the capacity the user asked for, the
	 * ring has mask + 1 (a power of two) slots.  [head, started) were
	 * transmitted at least once: an RNR NAK or a timeout rewinds next to
	 * head, but those WRs are still in progress, and SQD drains them.
	 */
	struct soft_swqe *sq;
	uint32_t sq_size, sq_mask, sq_head, sq_next, sq_tail, sq_started;
	uint32_t next_psn;
	/* receive queue ring */
	struct soft_rwqe *rq;
	uint32_t rq_size, rq_mask, rq_head, rq_tail;
	/* responder */
	uint32_t resp_psn;
	uint64_t last_atomic_orig;
	uint32_t last_atomic_psn;
	uint64_t last_post_ns; /* when the application last posted a send here (post_send, under lock) */
	bool has_atomic;
	bool queued;		  /* on the NIC's run queue */
	struct soft_qp *run_next; /* run queue link */
	atomic_ulong ud_drops;
	bool sqd_notify;
	bool last_wqe_told;	 /* on an SRQ: LAST_WQE_REACHED raised since it last entered ERR */
	uint32_t async_reported; /* its async events handed to the application (async.c) */
};

#include "hw/soft/auth.h"

struct soft_conn;
struct soft_delayed;

struct soft_nic {
	int refs;		   /* under soft_nic_lock */
	pthread_rwlock_t obj_lock; /* key and QP tables; held by the engine while it executes */
	struct soft_key_slot keys[SOFT_MAX_KEYS];
	struct soft_qp *qps[SOFT_MAX_QP];
	uint16_t qp_gen[SOFT_MAX_QP];
	atomic_int n_pd, n_mr, n_mw, n_cq, n_ah, n_srq;
	int n_qp;

	pthread_t thread;
	int wake_fd;
	atomic_bool stop;
	atomic_bool sleeping;	/* the engine thread waits in ppoll: a doorbell writes wake_fd */
	atomic_bool deep_sleep; /* ... and no application thread drives rounds (engine.c) */
	uint64_t spin_ns;	/* how long the engine busy-polls before it sleeps */
	/*
	 * Engine rounds (engine.c) run one at a time, on the engine thread or on
	 * an application thread that posts to or polls this NIC while it talks
	 * over the wire: round_owner is the try-acquire flag, and everything
	 * marked "round owner's" below belongs to whoever holds it.
	 */
	_Alignas(64) atomic_int round_owner;
	atomic_ulong rounds;	    /* rounds completed, by anyone */
	atomic_ullong app_round_ns; /* when an application thread last ran one (0: not lately) */
	atomic_ullong app_read_ns;  /* ... and last read the wire in one (a poller: it takes the packets) */
	atomic_ullong app_read_prev_ns; /* ... and the read before that: a poller reads again and again */
	atomic_ullong app_busy_ns;     /* an application thread posted or polled over the wire (1 ms steps) */
	atomic_int n_conns;	       /* wire connections: application threads drive rounds only if any */
	bool timer_waiting;	       /* round owner's: a QP waits on a retry or RNR timer */
	uint64_t next_tick, next_wire; /* round owner's: next timer scan, next listener poll */
	atomic_bool runq_nonempty;     /* runq_head != NULL, readable without runq_lock */
	_Alignas(64) pthread_mutex_t runq_lock;
	struct soft_qp *runq_head, *runq_tail;
	atomic_int timers; /* QPs waiting on a retry or RNR timer */

	union ibv_gid gid;	/* GID index 0 */
	union ibv_gid wire_gid; /* GID index 1: this port again, through its own wire (wire.c) */
	struct sockaddr_in addr;
	int listen_fd;
	int epoll_fd;		      /* the listener and every connection */
	uint64_t accept_resume_ns;    /* out of fds: accepting paused until then (0: not paused) */
	uint64_t next_deadline_check; /* handshake deadlines are checked this often */
	struct soft_conn *conns;      /* round owner's */
	uint64_t next_conn_id;
	struct soft_delayed *delay_head, *delay_tail; /* delay_us fault: held packets, round owner's */
	struct soft_faults faults;
	atomic_ulong ud_drops, fault_drops, fault_corrupts, fault_errors;
	__be64 node_guid;	    /* from the host's identity and the address (device.c) */
	atomic_ulong foreign_drops; /* RC requests not from the QP's connected remote */
	atomic_ulong auth_failures; /* connections that did not prove the key */
	struct soft_auth_key auth;  /* the wire's key (auth.h): every connection proves it first */
	atomic_ulong wire_rejects;  /* connections closed for a bad or oversized packet, or over the cap */
	atomic_ulong stale_drops;   /* large packets on a trusted connection for a QP gone or moved on */
	/*
	 * Payload bytes this NIC delivered (into a receive or WRITE target, or a
	 * READ's local buffers), and the bytes its CPU copied to move packets:
	 * into and out of sockets, rings and staging buffers, into their target.
	 */
	atomic_ullong wire_payload_bytes, wire_copied_bytes;
	atomic_ulong shm_refused; /* shared-memory offers refused or failed: the connection stayed on TCP */
	atomic_ulong shm_quarantined; /* connections given up because the peer broke its ring */
	atomic_int shm_conns;	      /* connections on the shared-memory rings */
	bool shm_allowed;	      /* RDMATOOL_SOFT_SHM: local peers may move onto shared memory */
	uint8_t shm_probe[16]; /* random: a peer that reads them here can read our memory (shm_link.c) */
};

/* Adds n bytes to a NIC counter (relaxed: statistics). */
static inline void soft_count(atomic_ullong *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/* A pause for busy-wait loops: lets the sibling hyperthread run. */
static inline void soft_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/*
 * Locks m, spinning a little first.  The engine and the application hold
 * QP and CQ locks for short stretches; sleeping in the kernel on such a
 * lock costs both sides a system call and a context switch (the unlocker
 * must wake the sleeper), far more than the wait itself.
 */
static inline void soft_lock(pthread_mutex_t *m)
{
	for (int i = 0; i < 1000; i++) {
		if (!pthread_mutex_trylock(m))
			return;
		/* The holder may share this CPU with us: let it run now and then. */
		if (i % 100 == 99)
			sched_yield();
		else
			soft_cpu_relax();
	}
	pthread_mutex_lock(m);
}

/* One wait in a try-again loop: a pause, and every 64th time the CPU for another thread. */
static inline void soft_backoff(unsigned attempt)
{
	if (attempt % 64)
		soft_cpu_relax();
	else
		sched_yield();
}

/*
 * Locks m while the caller holds another lock of the same kind (the engine
 * holds the requester QP and takes the target QP): it never blocks, it
 * retries, so no order between QP locks is ever needed and two such
 * lockers can never deadlock.
 */
static inline void soft_lock_nested(pthread_mutex_t *m)
{
	for (unsigned i = 1; pthread_mutex_trylock(m); i++)
		soft_backoff(i);
}

/*
 * From the libibverbs object a verbs call hands us to the soft object that
 * embeds it (rdma-core's providers/rxe/rxe.h does the same with to_rqp()...).
 */
#define SOFT_CONTAINER_OF(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))
#define SOFT_DEFINE_TO(name, ibv_type)                                                                       \
	static inline struct soft_##name *to_soft_##name(struct ibv_type *ibv)                               \
	{                                                                                                    \
		return SOFT_CONTAINER_OF(ibv, struct soft_##name, ibv);                                      \
	}
SOFT_DEFINE_TO(pd, ibv_pd)
SOFT_DEFINE_TO(mr, ibv_mr)
SOFT_DEFINE_TO(dm, ibv_dm)
SOFT_DEFINE_TO(mw, ibv_mw)
SOFT_DEFINE_TO(channel, ibv_comp_channel)
SOFT_DEFINE_TO(cq, ibv_cq)
SOFT_DEFINE_TO(ah, ibv_ah)
SOFT_DEFINE_TO(qp, ibv_qp)
#undef SOFT_DEFINE_TO

static inline struct soft_srq *to_soft_srq(struct ibv_srq *ibv)
{
	return SOFT_CONTAINER_OF(ibv, struct soft_srq, ibv);
}

static inline struct soft_context *to_soft_context(struct ibv_context *ibv)
{
	return SOFT_CONTAINER_OF(ibv, struct soft_context, vctx.context);
}

/* The host address of the MR's byte at iova (an address in the MR's own space). */
static inline uint8_t *soft_mr_ptr(const struct soft_mr *mr, uint64_t iova)
{
	return (uint8_t *)mr->ibv.addr + (iova - mr->iova);
}

/* Unlocks what soft_lock() or soft_lock_nested() locked. */
static inline void soft_unlock(pthread_mutex_t *m)
{
	pthread_mutex_unlock(m);
}

/* device.c */
struct soft_nic *soft_nic_of(struct ibv_context *ctx);
uint64_t soft_now_ns(void);
/*
 * async.c: asynchronous events.  Queued per context, a byte in a pipe per
 * event so async_fd polls readable; as with libibverbs, destroying a QP, SRQ
 * or CQ drops its events not yet read and waits until those read are acked
 * (soft_async_forget), so no event ever names a freed object.
 */
void soft_async_event(struct ibv_context *ctx, enum ibv_event_type type, void *obj);
int soft_get_async_event(struct ibv_context *ctx, struct ibv_async_event *event);
void soft_ack_async_event(struct ibv_async_event *event);
void soft_async_forget(struct ibv_context *ctx, void *obj, const uint32_t *reported, pthread_mutex_t *mutex,
		       pthread_cond_t *cond, const uint32_t *completed);
void soft_async_free(struct soft_context *sctx);
bool soft_gid_is_local(const struct soft_nic *nic, const union ibv_gid *gid);
/* The port's GID table: index 0 (delivered inside the NIC) and 1 (through the wire to itself). */
#define SOFT_GID_TBL_LEN 2
const union ibv_gid *soft_gid_at(const struct soft_nic *nic, unsigned index);
/* Whether fd is (a dup of) a soft context's cmd_fd: a memfd of this name. */
#define SOFT_CMD_FD_NAME "rdmatool-soft0-cmd"
bool soft_is_cmd_fd(int fd);
void soft_config_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* mr.c */
struct soft_mr *soft_lookup_lkey(struct soft_nic *nic, uint32_t lkey);
enum ibv_wc_status soft_check_rkey(struct soft_nic *nic, struct soft_qp *qp, uint32_t rkey, uint64_t addr,
				   uint64_t len, int access, void **ptr);
enum ibv_wc_status soft_exec_bind(struct soft_qp *qp, struct soft_mw *mw, uint32_t new_rkey,
				  const struct ibv_mw_bind_info *info);
enum ibv_wc_status soft_invalidate(struct soft_nic *nic, uint32_t rkey, struct soft_qp *qp, bool remote);
struct ibv_pd *soft_alloc_pd(struct ibv_context *ctx);
struct ibv_pd *soft_alloc_parent_domain(struct ibv_context *ctx, struct ibv_parent_domain_init_attr *attr);
int soft_dealloc_pd(struct ibv_pd *pd);
struct ibv_mr *soft_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access);
struct ibv_mr *soft_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, int access);
int soft_dereg_mr(struct ibv_mr *mr);
int soft_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr, size_t length, int access);
struct ibv_mw *soft_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int soft_dealloc_mw(struct ibv_mw *mw);
int soft_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind);

/* cq.c */
struct ibv_comp_channel *soft_create_comp_channel(struct ibv_context *ctx);
int soft_destroy_comp_channel(struct ibv_comp_channel *channel);
int soft_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context);
void soft_ack_cq_events(struct ibv_cq *cq, unsigned int nevents);
struct ibv_cq *soft_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
			      struct ibv_comp_channel *channel, int comp_vector);
int soft_destroy_cq(struct ibv_cq *cq);
int soft_resize_cq(struct ibv_cq *cq, int cqe);
/* Removes QP qpn's completions, keeping the order of the others. */
void soft_cq_clean(struct ibv_cq *cq, uint32_t qpn);
int soft_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
int soft_req_notify_cq(struct ibv_cq *cq, int solicited_only);
void soft_cq_push(struct ibv_cq *cq, const struct ibv_wc *wc, bool solicited);
/* cq_ex.c: ibv_create_cq_ex and the extended-poll API (ibv_start_poll ...) */
struct ibv_cq_ex *soft_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *attr);

/* qp_ex.c: ibv_create_qp_ex and the ibv_wr_* API */
struct ibv_qp *soft_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr);
void soft_qp_ex_init(struct soft_qp *qp);
void soft_qp_ex_free(struct soft_qp *qp);

/* qp.c */
struct ibv_qp *soft_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *init);
int soft_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
int soft_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask, struct ibv_qp_init_attr *init);
int soft_destroy_qp(struct ibv_qp *qp);
/* In SQD, with WRs started before it still outstanding (sq_draining); qp->lock held. */
bool soft_sq_draining(const struct soft_qp *qp);
bool soft_modify_is_ok(enum ibv_qp_state cur, enum ibv_qp_state next, enum ibv_qp_type type, int mask);
/* A failed work request: UD and UC send errors stop only the send queue (SQE), the rest go to ERR. */
void soft_qp_error(struct soft_qp *qp);
/* ERR and flush, whatever the QP type (receive-queue errors). */
void soft_qp_error_all(struct soft_qp *qp);
void soft_qp_flush_locked(struct soft_qp *qp);
struct soft_qp *soft_lookup_qp(struct soft_nic *nic, uint32_t qpn);
struct ibv_ah *soft_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int soft_destroy_ah(struct ibv_ah *ah);

/* dm.c: device memory */
struct ibv_dm *soft_alloc_dm(struct ibv_context *ctx, struct ibv_alloc_dm_attr *attr);
int soft_free_dm(struct ibv_dm *dm);
int soft_memcpy_to_dm(struct ibv_dm *dm, uint64_t off, const void *host, size_t len);
int soft_memcpy_from_dm(void *host, struct ibv_dm *dm, uint64_t off, size_t len);
struct ibv_mr *soft_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm, uint64_t off, size_t len,
			      unsigned int access);

/* srq.c: shared receive queues */
struct ibv_srq *soft_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *init);
struct ibv_srq *soft_create_srq_ex(struct ibv_context *ctx, struct ibv_srq_init_attr_ex *init);
int soft_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int attr_mask);
int soft_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int soft_destroy_srq(struct ibv_srq *srq);
int soft_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
/* The responder takes the oldest WQE (false: none); may raise SRQ_LIMIT_REACHED. */
bool soft_srq_take(struct soft_srq *srq, struct soft_rwqe *out);
bool soft_srq_empty(struct soft_srq *srq);

/* post.c */
int soft_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
int soft_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
void soft_complete_send(struct soft_qp *qp, struct soft_swqe *w, enum ibv_wc_status status,
			uint32_t byte_len);
void soft_ring_doorbell(struct soft_qp *qp);

/*
 * A run of payload bytes: in this NIC's memory (a requester's SGE, a
 * responder's MR), a wire's receive buffer or a held copy.
 */
struct soft_seg {
	const uint8_t *ptr;
	uint32_t len;
	int32_t pid; /* 0: ptr is in this process; else in process pid's memory (the shared-memory wire) */
};

/* A packet's type; CTL packets belong to a wire connection and never enter the NIC (wire.c). */
enum { SOFT_PKT_REQ = 1, SOFT_PKT_RSP = 2, SOFT_PKT_CTL = 3 };

enum soft_resp_kind {
	SOFT_RESP_NONE, /* dropped: no answer at all */
	SOFT_RESP_ACK,
	SOFT_RESP_RNR,
	SOFT_RESP_NAK,
};

/*
 * The packet, the soft NIC's one type for a request and its response, as
 * rxe has its rxe_pkt_info: the requester builds one, the transmit point
 * (xmit.c) sends it, the receive entry (recv.c) routes it to the responder
 * (resp.c) or the completer (soft_handle_resp), and the responder's answer is a packet
 * too.  Its first SOFT_PKT_HDR_LEN bytes are the header every wire carries
 * (little-endian on the TCP wire, wire.c); the payload is the segments.
 */
struct soft_pkt {
	uint32_t magic;	    /* SOFT_WIRE_MAGIC on a wire */
	uint32_t payload;   /* bytes that follow the header on a wire */
	uint8_t type;	    /* SOFT_PKT_REQ or SOFT_PKT_RSP */
	uint8_t opcode;	    /* enum ibv_wr_opcode (a response: its request's) */
	uint8_t qp_type;    /* enum ibv_qp_type: RC, UC or UD */
	uint8_t solicited;  /* a request: IBV_SEND_SOLICITED */
	uint8_t kind;	    /* a response: enum soft_resp_kind */
	uint8_t status;	    /* a NAK: the requester's enum ibv_wc_status */
	uint8_t rnr_timer;  /* an RNR NAK: the responder's min_rnr_timer */
	uint8_t talks_back; /* an ACK: the responder QP posts sends too, its next one may carry this ACK */
	uint32_t src_qpn, dst_qpn, psn, qkey;
	uint32_t rkey, imm_data, invalidate_rkey;
	uint32_t length; /* a request: the message length; a response: read_len */
	uint64_t raddr;
	union {
		uint64_t compare_add; /* a request */
		uint64_t atomic_orig; /* an atomic's response: the value found */
	};
	uint64_t swap;
	union ibv_gid sgid, dgid;
	/* Not on any wire. */
	uint64_t conn_id; /* came in on this wire connection, and its answer goes back on it (0: none) */
	bool stable; /* the payload stays where seg[] says until the request completes: a peer may pull it */
	int nseg;
	union {
		struct soft_seg seg[SOFT_MAX_SGE]; /* a request's payload */
		struct {			   /* a READ response's: seg[0] */
			const uint8_t *read_data;
			uint32_t read_len;
			int32_t read_pid;
		};
	};
};

#define SOFT_PKT_HDR_LEN offsetof(struct soft_pkt, conn_id)
_Static_assert(SOFT_PKT_HDR_LEN == 104, "the wire header's size and layout are fixed");

/* resp.c: the responder; runs on the engine with obj_lock held for reading. */
void soft_respond(struct soft_nic *nic, struct soft_qp *requester, const struct soft_pkt *req,
		  struct soft_pkt *resp);

/* engine.c */
int soft_engine_start(struct soft_nic *nic);
void soft_engine_stop(struct soft_nic *nic);
void soft_engine_wake(struct soft_nic *nic);
/*
 * An application thread runs one engine round itself, if the NIC talks
 * over the wire and nobody else runs one now: a post to a remote peer
 * leaves at once (poll_wire false: only the send queues run), an empty
 * poll receives what arrived (poll_wire true).  Returns whether it did work.
 */
bool soft_app_round(struct soft_nic *nic, bool poll_wire);
/*
 * Runs the work posted so far (the send queues waiting on the run queue)
 * on the calling thread: a control call whose answer depends on the
 * completions already due (ibv_resize_cq) sees them, as on a NIC that
 * executes a post within microseconds.
 */
void soft_run_queued(struct soft_nic *nic);
/* An application thread is about to block on a completion channel: the engine takes over. */
void soft_apps_leave(struct soft_nic *nic);
/* Whether the napping engine would wake for a packet now: no application thread polls the wire in a loop. */
bool soft_engine_watches_wire(struct soft_nic *nic);

/*
 * xmit.c: the one transmit point.  Every packet this NIC sends, a request
 * or a response, leaves through soft_xmit: the faults of
 * RDMATOOL_SOFT_FAULTS (drop, corrupt and error on requests, the delay line
 * on every packet), then the path to its destination: this NIC itself
 * (straight into soft_recv) or the TCP wire.  held is the QP the caller
 * has locked (a requester running its send queue), or NULL.  Returns 0, or
 * ECONNREFUSED when the destination cannot be reached at all.  Round owner
 * only, obj_lock held for reading.
 */
int soft_xmit(struct soft_nic *nic, struct soft_qp *held, struct soft_pkt *pkt);
/* The path alone, faults past: what the delay line calls when a held packet falls due. */
int soft_xmit_now(struct soft_nic *nic, struct soft_qp *held, struct soft_pkt *pkt);
/*
 * recv.c: the one receive entry.  Every packet that reaches this NIC, from
 * itself or from a wire, enters through soft_recv: a request goes to the
 * responder and its answer back through soft_xmit, a response to the
 * completer of its QP.  A packet from a wire (conn_id set) is checked first
 * and dropped when malformed.  held as for soft_xmit.
 */
void soft_recv(struct soft_nic *nic, struct soft_qp *held, const struct soft_pkt *pkt);

/* req.c: the requester; qp->lock held. */
/* Runs the send queue within its budget; returns whether it stopped on the budget with work left. */
bool soft_qp_progress(struct soft_qp *qp, uint64_t now);
/* Whether the send queue holds work a round or a timer must come back for. */
bool soft_qp_waits(const struct soft_qp *qp);

/* comp.c: the completer; qp->lock held (soft_peer_lost takes each QP's itself). */
void soft_handle_resp(struct soft_qp *qp, const struct soft_pkt *resp);
/* Completes the head WR with status and moves the QP to its error state. */
void soft_fail_head(struct soft_qp *qp, enum ibv_wc_status status);
/* Resolves the local SGEs of w into segments; status on a bad lkey or length. */
enum ibv_wc_status soft_local_segs(struct soft_qp *qp, struct soft_swqe *w, bool writable,
				   struct soft_seg *seg, uint64_t *total);
uint32_t soft_payload_len(const struct soft_swqe *w);
/* Local ACK timeout: 4.096 us * 2^timeout; 0 means wait forever. */
uint64_t soft_timeout_ns(const struct soft_qp *qp);
uint64_t soft_rnr_ns(uint8_t timer);
void soft_peer_lost(struct soft_nic *nic, const union ibv_gid *peer);

/* wire.c: round owner only, except listen and close */
int soft_wire_listen(struct soft_nic *nic, const char *spec);
void soft_wire_close(struct soft_nic *nic);
/* Sends pkt over the TCP wire: a response on the connection its request came in on, else to pkt->dgid. */
int soft_wire_send(struct soft_nic *nic, const struct soft_pkt *pkt);
/*
 * Whether bytes to peer have not reached its host yet: queued here, or
 * sent but not acknowledged by its TCP (the wire is reliable; only the
 * soft NIC's own fault injection loses packets).
 */
bool soft_wire_in_flight(struct soft_nic *nic, const union ibv_gid *peer);
/*
 * The wire's sockets are in one epoll set: this fd is readable when any of
 * them has something (a packet, a connection, a finished handshake, room
 * to send), so an idle connection costs nothing per round.
 */
int soft_wire_fd(const struct soft_nic *nic);
/* Serves what the epoll set reports ready, without waiting; returns whether there was anything. */
bool soft_wire_service(struct soft_nic *nic);
/*
 * Application rounds: with a few connections, reads each once without
 * asking epoll first (one system call instead of two); with more, the same
 * as soft_wire_service.
 */
bool soft_wire_read_now(struct soft_nic *nic);
void soft_wire_flush(struct soft_nic *nic, bool all);
bool soft_wire_holding(const struct soft_nic *nic);
/*
 * The engine is about to sleep (true) or woke (false): peers on the shared
 * rings then kick it through the socket when they write.  Returns false when
 * a ring already holds packets (do not sleep).  Round owner only.
 */
bool soft_wire_sleep(struct soft_nic *nic, bool sleeping);
/* A handshake or a paused listener is waiting for a deadline: the engine must not sleep unbounded. */
bool soft_wire_has_deadlines(const struct soft_nic *nic);

/* delay.c: the delay_us fault, a delay line inside the transmit point; round owner only. */
bool soft_delay_pkt(struct soft_nic *nic, const struct soft_pkt *pkt);
bool soft_delay_run(struct soft_nic *nic, uint64_t now);
uint64_t soft_delay_next_ns(const struct soft_nic *nic);
void soft_delay_clear(struct soft_nic *nic);

/* faults.c */
int soft_faults_parse(const char *spec, struct soft_faults *out, char *err, size_t errlen);
bool soft_fault_hit(struct soft_faults *f, double p);

/* dma.c: the NIC's accesses to registered memory (see there). */
void soft_dma_copy(void *dst, const void *src, size_t len);
/*
 * Copies len bytes from src (in process pid's memory when pid is not 0,
 * pulled with process_vm_readv) to dst, counting them on nic; false when the
 * peer's memory could not be read (dst is then zeroed).
 */
bool soft_dma_pull(struct soft_nic *nic, void *dst, const void *src, int32_t pid, size_t len);
uint64_t soft_dma_fetch_add(uint64_t *target, uint64_t add);
/* Returns the value found; it was replaced by swap if it equalled compare. */
uint64_t soft_dma_cmp_swap(uint64_t *target, uint64_t compare, uint64_t swap);
/* RDMA ATOMIC WRITE: 8 naturally aligned bytes in one store. */
void soft_dma_store64(void *target, uint64_t value);
struct msghdr;
ssize_t soft_dma_sendmsg(int fd, const struct msghdr *msg, int flags);
struct soft_shm;
/* soft_shm_write of registered memory (shm.h). */
ssize_t soft_dma_shm_write(struct soft_shm *shm, const void *buf, size_t len);

#endif
