/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Where packets enter the soft NIC, as rxe_rcv() routes them to its
 * responder or completer: a request goes to soft_respond() (resp.c), a
 * response to soft_rx_response() here.  The wire (wire.c) and the delay
 * line (delay.c) both hand responses in through this one function; the
 * engine's loopback path (engine.c) already holds the requester's lock and
 * calls soft_handle_resp() itself.
 */
#include "hw/soft/soft.h"

void soft_rx_response(struct soft_nic *nic, uint32_t qpn, const struct soft_resp *resp)
{
	struct soft_qp *qp = soft_lookup_qp(nic, qpn);
	bool more;

	if (!qp || qp->ibv.qp_type != IBV_QPT_RC)
		return; /* destroyed meanwhile, or never ours */
	soft_lock(&qp->lock);
	soft_handle_resp(qp, resp);
	more = qp->sq_next != qp->sq_tail || qp->attr.qp_state == IBV_QPS_SQD;
	soft_unlock(&qp->lock);
	/* The answer may have opened the window, asked for a resend (RNR) or drained an SQD queue. */
	if (more)
		soft_ring_doorbell(qp);
}
