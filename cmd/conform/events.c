/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * More probe scripts (rcprobe.h) for parts of the device the walk never
 * reaches:
 *
 *  - completion events: an armed CQ raises exactly one event, for a
 *    solicited message (a SEND or a WRITE_WITH_IMM) when armed for those
 *    only, for any once armed for the next as well, none once disarmed;
 *    the event names the CQ and the cq_context it was created with; a CQ
 *    armed while a completion waits in it, or armed and then resized,
 *    raises one for the next completion (rcprobe_life.c picks these two);
 *  - UD: a chain of datagrams with the GRH scattered over several SGEs:
 *    byte_len, IBV_WC_GRH, src_qp, immediate data, the GRH's GIDs and the
 *    payload; one with a wrong Q_Key, or to a QPN that differs from the
 *    receiver's in a high bit, is dropped, one with the privileged
 *    Q_Key bit takes the receiver's; one of exactly the MTU arrives, one
 *    byte more fails; half the time the chain is posted with ibv_wr_send
 *    and ibv_wr_set_ud_addr from a QP made by ibv_create_qp_ex;
 *  - RTS -> SQD raises IBV_EVENT_SQ_DRAINED, and the drained QP still
 *    answers WRITEs and READs; a responder in ERR makes the
 *    requester's transport retries run out.
 */
#include "cmd/conform/rcp.h"

#include <fcntl.h>

#define RCP_QKEY     0x2a6b0000u
#define RCP_QUIET_NS (2 * 1000000ull)
#define RCP_UD_WR    6
#define RCP_GRH	     40u

int rcp_cq_events(struct rcp *p, struct ibv_comp_channel *ch, uint64_t wait_ns, unsigned *acked)
{
	uint64_t end = clock_ns() + wait_ns;
	struct ibv_cq *cq;
	void *ctx;
	int n = 0;
	unsigned idle = 0, late = 0;

	for (;;) {
		if (hw_get_cq_event(ch, &cq, &ctx) == 0) {
			if (cq != p->rcq) {
				rcp_fail(p, "a completion event named another CQ (%p%s, expected %p)", (void *)cq,
					 cq == p->xcq ? ": the idle CQ on the same channel" : "", (void *)p->rcq);
				if (cq == p->xcq)
					hw_ack_cq_events(cq, 1); /* so that it can be destroyed */
			}
			else if (ctx != p)
				rcp_fail(
				    p, "ibv_get_cq_event returned cq_context %p; the CQ was created with %p",
				    ctx, (void *)p);
			else
				++*acked;
			n++;
			continue;
		}
		if (n || (wait_ns >= RCP_DEADLINE_NS ? rcp_late(end, &late) : clock_ns() >= end))
			return n;
		rcp_idle(&idle);
	}
}

/*
 * Posts B's receive i and A's 16-byte message i, solicited or not: a SEND,
 * or with write_imm an RDMA WRITE with immediate into the receive's slot
 * (its SE bit counts as a SEND's: IBTA 9.2.3); *r and *s: their completions.  0: posted.
 */
static int post_message(struct rcp *p, int i, bool solicited, bool write_imm, struct rcp_exp *r,
			struct rcp_exp *s)
{
	struct ibv_sge sge = {(uintptr_t)(p->buf + RCP_SRC), 16, p->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = p->base_id + (uint64_t)i,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = write_imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED | (solicited ? IBV_SEND_SOLICITED : 0),
				 .imm_data = 0x5e000000u + (uint32_t)i},
			   *bad;

	*r = rcp_done(p->base_id + 0x40 + (uint64_t)i, IBV_WC_SUCCESS,
		      write_imm ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV);
	r->check_len = true;
	r->byte_len = 16;
	r->imm = write_imm;
	r->imm_data = wr.imm_data;
	*s = rcp_done(wr.wr_id, IBV_WC_SUCCESS, write_imm ? IBV_WC_RDMA_WRITE : IBV_WC_SEND);
	wr.wr.rdma.remote_addr = (uintptr_t)(p->buf + RCP_RECV + 64 * (uint32_t)i);
	wr.wr.rdma.rkey = p->mr->rkey;
	memcpy(p->model + RCP_RECV + 64 * (uint32_t)i, p->model + RCP_SRC, 16);
	if (rcp_recv1(p->b, r->wr_id,
		      (struct ibv_sge){(uintptr_t)(p->buf + RCP_RECV + 64 * (uint32_t)i), 64, p->mr->lkey}) ||
	    hw_post_send(p->a, &wr, &bad)) {
		rcp_fail(p, "message %d refused at post", i + 1);
		return -1;
	}
	return 0;
}

