/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The completer, as rxe_comp.c: what an answer does to the request at the
 * head of a QP's send queue (soft_handle_resp: the ACK completes it and
 * lands a READ's data or an atomic's original value, an RNR NAK rewinds
 * the queue for its timer, a NAK fails it), the failure of the head work
 * request, and what a lost peer does to the QPs waiting on it.  The
 * requester (req.c) and the receive entry (recv.c) call it with the QP
 * locked.
 */
#include "hw/soft/soft.h"

#include <string.h>

/* IB min_rnr_timer encoding, in microseconds (0 is the longest, 655.36 ms). */
static const uint32_t soft_rnr_us[32] = {
    655360, 10,	   20,	  30,	 40,	60,	80,	120,	160,	240,	320,
    480,    640,   960,	  1280,	 1920,	2560,	3840,	5120,	7680,	10240,	15360,
    20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

uint64_t soft_rnr_ns(uint8_t timer)
{
	return (uint64_t)soft_rnr_us[timer & 31] * 1000;
}

/* Local ACK timeout: 4.096 us * 2^timeout; 0 means wait forever. */
uint64_t soft_timeout_ns(const struct soft_qp *qp)
{
	return qp->attr.timeout ? 4096ull << qp->attr.timeout : 0;
}

/* Resolves the local SGEs of w into segments; status on a bad lkey or length. */
enum ibv_wc_status soft_local_segs(struct soft_qp *qp, struct soft_swqe *w, bool writable,
				   struct soft_seg *seg, uint64_t *total)
{
	*total = 0;
	if (w->inline_len || (w->wr.send_flags & IBV_SEND_INLINE)) {
		seg[0].ptr = w->inline_data;
		seg[0].len = w->inline_len;
		*total = w->inline_len;
		return IBV_WC_SUCCESS;
	}
	for (int i = 0; i < w->wr.num_sge; i++) {
		const struct ibv_sge *sge = &w->sge[i];
		struct soft_mr *mr = soft_lookup_lkey(qp->nic, sge->lkey);
		uint64_t base;

		seg[i].ptr = (const uint8_t *)(uintptr_t)sge->addr; /* an empty SGE's is never dereferenced */
		seg[i].len = sge->length;
		*total += sge->length;
		if (!sge->length)
			continue;
		if (!mr || mr->ibv.pd != qp->ibv.pd || (writable && !(mr->access & IBV_ACCESS_LOCAL_WRITE)))
			return IBV_WC_LOC_PROT_ERR;
		base = mr->iova;
		if (sge->addr < base || sge->addr - base > mr->ibv.length ||
		    sge->length > mr->ibv.length - (sge->addr - base))
			return IBV_WC_LOC_PROT_ERR;
		seg[i].ptr = soft_mr_ptr(mr, sge->addr);
	}
	if (*total > SOFT_MAX_MSG)
		return IBV_WC_LOC_LEN_ERR;
	return IBV_WC_SUCCESS;
}

/* Completes the head WR and moves the QP to its error state. */
void soft_fail_head(struct soft_qp *qp, enum ibv_wc_status status)
{
	struct soft_swqe *w = &qp->sq[qp->sq_head & qp->sq_mask];

	soft_complete_send(qp, w, status, 0);
	qp->sq_head++;
	if (qp->sq_next < qp->sq_head)
		qp->sq_next = qp->sq_head;
	soft_qp_error(qp);
}

uint32_t soft_payload_len(const struct soft_swqe *w)
{
	uint32_t total = 0;

	for (int i = 0; i < w->wr.num_sge; i++)
		total += w->sge[i].length;
	return w->inline_len ? w->inline_len : total;
}

void soft_handle_resp(struct soft_qp *qp, const struct soft_pkt *resp)
{
	struct soft_swqe *w;
	struct soft_seg seg[SOFT_MAX_SGE];
	uint64_t total;

	if (qp->sq_head == qp->sq_next)
		return;
	w = &qp->sq[qp->sq_head & qp->sq_mask];
	if (!w->sent || resp->psn != w->psn || resp->kind == SOFT_RESP_NONE)
		return;
	switch (resp->kind) {
	case SOFT_RESP_ACK:
		if (w->wr.opcode == IBV_WR_RDMA_READ) {
			if (soft_local_segs(qp, w, true, seg, &total) != IBV_WC_SUCCESS ||
			    total != resp->read_len) {
				soft_fail_head(qp, IBV_WC_LOC_PROT_ERR);
				return;
			}
			for (int i = 0, off = 0; i < w->wr.num_sge; off += seg[i].len, i++)
				soft_dma_pull(qp->nic, (void *)seg[i].ptr, resp->read_data + off,
					      resp->read_pid, seg[i].len);
			soft_count(&qp->nic->wire_payload_bytes, total);
		} else if (w->wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
			   w->wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			if (soft_local_segs(qp, w, true, seg, &total) != IBV_WC_SUCCESS) {
				soft_fail_head(qp, IBV_WC_LOC_PROT_ERR);
				return;
			}
			soft_dma_copy((void *)seg[0].ptr, &resp->atomic_orig, sizeof(resp->atomic_orig));
		}
		soft_complete_send(qp, w, IBV_WC_SUCCESS, soft_payload_len(w));
		qp->sq_head++;
		/*
		 * An ACK restarts the transport timer while requests remain
		 * outstanding, as InfiniBand's does: the new head may have been
		 * queued long ago behind large ones (64 x 1 MiB WRITEs take longer
		 * than the timeout to cross a slow wire) and is not late.
		 */
		if (qp->sq_head != qp->sq_next) {
			struct soft_swqe *next = &qp->sq[qp->sq_head & qp->sq_mask];

			if (next->sent && next->deadline_ns)
				next->deadline_ns = soft_now_ns() + soft_timeout_ns(qp);
		}
		break;
	case SOFT_RESP_RNR:
		if (qp->attr.rnr_retry != 7 && w->rnr_retries++ >= qp->attr.rnr_retry) {
			soft_fail_head(qp, IBV_WC_RNR_RETRY_EXC_ERR);
			return;
		}
		/* Go back: this WR and all after it are sent again when the RNR timer expires. */
		w->rnr_until_ns = soft_now_ns() + soft_rnr_ns(resp->rnr_timer);
		for (uint32_t i = qp->sq_head; i != qp->sq_next; i++)
			qp->sq[i & qp->sq_mask].sent = false;
		qp->sq_next = qp->sq_head;
		break;
	case SOFT_RESP_NAK:
		soft_fail_head(qp, resp->status);
		break;
	case SOFT_RESP_NONE:
		break;
	}
}

/*
 * The wire lost its connection to peer: every RC QP waiting on it fails with
 * RETRY_EXC_ERR when the request at its head has spent the QP's retry budget
 * (retry_cnt + 1 local ACK timeouts, counted from its transmission), as on a
 * NIC whose peer went silent, not at once: a program whose peer finished and
 * left while one of its requests was in flight (ibv_srq_pingpong's last
 * sends) still completes what it was waiting for first, however slow it is
 * (a sanitizer build, a loaded machine).  Nothing is resent: nothing can
 * answer.  A QP with no timer (timeout 0, "forever") fails at once instead
 * of hanging.
 */
void soft_peer_lost(struct soft_nic *nic, const union ibv_gid *peer)
{
	for (int i = 0; i < SOFT_MAX_QP; i++) {
		struct soft_qp *qp = nic->qps[i];

		if (!qp || qp->ibv.qp_type != IBV_QPT_RC)
			continue;
		pthread_mutex_lock(&qp->lock);
		if (qp->sq_head != qp->sq_next && qp->attr.ah_attr.is_global &&
		    memcmp(qp->attr.ah_attr.grh.dgid.raw, peer->raw, 16) == 0) {
			struct soft_swqe *h = &qp->sq[qp->sq_head & qp->sq_mask];

			if (h->sent && h->deadline_ns)
				h->peer_lost = true;
			else
				soft_fail_head(qp, IBV_WC_RETRY_EXC_ERR);
		}
		pthread_mutex_unlock(&qp->lock);
	}
}
