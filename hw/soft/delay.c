/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The delay_us fault as a delay line: each request is held for delay_us
 * and then served, while the engine goes on with everything else (other
 * QPs, the wire, later requests that are already due).  The delay is the
 * same for every packet, so the line is a FIFO.  A held request carries a
 * copy of its payload: the requester's buffers (UD completes at once) and
 * the wire's receive buffer move on meanwhile.  Engine thread only.
 */
#include "hw/soft/soft.h"

#include <stdlib.h>
#include <string.h>

struct soft_delayed {
	struct soft_delayed *next;
	uint64_t due_ns;
	uint64_t conn_id; /* the connection it came in on; 0: from a QP of this NIC */
	struct soft_req req;
	uint8_t payload[];
};

bool soft_delay_req(struct soft_nic *nic, const struct soft_req *req, uint64_t conn_id)
{
	struct soft_delayed *d;
	uint8_t *p;

	if (!nic->faults.delay_us)
		return false;
	d = malloc(sizeof(*d) + req->length * (req->nseg > 0));
	if (!d)
		return true; /* no memory to hold it: lost, as a congested link loses it */
	d->next = NULL;
	d->due_ns = soft_now_ns() + (uint64_t)nic->faults.delay_us * 1000;
	d->conn_id = conn_id;
	d->req = *req;
	p = d->payload;
	for (int i = 0; i < req->nseg; i++) {
		soft_dma_copy(p, req->seg[i].ptr, req->seg[i].len);
		p += req->seg[i].len;
	}
	d->req.nseg = req->nseg > 0;
	d->req.seg[0].ptr = d->payload;
	d->req.seg[0].len = (uint32_t)(p - d->payload);
	if (nic->delay_tail)
		nic->delay_tail->next = d;
	else
		nic->delay_head = d;
	nic->delay_tail = d;
	return true;
}

/* Serves one held request from a QP of this NIC and gives its requester the answer. */
static void soft_delay_serve_local(struct soft_nic *nic, const struct soft_req *req)
{
	struct soft_resp resp;

	soft_respond(nic, NULL, req, &resp);
	if (req->qp_type == IBV_QPT_RC && resp.kind != SOFT_RESP_NONE)
		soft_rx_response(nic, req->src_qpn, &resp);
}

bool soft_delay_run(struct soft_nic *nic, uint64_t now)
{
	bool ran = false;

	if (!nic->delay_head || nic->delay_head->due_ns > now)
		return false;
	pthread_rwlock_rdlock(&nic->obj_lock);
	while (nic->delay_head && nic->delay_head->due_ns <= now) {
		struct soft_delayed *d = nic->delay_head;

		nic->delay_head = d->next;
		if (!nic->delay_head)
			nic->delay_tail = NULL;
		if (d->conn_id)
			soft_wire_serve(nic, d->conn_id, &d->req);
		else
			soft_delay_serve_local(nic, &d->req);
		free(d);
		ran = true;
	}
	pthread_rwlock_unlock(&nic->obj_lock);
	return ran;
}

uint64_t soft_delay_next_ns(const struct soft_nic *nic)
{
	return nic->delay_head ? nic->delay_head->due_ns : 0;
}

void soft_delay_clear(struct soft_nic *nic)
{
	while (nic->delay_head) {
		struct soft_delayed *d = nic->delay_head;

		nic->delay_head = d->next;
		free(d);
	}
	nic->delay_tail = NULL;
}
