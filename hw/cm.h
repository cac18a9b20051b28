/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * hw: the connection manager next to the verbs ops, with librdmacm's own
 * types (struct rdma_cm_id, struct rdma_cm_event, struct
 * rdma_event_channel, enum rdma_cm_event_type), so code above it reads the
 * same for a real NIC and for the soft device.  Each entry has librdmacm's
 * signature and semantics: -1 with errno on failure, events on a channel
 * whose fd polls readable while one is queued.
 *
 * hw_cm_verbs forwards to librdmacm (hw/cm_verbs.c); hw_cm_soft is the soft
 * device's CM (hw/soft/cm/), which speaks to other soft CMs over TCP at
 * the IP address and port a program listens on.
 */
#ifndef RDMATOOL_HW_CM_H
#define RDMATOOL_HW_CM_H

#include <rdma/rdma_cma.h>

struct hw_cm_ops {
	struct rdma_event_channel *(*create_event_channel)(void);
	void (*destroy_event_channel)(struct rdma_event_channel *channel);
	int (*create_id)(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
			 enum rdma_port_space ps);
	int (*destroy_id)(struct rdma_cm_id *id);
	int (*bind_addr)(struct rdma_cm_id *id, struct sockaddr *addr);
	int (*resolve_addr)(struct rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst,
			    int timeout_ms);
	int (*resolve_route)(struct rdma_cm_id *id, int timeout_ms);
	int (*create_qp)(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
	void (*destroy_qp)(struct rdma_cm_id *id);
	int (*connect)(struct rdma_cm_id *id, struct rdma_conn_param *param);
	int (*listen)(struct rdma_cm_id *id, int backlog);
	int (*accept)(struct rdma_cm_id *id, struct rdma_conn_param *param);
	int (*reject)(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len);
	int (*disconnect)(struct rdma_cm_id *id);
	int (*get_cm_event)(struct rdma_event_channel *channel, struct rdma_cm_event **event);
	int (*ack_cm_event)(struct rdma_cm_event *event);
	int (*migrate_id)(struct rdma_cm_id *id, struct rdma_event_channel *channel);
	int (*set_option)(struct rdma_cm_id *id, int level, int optname, void *optval, size_t optlen);
};

extern const struct hw_cm_ops hw_cm_verbs;
extern const struct hw_cm_ops hw_cm_soft;

#endif
