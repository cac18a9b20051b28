/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The responder: executes one request against this NIC's memory and QPs,
 * exactly once per PSN (RC duplicates are answered, not re-executed, except
 * READ which has no side effect), and says what the requester gets back.
 * Runs on the engine thread with obj_lock held for reading.
 */
#include "hw/soft/soft.h"

#include <arpa/inet.h>
#include <string.h>
#include <unistd.h>

/* Signed distance between 24-bit PSNs. */
static int32_t soft_psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

/* Copies the source segments into dst; *len receives the byte count. */
static void soft_copy_segs(struct soft_nic *nic, struct soft_seg *dst, int ndst, const struct soft_seg *src,
			   int nsrc)
{
	int d = 0, s = 0;
	uint32_t doff = 0, soff = 0;

	while (d < ndst && s < nsrc) {
		uint32_t n = dst[d].len - doff;

		if (src[s].len - soff < n)
			n = src[s].len - soff;
		/* A payload the shared-memory wire left in the requester's memory is pulled from there. */
		soft_dma_pull(nic, (uint8_t *)dst[d].ptr + doff, src[s].ptr + soff, src[s].pid, n);
		soft_count(&nic->wire_payload_bytes, n);
		doff += n;
		soff += n;
		if (doff == dst[d].len)
			d++, doff = 0;
		if (soff == src[s].len)
			s++, soff = 0;
	}
}

/*
 * Resolves a receive WQE's SGEs into writable segments; false on a protection
 * error.  An SRQ's WQEs are checked against the SRQ's PD.
 */
static bool soft_recv_segs(struct soft_qp *qp, const struct soft_rwqe *r, struct soft_seg *seg, uint64_t *cap)
{
	const struct ibv_pd *pd = qp->ibv.srq ? qp->ibv.srq->pd : qp->ibv.pd;

	*cap = 0;
	for (int i = 0; i < r->num_sge; i++) {
		const struct ibv_sge *sge = &r->sge[i];
		struct soft_mr *mr = soft_lookup_lkey(qp->nic, sge->lkey);

		if (sge->length && (!mr || mr->ibv.pd != pd || !(mr->access & IBV_ACCESS_LOCAL_WRITE) ||
				    sge->addr < mr->iova || sge->addr - mr->iova > mr->ibv.length ||
				    sge->length > mr->ibv.length - (sge->addr - mr->iova)))
			return false;
		/* An empty SGE's address is never dereferenced: it need not lie in an MR. */
		seg[i].ptr = sge->length ? soft_mr_ptr(mr, sge->addr) : (const uint8_t *)(uintptr_t)sge->addr;
		seg[i].len = sge->length;
		*cap += sge->length;
	}
	return true;
}

static void soft_fill_grh(uint8_t *grh, const struct soft_pkt *req)
{
	uint32_t vtf = htonl(6u << 28);
	uint16_t plen = htons((uint16_t)(req->length > 0xffff ? 0xffff : req->length));

	memset(grh, 0, SOFT_GRH_LEN);
	memcpy(grh, &vtf, 4);
	memcpy(grh + 4, &plen, 2);
	grh[6] = 0x1b; /* next header: IBA */
	grh[7] = 64;   /* hop limit */
	memcpy(grh + 8, req->sgid.raw, 16);
	memcpy(grh + 24, req->dgid.raw, 16);
}

/* Takes the QP's next receive WQE, from its SRQ when it has one; false: none posted. */
static bool soft_consume_recv(struct soft_qp *qp, struct soft_rwqe *out)
{
	bool got = false;

	if (qp->ibv.srq)
		return soft_srq_take(to_soft_srq(qp->ibv.srq), out);
	soft_lock(&qp->rq_lock);
	if (qp->rq_head != qp->rq_tail) {
		*out = qp->rq[qp->rq_head & qp->rq_mask];
		qp->rq_head++;
		got = true;
	}
	soft_unlock(&qp->rq_lock);
	return got;
}

static bool soft_recv_empty(struct soft_qp *qp)
{
	bool empty;

	if (qp->ibv.srq)
		return soft_srq_empty(to_soft_srq(qp->ibv.srq));
	pthread_mutex_lock(&qp->rq_lock);
	empty = qp->rq_head == qp->rq_tail;
	pthread_mutex_unlock(&qp->rq_lock);
	return empty;
}

