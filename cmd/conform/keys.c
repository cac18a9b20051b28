/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Probe script (rcprobe.h): the life of keys.
 *
 *  - rotation: an MR deregistered and another registered at once over the
 *    same memory gets other keys (lkey and rkey), and so does a window
 *    allocated right after one was deallocated; a WRITE through the old
 *    rkey then fails (REM_ACCESS_ERR) and lands nowhere: a stale key kept
 *    by a peer must not reach the new object;
 *  - a window's hold on its MR (ibv_dereg_mr(3): EBUSY while windows are
 *    bound): a type-1 window bound to MR X, then rebound to MR Y: X can be
 *    deregistered at once, Y cannot (EBUSY) until the window is unbound (a
 *    zero-length bind) or deallocated; a type-2 window holds its MR until
 *    it is invalidated (LOCAL_INV).
 */
#include "cmd/conform/rcp.h"

#include <errno.h>
#include <string.h>

#define KEY_SLOT_STALE 5u /* TGT slots of the small MRs */
#define KEY_SLOT_X     2u
#define KEY_SLOT_Y     3u

static struct ibv_mr *small_mr(struct rcp *p, uint32_t slot)
{
	return hw_reg_mr(p->pd, p->buf + RCP_TGT + slot * RCP_SLOT, RCP_SLOT,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND);
}

/* ibv_dereg_mr of *mr must return want (0 or EBUSY); *mr is NULL once gone. */
void rcp_dereg_expect(struct rcp *p, struct ibv_mr **mr, int want, const char *why)
{
	uint32_t lkey = (*mr)->lkey;
	int rc = hw_dereg_mr(*mr);

	if (!rc)
		*mr = NULL;
	if (rc != want)
		rcp_fail(p, "ibv_dereg_mr of MR lkey %#x (%s) returned %d (%s); expected %d (%s)", lkey, why,
			 rc, rc ? strerror(rc) : "success", want, want ? strerror(want) : "success");
}

/* A type-1 bind of mw to 64 bytes of mr (NULL: a zero-length unbind) through A, and its completion. */
static int bind1(struct rcp *p, struct ibv_mw *mw, struct ibv_mr *mr, uint64_t id, const char *what)
{
	struct ibv_mw_bind bind = {.wr_id = p->base_id + id, .send_flags = IBV_SEND_SIGNALED};
	struct rcp_exp e = rcp_done(bind.wr_id, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	int rc;

	if (mr)
		bind.bind_info = (struct ibv_mw_bind_info){
		    .mr = mr, .addr = (uintptr_t)mr->addr, .length = 64, .mw_access_flags = IBV_ACCESS_REMOTE_WRITE};
	if ((rc = hw_bind_mw(p->a, mw, &bind))) {
		rcp_fail(p, "ibv_bind_mw of a type-1 window (%s) refused: %s", what, strerror(rc));
		return -1;
	}
	rcp_expect(p, p->scq, what, &e, 1);
	return rcp_failed(p) ? -1 : 0;
}

/* One signaled WR on A (a type-2 bind or a LOCAL_INV) that must succeed, and its completion. */
int rcp_post_a(struct rcp *p, struct ibv_send_wr *wr, enum ibv_wc_opcode op, const char *what)
{
	struct rcp_exp e = rcp_done(wr->wr_id, IBV_WC_SUCCESS, op);
	struct ibv_send_wr *bad;
	int rc;

	wr->send_flags = IBV_SEND_SIGNALED;
	if ((rc = hw_post_send(p->a, wr, &bad))) {
		rcp_fail(p, "%s refused at post: %s", what, strerror(rc));
		return -1;
	}
	rcp_expect(p, p->scq, what, &e, 1);
	return rcp_failed(p) ? -1 : 0;
}

static void hold_type1(struct rcp *p, struct ibv_mr **x, struct ibv_mr **y)
{
	bool unbind = rng_bernoulli(p->rng, 0.5);
	struct ibv_mw *mw = hw_alloc_mw(p->pd, IBV_MW_TYPE_1);

	if (!mw)
		return;
	if (bind1(p, mw, *x, 0x90, "A's send CQ (a type-1 window bound to MR X)") ||
	    bind1(p, mw, *y, 0x91, "A's send CQ (the window rebound to MR Y)"))
		goto out;
	rcp_dereg_expect(p, x, 0, "MR X, whose only window was rebound to MR Y");
	if (!rcp_failed(p))
		rcp_dereg_expect(p, y, EBUSY, "MR Y, a type-1 window is bound to it");
	if (rcp_failed(p))
		goto out;
	if (unbind) {
		if (bind1(p, mw, NULL, 0x92, "A's send CQ (the window unbound by a zero-length bind)"))
			goto out;
	} else {
		hw_dealloc_mw(mw);
		mw = NULL;
	}
	rcp_dereg_expect(p, y, 0,
		     unbind ? "MR Y, its window was unbound by a zero-length bind" : "MR Y, its window was deallocated");
out:
	if (mw)
		hw_dealloc_mw(mw);
}

static void hold_type2(struct rcp *p, struct ibv_mr **x)
{
	struct ibv_mw *mw = hw_alloc_mw(p->pd, IBV_MW_TYPE_2);
	struct ibv_send_wr wr = {.wr_id = p->base_id + 0x93, .opcode = IBV_WR_BIND_MW};
	uint32_t rkey;

	if (!mw)
		return;
	rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
	    .mr = *x, .addr = (uintptr_t)(*x)->addr, .length = 64, .mw_access_flags = IBV_ACCESS_REMOTE_WRITE};
	if (rcp_post_a(p, &wr, IBV_WC_BIND_MW, "A's send CQ (a type-2 window bound to MR X)"))
		goto out;
	rcp_dereg_expect(p, x, EBUSY, "MR X, a type-2 window is bound to it");
	if (rcp_failed(p))
		goto out;
	wr = (struct ibv_send_wr){.wr_id = p->base_id + 0x94, .opcode = IBV_WR_LOCAL_INV, .invalidate_rkey = rkey};
	if (rcp_post_a(p, &wr, IBV_WC_LOCAL_INV, "A's send CQ (LOCAL_INV of the type-2 window)"))
		goto out;
	rcp_dereg_expect(p, x, 0, "MR X, its type-2 window was invalidated");
out:
	hw_dealloc_mw(mw);
}

