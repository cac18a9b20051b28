/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * librdmacm's API for the soft device: each function, in librdmacm's own
 * version node (libibverbs.map), goes to the soft CM (hw/soft/cm/cm.h), so
 * rping, rdma_server/rdma_client, ucmatose and perftest -R run unmodified
 * under rdmatool exec.  Every id resolves to soft0; a real NIC's connection
 * manager is not reached through this library.  The helpers rdma_verbs.h
 * inlines (rdma_reg_msgs, rdma_post_send, rdma_get_send_comp ...) are
 * libibverbs calls on the id's objects and need nothing here.
 */
#include "hw/preload/preload.h"
#include "hw/soft/cm/cm.h"

#include <errno.h>
#include <rdma/rdma_verbs.h>

PRELOAD_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	return soft_cm_create_event_channel();
}

PRELOAD_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	soft_cm_destroy_event_channel(channel);
}

PRELOAD_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	return soft_cm_get_cm_event(channel, event);
}

PRELOAD_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	return soft_cm_ack_cm_event(event);
}

PRELOAD_EXPORT int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
				  enum rdma_port_space ps)
{
	return soft_cm_create_id(channel, id, context, ps);
}

PRELOAD_EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
	return soft_cm_destroy_id(id);
}

PRELOAD_EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	return soft_cm_bind_addr(id, addr);
}

PRELOAD_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst,
				     int timeout_ms)
{
	return soft_cm_resolve_addr(id, src, dst, timeout_ms);
}

PRELOAD_EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	return soft_cm_resolve_route(id, timeout_ms);
}

PRELOAD_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	return soft_cm_create_qp(id, pd, attr);
}

PRELOAD_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	return soft_cm_create_qp_ex(id, attr);
}

PRELOAD_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
	soft_cm_destroy_qp(id);
}

PRELOAD_EXPORT int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	return soft_cm_connect(id, param);
}

PRELOAD_EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	return soft_cm_listen(id, backlog);
}

PRELOAD_EXPORT int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	return soft_cm_accept(id, param);
}

PRELOAD_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	return soft_cm_reject(id, private_data, private_data_len);
}

PRELOAD_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	return soft_cm_reject(id, private_data, private_data_len);
}

PRELOAD_EXPORT int rdma_disconnect(struct rdma_cm_id *id)
{
	return soft_cm_disconnect(id);
}

PRELOAD_EXPORT int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	return soft_cm_migrate_id(id, channel);
}

PRELOAD_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr, int *qp_attr_mask)
{
	return soft_cm_init_qp_attr(id, qp_attr, qp_attr_mask);
}

PRELOAD_EXPORT int rdma_establish(struct rdma_cm_id *id)
{
	return soft_cm_establish(id);
}

PRELOAD_EXPORT int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	return soft_cm_get_request(listen, id);
}

PRELOAD_EXPORT int rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
				    struct rdma_addrinfo **res)
{
	return soft_cm_getaddrinfo(node, service, hints, res);
}

PRELOAD_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	soft_cm_freeaddrinfo(res);
}

PRELOAD_EXPORT int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd,
				  struct ibv_qp_init_attr *qp_init_attr)
{
	return soft_cm_create_ep(id, res, pd, qp_init_attr);
}

PRELOAD_EXPORT void rdma_destroy_ep(struct rdma_cm_id *id)
{
	soft_cm_destroy_ep(id);
}

PRELOAD_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	return soft_cm_get_devices(num_devices);
}

PRELOAD_EXPORT void rdma_free_devices(struct ibv_context **list)
{
	soft_cm_free_devices(list);
}

PRELOAD_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return id->route.addr.src_sin.sin_port;
}

PRELOAD_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return id->route.addr.dst_sin.sin_port;
}

PRELOAD_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval, size_t optlen)
{
	return soft_cm_set_option(id, level, optname, optval, optlen);
}

PRELOAD_EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	(void)id;
	(void)event;
	return 0;
}

PRELOAD_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id;
	(void)ece;
	errno = EOPNOTSUPP;
	return -1;
}

PRELOAD_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id;
	(void)ece;
	errno = EOPNOTSUPP;
	return -1;
}

/* The soft device has no multicast: the calls fail as on a NIC without it. */
PRELOAD_EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	(void)id;
	(void)addr;
	(void)context;
	errno = EOPNOTSUPP;
	return -1;
}

PRELOAD_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *attr,
					  void *context)
{
	(void)id;
	(void)attr;
	(void)context;
	errno = EOPNOTSUPP;
	return -1;
}

PRELOAD_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	(void)id;
	(void)addr;
	errno = EADDRNOTAVAIL;
	return -1;
}

PRELOAD_EXPORT int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	return soft_cm_create_srq(id, pd, attr);
}

PRELOAD_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	return soft_cm_create_srq_ex(id, attr);
}

PRELOAD_EXPORT void rdma_destroy_srq(struct rdma_cm_id *id)
{
	soft_cm_destroy_srq(id);
}

PRELOAD_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const names[] = {
	    [RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
	    [RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
	    [RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
	    [RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
	    [RDMA_CM_EVENT_CONNECT_REQUEST] = "RDMA_CM_EVENT_CONNECT_REQUEST",
	    [RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
	    [RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
	    [RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
	    [RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
	    [RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
	    [RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
	    [RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
	    [RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
	    [RDMA_CM_EVENT_MULTICAST_ERROR] = "RDMA_CM_EVENT_MULTICAST_ERROR",
	    [RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
	    [RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};

	if ((unsigned)event < sizeof(names) / sizeof(names[0]) && names[event])
		return names[event];
	return "UNKNOWN EVENT";
}
