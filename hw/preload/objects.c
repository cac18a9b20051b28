/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Verbs on objects: PDs, MRs, completion channels, CQs, QPs, AHs and
 * asynchronous events.  Each call on a soft object goes to hw/soft, the
 * rest to libibverbs.  What the soft device does not have (XRC, multicast,
 * imported objects, dma-buf MRs, ECE) fails with EOPNOTSUPP, as a provider
 * without the feature does.
 */
#include "hw/preload/preload.h"

#include <errno.h>
#include <string.h>

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

static void *preload_unsupported(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

PRELOAD_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	if (preload_is_soft(context))
		return preload_soft_ops()->alloc_pd(context);
	return PRELOAD_NEXT(ibv_alloc_pd, "IBVERBS_1.1")(context);
}

PRELOAD_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
	if (preload_is_soft(pd->context))
		return preload_soft_ops()->dealloc_pd(pd);
	return PRELOAD_NEXT(ibv_dealloc_pd, "IBVERBS_1.1")(pd);
}

/* The soft device has no on-demand paging: the optional-range bits ask for what it may ignore. */
static struct ibv_mr *preload_soft_reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
					  unsigned int access)
{
	return soft_reg_mr_iova(pd, addr, length, iova, (int)(access & ~(unsigned)IBV_ACCESS_OPTIONAL_RANGE));
}

PRELOAD_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	if (preload_is_soft(pd->context))
		return preload_soft_reg_mr(pd, addr, length, (uintptr_t)addr, (unsigned)access);
	return PRELOAD_NEXT(ibv_reg_mr, "IBVERBS_1.1")(pd, addr, length, access);
}

PRELOAD_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
					      int access)
{
	if (preload_is_soft(pd->context))
		return preload_soft_reg_mr(pd, addr, length, iova, (unsigned)access);
	return PRELOAD_NEXT(ibv_reg_mr_iova, "IBVERBS_1.7")(pd, addr, length, iova, access);
}

PRELOAD_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
					       unsigned int access)
{
	if (preload_is_soft(pd->context))
		return preload_soft_reg_mr(pd, addr, length, iova, access);
	return PRELOAD_NEXT(ibv_reg_mr_iova2, "IBVERBS_1.8")(pd, addr, length, iova, access);
}

PRELOAD_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
						uint64_t iova, int fd, int access)
{
	if (preload_is_soft(pd->context))
		return preload_unsupported();
	return PRELOAD_NEXT(ibv_reg_dmabuf_mr, "IBVERBS_1.12")(pd, offset, length, iova, fd, access);
}

PRELOAD_EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr, size_t length,
				int access)
{
	if (!preload_is_soft(mr->context))
		return PRELOAD_NEXT(ibv_rereg_mr, "IBVERBS_1.1")(mr, flags, pd, addr, length, access);
	return soft_rereg_mr(mr, flags, pd, addr, length,
			     (int)((unsigned)access & ~(unsigned)IBV_ACCESS_OPTIONAL_RANGE));
}

PRELOAD_EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
	if (preload_is_soft(mr->context))
		return preload_soft_ops()->dereg_mr(mr);
	return PRELOAD_NEXT(ibv_dereg_mr, "IBVERBS_1.1")(mr);
}

PRELOAD_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	if (preload_is_soft(context))
		return preload_soft_ops()->create_comp_channel(context);
	return PRELOAD_NEXT(ibv_create_comp_channel, "IBVERBS_1.0")(context);
}

PRELOAD_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	if (preload_is_soft(channel->context))
		return preload_soft_ops()->destroy_comp_channel(channel);
	return PRELOAD_NEXT(ibv_destroy_comp_channel, "IBVERBS_1.0")(channel);
}

PRELOAD_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
					    struct ibv_comp_channel *channel, int comp_vector)
{
	if (preload_is_soft(context))
		return preload_soft_ops()->create_cq(context, cqe, cq_context, channel, comp_vector);
	return PRELOAD_NEXT(ibv_create_cq, "IBVERBS_1.1")(context, cqe, cq_context, channel, comp_vector);
}

PRELOAD_EXPORT int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	if (preload_is_soft(cq->context))
		return soft_resize_cq(cq, cqe);
	return PRELOAD_NEXT(ibv_resize_cq, "IBVERBS_1.1")(cq, cqe);
}

