/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Probe scripts (rcprobe.h) about access rights and windows, each with the
 * exact status the rules name:
 *
 *  - local access: a READ or an atomic result into an MR without
 *    LOCAL_WRITE, a SEND gathered from an lkey of another PD or of a
 *    deregistered MR (LOC_PROT_ERR at A); a receive into an MR without
 *    LOCAL_WRITE or of another PD (LOC_PROT_ERR at B, REM_OP_ERR at A);
 *    a SEND gathered from an MR without LOCAL_WRITE (it works);
 *  - remote access: refused with REM_ACCESS_ERR or REM_INV_REQ_ERR, both
 *    QPs in ERR; the last bytes of a region reachable;
 *  - windows: a type-2 window written through, invalidated by LOCAL_INV,
 *    then refusing; binds the rules forbid complete with MW_BIND_ERR.
 */
#include "cmd/conform/rcp.h"

enum {
	LA_READ_RO,
	LA_ATOMIC_RO,
	LA_SEND_OTHER_PD,
	LA_SEND_DEREGD,
	LA_RECV_RO,
	LA_RECV_OTHER_PD,
	LA_SEND_FROM_RO,
	LA_SEND_STALE_REUSED,
	LA_RECV_PAST_END,
	LA_ATOMIC_WRITE_LEN,
	LA_SEND_PAST_END,
	LA_KINDS
};

static const char *const la_names[LA_KINDS] = {
    "local access: a READ into an MR without LOCAL_WRITE",
    "local access: an atomic's result into an MR without LOCAL_WRITE",
    "local access: a SEND from an lkey of another PD",
    "local access: a SEND from the lkey of a deregistered MR",
    "local access: a receive into an MR without LOCAL_WRITE",
    "local access: a receive with an lkey of another PD",
    "local access: a SEND gathered from an MR without LOCAL_WRITE",
    "local access: a SEND from a deregistered lkey whose table slot a new MR took",
    "local access: a receive SGE ending one byte past its MR",
    "local access: an ATOMIC_WRITE of 4 or 16 bytes",
    "local access: a SEND gather SGE ending one byte past its MR",
};

/*
 * IBV_WR_ATOMIC_WRITE carries exactly 8 bytes (IBTA 1.5, 9.4.6): a gather
 * list of 4 or 16 is refused at post or completes in error, and the target
 * keeps every byte.  What the error is, the rules leave to the device.
 */
static void atomic_write_len(struct rcp *p)
{
	uint32_t len = rng_bernoulli(p->rng, 0.5) ? 4 : 16, at = RCP_TGT + 8 * (uint32_t)rng_range(p->rng, 1, 60);
	struct ibv_sge sge = {(uintptr_t)(p->buf + RCP_SRC + 64), len, p->mr->lkey};
	struct ibv_wc wc;

	if (p->dev->no_atomic_write ||
	    rcp_post1(p, p->a, IBV_WR_ATOMIC_WRITE, p->base_id, sge, (uintptr_t)(p->buf + at)))
		return; /* refused at post: right */
	if (!rcp_poll1(p, p->scq, &wc))
		return;
	if (wc.wr_id != p->base_id)
		rcp_fail(p, "A's send CQ: wr_id %#llx, expected %#llx (an ATOMIC_WRITE of %u bytes)",
			 (unsigned long long)wc.wr_id, (unsigned long long)p->base_id, len);
	else if (wc.status == IBV_WC_SUCCESS)
		rcp_fail(p, "an ATOMIC_WRITE of %u bytes (it carries exactly 8) completed with SUCCESS", len);
	rcp_check_memory(p);
}

