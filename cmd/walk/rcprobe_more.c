/* SPDX-License-Identifier: MIT */
/*
 * More probe scripts (rcprobe.h) for parts of the device the walk never
 * reaches:
 *
 *  - local access: a READ or an atomic result into an MR without
 *    LOCAL_WRITE, a SEND gathered from an lkey of another PD or of a
 *    deregistered MR (LOC_PROT_ERR at A); a receive into an MR without
 *    LOCAL_WRITE or of another PD (LOC_PROT_ERR at B, REM_OP_ERR at A);
 *    a SEND gathered from an MR without LOCAL_WRITE (it works);
 *  - completion events: an armed CQ raises exactly one event, for a
 *    solicited message when armed for those only, none once disarmed;
 *  - UD: a chain of datagrams with the GRH scattered over several SGEs:
 *    byte_len, IBV_WC_GRH, src_qp, immediate data, the GRH's GIDs and the
 *    payload; one with a wrong Q_Key is dropped, one with the privileged
 *    Q_Key bit takes the receiver's; one larger than the MTU fails.
 */
#include "cmd/walk/rcprobe.h"

#include <fcntl.h>

#define RCP_QKEY	  0x2a6b0000u
#define RCP_EVENT_NS	  (3000 * 1000000ull)
#define RCP_QUIET_NS	  (2 * 1000000ull)
#define RCP_UD_WR	  6
#define RCP_GRH		  40u
#define RCP_REMOTE_RIGHTS (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

static struct rcp_exp done(uint64_t wr_id, enum ibv_wc_status st, enum ibv_wc_opcode op)
{
	return (struct rcp_exp){.wr_id = wr_id, .status = st, .opcode = op};
}

static int post1(struct rcp *p, struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, struct ibv_sge sge,
		 uint64_t raddr)
{
	struct ibv_send_wr wr = {.wr_id = wr_id,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = p->mr->rkey;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = p->mr->rkey;
		wr.wr.atomic.compare_add = 1;
	}
	return hw_post_send(qp, &wr, &bad);
}

static int recv1(struct ibv_qp *qp, uint64_t wr_id, struct ibv_sge sge)
{
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1}, *bad;

	return hw_post_recv(qp, &wr, &bad);
}

