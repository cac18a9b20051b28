/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Probe script (rcprobe.h): an MR registered at an IOVA of its own
 * (ibv_reg_mr_iova(3)): its lkey and rkey take addresses in that IOVA
 * space, not the buffer's virtual addresses.  Through it B's memory takes
 * a WRITE and answers a READ, and A gathers a SEND; a WRITE through its
 * rkey at the buffer's virtual address lies outside the region and fails
 * with REM_ACCESS_ERR.  A device that ignores the IOVA fails one or the
 * other.  Where ibv_reg_mr_iova is refused there is nothing to judge.
 */
#include "cmd/conform/rcp.h"

#define IOVA_SLOT (RCP_TGT + 6 * RCP_SLOT) /* the IOVA MR's memory: one TGT slot */

static int post_keyed(struct rcp *p, enum ibv_wr_opcode op, uint64_t wr_id, struct ibv_sge sge, uint64_t raddr,
		      uint32_t rkey)
{
	int rc;

	if ((rc = rcp_post1_through(p->a, op, wr_id, sge, raddr, rkey)))
		rcp_fail(p, "a WR through the IOVA MR refused at post: %s", strerror(rc));
	return rc;
}

static struct rcp_exp done_len(uint64_t wr_id, enum ibv_wc_opcode op, uint32_t len)
{
	struct rcp_exp e = rcp_done(wr_id, IBV_WC_SUCCESS, op);

	e.check_len = true;
	e.byte_len = len;
	return e;
}

void rcp_case_iova(struct rcp *p)
{
	uint64_t va = (uintptr_t)(p->buf + IOVA_SLOT), iova;
	uint32_t off = 8 * (uint32_t)rng_range(p->rng, 0, 255), len = (uint32_t)rng_range(p->rng, 1, 1024);
	struct rcp_piece src = {RCP_SRC + (uint32_t)rng_range(p->rng, 0, 2048), len}, at = {IOVA_SLOT + off, len};
	struct rcp_piece rdst = {RCP_RDST + 64, len}, recv = {RCP_RECV, len};
	struct ibv_mr *mr2;
	struct rcp_exp e;

	p->name = "an MR at an IOVA of its own: WRITE, READ and SEND by IOVA, a WRITE by virtual address refused";
	p->shape = (struct rcp_shape){
	    .scqe = RCP_CQE, .a_send_wr = 4, .a_recv_wr = 1, .b_recv_wr = 2, .a_rnr_retry = 7};
	if (rcp_setup(p))
		return;
	/* Page offset kept, far from the buffer (and never overlapping it), varied per run. */
	iova = (va & 4095) | ((uint64_t)rng_range(p->rng, 1, 0x7fff) << 28);
	if (iova < va + RCP_SLOT && va < iova + RCP_SLOT)
		iova ^= 1ull << 44;
	if (off + len > RCP_SLOT)
		len = RCP_SLOT - off, at.len = src.len = rdst.len = recv.len = len;
	if (!(mr2 = hw_reg_mr_iova(p->pd, p->buf + IOVA_SLOT, RCP_SLOT, iova,
				    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ))) {
		p->abandoned = true;
		return;
	}
	/* A WRITE lands at the slot's byte `off`, named by its IOVA. */
	if (post_keyed(p, IBV_WR_RDMA_WRITE, p->base_id,
		       (struct ibv_sge){(uintptr_t)(p->buf + src.off), len, p->mr->lkey}, iova + off, mr2->rkey))
		goto out;
	rcp_model_move(p, &src, 1, &at, 1);
	e = rcp_done(p->base_id, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	rcp_expect(p, p->scq, "A's send CQ (a WRITE through the IOVA MR's rkey)", &e, 1);
	/* A READ of the same bytes by IOVA. */
	if (rcp_failed(p) || post_keyed(p, IBV_WR_RDMA_READ, p->base_id + 1,
					(struct ibv_sge){(uintptr_t)(p->buf + rdst.off), len, p->mr->lkey},
					iova + off, mr2->rkey))
		goto out;
	rcp_model_move(p, &at, 1, &rdst, 1);
	e = done_len(p->base_id + 1, IBV_WC_RDMA_READ, len);
	rcp_expect(p, p->scq, "A's send CQ (a READ through the IOVA MR's rkey)", &e, 1);
	/* A SEND gathered through the IOVA MR's lkey, at the IOVA. */
	if (rcp_failed(p) ||
	    rcp_recv1(p->b, p->base_id + 0x40, (struct ibv_sge){(uintptr_t)(p->buf + recv.off), RCP_SLOT, p->mr->lkey}) ||
	    post_keyed(p, IBV_WR_SEND, p->base_id + 2, (struct ibv_sge){iova + off, len, mr2->lkey}, 0, 0))
		goto out;
	rcp_model_move(p, &at, 1, &recv, 1);
	e = done_len(p->base_id + 0x40, IBV_WC_RECV, len);
	rcp_expect(p, p->rcq, "B's receive CQ (a SEND gathered by the IOVA MR's lkey)", &e, 1);
	e = rcp_done(p->base_id + 2, IBV_WC_SUCCESS, IBV_WC_SEND);
	rcp_expect(p, p->scq, "A's send CQ (a SEND gathered by the IOVA MR's lkey)", &e, 1);
	/* By virtual address, the rkey names nothing. */
	if (rcp_failed(p) || post_keyed(p, IBV_WR_RDMA_WRITE, p->base_id + 3,
					(struct ibv_sge){(uintptr_t)(p->buf + src.off), len, p->mr->lkey}, va + off,
					mr2->rkey))
		goto out;
	e = rcp_done(p->base_id + 3, IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_WRITE);
	rcp_expect(p, p->scq, "A's send CQ (a WRITE through the IOVA MR's rkey at the buffer's virtual address)", &e,
		   1);
	rcp_expect_state(p, p->a, "A after a remote access error", IBV_QPS_ERR);
	rcp_check_memory(p);
out:
	hw_dereg_mr(mr2);
}