/* A window allocated right after one was deallocated has another rkey. */
static void mw_rotation(struct rcp *p)
{
	struct ibv_mw *mw = hw_alloc_mw(p->pd, IBV_MW_TYPE_1);
	uint32_t old;

	if (!mw)
		return;
	old = mw->rkey;
	hw_dealloc_mw(mw);
	if (!(mw = hw_alloc_mw(p->pd, IBV_MW_TYPE_1)))
		return;
	if (mw->rkey == old)
		rcp_fail(p, "a window allocated right after another was deallocated got its rkey %#x again", old);
	hw_dealloc_mw(mw);
}

void rcp_case_keys(struct rcp *p)
{
	uint64_t caps;
	struct ibv_mr *x = NULL, *y = NULL, *stale;
	uint32_t old_l, old_r, at = RCP_TGT + KEY_SLOT_STALE * RCP_SLOT + 8 * (uint32_t)rng_range(p->rng, 0, 8);
	struct rcp_piece from = {RCP_SRC + 256, 16};
	struct rcp_exp e;

	p->name = "keys: rotation on reuse, a stale rkey, a window's hold on its MR";
	p->shape = (struct rcp_shape){
	    .scqe = RCP_CQE, .a_send_wr = 8, .a_recv_wr = 1, .b_recv_wr = 1, .a_rnr_retry = 7};
	if (rcp_setup(p))
		return;
	caps = p->dev->dattr.device_cap_flags;
	/* The MR whose keys go stale, and the one registered at once over the same memory. */
	if (!(stale = small_mr(p, KEY_SLOT_STALE)))
		return;
	old_l = stale->lkey;
	old_r = stale->rkey;
	if (hw_dereg_mr(stale)) {
		rcp_fail(p, "ibv_dereg_mr of an MR (lkey %#x) nothing uses failed", old_l);
		return;
	}
	if (!(stale = small_mr(p, KEY_SLOT_STALE)))
		return;
	if (stale->lkey == old_l || stale->rkey == old_r) {
		rcp_fail(p,
			 "an MR registered over the memory of one deregistered just before got lkey %#x rkey %#x; "
			 "the old MR had lkey %#x rkey %#x: keys must change when a key is reused",
			 stale->lkey, stale->rkey, old_l, old_r);
		goto out;
	}
	if ((caps & IBV_DEVICE_MEM_WINDOW) && rng_bernoulli(p->rng, 0.5))
		mw_rotation(p);
	if (!rcp_failed(p) && (x = small_mr(p, KEY_SLOT_X)) && (y = small_mr(p, KEY_SLOT_Y))) {
		if ((caps & IBV_DEVICE_MEM_WINDOW_TYPE_2B) && rng_bernoulli(p->rng, 0.4))
			hold_type2(p, &x);
		else if (caps & IBV_DEVICE_MEM_WINDOW)
			hold_type1(p, &x, &y);
	}
	if (rcp_failed(p))
		goto out;
	/* Last (the error puts A in ERR): a WRITE through the deregistered MR's rkey, into the new MR's memory. */
	if (rcp_post1_rkey(p, p->a, p->base_id + 0x20, from, (uintptr_t)(p->buf + at), old_r))
		goto out;
	e = rcp_done(p->base_id + 0x20, IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_WRITE);
	rcp_expect(p, p->scq, "A's send CQ (a WRITE through the rkey of a deregistered MR)", &e, 1);
	rcp_check_memory(p);
out:
	if (x)
		hw_dereg_mr(x);
	if (y)
		hw_dereg_mr(y);
	hw_dereg_mr(stale);
}
