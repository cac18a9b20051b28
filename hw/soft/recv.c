/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The one receive entry, as rxe_rcv(): every packet that reaches this NIC,
 * whichever path brought it (this NIC's own requester, the TCP wire, the
 * delay line), comes in through soft_recv.  A request goes to the responder
 * (resp.c), and its answer leaves through the transmit point (xmit.c); a
 * response goes to the completer of its QP (soft_handle_resp).
 */
#include "hw/soft/soft.h"

#include <string.h>

static bool soft_opcode_known(uint8_t op)
{
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
	case IBV_WR_ATOMIC_WRITE:
		return true;
	default:
		return false;
	}
}

/* Whether a packet from a wire is well formed; a malformed one is dropped, as a NIC drops a bad packet. */
static bool soft_pkt_sane(const struct soft_pkt *pkt)
{
	uint32_t payload = 0;
	bool carries;

	for (int i = 0; i < pkt->nseg && i < SOFT_MAX_SGE; i++) {
		if (pkt->seg[i].len > SOFT_MAX_MSG - payload)
			return false;
		payload += pkt->seg[i].len;
	}
	if (pkt->nseg < 0 || pkt->nseg > SOFT_MAX_SGE || payload > SOFT_MAX_MSG)
		return false;
	if (pkt->type == SOFT_PKT_RSP)
		return pkt->kind >= SOFT_RESP_ACK && pkt->kind <= SOFT_RESP_NAK &&
		       (pkt->kind != SOFT_RESP_NAK ||
			(pkt->status != IBV_WC_SUCCESS && pkt->status <= IBV_WC_TM_RNDV_INCOMPLETE));
	if (pkt->type != SOFT_PKT_REQ)
		return false;
	carries = pkt->opcode != IBV_WR_RDMA_READ && pkt->opcode != IBV_WR_ATOMIC_CMP_AND_SWP &&
		  pkt->opcode != IBV_WR_ATOMIC_FETCH_AND_ADD;
	return soft_opcode_known(pkt->opcode) &&
	       (pkt->qp_type == IBV_QPT_UD || pkt->qp_type == IBV_QPT_RC || pkt->qp_type == IBV_QPT_UC) &&
	       (carries ? payload == pkt->length : payload == 0) && pkt->length <= SOFT_MAX_MSG;
}

/* A response for one of this NIC's QPs: its completer runs it (locking the QP unless the caller holds it). */
static void soft_recv_response(struct soft_nic *nic, struct soft_qp *held, const struct soft_pkt *resp)
{
	struct soft_qp *qp = soft_lookup_qp(nic, resp->dst_qpn);
	bool more;

	if (!qp || qp->ibv.qp_type != IBV_QPT_RC)
		return; /* destroyed meanwhile, or never ours */
	if (qp == held) {
		soft_handle_resp(qp, resp); /* the requester's own loop looks for more work */
		return;
	}
	soft_lock(&qp->lock);
	soft_handle_resp(qp, resp);
	more = qp->sq_next != qp->sq_tail || qp->attr.qp_state == IBV_QPS_SQD;
	soft_unlock(&qp->lock);
	/* The answer may have opened the window, asked for a resend (RNR) or drained an SQD queue. */
	if (more)
		soft_ring_doorbell(qp);
}

/* Serves a request and sends the responder's answer back to its requester. */
static void soft_recv_request(struct soft_nic *nic, struct soft_qp *held, const struct soft_pkt *req)
{
	struct soft_pkt resp;

	soft_respond(nic, held, req, &resp);
	if (req->qp_type != IBV_QPT_RC || resp.kind == SOFT_RESP_NONE)
		return; /* UD and UC are unacknowledged */
	resp.type = SOFT_PKT_RSP;
	resp.opcode = req->opcode;
	resp.qp_type = req->qp_type;
	resp.src_qpn = req->dst_qpn;
	resp.dst_qpn = req->src_qpn;
	resp.sgid = req->dgid;
	resp.dgid = req->sgid;
	resp.conn_id = req->conn_id;
	resp.length = resp.read_data ? resp.read_len : 0;
	resp.nseg = resp.read_data ? 1 : 0;
	resp.stable = true; /* a READ's data stays in the responder's MR: a peer may pull it */
	soft_xmit(nic, held, &resp);
}

void soft_recv(struct soft_nic *nic, struct soft_qp *held, const struct soft_pkt *pkt)
{
	if (pkt->conn_id && !soft_pkt_sane(pkt))
		return;
	if (pkt->type == SOFT_PKT_REQ)
		soft_recv_request(nic, held, pkt);
	else
		soft_recv_response(nic, held, pkt);
}