static void soft_recv_done(struct soft_qp *qp, const struct soft_pkt *req, uint64_t wr_id,
			   enum ibv_wc_status status, uint32_t byte_len)
{
	struct ibv_wc wc = {
	    .wr_id = wr_id,
	    .status = status,
	    .opcode = req->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV,
	    .byte_len = byte_len,
	    .qp_num = qp->ibv.qp_num,
	    .src_qp = req->src_qpn,
	};

	if (req->opcode == IBV_WR_SEND_WITH_IMM || req->opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
		wc.wc_flags |= IBV_WC_WITH_IMM;
		wc.imm_data = req->imm_data;
	} else if (req->opcode == IBV_WR_SEND_WITH_INV && status == IBV_WC_SUCCESS) {
		wc.wc_flags |= IBV_WC_WITH_INV;
		wc.invalidated_rkey = req->invalidate_rkey;
	}
	if (qp->ibv.qp_type == IBV_QPT_UD)
		wc.wc_flags |= IBV_WC_GRH;
	soft_cq_push(qp->ibv.recv_cq, &wc, req->solicited);
}

static void soft_respond_ud(struct soft_nic *nic, struct soft_qp *qp, const struct soft_pkt *req)
{
	struct soft_seg dst[SOFT_MAX_SGE];
	struct soft_rwqe r;
	uint64_t cap;
	uint8_t grh[SOFT_GRH_LEN];
	struct soft_seg src[SOFT_MAX_SGE + 1];

	if (req->qkey != qp->attr.qkey || !soft_consume_recv(qp, &r)) {
		atomic_fetch_add(&qp->ud_drops, 1);
		atomic_fetch_add(&nic->ud_drops, 1);
		return;
	}
	if (!soft_recv_segs(qp, &r, dst, &cap)) {
		/* A receive-queue error: the whole QP goes to ERR, not just its send queue (SQE). */
		soft_recv_done(qp, req, r.wr_id, IBV_WC_LOC_PROT_ERR, 0);
		soft_qp_error_all(qp);
		return;
	}
	if (cap < SOFT_GRH_LEN + (uint64_t)req->length) {
		soft_recv_done(qp, req, r.wr_id, IBV_WC_LOC_LEN_ERR, 0);
		return;
	}
	soft_fill_grh(grh, req);
	src[0].ptr = grh;
	src[0].len = SOFT_GRH_LEN;
	src[0].pid = 0;
	memcpy(&src[1], req->seg, (size_t)req->nseg * sizeof(src[0]));
	soft_copy_segs(nic, dst, r.num_sge, src, req->nseg + 1);
	soft_recv_done(qp, req, r.wr_id, IBV_WC_SUCCESS, SOFT_GRH_LEN + req->length);
}

static void soft_nak(struct soft_qp *qp, struct soft_pkt *resp, enum ibv_wc_status status)
{
	resp->kind = SOFT_RESP_NAK;
	resp->status = status;
	/* An RC responder error is fatal for the responder QP too. */
	soft_qp_error(qp);
}

/*
 * Executes a new (in-order) RC or UC request; qp->lock held.  UC answers
 * nothing: an invalid request or one with no receive posted is dropped
 * and the QP stays up; an error on the posted receive itself completes it
 * in error and the QP goes to ERR, as on RC.
 */
static void soft_execute_rc(struct soft_nic *nic, struct soft_qp *qp, const struct soft_pkt *req,
			    struct soft_pkt *resp)
{
	int qp_access = qp->attr.qp_access_flags;
	struct soft_seg dst[SOFT_MAX_SGE];
	struct soft_rwqe r;
	uint64_t cap;
	void *ptr;
	enum ibv_wc_status st;
	bool needs_recv = req->opcode != IBV_WR_RDMA_WRITE && req->opcode != IBV_WR_RDMA_READ &&
			  req->opcode != IBV_WR_ATOMIC_CMP_AND_SWP &&
			  req->opcode != IBV_WR_ATOMIC_FETCH_AND_ADD && req->opcode != IBV_WR_ATOMIC_WRITE;
	bool atomic_write = req->opcode == IBV_WR_ATOMIC_WRITE;
	bool is_write =
	    req->opcode == IBV_WR_RDMA_WRITE || req->opcode == IBV_WR_RDMA_WRITE_WITH_IMM || atomic_write;
	bool is_atomic =
	    req->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || req->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
	bool uc = qp->ibv.qp_type == IBV_QPT_UC;

