/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Posting work: post_send/post_recv validate each WR the way a NIC driver
 * does (EINVAL for a malformed WR, ENOMEM for a full queue, *bad_wr set) and
 * copy it into the QP's ring; the engine executes it (engine.c: a post for
 * the wire may run the engine's round on the posting thread).
 */
#include "hw/soft/soft.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

static enum ibv_wc_opcode soft_wc_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	case IBV_WR_BIND_MW:
		return IBV_WC_BIND_MW;
	case IBV_WR_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	case IBV_WR_ATOMIC_WRITE:
		return IBV_WC_ATOMIC_WRITE;
	default:
		return IBV_WC_SEND;
	}
}

void soft_complete_send(struct soft_qp *qp, struct soft_swqe *w, enum ibv_wc_status status, uint32_t byte_len)
{
	struct ibv_wc wc = {
	    .wr_id = w->wr.wr_id,
	    .status = status,
	    .opcode = soft_wc_opcode(w->wr.opcode),
	    .byte_len = byte_len,
	    .qp_num = qp->ibv.qp_num,
	};

	if (status == IBV_WC_SUCCESS && !w->signaled)
		return;
	soft_cq_push(qp->ibv.send_cq, &wc, false);
}

/* Puts qp on the NIC's run queue; returns whether it was not there yet. */
static bool soft_runq_add(struct soft_qp *qp)
{
	struct soft_nic *nic = qp->nic;
	bool wake = false;

	pthread_mutex_lock(&nic->runq_lock);
	if (!qp->queued) {
		qp->queued = true;
		qp->run_next = NULL;
		if (nic->runq_tail)
			nic->runq_tail->run_next = qp;
		else
			nic->runq_head = qp;
		nic->runq_tail = qp;
		atomic_store(&nic->runq_nonempty, true);
		wake = true;
	}
	pthread_mutex_unlock(&nic->runq_lock);
	return wake;
}

void soft_ring_doorbell(struct soft_qp *qp)
{
	if (soft_runq_add(qp))
		soft_engine_wake(qp->nic);
}

/* Whether the WR in slot w leaves this NIC over the wire. */
static bool soft_swqe_remote(const struct soft_qp *qp, const struct soft_swqe *w)
{
	if (qp->ibv.qp_type == IBV_QPT_UD)
		return !w->dgid_local;
	return qp->attr.ah_attr.is_global && !soft_gid_is_local(qp->nic, &qp->attr.ah_attr.grh.dgid);
}

static bool soft_opcode_ok(enum ibv_qp_type type, enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return true;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_BIND_MW:
	case IBV_WR_LOCAL_INV:
		return type == IBV_QPT_RC ||
		       type == IBV_QPT_UC; /* UC: no READ, atomics or SEND with invalidate */
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
	case IBV_WR_ATOMIC_WRITE:
		return type == IBV_QPT_RC;
	default:
		return false;
	}
}

static bool soft_carries_payload(enum ibv_wr_opcode op)
{
	return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_SEND_WITH_INV ||
	       op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM || op == IBV_WR_ATOMIC_WRITE;
}

