/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Probe script (rcprobe.h): zero-length operations (IBTA 9.4.1.1 and
 * 9.7.4.1.3, ibv_post_send(3)).  A message of no bytes touches no memory,
 * so a responder checks no R_Key and no address for it: a chain of
 * zero-length WRITEs, READs (RC), WRITE_WITH_IMMs and SENDs, each through
 * rkey 0, a random key, a key of another probe MR or the right one, at
 * address 0, a random one or a valid one, with no SGE or one of length 0,
 * all complete with SUCCESS; each WRITE_WITH_IMM and SEND takes one receive
 * (some with no SGE at all) with byte_len 0 and the immediate data; no
 * byte of memory changes, and a WRITE and a READ of 64 bytes after them
 * work as ever.
 */
#include "cmd/conform/rcp.h"

#include <stdio.h>
#include <string.h>

#define Z_MAX 8

static uint32_t odd_rkey(struct rcp *p)
{
	switch (rng_range(p->rng, 0, 3)) {
	case 0:
		return 0;
	case 1:
		return (uint32_t)rng_next(p->rng);
	case 2:
		return p->mr->rkey ^ 0x5a5a00u;
	default:
		return p->mr->rkey;
	}
}

static uint64_t odd_addr(struct rcp *p)
{
	switch (rng_range(p->rng, 0, 2)) {
	case 0:
		return 0;
	case 1:
		return rng_next(p->rng);
	default:
		return (uintptr_t)(p->buf + RCP_TGT + 8 * (uint32_t)rng_range(p->rng, 0, 255));
	}
}

static const char *op_name(enum ibv_wr_opcode op)
{
	return op == IBV_WR_RDMA_WRITE		  ? "WRITE"
	       : op == IBV_WR_RDMA_WRITE_WITH_IMM ? "WRITE_WITH_IMM"
	       : op == IBV_WR_RDMA_READ		  ? "READ"
						  : "SEND";
}

/* After the zero-length chain: a WRITE and (RC) a READ of 64 bytes through the right key. */
static void still_works(struct rcp *p)
{
	struct rcp_piece src = {RCP_SRC + RCP_SLOT, 64}, tgt = {RCP_TGT + RCP_SLOT, 64},
			 dst = {RCP_RDST + RCP_SLOT, 64};
	struct ibv_sge sge = {(uintptr_t)(p->buf + src.off), src.len, p->mr->lkey};
	struct rcp_exp w = rcp_done(p->base_id + 0x30, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE),
		       r = rcp_done(p->base_id + 0x31, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);

	if (rcp_post1(p, p->a, IBV_WR_RDMA_WRITE, w.wr_id, sge, (uintptr_t)(p->buf + tgt.off)))
		return;
	rcp_model_move(p, &src, 1, &tgt, 1);
	rcp_expect(p, p->scq, "A's send CQ (a WRITE after the zero-length ones)", &w, 1);
	if (rcp_failed(p))
		return;
	if (p->shape.uc) { /* UC completes once sent: B may place it later */
		rcp_wait_landed(p, tgt.off, tgt.len, "A's UC WRITE after the zero-length ones");
		return;
	}
	sge = (struct ibv_sge){(uintptr_t)(p->buf + dst.off), dst.len, p->mr->lkey};
	if (rcp_post1(p, p->a, IBV_WR_RDMA_READ, r.wr_id, sge, (uintptr_t)(p->buf + tgt.off)))
		return;
	rcp_model_move(p, &tgt, 1, &dst, 1);
	rcp_expect(p, p->scq, "A's send CQ (a READ after the zero-length ones)", &r, 1);
}

