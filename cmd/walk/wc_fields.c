/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * --verify: the fields of every completion that the walker can know from
 * its own records alone (no timing, no other client involved): the QP
 * number (valid whatever the status), and on success the opcode of the
 * work request, and byte_len where the verbs API defines it on a send
 * queue (RDMA READ: the bytes read; atomics: 8).
 */
#include "cmd/walk/actions.h"

static int expected_opcode(const struct wr_rec *w)
{
	if (w->is_recv)
		return IBV_WC_RECV; /* the walker sends no RDMA WRITE with immediate data */
	switch (w->action) {
	case ACT_READ:
		return IBV_WC_RDMA_READ;
	case ACT_WRITE:
		return IBV_WC_RDMA_WRITE;
	case ACT_FETCH_ADD:
		return IBV_WC_FETCH_ADD;
	case ACT_COMP_SWAP:
		return IBV_WC_COMP_SWAP;
	case ACT_BIND_MW_TYPE1:
	case ACT_BIND_MW_TYPE2:
		return IBV_WC_BIND_MW;
	default:
		return IBV_WC_SEND; /* SEND, SEND_WITH_IMM, SEND_WITH_INV */
	}
}

void walk_check_wc_fields(struct walk_client *c, const struct wr_rec *w, const struct qp_rec *r,
			  const struct ibv_wc *wc)
{
	const char *what = w->is_recv ? "receive" : walk_action_names[w->action];
	int op = expected_opcode(w);

	if (wc->qp_num != r->qp->qp_num)
		walk_stats_fail(
		    &c->stats,
		    "client %d #%llu: a %s posted to QP %u completed (%s) with qp_num %u; expected %u", c->id,
		    (unsigned long long)c->seq, what, r->qp->qp_num, ibv_wc_status_str(wc->status),
		    wc->qp_num, r->qp->qp_num);
	if (wc->status != IBV_WC_SUCCESS)
		return; /* the other fields are undefined on an error */
	if ((int)wc->opcode != op)
		walk_stats_fail(&c->stats,
				"client %d #%llu: a %s on QP %u completed with opcode %d; expected %d", c->id,
				(unsigned long long)c->seq, what, r->qp->qp_num, wc->opcode, op);
	else if ((op == IBV_WC_RDMA_READ && wc->byte_len != w->len) ||
		 ((op == IBV_WC_FETCH_ADD || op == IBV_WC_COMP_SWAP) && wc->byte_len != 8))
		walk_stats_fail(&c->stats,
				"client %d #%llu: a %s of %u bytes on QP %u completed with byte_len %u",
				c->id, (unsigned long long)c->seq, what, op == IBV_WC_RDMA_READ ? w->len : 8,
				r->qp->qp_num, wc->byte_len);
}
