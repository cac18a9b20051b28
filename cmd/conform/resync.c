/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Probe script (rcprobe.h): a UC responder resynchronizes on the first
 * packet of a message (IBTA 9.7.5.1.3, rxe's check_psn).  UC never
 * retransmits, so a PSN other than the one expected means messages were
 * lost, and the responder takes the next message from its first packet
 * on.  A is reconnected with a send PSN d away from the receive PSN B
 * expects (behind or ahead; d from 1 to 2^22, now and then just 1): every
 * SEND, WRITE and WRITE_WITH_IMM it then posts, some longer than the path
 * MTU, lands, in order, and each SEND and WRITE_WITH_IMM takes B's
 * receives in the order they were posted.
 */
#include "cmd/conform/rcp.h"

#include <stdio.h>

#define RESYNC_OPS 5

void rcp_case_resync(struct rcp *p)
{
	static const enum ibv_wr_opcode ops[] = {IBV_WR_SEND, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM};
	bool ahead = rng_bernoulli(p->rng, 0.5);
	uint32_t d = rng_bernoulli(p->rng, 0.3) ? 1 : (uint32_t)rng_range(p->rng, 2, 1u << 22);
	int n = (int)rng_range(p->rng, 1, RESYNC_OPS), nr = 0;
	struct ibv_send_wr wr[RESYNC_OPS], *bad;
	struct ibv_sge sge[RESYNC_OPS];
	struct rcp_exp s[RESYNC_OPS], r[RESYNC_OPS];
	char who[128];

	p->name =
	    ahead ? "UC resync: messages after a PSN gap land" : "UC resync: messages at an old PSN land";
	p->shape = (struct rcp_shape){.scqe = RCP_CQE,
				      .a_send_wr = RESYNC_OPS,
				      .a_recv_wr = 1,
				      .b_recv_wr = RESYNC_OPS,
				      .a_rnr_retry = 7,
				      .uc = true};
	if (rcp_setup(p))
		return;
	if (rcp_reconnect_a_at(p, ahead ? p->psn_a + d : p->psn_a - d))
		return;
	for (int i = 0; i < n; i++) {
		enum ibv_wr_opcode op = ops[rng_range(p->rng, 0, 2)];
		uint32_t len = rng_bernoulli(p->rng, 0.3)
				   ? (uint32_t)rng_range(p->rng, RCP_SMALL_MSG, RCP_MAX_MSG)
				   : (uint32_t)rng_range(p->rng, 1, 64);
		struct rcp_piece from = {RCP_SRC + RCP_SLOT * (uint32_t)i, len},
				 to = {(op == IBV_WR_SEND ? RCP_RECV : RCP_TGT) + RCP_SLOT * (uint32_t)i,
				       len};

		sge[i] = (struct ibv_sge){(uintptr_t)(p->buf + from.off), len, p->mr->lkey};
		wr[i] = (struct ibv_send_wr){.wr_id = p->base_id + (uint64_t)i,
					     .next = i + 1 < n ? &wr[i + 1] : NULL,
					     .sg_list = sge + i,
					     .num_sge = 1,
					     .opcode = op,
					     .send_flags = IBV_SEND_SIGNALED,
					     .imm_data = (uint32_t)rng_next(p->rng)};
		wr[i].wr.rdma.remote_addr = (uintptr_t)(p->buf + to.off);
		wr[i].wr.rdma.rkey = p->mr->rkey;
		s[i] = rcp_done(wr[i].wr_id, IBV_WC_SUCCESS,
				op == IBV_WR_SEND ? IBV_WC_SEND : IBV_WC_RDMA_WRITE);
		rcp_model_move(p, &from, 1, &to, 1);
		if (op == IBV_WR_RDMA_WRITE)
			continue;
		/* A SEND's receive has room for it; a WRITE_WITH_IMM's has none (the data goes to its
		 * address). */
		if (rcp_recv1(p->b, p->base_id + 0x40 + (uint64_t)nr,
			      (struct ibv_sge){(uintptr_t)(p->buf + RCP_RECV + RCP_SLOT * (uint32_t)i),
					       op == IBV_WR_SEND ? len : 0, p->mr->lkey})) {
			rcp_fail(p, "B's receive %d refused at post", nr + 1);
			return;
		}
		r[nr] = rcp_done(p->base_id + 0x40 + (uint64_t)nr, IBV_WC_SUCCESS,
				 op == IBV_WR_SEND ? IBV_WC_RECV : IBV_WC_RECV_RDMA_WITH_IMM);
		r[nr].check_len = true;
		r[nr].byte_len = len;
		r[nr].imm = op == IBV_WR_RDMA_WRITE_WITH_IMM;
		r[nr].imm_data = wr[i].imm_data;
		nr++;
	}
	if (hw_post_send(p->a, wr, &bad)) {
		rcp_fail(p, "a chain of %d UC SENDs and WRITEs refused at post", n);
		return;
	}
	snprintf(who, sizeof(who), "A's send CQ (UC, A's PSNs start %u %s the one B expects)", d,
		 ahead ? "after" : "before");
	rcp_expect(p, p->scq, who, s, n);
	snprintf(who, sizeof(who), "B's receive CQ (UC, A's PSNs start %u %s the one B expects)", d,
		 ahead ? "after" : "before");
	rcp_expect(p, p->rcq, who, r, nr);
	if (!rcp_failed(p))
		rcp_wait_landed(p, RCP_TGT, RCP_AREA, "A's UC WRITEs after a PSN jump");
	rcp_check_memory(p);
	rcp_expect_state(p, p->b, "UC B after A's PSN jump", IBV_QPS_RTS);
}
