/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Probe script (rcprobe.h): the ibv_wr_* helpers the ext probe does not
 * use, in one batch of A's (made by ibv_create_qp_ex): ibv_wr_send with
 * ibv_wr_set_sge_list, ibv_wr_send_imm with ibv_wr_set_inline_data_list
 * (or an SGE list when the QP has no room inline), ibv_wr_rdma_write_imm
 * with ibv_wr_set_inline_data (or one SGE), ibv_wr_rdma_read with
 * ibv_wr_set_sge_list; and, where the device has type-2 windows, half the
 * time ibv_wr_send_inv of a window B bound on its QP, and, where the device
 * has it, half the time ibv_wr_atomic_write of 8 bytes that each differ
 * from the target's.  A WR given an SGE list gathers from it even when its
 * wr_flags say IBV_SEND_INLINE.  About a quarter of the WRs but the last
 * lack IBV_SEND_SIGNALED and complete silently.  Every completion of both sides (wr_id,
 * opcode, byte_len, immediate data, the invalidated rkey) and every byte
 * must be as the verbs say.
 */
#include "cmd/conform/rcp.h"

#include <string.h>

#define WRAPI_N 6 /* ibv_wr_send_inv only with a window to invalidate; the atomic write, where there is one */

/* A type-2 window over 64 bytes of B's memory, bound on B's QP (SEND_WITH_INV's target); 0: done. */
static int bind_b_window(struct rcp *p, struct ibv_mw **mw, uint32_t *rkey)
{
	struct ibv_send_wr wr = {.wr_id = p->base_id + 0x95, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	struct rcp_exp e = rcp_done(wr.wr_id, IBV_WC_SUCCESS, IBV_WC_BIND_MW);

	if (!(*mw = hw_alloc_mw(p->pd, IBV_MW_TYPE_2)))
		return -1;
	*rkey = ibv_inc_rkey((*mw)->rkey);
	wr.bind_mw.mw = *mw;
	wr.bind_mw.rkey = *rkey;
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){.mr = p->mr,
							 .addr = (uintptr_t)(p->buf + RCP_TGT + 7 * RCP_SLOT),
							 .length = 64,
							 .mw_access_flags = IBV_ACCESS_REMOTE_WRITE};
	if (hw_post_send(p->b, &wr, &bad))
		return -1;
	rcp_expect(p, p->ocq, "B's send CQ (a type-2 bind on B's QP)", &e, 1);
	return rcp_failed(p) ? -1 : 0;
}

/* Up to 3 pieces of `len` bytes at `off` (gaps between them), as SGEs or as inline buffers. */
static void data_of(struct rcp *p, struct ibv_qp_ex *qx, uint32_t off, uint32_t len, bool inl,
		    struct rcp_piece *pc, int *n)
{
	struct ibv_sge sge[RCP_MAX_SGE];
	struct ibv_data_buf db[RCP_MAX_SGE];
	int k = (int)rng_range(p->rng, 1, (uint64_t)imin(3, (int)p->acap.max_send_sge));

	*n = rcp_pieces(p, off, len, k, 16, pc);
	rcp_sges(p, pc, *n, sge);
	if (!inl) {
		ibv_wr_set_sge_list(qx, (size_t)*n, sge);
		return;
	}
	for (int i = 0; i < *n; i++)
		db[i] =
		    (struct ibv_data_buf){.addr = (void *)(uintptr_t)sge[i].addr, .length = sge[i].length};
	if (*n == 1)
		ibv_wr_set_inline_data(qx, db[0].addr, db[0].length);
	else
		ibv_wr_set_inline_data_list(qx, (size_t)*n, db);
}

/*
 * One batch of exactly max_send_wr WRITEs on an empty send queue: the
 * ibv_wr_* API takes as many WRs as the queue has room for
 * (ibv_wr_post(3)), whatever it allocates on the way.
 */
