/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The one transmit point, as rxe_xmit_packet(): every packet this NIC sends,
 * a request or a response, leaves through soft_xmit.  The faults of
 * RDMATOOL_SOFT_FAULTS (faults.c) are drawn here, so every path gets them:
 *   drop     a request is lost before it leaves (RC retransmits);
 *   error    an RC request is answered REM_OP_ERR as a responder would
 *            refuse it, without leaving;
 *   corrupt  a request's payload leaves with one bit flipped (from a copy:
 *            the requester's memory is never touched);
 *   delay_us every packet, request or response, waits on the delay line
 *            (delay.c) before it leaves.
 * Then the path: a packet for this NIC's own GID goes straight into the
 * receive entry (recv.c), one for anyone else onto the wire (wire.c).
 */
#include "hw/soft/soft.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int soft_xmit_now(struct soft_nic *nic, struct soft_qp *held, struct soft_pkt *pkt)
{
	/* An answer goes back the way its request came. */
	if (!pkt->conn_id && soft_gid_is_local(nic, &pkt->dgid)) {
		soft_recv(nic, held, pkt);
		return 0;
	}
	return soft_wire_send(nic, pkt);
}

/* The responder's refusal of an RC request, made here: the error fault. */
static void soft_xmit_refuse(struct soft_nic *nic, struct soft_qp *held, const struct soft_pkt *req)
{
	struct soft_pkt nak = {
	    .type = SOFT_PKT_RSP,
	    .opcode = req->opcode,
	    .qp_type = req->qp_type,
	    .kind = SOFT_RESP_NAK,
	    .status = IBV_WC_REM_OP_ERR,
	    .src_qpn = req->dst_qpn,
	    .dst_qpn = req->src_qpn,
	    .psn = req->psn,
	    .sgid = req->dgid,
	    .dgid = req->sgid,
	};

	atomic_fetch_add(&nic->fault_errors, 1);
	soft_recv(nic, held, &nak);
}

/*
 * The corrupt fault: the payload, gathered into a copy with one bit flipped
 * in its middle byte, replaces the request's segments.  Returns the copy to
 * free once the packet left (NULL: nothing to corrupt, or no memory).
 */
static uint8_t *soft_xmit_corrupt(struct soft_nic *nic, struct soft_pkt *pkt)
{
	uint32_t len = 0, off = 0;
	uint8_t *copy;

	for (int i = 0; i < pkt->nseg; i++)
		len += pkt->seg[i].len;
	if (!len || !(copy = malloc(len)))
		return NULL;
	for (int i = 0; i < pkt->nseg; i++) {
		soft_dma_pull(nic, copy + off, pkt->seg[i].ptr, pkt->seg[i].pid, pkt->seg[i].len);
		off += pkt->seg[i].len;
	}
	copy[len / 2] ^= 0x20;
	atomic_fetch_add(&nic->fault_corrupts, 1);
	pkt->nseg = 1;
	pkt->seg[0].ptr = copy;
	pkt->seg[0].len = len;
	pkt->seg[0].pid = 0;
	pkt->stable = false;
	return copy;
}

int soft_xmit(struct soft_nic *nic, struct soft_qp *held, struct soft_pkt *pkt)
{
	struct soft_faults *f = &nic->faults;
	uint8_t *copy = NULL;
	int rc = 0;

	if (pkt->type == SOFT_PKT_REQ) {
		if (soft_fault_hit(f, f->drop)) {
			atomic_fetch_add(&nic->fault_drops, 1);
			return 0;
		}
		if (pkt->qp_type == IBV_QPT_RC && soft_fault_hit(f, f->error)) {
			soft_xmit_refuse(nic, held, pkt);
			return 0;
		}
		if (pkt->nseg && soft_fault_hit(f, f->corrupt))
			copy = soft_xmit_corrupt(nic, pkt);
	}
	if (!soft_delay_pkt(nic, pkt))
		rc = soft_xmit_now(nic, held, pkt);
	free(copy);
	return rc;
}
