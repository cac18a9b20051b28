/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The verbs provider: every op forwards to libibverbs.  Several libibverbs
 * entry points are macros or static inlines (ibv_reg_mr, ibv_query_port,
 * ibv_post_send ...), hence the small wrappers that give them an address.
 */
#include "hw/hw.h"
#include "hw/cm.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

static int verbs_query_device(struct ibv_context *ctx, struct ibv_device_attr *attr)
{
	return ibv_query_device(ctx, attr);
}

static int verbs_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr)
{
	return ibv_query_port(ctx, port, attr);
}

static int verbs_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid)
{
	return ibv_query_gid(ctx, port, index, gid);
}

static struct ibv_mr *verbs_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
					int access)
{
	return ibv_reg_mr_iova(pd, addr, length, iova, access);
}

static struct ibv_mr *verbs_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return ibv_reg_mr(pd, addr, length, access);
}

static struct ibv_mw *verbs_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	return ibv_alloc_mw(pd, type);
}

static int verbs_dealloc_mw(struct ibv_mw *mw)
{
	return ibv_dealloc_mw(mw);
}

static int verbs_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
{
	return ibv_bind_mw(qp, mw, bind);
}

static int verbs_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	return ibv_poll_cq(cq, num_entries, wc);
}

static int verbs_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return ibv_req_notify_cq(cq, solicited_only);
}

static int verbs_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	return ibv_post_send(qp, wr, bad_wr);
}

static int verbs_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	return ibv_post_recv(qp, wr, bad_wr);
}

static int verbs_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	return ibv_post_srq_recv(srq, wr, bad_wr);
}

static const struct hw_ops verbs_ops = {
    .query_device = verbs_query_device,
    .query_port = verbs_query_port,
    .query_gid = verbs_query_gid,
    .close_device = ibv_close_device,
    .alloc_pd = ibv_alloc_pd,
    .dealloc_pd = ibv_dealloc_pd,
    .reg_mr = verbs_reg_mr,
    .reg_mr_iova = verbs_reg_mr_iova,
    .dereg_mr = ibv_dereg_mr,
    .rereg_mr = ibv_rereg_mr,
    .alloc_mw = verbs_alloc_mw,
    .dealloc_mw = verbs_dealloc_mw,
    .bind_mw = verbs_bind_mw,
    .create_comp_channel = ibv_create_comp_channel,
    .destroy_comp_channel = ibv_destroy_comp_channel,
    .get_cq_event = ibv_get_cq_event,
    .ack_cq_events = ibv_ack_cq_events,
    .create_cq = ibv_create_cq,
    .destroy_cq = ibv_destroy_cq,
    .resize_cq = ibv_resize_cq,
    .poll_cq = verbs_poll_cq,
    .req_notify_cq = verbs_req_notify_cq,
    .create_qp = ibv_create_qp,
    .modify_qp = ibv_modify_qp,
    .query_qp = ibv_query_qp,
    .destroy_qp = ibv_destroy_qp,
    .qp_to_qp_ex = ibv_qp_to_qp_ex,
    .post_send = verbs_post_send,
    .post_recv = verbs_post_recv,
    .create_ah = ibv_create_ah,
    .destroy_ah = ibv_destroy_ah,
    .create_srq = ibv_create_srq,
    .modify_srq = ibv_modify_srq,
    .query_srq = ibv_query_srq,
    .destroy_srq = ibv_destroy_srq,
    .post_srq_recv = verbs_post_srq_recv,
    .get_async_event = ibv_get_async_event,
    .ack_async_event = ibv_ack_async_event,
};

/*
 * ibv_get_device_list fails (ENOSYS) on a kernel without RDMA and returns an
 * empty list where the kernel has RDMA but no device: both are "no hardware".
 * The list stays allocated for the life of the process because hw_device
 * entries keep pointers into it; it is fetched once.
 */
static struct ibv_device **verbs_devices;
static int verbs_count;
static int verbs_errno;
static pthread_once_t verbs_discovered = PTHREAD_ONCE_INIT;

static void verbs_discover(void)
{
	errno = 0;
	verbs_devices = ibv_get_device_list(&verbs_count);
	if (!verbs_devices) {
		verbs_errno = errno ? errno : ENODEV;
		verbs_count = 0;
	}
}

static int verbs_list_devices(struct hw_device *out, int max)
{
	pthread_once(&verbs_discovered, verbs_discover);
	if (!verbs_devices)
		return -verbs_errno;
	int n = 0;

	for (int i = 0; i < verbs_count && n < max; i++, n++) {
		memset(&out[n], 0, sizeof(out[n]));
		strncpy(out[n].name, ibv_get_device_name(verbs_devices[i]), sizeof(out[n].name) - 1);
		out[n].provider = &hw_verbs_provider;
		out[n].ibv_device = verbs_devices[i];
	}
	return n;
}

static struct ibv_context *verbs_open_device(const struct hw_device *dev)
{
	return ibv_open_device(dev->ibv_device);
}

static bool verbs_owns_context(const struct ibv_context *ctx)
{
	return ctx != NULL;
}

const struct hw_provider hw_verbs_provider = {
    .name = "verbs",
    .ops = &verbs_ops,
    .list_devices = verbs_list_devices,
    .open_device = verbs_open_device,
    .owns_context = verbs_owns_context,
    .cm = &hw_cm_verbs,
};
