/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Probe script (rcprobe.h): an RC responder goes by PSN (IBTA 9.7.5.1.1 and
 * 9.7.5.1.2).  A is reconnected with a send PSN d (1..6) away from the
 * receive PSN B expects:
 *
 *  - behind: A's first d requests carry PSNs B has seen (duplicates): each
 *    is acknowledged (SUCCESS at A) and not executed again: a duplicate
 *    SEND takes no receive, a duplicate WRITE writes nothing; from the
 *    (d+1)-th on, A's requests carry the PSN B expects and execute, their
 *    SENDs landing in B's receives in order;
 *  - ahead: A's requests all lie beyond the PSN B expects (as if earlier
 *    ones were lost): B executes none and waits; A runs out of transport
 *    retries (RETRY_EXC_ERR, the rest flushed), and nothing lands.
 */
#include "cmd/conform/rcp.h"

#include <stdio.h>
#include <string.h>

#define PSN_OPS 12

void rcp_case_psn(struct rcp *p)
{
	bool ahead = rng_bernoulli(p->rng, 0.3);
	uint32_t d = (uint32_t)rng_range(p->rng, 1, 6);
	int n = ahead ? (int)rng_range(p->rng, 1, 3) : (int)d + (int)rng_range(p->rng, 1, 5), nr = 0, ns = 0;
	struct ibv_send_wr wr[PSN_OPS], *bad;
	struct ibv_sge sge[PSN_OPS];
	struct rcp_exp s[PSN_OPS], r[PSN_OPS];
	char who[128];

	p->name = ahead ? "PSN: requests beyond the expected PSN execute nothing"
			: "PSN: duplicate requests are acknowledged, not executed";
	p->shape = (struct rcp_shape){
	    .scqe = RCP_CQE, .a_send_wr = PSN_OPS, .a_recv_wr = 1, .b_recv_wr = PSN_OPS, .a_rnr_retry = 7};
	if (ahead) {
		p->shape.timeout = (uint8_t)rng_range(p->rng, 1, 4);
		p->shape.retry_cnt = (uint8_t)rng_range(p->rng, 0, 1);
	}
	if (rcp_setup(p))
		return;
	/* B expects psn_a; A now starts d before (duplicates) or d after (a gap). */
	if (rcp_reconnect_a_at(p, ahead ? p->psn_a + d : p->psn_a - d))
		return;
	for (int i = 0; i < n; i++) {
		bool send = rng_bernoulli(p->rng, 0.5), runs = !ahead && i >= (int)d;
		struct rcp_piece from = {RCP_SRC + 64 * (uint32_t)i, (uint32_t)rng_range(p->rng, 1, 64)},
				 to = {(send ? RCP_RECV : RCP_TGT) + 128 * (uint32_t)(send ? nr : i),
				       from.len};

		sge[i] = (struct ibv_sge){(uintptr_t)(p->buf + from.off), from.len, p->mr->lkey};
		wr[i] = (struct ibv_send_wr){.wr_id = p->base_id + (uint64_t)i,
					     .next = i + 1 < n ? &wr[i + 1] : NULL,
					     .sg_list = sge + i,
					     .num_sge = 1,
					     .opcode = send ? IBV_WR_SEND : IBV_WR_RDMA_WRITE,
					     .send_flags = IBV_SEND_SIGNALED};
		wr[i].wr.rdma.remote_addr = (uintptr_t)(p->buf + RCP_TGT + 128 * (uint32_t)i);
		wr[i].wr.rdma.rkey = p->mr->rkey;
		s[i] = rcp_done(wr[i].wr_id,
				!ahead ? IBV_WC_SUCCESS
				: i    ? IBV_WC_WR_FLUSH_ERR
				       : IBV_WC_RETRY_EXC_ERR,
				send ? IBV_WC_SEND : IBV_WC_RDMA_WRITE);
		if (send) {
			/* Every SEND gets a receive at B; only those that execute may take one. */
			struct ibv_sge rs = {(uintptr_t)(p->buf + RCP_RECV + 128 * (uint32_t)ns), 128,
					     p->mr->lkey};
			struct ibv_recv_wr rw = {.wr_id = p->base_id + 0x40 + (uint64_t)ns++,
						 .sg_list = &rs,
						 .num_sge = 1},
					   *rbad;

			if (hw_post_recv(p->b, &rw, &rbad))
				return;
		}
		if (!runs)
			continue;
		if (send) {
			r[nr] = rcp_done(p->base_id + 0x40 + (uint64_t)nr, IBV_WC_SUCCESS, IBV_WC_RECV);
			r[nr].check_len = true;
			r[nr].byte_len = from.len;
			nr++;
		}
		rcp_model_move(p, &from, 1, &to, 1);
	}
	if (hw_post_send(p->a, wr, &bad)) {
		rcp_fail(p, "a chain of %d SENDs and WRITEs refused at post", n);
		return;
	}
	snprintf(who, sizeof(who), "A's send CQ (A's PSNs start %u %s the one B expects)", d,
		 ahead ? "after" : "before");
	rcp_expect(p, p->scq, who, s, n);
	snprintf(who, sizeof(who), "B's receive CQ (A's first %u requests %s)", ahead ? (unsigned)n : d,
		 ahead ? "beyond B's PSN" : "duplicates");
	rcp_expect(p, p->rcq, who, r, nr);
	if (!rcp_failed(p)) {
		if (ahead)
			rcp_wait_ns(2 * 1000000ull);
		rcp_expect_empty(p, p->rcq,
				 ahead ? "B's receive CQ (requests beyond B's PSN)"
				       : "B's receive CQ (duplicate SENDs take no receive)");
	}
	rcp_check_memory(p);
}