/* Sends one message to B, solicited or not, and takes its receive completion. */
static void message(struct rcp *p, int i, bool solicited, bool write_imm)
{
	struct rcp_exp r, s;

	if (post_message(p, i, solicited, write_imm, &r, &s))
		return;
	rcp_expect(p, p->rcq, "B's receive CQ", &r, 1);
	rcp_expect(p, p->scq, "A's send CQ", &s, 1);
}

void rcp_case_notify(struct rcp *p)
{
	bool only_solicited = rng_bernoulli(p->rng, 0.5), first_solicited = rng_bernoulli(p->rng, 0.5);
	/* Armed for solicited ones, then for the next one: the wider request wins (ibv_req_notify_cq(3)). */
	bool rearmed = only_solicited && rng_bernoulli(p->rng, 0.5);
	bool write_imm = rng_bernoulli(p->rng, 0.3);
	bool first_wakes = !only_solicited || first_solicited || rearmed;
	unsigned acked = 0;
	int n;

	p->name = rearmed	   ? "completion events, armed for solicited messages, then for the next"
		  : only_solicited ? "completion events, armed for solicited messages"
				   : "completion events";
	p->shape = (struct rcp_shape){.scqe = RCP_CQE,
				      .a_send_wr = 4,
				      .a_recv_wr = 1,
				      .b_recv_wr = 4,
				      .a_rnr_retry = 7,
				      .channel = true};
	if (rcp_setup(p) || !p->ch)
		return;
	/* Half the time a second CQ shares the channel, armed: its events would name it, and it has none. */
	if (rng_bernoulli(p->rng, 0.5) && (p->xcq = hw_create_cq(p->dev->ctx, 4, p, p->ch, 0)) &&
	    hw_req_notify_cq(p->xcq, 0))
		goto out;
	if (fcntl(p->ch->fd, F_SETFL, fcntl(p->ch->fd, F_GETFL) | O_NONBLOCK) ||
	    hw_req_notify_cq(p->rcq, only_solicited) || (rearmed && hw_req_notify_cq(p->rcq, 0)))
		goto out;
	message(p, 0, first_solicited, write_imm);
	n = rcp_cq_events(p, p->ch, first_wakes ? RCP_EVENT_NS : RCP_QUIET_NS, &acked);
	if (n != (first_wakes ? 1 : 0))
		rcp_fail(
		    p,
		    "a %ssolicited %s to a CQ armed (solicited_only=%d%s) raised %d events; expected %d",
		    first_solicited ? "" : "not ", write_imm ? "WRITE_WITH_IMM" : "SEND", only_solicited,
		    rearmed ? ", then 0" : "", n, first_wakes);
	if (!rcp_failed(p)) {
		message(p, 1, true, write_imm);
		n = rcp_cq_events(p, p->ch, first_wakes ? RCP_QUIET_NS : RCP_EVENT_NS, &acked);
		if (n != (first_wakes ? 0 : 1))
			rcp_fail(p, "a solicited message to a CQ %s raised %d events; expected %d",
				 first_wakes ? "whose one arming was used" : "armed for solicited messages",
				 n, !first_wakes);
	}
	rcp_check_memory(p);
	hw_ack_cq_events(p->rcq, acked);
out:
	if (p->xcq)
		hw_destroy_cq(p->xcq);
	p->xcq = NULL;
}

/*
 * B's receive CQ armed with a completion still in it (resize false), or armed and then resized: the
 * next message must raise exactly one event.  If the waiting completion had not landed yet when the
 * CQ was armed, the check is only weaker: a correct device raises the event either way.
 */