PRELOAD_EXPORT int ibv_destroy_cq(struct ibv_cq *cq)
{
	if (preload_is_soft(cq->context))
		return preload_soft_ops()->destroy_cq(cq);
	return PRELOAD_NEXT(ibv_destroy_cq, "IBVERBS_1.1")(cq);
}

PRELOAD_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	if (preload_is_soft(channel->context))
		return preload_soft_ops()->get_cq_event(channel, cq, cq_context);
	return PRELOAD_NEXT(ibv_get_cq_event, "IBVERBS_1.1")(channel, cq, cq_context);
}

PRELOAD_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	if (preload_is_soft(cq->context))
		preload_soft_ops()->ack_cq_events(cq, nevents);
	else
		PRELOAD_NEXT(ibv_ack_cq_events, "IBVERBS_1.1")(cq, nevents);
}

PRELOAD_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	if (preload_is_soft(pd->context))
		return preload_soft_ops()->create_qp(pd, qp_init_attr);
	return PRELOAD_NEXT(ibv_create_qp, "IBVERBS_1.1")(pd, qp_init_attr);
}

PRELOAD_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	if (preload_is_soft(qp->context))
		return &to_soft_qp(qp)->ibv_ex;
	return PRELOAD_NEXT(ibv_qp_to_qp_ex, "IBVERBS_1.6")(qp);
}

PRELOAD_EXPORT int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
				struct ibv_qp_init_attr *init_attr)
{
	if (preload_is_soft(qp->context))
		return preload_soft_ops()->query_qp(qp, attr, attr_mask, init_attr);
	return PRELOAD_NEXT(ibv_query_qp, "IBVERBS_1.1")(qp, attr, attr_mask, init_attr);
}

PRELOAD_EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	if (preload_is_soft(qp->context))
		return preload_soft_ops()->modify_qp(qp, attr, attr_mask);
	return PRELOAD_NEXT(ibv_modify_qp, "IBVERBS_1.1")(qp, attr, attr_mask);
}

PRELOAD_EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
	if (preload_is_soft(qp->context))
		return preload_soft_ops()->destroy_qp(qp);
	return PRELOAD_NEXT(ibv_destroy_qp, "IBVERBS_1.1")(qp);
}

/* The soft device delivers a message's data in order and before its completion (over TCP). */
PRELOAD_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	if (preload_is_soft(qp->context))
		return flags ? 0 : 1;
	return PRELOAD_NEXT(ibv_query_qp_data_in_order, "IBVERBS_1.14")(qp, op, flags);
}

PRELOAD_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	if (preload_is_soft(qp->context))
		return EOPNOTSUPP;
	return PRELOAD_NEXT(ibv_query_ece, "IBVERBS_1.10")(qp, ece);
}

PRELOAD_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	if (preload_is_soft(qp->context))
		return EOPNOTSUPP;
	return PRELOAD_NEXT(ibv_set_ece, "IBVERBS_1.10")(qp, ece);
}

PRELOAD_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *srq_init_attr)
{
	if (preload_is_soft(pd->context))
		return preload_soft_ops()->create_srq(pd, srq_init_attr);
	return PRELOAD_NEXT(ibv_create_srq, "IBVERBS_1.1")(pd, srq_init_attr);
}

PRELOAD_EXPORT int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr, int srq_attr_mask)
{
	if (preload_is_soft(srq->context))
		return preload_soft_ops()->modify_srq(srq, srq_attr, srq_attr_mask);
	return PRELOAD_NEXT(ibv_modify_srq, "IBVERBS_1.1")(srq, srq_attr, srq_attr_mask);
}

PRELOAD_EXPORT int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr)
{
	if (preload_is_soft(srq->context))
		return preload_soft_ops()->query_srq(srq, srq_attr);
	return PRELOAD_NEXT(ibv_query_srq, "IBVERBS_1.1")(srq, srq_attr);
}

PRELOAD_EXPORT int ibv_destroy_srq(struct ibv_srq *srq)
{
	if (preload_is_soft(srq->context))
		return preload_soft_ops()->destroy_srq(srq);
	return PRELOAD_NEXT(ibv_destroy_srq, "IBVERBS_1.1")(srq);
}

PRELOAD_EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	if (preload_is_soft(qp->context))
		return EOPNOTSUPP;
	return PRELOAD_NEXT(ibv_attach_mcast, "IBVERBS_1.1")(qp, gid, lid);
}

PRELOAD_EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	if (preload_is_soft(qp->context))
		return EOPNOTSUPP;
	return PRELOAD_NEXT(ibv_detach_mcast, "IBVERBS_1.1")(qp, gid, lid);
}

