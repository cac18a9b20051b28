/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Probe script (rcprobe.h): who holds what, and what a device's claims
 * promise.  Each run checks one of:
 *
 *  - a completion channel is held by the CQs made on it and by nothing
 *    else: ibv_destroy_comp_channel fails (EBUSY) while one of them lives,
 *    and works once the last is destroyed;
 *  - a CQ is held by every QP that uses it, as its send CQ or as its
 *    receive CQ alone: ibv_destroy_cq fails (EBUSY) until the QP is gone;
 *  - REMOTE_READ alone needs no LOCAL_WRITE (ibv_reg_mr(3): only remote
 *    write and atomic rights do): such an MR is registered, and so is an
 *    ibv_rereg_mr(IBV_REREG_MR_CHANGE_ACCESS) to it; READs through it work,
 *    a WRITE through it fails with REM_ACCESS_ERR;
 *  - ibv_query_device's atomic_cap: a device claiming IBV_ATOMIC_NONE must
 *    not execute a FETCH_ADD, one claiming more must.
 */
#include "cmd/conform/rcp.h"

#include <errno.h>
#include <string.h>

enum { HD_CHANNEL, HD_CQ, HD_READ_ONLY, HD_ATOMIC_CAP, HD_KINDS };

static const char *const hd_names[HD_KINDS] = {
    "holds: a completion channel held by its CQs only",
    "holds: a CQ held by a QP using it for sends or receives only",
    "holds: an MR with REMOTE_READ alone, registered and reregistered",
    "holds: atomic_cap against a FETCH_ADD",
};

static void channel_held(struct rcp *p)
{
	struct ibv_comp_channel *ch = hw_create_comp_channel(p->dev->ctx);
	struct ibv_cq *cq[3] = {NULL, NULL, NULL};
	int n = (int)rng_range(p->rng, 1, 3), rc;

	if (!ch)
		return;
	for (int i = 0; i < n; i++)
		if (!(cq[i] = hw_create_cq(p->dev->ctx, 4, NULL, ch, 0)))
			goto out;
	if ((rc = hw_destroy_comp_channel(ch)) != EBUSY) {
		rcp_fail(p, "ibv_destroy_comp_channel of a channel %d CQs use returned %d (%s); expected EBUSY", n,
			 rc, rc ? strerror(rc) : "success");
		if (!rc)
			ch = NULL;
		goto out;
	}
	for (int i = n - 1; i >= 0; i--) { /* last made, first gone: no order is special */
		int k = (int)rng_range(p->rng, 0, (uint64_t)i);
		struct ibv_cq *x = cq[k];

		cq[k] = cq[i];
		cq[i] = NULL;
		if ((rc = hw_destroy_cq(x))) {
			rcp_fail(p, "ibv_destroy_cq of an idle CQ on a channel returned %d (%s)", rc, strerror(rc));
			goto out;
		}
	}
	if ((rc = hw_destroy_comp_channel(ch)))
		rcp_fail(p, "ibv_destroy_comp_channel after its %d CQs were destroyed returned %d (%s); expected 0", n,
			 rc, strerror(rc));
	else
		ch = NULL;
out:
	for (int i = 0; i < 3; i++)
		if (cq[i])
			hw_destroy_cq(cq[i]);
	if (ch)
		hw_destroy_comp_channel(ch);
}

static void cq_held(struct rcp *p)
{
	bool by_recv = rng_bernoulli(p->rng, 0.5);
	enum ibv_qp_type t = rng_bernoulli(p->rng, 0.5) ? IBV_QPT_RC : IBV_QPT_UD;
	struct ibv_cq *other = hw_create_cq(p->dev->ctx, 4, NULL, NULL, 0), *held = NULL;
	struct ibv_qp *qp = NULL;
	int rc;

	if (!other || !(held = hw_create_cq(p->dev->ctx, 4, NULL, NULL, 0)) ||
	    !(qp = rcp_qp(p, t, by_recv ? other : held, by_recv ? held : other)))
		goto out;
	if ((rc = hw_destroy_cq(held)) != EBUSY) {
		rcp_fail(p, "ibv_destroy_cq of the %s CQ of a live %s QP returned %d (%s); expected EBUSY",
			 by_recv ? "receive" : "send", t == IBV_QPT_RC ? "RC" : "UD", rc,
			 rc ? strerror(rc) : "success");
		if (!rc)
			held = NULL;
		goto out;
	}
	rc = hw_destroy_qp(qp);
	qp = NULL;
	if (!rc && (rc = hw_destroy_cq(held)))
		rcp_fail(p, "ibv_destroy_cq of a CQ whose only QP was destroyed returned %d (%s)", rc, strerror(rc));
	else if (!rc)
		held = NULL;
out:
	if (qp)
		hw_destroy_qp(qp);
	if (held)
		hw_destroy_cq(held);
	if (other)
		hw_destroy_cq(other);
}

