/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Probe script (rcprobe.h): opcodes a transport does not have (IBTA table
 * 37 / 9.8.3, ibv_post_send(3)).  On a UC QP: RDMA READ and the atomics;
 * on a UD QP: RDMA WRITE (with or without immediate data), READ and the
 * atomics.  Each, posted signaled,
 * must be refused at post, or complete with an error status, never
 * SUCCESS; nothing reaches the peer's receive queue and no byte of memory
 * changes.  Once the device took one (and completed it with an error) the
 * QP may be broken: the script stops there.
 */
#include "cmd/conform/rcp.h"

#include <stdio.h>
#include <string.h>

static const char *op_name(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
		return "RDMA_WRITE";
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return "RDMA_WRITE_WITH_IMM";
	case IBV_WR_RDMA_READ:
		return "RDMA_READ";
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return "ATOMIC_CMP_AND_SWP";
	default:
		return "ATOMIC_FETCH_AND_ADD";
	}
}

/* One forbidden WR on p->a; 1: the device took it (it completed with an error), 0: refused, -1: a failure. */
static int one(struct rcp *p, enum ibv_wr_opcode op, struct ibv_ah *ah, uint64_t wr_id)
{
	struct ibv_sge sge = {(uintptr_t)(p->buf + RCP_RDST), 8, p->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = wr_id,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED,
				 .imm_data = 0x1234},
			   *bad = NULL;
	const char *type = ah ? "UD" : "UC";
	struct ibv_wc wc;
	int rc;

	if (ah) {
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = p->b->qp_num;
		wr.wr.ud.remote_qkey = RCP_UD_QKEY;
	} else if (op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = (uintptr_t)(p->buf + RCP_TGT);
		wr.wr.atomic.rkey = p->mr->rkey;
		wr.wr.atomic.compare_add = 1;
		wr.wr.atomic.swap = 2;
	} else {
		wr.wr.rdma.remote_addr = (uintptr_t)(p->buf + RCP_TGT);
		wr.wr.rdma.rkey = p->mr->rkey;
	}
	if ((rc = hw_post_send(p->a, &wr, &bad))) {
		if (bad != &wr) {
			rcp_fail(p, "%s QP %u refused a %s at post (%d) but *bad_wr does not name it", type,
				 p->a->qp_num, op_name(op), rc);
			return -1;
		}
		return 0;
	}
	if (!rcp_poll1(p, p->scq, &wc))
		return -1;
	if (wc.status == IBV_WC_SUCCESS || wc.wr_id != wr_id) {
		rcp_fail(
		    p,
		    "%s QP %u took a %s (an opcode %s does not have) and completed it with %s (wr_id %llx)",
		    type, p->a->qp_num, op_name(op), type, ibv_wc_status_str(wc.status),
		    (unsigned long long)wc.wr_id);
		return -1;
	}
	return 1;
}

void rcp_case_opcodes(struct rcp *p)
{
	static const enum ibv_wr_opcode uc_ops[] = {IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
						    IBV_WR_ATOMIC_FETCH_AND_ADD};
	static const enum ibv_wr_opcode ud_ops[] = {IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM,
						    IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
						    IBV_WR_ATOMIC_FETCH_AND_ADD};
	bool ud = rng_bernoulli(p->rng, 0.5);
	const enum ibv_wr_opcode *ops = ud ? ud_ops : uc_ops;
	int n = ud ? 5 : 3, order[5];
	struct ibv_qp *rc_a, *rc_b, *ua = NULL, *ub = NULL;
	struct ibv_ah *ah = NULL;

	p->name = ud ? "opcodes: a UD QP has no RDMA and no atomics"
		     : "opcodes: a UC QP has no READ and no atomics";
	p->shape = (struct rcp_shape){
	    .scqe = RCP_CQE, .a_send_wr = 4, .a_recv_wr = 1, .b_recv_wr = 4, .a_rnr_retry = 7, .uc = !ud};
	if (rcp_setup(p))
		return;
	rc_a = p->a;
	rc_b = p->b;
	if (ud) {
		if (!(ua = rcp_qp(p, IBV_QPT_UD, p->scq, p->ocq)) ||
		    !(ub = rcp_qp(p, IBV_QPT_UD, p->ocq, p->rcq)) || !(ah = rcp_self_ah(p)) ||
		    rcp_bring(p, ua, NULL, IBV_QPS_RTS) || rcp_bring(p, ub, NULL, IBV_QPS_RTS))
			goto out;
		p->a = ua;
		p->b = ub;
	}
	/* B has a receive: a wrongly executed WRITE_WITH_IMM would take it. */
	if (rcp_recv1(p->b, p->base_id + 0x40,
		      (struct ibv_sge){(uintptr_t)(p->buf + RCP_RECV), 128, p->mr->lkey}))
		goto out;
	for (int i = 0; i < n; i++)
		order[i] = i;
	for (int i = n - 1; i > 0; i--) {
		int j = (int)rng_range(p->rng, 0, (uint64_t)i), x = order[i];

		order[i] = order[j];
		order[j] = x;
	}
	for (int i = 0; i < n; i++)
		if (one(p, ops[order[i]], ah, p->base_id + (uint64_t)i))
			break;
	if (!rcp_failed(p)) {
		rcp_wait_ns(1000000ull);
		rcp_expect_empty(p, p->rcq, "B's receive CQ (only opcodes the transport lacks were posted)");
	}
	rcp_check_memory(p);
out:
	rcp_ud_pair_free(p, rc_a, rc_b, ua, ub, ah);
}
