/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * hw: one provider interface for every RDMA device rdmatool can drive.
 *
 * Arguments and results are libibverbs' own structs and enums, so code
 * above this layer is identical for a real NIC (hw/verbs.c, forwarding to
 * libibverbs) and for the user-space soft NIC (hw/soft/).  Objects are the
 * ordinary struct ibv_pd / ibv_cq / ibv_qp ...; their ->context field finds
 * the provider, so every call below dispatches without a lookup table.
 *
 * The soft provider also fills ctx->ops.post_send/post_recv/poll_cq/
 * bind_mw/alloc_mw/dealloc_mw/req_notify_cq, so libibverbs' inline data-path
 * helpers (ibv_post_send, ibv_poll_cq ...) work on its objects too.
 */
#ifndef RDMATOOL_HW_H
#define RDMATOOL_HW_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hw_ops {
	int (*query_device)(struct ibv_context *ctx, struct ibv_device_attr *attr);
	int (*query_port)(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr);
	int (*query_gid)(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid);
	int (*close_device)(struct ibv_context *ctx);

	struct ibv_pd *(*alloc_pd)(struct ibv_context *ctx);
	int (*dealloc_pd)(struct ibv_pd *pd);

	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access);
	/* ibv_reg_mr_iova: keys that name the buffer's bytes from iova on */
	struct ibv_mr *(*reg_mr_iova)(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				      int access);
	int (*dereg_mr)(struct ibv_mr *mr);
	/* ibv_rereg_mr: 0 or an enum ibv_rereg_mr_err_code. */
	int (*rereg_mr)(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr, size_t length,
			int access);

	struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
	int (*dealloc_mw)(struct ibv_mw *mw);
	int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind);

	struct ibv_comp_channel *(*create_comp_channel)(struct ibv_context *ctx);
	int (*destroy_comp_channel)(struct ibv_comp_channel *channel);
	int (*get_cq_event)(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context);
	void (*ack_cq_events)(struct ibv_cq *cq, unsigned int nevents);

	struct ibv_cq *(*create_cq)(struct ibv_context *ctx, int cqe, void *cq_context,
				    struct ibv_comp_channel *channel, int comp_vector);
	int (*destroy_cq)(struct ibv_cq *cq);
	int (*resize_cq)(struct ibv_cq *cq, int cqe);
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);

	struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *init);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
			struct ibv_qp_init_attr *init);
	int (*destroy_qp)(struct ibv_qp *qp);
	/* The ibv_wr_* API of a QP made by ibv_create_qp_ex (ibv_qp_to_qp_ex); NULL: it has none. */
	struct ibv_qp_ex *(*qp_to_qp_ex)(struct ibv_qp *qp);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);

	struct ibv_ah *(*create_ah)(struct ibv_pd *pd, struct ibv_ah_attr *attr);
	int (*destroy_ah)(struct ibv_ah *ah);

	/* Shared receive queues (basic type): ibv_create_srq ... ibv_post_srq_recv. */
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd, struct ibv_srq_init_attr *init);
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *attr, int attr_mask);
	int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *attr);
	int (*destroy_srq)(struct ibv_srq *srq);
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);

	/* Blocks like ibv_get_async_event unless ctx->async_fd is non-blocking. */
	int (*get_async_event)(struct ibv_context *ctx, struct ibv_async_event *event);
	void (*ack_async_event)(struct ibv_async_event *event);
};

struct hw_provider;
struct hw_cm_ops;

/* One entry of the merged device list: verbs devices first, then soft ones. */
struct hw_device {
	char name[IBV_SYSFS_NAME_MAX];
	const struct hw_provider *provider;
	struct ibv_device *ibv_device; /* the provider's own handle */
};

struct hw_provider {
	const char *name; /* "verbs" or "soft" */
	const struct hw_ops *ops;
	/* Appends up to max devices to out; returns how many, or -errno. */
	int (*list_devices)(struct hw_device *out, int max);
	struct ibv_context *(*open_device)(const struct hw_device *dev);
	bool (*owns_context)(const struct ibv_context *ctx);
	/* Its connection manager (hw/cm.h), NULL: none. */
	const struct hw_cm_ops *cm;
	/* Why its last open failed when errno alone does not say (NULL, or "": nothing to add). */
	const char *(*open_error)(void);
};

extern const struct hw_provider hw_verbs_provider;
extern const struct hw_provider hw_soft_provider;

#define HW_MAX_DEVICES 64

/*
 * Fills out[] with every device of every provider.  *verbs_errno receives
 * the errno of a failed verbs discovery (ENOSYS on a kernel without RDMA),
 * 0 when it worked (possibly finding nothing).  Returns the device count.
 */
int hw_list_devices(struct hw_device *out, int max, int *verbs_errno);

/*
 * Opens a device by name; NULL picks the first verbs device with an ACTIVE
 * port, else the soft device.  Returns NULL with errno set (ENODEV for an
 * unknown name).  *chosen (optional) receives the device that was opened.
 */
struct ibv_context *hw_open_device(const char *name, struct hw_device *chosen);
const char *hw_provider_name(const struct ibv_context *ctx);
/*
 * Why the last hw_open_device() failed, when errno alone does not say it
 * (e.g. a malformed RDMATOOL_SOFT_ADDR or RDMATOOL_SOFT_FAULTS: errno is
 * EINVAL and this names the variable); "" otherwise.
 */