void rcp_case_local(struct rcp *p)
{
	int kind = rcp_variant(p, LA_KINDS), rc;
	uint32_t at = RCP_RDST + 7 * RCP_SLOT, len = (uint32_t)rng_range(p->rng, 8, 64);
	struct ibv_pd *pd2 = NULL;
	struct ibv_mr *odd = NULL;
	struct ibv_sge sge;
	bool at_b = kind == LA_RECV_RO || kind == LA_RECV_OTHER_PD || kind == LA_RECV_PAST_END;
	struct rcp_exp a_exp[2], b_exp[2];

	p->name = la_names[kind];
	p->shape = (struct rcp_shape){
	    .scqe = RCP_CQE, .a_send_wr = 4, .a_recv_wr = 1, .b_recv_wr = 4, .a_rnr_retry = 7};
	if (rcp_setup(p))
		return;
	if (kind == LA_ATOMIC_WRITE_LEN) {
		atomic_write_len(p);
		return;
	}
	if (kind == LA_SEND_OTHER_PD || kind == LA_RECV_OTHER_PD) {
		if ((pd2 = hw_alloc_pd(p->dev->ctx)))
			odd = hw_reg_mr(pd2, p->buf + at, RCP_SLOT, IBV_ACCESS_LOCAL_WRITE);
	} else if (kind == LA_SEND_DEREGD) {
		uint32_t stale_lkey = 0;

		/* The key is read before the deregistration frees the MR. */
		if ((odd = hw_reg_mr(p->pd, p->buf + at, RCP_SLOT, IBV_ACCESS_LOCAL_WRITE)) &&
		    (stale_lkey = odd->lkey, hw_dereg_mr(odd) == 0)) {
			sge = (struct ibv_sge){(uintptr_t)(p->buf + at), len, stale_lkey};
			odd = NULL;
			goto post;
		}
	} else if (kind == LA_SEND_STALE_REUSED) {
		/*
		 * A key is the table slot and a key byte: an MR registered after
		 * the dereg (likely in the same slot, over the same memory) must
		 * not answer to the old key (ibv_dereg_mr(3): the key is invalid).
		 */
		uint32_t old;

		if (!(odd = hw_reg_mr(p->pd, p->buf + at, RCP_SLOT, IBV_ACCESS_LOCAL_WRITE)))
			goto out;
		old = odd->lkey;
		if (hw_dereg_mr(odd) ||
		    !(odd = hw_reg_mr(p->pd, p->buf + at, RCP_SLOT, IBV_ACCESS_LOCAL_WRITE)))
			goto out;
		if (odd->lkey == old) /* the same key again: nothing stale to test */
			goto out;
		sge = (struct ibv_sge){(uintptr_t)(p->buf + at), len, old};
		goto post;
	} else if (kind == LA_SEND_PAST_END) {
		/* the gather SGE's last byte is one past the MR's end: LOC_PROT_ERR at A, nothing sent */
		if (!(odd = hw_reg_mr(p->pd, p->buf + at, RCP_SLOT / 2, IBV_ACCESS_LOCAL_WRITE)))
			goto out;
		sge = (struct ibv_sge){(uintptr_t)(p->buf + at + RCP_SLOT / 2 - len + 1), len, odd->lkey};
		goto post;
	} else if (kind == LA_RECV_PAST_END) {
		/* the SGE's last byte is one past the MR's end: LOC_PROT_ERR (ibv_post_recv(3)) */
		if (!(odd = hw_reg_mr(p->pd, p->buf + at, RCP_SLOT / 2, IBV_ACCESS_LOCAL_WRITE)))
			goto out;
		sge = (struct ibv_sge){(uintptr_t)(p->buf + at + RCP_SLOT / 2 - len + 1), len, odd->lkey};
		goto post;
	} else {
		odd = hw_reg_mr(p->pd, p->buf + at, RCP_SLOT, IBV_ACCESS_REMOTE_READ);
	}
	if (!odd)
		goto out;
	sge = (struct ibv_sge){(uintptr_t)(p->buf + at), len, odd->lkey};
post:
	if (kind == LA_SEND_FROM_RO) {
		memcpy(p->model + RCP_RECV, p->model + at, len);
		rc = rcp_recv1(p->b, p->base_id + 0x40,
			       (struct ibv_sge){(uintptr_t)(p->buf + RCP_RECV), 64, p->mr->lkey});
		a_exp[0] = rcp_done(p->base_id, IBV_WC_SUCCESS, IBV_WC_SEND);
		b_exp[0] = rcp_done(p->base_id + 0x40, IBV_WC_SUCCESS, IBV_WC_RECV);
		b_exp[0].check_len = true;
		b_exp[0].byte_len = len;
	} else if (at_b) {
		rc = rcp_recv1(p->b, p->base_id + 0x40, sge);
		sge = (struct ibv_sge){(uintptr_t)(p->buf + RCP_SRC), len, p->mr->lkey};
		a_exp[0] = rcp_done(p->base_id, IBV_WC_REM_OP_ERR, IBV_WC_SEND);
		b_exp[0] = rcp_done(p->base_id + 0x40, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV);
	} else {
		rc = 0;
		a_exp[0] = rcp_done(p->base_id, IBV_WC_LOC_PROT_ERR, IBV_WC_SEND);
	}
	if (kind == LA_ATOMIC_RO)
		sge.length = 8;
	if (!rc)
		rc = rcp_post1(p, p->a,
			       kind == LA_READ_RO     ? IBV_WR_RDMA_READ
			       : kind == LA_ATOMIC_RO ? IBV_WR_ATOMIC_FETCH_AND_ADD
						      : IBV_WR_SEND,
			       p->base_id, sge, (uintptr_t)(p->buf + RCP_TGT));
	if (rc) {
		rcp_fail(p, "the WR or its receive was refused at post: %s", strerror(rc));
		goto out;
	}
	if (kind == LA_ATOMIC_RO) {
		uint64_t v;

		/* The atomic may execute at B before A finds it cannot take the result. */
		memcpy(&v, p->model + RCP_TGT, 8);
		v++;
		memcpy(p->model + RCP_TGT, &v, 8);
	}
	if (at_b || kind == LA_SEND_FROM_RO)
		rcp_expect(p, p->rcq, "B's receive CQ", b_exp, 1);
	rcp_expect(p, p->scq, "A's send CQ", a_exp, 1);
	if (kind != LA_SEND_FROM_RO)
		rcp_expect_state(p, p->a, "A after a protection error", IBV_QPS_ERR);
	if (at_b)
		rcp_expect_state(p, p->b, "B after a protection error on its receive", IBV_QPS_ERR);
	if (kind == LA_ATOMIC_RO && memcmp(p->buf + RCP_TGT, p->model + RCP_TGT, 8))
		memcpy(p->model + RCP_TGT, p->buf + RCP_TGT, 8); /* or it may not have: both are right */
	rcp_expect_empty(p, p->ocq, "the CQ of A's receives and B's sends");
	rcp_check_memory(p);
out:
	if (odd)
		hw_dereg_mr(odd);
	if (pd2)
		hw_dealloc_pd(pd2);
}