/* A signaled READ (or WRITE) by A of len bytes at off through rkey, and its completion's status. */
static enum ibv_wc_status through(struct rcp *p, enum ibv_wr_opcode op, uint64_t id, uint32_t off, uint32_t len,
				  uint32_t rkey, uint32_t local)
{
	struct ibv_sge sge = {(uintptr_t)(p->buf + local), len, p->mr->lkey};
	struct ibv_wc wc;

	if (rcp_post1_through(p->a, op, id, sge, (uintptr_t)(p->buf + off), rkey)) {
		rcp_fail(p, "a %s through an MR's rkey refused at post", op == IBV_WR_RDMA_READ ? "READ" : "WRITE");
		return IBV_WC_GENERAL_ERR;
	}
	if (!rcp_poll1(p, p->scq, &wc))
		return IBV_WC_GENERAL_ERR;
	if (wc.wr_id != id)
		rcp_fail(p, "A's send CQ: wr_id %#llx; expected %#llx", (unsigned long long)wc.wr_id,
			 (unsigned long long)id);
	return wc.status;
}

static void read_only(struct rcp *p)
{
	uint32_t at = RCP_TGT + 5 * RCP_SLOT, len = (uint32_t)rng_range(p->rng, 1, 256);
	bool rereg = rng_bernoulli(p->rng, 0.5);
	struct rcp_piece from = {at, len}, to = {RCP_RDST + 64, len};
	struct ibv_mr *mr = hw_reg_mr(p->pd, p->buf + at, RCP_SLOT,
				      rereg ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE
					    : IBV_ACCESS_REMOTE_READ);
	enum ibv_wc_status st;
	int rc;

	if (!mr) {
		if (!rereg)
			rcp_fail(p, "ibv_reg_mr with IBV_ACCESS_REMOTE_READ alone failed: %s", strerror(errno));
		return;
	}
	if (rereg && (rc = hw_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, IBV_ACCESS_REMOTE_READ))) {
		rcp_fail(p, "ibv_rereg_mr(IBV_REREG_MR_CHANGE_ACCESS) to IBV_ACCESS_REMOTE_READ alone failed (%d)",
			 rc);
		hw_dereg_mr(mr);
		return;
	}
	if ((st = through(p, IBV_WR_RDMA_READ, p->base_id, at, len, mr->rkey, to.off)) != IBV_WC_SUCCESS) {
		rcp_fail(p, "a READ through the rkey of an MR %s REMOTE_READ alone completed with %s",
			 rereg ? "reregistered to" : "registered with", ibv_wc_status_str(st));
	} else {
		rcp_model_move(p, &from, 1, &to, 1);
		st = through(p, IBV_WR_RDMA_WRITE, p->base_id + 1, at, len, mr->rkey, RCP_SRC);
		if (st != IBV_WC_REM_ACCESS_ERR && !rcp_failed(p))
			rcp_fail(p, "a WRITE through the rkey of an MR with REMOTE_READ alone completed with %s; "
				    "expected REM_ACCESS_ERR",
				 ibv_wc_status_str(st));
		rcp_check_memory(p);
	}
	hw_dereg_mr(mr);
}

static void atomic_cap(struct rcp *p)
{
	bool none = p->dev->dattr.atomic_cap == IBV_ATOMIC_NONE;
	uint32_t at = RCP_TGT + 8 * (uint32_t)rng_range(p->rng, 0, 63);
	struct ibv_sge sge = {(uintptr_t)(p->buf + RCP_RDST), 8, p->mr->lkey};
	struct rcp_piece res = {RCP_RDST, 8}, tgt = {at, 8};
	struct ibv_wc wc;
	uint64_t v;

	if (rcp_post1(p, p->a, IBV_WR_ATOMIC_FETCH_AND_ADD, p->base_id, sge, (uintptr_t)(p->buf + at))) {
		if (!none)
			rcp_fail(p, "a FETCH_ADD refused at post although atomic_cap is %d", p->dev->dattr.atomic_cap);
		return;
	}
	if (!rcp_poll1(p, p->scq, &wc))
		return;
	if (none && wc.status == IBV_WC_SUCCESS)
		rcp_fail(p, "a FETCH_ADD succeeded although ibv_query_device says atomic_cap IBV_ATOMIC_NONE");
	else if (!none && wc.status != IBV_WC_SUCCESS)
		rcp_fail(p, "a FETCH_ADD completed with %s although atomic_cap is %d", ibv_wc_status_str(wc.status),
			 p->dev->dattr.atomic_cap);
	if (wc.status != IBV_WC_SUCCESS)
		return;
	rcp_model_move(p, &tgt, 1, &res, 1);
	memcpy(&v, p->model + at, 8);
	v += 1; /* rcp_post1's FETCH_ADD adds 1 */
	memcpy(p->model + at, &v, 8);
	rcp_check_memory(p);
}

void rcp_case_holds(struct rcp *p)
{
	int kind = rcp_variant(p, HD_KINDS);

	p->name = hd_names[kind];
	p->shape = (struct rcp_shape){
	    .scqe = RCP_CQE, .a_send_wr = 4, .a_recv_wr = 1, .b_recv_wr = 2, .a_rnr_retry = 7};
	if (rcp_setup(p))
		return;
	if (kind == HD_CHANNEL)
		channel_held(p);
	else if (kind == HD_CQ)
		cq_held(p);
	else if (kind == HD_READ_ONLY)
		read_only(p);
	else
		atomic_cap(p);
}