const char *hw_open_error(void);
const struct hw_ops *hw_ops_of(const struct ibv_context *ctx);

static inline int hw_close_device(struct ibv_context *ctx)
{
	return hw_ops_of(ctx)->close_device(ctx);
}
static inline int hw_query_device(struct ibv_context *ctx, struct ibv_device_attr *attr)
{
	return hw_ops_of(ctx)->query_device(ctx, attr);
}
static inline int hw_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr)
{
	return hw_ops_of(ctx)->query_port(ctx, port, attr);
}
static inline int hw_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid)
{
	return hw_ops_of(ctx)->query_gid(ctx, port, index, gid);
}
static inline struct ibv_pd *hw_alloc_pd(struct ibv_context *ctx)
{
	return hw_ops_of(ctx)->alloc_pd(ctx);
}
static inline int hw_dealloc_pd(struct ibv_pd *pd)
{
	return hw_ops_of(pd->context)->dealloc_pd(pd);
}
static inline struct ibv_mr *hw_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return hw_ops_of(pd->context)->reg_mr(pd, addr, length, access);
}
static inline struct ibv_mr *hw_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
					    int access)
{
	return hw_ops_of(pd->context)->reg_mr_iova(pd, addr, length, iova, access);
}
static inline int hw_dereg_mr(struct ibv_mr *mr)
{
	return hw_ops_of(mr->context)->dereg_mr(mr);
}
static inline int hw_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr, size_t length,
			      int access)
{
	return hw_ops_of(mr->context)->rereg_mr(mr, flags, pd, addr, length, access);
}
static inline struct ibv_mw *hw_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	return hw_ops_of(pd->context)->alloc_mw(pd, type);
}
static inline int hw_dealloc_mw(struct ibv_mw *mw)
{
	return hw_ops_of(mw->context)->dealloc_mw(mw);
}
static inline int hw_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
{
	return hw_ops_of(qp->context)->bind_mw(qp, mw, bind);
}
static inline struct ibv_comp_channel *hw_create_comp_channel(struct ibv_context *ctx)
{
	return hw_ops_of(ctx)->create_comp_channel(ctx);
}
static inline int hw_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	return hw_ops_of(channel->context)->destroy_comp_channel(channel);
}
static inline int hw_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	return hw_ops_of(channel->context)->get_cq_event(channel, cq, cq_context);
}
static inline void hw_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	hw_ops_of(cq->context)->ack_cq_events(cq, nevents);
}
static inline struct ibv_cq *hw_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
					  struct ibv_comp_channel *channel, int comp_vector)
{
	return hw_ops_of(ctx)->create_cq(ctx, cqe, cq_context, channel, comp_vector);
}
static inline int hw_destroy_cq(struct ibv_cq *cq)
{
	return hw_ops_of(cq->context)->destroy_cq(cq);
}
static inline int hw_resize_cq(struct ibv_cq *cq, int cqe)
{
	return hw_ops_of(cq->context)->resize_cq(cq, cqe);
}
static inline int hw_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	return hw_ops_of(cq->context)->poll_cq(cq, num_entries, wc);
}
static inline int hw_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return hw_ops_of(cq->context)->req_notify_cq(cq, solicited_only);
}
static inline struct ibv_qp *hw_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *init)
{
	return hw_ops_of(pd->context)->create_qp(pd, init);
}
static inline int hw_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	return hw_ops_of(qp->context)->modify_qp(qp, attr, attr_mask);
}
static inline int hw_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
			      struct ibv_qp_init_attr *init)
{
	return hw_ops_of(qp->context)->query_qp(qp, attr, attr_mask, init);
}
static inline int hw_destroy_qp(struct ibv_qp *qp)
{
	return hw_ops_of(qp->context)->destroy_qp(qp);
}
static inline struct ibv_qp_ex *hw_qp_to_qp_ex(struct ibv_qp *qp)
{
	return hw_ops_of(qp->context)->qp_to_qp_ex(qp);
}
static inline int hw_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	return hw_ops_of(qp->context)->post_send(qp, wr, bad_wr);
}
static inline int hw_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	return hw_ops_of(qp->context)->post_recv(qp, wr, bad_wr);
}
static inline struct ibv_ah *hw_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	return hw_ops_of(pd->context)->create_ah(pd, attr);
}
static inline int hw_destroy_ah(struct ibv_ah *ah)
{
	return hw_ops_of(ah->context)->destroy_ah(ah);
}
static inline struct ibv_srq *hw_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *init)
{
	return hw_ops_of(pd->context)->create_srq(pd, init);
}
static inline int hw_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int attr_mask)
{
	return hw_ops_of(srq->context)->modify_srq(srq, attr, attr_mask);
}
static inline int hw_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	return hw_ops_of(srq->context)->query_srq(srq, attr);
}
static inline int hw_destroy_srq(struct ibv_srq *srq)
{
	return hw_ops_of(srq->context)->destroy_srq(srq);
}
static inline int hw_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	return hw_ops_of(srq->context)->post_srq_recv(srq, wr, bad_wr);
}
static inline int hw_get_async_event(struct ibv_context *ctx, struct ibv_async_event *event)
{
	return hw_ops_of(ctx)->get_async_event(ctx, event);
}
/* ctx is the context the event came from (events carry objects, not always a context). */
static inline void hw_ack_async_event(struct ibv_context *ctx, struct ibv_async_event *event)
{
	hw_ops_of(ctx)->ack_async_event(event);
}

#endif
