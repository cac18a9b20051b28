/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The soft CM's id and its states: kept by id.c, shared by cm.c (the API), conn.c (the CM thread), ep.c. */
#ifndef RDMATOOL_HW_SOFT_CM_ID_H
#define RDMATOOL_HW_SOFT_CM_ID_H

#include "hw/soft/cm/cm.h"

#define SOFT_CM_CONNECT_WAIT_NS 10000000000ull /* REP or REJ within this, else UNREACHABLE */
#define SOFT_CM_RTU_WAIT_NS	5000000000ull  /* RTU within this, else CONNECT_ERROR */
/*
 * A refused connection is tried again for this long before it is REJECTED:
 * a program that re-creates its listener (perftest -R does, between its two
 * connections) is not reported as absent because the CM answered faster
 * than a NIC's address and route resolution would have let the peer ask.
 */
#define SOFT_CM_REFUSED_RETRY_NS   300000000ull
#define SOFT_CM_REFUSED_SPACING_NS 5000000ull
#define SOFT_CM_DREP_WAIT_NS	   1000000000ull /* DREP within this, else DISCONNECTED anyway */

enum soft_cm_state {
	SOFT_CM_IDLE,
	SOFT_CM_ADDR_BOUND,
	SOFT_CM_ADDR_RESOLVED,
	SOFT_CM_ROUTE_RESOLVED,
	SOFT_CM_LISTENING,
	SOFT_CM_CONNECTING,   /* active: TCP connect in progress */
	SOFT_CM_REQ_SENT,     /* active: waiting for REP or REJ */
	SOFT_CM_REQ_WAIT,     /* passive child: connection accepted, REQ not yet in (not reported) */
	SOFT_CM_REQ_RECEIVED, /* passive child: CONNECT_REQUEST reported, waiting for accept/reject */
	SOFT_CM_ACCEPTED,     /* passive: REP sent, waiting for RTU */
	SOFT_CM_REP_RECEIVED, /* active with an external QP: CONNECT_RESPONSE reported, waiting for
				 rdma_establish */
	SOFT_CM_ESTABLISHED,
	SOFT_CM_DISCONNECTING, /* DREQ sent, waiting for DREP */
	SOFT_CM_DISCONNECTED,
};

struct soft_cm_id {
	struct rdma_cm_id id;
	uint64_t serial; /* names the id in the CM thread's epoll set */
	enum soft_cm_state state;
	bool sync;   /* created without a channel: id.channel is its own, operations wait */
	int fd;	     /* listening socket, or the connection to the peer */
	int port_fd; /* rdma_bind_addr's port, reserved by a bound socket until listen takes it or the id goes
		      */
	uint8_t in[SOFT_CM_HDR_LEN + SOFT_CM_MAX_PRIVATE];
	size_t in_len;
	uint64_t deadline_ns;		      /* of the state's wait, 0: none */
	uint64_t refused_until_ns, redial_ns; /* CONNECTING: a refused attempt is retried until then */
	struct soft_cm_msg mine, peer;	      /* REQ or REP sent, and the peer's */
	uint8_t ack_timeout;		      /* RDMA_OPTION_ID_ACK_TIMEOUT, 0: the default */
	struct soft_cm_id *listener;	      /* passive child: the listening id (NULL once that is gone) */
	bool own_cqs;			      /* rdma_create_qp made the CQs and channels */
	bool has_ep_attr;		      /* rdma_create_ep on a passive id: rdma_get_request makes QPs */
	struct ibv_qp_init_attr ep_attr;
	struct soft_cm_id *next;
};

static inline struct soft_cm_id *to_soft_cm_id(struct rdma_cm_id *id)
{
	return (struct soft_cm_id *)((char *)id - offsetof(struct soft_cm_id, id));
}

/* conn.c; all with soft_cm_lock held. */
int soft_cm_watch(struct soft_cm_id *id, uint32_t events);
void soft_cm_close(struct soft_cm_id *id);
int soft_cm_send(struct soft_cm_id *id, const struct soft_cm_msg *m);
/* CONNECTING: starts a TCP connect to the id's destination (0), or says why it cannot (an errno). */
int soft_cm_dial(struct soft_cm_id *id);
/* Moves id's QP to RTR and RTS from the peer's REQ or REP; 0 or an errno. */
int soft_cm_qp_connect(struct soft_cm_id *id);
/* Registers the fork handler (once): every entry point that creates state calls it first. */
void soft_cm_init(void);
/* id.c: the ids of the process, all with soft_cm_lock held (but soft_cm_lock_live, which takes it). */
extern struct soft_cm_id *soft_cm_ids;
/* A forked child's view: the parent's ids, context and PD are not its own. */
void soft_cm_forget_ids(void);
struct soft_cm_id *soft_cm_find(uint64_t serial);
struct soft_cm_id *soft_cm_new_id(struct rdma_event_channel *channel, void *context, enum rdma_port_space ps);
void soft_cm_unlink(struct soft_cm_id *id);
/* A destroyed id, kept allocated a while (a stale pointer never names another live id); unlinked first. */
void soft_cm_retire(struct soft_cm_id *id);
/*
 * The id cm names if it is live (created and not destroyed), else NULL; only
 * pointers are compared, a destroyed id is never read.  Lock held.
 */
struct soft_cm_id *soft_cm_live(const struct rdma_cm_id *cm);
/* Every entry point taking an id: locks the CM if cm is live, else fails with EINVAL (unlocked). */
bool soft_cm_lock_live(const struct rdma_cm_id *cm);
/* The soft device's context every id is bound to, opened on first use (NULL: none, errno says why). */
struct ibv_context *soft_cm_context(void);
/* The PD for a QP made without one: the process's default on cm's context (NULL: cm has none yet). */
struct ibv_pd *soft_cm_default_pd(struct rdma_cm_id *cm);

#endif
