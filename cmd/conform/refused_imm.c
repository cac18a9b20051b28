/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Probe script (rcprobe.h): a WRITE_WITH_IMM the responder refuses (an
 * rkey without REMOTE_WRITE, or a range running past the MR's end) must
 * not lose a receive.  A receive is consumed only by a WRITE_WITH_IMM
 * that executes:
 *
 *  - RC: A gets REM_ACCESS_ERR (or REM_INV_REQ_ERR); B, moved to ERR if
 *    the device has not done so, completes each of its k receives exactly
 *    once, in the order posted, none with SUCCESS (the one the refused
 *    request may have taken with an error, the rest flushed);
 *  - UC: B drops the request and stays in RTS with its receives as they
 *    were (IBTA 9.7.5.1.5): A's SEND after it lands in B's first receive.
 * In both, nothing is written.
 */
#include "cmd/conform/rcp.h"

#include <stdio.h>
#include <string.h>

#define REFUSED_SLOT 6u /* TGT slot of the small MR */
#define REFUSED_RECV 4

/* The target of the refused WRITE: *raddr and *rkey through mr (made here); its length is len. */
static struct ibv_mr *refused_target(struct rcp *p, bool read_only, uint32_t len, uint64_t *raddr,
				     uint32_t *rkey, const char **why)
{
	unsigned char *at = p->buf + RCP_TGT + REFUSED_SLOT * RCP_SLOT;
	uint32_t size = 64 + 8 * (uint32_t)rng_range(p->rng, 0, 8);
	struct ibv_mr *mr = hw_reg_mr(p->pd, at, size,
				      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
					  (read_only ? 0 : IBV_ACCESS_REMOTE_WRITE));

	if (!mr)
		return NULL;
	*rkey = mr->rkey;
	if (read_only) {
		*raddr = (uintptr_t)at + 8 * (uint32_t)rng_range(p->rng, 0, 4);
		*why = "an rkey without REMOTE_WRITE";
	} else {
		/* Starts inside, ends past the MR: the whole request is refused, not clipped. */
		*raddr = (uintptr_t)at + size - (uint32_t)rng_range(p->rng, 1, len - 1);
		*why = "a range running past the MR's end";
	}
	return mr;
}

static int post_receives(struct rcp *p, int k)
{
	for (int i = 0; i < k; i++)
		if (rcp_recv1(p->b, p->base_id + 0x40 + (uint64_t)i,
			      (struct ibv_sge){(uintptr_t)(p->buf + RCP_RECV + 64 * (uint32_t)i), 64,
					       p->mr->lkey})) {
			rcp_fail(p, "B's receive %d refused at post", i + 1);
			return -1;
		}
	return 0;
}

/* RC: every receive completes exactly once, in order, none with SUCCESS. */
static void rc_receives_all_complete(struct rcp *p, int k, const char *why)
{
	struct ibv_wc wc;
	int got;

	if (rcp_to_err(p->b)) {
		rcp_fail(p, "B could not be moved to ERR after refusing a WRITE_WITH_IMM");
		return;
	}
	for (int i = 0; i < k && !rcp_failed(p); i++) {
		uint64_t want = p->base_id + 0x40 + (uint64_t)i;

		if ((got = rcp_poll1_within(p->rcq, &wc)) < 0)
			rcp_fail(p, "ibv_poll_cq of B's receive CQ returned %d", got);
		else if (!got)
			rcp_fail(p,
				 "B's receive %d of %d never completed within %llu ms after B refused a "
				 "WRITE_WITH_IMM through %s and went to ERR: the refused request consumed it",
				 i + 1, k, RCP_DEADLINE_NS / 1000000, why);
		else if (wc.wr_id != want)
			rcp_fail(
			    p,
			    "B's receive CQ gave wr_id %#llx (%s) as completion %d of %d after a refused "
			    "WRITE_WITH_IMM; expected receive %d, %#llx: a receive was lost or reordered",
			    (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status), i + 1, k, i + 1,
			    (unsigned long long)want);
		else if (wc.status == IBV_WC_SUCCESS)
			rcp_fail(p,
				 "B's receive %d completed with SUCCESS after a WRITE_WITH_IMM through %s "
				 "was refused",
				 i + 1, why);
	}
	rcp_expect_empty(p, p->rcq, "B's receive CQ (each receive completes once)");
}

/* UC: B kept its receives; A's SEND lands in the first. */
static void uc_receives_kept(struct rcp *p, const char *why)
{
	struct ibv_sge sge = {(uintptr_t)(p->buf + RCP_SRC + RCP_SLOT), 16, p->mr->lkey};
	struct rcp_exp s = rcp_done(p->base_id + 1, IBV_WC_SUCCESS, IBV_WC_SEND),
		       r = rcp_done(p->base_id + 0x40, IBV_WC_SUCCESS, IBV_WC_RECV);
	char who[128];

	r.check_len = true;
	r.byte_len = 16;
	if (rcp_post1(p, p->a, IBV_WR_SEND, s.wr_id, sge, 0)) {
		rcp_fail(p, "A's UC SEND after the refused WRITE_WITH_IMM refused at post");
		return;
	}
	memcpy(p->model + RCP_RECV, p->model + RCP_SRC + RCP_SLOT, 16);
	rcp_expect(p, p->scq, "A's send CQ (a UC SEND after a refused WRITE_WITH_IMM)", &s, 1);
	snprintf(who, sizeof(who), "B's receive CQ (a UC SEND after B dropped a WRITE_WITH_IMM through %s)",
		 why);
	rcp_expect(p, p->rcq, who, &r, 1);
	rcp_expect_empty(p, p->rcq, "B's receive CQ (one SEND, one receive taken)");
	rcp_expect_state(p, p->b, "UC B after dropping a WRITE_WITH_IMM it refused", IBV_QPS_RTS);
}

void rcp_case_refused_imm(struct rcp *p)
{
	bool uc = rng_bernoulli(p->rng, 0.4), read_only = rng_bernoulli(p->rng, 0.5);
	int k = uc ? 2 : (int)rng_range(p->rng, 1, REFUSED_RECV);
	/* 2 bytes at least: a range that starts inside the MR and ends past it needs 2. */
	uint32_t len = (uint32_t)rng_range(p->rng, 2, 256), rkey = 0;
	uint64_t raddr = 0;
	const char *why = "";
	struct ibv_sge sge;
	struct ibv_send_wr wr = {.wr_id = p->base_id,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				 .send_flags = IBV_SEND_SIGNALED,
				 .imm_data = (uint32_t)rng_next(p->rng)},
			   *bad;
	struct ibv_mr *mr;
	struct ibv_wc wc;

	p->name = uc ? "refused WRITE_WITH_IMM: a UC responder keeps its receives"
		     : "refused WRITE_WITH_IMM: every RC receive completes once";
	p->shape = (struct rcp_shape){.scqe = RCP_CQE,
				      .a_send_wr = 2,
				      .a_recv_wr = 1,
				      .b_recv_wr = REFUSED_RECV,
				      .a_rnr_retry = 7,
				      .uc = uc};
	if (rcp_setup(p))
		return;
	if (!(mr = refused_target(p, read_only, len, &raddr, &rkey, &why)))
		return;
	sge = (struct ibv_sge){(uintptr_t)(p->buf + RCP_SRC), len, p->mr->lkey};
	if (post_receives(p, k))
		goto out;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (hw_post_send(p->a, &wr, &bad)) {
		rcp_fail(p, "A's WRITE_WITH_IMM through %s refused at post", why);
		goto out;
	}
	if (uc) {
		struct rcp_exp s = rcp_done(wr.wr_id, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE); /* UC never knows */

		rcp_expect(p, p->scq, "A's send CQ (a UC WRITE_WITH_IMM B must refuse)", &s, 1);
		if (!rcp_failed(p))
			uc_receives_kept(p, why);
	} else if (rcp_poll1(p, p->scq, &wc)) {
		if (wc.wr_id != wr.wr_id ||
		    (wc.status != IBV_WC_REM_ACCESS_ERR && wc.status != IBV_WC_REM_INV_REQ_ERR))
			rcp_fail(p,
				 "A's WRITE_WITH_IMM of %u bytes through %s completed wr_id %#llx with %s; "
				 "expected "
				 "REM_ACCESS_ERR or REM_INV_REQ_ERR",
				 len, why, (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
		else
			rc_receives_all_complete(p, k, why);
	}
	rcp_check_memory(p); /* nothing written */
out:
	hw_dereg_mr(mr);
}
