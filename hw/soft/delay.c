/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The delay_us fault as a delay line inside the transmit point (xmit.c):
 * each packet is held for delay_us and then sent on its path, while the
 * engine goes on with everything else (other QPs, the wire, later packets
 * that are already due).  The delay is the same for every packet, so the
 * line is a FIFO.  A held packet carries a copy of its payload: the
 * requester's buffers (UD completes at once) and the responder's memory
 * move on meanwhile.  Round owner only.
 */
#include "hw/soft/soft.h"

#include <stdlib.h>
#include <string.h>

struct soft_delayed {
	struct soft_delayed *next;
	uint64_t due_ns;
	struct soft_pkt pkt;
	uint8_t payload[];
};

bool soft_delay_pkt(struct soft_nic *nic, const struct soft_pkt *pkt)
{
	struct soft_delayed *d;
	uint32_t len = 0;
	uint8_t *p;

	if (!nic->faults.delay_us)
		return false;
	for (int i = 0; i < pkt->nseg; i++)
		len += pkt->seg[i].len;
	d = malloc(sizeof(*d) + len);
	if (!d)
		return true; /* no memory to hold it: lost, as a congested link loses it */
	d->next = NULL;
	d->due_ns = soft_now_ns() + (uint64_t)nic->faults.delay_us * 1000;
	d->pkt = *pkt;
	p = d->payload;
	for (int i = 0; i < pkt->nseg; i++) {
		soft_dma_copy(p, pkt->seg[i].ptr, pkt->seg[i].len);
		p += pkt->seg[i].len;
	}
	d->pkt.nseg = pkt->nseg > 0;
	d->pkt.seg[0].ptr = d->payload;
	d->pkt.seg[0].len = len;
	d->pkt.seg[0].pid = 0;
	d->pkt.stable = false; /* the copy goes once the packet left */
	soft_count(&nic->wire_copied_bytes, len);
	if (nic->delay_tail)
		nic->delay_tail->next = d;
	else
		nic->delay_head = d;
	nic->delay_tail = d;
	return true;
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
		soft_xmit_now(nic, NULL, &d->pkt);
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
