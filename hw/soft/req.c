/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The requester, as rxe_req.c: runs a QP's send queue, in order, within
 * its window and batch budget, and hands each request as a packet to the
 * transmit point (xmit.c); runs the retransmission timer of the oldest
 * request in flight.  The scheduler (engine.c) calls it with the QP locked.
 */
#include "hw/soft/soft.h"

#include <string.h>

#define SOFT_WINDOW	 64	/* RC requests in flight per QP */
#define SOFT_BATCH	 16	/* requests one QP sends before the next QP's turn */
#define SOFT_BATCH_BYTES 262144 /* ... or bytes: the poster waits on the QP lock meanwhile */

/* Timeouts a request may spend still on the wire (soft_wire_in_flight) before they count as retries. */
#define SOFT_WIRE_WAITS 64

/* BIND_MW and LOCAL_INV: executed by this NIC, no packet. */
static enum ibv_wc_status soft_exec_local(struct soft_qp *qp, struct soft_swqe *w)
{
	if (w->wr.opcode == IBV_WR_LOCAL_INV)
		return soft_invalidate(qp->nic, w->wr.invalidate_rkey, qp, false);
	return soft_exec_bind(qp, to_soft_mw(w->wr.bind_mw.mw), w->wr.bind_mw.rkey, &w->wr.bind_mw.bind_info);
}

static void soft_build_req(struct soft_qp *qp, struct soft_swqe *w, struct soft_pkt *req)
{
	req->opcode = (uint8_t)w->wr.opcode;
	req->solicited = w->wr.send_flags & IBV_SEND_SOLICITED;
	req->qp_type = qp->ibv.qp_type;
	req->src_qpn = qp->ibv.qp_num;
	req->psn = w->psn;
	req->imm_data = w->wr.imm_data;
	req->invalidate_rkey = w->wr.invalidate_rkey;
	if (qp->ibv.qp_type == IBV_QPT_UD) {
		req->sgid = *soft_gid_at(qp->nic, w->sgid_index);
		req->dst_qpn = w->dqpn;
		/* A privileged remote Q_Key means the sending QP's own (IBA 10.2.5). */
		req->qkey = w->dqkey & SOFT_QKEY_PRIVILEGED ? qp->attr.qkey : w->dqkey;
		req->dgid = w->dgid_local ? qp->nic->gid : w->dgid;
		return;
	}
	req->sgid = *soft_gid_at(qp->nic, qp->attr.ah_attr.grh.sgid_index);
	req->dst_qpn = qp->attr.dest_qp_num;
	req->dgid = qp->attr.ah_attr.is_global ? qp->attr.ah_attr.grh.dgid : qp->nic->gid;
	switch (w->wr.opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_WRITE:
		req->rkey = w->wr.wr.rdma.rkey;
		req->raddr = w->wr.wr.rdma.remote_addr;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		req->rkey = w->wr.wr.atomic.rkey;
		req->raddr = w->wr.wr.atomic.remote_addr;
		req->compare_add = w->wr.wr.atomic.compare_add;
		req->swap = w->wr.wr.atomic.swap;
		break;
	default:
		break;
	}
}

/*
 * Sends the WR at sq_next through the transmit point (xmit.c).  Returns false when a
 * local error must wait for the work before it to complete first.
 */
static bool soft_transmit(struct soft_qp *qp, struct soft_swqe *w, uint64_t now)
{
	struct soft_nic *nic = qp->nic;
	struct soft_pkt req;
	enum ibv_wc_status st;
	uint64_t total;
	bool is_atomic =
	    w->wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP || w->wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
	bool is_read = w->wr.opcode == IBV_WR_RDMA_READ;
	bool is_inline = w->inline_len || (w->wr.send_flags & IBV_SEND_INLINE);

	memset(&req, 0, sizeof(req));
	req.type = SOFT_PKT_REQ;
	/* RC keeps the WR (and its buffers) until the ACK: the responder may pull the payload from there. */
	req.stable = qp->ibv.qp_type == IBV_QPT_RC;
	soft_build_req(qp, w, &req);
	st = soft_local_segs(qp, w, is_read || is_atomic, req.seg, &total);
	if (st == IBV_WC_SUCCESS && (is_atomic || w->wr.opcode == IBV_WR_ATOMIC_WRITE) && total != 8)
		st = IBV_WC_LOC_LEN_ERR;
	if (st == IBV_WC_SUCCESS && qp->ibv.qp_type == IBV_QPT_UD && total > SOFT_MTU)
		st = IBV_WC_LOC_LEN_ERR;
	if (st != IBV_WC_SUCCESS) {
		if (qp->sq_next != qp->sq_head)
			return false;
		qp->sq_next++;
		soft_fail_head(qp, st);
		return true;
	}
	req.length = (uint32_t)total;
	req.nseg = is_read || is_atomic ? 0 : is_inline ? 1 : w->wr.num_sge;
	w->sent = true;
	w->deadline_ns = soft_timeout_ns(qp) ? now + soft_timeout_ns(qp) : 0;
	qp->sq_next++;
	if ((int32_t)(qp->sq_next - qp->sq_started) > 0)
		qp->sq_started = qp->sq_next;
	/* To this NIC the answer comes back before soft_xmit returns, to the completer. */
	if (soft_xmit(nic, qp, &req) && qp->ibv.qp_type == IBV_QPT_RC) {
		/* The peer cannot be reached at all: as if every retry went unanswered. */
		if (qp->sq_head == qp->sq_next - 1)
			soft_fail_head(qp, IBV_WC_RETRY_EXC_ERR);
		return true;
	}
	if (qp->ibv.qp_type != IBV_QPT_RC) {
		/* UD and UC are unreliable: complete once it left the port. */
		soft_complete_send(qp, w, IBV_WC_SUCCESS, (uint32_t)total);
		qp->sq_head++;
		return true;
	}
	return true;
}