	if ((is_write && !(qp_access & IBV_ACCESS_REMOTE_WRITE)) ||
	    (req->opcode == IBV_WR_RDMA_READ && !(qp_access & IBV_ACCESS_REMOTE_READ)) ||
	    (is_atomic && !(qp_access & IBV_ACCESS_REMOTE_ATOMIC)) ||
	    ((is_atomic || atomic_write) && (req->raddr & 7)) || (atomic_write && req->length != 8)) {
		if (!uc)
			soft_nak(qp, resp, IBV_WC_REM_INV_REQ_ERR);
		return; /* UC: an invalid request is dropped silently, the QP stays up */
	}
	if (needs_recv) {
		bool empty = soft_recv_empty(qp);

		if (empty && uc)
			return; /* UC has no RNR: the message is dropped */
		if (empty) {
			resp->kind = SOFT_RESP_RNR;
			resp->rnr_timer = qp->attr.min_rnr_timer;
			return;
		}
	}
	if (is_write || req->opcode == IBV_WR_RDMA_READ || is_atomic) {
		int need = is_write    ? IBV_ACCESS_REMOTE_WRITE
			   : is_atomic ? IBV_ACCESS_REMOTE_ATOMIC
				       : IBV_ACCESS_REMOTE_READ;
		uint32_t len = is_atomic ? 8 : req->length;

		st = soft_check_rkey(nic, qp, req->rkey, req->raddr, len, need, &ptr);
		if (st != IBV_WC_SUCCESS) {
			if (!uc)
				soft_nak(qp, resp, st);
			return;
		}
		if (atomic_write) {
			uint64_t value = 0;
			struct soft_seg v = {.ptr = (const uint8_t *)&value, .len = sizeof(value)};

			/* The 8 bytes land in one store: a reader sees all old or all new. */
			soft_copy_segs(nic, &v, 1, req->seg, req->nseg);
			soft_dma_store64(ptr, value);
		} else if (is_write) {
			struct soft_seg d = {.ptr = ptr, .len = req->length};

			soft_copy_segs(nic, &d, 1, req->seg, req->nseg);
		} else if (req->opcode == IBV_WR_RDMA_READ) {
			resp->read_data = ptr;
			resp->read_len = req->length;
		} else {
			uint64_t *target = ptr, orig;

			if (req->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
				orig = soft_dma_fetch_add(target, req->compare_add);
			else
				orig = soft_dma_cmp_swap(target, req->compare_add, req->swap);
			resp->atomic_orig = orig;
			qp->last_atomic_orig = orig;
			qp->last_atomic_psn = req->psn;
			qp->has_atomic = true;
		}
		if (req->opcode != IBV_WR_RDMA_WRITE_WITH_IMM) {
			resp->kind = SOFT_RESP_ACK;
			return;
		}
	}
	if (!soft_consume_recv(qp, &r)) {
		/* Only the engine consumes, one request at a time: what it saw posted is still there. */
		if (!uc) {
			resp->kind = SOFT_RESP_RNR;
			resp->rnr_timer = qp->attr.min_rnr_timer;
		}
		return;
	}
	if (!soft_recv_segs(qp, &r, dst, &cap)) {
		soft_recv_done(qp, req, r.wr_id, IBV_WC_LOC_PROT_ERR, 0);
		soft_nak(qp, resp, IBV_WC_REM_OP_ERR);
		return;
	}
	if (req->opcode != IBV_WR_RDMA_WRITE_WITH_IMM) {
		if (cap < req->length) {
			soft_recv_done(qp, req, r.wr_id, IBV_WC_LOC_LEN_ERR, 0);
			soft_nak(qp, resp, IBV_WC_REM_INV_REQ_ERR);
			return;
		}
		if (req->opcode == IBV_WR_SEND_WITH_INV &&
		    soft_invalidate(nic, req->invalidate_rkey, qp, true) != IBV_WC_SUCCESS) {
			soft_recv_done(qp, req, r.wr_id, IBV_WC_REM_INV_REQ_ERR, 0);
			soft_nak(qp, resp, IBV_WC_REM_INV_REQ_ERR);
			return;
		}
		soft_copy_segs(nic, dst, r.num_sge, req->seg, req->nseg);
	}
	soft_recv_done(qp, req, r.wr_id, IBV_WC_SUCCESS, req->length);
	resp->kind = SOFT_RESP_ACK;
}

/*
 * Only the connected remote (its GID and QPN, as the path names them) is
 * served on RC and UC: anything else is dropped and counted, as a NIC drops
 * a packet that does not match the QP's context.
 */
static bool soft_from_connected_remote(struct soft_nic *nic, const struct soft_qp *qp,
				       const struct soft_pkt *req)
{
	if (req->src_qpn == qp->attr.dest_qp_num &&
	    !memcmp(req->sgid.raw, qp->attr.ah_attr.grh.dgid.raw, sizeof(req->sgid.raw)))
		return true;
	atomic_fetch_add_explicit(&nic->foreign_drops, 1, memory_order_relaxed);
	return false;
}

/* A responder QP that posted this recently is in a conversation (a ping-pong of WRITEs). */
#define SOFT_TALKS_BACK_NS 1000000

static void soft_respond_rc(struct soft_nic *nic, struct soft_qp *qp, const struct soft_pkt *req,
			    struct soft_pkt *resp)
{
	int32_t diff;