/* Validates and copies one WR into slot w; returns 0 or an errno. */
static int soft_fill_swqe(struct soft_qp *qp, struct soft_swqe *w, const struct ibv_send_wr *wr)
{
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_send_sge ||
	    !soft_opcode_ok(qp->ibv.qp_type, wr->opcode))
		return EINVAL;
	w->wr = *wr;
	w->wr.next = NULL;
	w->wr.sg_list = w->sge;
	if (wr->num_sge)
		memcpy(w->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(w->sge[0]));
	w->inline_len = 0;
	if ((wr->send_flags & IBV_SEND_INLINE) && soft_carries_payload(wr->opcode)) {
		uint32_t total = 0;

		for (int i = 0; i < wr->num_sge; i++) {
			if (wr->sg_list[i].length > SOFT_MAX_INLINE - total)
				return EINVAL;
			memcpy(w->inline_data + total, (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			total += wr->sg_list[i].length;
		}
		w->inline_len = total;
	} else {
		w->wr.send_flags &= ~IBV_SEND_INLINE;
	}
	if (qp->ibv.qp_type == IBV_QPT_UD) {
		const struct soft_ah *ah = (const struct soft_ah *)wr->wr.ud.ah;

		if (!ah)
			return EINVAL;
		w->dgid_local = !ah->attr.is_global || soft_gid_is_local(qp->nic, &ah->attr.grh.dgid);
		w->dgid = ah->attr.grh.dgid;
		w->sgid_index = ah->attr.grh.sgid_index;
		w->dqpn = wr->wr.ud.remote_qpn;
		w->dqkey = wr->wr.ud.remote_qkey;
	}
	if (wr->opcode == IBV_WR_BIND_MW && !wr->bind_mw.mw)
		return EINVAL;
	w->signaled = qp->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
	w->sent = false;
	w->retries = w->rnr_retries = w->wire_waits = 0;
	w->peer_lost = false;
	w->deadline_ns = w->rnr_until_ns = 0;
	if (wr->opcode != IBV_WR_BIND_MW && wr->opcode != IBV_WR_LOCAL_INV) {
		w->psn = qp->next_psn;
		qp->next_psn = (qp->next_psn + 1) & 0xffffff;
	}
	return 0;
}

int soft_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	struct soft_qp *qp = to_soft_qp(ibqp);
	enum ibv_qp_state state;
	bool posted = false, remote = false;
	int err = 0;

	soft_lock(&qp->lock);
	qp->last_post_ns = soft_now_ns();
	state = qp->attr.qp_state;
	if (state == IBV_QPS_RESET || state == IBV_QPS_INIT || state == IBV_QPS_RTR)
		err = EINVAL;
	for (; wr && !err; wr = wr->next) {
		struct soft_swqe *w;

		if (qp->sq_tail - qp->sq_head >= qp->sq_size) {
			err = ENOMEM;
			break;
		}
		w = &qp->sq[qp->sq_tail & qp->sq_mask];
		err = soft_fill_swqe(qp, w, wr);
		if (err)
			break;
		if (state == IBV_QPS_ERR || state == IBV_QPS_SQE) {
			/* A QP in error completes new work at once, flushed. */
			soft_complete_send(qp, w, IBV_WC_WR_FLUSH_ERR, 0);
			continue;
		}
		remote |= soft_swqe_remote(qp, w);
		qp->sq_tail++;
		posted = true;
	}
	soft_unlock(&qp->lock);
	if (err)
		*bad_wr = wr;
	/*
	 * Work for the wire leaves from this thread when no round runs now
	 * (soft_app_round); otherwise whoever runs rounds, or the engine
	 * woken here, takes it.
	 */
	if (posted && soft_runq_add(qp)) {
		bool sent = remote && soft_app_round(qp->nic, false) &&
			    !atomic_load_explicit(&qp->nic->runq_nonempty, memory_order_relaxed);

		if (!sent)
			soft_engine_wake(qp->nic);
	}
	return err;
}

int soft_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct soft_qp *qp = to_soft_qp(ibqp);
	int err = 0;

	soft_lock(&qp->rq_lock);
	/* A QP on an SRQ has no receive queue: its receives are posted to the SRQ. */
	if (__atomic_load_n(&qp->ibv.state, __ATOMIC_ACQUIRE) == IBV_QPS_RESET || ibqp->srq)
		err = EINVAL;
	for (; wr && !err; wr = wr->next) {
		struct soft_rwqe *r;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_recv_sge) {
			err = EINVAL;
			break;
		}
		if (__atomic_load_n(&qp->ibv.state, __ATOMIC_ACQUIRE) == IBV_QPS_ERR) {
			struct ibv_wc wc = {.wr_id = wr->wr_id,
					    .status = IBV_WC_WR_FLUSH_ERR,
					    .opcode = IBV_WC_RECV,
					    .qp_num = ibqp->qp_num};

			soft_cq_push(ibqp->recv_cq, &wc, false);
			continue;
		}
		if (qp->rq_tail - qp->rq_head >= qp->rq_size) {
			err = ENOMEM;
			break;
		}
		r = &qp->rq[qp->rq_tail & qp->rq_mask];
		r->wr_id = wr->wr_id;
		r->num_sge = wr->num_sge;
		if (wr->num_sge)
			memcpy(r->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(r->sge[0]));
		qp->rq_tail++;
	}
	soft_unlock(&qp->rq_lock);
	if (err)
		*bad_wr = wr;
	return err;
}
