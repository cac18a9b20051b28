/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Probe scripts (rcprobe.h) for object lifetimes and CQ arming that the
 * walk never drives:
 *
 *  - a CQ armed while completions still wait in it raises an event for the
 *    next one (ibv_req_notify_cq(3): the next completion, whatever the CQ
 *    holds), and so does one armed and then resized (the arming outlives
 *    ibv_resize_cq);
 *  - a PD that an MR, a window or a QP still uses cannot be deallocated
 *    (EBUSY), and can be once they are gone;
 *  - ibv_rereg_mr(IBV_REREG_MR_CHANGE_PD) moves the MR's hold: the old PD
 *    can then be deallocated, the new one cannot until the MR is gone.
 *
 * A device may refuse a resize or a PD change; then there is nothing to
 * judge, and the script says so (abandoned), never fails.  The two arming
 * scripts live beside the other completion-event ones (rcprobe_more.c).
 */
#include "cmd/conform/rcp.h"

enum pd_user { USER_MR, USER_MW, USER_QP };

static const char *const user_name[] = {"an MR", "a memory window", "a QP"};

/* An object of kind u on pd (*cq: a CQ the QP needed); NULL when the device will not make one. */
static void *make_user(struct rcp *p, struct ibv_pd *pd, enum pd_user u, struct ibv_cq **cq)
{
	struct ibv_qp_init_attr init = {.qp_type = IBV_QPT_RC, .cap = {.max_send_wr = 1, .max_recv_wr = 1,
								       .max_send_sge = 1, .max_recv_sge = 1}};

	switch (u) {
	case USER_MR:
		return hw_reg_mr(pd, p->buf + RCP_TGT, RCP_SLOT, IBV_ACCESS_LOCAL_WRITE);
	case USER_MW:
		return hw_alloc_mw(pd, IBV_MW_TYPE_1);
	case USER_QP:
		if (!(*cq = hw_create_cq(p->dev->ctx, 4, NULL, NULL, 0)))
			return NULL;
		init.send_cq = init.recv_cq = *cq;
		return hw_create_qp(pd, &init);
	}
	return NULL;
}

static int free_user(enum pd_user u, void *obj, struct ibv_cq *cq)
{
	int rc = u == USER_MR ? hw_dereg_mr(obj) : u == USER_MW ? hw_dealloc_mw(obj) : hw_destroy_qp(obj);

	if (cq)
		hw_destroy_cq(cq);
	return rc;
}

/* ibv_dealloc_pd(3): a PD still in use is refused (EBUSY) and stays usable; once unused it goes. */
static void pd_in_use(struct rcp *p)
{
	enum pd_user u = (enum pd_user)rng_range(p->rng, USER_MR, USER_QP);
	struct ibv_pd *pd = hw_alloc_pd(p->dev->ctx);
	struct ibv_cq *cq = NULL;
	void *obj;
	int rc;

	p->name = "ibv_dealloc_pd of a PD in use";
	if (u == USER_MW && !(p->dev->dattr.device_cap_flags & IBV_DEVICE_MEM_WINDOW))
		u = USER_MR;
	if (!pd)
		return;
	if (!(obj = make_user(p, pd, u, &cq))) {
		if (cq)
			hw_destroy_cq(cq);
		hw_dealloc_pd(pd);
		return;
	}
	p->ran = true;
	rc = hw_dealloc_pd(pd);
	if (!rc) {
		/* The PD is gone under the object: releasing the object now would touch freed memory. */
		rcp_fail(p, "ibv_dealloc_pd of a PD with %s on it returned 0; expected EBUSY", user_name[u]);
		return;
	}
	rc = free_user(u, obj, cq);
	if (rc)
		rcp_fail(p, "freeing %s after its PD refused ibv_dealloc_pd returned %d (%s)", user_name[u], rc,
			 strerror(rc));
	else if ((rc = hw_dealloc_pd(pd)))
		rcp_fail(p, "ibv_dealloc_pd once %s on it was freed returned %d (%s); expected 0", user_name[u],
			 rc, strerror(rc));
}

/* ibv_rereg_mr(3) IBV_REREG_MR_CHANGE_PD: the MR leaves the old PD (free to go) for the new one (held). */
static void rereg_change_pd(struct rcp *p)
{
	struct ibv_pd *from = hw_alloc_pd(p->dev->ctx), *to = from ? hw_alloc_pd(p->dev->ctx) : NULL;
	struct ibv_mr *mr = to ? hw_reg_mr(from, p->buf + RCP_TGT, RCP_SLOT, IBV_ACCESS_LOCAL_WRITE) : NULL;
	bool from_held = false;
	int rc;

	p->name = "ibv_rereg_mr(IBV_REREG_MR_CHANGE_PD) and the PDs' holds";
	if (!mr || hw_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, to, NULL, 0, 0)) {
		p->abandoned = mr != NULL; /* a device need not move MRs between PDs */
		if (mr)
			hw_dereg_mr(mr);
		if (to)
			hw_dealloc_pd(to);
		if (from)
			hw_dealloc_pd(from);
		return;
	}
	p->ran = true;
	if (mr->pd != to)
		rcp_fail(p, "after ibv_rereg_mr(CHANGE_PD) the MR names PD %p; expected the new PD %p",
			 (void *)mr->pd, (void *)to);
	if ((rc = hw_dealloc_pd(from))) {
		rcp_fail(p, "ibv_dealloc_pd of the PD an MR moved away from returned %d (%s); expected 0", rc,
			 strerror(rc));
		from_held = true; /* tried again once the MR is gone */
	}
	if (!(rc = hw_dealloc_pd(to))) {
		rcp_fail(p, "ibv_dealloc_pd of the PD an MR moved to returned 0; expected EBUSY");
		return; /* the MR's PD is gone: leave the MR */
	}
	if ((rc = hw_dereg_mr(mr)))
		rcp_fail(p, "ibv_dereg_mr of the moved MR returned %d (%s)", rc, strerror(rc));
	else if ((rc = hw_dealloc_pd(to)))
		rcp_fail(p, "ibv_dealloc_pd of the new PD once the MR was gone returned %d (%s); expected 0", rc,
			 strerror(rc));
	if (from_held)
		hw_dealloc_pd(from);
}

void rcp_case_life(struct rcp *p)
{
	switch (rng_range(p->rng, 0, 3)) {
	case 0:
		rcp_notify_after(p, false);
		break;
	case 1:
		rcp_notify_after(p, true);
		break;
	case 2:
		pd_in_use(p);
		break;
	default:
		rereg_change_pd(p);
		break;
	}
}
