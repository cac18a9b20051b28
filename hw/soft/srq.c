/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Shared receive queues, with rxe's semantics (rxe_srq.c, rxe_resp.c):
 *
 * - create: max_wr 1..SOFT_MAX_SRQ_WR, max_sge 1..SOFT_MAX_SGE, the limit
 *   starts disarmed (srq_limit in the init attributes is ignored, as the
 *   verbs man page says).
 * - modify: IBV_SRQ_MAX_WR grows or shrinks the ring (never below the WQEs
 *   it holds, nor below an armed limit); IBV_SRQ_LIMIT arms the limit
 *   (0 disarms).  Once armed, the first time the responder leaves fewer
 *   WQEs than the limit, the SRQ's context gets IBV_EVENT_SRQ_LIMIT_REACHED
 *   and the limit disarms.
 * - post_srq_recv: EINVAL for too many SGEs, ENOMEM when full, *bad_wr set.
 * - destroy: EBUSY while a QP created on it lives.
 *
 * QPs on an SRQ (qp.c) have no receive queue of their own; the responder
 * (resp.c) takes their receives here, and their completions name the QP
 * that consumed the WQE.  Such a QP entering ERR flushes nothing of the SRQ
 * and raises IBV_EVENT_QP_LAST_WQE_REACHED instead.
 */
#include "hw/soft/soft.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint32_t soft_srq_slots(uint32_t n)
{
	uint32_t slots = 1;

	while (slots < n)
		slots <<= 1;
	return slots;
}

static bool soft_srq_attr_ok(const struct ibv_srq_attr *a)
{
	return a->max_wr >= 1 && a->max_wr <= SOFT_MAX_SRQ_WR && a->max_sge >= 1 &&
	       a->max_sge <= SOFT_MAX_SGE;
}

struct ibv_srq *soft_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *init)
{
	struct soft_nic *nic = soft_nic_of(pd->context);
	struct soft_srq *srq;

	pd = soft_pd_base(pd);
	if (!soft_srq_attr_ok(&init->attr)) {
		errno = EINVAL;
		return NULL;
	}
	if (atomic_fetch_add(&nic->n_srq, 1) >= SOFT_MAX_SRQ) {
		atomic_fetch_sub(&nic->n_srq, 1);
		errno = ENOMEM;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (srq) {
		srq->mask = soft_srq_slots(init->attr.max_wr) - 1;
		srq->rq = calloc(srq->mask + 1, sizeof(*srq->rq));
	}
	if (!srq || !srq->rq) {
		if (srq)
			free(srq);
		atomic_fetch_sub(&nic->n_srq, 1);
		errno = ENOMEM;
		return NULL;
	}
	srq->nic = nic;
	srq->size = init->attr.max_wr;
	srq->max_sge = init->attr.max_sge;
	srq->head = srq->tail = SOFT_RING_START;
	pthread_mutex_init(&srq->lock, NULL);
	srq->ibv.context = pd->context;
	srq->ibv.srq_context = init->srq_context;
	srq->ibv.pd = pd;
	pthread_mutex_init(&srq->ibv.mutex, NULL);
	pthread_cond_init(&srq->ibv.cond, NULL);
	init->attr.srq_limit = 0;
	soft_pd_hold(pd);
	return &srq->ibv;
}

/*
 * ibv_create_srq_ex of the basic type.  The device offers no XRC domains and
 * no tag matching (query_device_ex reports neither), so an XRC or TM SRQ, or
 * an attribute only they use, is EOPNOTSUPP, as on any NIC without them.
 */
struct ibv_srq *soft_create_srq_ex(struct ibv_context *ctx, struct ibv_srq_init_attr_ex *init)
{
	const uint32_t known = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ;
	struct ibv_srq_init_attr basic = {.srq_context = init->srq_context, .attr = init->attr};
	struct ibv_srq *srq;