static void batch_fills_sq(struct rcp *p)
{
	static const uint32_t sizes[] = {1, 2, 7, 16, 17, 32, 33};
	struct rcp_exp e[RCP_MAX_WR];
	struct ibv_wc wc[RCP_MAX_WR];
	struct ibv_qp_ex *qx;
	uint32_t n;
	int rc;

	p->name = "extended verbs: one ibv_wr_* batch as long as the send queue";
	p->shape = (struct rcp_shape){.scqe = RCP_CQE,
				      .a_send_wr = sizes[rng_range(p->rng, 0, 6)],
				      .a_recv_wr = 1,
				      .b_recv_wr = 1,
				      .a_rnr_retry = 7,
				      .ext = true};
	if (rcp_setup(p) || !(qx = hw_qp_to_qp_ex(p->a)))
		return;
	if ((n = p->acap.max_send_wr) > RCP_MAX_WR) { /* the device rounded far up: too long a batch for here */
		p->abandoned = true;
		return;
	}
	ibv_wr_start(qx);
	for (uint32_t i = 0; i < n; i++) {
		struct rcp_piece src = {RCP_SRC + 8 * (uint32_t)rng_range(p->rng, 0, 511), 8},
				 dst = {RCP_TGT + 8 * i, 8};

		qx->wr_id = p->base_id + i;
		qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(qx, p->mr->rkey, (uintptr_t)(p->buf + dst.off));
		ibv_wr_set_sge(qx, p->mr->lkey, (uintptr_t)(p->buf + src.off), 8);
		rcp_model_move(p, &src, 1, &dst, 1);
		e[i] = rcp_done(qx->wr_id, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	}
	if ((rc = ibv_wr_complete(qx))) {
		rcp_fail(p, "ibv_wr_complete of %u WRITEs on an empty send queue of max_send_wr %u returned %d (%s)",
			 n, n, rc, strerror(rc));
		return;
	}
	rcp_judge(p, p->scq, "A's extended send CQ (a batch as long as the send queue)", wc,
		  rcp_poll_ex(p, p->scq_ex, wc, (int)n), e, (int)n);
	rcp_expect_empty(p, p->scq, "A's send CQ");
	rcp_check_memory(p);
}

void rcp_case_wrapi(struct rcp *p)
{
	struct rcp_exp a[WRAPI_N], b[WRAPI_N];
	struct rcp_piece src[RCP_MAX_SGE], dst;
	struct ibv_wc wc[WRAPI_N];
	struct ibv_qp_ex *qx;
	struct ibv_mw *mw = NULL;
	uint32_t inv_rkey = 0;
	unsigned char aw_value[8];
	bool inv = (p->dev->dattr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) && rng_bernoulli(p->rng, 0.5);
	bool aw = !p->dev->no_atomic_write && rng_bernoulli(p->rng, 0.5);
	int ns, nb = 0, na = 0, rc, n = inv ? WRAPI_N - 1 : WRAPI_N - 2;

	if (rng_bernoulli(p->rng, 0.3)) {
		batch_fills_sq(p);
		return;
	}
	p->name = inv ? "extended verbs: ibv_wr_send/send_imm/rdma_write_imm/rdma_read/send_inv, SGE and inline "
			"lists"
		      : "extended verbs: ibv_wr_send/send_imm/rdma_write_imm/rdma_read, SGE and inline lists";
	p->shape = (struct rcp_shape){.scqe = RCP_CQE,
				      .a_send_wr = 8,
				      .a_recv_wr = 1,
				      .b_recv_wr = 5,
				      .a_rnr_retry = 7,
				      .ext = true,
				      .ext_inv = inv,
				      .ext_aw = aw};
	if (rcp_setup(p)) {
		if (aw && p->abandoned)
			p->dev->no_atomic_write = true; /* refused the operation: not asked again */
		return;
	}
	if (!(qx = hw_qp_to_qp_ex(p->a)))
		return;
	if (inv && bind_b_window(p, &mw, &inv_rkey)) {
		if (mw)
			hw_dealloc_mw(mw);
		return;
	}
	ibv_wr_start(qx);
	for (int i = 0; i < n; i++) {
		uint32_t len = (uint32_t)rng_range(p->rng, 1, RCP_SMALL_MSG);
		bool inl = (i == 1 || i == 2) && len <= p->acap.max_inline_data;
		uint32_t imm = (uint32_t)rng_next(p->rng);
		enum ibv_wc_opcode op = i < 2 || i == 4 ? IBV_WC_SEND : i == 2 ? IBV_WC_RDMA_WRITE : IBV_WC_RDMA_READ;

		qx->wr_id = p->base_id + (uint64_t)i;
		/* Now and then the INLINE flag on a WR given SGEs: they are still what it sends. */
		bool flag_inline = inl || (i != 3 && len <= p->acap.max_inline_data && rng_bernoulli(p->rng, 0.3));

		/* Now and then unsignaled, but never the batch's last: it completes silently (ibv_wr_post(3)). */
		bool signaled = (i == n - 1 && !aw) || rng_bernoulli(p->rng, 0.75);

		qx->wr_flags = (signaled ? IBV_SEND_SIGNALED : 0) | (flag_inline ? IBV_SEND_INLINE : 0);
		dst = (struct rcp_piece){(i == 2 ? RCP_TGT : RCP_RECV) + (uint32_t)i * RCP_SLOT, len};
		if (i == 0)
			ibv_wr_send(qx);
		else if (i == 1)
			ibv_wr_send_imm(qx, imm);
		else if (i == 2)
			ibv_wr_rdma_write_imm(qx, p->mr->rkey, (uintptr_t)(p->buf + dst.off), imm);
		else if (i == 4)
			ibv_wr_send_inv(qx, inv_rkey);
		if (i != 3) {
			data_of(p, qx, RCP_SRC + (uint32_t)i * 512, len, inl, src, &ns);
			rcp_model_move(p, src, ns, &dst, 1);
			if (rcp_recv1(
				p->b, p->base_id + 0x40 + (uint64_t)i,
				(struct ibv_sge){(uintptr_t)(p->buf + RCP_RECV + (uint32_t)i * RCP_SLOT),
						 RCP_SMALL_MSG, p->mr->lkey})) {
				rcp_fail(p, "a receive refused");
				ibv_wr_abort(qx);
				goto out;
			}
			b[nb] = rcp_done(p->base_id + 0x40 + (uint64_t)i, IBV_WC_SUCCESS,
					 i == 2 ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV);
			b[nb].check_len = true;
			b[nb].byte_len = len;
			b[nb].imm = i > 0 && i < 4;
			b[nb].imm_data = imm;
			b[nb].inv = i == 4;
			b[nb++].inv_rkey = inv_rkey;
		} else {
			struct rcp_piece from = {RCP_SRC + 3 * 512, len};
			struct ibv_sge sge[RCP_MAX_SGE];
			int k = (int)rng_range(p->rng, 1, (uint64_t)imin(3, (int)p->acap.max_send_sge));

			ibv_wr_rdma_read(qx, p->mr->rkey, (uintptr_t)(p->buf + from.off));
			ns = rcp_pieces(p, RCP_RDST, len, k, 16, src);
			rcp_sges(p, src, ns, sge);
			ibv_wr_set_sge_list(qx, (size_t)ns, sge);
			rcp_model_move(p, &from, 1, src, ns);
		}
		if (!signaled)
			continue;
		a[na] = rcp_done(qx->wr_id, IBV_WC_SUCCESS, op);
		a[na].check_len = i == 3;
		a[na++].byte_len = len;
	}
	if (aw) {
		uint32_t at = RCP_TGT + 5 * RCP_SLOT + 8 * (uint32_t)rng_range(p->rng, 0, 7);

		for (int k = 0; k < 8; k++) /* every byte new: a half left out shows */
			aw_value[k] = (unsigned char)(p->model[at + k] + 1 + rng_range(p->rng, 0, 254));
		qx->wr_id = p->base_id + 5;
		qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_atomic_write(qx, p->mr->rkey, (uintptr_t)(p->buf + at), aw_value);
		memcpy(p->model + at, aw_value, 8);
		a[na++] = rcp_done(qx->wr_id, IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE);
		n++;
	}
	if ((rc = ibv_wr_complete(qx))) {
		rcp_fail(p, "ibv_wr_complete of %d WRs (max_send_wr %u) returned %d", n, p->acap.max_send_wr, rc);
		goto out;
	}
	rcp_expect(p, p->rcq, "B's receive CQ (a batch of ibv_wr_* sends and a WRITE_WITH_IMM)", b, nb);
	rcp_judge(p, p->scq, "A's extended send CQ (ibv_wr_send, send_imm, rdma_write_imm, rdma_read)", wc,
		  rcp_poll_ex(p, p->scq_ex, wc, na), a, na);
	rcp_expect_empty(p, p->scq, "A's extended send CQ (after the signaled WRs of a batch with unsignaled ones)");
	rcp_expect_empty(p, p->rcq, "B's receive CQ");
	rcp_check_memory(p);
out:
	if (mw)
		hw_dealloc_mw(mw);
}