/*
 * RTS starts new WRs; SQD only sends again what it started before (after an
 * RNR NAK or a timeout rewound sq_next): IBTA 10.3.1, in-progress messages
 * complete, no new one begins.
 */
static bool soft_may_transmit(const struct soft_qp *qp)
{
	return qp->attr.qp_state == IBV_QPS_RTS ||
	       (qp->attr.qp_state == IBV_QPS_SQD && (int32_t)(qp->sq_started - qp->sq_next) > 0);
}

/*
 * Runs a QP's send queue as far as it can, but at most SOFT_BATCH requests
 * or about SOFT_BATCH_BYTES (so the poster and other QPs get their turn); qp->lock held.  Returns
 * whether it stopped on that budget with sendable work left.
 */
bool soft_qp_progress(struct soft_qp *qp, uint64_t now)
{
	struct soft_nic *nic = qp->nic;
	int budget = SOFT_BATCH;
	uint64_t bytes = 0;

	/* Retransmission timer of the oldest request in flight. */
	if (qp->sq_head != qp->sq_next) {
		struct soft_swqe *h = &qp->sq[qp->sq_head & qp->sq_mask];

		bool due = h->sent && h->deadline_ns && now >= h->deadline_ns;

		if (due && h->peer_lost) {
			/* Nothing can answer a retry, but the QP's retry budget runs out as a NIC's would. */
			if (h->retries++ >= qp->attr.retry_cnt || !soft_timeout_ns(qp)) {
				soft_fail_head(qp, IBV_WC_RETRY_EXC_ERR);
				return false;
			}
			h->deadline_ns = now + soft_timeout_ns(qp);
		} else if (due && h->wire_waits < SOFT_WIRE_WAITS && qp->attr.ah_attr.is_global &&
			   soft_wire_in_flight(nic, &qp->attr.ah_attr.grh.dgid)) {
			/*
			 * Not lost, still on its way: a NIC's timer runs from the
			 * transmission.  A slow or starved peer fills the socket
			 * (64 KiB WRITEs, 128 deep), and resending what is queued
			 * behind it only adds to the queue until retries run out.
			 * Bounded: a peer whose host vanished never acknowledges.
			 */
			h->wire_waits++;
			h->deadline_ns = now + soft_timeout_ns(qp);
		} else if (due) {
			if (h->retries++ >= qp->attr.retry_cnt) {
				soft_fail_head(qp, IBV_WC_RETRY_EXC_ERR);
				return false;
			}
			for (uint32_t i = qp->sq_head; i != qp->sq_next; i++)
				qp->sq[i & qp->sq_mask].sent = false;
			qp->sq_next = qp->sq_head;
		}
	}
	while (qp->sq_next != qp->sq_tail && soft_may_transmit(qp)) {
		struct soft_swqe *w = &qp->sq[qp->sq_next & qp->sq_mask];
		bool idle = qp->sq_next == qp->sq_head;

		if (w->rnr_until_ns && now < w->rnr_until_ns)
			break;
		if (w->wr.opcode == IBV_WR_BIND_MW || w->wr.opcode == IBV_WR_LOCAL_INV) {
			enum ibv_wc_status st;

			if (!idle)
				break; /* completes in order, after the work before it */
			st = soft_exec_local(qp, w);
			qp->sq_next++;
			if (st != IBV_WC_SUCCESS) {
				soft_fail_head(qp, st);
				return false;
			}
			soft_complete_send(qp, w, IBV_WC_SUCCESS, 0);
			qp->sq_head++;
			continue;
		}
		if (!idle &&
		    ((w->wr.send_flags & IBV_SEND_FENCE) || qp->sq_next - qp->sq_head >= SOFT_WINDOW))
			break;
		if (!budget-- || bytes >= SOFT_BATCH_BYTES)
			return true;
		bytes += soft_payload_len(w);
		if (!soft_transmit(qp, w, now) || atomic_load(&nic->stop))
			break;
	}
	if (qp->attr.qp_state == IBV_QPS_SQD && qp->sqd_notify && !soft_sq_draining(qp)) {
		qp->sqd_notify = false;
		soft_async_event(qp->ibv.context, IBV_EVENT_SQ_DRAINED, qp);
	}
	return false;
}

bool soft_qp_waits(const struct soft_qp *qp)
{
	return qp->sq_head != qp->sq_tail &&
	       (qp->attr.qp_state == IBV_QPS_RTS || qp->attr.qp_state == IBV_QPS_SQD);
}
