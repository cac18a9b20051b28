/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Probe scripts (rcprobe.h) about work that is only partly taken or only
 * partly cleaned away:
 *
 *  - a chain of WRITEs with one WR the QP cannot take (one SGE more than
 *    max_send_sge): ibv_post_send fails and *bad_wr names the first WR not
 *    posted; exactly the WRs before it complete and land, none after it;
 *  - a CQ shared by two QPs: moving one to RESET (or destroying it) may
 *    take that QP's completions out of the CQ, never the other QP's.
 */
#include "cmd/conform/rcp.h"

#define RCP_CHAIN_WR  8
#define RCP_CHAIN_LEN 32u
#define RCP_QUIET_NS  (5 * 1000000ull)

/* Polls cq for a while (the device's progress may ride on polls): nothing must come. */
static void quiet(struct rcp *p, struct ibv_cq *cq, const char *who)
{
	uint64_t end = clock_ns() + RCP_QUIET_NS;
	unsigned idle = 0;

	while (clock_ns() < end && !rcp_failed(p)) {
		rcp_expect_empty(p, cq, who);
		rcp_idle(&idle);
	}
}

void rcp_case_partial_post(struct rcp *p)
{
	struct ibv_send_wr wr[RCP_CHAIN_WR], *bad = NULL;
	struct ibv_sge sge[RCP_CHAIN_WR][RCP_MAX_SGE + 1];
	struct rcp_piece src[RCP_CHAIN_WR], tgt[RCP_CHAIN_WR];
	struct rcp_exp exp[RCP_CHAIN_WR];
	int n, refused, rc, j;

	p->name = "a chain refused part-way";
	p->shape = (struct rcp_shape){
	    .scqe = RCP_CQE, .a_send_wr = RCP_CHAIN_WR, .a_recv_wr = 1, .b_recv_wr = 1, .a_rnr_retry = 7};
	if (rcp_setup(p) || p->acap.max_send_sge > RCP_MAX_SGE)
		return;
	n = (int)rng_range(p->rng, 1, RCP_CHAIN_WR);
	refused = (int)rng_range(p->rng, 0, (uint64_t)n - 1);
	for (int i = 0; i < n; i++) {
		int ns = i == refused ? (int)p->acap.max_send_sge + 1 : 1;

		src[i] = (struct rcp_piece){RCP_SRC + (uint32_t)i * RCP_SLOT, RCP_CHAIN_LEN};
		tgt[i] = (struct rcp_piece){RCP_TGT + (uint32_t)i * RCP_SLOT +
						8 * (uint32_t)rng_range(p->rng, 0, 255),
					    RCP_CHAIN_LEN};
		for (int k = 0; k < ns; k++) /* the refused WR's SGEs split its bytes; the rest take none */
			sge[i][k] =
			    (struct ibv_sge){(uintptr_t)(p->buf + src[i].off + (k ? RCP_CHAIN_LEN : 0)),
					     k ? 0 : RCP_CHAIN_LEN, p->mr->lkey};
		wr[i] = (struct ibv_send_wr){.wr_id = p->base_id + (uint64_t)i,
					     .next = i + 1 < n ? &wr[i + 1] : NULL,
					     .sg_list = sge[i],
					     .num_sge = ns,
					     .opcode = IBV_WR_RDMA_WRITE,
					     .send_flags = IBV_SEND_SIGNALED};
		wr[i].wr.rdma.remote_addr = (uintptr_t)(p->buf + tgt[i].off);
		wr[i].wr.rdma.rkey = p->mr->rkey;
	}
	if (!(rc = hw_post_send(p->a, wr, &bad))) {
		rcp_fail(p, "a chain of %d WRITEs whose WR %d has max_send_sge + 1 = %u SGEs was accepted", n,
			 refused + 1, p->acap.max_send_sge + 1);
		return;
	}
	j = bad ? (int)(bad - wr) : -1;
	if (j < 0 || j > refused) {
		rcp_fail(p,
			 "ibv_post_send of %d WRs refused (%s) WR %d (max_send_sge + 1 SGEs) but *bad_wr is "
			 "%s (WR %d); expected a WR up to that one",
			 n, strerror(rc), refused + 1, j < 0 || j >= n ? "outside the chain" : "a later one",
			 j + 1);
		return;
	}
	/* The WRs before *bad_wr were posted: they run, in order; the others never do. */
	for (int i = 0; i < j; i++) {
		exp[i] = rcp_done(wr[i].wr_id, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
		rcp_model_move(p, &src[i], 1, &tgt[i], 1);
	}
	rcp_expect(p, p->scq, "A's send CQ (the WRs before *bad_wr)", exp, j);
	quiet(p, p->scq, "A's send CQ (WRs at or after *bad_wr were not posted)");
	rcp_check_memory(p);
	rcp_expect_state(p, p->a, "A after a refused post", IBV_QPS_RTS);
}

/*
 * A's receives are flushed (A to ERR) onto the CQ A shares with B's send
 * queue; B then goes to RESET or is destroyed: every one of A's flushed
 * receives must still be polled, in order.
 */
void rcp_case_shared_cq(struct rcp *p)
{
	int n = (int)rng_range(p->rng, 1, 4), rc = 0;
	bool destroy = rng_bernoulli(p->rng, 0.3);
	struct ibv_qp_attr reset = {.qp_state = IBV_QPS_RESET};
	uint32_t qpn_a;

	p->name = destroy ? "a QP destroyed on a shared CQ" : "a QP reset on a shared CQ";
	p->shape = (struct rcp_shape){
	    .scqe = RCP_CQE, .a_send_wr = 1, .a_recv_wr = 4, .b_recv_wr = 1, .a_rnr_retry = 7};
	if (rcp_setup(p))
		return;
	qpn_a = p->a->qp_num;
	for (int i = 0; i < n && !rc; i++)
		rc = rcp_recv1(
		    p->a, p->base_id + 0x40 + (uint64_t)i,
		    (struct ibv_sge){(uintptr_t)(p->buf + RCP_RECV + 64 * (uint32_t)i), 64, p->mr->lkey});
	if (rc || rcp_to_err(p->a))
		return;
	if (destroy ? hw_destroy_qp(p->b) : hw_modify_qp(p->b, &reset, IBV_QP_STATE))
		return;
	if (destroy)
		p->b = NULL;
	for (int i = 0; i < n; i++) {
		struct ibv_wc wc;
		uint64_t want = p->base_id + 0x40 + (uint64_t)i;

		if (!rcp_poll1(p, p->ocq, &wc)) {
			rcp_fail(
			    p, "%d of A's %d flushed receives were polled after B, sharing their CQ, was %s",
			    i, n, destroy ? "destroyed" : "reset");
			return;
		}
		if (wc.qp_num != qpn_a || wc.wr_id != want || wc.status != IBV_WC_WR_FLUSH_ERR) {
			rcp_fail(p,
				 "A's flushed receive %d after B's %s: qp_num %u wr_id %llx status %s; "
				 "expected %u "
				 "%llx %s",
				 i + 1, destroy ? "destruction" : "reset", wc.qp_num,
				 (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status), qpn_a,
				 (unsigned long long)want, ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR));
			return;
		}
	}
	rcp_expect_empty(p, p->ocq, "the CQ A and B share");
	rcp_check_memory(p);
}