void rcp_notify_after(struct rcp *p, bool resize)
{
	struct rcp_exp r[3], s[3];
	unsigned acked = 0;
	int n, next = 0, cqe = (int)rng_range(p->rng, 16, 3 * RCP_CQE);

	p->name = resize ? "completion events: a CQ armed, then resized"
			 : "completion events: a CQ armed with a completion waiting";
	p->shape = (struct rcp_shape){
	    .scqe = RCP_CQE, .a_send_wr = 4, .a_recv_wr = 1, .b_recv_wr = 4, .a_rnr_retry = 7, .channel = true};
	if (rcp_setup(p) || !p->ch || fcntl(p->ch->fd, F_SETFL, fcntl(p->ch->fd, F_GETFL) | O_NONBLOCK))
		return;
	if (!resize) {
		/* Two messages, one receive completion taken: the other waits in the CQ. */
		if (post_message(p, 0, false, false, &r[0], &s[0]) || post_message(p, 1, false, false, &r[1], &s[1]))
			return;
		rcp_expect(p, p->scq, "A's send CQ", s, 2);
		rcp_expect(p, p->rcq, "B's receive CQ (one of two)", r, 1);
		next = 2;
	}
	if (rcp_failed(p) || hw_req_notify_cq(p->rcq, 0))
		return;
	if (resize && hw_resize_cq(p->rcq, cqe)) {
		p->abandoned = true; /* a device need not resize */
		return;
	}
	if (post_message(p, next, false, false, &r[next], &s[next]))
		return;
	rcp_expect(p, p->scq, "A's send CQ", &s[next], 1);
	n = rcp_cq_events(p, p->ch, RCP_EVENT_NS, &acked);
	if (n != 1 && resize)
		rcp_fail(p, "a message to a CQ armed and then resized (to %d entries) raised %d completion events; "
			    "expected 1", cqe, n);
	else if (n != 1)
		rcp_fail(p, "a message to a CQ armed with a completion waiting raised %d completion events; "
			    "expected 1", n);
	rcp_expect(p, p->rcq, "B's receive CQ", resize ? r : r + 1, resize ? 1 : 2);
	rcp_expect_empty(p, p->rcq, "B's receive CQ");
	rcp_check_memory(p);
	hw_ack_cq_events(p->rcq, acked);
}

