/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ibv_create_qp_ex and the ibv_wr_* API (the "new post send" perftest and
 * pyverbs use): between ibv_wr_start() and ibv_wr_complete() each
 * ibv_wr_<opcode>() opens a work request and the setters that follow
 * (ibv_wr_set_sge, _set_inline_data, _set_ud_addr ...) fill it.  The soft
 * device stages them as ordinary ibv_send_wr and posts the batch at
 * ibv_wr_complete(), so both APIs share one validation and one send queue.
 * Errors found while building are kept and returned by ibv_wr_complete(),
 * which then posts nothing, as providers do.
 */
#include "hw/soft/soft.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct soft_wr_stage {
	struct ibv_send_wr wr;
	struct ibv_sge sge[SOFT_MAX_SGE];
	uint32_t inline_len; /* inline data is copied at ibv_wr_set_inline_data*() time */
	uint8_t inline_data[SOFT_MAX_INLINE];
};

/* What ibv_create_qp_ex accepts in send_ops_flags. */
#define SOFT_SEND_OPS                                                                                        \
	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |              \
	 IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |       \
	 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW |           \
	 IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_ATOMIC_WRITE)

static struct soft_qp *qp_of(struct ibv_qp_ex *ex)
{
	return SOFT_CONTAINER_OF(ex, struct soft_qp, ibv_ex);
}

/* The WR the last ibv_wr_<opcode>() opened, or NULL (then the setters record EINVAL). */
static struct soft_wr_stage *soft_stage_current(struct soft_qp *qp)
{
	if (!qp->stage_len || qp->stage_err) {
		if (!qp->stage_err)
			qp->stage_err = EINVAL;
		return NULL;
	}
	return &qp->stage[qp->stage_len - 1];
}

static struct soft_wr_stage *soft_stage_open(struct ibv_qp_ex *ex, enum ibv_wr_opcode opcode)
{
	struct soft_qp *qp = qp_of(ex);
	struct soft_wr_stage *s;

	if (qp->stage_err)
		return NULL;
	if (qp->stage_len == qp->stage_cap) {
		uint32_t cap = qp->stage_cap ? qp->stage_cap * 2 : 16;
		struct soft_wr_stage *grown;

		if (qp->stage_len >= qp->sq_size) {
			qp->stage_err = ENOMEM; /* more than the send queue holds */
			return NULL;
		}
		if (cap > qp->sq_size)
			cap = qp->sq_size;
		grown = realloc(qp->stage, (size_t)cap * sizeof(*grown));
		if (!grown) {
			qp->stage_err = ENOMEM;
			return NULL;
		}
		qp->stage = grown;
		qp->stage_cap = cap;
	}
	s = &qp->stage[qp->stage_len++];
	memset(&s->wr, 0, sizeof(s->wr));
	s->inline_len = 0;
	s->wr.wr_id = ex->wr_id;
	s->wr.send_flags = ex->wr_flags;
	s->wr.opcode = opcode;
	return s;
}

static void soft_wr_send(struct ibv_qp_ex *ex)
{
	soft_stage_open(ex, IBV_WR_SEND);
}

static void soft_wr_send_imm(struct ibv_qp_ex *ex, __be32 imm)
{
	struct soft_wr_stage *s = soft_stage_open(ex, IBV_WR_SEND_WITH_IMM);

	if (s)
		s->wr.imm_data = imm;
}

static void soft_wr_send_inv(struct ibv_qp_ex *ex, uint32_t rkey)
{
	struct soft_wr_stage *s = soft_stage_open(ex, IBV_WR_SEND_WITH_INV);

	if (s)
		s->wr.invalidate_rkey = rkey;
}

static void soft_wr_rdma(struct ibv_qp_ex *ex, enum ibv_wr_opcode op, uint32_t rkey, uint64_t addr,
			 __be32 imm)
{
	struct soft_wr_stage *s = soft_stage_open(ex, op);

	if (!s)
		return;
	s->wr.wr.rdma.rkey = rkey;
	s->wr.wr.rdma.remote_addr = addr;
	s->wr.imm_data = imm;
}

static void soft_wr_rdma_write(struct ibv_qp_ex *ex, uint32_t rkey, uint64_t addr)
{
	soft_wr_rdma(ex, IBV_WR_RDMA_WRITE, rkey, addr, 0);
}

static void soft_wr_rdma_write_imm(struct ibv_qp_ex *ex, uint32_t rkey, uint64_t addr, __be32 imm)
{
	soft_wr_rdma(ex, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, addr, imm);
}