/* A signaled WRITE of `from` to raddr through rkey. */
static int post1_rkey(struct rcp *p, struct ibv_qp *qp, uint64_t wr_id, struct rcp_piece from, uint64_t raddr,
		      uint32_t rkey)
{
	struct ibv_sge sge = {(uintptr_t)(p->buf + from.off), from.len, p->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = wr_id,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return hw_post_send(qp, &wr, &bad);
}

enum {
	LA_READ_RO,
	LA_ATOMIC_RO,
	LA_SEND_OTHER_PD,
	LA_SEND_DEREGD,
	LA_RECV_RO,
	LA_RECV_OTHER_PD,
	LA_SEND_FROM_RO,
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
};

void rcp_case_local(struct rcp *p)
{
	int kind = (int)rng_range(p->rng, 0, LA_KINDS - 1), rc;
	uint32_t at = RCP_RDST + 7 * RCP_SLOT, len = (uint32_t)rng_range(p->rng, 8, 64);
	struct ibv_pd *pd2 = NULL;
	struct ibv_mr *odd = NULL;
	struct ibv_sge sge;
	bool at_b = kind == LA_RECV_RO || kind == LA_RECV_OTHER_PD;
	struct rcp_exp a_exp[2], b_exp[2];

	p->name = la_names[kind];
	p->shape = (struct rcp_shape){
	    .scqe = RCP_CQE, .a_send_wr = 4, .a_recv_wr = 1, .b_recv_wr = 4, .a_rnr_retry = 7};
	if (rcp_setup(p))
		return;
	if (kind == LA_SEND_OTHER_PD || kind == LA_RECV_OTHER_PD) {
		if ((pd2 = hw_alloc_pd(p->c->ctx)))
			odd = hw_reg_mr(pd2, p->buf + at, RCP_SLOT, IBV_ACCESS_LOCAL_WRITE);
	} else if (kind == LA_SEND_DEREGD) {
		if ((odd = hw_reg_mr(p->pd, p->buf + at, RCP_SLOT, IBV_ACCESS_LOCAL_WRITE)) &&
		    hw_dereg_mr(odd) == 0) {
			sge = (struct ibv_sge){(uintptr_t)(p->buf + at), len, odd->lkey};
			odd = NULL;
			goto post;
		}
	} else {
		odd = hw_reg_mr(p->pd, p->buf + at, RCP_SLOT, IBV_ACCESS_REMOTE_READ);
	}
	if (!odd)
		goto out;
	sge = (struct ibv_sge){(uintptr_t)(p->buf + at), len, odd->lkey};
post:
	if (kind == LA_SEND_FROM_RO) {
		memcpy(p->model + RCP_RECV, p->model + at, len);
		rc = recv1(p->b, p->base_id + 0x40,
			   (struct ibv_sge){(uintptr_t)(p->buf + RCP_RECV), 64, p->mr->lkey});
		a_exp[0] = done(p->base_id, IBV_WC_SUCCESS, IBV_WC_SEND);
		b_exp[0] = done(p->base_id + 0x40, IBV_WC_SUCCESS, IBV_WC_RECV);
		b_exp[0].check_len = true;
		b_exp[0].byte_len = len;
	} else if (at_b) {
		rc = recv1(p->b, p->base_id + 0x40, sge);
		sge = (struct ibv_sge){(uintptr_t)(p->buf + RCP_SRC), len, p->mr->lkey};
		a_exp[0] = done(p->base_id, IBV_WC_REM_OP_ERR, IBV_WC_SEND);
		b_exp[0] = done(p->base_id + 0x40, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV);
	} else {
		rc = 0;
		a_exp[0] = done(p->base_id, IBV_WC_LOC_PROT_ERR, IBV_WC_SEND);
	}
	if (kind == LA_ATOMIC_RO)
		sge.length = 8;
	if (!rc)
		rc = post1(p, p->a,
			   kind == LA_READ_RO	  ? IBV_WR_RDMA_READ
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

static int cq_events(struct rcp *p, struct ibv_comp_channel *ch, uint64_t wait_ns, unsigned *acked)
{
	uint64_t end = walk_now_ns() + wait_ns;
	struct ibv_cq *cq;
	void *ctx;
	int n = 0;
	unsigned idle = 0;

	for (;;) {
		if (hw_get_cq_event(ch, &cq, &ctx) == 0) {
			if (cq != p->rcq)
				rcp_fail(p, "a completion event named another CQ (%p, expected %p)",
					 (void *)cq, (void *)p->rcq);
			else
				++*acked;
			n++;
			continue;
		}
		if (n || walk_now_ns() >= end)
			return n;
		rcp_idle(&idle);
	}
}

/* Sends one message to B, solicited or not, and takes its receive completion. */
static void message(struct rcp *p, int i, bool solicited)
{
	struct ibv_sge sge = {(uintptr_t)(p->buf + RCP_SRC), 16, p->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = p->base_id + (uint64_t)i,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED | (solicited ? IBV_SEND_SOLICITED : 0)},
			   *bad;
	struct rcp_exp r = done(p->base_id + 0x40 + (uint64_t)i, IBV_WC_SUCCESS, IBV_WC_RECV),
		       s = done(wr.wr_id, IBV_WC_SUCCESS, IBV_WC_SEND);

	memcpy(p->model + RCP_RECV + 64 * (uint32_t)i, p->model + RCP_SRC, 16);
	if (recv1(p->b, r.wr_id,
		  (struct ibv_sge){(uintptr_t)(p->buf + RCP_RECV + 64 * (uint32_t)i), 64, p->mr->lkey}) ||
	    hw_post_send(p->a, &wr, &bad)) {
		rcp_fail(p, "message %d refused at post", i + 1);
		return;
	}
	rcp_expect(p, p->rcq, "B's receive CQ", &r, 1);
	rcp_expect(p, p->scq, "A's send CQ", &s, 1);
}

void rcp_case_notify(struct rcp *p)
{
	bool only_solicited = rng_bernoulli(p->rng, 0.5), first_solicited = rng_bernoulli(p->rng, 0.5);
	bool first_wakes = !only_solicited || first_solicited;
	unsigned acked = 0;
	int n;

	p->name = only_solicited ? "completion events, armed for solicited messages" : "completion events";
	p->shape = (struct rcp_shape){.scqe = RCP_CQE,
				      .a_send_wr = 4,
				      .a_recv_wr = 1,
				      .b_recv_wr = 4,
				      .a_rnr_retry = 7,
				      .channel = true};
	if (rcp_setup(p) || !p->ch)
		return;
	if (fcntl(p->ch->fd, F_SETFL, fcntl(p->ch->fd, F_GETFL) | O_NONBLOCK) ||
	    hw_req_notify_cq(p->rcq, only_solicited))
		return;
	message(p, 0, first_solicited);
	n = cq_events(p, p->ch, first_wakes ? RCP_EVENT_NS : RCP_QUIET_NS, &acked);
	if (n != (first_wakes ? 1 : 0))
		rcp_fail(
		    p,
		    "a %ssolicited message to a CQ armed (solicited_only=%d) raised %d events; expected %d",
		    first_solicited ? "" : "not ", only_solicited, n, first_wakes);
	if (!rcp_failed(p)) {
		message(p, 1, true);
		n = cq_events(p, p->ch, first_wakes ? RCP_QUIET_NS : RCP_EVENT_NS, &acked);
		if (n != (first_wakes ? 0 : 1))
			rcp_fail(p, "a solicited message to a CQ %s raised %d events; expected %d",
				 first_wakes ? "whose one arming was used" : "armed for solicited messages",
				 n, !first_wakes);
	}
	rcp_check_memory(p);
	hw_ack_cq_events(p->rcq, acked);
}

static int ud_qp(struct rcp *p, struct ibv_cq *scq, struct ibv_cq *rcq, struct ibv_qp **out)
{
	struct ibv_qp_init_attr init = {
	    .send_cq = scq,
	    .recv_cq = rcq,
	    .qp_type = IBV_QPT_UD,
	    .cap = {.max_send_wr = RCP_UD_WR,
		    .max_recv_wr = RCP_UD_WR,
		    .max_send_sge = (uint32_t)imin(RCP_MAX_SGE, p->c->dattr.max_sge),
		    .max_recv_sge = (uint32_t)imin(RCP_MAX_SGE, p->c->dattr.max_sge)}};
	struct ibv_qp_attr a = {
	    .qp_state = IBV_QPS_INIT, .port_num = (uint8_t)p->c->cfg->port, .qkey = RCP_QKEY};
	struct ibv_qp *qp = hw_create_qp(p->pd, &init);

	if (!(*out = qp) ||
	    hw_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return -1;
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTR};
	if (hw_modify_qp(qp, &a, IBV_QP_STATE))
		return -1;
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTS, .sq_psn = 0};
	return hw_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

static void gather(const struct rcp *p, const struct rcp_piece *pc, int n, unsigned char *out, uint32_t len)
{
	uint32_t at = 0;

	for (int i = 0; i < n && at < len; i++) {
		uint32_t take = pc[i].len < len - at ? pc[i].len : len - at;

		memcpy(out + at, p->buf + pc[i].off, take);
		at += take;
	}
}

/* The parts of a GRH the API defines: IP version 6, the sender's and the destination's GID. */
static void check_grh(struct rcp *p, int i, const struct rcp_piece *pc, int n)
{
	unsigned char grh[RCP_GRH];
	const union ibv_gid *me = &p->c->peers[p->c->id].gid;

	gather(p, pc, n, grh, RCP_GRH);
	if (grh[0] >> 4 != 6 || memcmp(grh + 8, me->raw, 16) || memcmp(grh + 24, me->raw, 16))
		rcp_fail(p, "datagram %d: the GRH in front of it has IP version %u and sgid/dgid %s our GID",
			 i + 1, grh[0] >> 4,
			 memcmp(grh + 8, me->raw, 16) || memcmp(grh + 24, me->raw, 16) ? "not" : "both");
	/* The model takes the GRH as it is: its other fields are the device's. */
	for (int k = 0, at = 0; k < n && at < (int)RCP_GRH; k++) {
		uint32_t take = pc[k].len < RCP_GRH - (uint32_t)at ? pc[k].len : RCP_GRH - (uint32_t)at;

		memcpy(p->model + pc[k].off, p->buf + pc[k].off, take);
		at += (int)take;
	}
}

void rcp_case_ud(struct rcp *p)
{
	struct ibv_ah_attr aha = {
	    .dlid = p->c->peers[p->c->id].lid, .port_num = (uint8_t)p->c->cfg->port, .is_global = 1};
	struct ibv_send_wr wr[RCP_UD_WR], *bad;
	struct ibv_sge sge[RCP_UD_WR][RCP_MAX_SGE];
	struct rcp_piece src[RCP_UD_WR][RCP_MAX_SGE], dst[RCP_UD_WR][RCP_MAX_SGE];
	int nd[RCP_UD_WR], n = (int)rng_range(p->rng, 1, RCP_UD_WR - 1), nb = 0, wrong = -1;
	struct rcp_exp aexp[RCP_UD_WR], bexp[RCP_UD_WR];
	struct ibv_qp *ua = NULL, *ub = NULL, *rc_a, *rc_b;
	struct ibv_ah *ah = NULL;
	bool too_long = rng_bernoulli(p->rng, 0.2);
	uint32_t mtu = 128u << p->c->pattr.active_mtu;

	p->name = "UD datagrams";
	p->shape = (struct rcp_shape){
	    .scqe = RCP_CQE, .a_send_wr = 1, .a_recv_wr = 1, .b_recv_wr = 1, .a_rnr_retry = 7};
	if (rcp_setup(p))
		return;
	rc_a = p->a;
	rc_b = p->b;
	if (ud_qp(p, p->scq, p->ocq, &ua) || ud_qp(p, p->ocq, p->rcq, &ub))
		goto out;
	aha.grh.dgid = p->c->peers[p->c->id].gid;
	aha.grh.sgid_index = (uint8_t)p->c->cfg->gid_index;
	aha.grh.hop_limit = 64;
	if (!(ah = hw_create_ah(p->pd, &aha)))
		goto out;
	if (n > 1 && rng_bernoulli(p->rng, 0.3))
		wrong = (int)rng_range(p->rng, 0, (uint64_t)n - 1);
	for (int i = 0; i < n; i++) {
		uint32_t len = (uint32_t)rng_range(p->rng, 0, RCP_SMALL_MSG),
			 off = RCP_SRC + (uint32_t)i * RCP_SLOT;
		int ns = rcp_pieces(p, off, len, (int)rng_range(p->rng, 1, RCP_MAX_SGE), 16, src[i]);
		bool imm = rng_bernoulli(p->rng, 0.5);

		rcp_sges(p, src[i], ns, sge[i]);
		wr[i] = (struct ibv_send_wr){.wr_id = p->base_id + (uint64_t)i,
					     .next = i + 1 < n ? &wr[i + 1] : NULL,
					     .sg_list = sge[i],
					     .num_sge = ns,
					     .opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
					     .send_flags = IBV_SEND_SIGNALED,
					     .imm_data = (uint32_t)rng_next(p->rng)};
		wr[i].wr.ud.ah = ah;
		wr[i].wr.ud.remote_qpn = ub->qp_num;
		wr[i].wr.ud.remote_qkey = i == wrong		       ? RCP_QKEY ^ 0x100
					  : rng_bernoulli(p->rng, 0.2) ? 0x80000000u
								       : RCP_QKEY;
		aexp[i] = done(wr[i].wr_id, IBV_WC_SUCCESS, IBV_WC_SEND);
		if (i == n - 1 && too_long && off + mtu + 1 <= RCP_RECV) {
			sge[i][0] = (struct ibv_sge){(uintptr_t)(p->buf + off), mtu + 1, p->mr->lkey};
			wr[i].num_sge = 1;
			aexp[i].status = IBV_WC_LOC_LEN_ERR;
			continue;
		}
		if (i == wrong)
			continue;
		/* A receive for it: the GRH and the payload scattered over several SGEs, some room to spare.
		 */
		nd[nb] = rcp_pieces(p, RCP_RECV + (uint32_t)nb * RCP_SLOT,
				    RCP_GRH + len + (uint32_t)rng_range(p->rng, 0, 32),
				    (int)rng_range(p->rng, 1, RCP_MAX_SGE), 8, dst[nb]);
		{
			struct rcp_piece pay[RCP_MAX_SGE + 1];
			int np = 0;
			uint32_t skip = RCP_GRH;

			for (int k = 0; k < nd[nb]; k++) {
				if (dst[nb][k].len <= skip) {
					skip -= dst[nb][k].len;
					continue;
				}
				pay[np++] = (struct rcp_piece){dst[nb][k].off + skip, dst[nb][k].len - skip};
				skip = 0;
			}
			rcp_model_move(p, src[i], ns, pay, np);
		}
		bexp[nb] = done(p->base_id + 0x40 + (uint64_t)nb, IBV_WC_SUCCESS, IBV_WC_RECV);
		bexp[nb].check_len = true;
		bexp[nb].byte_len = RCP_GRH + len;
		bexp[nb].imm = imm;
		bexp[nb].imm_data = wr[i].imm_data;
		bexp[nb].ud = true;
		bexp[nb].src_qp = ua->qp_num;
		nb++;
	}
	for (int k = 0; k < nb; k++) {
		struct ibv_sge rs[RCP_MAX_SGE];
		struct ibv_recv_wr rw = {.wr_id = p->base_id + 0x40 + (uint64_t)k,
					 .sg_list = rs,
					 .num_sge = nd[k]},
				   *rbad;

		rcp_sges(p, dst[k], nd[k], rs);
		if (hw_post_recv(ub, &rw, &rbad)) {
			rcp_fail(p, "UD receive %d refused at post", k + 1);
			goto out;
		}
	}
	if (hw_post_send(ua, wr, &bad)) {
		rcp_fail(p, "a chain of %d datagrams refused at post", n);
		goto out;
	}
	p->a = ua; /* the messages name these two */
	p->b = ub;
	rcp_expect(p, p->scq, "UD sender's CQ", aexp, n);
	rcp_expect(p, p->rcq, "UD receiver's CQ", bexp, nb);
	rcp_expect_empty(p, p->rcq, "UD receiver's CQ (a datagram with a wrong Q_Key must be dropped)");
	for (int k = 0; k < nb && !rcp_failed(p); k++)
		check_grh(p, k, dst[k], nd[k]);
	rcp_check_memory(p);
out:
	p->a = rc_a;
	p->b = rc_b;
	if (ua)
		hw_destroy_qp(ua);
	if (ub)
		hw_destroy_qp(ub);
	if (ah)
		hw_destroy_ah(ah);
}

/*
 * A type-2 window bound to A over 64 bytes of its memory: B writes through
 * it; A invalidates it locally (IBV_WC_LOCAL_INV); B's next write through
 * the old rkey fails with REM_ACCESS_ERR and lands nowhere.
 */
void rcp_case_window(struct rcp *p)
{
	uint32_t at = RCP_TGT + 8 * (uint32_t)rng_range(p->rng, 0, 64);
	struct ibv_mw *mw = NULL;
	struct ibv_send_wr wr = {.wr_id = p->base_id + 0x90,
				 .opcode = IBV_WR_BIND_MW,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	struct rcp_exp e = done(wr.wr_id, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	struct rcp_piece from = {RCP_SRC + 64, 16}, to = {at + 8, 16};
	uint32_t rkey;

	p->name = "a type-2 window, invalidated locally";
	p->shape = (struct rcp_shape){
	    .scqe = RCP_CQE, .a_send_wr = 4, .a_recv_wr = 1, .b_recv_wr = 4, .a_rnr_retry = 7};
	if (!(p->c->dattr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) || rcp_setup(p) ||
	    !(mw = hw_alloc_mw(p->pd, IBV_MW_TYPE_2)))
		return;
	rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){.mr = p->mr,
							 .addr = (uintptr_t)(p->buf + at),
							 .length = 64,
							 .mw_access_flags = IBV_ACCESS_REMOTE_WRITE};
	if (hw_post_send(p->a, &wr, &bad))
		goto out;
	rcp_expect(p, p->scq, "A's send CQ (the bind)", &e, 1);
	if (rcp_failed(p))
		goto out;
	/* B writes 16 bytes inside the window (B's sends complete on the other CQ). */
	if (post1_rkey(p, p->b, p->base_id + 0x20, from, (uintptr_t)(p->buf + to.off), rkey))
		goto out;
	rcp_model_move(p, &from, 1, &to, 1);
	e = done(p->base_id + 0x20, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	rcp_expect(p, p->ocq, "B's send CQ (a WRITE through the window)", &e, 1);
	wr = (struct ibv_send_wr){.wr_id = p->base_id + 0x91,
				  .opcode = IBV_WR_LOCAL_INV,
				  .send_flags = IBV_SEND_SIGNALED,
				  .invalidate_rkey = rkey};
	if (rcp_failed(p) || hw_post_send(p->a, &wr, &bad))
		goto out;
	e = done(wr.wr_id, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV);
	rcp_expect(p, p->scq, "A's send CQ (LOCAL_INV of the window)", &e, 1);
	if (rcp_failed(p) || post1_rkey(p, p->b, p->base_id + 0x21, from, (uintptr_t)(p->buf + at), rkey))
		goto out;
	e = done(p->base_id + 0x21, IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_WRITE);
	rcp_expect(p, p->ocq, "B's send CQ (a WRITE through the invalidated rkey)", &e, 1);
	rcp_check_memory(p);
out:
	if (mw)
		hw_dealloc_mw(mw);
}

/* RTS -> SQD with notification: IBV_EVENT_SQ_DRAINED for A, the state SQD; back to RTS a message goes. */
void rcp_case_sqd(struct rcp *p)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_SQD, .en_sqd_async_notify = 1};

	p->name = "SQ drain";
	p->shape = (struct rcp_shape){
	    .scqe = RCP_CQE, .a_send_wr = 4, .a_recv_wr = 1, .b_recv_wr = 4, .a_rnr_retry = 7};
	if (rcp_setup(p))
		return;
	message(p, 0, false);
	if (rcp_failed(p) || hw_modify_qp(p->a, &a, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY))
		return;
	if (rcp_async_event(p, IBV_EVENT_SQ_DRAINED, p->a, RCP_EVENT_NS) == 0)
		rcp_fail(p, "A moved to SQD with en_sqd_async_notify raised no IBV_EVENT_SQ_DRAINED");
	rcp_expect_state(p, p->a, "A after RTS -> SQD", IBV_QPS_SQD);
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTS};
	if (rcp_failed(p) || hw_modify_qp(p->a, &a, IBV_QP_STATE))
		return;
	message(p, 1, false);
	rcp_check_memory(p);
}

/* B in ERR answers nothing: A's sends run out of transport retries (RETRY_EXC_ERR, the rest flushed). */
void rcp_case_dead_peer(struct rcp *p)
{
	struct rcp_exp exp[4];
	int n = (int)rng_range(p->rng, 1, 4), rc = 0;

	p->name = "a peer that answers nothing";
	p->shape = (struct rcp_shape){.scqe = RCP_CQE,
				      .a_send_wr = 4,
				      .a_recv_wr = 1,
				      .b_recv_wr = 4,
				      .a_rnr_retry = 7,
				      .timeout = (uint8_t)rng_range(p->rng, 1, 4),
				      .retry_cnt = (uint8_t)rng_range(p->rng, 0, 3)};
	if (rcp_setup(p) || rcp_to_err(p->b))
		return;
	for (int i = 0; i < n && !rc; i++) {
		struct ibv_sge sge = {(uintptr_t)(p->buf + RCP_SRC), 8, p->mr->lkey};

		rc = post1(p, p->a, i % 2 ? IBV_WR_RDMA_WRITE : IBV_WR_SEND, p->base_id + (uint64_t)i, sge,
			   (uintptr_t)(p->buf + RCP_TGT));
		exp[i] = done(p->base_id + (uint64_t)i, i ? IBV_WC_WR_FLUSH_ERR : IBV_WC_RETRY_EXC_ERR,
			      IBV_WC_SEND);
	}
	if (rc)
		return;
	rcp_expect(p, p->scq, "A's send CQ (the responder is in ERR)", exp, n);
	rcp_expect_state(p, p->a, "A after its transport retries ran out", IBV_QPS_ERR);
	rcp_check_memory(p);
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
	struct rcp_exp e = done(wr.wr_id, IBV_WC_SUCCESS, wcs[op]);
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
	int kind = (int)rng_range(p->rng, 0, RA_KINDS - 1), op = (int)rng_range(p->rng, 0, 2), rc;
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
	case RA_BEFORE_START:
		odd = hw_reg_mr(p->pd, p->buf + at, RCP_SLOT, IBV_ACCESS_LOCAL_WRITE | RCP_REMOTE_RIGHTS);
		raddr = kind == RA_PAST_END ? raddr + RCP_SLOT - (op == 2 ? 0 : len - 1)
					    : raddr - (op == 2 ? 8 : 1);
		break;
	case RA_OTHER_PD:
		if ((pd2 = hw_alloc_pd(p->c->ctx)))
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
		exp[i] = done(wr[i].wr_id,
			      i			     ? IBV_WC_WR_FLUSH_ERR
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

enum { BE_NO_MW_BIND, BE_PAST_END, BE_BOUND_TWICE, BE_WRITE_NO_LOCAL, BE_KINDS };

static const char *const be_names[BE_KINDS] = {
    "a window bind: an MR without MW_BIND",
    "a window bind: one byte past the MR's end",
    "a window bind: a type-2 window bound twice",
    "a window bind: remote write on an MR without LOCAL_WRITE",
};

/* Binds the rules forbid complete with MW_BIND_ERR; A goes to ERR and the WR behind the bind flushes. */
void rcp_case_bind_error(struct rcp *p)
{
	int kind = (int)rng_range(p->rng, 0, BE_KINDS - 1), rc;
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
	if (!(p->c->dattr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) || rcp_setup(p))
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
		    .mw_access_flags =
			kind == BE_WRITE_NO_LOCAL ? IBV_ACCESS_REMOTE_WRITE : IBV_ACCESS_REMOTE_READ};
		exp[i] = done(wr[i].wr_id, IBV_WC_MW_BIND_ERR, IBV_WC_BIND_MW);
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
		exp[1] = done(wr[1].wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RDMA_WRITE);
	}
	if ((rc = hw_post_send(p->a, wr, &bad))) {
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