/* A soft context cannot be shared between processes. */
PRELOAD_EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
	if (soft_is_cmd_fd(cmd_fd))
		return preload_unsupported();
	return PRELOAD_NEXT(ibv_import_device, "IBVERBS_1.10")(cmd_fd);
}

PRELOAD_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	if (preload_is_soft(context))
		return preload_unsupported();
	return PRELOAD_NEXT(ibv_import_pd, "IBVERBS_1.10")(context, pd_handle);
}

PRELOAD_EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	if (preload_is_soft(pd->context))
		return preload_unsupported();
	return PRELOAD_NEXT(ibv_import_mr, "IBVERBS_1.10")(pd, mr_handle);
}

PRELOAD_EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	if (preload_is_soft(context))
		return preload_unsupported();
	return PRELOAD_NEXT(ibv_import_dm, "IBVERBS_1.13")(context, dm_handle);
}

PRELOAD_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	if (preload_is_soft(pd->context))
		return preload_soft_ops()->create_ah(pd, attr);
	return PRELOAD_NEXT(ibv_create_ah, "IBVERBS_1.1")(pd, attr);
}

PRELOAD_EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
	if (preload_is_soft(ah->context))
		return preload_soft_ops()->destroy_ah(ah);
	return PRELOAD_NEXT(ibv_destroy_ah, "IBVERBS_1.1")(ah);
}

/*
 * The reply address of a received UD datagram: the sender's GID from the
 * GRH in front of the data (the soft port is Ethernet, so a GRH is always
 * there and always needed).
 */
PRELOAD_EXPORT int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc,
				       struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
	uint32_t flow_class;

	if (!preload_is_soft(context))
		return PRELOAD_NEXT(ibv_init_ah_from_wc, "IBVERBS_1.1")(context, port_num, wc, grh, ah_attr);
	if (!(wc->wc_flags & IBV_WC_GRH) || !grh) {
		errno = EINVAL;
		return -1;
	}
	memset(ah_attr, 0, sizeof(*ah_attr));
	flow_class = be32toh(grh->version_tclass_flow);
	ah_attr->dlid = wc->slid;
	ah_attr->sl = wc->sl;
	ah_attr->src_path_bits = wc->dlid_path_bits;
	ah_attr->port_num = port_num;
	ah_attr->is_global = 1;
	ah_attr->grh.dgid = grh->sgid;
	ah_attr->grh.sgid_index = 0;
	ah_attr->grh.hop_limit = 0xff;
	ah_attr->grh.flow_label = flow_class & 0xfffff;
	ah_attr->grh.traffic_class = (uint8_t)(flow_class >> 20);
	return 0;
}

PRELOAD_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
						    uint8_t port_num)
{
	struct ibv_ah_attr attr;

	if (!preload_is_soft(pd->context))
		return PRELOAD_NEXT(ibv_create_ah_from_wc, "IBVERBS_1.1")(pd, wc, grh, port_num);
	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
		return NULL;
	return ibv_create_ah(pd, &attr);
}

/* The soft port has no MAC: RoCE's L2 resolution has nothing to say. */
PRELOAD_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
					       uint8_t eth_mac[6], uint16_t *vid)
{
	if (!preload_is_soft(context))
		return PRELOAD_NEXT(ibv_resolve_eth_l2_from_gid, "IBVERBS_1.1")(context, attr, eth_mac, vid);
	memset(eth_mac, 0, 6);
	if (vid)
		*vid = 0xffff; /* no VLAN */
	return 0;
}

PRELOAD_EXPORT int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	if (preload_is_soft(context))
		return preload_soft_ops()->get_async_event(context, event);
	return PRELOAD_NEXT(ibv_get_async_event, "IBVERBS_1.1")(context, event);
}

/* The context an event's object belongs to, or NULL for port and device events. */
static struct ibv_context *preload_event_context(const struct ibv_async_event *event)
{
	switch (event->event_type) {
	case IBV_EVENT_CQ_ERR:
		return event->element.cq->context;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return event->element.qp->context;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return event->element.srq->context;
	case IBV_EVENT_WQ_FATAL:
		return event->element.wq->context;
	default:
		return NULL;
	}
}

PRELOAD_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	if (preload_is_soft(preload_event_context(event)))
		preload_soft_ops()->ack_async_event(event);
	else
		PRELOAD_NEXT(ibv_ack_async_event, "IBVERBS_1.1")(event);
}