static void soft_wr_rdma_read(struct ibv_qp_ex *ex, uint32_t rkey, uint64_t addr)
{
	soft_wr_rdma(ex, IBV_WR_RDMA_READ, rkey, addr, 0);
}

static void soft_wr_atomic(struct ibv_qp_ex *ex, enum ibv_wr_opcode op, uint32_t rkey, uint64_t addr,
			   uint64_t compare_add, uint64_t swap)
{
	struct soft_wr_stage *s = soft_stage_open(ex, op);

	if (!s)
		return;
	s->wr.wr.atomic.rkey = rkey;
	s->wr.wr.atomic.remote_addr = addr;
	s->wr.wr.atomic.compare_add = compare_add;
	s->wr.wr.atomic.swap = swap;
}

static void soft_wr_atomic_cmp_swp(struct ibv_qp_ex *ex, uint32_t rkey, uint64_t addr, uint64_t compare,
				   uint64_t swap)
{
	soft_wr_atomic(ex, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, addr, compare, swap);
}

static void soft_wr_atomic_fetch_add(struct ibv_qp_ex *ex, uint32_t rkey, uint64_t addr, uint64_t add)
{
	soft_wr_atomic(ex, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, addr, add, 0);
}

static void soft_wr_bind_mw(struct ibv_qp_ex *ex, struct ibv_mw *mw, uint32_t rkey,
			    const struct ibv_mw_bind_info *info)
{
	struct soft_wr_stage *s = soft_stage_open(ex, IBV_WR_BIND_MW);

	if (!s)
		return;
	s->wr.bind_mw.mw = mw;
	s->wr.bind_mw.rkey = rkey;
	s->wr.bind_mw.bind_info = *info;
}

static void soft_wr_local_inv(struct ibv_qp_ex *ex, uint32_t rkey)
{
	struct soft_wr_stage *s = soft_stage_open(ex, IBV_WR_LOCAL_INV);

	if (s)
		s->wr.invalidate_rkey = rkey;
}

static void soft_wr_unsupported(struct soft_qp *qp)
{
	if (!qp->stage_err)
		qp->stage_err = EOPNOTSUPP;
}

static void soft_wr_send_tso(struct ibv_qp_ex *ex, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	(void)hdr, (void)hdr_sz, (void)mss;
	soft_wr_unsupported(qp_of(ex));
}

static void soft_wr_set_xrc_srqn(struct ibv_qp_ex *ex, uint32_t srqn)
{
	(void)srqn;
	soft_wr_unsupported(qp_of(ex));
}

/* RDMA ATOMIC WRITE: the 8 bytes at data, taken now, as inline data. */
static void soft_wr_atomic_write(struct ibv_qp_ex *ex, uint32_t rkey, uint64_t addr, const void *data)
{
	struct soft_wr_stage *s = soft_stage_open(ex, IBV_WR_ATOMIC_WRITE);

	if (!s)
		return;
	s->wr.wr.rdma.rkey = rkey;
	s->wr.wr.rdma.remote_addr = addr;
	memcpy(s->inline_data, data, 8);
	s->inline_len = 8;
	s->wr.num_sge = 1;
	s->wr.send_flags |= IBV_SEND_INLINE;
}

static void soft_wr_set_ud_addr(struct ibv_qp_ex *ex, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
	struct soft_wr_stage *s = soft_stage_current(qp_of(ex));

	if (!s)
		return;
	s->wr.wr.ud.ah = ah;
	s->wr.wr.ud.remote_qpn = qpn;
	s->wr.wr.ud.remote_qkey = qkey;
}

static void soft_wr_set_sge_list(struct ibv_qp_ex *ex, size_t n, const struct ibv_sge *sge)
{
	struct soft_qp *qp = qp_of(ex);
	struct soft_wr_stage *s = soft_stage_current(qp);

	if (!s)
		return;
	if (n > qp->cap.max_send_sge || n > SOFT_MAX_SGE) {
		qp->stage_err = EINVAL;
		return;
	}
	memcpy(s->sge, sge, n * sizeof(*sge));
	s->wr.num_sge = (int)n;
	s->wr.send_flags &= ~(unsigned)IBV_SEND_INLINE;
}

static void soft_wr_set_sge(struct ibv_qp_ex *ex, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = {.addr = addr, .length = length, .lkey = lkey};

	soft_wr_set_sge_list(ex, 1, &sge);
}

