/* SPDX-License-Identifier: MIT */
/*
 * Minimal soft device entry: discovery, open/close and the queries, so that
 * `rdmatool devices` lists it.  The full NIC (PD/MR/MW/CQ/QP/AH and the
 * wire) lands with the soft-device issue.
 */
#include "soft.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct soft_context {
	struct ibv_context ibv;
};

static struct ibv_device soft_ibv_device = {
	.node_type = IBV_NODE_CA,
	.transport_type = IBV_TRANSPORT_IB,
	.name = SOFT_DEVICE_NAME,
	.dev_name = "soft_uverbs0",
};

static int soft_query_device(struct ibv_context *ctx, struct ibv_device_attr *attr)
{
	(void)ctx;
	memset(attr, 0, sizeof(*attr));
	strcpy(attr->fw_ver, "0.1");
	attr->node_guid = htobe64(0x02005eff00000001ULL);
	attr->sys_image_guid = attr->node_guid;
	attr->vendor_id = 0xffffff;
	attr->phys_port_cnt = 1;
	return 0;
}

static int soft_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr)
{
	(void)ctx;
	if (port != 1)
		return EINVAL;
	memset(attr, 0, sizeof(*attr));
	attr->state = IBV_PORT_ACTIVE;
	attr->phys_state = 5; /* LinkUp */
	attr->max_mtu = IBV_MTU_4096;
	attr->active_mtu = IBV_MTU_4096;
	attr->lid = 1;
	attr->sm_lid = 1;
	attr->gid_tbl_len = 1;
	attr->link_layer = IBV_LINK_LAYER_INFINIBAND;
	return 0;
}

static int soft_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid)
{
	(void)ctx;
	if (port != 1 || index != 0)
		return EINVAL;
	memset(gid, 0, sizeof(*gid));
	gid->raw[0] = 0xfe;
	gid->raw[1] = 0x80;
	return 0;
}

static int soft_close_device(struct ibv_context *ctx)
{
	free(ctx);
	return 0;
}

static const struct hw_ops soft_ops = {
	.query_device = soft_query_device,
	.query_port = soft_query_port,
	.query_gid = soft_query_gid,
	.close_device = soft_close_device,
};

static int soft_list_devices(struct hw_device *out, int max)
{
	if (max < 1)
		return 0;
	memset(out, 0, sizeof(*out));
	strcpy(out->name, SOFT_DEVICE_NAME);
	out->provider = &hw_soft_provider;
	out->ibv_device = &soft_ibv_device;
	return 1;
}

static struct ibv_context *soft_open_device(const struct hw_device *dev)
{
	struct soft_context *sctx = calloc(1, sizeof(*sctx));

	(void)dev;
	if (!sctx)
		return NULL;
	sctx->ibv.device = &soft_ibv_device;
	sctx->ibv.cmd_fd = -1;
	sctx->ibv.async_fd = -1;
	sctx->ibv.num_comp_vectors = 1;
	return &sctx->ibv;
}

static bool soft_owns_context(const struct ibv_context *ctx)
{
	return ctx && ctx->device == &soft_ibv_device;
}

const struct hw_provider hw_soft_provider = {
	.name = "soft",
	.ops = &soft_ops,
	.list_devices = soft_list_devices,
	.open_device = soft_open_device,
	.owns_context = soft_owns_context,
};