void rcp_case_zero(struct rcp *p)
{
	bool uc = rng_bernoulli(p->rng, 0.25);
	int n = (int)rng_range(p->rng, 2, Z_MAX), nr = 0;
	struct ibv_send_wr wr[Z_MAX], *bad;
	struct ibv_sge sge[Z_MAX];
	struct rcp_exp s[Z_MAX], r[Z_MAX];
	char desc[Z_MAX * 20] = "", who[sizeof(desc) + 64];

	p->name = uc ? "zero-length UC operations" : "zero-length RC operations";
	p->shape = (struct rcp_shape){.scqe = RCP_CQE,
				      .a_send_wr = Z_MAX + 2,
				      .a_recv_wr = 1,
				      .b_recv_wr = Z_MAX,
				      .a_rnr_retry = 7,
				      .uc = uc,
				      .sig_all = rng_bernoulli(p->rng, 0.3)};
	if (rcp_setup(p))
		return;
	for (int i = 0; i < n; i++) {
		static const enum ibv_wr_opcode ops[] = {IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM,
							 IBV_WR_SEND, IBV_WR_RDMA_READ};
		enum ibv_wr_opcode op = ops[rng_range(p->rng, 0, uc ? 2 : 3)];
		bool recv = op == IBV_WR_SEND || op == IBV_WR_RDMA_WRITE_WITH_IMM;

		sge[i] = (struct ibv_sge){(uintptr_t)(p->buf + RCP_RDST), 0, p->mr->lkey};
		wr[i] = (struct ibv_send_wr){.wr_id = p->base_id + (uint64_t)i,
					     .next = i + 1 < n ? &wr[i + 1] : NULL,
					     .sg_list = rng_bernoulli(p->rng, 0.5) ? sge + i : NULL,
					     .opcode = op,
					     .send_flags = IBV_SEND_SIGNALED,
					     .imm_data = (uint32_t)rng_next(p->rng)};
		wr[i].num_sge = wr[i].sg_list ? 1 : 0;
		wr[i].wr.rdma.rkey = odd_rkey(p);
		wr[i].wr.rdma.remote_addr = odd_addr(p);
		snprintf(desc + strlen(desc), sizeof(desc) - strlen(desc), "%s%s", i ? ", " : "",
			 op_name(op));
		s[i] = rcp_done(wr[i].wr_id, IBV_WC_SUCCESS,
				op == IBV_WR_RDMA_READ ? IBV_WC_RDMA_READ
				: op == IBV_WR_SEND    ? IBV_WC_SEND
						       : IBV_WC_RDMA_WRITE);
		if (!recv)
			continue;
		r[nr] = rcp_done(p->base_id + 0x40 + (uint64_t)nr, IBV_WC_SUCCESS,
				 op == IBV_WR_SEND ? IBV_WC_RECV : IBV_WC_RECV_RDMA_WITH_IMM);
		r[nr].check_len = true;
		r[nr].byte_len = 0;
		r[nr].imm = op == IBV_WR_RDMA_WRITE_WITH_IMM;
		r[nr].imm_data = wr[i].imm_data;
		{
			struct ibv_sge rs = {(uintptr_t)(p->buf + RCP_RECV + 64 * (uint32_t)nr), 16,
					     p->mr->lkey};
			struct ibv_recv_wr rw = {.wr_id = r[nr].wr_id,
						 .sg_list = &rs,
						 .num_sge = rng_bernoulli(p->rng, 0.3) ? 0 : 1},
					   *rbad;

			if (hw_post_recv(p->b, &rw, &rbad)) {
				rcp_fail(p, "B's receive %d (%d SGEs) refused at post", nr + 1, rw.num_sge);
				return;
			}
		}
		nr++;
	}
	if (hw_post_send(p->a, wr, &bad)) {
		rcp_fail(p, "a chain of zero-length operations (%s) refused at post (at WR %d)", desc,
			 (int)(bad - wr) + 1);
		return;
	}
	snprintf(who, sizeof(who), "A's send CQ (zero-length %s, odd rkeys and addresses)", desc);
	rcp_expect(p, p->scq, who, s, n);
	snprintf(who, sizeof(who), "B's receive CQ (zero-length %s)", desc);
	rcp_expect(p, p->rcq, who, r, nr);
	if (!rcp_failed(p))
		rcp_expect_state(p, p->b, "B after zero-length operations", IBV_QPS_RTS);
	if (!rcp_failed(p))
		rcp_expect_state(p, p->a, "A after zero-length operations", IBV_QPS_RTS);
	rcp_check_memory(p);
	if (!rcp_failed(p))
		still_works(p);
	rcp_check_memory(p);
}