	if (!soft_from_connected_remote(nic, qp, req))
		return;
	diff = soft_psn_diff(req->psn, qp->resp_psn);
	if (diff > 0)
		return; /* an earlier packet was lost: wait for the retransmission */
	if (diff < 0) {
		/* A duplicate: answer again without executing twice. */
		if (req->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || req->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			if (!qp->has_atomic || qp->last_atomic_psn != req->psn)
				return;
			resp->atomic_orig = qp->last_atomic_orig;
		} else if (req->opcode == IBV_WR_RDMA_READ) {
			void *ptr;

			if (soft_check_rkey(nic, qp, req->rkey, req->raddr, req->length,
					    IBV_ACCESS_REMOTE_READ, &ptr) != IBV_WC_SUCCESS)
				return;
			resp->read_data = ptr;
			resp->read_len = req->length;
		}
		resp->kind = SOFT_RESP_ACK;
		return;
	}
	soft_execute_rc(nic, qp, req, resp);
	if (resp->kind == SOFT_RESP_ACK)
		qp->resp_psn = (qp->resp_psn + 1) & 0xffffff;
	resp->talks_back = qp->last_post_ns && soft_now_ns() - qp->last_post_ns < SOFT_TALKS_BACK_NS;
}

/*
 * UC: no acknowledgement and no retransmission, so no duplicate to detect:
 * a gap in PSNs means a message was lost and the responder resynchronizes
 * on the one that arrived.
 */
static void soft_respond_uc(struct soft_nic *nic, struct soft_qp *qp, const struct soft_pkt *req)
{
	struct soft_pkt ignored = {.kind = SOFT_RESP_NONE};

	if (!soft_from_connected_remote(nic, qp, req))
		return;
	qp->resp_psn = (req->psn + 1) & 0xffffff;
	soft_execute_rc(nic, qp, req, &ignored);
}

void soft_respond(struct soft_nic *nic, struct soft_qp *requester, const struct soft_pkt *req,
		  struct soft_pkt *resp)
{
	struct soft_qp *qp;
	enum ibv_qp_state state;

	memset(resp, 0, sizeof(*resp));
	resp->kind = SOFT_RESP_NONE;
	resp->psn = req->psn;
	qp = soft_lookup_qp(nic, req->dst_qpn);
	if (!qp || qp->ibv.qp_type != req->qp_type) {
		if (req->qp_type == IBV_QPT_UD)
			atomic_fetch_add(&nic->ud_drops, 1);
		return;
	}
	if (qp != requester)
		soft_lock_nested(&qp->lock);
	state = qp->attr.qp_state;
	if (state == IBV_QPS_RTR || state == IBV_QPS_RTS || state == IBV_QPS_SQD ||
	    (state == IBV_QPS_SQE && req->qp_type == IBV_QPT_UD)) {
		if (req->qp_type == IBV_QPT_UD) {
			soft_respond_ud(nic, qp, req);
			resp->kind = SOFT_RESP_ACK;
		} else if (req->qp_type == IBV_QPT_UC) {
			soft_respond_uc(nic, qp, req);
		} else {
			soft_respond_rc(nic, qp, req, resp);
		}
	} else if (req->qp_type == IBV_QPT_UD) {
		atomic_fetch_add(&nic->ud_drops, 1);
	}
	if (qp != requester)
		soft_unlock(&qp->lock);
}