static void soft_wr_set_inline_data_list(struct ibv_qp_ex *ex, size_t n, const struct ibv_data_buf *buf)
{
	struct soft_qp *qp = qp_of(ex);
	struct soft_wr_stage *s = soft_stage_current(qp);
	size_t total = 0;

	if (!s)
		return;
	for (size_t i = 0; i < n; i++) {
		if (buf[i].length > SOFT_MAX_INLINE - total) {
			qp->stage_err = EINVAL; /* more than max_inline_data */
			return;
		}
		memcpy(s->inline_data + total, buf[i].addr, buf[i].length);
		total += buf[i].length;
	}
	s->inline_len = (uint32_t)total;
	s->wr.num_sge = 1;
	s->wr.send_flags |= IBV_SEND_INLINE;
}

static void soft_wr_set_inline_data(struct ibv_qp_ex *ex, void *addr, size_t length)
{
	struct ibv_data_buf buf = {.addr = addr, .length = length};

	soft_wr_set_inline_data_list(ex, 1, &buf);
}

static void soft_wr_start(struct ibv_qp_ex *ex)
{
	struct soft_qp *qp = qp_of(ex);

	qp->stage_len = 0;
	qp->stage_err = 0;
}

static void soft_wr_abort(struct ibv_qp_ex *ex)
{
	soft_wr_start(ex);
}

static int soft_wr_complete(struct ibv_qp_ex *ex)
{
	struct soft_qp *qp = qp_of(ex);
	struct ibv_send_wr *bad = NULL;
	int err = qp->stage_err;

	if (!err && qp->stage_len) {
		/* Link and point the SGEs now: the array may have moved while it grew. */
		for (uint32_t i = 0; i < qp->stage_len; i++) {
			struct soft_wr_stage *s = &qp->stage[i];

			s->wr.next = i + 1 < qp->stage_len ? &qp->stage[i + 1].wr : NULL;
			s->wr.sg_list = s->sge;
			if (s->wr.send_flags & IBV_SEND_INLINE) {
				s->sge[0].addr = (uintptr_t)s->inline_data;
				s->sge[0].length = s->inline_len;
				s->sge[0].lkey = 0;
			}
		}
		err = soft_post_send(&qp->ibv, &qp->stage[0].wr, &bad);
	}
	qp->stage_len = 0;
	qp->stage_err = 0;
	return err;
}

void soft_qp_ex_init(struct soft_qp *qp)
{
	struct ibv_qp_ex *ex = &qp->ibv_ex;

	ex->wr_atomic_cmp_swp = soft_wr_atomic_cmp_swp;
	ex->wr_atomic_fetch_add = soft_wr_atomic_fetch_add;
	ex->wr_bind_mw = soft_wr_bind_mw;
	ex->wr_local_inv = soft_wr_local_inv;
	ex->wr_rdma_read = soft_wr_rdma_read;
	ex->wr_rdma_write = soft_wr_rdma_write;
	ex->wr_rdma_write_imm = soft_wr_rdma_write_imm;
	ex->wr_send = soft_wr_send;
	ex->wr_send_imm = soft_wr_send_imm;
	ex->wr_send_inv = soft_wr_send_inv;
	ex->wr_send_tso = soft_wr_send_tso;
	ex->wr_set_ud_addr = soft_wr_set_ud_addr;
	ex->wr_set_xrc_srqn = soft_wr_set_xrc_srqn;
	ex->wr_set_inline_data = soft_wr_set_inline_data;
	ex->wr_set_inline_data_list = soft_wr_set_inline_data_list;
	ex->wr_set_sge = soft_wr_set_sge;
	ex->wr_set_sge_list = soft_wr_set_sge_list;
	ex->wr_start = soft_wr_start;
	ex->wr_complete = soft_wr_complete;
	ex->wr_abort = soft_wr_abort;
	ex->wr_atomic_write = soft_wr_atomic_write;
}

void soft_qp_ex_free(struct soft_qp *qp)
{
	free(qp->stage);
	qp->stage = NULL;
	qp->stage_len = qp->stage_cap = 0;
}

struct ibv_qp *soft_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr)
{
	const uint32_t known =
	    IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS | IBV_QP_INIT_ATTR_CREATE_FLAGS;
	struct ibv_qp_init_attr init = {
	    .qp_context = attr->qp_context,
	    .send_cq = attr->send_cq,
	    .recv_cq = attr->recv_cq,
	    .srq = attr->srq,
	    .cap = attr->cap,
	    .qp_type = attr->qp_type,
	    .sq_sig_all = attr->sq_sig_all,
	};
	struct ibv_qp *qp;

	if (attr->comp_mask & ~known ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	     (attr->send_ops_flags & ~(uint64_t)SOFT_SEND_OPS))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd || attr->pd->context != ctx) {
		errno = EINVAL;
		return NULL;
	}
	qp = soft_create_qp(attr->pd, &init);
	if (qp)
		attr->cap = init.cap;
	return qp;
}
