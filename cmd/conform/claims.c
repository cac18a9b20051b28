/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Probe script (rcprobe.h): what the device claims must work, and an
 * unsignaled WR that fails must still complete.
 *
 *  - claims: ibv_query_device agrees with itself over time and with
 *    ibv_query_device_ex's orig_attr; its IBV_DEVICE_MEM_WINDOW and
 *    IBV_DEVICE_MEM_WINDOW_TYPE_2B make ibv_alloc_mw of type 1 and type 2
 *    succeed; an RC QP asking for max_sge SGEs each way is created with at
 *    least that many, one asking for max_sge + 1 is refused;
 *  - unsignaled error: unsignaled WRITEs, the last one past the end of its
 *    MR: the good ones complete silently and land, the bad one completes
 *    with REM_ACCESS_ERR all the same (an error always completes,
 *    ibv_post_send(3), IBTA 10.8.3) and A is in ERR.
 */
#include "cmd/conform/rcp.h"

#include <stddef.h>
#include <string.h>

/*
 * One device, one set of attributes: ibv_query_device now, at the walk's
 * start and as ibv_query_device_ex's orig_attr must agree (every field
 * after fw_ver, compared as bytes up to the last one; fw_ver as a string).
 */
static void attrs_agree(struct rcp *p, const struct ibv_device_attr *now)
{
	const size_t from = offsetof(struct ibv_device_attr, node_guid),
		     to = offsetof(struct ibv_device_attr, phys_port_cnt) + sizeof(now->phys_port_cnt);
	struct ibv_device_attr_ex x;

	memset(&x, 0, sizeof(x));
	if (memcmp((const char *)now + from, (const char *)&p->dev->dattr + from, to - from) ||
	    strncmp(now->fw_ver, p->dev->dattr.fw_ver, sizeof(now->fw_ver)))
		rcp_fail(p, "ibv_query_device now reports other attributes than at the start of the walk");
	else if (ibv_query_device_ex(p->dev->ctx, NULL, &x) == 0 &&
		 (memcmp((const char *)now + from, (const char *)&x.orig_attr + from, to - from) ||
		  strncmp(now->fw_ver, x.orig_attr.fw_ver, sizeof(now->fw_ver))))
		rcp_fail(p, "ibv_query_device_ex's orig_attr differs from ibv_query_device (atomic_cap %d and %d, "
			    "device_cap_flags %#x and %#x, max_qp_wr %d and %d)",
			 x.orig_attr.atomic_cap, now->atomic_cap, x.orig_attr.device_cap_flags, now->device_cap_flags,
			 x.orig_attr.max_qp_wr, now->max_qp_wr);
}

static void claims(struct rcp *p)
{
	struct ibv_device_attr d;
	struct ibv_qp_init_attr init = {.send_cq = p->ocq, .recv_cq = p->ocq, .qp_type = IBV_QPT_RC};
	struct ibv_qp *qp;
	struct ibv_mw *mw;

	memset(&d, 0, sizeof(d));
	if (hw_query_device(p->dev->ctx, &d))
		return;
	attrs_agree(p, &d);
	for (int t = 0; t < 2; t++) {
		int flag = t ? IBV_DEVICE_MEM_WINDOW_TYPE_2B : IBV_DEVICE_MEM_WINDOW;

		if (!(d.device_cap_flags & flag) || !d.max_mw)
			continue;
		if (!(mw = hw_alloc_mw(p->pd, t ? IBV_MW_TYPE_2 : IBV_MW_TYPE_1)))
			rcp_fail(p, "ibv_alloc_mw of type %d failed (%s) although ibv_query_device claims %s",
				 t + 1, strerror(errno),
				 t ? "IBV_DEVICE_MEM_WINDOW_TYPE_2B" : "IBV_DEVICE_MEM_WINDOW");
		else
			hw_dealloc_mw(mw);
	}
	if (d.max_sge <= 0 || d.max_sge > 64)
		return;
	init.cap = (struct ibv_qp_cap){.max_send_wr = 1,
				       .max_recv_wr = 1,
				       .max_send_sge = (uint32_t)d.max_sge,
				       .max_recv_sge = (uint32_t)d.max_sge};
	if (!(qp = hw_create_qp(p->pd, &init))) {
		rcp_fail(p, "ibv_create_qp of an RC QP with max_sge = %d SGEs each way failed: %s", d.max_sge,
			 strerror(errno));
		return;
	}
	if (init.cap.max_send_sge < (uint32_t)d.max_sge || init.cap.max_recv_sge < (uint32_t)d.max_sge)
		rcp_fail(p, "ibv_create_qp asked for %d SGEs each way reported %u send, %u receive",
			 d.max_sge, init.cap.max_send_sge, init.cap.max_recv_sge);
	hw_destroy_qp(qp);
	init.cap = (struct ibv_qp_cap){
	    .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = (uint32_t)d.max_sge + 1, .max_recv_sge = 1};
	if ((qp = hw_create_qp(p->pd, &init))) {
		rcp_fail(p,
			 "ibv_create_qp of an RC QP with max_send_sge = max_sge + 1 = %d succeeded (qpn %u)",
			 d.max_sge + 1, qp->qp_num);
		hw_destroy_qp(qp);
	}
}

static void unsignaled_error(struct rcp *p)
{
	int k = (int)rng_range(p->rng, 0, 3);
	struct ibv_send_wr wr[4], *bad;
	struct ibv_sge sge[4];
	struct rcp_exp e;
	int rc;

	for (int i = 0; i <= k; i++) {
		uint32_t src = RCP_SRC + 64 * (uint32_t)i, dst = RCP_TGT + (uint32_t)i * RCP_SLOT;

		sge[i] = (struct ibv_sge){(uintptr_t)(p->buf + src), 32, p->mr->lkey};
		wr[i] = (struct ibv_send_wr){.wr_id = p->base_id + (uint64_t)i,
					     .next = i < k ? &wr[i + 1] : NULL,
					     .sg_list = &sge[i],
					     .num_sge = 1,
					     .opcode = IBV_WR_RDMA_WRITE};
		wr[i].wr.rdma.rkey = p->mr->rkey;
		wr[i].wr.rdma.remote_addr = (uintptr_t)(p->buf + dst);
		if (i < k)
			memcpy(p->model + dst, p->model + src, 32);
	}
	wr[k].wr.rdma.remote_addr = (uintptr_t)(p->buf + RCP_BYTES - 16); /* 16 bytes past the MR's end */
	e = rcp_done(wr[k].wr_id, IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_WRITE);
	if ((rc = hw_post_send(p->a, wr, &bad))) {
		rcp_fail(p, "%d unsignaled WRITEs refused at WR %d: %s", k + 1, (int)(bad - wr) + 1,
			 strerror(rc));
		return;
	}
	rcp_expect(p, p->scq,
		   "A's send CQ (unsignaled WRITEs, the last past its MR's end: only it completes, in error)",
		   &e, 1);
	rcp_expect_state(p, p->a, "A after a remote access error", IBV_QPS_ERR);
	rcp_check_memory(p);
}

void rcp_case_claims(struct rcp *p)
{
	bool err = rng_bernoulli(p->rng, 0.5);

	p->name = err ? "claims: an unsignaled WR that fails completes"
		      : "claims: what ibv_query_device claims works";
	p->shape = (struct rcp_shape){
	    .scqe = RCP_CQE, .a_send_wr = 8, .a_recv_wr = 1, .b_recv_wr = 2, .a_rnr_retry = 7};
	if (rcp_setup(p))
		return;
	if (err)
		unsignaled_error(p);
	else
		claims(p);
}