/* ext: made by ibv_create_qp_ex to post with ibv_wr_* (ibv_wr_set_ud_addr); a plain QP when it cannot be. */
static int ud_qp(struct rcp *p, struct ibv_cq *scq, struct ibv_cq *rcq, bool ext, struct ibv_qp **out)
{
	struct ibv_qp_init_attr init = {
	    .send_cq = scq,
	    .recv_cq = rcq,
	    .qp_type = IBV_QPT_UD,
	    .cap = {.max_send_wr = RCP_UD_WR,
		    .max_recv_wr = RCP_UD_WR,
		    .max_send_sge = (uint32_t)imin(RCP_MAX_SGE, p->dev->dattr.max_sge),
		    .max_recv_sge = (uint32_t)imin(RCP_MAX_SGE, p->dev->dattr.max_sge)}};
	struct ibv_qp_attr a = {
	    .qp_state = IBV_QPS_INIT, .port_num = (uint8_t)p->dev->port, .qkey = RCP_QKEY};
	struct ibv_qp_init_attr_ex x = {.send_cq = scq,
					.recv_cq = rcq,
					.qp_type = IBV_QPT_UD,
					.cap = init.cap,
					.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
					.pd = p->pd,
					.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM};
	struct ibv_qp *qp = ext ? ibv_create_qp_ex(p->dev->ctx, &x) : NULL;

	if (!qp)
		qp = hw_create_qp(p->pd, &init);
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
	const union ibv_gid *me = &p->dev->gid;

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

/*
 * The chain posted through the ibv_wr_* API when qp was made by ibv_create_qp_ex: the address by
 * ibv_wr_set_ud_addr, the data by ibv_wr_set_sge_list.  1 posted, -1 refused, 0 not an extended QP.
 */
static int post_datagrams(struct ibv_qp *qp, const struct ibv_send_wr *wr)
{
	struct ibv_qp_ex *qx = hw_qp_to_qp_ex(qp);

	if (!qx || !qx->wr_start)
		return 0;
	ibv_wr_start(qx);
	for (; wr; wr = wr->next) {
		qx->wr_id = wr->wr_id;
		qx->wr_flags = wr->send_flags;
		if (wr->opcode == IBV_WR_SEND_WITH_IMM)
			ibv_wr_send_imm(qx, wr->imm_data);
		else
			ibv_wr_send(qx);
		ibv_wr_set_ud_addr(qx, wr->wr.ud.ah, wr->wr.ud.remote_qpn, wr->wr.ud.remote_qkey);
		ibv_wr_set_sge_list(qx, (size_t)wr->num_sge, wr->sg_list);
	}
	return ibv_wr_complete(qx) ? -1 : 1;
}

void rcp_case_ud(struct rcp *p)
{
	struct ibv_ah_attr aha = rcp_self_ah_attr(p);
	struct ibv_send_wr wr[RCP_UD_WR], *bad;
	struct ibv_sge sge[RCP_UD_WR][RCP_MAX_SGE];
	struct rcp_piece src[RCP_UD_WR][RCP_MAX_SGE], dst[RCP_UD_WR][RCP_MAX_SGE];
	int nd[RCP_UD_WR], n = (int)rng_range(p->rng, 1, RCP_UD_WR - 1), nb = 0, wrong = -1;
	int short_at = -1, short_nb = -1; /* a receive with room for the payload but not for the GRH too */
	int posted = 0;
	bool ext = rng_bernoulli(p->rng, 0.5); /* the sender posts with ibv_wr_* (where it can) */
	struct rcp_exp aexp[RCP_UD_WR], bexp[RCP_UD_WR];
	struct ibv_qp *ua = NULL, *ub = NULL, *rc_a, *rc_b;
	struct ibv_ah *ah = NULL;
	bool too_long = rng_bernoulli(p->rng, 0.2);
	uint32_t mtu = 128u << p->dev->pattr.active_mtu;
	/* The last datagram carries exactly the MTU, the largest a UD message may be: it must arrive. */
	bool exact_mtu = !too_long && mtu <= RCP_SLOT && rng_bernoulli(p->rng, 0.3);

	p->name = "UD datagrams";
	p->shape = (struct rcp_shape){
	    .scqe = RCP_CQE, .a_send_wr = 1, .a_recv_wr = 1, .b_recv_wr = 1, .a_rnr_retry = 7};
	if (rcp_setup(p))
		return;
	rc_a = p->a;
	rc_b = p->b;
	if (ud_qp(p, p->scq, p->ocq, ext, &ua) || ud_qp(p, p->ocq, p->rcq, false, &ub))
		goto out;
	if (!(ah = hw_create_ah(p->pd, &aha)))
		goto out;
	if (n > 1 && rng_bernoulli(p->rng, 0.3))
		wrong = (int)rng_range(p->rng, 0, (uint64_t)n - 1);
	if (rng_bernoulli(p->rng, 0.3))
		short_at = (int)rng_range(p->rng, 0, (uint64_t)n - 1);
	for (int i = 0; i < n; i++) {
		uint32_t len = i == n - 1 && exact_mtu ? mtu : (uint32_t)rng_range(p->rng, 0, RCP_SMALL_MSG),
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
		/* The wrong Q_Key differs in one bit, any but the privileged one: all 32 are compared. */
		wr[i].wr.ud.remote_qkey = i == wrong ? RCP_QKEY ^ (1u << rng_range(p->rng, 0, 30))
					  : rng_bernoulli(p->rng, 0.2) ? 0x80000000u
								       : RCP_QKEY;
		/*
		 * Or the right Q_Key to a QPN that differs from B's in one of its top
		 * 8 bits: no QP has that number (or not this one), and a device that
		 * finds QPs by the low bits of their number would deliver it to B.
		 */
		if (i == wrong && rng_bernoulli(p->rng, 0.5)) {
			wr[i].wr.ud.remote_qkey = RCP_QKEY;
			wr[i].wr.ud.remote_qpn = ub->qp_num ^ (1u << rng_range(p->rng, 16, 23));
		}
		aexp[i] = rcp_done(wr[i].wr_id, IBV_WC_SUCCESS, IBV_WC_SEND);
		if (i == n - 1 && too_long && off + mtu + 1 <= RCP_RECV) {
			sge[i][0] = (struct ibv_sge){(uintptr_t)(p->buf + off), mtu + 1, p->mr->lkey};
			wr[i].num_sge = 1;
			aexp[i].status = IBV_WC_LOC_LEN_ERR;
			continue;
		}
		if (i == wrong)
			continue;
		if (i == short_at && len > 0) {
			/* a UD receive must hold the 40-byte GRH and the payload, else LOC_LEN_ERR
			 * (IBTA 11.4.1.2) */
			nd[nb] = 1;
			dst[nb][0] = (struct rcp_piece){RCP_RECV + (uint32_t)nb * RCP_SLOT,
							len + (uint32_t)rng_range(p->rng, 0, RCP_GRH - 1)};
			bexp[nb] =
			    rcp_done(p->base_id + 0x40 + (uint64_t)nb, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV);
			short_nb = nb++;
			continue;
		}
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
		bexp[nb] = rcp_done(p->base_id + 0x40 + (uint64_t)nb, IBV_WC_SUCCESS, IBV_WC_RECV);
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
	if ((ext && (posted = post_datagrams(ua, wr)) < 0) || (!posted && hw_post_send(ua, wr, &bad))) {
		rcp_fail(p, "a chain of %d datagrams refused at post", n);
		goto out;
	}
	p->a = ua; /* the messages name these two */
	p->b = ub;
	rcp_expect(p, p->scq, "UD sender's CQ", aexp, n);
	rcp_expect(p, p->rcq, "UD receiver's CQ", bexp, nb);
	if (short_nb >= 0) /* what a failed receive left in its buffer is undefined */
		memcpy(p->model + dst[short_nb][0].off, p->buf + dst[short_nb][0].off, dst[short_nb][0].len);
	rcp_expect_empty(p, p->rcq, "UD receiver's CQ (a datagram with a wrong Q_Key or QPN must be dropped)");
	for (int k = 0; k < nb && !rcp_failed(p); k++)
		if (k != short_nb)
			check_grh(p, k, dst[k], nd[k]);
	rcp_check_memory(p);
out:
	rcp_ud_pair_free(p, rc_a, rc_b, ua, ub, ah);
}

/*
 * SQD stops only the send queue: A, drained, still answers B's WRITE and
 * READ (IBTA 10.3.1: the receive side of an SQD QP works as in RTS).
 */
static void serve_in_sqd(struct rcp *p)
{
	struct rcp_piece src = {RCP_SRC + 8 * (uint32_t)rng_range(p->rng, 0, 255), 64},
			 tgt = {RCP_TGT + 8 * (uint32_t)rng_range(p->rng, 0, 255), 64},
			 dst = {RCP_RDST + 8 * (uint32_t)rng_range(p->rng, 0, 255), 64};
	struct ibv_sge sge = {(uintptr_t)(p->buf + src.off), src.len, p->mr->lkey};
	struct rcp_exp w = rcp_done(p->base_id + 0x50, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE),
		       r = rcp_done(p->base_id + 0x51, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);

	/* B may run one WR at a time (max_send_wr 1): each is taken before the next. */
	if (rcp_post1(p, p->b, IBV_WR_RDMA_WRITE, w.wr_id, sge, (uintptr_t)(p->buf + tgt.off))) {
		rcp_fail(p, "B's WRITE to A (in SQD) refused at post");
		return;
	}
	rcp_model_move(p, &src, 1, &tgt, 1);
	rcp_expect(p, p->ocq, "B's send CQ (a WRITE to A in SQD)", &w, 1);
	sge = (struct ibv_sge){(uintptr_t)(p->buf + dst.off), dst.len, p->mr->lkey};
	if (rcp_failed(p) ||
	    rcp_post1(p, p->b, IBV_WR_RDMA_READ, r.wr_id, sge, (uintptr_t)(p->buf + tgt.off)))
		return;
	rcp_model_move(p, &tgt, 1, &dst, 1);
	r.check_len = true;
	r.byte_len = dst.len;
	rcp_expect(p, p->ocq, "B's send CQ (a READ from A in SQD)", &r, 1);
	rcp_check_memory(p);
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
	message(p, 0, false, false);
	if (rcp_failed(p) || hw_modify_qp(p->a, &a, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY))
		return;
	if (rcp_async_event(p, IBV_EVENT_SQ_DRAINED, p->a, RCP_EVENT_NS) == 0)
		rcp_fail(p, "A moved to SQD with en_sqd_async_notify raised no IBV_EVENT_SQ_DRAINED");
	rcp_expect_state(p, p->a, "A after RTS -> SQD", IBV_QPS_SQD);
	if (!rcp_failed(p))
		serve_in_sqd(p);
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTS};
	if (rcp_failed(p) || hw_modify_qp(p->a, &a, IBV_QP_STATE))
		return;
	message(p, 1, false, false);
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

		rc = rcp_post1(p, p->a, i % 2 ? IBV_WR_RDMA_WRITE : IBV_WR_SEND, p->base_id + (uint64_t)i,
			       sge, (uintptr_t)(p->buf + RCP_TGT));
		exp[i] = rcp_done(p->base_id + (uint64_t)i, i ? IBV_WC_WR_FLUSH_ERR : IBV_WC_RETRY_EXC_ERR,
				  IBV_WC_SEND);
	}
	if (rc)
		return;
	rcp_expect(p, p->scq, "A's send CQ (the responder is in ERR)", exp, n);
	rcp_expect_state(p, p->a, "A after its transport retries ran out", IBV_QPS_ERR);
	rcp_check_memory(p);
}