	if ((init->comp_mask & ~known) ||
	    ((init->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && init->srq_type != IBV_SRQT_BASIC)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(init->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !init->pd ||
	    init->pd->context->device != ctx->device) {
		errno = EINVAL;
		return NULL;
	}
	srq = soft_create_srq(init->pd, &basic);
	if (srq)
		init->attr = basic.attr;
	return srq;
}

int soft_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int mask)
{
	struct soft_srq *srq = to_soft_srq(ibsrq);
	struct soft_rwqe *ring = NULL;
	uint32_t mask_new = 0;
	int err = 0;

	if (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
		return EINVAL;
	if ((mask & IBV_SRQ_MAX_WR) && (attr->max_wr < 1 || attr->max_wr > SOFT_MAX_SRQ_WR))
		return EINVAL;
	if (mask & IBV_SRQ_MAX_WR) {
		mask_new = soft_srq_slots(attr->max_wr) - 1;
		ring = calloc(mask_new + 1, sizeof(*ring));
		if (!ring)
			return ENOMEM;
	}
	soft_lock(&srq->lock);
	if (mask & IBV_SRQ_MAX_WR) {
		uint32_t n = srq->tail - srq->head,
			 limit = (mask & IBV_SRQ_LIMIT) ? attr->srq_limit : srq->limit;

		if (attr->max_wr < n || (limit && attr->max_wr < limit))
			err = EINVAL;
	}
	if (!err && (mask & IBV_SRQ_LIMIT) &&
	    attr->srq_limit > ((mask & IBV_SRQ_MAX_WR) ? attr->max_wr : srq->size))
		err = EINVAL;
	if (!err && (mask & IBV_SRQ_MAX_WR)) {
		uint32_t n = srq->tail - srq->head;

		for (uint32_t i = 0; i < n; i++)
			ring[(SOFT_RING_START + i) & mask_new] = srq->rq[(srq->head + i) & srq->mask];
		free(srq->rq);
		srq->rq = ring;
		ring = NULL;
		srq->mask = mask_new;
		srq->size = attr->max_wr;
		srq->head = SOFT_RING_START;
		srq->tail = SOFT_RING_START + n;
	}
	if (!err && (mask & IBV_SRQ_LIMIT))
		srq->limit = attr->srq_limit;
	soft_unlock(&srq->lock);
	free(ring);
	return err;
}

int soft_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct soft_srq *srq = to_soft_srq(ibsrq);

	soft_lock(&srq->lock);
	attr->max_wr = srq->size;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = srq->limit;
	soft_unlock(&srq->lock);
	return 0;
}

int soft_destroy_srq(struct ibv_srq *ibsrq)
{
	struct soft_srq *srq = to_soft_srq(ibsrq);

	if (atomic_load(&srq->users))
		return EBUSY;
	soft_async_forget(ibsrq->context, ibsrq, &srq->async_reported, &ibsrq->mutex, &ibsrq->cond,
			  &ibsrq->events_completed);
	atomic_fetch_sub(&srq->nic->n_srq, 1);
	soft_pd_release(ibsrq->pd);
	pthread_mutex_destroy(&srq->lock);
	pthread_mutex_destroy(&ibsrq->mutex);
	pthread_cond_destroy(&ibsrq->cond);
	free(srq->rq);
	free(srq);
	return 0;
}

int soft_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct soft_srq *srq = to_soft_srq(ibsrq);
	int err = 0;

	soft_lock(&srq->lock);
	for (; wr; wr = wr->next) {
		struct soft_rwqe *r;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > srq->max_sge) {
			err = EINVAL;
			break;
		}
		if (srq->tail - srq->head >= srq->size) {
			err = ENOMEM;
			break;
		}
		r = &srq->rq[srq->tail & srq->mask];
		r->wr_id = wr->wr_id;
		r->num_sge = wr->num_sge;
		if (wr->num_sge)
			memcpy(r->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(r->sge[0]));
		srq->tail++;
	}
	soft_unlock(&srq->lock);
	if (err)
		*bad_wr = wr;
	return err;
}

bool soft_srq_take(struct soft_srq *srq, struct soft_rwqe *out)
{
	bool got = false, event = false;

	soft_lock(&srq->lock);
	if (srq->head != srq->tail) {
		*out = srq->rq[srq->head & srq->mask];
		srq->head++;
		got = true;
		if (srq->limit && srq->tail - srq->head < srq->limit) {
			srq->limit = 0;
			event = true;
		}
	}
	soft_unlock(&srq->lock);
	if (event)
		soft_async_event(srq->ibv.context, IBV_EVENT_SRQ_LIMIT_REACHED, &srq->ibv);
	return got;
}

bool soft_srq_empty(struct soft_srq *srq)
{
	bool empty;

	soft_lock(&srq->lock);
	empty = srq->head == srq->tail;
	soft_unlock(&srq->lock);
	return empty;
}