/*
 * Only type-2 windows can be invalidated (ibv_post_send(3), IBTA 10.6.7.2):
 * a LOCAL_INV of a bound type-1 window's rkey completes in error, whatever
 * the status, and the window still lets B write through it.
 */
static void window_type1_stays(struct rcp *p)
{
	uint32_t at = RCP_TGT + 8 * (uint32_t)rng_range(p->rng, 0, 64);
	struct ibv_mw_bind bind = {.wr_id = p->base_id + 0x90, .send_flags = IBV_SEND_SIGNALED};
	struct ibv_send_wr wr = {.wr_id = p->base_id + 0x91,
				 .opcode = IBV_WR_LOCAL_INV,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	struct rcp_exp e = rcp_done(bind.wr_id, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	struct rcp_piece from = {RCP_SRC + 64, 16}, to = {at + 8, 16};
	struct ibv_mw *mw;
	struct ibv_wc wc;

	p->name = "a type-1 window cannot be invalidated";
	if (!(mw = hw_alloc_mw(p->pd, IBV_MW_TYPE_1)))
		return;
	bind.bind_info = (struct ibv_mw_bind_info){.mr = p->mr,
						   .addr = (uintptr_t)(p->buf + at),
						   .length = 64,
						   .mw_access_flags = IBV_ACCESS_REMOTE_WRITE};
	if (hw_bind_mw(p->a, mw, &bind))
		goto out;
	rcp_expect(p, p->scq, "A's send CQ (the type-1 bind)", &e, 1);
	wr.invalidate_rkey = mw->rkey;
	if (rcp_failed(p) || hw_post_send(p->a, &wr, &bad)) /* refused at post: right too */
		goto out;
	if (rcp_poll1(p, p->scq, &wc) && wc.status == IBV_WC_SUCCESS) {
		rcp_fail(p, "LOCAL_INV of a type-1 window's rkey %#x completed with SUCCESS", mw->rkey);
		goto out;
	}
	/* the error put A in ERR: the pair is connected again (a type-1 window belongs to no QP) */
	if (rcp_failed(p) || rcp_reconnect(p) ||
	    rcp_post1_rkey(p, p->b, p->base_id + 0x20, from, (uintptr_t)(p->buf + to.off), mw->rkey))
		goto out;
	rcp_model_move(p, &from, 1, &to, 1);
	e = rcp_done(p->base_id + 0x20, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	rcp_expect(p, p->ocq, "B's send CQ (a WRITE through the type-1 window after the refused LOCAL_INV)",
		   &e, 1);
	rcp_check_memory(p);
out:
	hw_dealloc_mw(mw);
}

/*
 * A type-2 window bound to A over 64 bytes of its memory (by ibv_post_send
 * or ibv_wr_bind_mw; now and then under an rkey whose index bits differ,
 * which must fail or bind under the key byte alone): B writes through
 * it; A (by ibv_post_send or ibv_wr_local_inv), or half the time B (another
 * QP of the PD), invalidates it locally (IBV_WC_LOCAL_INV); B's next write through
 * the old rkey fails with REM_ACCESS_ERR and lands nowhere.  A's own WRITE
 * after the bind works: a bind sends nothing and takes no PSN.
 */
void rcp_case_window(struct rcp *p)
{
	uint32_t at = RCP_TGT + 8 * (uint32_t)rng_range(p->rng, 0, 64);
	struct ibv_mw *mw = NULL;
	struct ibv_send_wr wr = {.wr_id = p->base_id + 0x90,
				 .opcode = IBV_WR_BIND_MW,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	struct rcp_exp e = rcp_done(wr.wr_id, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	struct rcp_piece from = {RCP_SRC + 64, 16}, to = {at + 8, 16};
	uint32_t rkey;
	/* A local invalidation needs only the window's PD (IBTA 10.6.7.2.4): B, the other QP, may do it. */
	bool by_b = rng_bernoulli(p->rng, 0.4);
	/* Or A, by ibv_wr_local_inv: a device with type-2 windows takes IBV_QP_EX_WITH_LOCAL_INV. */
	bool wr_api = !by_b && rng_bernoulli(p->rng, 0.6);
	struct ibv_qp_ex *qx;

	p->name = by_b ? "a type-2 window bound on A, invalidated locally through B (same PD)"
		       : "a type-2 window, invalidated locally";
	p->shape = (struct rcp_shape){
	    .scqe = RCP_CQE, .a_send_wr = 4, .a_recv_wr = 1, .b_recv_wr = 4, .a_rnr_retry = 7};
	if (rng_bernoulli(p->rng, 0.3)) {
		if ((p->dev->dattr.device_cap_flags & IBV_DEVICE_MEM_WINDOW) && !rcp_setup(p))
			window_type1_stays(p);
		return;
	}
	if (!(p->dev->dattr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B))
		return;
	p->shape.ext = p->shape.ext_local_inv = wr_api;
	if (rcp_setup(p)) {
		if (wr_api && p->abandoned && p->scq_ex)
			rcp_fail(p, "ibv_create_qp_ex with IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW failed, "
				    "although the device has type-2 memory windows");
		return;
	}
	if (!(mw = hw_alloc_mw(p->pd, IBV_MW_TYPE_2)))
		return;
	rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.mw = mw;
	/*
	 * Now and then the new rkey changes the index bits too, where only its
	 * key byte is the consumer's to choose: the bind fails (MW_BIND_ERR), or it
	 * takes the key byte alone, as rxe does, and the window answers to rkey.
	 */
	wr.bind_mw.rkey = rng_bernoulli(p->rng, 0.15) ? rkey ^ (1u << (8 + rng_range(p->rng, 0, 15))) : rkey;
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){.mr = p->mr,
							 .addr = (uintptr_t)(p->buf + at),
							 .length = 64,
							 .mw_access_flags = IBV_ACCESS_REMOTE_WRITE};
	if (wr_api && rng_bernoulli(p->rng, 0.5) && (qx = hw_qp_to_qp_ex(p->a))) {
		/* ibv_wr_bind_mw binds under the rkey it is given, as the WR's bind_mw.rkey. */
		ibv_wr_start(qx);
		qx->wr_id = wr.wr_id;
		qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_bind_mw(qx, mw, wr.bind_mw.rkey, &wr.bind_mw.bind_info);
		if (ibv_wr_complete(qx)) {
			rcp_fail(p, "ibv_wr_bind_mw of a type-2 window on a QP made with IBV_QP_EX_WITH_BIND_MW refused");
			goto out;
		}
	} else if (hw_post_send(p->a, &wr, &bad)) {
		goto out;
	}
	if (wr.bind_mw.rkey != rkey) {
		struct ibv_wc wc;

		if (!rcp_poll1(p, p->scq, &wc))
			goto out;
		if (wc.wr_id != wr.wr_id || (wc.status != IBV_WC_SUCCESS && wc.status != IBV_WC_MW_BIND_ERR)) {
			rcp_fail(p,
				 "A's send CQ (a type-2 bind under rkey %#x, whose index bits differ from the "
				 "window's %#x): wr_id %#llx status %s; expected %#llx SUCCESS or MW_BIND_ERR",
				 wr.bind_mw.rkey, mw->rkey, (unsigned long long)wc.wr_id,
				 ibv_wc_status_str(wc.status), (unsigned long long)wr.wr_id);
			goto out;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			rcp_expect_state(p, p->a, "A after a bind refused for its rkey's index bits", IBV_QPS_ERR);
			rcp_check_memory(p);
			goto out;
		}
	} else {
		rcp_expect(p, p->scq, "A's send CQ (the bind)", &e, 1);
	}
	if (rcp_failed(p))
		goto out;
	{
		struct rcp_piece src = {RCP_SRC + 128, 16}, dst = {RCP_TGT + 5 * RCP_SLOT, 16};

		if (rcp_post1_rkey(p, p->a, p->base_id + 0x22, src, (uintptr_t)(p->buf + dst.off),
				   p->mr->rkey))
			goto out;
		rcp_model_move(p, &src, 1, &dst, 1);
		e = rcp_done(p->base_id + 0x22, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
		rcp_expect(p, p->scq, "A's send CQ (A's WRITE after its bind)", &e, 1);
		if (rcp_failed(p))
			goto out;
	}
	/* B writes 16 bytes inside the window (B's sends complete on the other CQ). */
	if (rcp_post1_rkey(p, p->b, p->base_id + 0x20, from, (uintptr_t)(p->buf + to.off), rkey))
		goto out;
	rcp_model_move(p, &from, 1, &to, 1);
	e = rcp_done(p->base_id + 0x20, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	rcp_expect(p, p->ocq, "B's send CQ (a WRITE through the window)", &e, 1);
	wr = (struct ibv_send_wr){.wr_id = p->base_id + 0x91,
				  .opcode = IBV_WR_LOCAL_INV,
				  .send_flags = IBV_SEND_SIGNALED,
				  .invalidate_rkey = rkey};
	if (rcp_failed(p))
		goto out;
	if (wr_api && (qx = hw_qp_to_qp_ex(p->a))) {
		ibv_wr_start(qx);
		qx->wr_id = wr.wr_id;
		qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_local_inv(qx, rkey);
		if (ibv_wr_complete(qx)) {
			rcp_fail(p, "ibv_wr_local_inv of a bound type-2 window's rkey %#x refused", rkey);
			goto out;
		}
	} else if (hw_post_send(by_b ? p->b : p->a, &wr, &bad)) {
		goto out;
	}
	e = rcp_done(wr.wr_id, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV);
	rcp_expect(p, by_b ? p->ocq : p->scq,
		   by_b	    ? "B's send CQ (LOCAL_INV of a window bound on A, B on the same PD)"
		   : wr_api ? "A's send CQ (ibv_wr_local_inv of the window)"
			    : "A's send CQ (LOCAL_INV of the window)",
		   &e, 1);
	if (rcp_failed(p) || rcp_post1_rkey(p, p->b, p->base_id + 0x21, from, (uintptr_t)(p->buf + at), rkey))
		goto out;
	e = rcp_done(p->base_id + 0x21, IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_WRITE);
	rcp_expect(p, p->ocq, "B's send CQ (a WRITE through the invalidated rkey)", &e, 1);
	rcp_check_memory(p);
out:
	if (mw)
		hw_dealloc_mw(mw);
}

enum { RA_NO_RIGHT, RA_PAST_END, RA_BEFORE_START, RA_OTHER_PD, RA_QP_ACCESS, RA_UNALIGNED, RA_KINDS };

static const char *const ra_names[RA_KINDS] = {
    "remote access: an rkey without the right",
    "remote access: one byte past the MR's end",
    "remote access: one byte before the MR's start",
    "remote access: an rkey of another PD",
    "remote access: a right the responder QP no longer grants (RTS -> RTS)",
    "remote access: an atomic 4 bytes off alignment",
};

/* The last bytes of a region are reachable: a WRITE or READ ending at its last byte, an atomic on its last 8.
 */
static void remote_last_ok(struct rcp *p)
{
	static const enum ibv_wr_opcode ops[3] = {IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ,
						  IBV_WR_ATOMIC_FETCH_AND_ADD};
	static const enum ibv_wc_opcode wcs[3] = {IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ, IBV_WC_FETCH_ADD};
	int op = (int)rng_range(p->rng, 0, 2);
	uint32_t at = RCP_TGT + 3 * RCP_SLOT, len = op == 2 ? 8 : (uint32_t)rng_range(p->rng, 1, 64);
	struct rcp_piece end = {at + RCP_SLOT - len, len}, src = {RCP_SRC + 256, len}, dst = {RCP_RDST, len};
	struct ibv_mr *odd =
	    hw_reg_mr(p->pd, p->buf + at, RCP_SLOT, IBV_ACCESS_LOCAL_WRITE | RCP_REMOTE_RIGHTS);
	struct ibv_sge sge = {(uintptr_t)(p->buf + (op ? dst.off : src.off)), len, p->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = p->base_id,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = ops[op],
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	struct rcp_exp e = rcp_done(wr.wr_id, IBV_WC_SUCCESS, wcs[op]);
	uint64_t orig, add = rng_next(p->rng);

	p->name = "remote access: the last bytes of a region";
	if (!odd)
		return;
	wr.wr.rdma.remote_addr = (uintptr_t)(p->buf + end.off);
	wr.wr.rdma.rkey = odd->rkey;
	if (op == 2) {
		wr.wr.atomic.remote_addr = (uintptr_t)(p->buf + end.off);
		wr.wr.atomic.rkey = odd->rkey;
		wr.wr.atomic.compare_add = add;
		memcpy(&orig, p->model + end.off, 8);
		memcpy(p->model + dst.off, &orig, 8);
		orig += add;
		memcpy(p->model + end.off, &orig, 8);
	} else {
		rcp_model_move(p, op ? &end : &src, 1, op ? &dst : &end, 1);
	}
	e.check_len = op > 0;
	e.byte_len = len;
	if (hw_post_send(p->a, &wr, &bad))
		rcp_fail(p, "a WR refused at post");
	else
		rcp_expect(p, p->scq, "A's send CQ (an access ending at the region's last byte)", &e, 1);
	rcp_expect_state(p, p->a, "A", IBV_QPS_RTS);
	rcp_expect_state(p, p->b, "B", IBV_QPS_RTS);
	rcp_check_memory(p);
	hw_dereg_mr(odd);
}

/*
 * An access the protection rules refuse, with the status they name:
 * REM_ACCESS_ERR for a key, a range or a PD, REM_INV_REQ_ERR for what the
 * responder QP does not allow or a misaligned atomic; both QPs end in ERR,
 * the memory is untouched; a chained WR behind it flushes.  Signaled or
 * not, both complete: an error always does.
 */
void rcp_case_remote(struct rcp *p)
{
	int kind = rcp_variant(p, RA_KINDS), op = (int)rng_range(p->rng, 0, 2), rc;
	static const enum ibv_wr_opcode ops[3] = {IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ,
						  IBV_WR_ATOMIC_FETCH_AND_ADD};
	static const int rights[3] = {IBV_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_READ,
				      IBV_ACCESS_REMOTE_ATOMIC};
	uint32_t at = RCP_TGT + 3 * RCP_SLOT, len = op == 2 ? 8 : (uint32_t)rng_range(p->rng, 1, 64), rkey;
	uint64_t raddr = (uintptr_t)(p->buf + at);
	struct ibv_pd *pd2 = NULL;
	struct ibv_mr *odd = NULL;
	struct ibv_sge sge;
	struct ibv_send_wr wr[2], *bad;
	struct rcp_exp exp[2];

	if (kind == RA_PAST_END && op != 2 && rng_bernoulli(p->rng, 0.5)) {
		op = 2; /* half of the past-the-end probes are atomics: 8 bytes make the edge a range, not a
			   byte */
		len = 8;
	}
	p->name = ra_names[kind];
	p->shape = (struct rcp_shape){
	    .scqe = RCP_CQE, .a_send_wr = 4, .a_recv_wr = 1, .b_recv_wr = 4, .a_rnr_retry = 7};
	if (rcp_setup(p))
		return;
	if (rng_bernoulli(p->rng, 0.25)) {
		remote_last_ok(p);
		return;
	}
	rkey = p->mr->rkey;
	switch (kind) {
	case RA_NO_RIGHT: /* an MR over one slot with every remote right but this one */
		odd = hw_reg_mr(p->pd, p->buf + at, RCP_SLOT,
				IBV_ACCESS_LOCAL_WRITE | (RCP_REMOTE_RIGHTS & ~rights[op]));
		break;
	case RA_PAST_END:
	case RA_BEFORE_START: {
		/*
		 * An atomic past the end: half the time on an aligned word whose
		 * last 1..7 bytes are past the end of a region of odd length (all
		 * 8 bytes must be inside, IBTA 9.4.5 / ibv_post_send(3)).
		 */
		uint32_t cut = kind == RA_PAST_END && op == 2 && rng_bernoulli(p->rng, 0.5)
				   ? (uint32_t)rng_range(p->rng, 1, 7)
				   : 0;

		odd =
		    hw_reg_mr(p->pd, p->buf + at, RCP_SLOT - cut, IBV_ACCESS_LOCAL_WRITE | RCP_REMOTE_RIGHTS);
		raddr = kind == RA_PAST_END ? raddr + RCP_SLOT - (op == 2 ? (cut ? 8 : 0) : len - 1)
					    : raddr - (op == 2 ? 8 : 1);
		break;
	}
	case RA_OTHER_PD:
		if ((pd2 = hw_alloc_pd(p->dev->ctx)))
			odd =
			    hw_reg_mr(pd2, p->buf + at, RCP_SLOT, IBV_ACCESS_LOCAL_WRITE | RCP_REMOTE_RIGHTS);
		break;
	case RA_QP_ACCESS: {
		struct ibv_qp_attr a = {.qp_access_flags = RCP_REMOTE_RIGHTS & ~rights[op]};

		if (hw_modify_qp(p->b, &a, IBV_QP_ACCESS_FLAGS))
			goto out;
		break;
	}
	default:
		op = 2;
		len = 8;
		raddr += 4;
		break;
	}
	if ((kind <= RA_OTHER_PD && !odd))
		goto out;
	if (odd)
		rkey = odd->rkey;
	sge = (struct ibv_sge){(uintptr_t)(p->buf + RCP_RDST), len, p->mr->lkey};
	for (int i = 0; i < 2; i++) {
		wr[i] =
		    (struct ibv_send_wr){.wr_id = p->base_id + (uint64_t)i,
					 .next = i ? NULL : &wr[1],
					 .sg_list = &sge,
					 .num_sge = 1,
					 .opcode = ops[op],
					 /* an error completes whether signaled or not */
					 .send_flags = rng_bernoulli(p->rng, 0.5) ? IBV_SEND_SIGNALED : 0};
		wr[i].wr.rdma.remote_addr = raddr;
		wr[i].wr.rdma.rkey = rkey;
		if (op == 2) {
			wr[i].wr.atomic.remote_addr = raddr;
			wr[i].wr.atomic.rkey = rkey;
			wr[i].wr.atomic.compare_add = 1;
		}
		exp[i] = rcp_done(wr[i].wr_id,
				  i			 ? IBV_WC_WR_FLUSH_ERR
				  : kind >= RA_QP_ACCESS ? IBV_WC_REM_INV_REQ_ERR
							 : IBV_WC_REM_ACCESS_ERR,
				  IBV_WC_RDMA_WRITE);
	}
	if ((rc = hw_post_send(p->a, wr, &bad))) {
		rcp_fail(p, "two WRs refused at post: %s", strerror(rc));
		goto out;
	}
	rcp_expect(p, p->scq, "A's send CQ (an access the responder must refuse, then one behind it)", exp,
		   2);
	rcp_expect_state(p, p->a, "A after a remote error", IBV_QPS_ERR);
	rcp_expect_state(p, p->b, "B after refusing a request", IBV_QPS_ERR);
	rcp_expect_empty(p, p->rcq, "B's receive CQ");
	rcp_check_memory(p);
out:
	if (odd)
		hw_dereg_mr(odd);
	if (pd2)
		hw_dealloc_pd(pd2);
}

enum { BE_NO_MW_BIND, BE_PAST_END, BE_BOUND_TWICE, BE_WRITE_NO_LOCAL, BE_EXTRA_RIGHTS, BE_KINDS };

static const char *const be_names[BE_KINDS] = {
    "a window bind: an MR without MW_BIND",
    "a window bind: one byte past the MR's end",
    "a window bind: a type-2 window bound twice",
    "a window bind: remote write on an MR without LOCAL_WRITE",
    "a window bind: MW_BIND among the window's rights",
};

/*
 * Binds the rules forbid complete with MW_BIND_ERR; A goes to ERR and the WR
 * behind the bind flushes.  A window's rights are remote ones (ibv_bind_mw(3));
 * a bind asking for MW_BIND as well may also be refused at post.
 */
void rcp_case_bind_error(struct rcp *p)
{
	int kind = rcp_variant(p, BE_KINDS), rc;
	uint32_t at = RCP_TGT + 4 * RCP_SLOT;
	struct ibv_mr *odd = NULL;
	struct ibv_mw *mw = NULL;
	struct ibv_send_wr wr[2], *bad;
	struct ibv_sge sge = {(uintptr_t)(p->buf + RCP_SRC), 8, 0};
	struct rcp_exp exp[2];
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND | RCP_REMOTE_RIGHTS;

	p->name = be_names[kind];
	p->shape = (struct rcp_shape){
	    .scqe = RCP_CQE, .a_send_wr = 4, .a_recv_wr = 1, .b_recv_wr = 4, .a_rnr_retry = 7};
	if (!(p->dev->dattr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) || rcp_setup(p))
		return;
	if (kind == BE_NO_MW_BIND)
		access &= ~IBV_ACCESS_MW_BIND;
	else if (kind == BE_WRITE_NO_LOCAL)
		access = IBV_ACCESS_MW_BIND | IBV_ACCESS_REMOTE_READ;
	if (!(odd = hw_reg_mr(p->pd, p->buf + at, RCP_SLOT, access)) ||
	    !(mw = hw_alloc_mw(p->pd, IBV_MW_TYPE_2)))
		goto out;
	sge.lkey = p->mr->lkey;
	for (int i = 0; i < 2; i++) {
		wr[i] = (struct ibv_send_wr){.wr_id = p->base_id + (uint64_t)i,
					     .next = i ? NULL : &wr[1],
					     .opcode = IBV_WR_BIND_MW,
					     .send_flags = IBV_SEND_SIGNALED};
		wr[i].bind_mw.mw = mw;
		wr[i].bind_mw.rkey = ibv_inc_rkey(i ? wr[0].bind_mw.rkey : mw->rkey);
		wr[i].bind_mw.bind_info = (struct ibv_mw_bind_info){
		    .mr = odd,
		    .addr = (uintptr_t)(p->buf + at),
		    .length = kind == BE_PAST_END ? RCP_SLOT + 1 : 64,
		    .mw_access_flags = kind == BE_WRITE_NO_LOCAL  ? IBV_ACCESS_REMOTE_WRITE
				       : kind == BE_EXTRA_RIGHTS ? IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND
								 : IBV_ACCESS_REMOTE_READ};
		exp[i] = rcp_done(wr[i].wr_id, IBV_WC_MW_BIND_ERR, IBV_WC_BIND_MW);
	}
	if (kind == BE_BOUND_TWICE) {
		exp[0].status = IBV_WC_SUCCESS; /* the first bind is fine, binding it again is not */
	} else {
		wr[1] = (struct ibv_send_wr){.wr_id = p->base_id + 1,
					     .sg_list = &sge,
					     .num_sge = 1,
					     .opcode = IBV_WR_RDMA_WRITE,
					     .send_flags = IBV_SEND_SIGNALED};
		wr[1].wr.rdma.remote_addr = (uintptr_t)(p->buf + RCP_TGT);
		wr[1].wr.rdma.rkey = p->mr->rkey;
		wr[0].next = &wr[1];
		exp[1] = rcp_done(wr[1].wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RDMA_WRITE);
	}
	if ((rc = hw_post_send(p->a, wr, &bad)) && kind == BE_EXTRA_RIGHTS && bad == wr)
		goto out;
	if (rc) {
		rcp_fail(p, "a bind and a WR behind it refused at post: %s", strerror(rc));
		goto out;
	}
	rcp_expect(p, p->scq, "A's send CQ (a bind the rules forbid, then a WR behind it)", exp, 2);
	rcp_expect_state(p, p->a, "A after a failed bind", IBV_QPS_ERR);
	rcp_check_memory(p);
out:
	if (mw)
		hw_dealloc_mw(mw);
	if (odd)
		hw_dereg_mr(odd);
}
