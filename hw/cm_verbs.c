/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The connection manager of a real NIC: librdmacm itself. */
#include "hw/cm.h"

const struct hw_cm_ops hw_cm_verbs = {
    .create_event_channel = rdma_create_event_channel,
    .destroy_event_channel = rdma_destroy_event_channel,
    .create_id = rdma_create_id,
    .destroy_id = rdma_destroy_id,
    .bind_addr = rdma_bind_addr,
    .resolve_addr = rdma_resolve_addr,
    .resolve_route = rdma_resolve_route,
    .create_qp = rdma_create_qp,
    .destroy_qp = rdma_destroy_qp,
    .connect = rdma_connect,
    .listen = rdma_listen,
    .accept = rdma_accept,
    .reject = rdma_reject,
    .disconnect = rdma_disconnect,
    .get_cm_event = rdma_get_cm_event,
    .ack_cm_event = rdma_ack_cm_event,
    .migrate_id = rdma_migrate_id,
    .set_option = rdma_set_option,
};
