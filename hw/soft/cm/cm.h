/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The soft device's connection manager (hw_cm_soft): librdmacm's API over
 * TCP between soft CMs.
 *
 * A listening id listens on the TCP address it was bound to (the IP and
 * "port space" port a program names, e.g. rping's 127.0.0.1:7174); an
 * active id connects there.  On that connection the two sides exchange
 * IB CM-like messages (msg.c): REQ (QPN, starting PSN, the QP's soft
 * GID, RDMA read depths, private data), REP, RTU, REJ, DREQ, DREP.  The CM
 * moves the QPs as librdmacm does: INIT at rdma_create_qp, RTR and RTS on
 * REP (active) and at rdma_accept (passive), ERR at rdma_disconnect.
 *
 * One thread per process serves every CM socket; ids, channels and their
 * events are under one lock (connection setup is rare).  A socket that
 * closes under an ESTABLISHED id (the peer died) gives DISCONNECTED; a
 * refused connection REJECTED (status 8, IB's "invalid service ID", as a
 * NIC answers a port nobody listens on); no answer within the timeout
 * UNREACHABLE.  A malformed message closes its connection and counts in
 * soft_cm_bad_messages().
 */
#ifndef RDMATOOL_HW_SOFT_CM_CM_H
#define RDMATOOL_HW_SOFT_CM_CM_H

#include "hw/cm.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define SOFT_CM_MAGIC		0x314d4353u /* "SCM1" */
#define SOFT_CM_MAX_PRIVATE	196	    /* IB CM's REP, the largest private data */
#define SOFT_CM_REJ_NO_LISTENER 8	    /* IB_CM_REJ_INVALID_SERVICE_ID */
#define SOFT_CM_REJ_CONSUMER	28	    /* IB_CM_REJ_CONSUMER_DEFINED */

enum soft_cm_msg_type {
	SOFT_CM_REQ = 1,
	SOFT_CM_REP,
	SOFT_CM_RTU,
	SOFT_CM_REJ,
	SOFT_CM_DREQ,
	SOFT_CM_DREP,
};

/* A message as both sides hold it; msg.c turns it into bytes and back. */
struct soft_cm_msg {
	uint8_t type; /* enum soft_cm_msg_type */
	uint8_t qp_type;
	uint8_t responder_resources, initiator_depth;
	uint8_t retry_count, rnr_retry_count;
	uint16_t status; /* REJ: the reason */
	uint32_t qpn, psn;
	uint8_t gid[16];
	uint8_t private_data_len;
	uint8_t private_data[SOFT_CM_MAX_PRIVATE];
};

/* On the wire: a fixed little-endian header, then private_data_len bytes. */
#define SOFT_CM_HDR_LEN 40

/* Writes m into out (at least SOFT_CM_HDR_LEN + SOFT_CM_MAX_PRIVATE bytes); returns the length. */
size_t soft_cm_msg_encode(const struct soft_cm_msg *m, uint8_t *out);
/*
 * Parses the message at the front of buf (len bytes read so far): returns
 * its length once it is all in, 0 while more is needed, -1 when it is
 * malformed (bad magic, unknown type, oversized private data).
 */
long soft_cm_msg_decode(const uint8_t *buf, size_t len, struct soft_cm_msg *m);

/* Malformed CM messages seen by this process (each closed its connection). */
unsigned long soft_cm_bad_messages(void);
void soft_cm_count_bad_message(void);

/* The librdmacm-named entry points of the soft CM (cm.c, event.c, ep.c, conn.c, msg.c). */
struct rdma_event_channel *soft_cm_create_event_channel(void);
void soft_cm_destroy_event_channel(struct rdma_event_channel *channel);
int soft_cm_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event);
int soft_cm_ack_cm_event(struct rdma_cm_event *event);
int soft_cm_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		      enum rdma_port_space ps);
int soft_cm_destroy_id(struct rdma_cm_id *id);
int soft_cm_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr);
int soft_cm_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst, int timeout_ms);
int soft_cm_resolve_route(struct rdma_cm_id *id, int timeout_ms);
int soft_cm_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
int soft_cm_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr);
void soft_cm_destroy_qp(struct rdma_cm_id *id);
/* rdma_create_srq: an SRQ on pd (NULL: the id's) that the id's QP then takes its receives from. */
int soft_cm_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_srq_init_attr *attr);
int soft_cm_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr);
void soft_cm_destroy_srq(struct rdma_cm_id *id);
int soft_cm_connect(struct rdma_cm_id *id, struct rdma_conn_param *param);
int soft_cm_listen(struct rdma_cm_id *id, int backlog);
int soft_cm_accept(struct rdma_cm_id *id, struct rdma_conn_param *param);
int soft_cm_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len);
int soft_cm_disconnect(struct rdma_cm_id *id);
int soft_cm_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel);
int soft_cm_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *attr, int *mask);
int soft_cm_establish(struct rdma_cm_id *id);
int soft_cm_set_option(struct rdma_cm_id *id, int level, int optname, void *optval, size_t optlen);
int soft_cm_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id);
int soft_cm_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
			struct rdma_addrinfo **res);
void soft_cm_freeaddrinfo(struct rdma_addrinfo *res);
int soft_cm_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd,
		      struct ibv_qp_init_attr *qp_init_attr);
void soft_cm_destroy_ep(struct rdma_cm_id *id);
struct ibv_context **soft_cm_get_devices(int *num_devices);
void soft_cm_free_devices(struct ibv_context **list);

/* Every id, channel and event of the process is under this lock. */
extern pthread_mutex_t soft_cm_lock;

/* event.c, for cm.c and conn.c: queue an event (the caller holds the CM lock) and wait for one. */
struct soft_cm_id;
void soft_cm_post(struct rdma_event_channel *channel, struct rdma_cm_id *id, struct rdma_cm_id *listen,
		  enum rdma_cm_event_type type, int status, const struct soft_cm_msg *m);
/*
 * Drops one queued (not yet retrieved) event of id, or with id as its listener, from channel, as
 * the kernel drops a destroyed id's events; *child is the new id of a dropped CONNECT_REQUEST for
 * listener id (never reported: the caller rejects and frees it).  False: none left.  Lock held.
 */
bool soft_cm_drop_event(struct rdma_event_channel *channel, struct rdma_cm_id *id, struct rdma_cm_id **child);
/* A synchronous id (created without a channel) waits for its operation's event: 0, or -1 and errno. */
int soft_cm_wait(struct rdma_cm_id *id, enum rdma_cm_event_type expected);

#endif
