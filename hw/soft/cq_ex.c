/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ibv_create_cq_ex and the extended-poll API: ibv_start_poll() takes the
 * oldest completion into the CQ's "current" slot, ibv_wc_read_*() read its
 * fields, ibv_next_poll() moves on, ibv_end_poll() ends the batch.  The
 * completions are the same struct ibv_wc entries ibv_poll_cq returns, so
 * both APIs can be mixed on one CQ, one at a time (the caller serializes
 * start_poll .. end_poll, as libibverbs documents).
 */
#include "hw/soft/soft.h"

#include <errno.h>
#include <string.h>

/* What the soft device can report: the standard fields and a completion timestamp. */
#define SOFT_CQ_EX_FLAGS                                                                                     \
	(IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |                                       \
	 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)

static struct soft_cq *cq_of(struct ibv_cq_ex *ex)
{
	return SOFT_CONTAINER_OF(ex, struct soft_cq, ibv_ex);
}

/* Takes the next completion as the current one; ENOENT when there is none. */
static int soft_cq_ex_take(struct ibv_cq_ex *ex)
{
	struct soft_cq *cq = cq_of(ex);
	int n = soft_poll_cq(&cq->ibv, 1, &cq->current);

	if (n < 0)
		return EINVAL;
	if (n == 0)
		return ENOENT;
	cq->current_ns = soft_now_ns();
	ex->status = cq->current.status;
	ex->wr_id = cq->current.wr_id;
	return 0;
}

static int soft_cq_ex_start_poll(struct ibv_cq_ex *ex, struct ibv_poll_cq_attr *attr)
{
	if (attr && attr->comp_mask)
		return EINVAL;
	return soft_cq_ex_take(ex);
}

static int soft_cq_ex_next_poll(struct ibv_cq_ex *ex)
{
	return soft_cq_ex_take(ex);
}

static void soft_cq_ex_end_poll(struct ibv_cq_ex *ex)
{
	(void)ex;
}

static enum ibv_wc_opcode soft_cq_ex_read_opcode(struct ibv_cq_ex *ex)
{
	return cq_of(ex)->current.opcode;
}

static uint32_t soft_cq_ex_read_vendor_err(struct ibv_cq_ex *ex)
{
	return cq_of(ex)->current.vendor_err;
}

static uint32_t soft_cq_ex_read_byte_len(struct ibv_cq_ex *ex)
{
	return cq_of(ex)->current.byte_len;
}

static __be32 soft_cq_ex_read_imm_data(struct ibv_cq_ex *ex)
{
	return cq_of(ex)->current.imm_data;
}

static uint32_t soft_cq_ex_read_qp_num(struct ibv_cq_ex *ex)
{
	return cq_of(ex)->current.qp_num;
}

static uint32_t soft_cq_ex_read_src_qp(struct ibv_cq_ex *ex)
{
	return cq_of(ex)->current.src_qp;
}

static unsigned int soft_cq_ex_read_wc_flags(struct ibv_cq_ex *ex)
{
	return cq_of(ex)->current.wc_flags;
}

static uint32_t soft_cq_ex_read_slid(struct ibv_cq_ex *ex)
{
	return cq_of(ex)->current.slid;
}

static uint8_t soft_cq_ex_read_sl(struct ibv_cq_ex *ex)
{
	return cq_of(ex)->current.sl;
}

static uint8_t soft_cq_ex_read_dlid_path_bits(struct ibv_cq_ex *ex)
{
	return cq_of(ex)->current.dlid_path_bits;
}

/* The soft device's clock is the host's CLOCK_MONOTONIC, in ns (hca_core_clock 1 GHz). */
static uint64_t soft_cq_ex_read_completion_ts(struct ibv_cq_ex *ex)
{
	return cq_of(ex)->current_ns;
}

static uint64_t soft_cq_ex_read_completion_wallclock_ns(struct ibv_cq_ex *ex)
{
	struct timespec mono, real;

	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_REALTIME, &real);
	return cq_of(ex)->current_ns + (uint64_t)(real.tv_sec - mono.tv_sec) * 1000000000ull +
	       (uint64_t)(real.tv_nsec - mono.tv_nsec);
}

struct ibv_cq_ex *soft_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *attr)
{
	struct ibv_cq *ibcq;
	struct ibv_cq_ex *ex;

	if ((attr->wc_flags & ~(uint64_t)SOFT_CQ_EX_FLAGS) ||
	    (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (attr->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->cqe > (uint32_t)SOFT_MAX_CQE) {
		errno = EINVAL;
		return NULL;
	}
	ibcq = soft_create_cq(ctx, (int)attr->cqe, attr->cq_context, attr->channel, (int)attr->comp_vector);
	if (!ibcq)
		return NULL;
	ex = &to_soft_cq(ibcq)->ibv_ex;
	ex->start_poll = soft_cq_ex_start_poll;
	ex->next_poll = soft_cq_ex_next_poll;
	ex->end_poll = soft_cq_ex_end_poll;
	ex->read_opcode = soft_cq_ex_read_opcode;
	ex->read_vendor_err = soft_cq_ex_read_vendor_err;
	ex->read_byte_len = soft_cq_ex_read_byte_len;
	ex->read_imm_data = soft_cq_ex_read_imm_data;
	ex->read_qp_num = soft_cq_ex_read_qp_num;
	ex->read_src_qp = soft_cq_ex_read_src_qp;
	ex->read_wc_flags = soft_cq_ex_read_wc_flags;
	ex->read_slid = soft_cq_ex_read_slid;
	ex->read_sl = soft_cq_ex_read_sl;
	ex->read_dlid_path_bits = soft_cq_ex_read_dlid_path_bits;
	ex->read_completion_ts = soft_cq_ex_read_completion_ts;
	ex->read_completion_wallclock_ns = soft_cq_ex_read_completion_wallclock_ns;
	return ex;
}
