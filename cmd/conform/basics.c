/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The RC probes' scripts (rcprobe.h), each with its exact expectations:
 *
 *  - data: a chain of SENDs, WRITEs (with and without immediate data),
 *    READs and atomics, gathered from and scattered to several SGEs,
 *    inline (up to exactly max_inline_data) or not, zero-length or not,
 *    signaled or not, receives with empty SGEs whose keys name nothing:
 *    the completions (only the signaled ones on the send side, every
 *    field the API defines), the receive side's, and every byte of the
 *    memory;
 *  - a receive shorter than the message: LOC_LEN_ERR at the receiver,
 *    REM_INV_REQ_ERR at the sender, both QPs in ERR, the rest flushed;
 *  - RNR: a send queue of max_send_wr sends waiting on a receiver without
 *    receives takes no more; receives posted later release as many sends;
 *    with a finite rnr_retry the head fails with RNR_RETRY_EXC_ERR;
 *  - a receive queue filled to max_recv_wr takes no more and flushes in
 *    order on ERR; work posted to a QP in ERR flushes and never executes;
 *  - a CQ given one completion more than its capacity raises
 *    IBV_EVENT_CQ_ERR, one filled exactly does not.
 */
#include "cmd/conform/rcp.h"

#define RCP_NO_RETRY	7 /* rnr_retry 7: retry for ever */
#define RCP_RNR_WAIT_NS (20 * 1000000ull)
#define RCP_RNR_IMM	0x52e0000u

enum {
	OP_SEND,
	OP_SEND_IMM,
	OP_WRITE,
	OP_WRITE_IMM,
	OP_READ,
	OP_FETCH_ADD,
	OP_CMP_SWP,
	OP_ATOMIC_WRITE,
	OP_KINDS
};

static const enum ibv_wr_opcode wr_opcode[OP_KINDS] = {
    IBV_WR_SEND,      IBV_WR_SEND_WITH_IMM,	   IBV_WR_RDMA_WRITE,	      IBV_WR_RDMA_WRITE_WITH_IMM,
    IBV_WR_RDMA_READ, IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_WRITE};
static const enum ibv_wc_opcode wc_opcode[OP_KINDS] = {
    IBV_WC_SEND,      IBV_WC_SEND,	IBV_WC_RDMA_WRITE, IBV_WC_RDMA_WRITE,
    IBV_WC_RDMA_READ, IBV_WC_FETCH_ADD, IBV_WC_COMP_SWAP,  IBV_WC_ATOMIC_WRITE};

#define RCP_DATA_WR   8
#define RCP_SGE_PROBE (RCP_MAX_SGE + 1)

struct rcp_script {
	struct ibv_send_wr wr[RCP_DATA_WR];
	struct ibv_recv_wr rwr[RCP_DATA_WR];
	struct ibv_sge sge[RCP_DATA_WR][RCP_MAX_SGE], rsge[RCP_DATA_WR][RCP_MAX_SGE];
	struct rcp_exp aexp[RCP_DATA_WR], bexp[RCP_DATA_WR];
	int na, nb;
	struct rcp_piece last_write;
	struct rcp_piece last_read; /* a piece a READ (or an atomic's answer) of the script brings (RC) */
};

/*
 * An inline WR's data is its own copy once ibv_post_send returns
 * (ibv_post_send(3)): its source bytes change at once, in memory and in the
 * model, except those a WR without INLINE still has to gather or a READ to read.
 */
static void scribble_inline(struct rcp *p, const struct rcp_script *s, int n)
{
	static _Thread_local unsigned char gathered[RCP_AREA];

	memset(gathered, 0, sizeof(gathered));
	for (int i = 0; i < n; i++) {
		uint64_t from = s->wr[i].wr.rdma.remote_addr - (uintptr_t)p->buf, len = 0;

		for (int j = 0; s->wr[i].opcode == IBV_WR_RDMA_READ && j < s->wr[i].num_sge; j++)
			len += s->sge[i][j].length;
		for (uint64_t k = from; k < from + len && k < RCP_SRC + RCP_AREA; k++)
			gathered[k - RCP_SRC] = 1; /* a READ's source, read when it executes */
	}
	for (int i = 0; i < n; i++)
		for (int j = 0; !(s->wr[i].send_flags & IBV_SEND_INLINE) && j < s->wr[i].num_sge; j++) {
			uint64_t off = s->sge[i][j].addr - (uintptr_t)p->buf;

			for (uint64_t k = off; k < off + s->sge[i][j].length && k < RCP_SRC + RCP_AREA; k++)
				gathered[k - RCP_SRC] = 1;
		}
	for (int i = 0; i < n; i++)
		for (int j = 0; (s->wr[i].send_flags & IBV_SEND_INLINE) && j < s->wr[i].num_sge; j++) {
			uint64_t off = s->sge[i][j].addr - (uintptr_t)p->buf;

			for (uint64_t k = off; k < off + s->sge[i][j].length && k < RCP_SRC + RCP_AREA; k++)
				if (!gathered[k - RCP_SRC])
					p->buf[k] = p->model[k] = (unsigned char)(p->buf[k] ^ 0xa5);
		}
}

static void post_all(struct rcp *p, struct rcp_script *s, int n)
{
	struct ibv_send_wr *bad;
	struct ibv_recv_wr *rbad;
	int rc;

	for (int i = 0; i + 1 < s->nb; i++)
		s->rwr[i].next = &s->rwr[i + 1];
	if (s->nb && (rc = hw_post_recv(p->b, s->rwr, &rbad)))
		rcp_fail(p, "%d receives (max_recv_wr %u) refused: %s", s->nb, p->bcap.max_recv_wr,
			 strerror(rc));
	for (int i = 0; i + 1 < n; i++)
		s->wr[i].next = &s->wr[i + 1];
	rc = hw_post_send(p->a, s->wr, &bad);
	if (rc && bad->opcode == IBV_WR_ATOMIC_WRITE && (rc == EINVAL || rc == EOPNOTSUPP)) {
		p->dev->no_atomic_write = true; /* a device without it: the script is abandoned */
		p->abandoned = true;
	} else if (rc) {
		uint32_t bytes = 0;

		for (int i = 0; i < bad->num_sge; i++)
			bytes += bad->sg_list[i].length;
		rcp_fail(p,
			 "a chain of %d WRs (max_send_wr %u) refused at WR %d (%d SGEs, %u bytes%s; "
			 "max_inline_data %u): %s",
			 n, p->acap.max_send_wr, (int)(bad - s->wr) + 1, bad->num_sge, bytes,
			 bad->send_flags & IBV_SEND_INLINE ? ", inline" : "", p->acap.max_inline_data,
			 strerror(rc));
	}
}

/* ATOMIC_WRITE: 8 bytes from A land at once at an aligned target. */
static void add_atomic_write(struct rcp *p, struct rcp_script *s, int i, struct ibv_send_wr *w)
{
	struct rcp_piece src = {RCP_SRC + 8 * (uint32_t)rng_range(p->rng, 0, 255), 8},
			 tgt = {RCP_TGT + (uint32_t)i * RCP_SLOT + 8 * (uint32_t)rng_range(p->rng, 0, 7), 8};

	s->sge[i][0] = (struct ibv_sge){(uintptr_t)(p->buf + src.off), 8, p->mr->lkey};
	w->num_sge = 1;
	w->wr.rdma.remote_addr = (uintptr_t)(p->buf + tgt.off);
	w->wr.rdma.rkey = p->mr->rkey;
	rcp_model_move(p, &src, 1, &tgt, 1);
}

static void add_atomic(struct rcp *p, struct rcp_script *s, int i, int op, struct ibv_send_wr *w)
{
	uint32_t t = RCP_TGT + (uint32_t)i * RCP_SLOT + 8 * (uint32_t)rng_range(p->rng, 0, 7);
	uint32_t res = RCP_RDST + (uint32_t)i * RCP_SLOT + 8 * (uint32_t)rng_range(p->rng, 0, 7);
	uint64_t orig, next, arg = rng_next(p->rng), swap = rng_next(p->rng);

	memcpy(&orig, p->model + t, 8);
	if (swap == orig)
		swap = ~orig;
	if (op == OP_FETCH_ADD) {
		next = orig + arg;
	} else {
		/* Matching or not, both show; a miss differs in one half only, now and then: all 64 bits count. */
		switch (rng_range(p->rng, 0, 5)) {
		case 0:
		case 1:
		case 2:
			arg = orig;
			break;
		case 3:
			arg = orig ^ ((arg | 1) << 32);
			break;
		case 4:
			arg = orig ^ (uint32_t)(arg | 1);
			break;
		default:
			arg = orig ^ (arg | 1);
		}
		next = arg == orig ? swap : orig;
	}
	w->wr.atomic.remote_addr = (uintptr_t)(p->buf + t);
	w->wr.atomic.rkey = p->mr->rkey;
	w->wr.atomic.compare_add = arg;
	w->wr.atomic.swap = swap;
	s->sge[i][0] = (struct ibv_sge){(uintptr_t)(p->buf + res), 8, p->mr->lkey};
	w->num_sge = 1;
	memcpy(p->model + res, &orig, 8);
	memcpy(p->model + t, &next, 8);
	/* A fence waits for atomics as for READs (IBTA 10.8.3.3): a fenced WR may pass the answer on. */
	if (!s->last_read.len || rng_bernoulli(p->rng, 0.5))
		s->last_read = (struct rcp_piece){res, 8};
}

static uint32_t add_read(struct rcp *p, struct rcp_script *s, int i, struct ibv_send_wr *w, uint32_t len)
{
	struct rcp_piece from = {RCP_SRC + (uint32_t)rng_range(p->rng, 0, RCP_RECV - RCP_MAX_MSG), len},
			 dst[RCP_MAX_SGE];
	int nd, k = (int)rng_range(p->rng, 1, (uint64_t)imin(RCP_MAX_SGE, (int)p->acap.max_send_sge));

	if (s->last_write.len && rng_bernoulli(p->rng, 0.5))
		from = s->last_write; /* RC: the READ sees the WRITE posted before it */
	nd = rcp_pieces(p, RCP_RDST + (uint32_t)i * RCP_SLOT, from.len, k, 8, dst);
	rcp_sges(p, dst, nd, s->sge[i]);
	w->num_sge = nd;
	w->wr.rdma.remote_addr = (uintptr_t)(p->buf + from.off);
	w->wr.rdma.rkey = p->mr->rkey;
	rcp_model_move(p, &from, 1, dst, nd);
	for (int j = 0; j < nd; j++)
		if (dst[j].len > s->last_read.len)
			s->last_read = dst[j];
	return from.len;
}

/*
 * An empty SGE names no memory: its lkey and address are never looked at
 * (consumers post them with lkey 0).  Now and then every empty SGE of a
 * receive gets a key that names nothing, and one more is slipped in
 * somewhere, if the QP takes one more.  Returns the new SGE count.
 */
static int add_empty_sge(struct rcp *p, struct ibv_sge *sge, int n, int max)
{
	if (!rng_bernoulli(p->rng, 0.3))
		return n;
	for (int i = 0; i < n; i++)
		if (!sge[i].length)
			sge[i].lkey = (uint32_t)rng_next(p->rng);
	if (n >= max || n >= RCP_MAX_SGE)
		return n;
	int at = (int)rng_range(p->rng, 0, (uint64_t)n);

	memmove(sge + at + 1, sge + at, (size_t)(n - at) * sizeof(*sge));
	sge[at] = (struct ibv_sge){
	    .addr = rng_bernoulli(p->rng, 0.5) ? 0 : rng_next(p->rng), .length = 0, .lkey = 0};
	return n + 1;
}

/* A SEND or WRITE (with or without immediate data) and the receive it consumes, if any. */
static void add_message(struct rcp *p, struct rcp_script *s, int i, int op, struct ibv_send_wr *w,
			uint32_t len)
{
	struct rcp_piece src[RCP_MAX_SGE], dst[RCP_MAX_SGE], tgt;
	uint32_t off = RCP_SRC + (uint32_t)rng_range(p->rng, 0, RCP_RECV - 2 * RCP_MAX_MSG);
	int ns = rcp_pieces(p, off, len,
			    (int)rng_range(p->rng, 1, (uint64_t)imin(RCP_MAX_SGE, (int)p->acap.max_send_sge)),
			    16, src);
	bool send = op == OP_SEND || op == OP_SEND_IMM, fenced = false;

	if (s->last_read.len && rng_bernoulli(p->rng, 0.25)) {
		/* IBV_SEND_FENCE: the WR waits for the READs before it, so it can pass on what one brought. */
		len = s->last_read.len < len ? s->last_read.len : len;
		src[0] = (struct rcp_piece){s->last_read.off, len};
		ns = 1;
		w->send_flags |= IBV_SEND_FENCE;
		fenced = true;
	}
	rcp_sges(p, src, ns, s->sge[i]);
	w->num_sge = ns;
	if (!fenced && len <= p->acap.max_inline_data &&
	    (len == p->acap.max_inline_data || rng_bernoulli(p->rng, 0.3))) {
		w->send_flags |= IBV_SEND_INLINE; /* the data is copied at post: no lkey is looked at */
		for (int j = 0; j < ns; j++)
			s->sge[i][j].lkey = (uint32_t)rng_next(p->rng);
	}
	if (!send) {
		tgt = (struct rcp_piece){
		    RCP_TGT + (uint32_t)i * RCP_SLOT + (uint32_t)rng_range(p->rng, 0, RCP_SLOT - len), len};
		w->wr.rdma.remote_addr = (uintptr_t)(p->buf + tgt.off);
		w->wr.rdma.rkey = p->mr->rkey;
		rcp_model_move(p, src, ns, &tgt, 1);
		s->last_write = tgt;
	}
	if (op == OP_WRITE)
		return;
	/* The receive: room for the message (or a few bytes a WRITE_WITH_IMM must not touch), in pieces. */
	uint32_t room =
	    send ? len + (rng_bernoulli(p->rng, 0.3) ? 0
						     : (uint32_t)rng_range(p->rng, 1, 64)) /* exact, often */
		 : (uint32_t)rng_range(p->rng, 0, 32);
	int k = (int)rng_range(p->rng, 1, (uint64_t)imin(RCP_MAX_SGE, (int)p->bcap.max_recv_sge));
	int nd = rcp_pieces(p, RCP_RECV + (uint32_t)i * RCP_SLOT, room, k, 8, dst);

	rcp_sges(p, dst, nd, s->rsge[s->nb]);
	if (send)
		rcp_model_move(p, src, ns, dst, nd);
	nd = add_empty_sge(p, s->rsge[s->nb], nd, (int)p->bcap.max_recv_sge);
	s->rwr[s->nb] = (struct ibv_recv_wr){
	    .wr_id = p->base_id + 0x40 + (uint64_t)i, .sg_list = s->rsge[s->nb], .num_sge = nd};
	s->bexp[s->nb++] = (struct rcp_exp){.wr_id = p->base_id + 0x40 + (uint64_t)i,
					    .status = IBV_WC_SUCCESS,
					    .opcode = send ? IBV_WC_RECV : IBV_WC_RECV_RDMA_WITH_IMM,
					    .check_len = true,
					    .byte_len = len,
					    .imm = op != OP_SEND,
					    .imm_data = w->imm_data};
}

static uint32_t draw_len(struct rcp *p)
{
	uint64_t x = rng_range(p->rng, 0, 19);

	return x < 3	? 0
	       : x < 16 ? (uint32_t)rng_range(p->rng, 1, RCP_SMALL_MSG)
			: (uint32_t)rng_range(p->rng, RCP_SMALL_MSG + 1, RCP_MAX_MSG);
}

/*
 * A WR or a receive with one SGE more than the QP's max_*_sge must be
 * refused, and nothing of it happen; so must a READ or an atomic on UC.
 */
static void post_refused(struct rcp *p)
{
	struct ibv_sge sge[RCP_SGE_PROBE];
	struct ibv_send_wr wr = {.wr_id = p->base_id + 0x30,
				 .sg_list = sge,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	struct ibv_recv_wr rwr = {.wr_id = p->base_id + 0x70, .sg_list = sge}, *rbad;

	if (p->acap.max_send_sge + 1 > RCP_SGE_PROBE || p->bcap.max_recv_sge + 1 > RCP_SGE_PROBE)
		return;
	for (int i = 0; i < RCP_SGE_PROBE; i++)
		sge[i] = (struct ibv_sge){(uintptr_t)(p->buf + RCP_SRC + 8 * (uint32_t)i), 1, p->mr->lkey};
	wr.num_sge = (int)p->acap.max_send_sge + 1;
	rwr.num_sge = (int)p->bcap.max_recv_sge + 1;
	if (!hw_post_send(p->a, &wr, &bad))
		rcp_fail(p, "a send with max_send_sge + 1 = %d SGEs was accepted", wr.num_sge);
	if (!hw_post_recv(p->b, &rwr, &rbad))
		rcp_fail(p, "a receive with max_recv_sge + 1 = %d SGEs was accepted", rwr.num_sge);
	if (p->acap.max_inline_data && p->acap.max_inline_data < RCP_SLOT) {
		struct ibv_sge one = {(uintptr_t)(p->buf + RCP_SRC), p->acap.max_inline_data + 1,
				      p->mr->lkey};
		struct ibv_send_wr iw = {.wr_id = p->base_id + 0x31,
					 .sg_list = &one,
					 .num_sge = 1,
					 .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE};

		if (!hw_post_send(p->a, &iw, &bad))
			rcp_fail(p, "an inline send of max_inline_data + 1 = %u bytes was accepted",
				 one.length);
	}
	if (!p->shape.uc)
		return;
	wr.num_sge = 1;
	sge[0].length = 8;
	wr.opcode = rng_bernoulli(p->rng, 0.5) ? IBV_WR_RDMA_READ : IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.rdma.remote_addr = (uintptr_t)(p->buf + RCP_TGT);
	wr.wr.rdma.rkey = p->mr->rkey;
	if (!hw_post_send(p->a, &wr, &bad))
		rcp_fail(p, "a%s on a UC QP was accepted",
			 wr.opcode == IBV_WR_RDMA_READ ? " READ" : "n atomic");
}

void rcp_case_data(struct rcp *p)
{
	struct rcp_script s = {.na = 0};
	int n = (int)rng_range(p->rng, 1, RCP_DATA_WR);
	bool uc = rng_bernoulli(p->rng, 0.25);

	p->name = uc ? "UC data" : "data";
	p->shape = (struct rcp_shape){.scqe = RCP_CQE,
				      .a_send_wr = RCP_DATA_WR,
				      .a_recv_wr = 1,
				      .b_recv_wr = RCP_DATA_WR,
				      .a_rnr_retry = RCP_NO_RETRY,
				      .sig_all = rng_bernoulli(p->rng, 0.3),
				      .uc = uc};
	if (rcp_setup(p))
		return;
	if (rng_bernoulli(p->rng, 0.2))
		post_refused(p);
	for (int i = 0; i < n; i++) {
		int op = (int)rng_range(p->rng, 0, uc ? OP_WRITE_IMM : OP_KINDS - 1);

		if (op == OP_ATOMIC_WRITE && p->dev->no_atomic_write)
			op = OP_WRITE;
		uint32_t len = draw_len(p);

		/* Now and then exactly max_inline_data bytes, sent inline: the QP must take what it reported.
		 */
		if (p->acap.max_inline_data && p->acap.max_inline_data <= RCP_MAX_MSG &&
		    rng_bernoulli(p->rng, 0.1))
			len = p->acap.max_inline_data;
		bool signaled = i == n - 1 || rng_bernoulli(p->rng, 0.5);
		struct ibv_send_wr *w = &s.wr[i];

		*w = (struct ibv_send_wr){.wr_id = p->base_id + (uint64_t)i,
					  .sg_list = s.sge[i],
					  .opcode = wr_opcode[op],
					  .send_flags = signaled ? IBV_SEND_SIGNALED : 0,
					  .imm_data = (uint32_t)rng_next(p->rng)};
		if (op == OP_FETCH_ADD || op == OP_CMP_SWP)
			len = 8, add_atomic(p, &s, i, op, w);
		else if (op == OP_ATOMIC_WRITE)
			len = 8, add_atomic_write(p, &s, i, w);
		else if (op == OP_READ)
			len = add_read(p, &s, i, w, len);
		else
			add_message(p, &s, i, op, w, len);
		if (signaled || p->shape.sig_all)
			s.aexp[s.na++] = (struct rcp_exp){.wr_id = w->wr_id,
							  .status = IBV_WC_SUCCESS,
							  .opcode = wc_opcode[op],
							  .check_len = op >= OP_READ && op != OP_ATOMIC_WRITE,
							  .byte_len = len};
	}
	post_all(p, &s, n);
	if (rcp_failed(p) || p->abandoned)
		return;
	if (rng_bernoulli(p->rng, 0.5))
		scribble_inline(p, &s, n);
	rcp_expect(p, p->rcq, "B's receive CQ", s.bexp, s.nb);
	rcp_expect(p, p->scq, "A's send CQ", s.aexp, s.na);
	rcp_expect_empty(p, p->scq, "A's send CQ (unsignaled WRs complete silently)");
	rcp_expect_empty(p, p->rcq, "B's receive CQ");
	rcp_expect_empty(p, p->ocq, "the CQ of A's receives and B's sends");
	/* UC completes a WRITE once it is sent: over a wire B places it later. */
	if (uc && !rcp_failed(p))
		rcp_wait_landed(p, RCP_TGT, RCP_AREA, "A's UC WRITEs");
	rcp_check_memory(p);
	rcp_expect_state(p, p->a, "A", IBV_QPS_RTS);
	rcp_expect_state(p, p->b, "B", IBV_QPS_RTS);
}

static void post_one_send(struct rcp *p, struct ibv_qp *qp, uint64_t wr_id, uint32_t off, uint32_t len,
			  int *rc)
{
	struct ibv_sge sge = {(uintptr_t)(p->buf + off), len, p->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = wr_id,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;

	*rc = hw_post_send(qp, &wr, &bad);
}

static void post_one_recv(struct rcp *p, struct ibv_qp *qp, uint64_t wr_id, uint32_t off, uint32_t len,
			  int *rc)
{
	struct ibv_sge sge = {(uintptr_t)(p->buf + off), len, p->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1}, *bad;

	*rc = hw_post_recv(qp, &wr, &bad);
}

/*
 * Back through RESET (from ERR, or from RTS with sends still waiting), the
 * pair works as new: one message, its two completions and nothing else.
 */
static void reuse_after_reset(struct rcp *p)
{
	struct rcp_exp a = rcp_done(p->base_id + 0x28, IBV_WC_SUCCESS, IBV_WC_SEND),
		       b = rcp_done(p->base_id + 0x68, IBV_WC_SUCCESS, IBV_WC_RECV);
	uint32_t len = (uint32_t)rng_range(p->rng, 1, 64);
	struct rcp_piece from = {RCP_SRC + 128, len}, to = {RCP_RECV + 2 * RCP_SLOT, len};
	int rc;

	if (rcp_reconnect(p)) {
		rcp_fail(p, "the pair, moved to RESET after an error, could not be connected again");
		return;
	}
	rcp_expect_empty(p, p->scq, "A's send CQ (moving to RESET completes nothing)");
	rcp_expect_empty(p, p->rcq, "B's receive CQ (moving to RESET completes nothing)");
	post_one_recv(p, p->b, b.wr_id, to.off, 64, &rc);
	if (!rc)
		post_one_send(p, p->a, a.wr_id, from.off, len, &rc);
	if (rc) {
		rcp_fail(p, "after RESET and reconnecting, a post was refused: %s", strerror(rc));
		return;
	}
	b.check_len = true;
	b.byte_len = len;
	rcp_model_move(p, &from, 1, &to, 1);
	rcp_expect(p, p->rcq, "B's receive CQ (after RESET and reconnecting)", &b, 1);
	rcp_expect(p, p->scq, "A's send CQ (after RESET and reconnecting)", &a, 1);
	rcp_expect_empty(p, p->rcq, "B's receive CQ (after RESET and reconnecting)");
	rcp_check_memory(p);
}

void rcp_case_recv_short(struct rcp *p)
{
	struct rcp_script s = {.na = 0};
	uint32_t len = (uint32_t)rng_range(p->rng, 1, RCP_MAX_MSG),
		 room = rng_bernoulli(p->rng, 0.5) ? len - 1 : (uint32_t)rng_range(p->rng, 0, len - 1);
	int more = (int)rng_range(p->rng, 0, 3), rc;
	struct rcp_piece dst[RCP_MAX_SGE];

	p->name = "a receive shorter than the message";
	p->shape = (struct rcp_shape){
	    .scqe = RCP_CQE, .a_send_wr = 8, .a_recv_wr = 1, .b_recv_wr = 4, .a_rnr_retry = RCP_NO_RETRY};
	if (rcp_setup(p))
		return;
	int nd = rcp_pieces(p, RCP_RECV, room,
			    (int)rng_range(p->rng, 1, (uint64_t)imin(RCP_MAX_SGE, (int)p->bcap.max_recv_sge)),
			    8, dst);

	rcp_sges(p, dst, nd, s.rsge[0]);
	s.rwr[0] = (struct ibv_recv_wr){.wr_id = p->base_id + 0x40, .sg_list = s.rsge[0], .num_sge = nd};
	s.rsge[1][0] = (struct ibv_sge){(uintptr_t)(p->buf + RCP_RECV + RCP_SLOT), RCP_SLOT, p->mr->lkey};
	s.rwr[1] = (struct ibv_recv_wr){.wr_id = p->base_id + 0x41, .sg_list = s.rsge[1], .num_sge = 1};
	s.nb = 2;
	s.bexp[0] = rcp_done(p->base_id + 0x40, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV);
	s.bexp[1] = rcp_done(p->base_id + 0x41, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV);
	for (int i = 0; i <= more; i++) {
		uint32_t l = i ? 1 : len;

		s.sge[i][0] =
		    (struct ibv_sge){(uintptr_t)(p->buf + RCP_SRC + (uint32_t)i * RCP_SLOT), l, p->mr->lkey};
		s.wr[i] = (struct ibv_send_wr){.wr_id = p->base_id + (uint64_t)i,
					       .sg_list = s.sge[i],
					       .num_sge = 1,
					       .opcode = IBV_WR_SEND,
					       .send_flags = IBV_SEND_SIGNALED};
		s.aexp[i] =
		    rcp_done(s.wr[i].wr_id, i ? IBV_WC_WR_FLUSH_ERR : IBV_WC_REM_INV_REQ_ERR, IBV_WC_SEND);
	}
	post_all(p, &s, more + 1);
	if (rcp_failed(p))
		return;
	rcp_expect(p, p->rcq, "B's receive CQ (a receive too small, then one behind it)", s.bexp, 2);
	rcp_expect(p, p->scq, "A's send CQ (a send too large for the receive, then more)", s.aexp, more + 1);
	rcp_expect_state(p, p->a, "A after a remote invalid request", IBV_QPS_ERR);
	rcp_expect_state(p, p->b, "B after a local length error", IBV_QPS_ERR);
	if (rcp_failed(p))
		return;
	/* The first receive's buffer is undefined after LOC_LEN_ERR. */
	memcpy(p->model + RCP_RECV, p->buf + RCP_RECV, RCP_SLOT);
	post_one_send(p, p->a, p->base_id + 0x20, RCP_SRC, 8, &rc);
	s.aexp[0] = rcp_done(p->base_id + 0x20, IBV_WC_WR_FLUSH_ERR, IBV_WC_SEND);
	if (!rc)
		rcp_expect(p, p->scq, "A's send CQ (a send posted in ERR)", s.aexp, 1);
	post_one_recv(p, p->b, p->base_id + 0x60, RCP_RECV + RCP_SLOT, 8, &rc);
	s.bexp[0] = rcp_done(p->base_id + 0x60, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV);
	if (!rc)
		rcp_expect(p, p->rcq, "B's receive CQ (a receive posted in ERR)", s.bexp, 1);
	rcp_expect_empty(p, p->ocq, "the CQ of A's receives and B's sends");
	rcp_check_memory(p);
	if (!rcp_failed(p) && rng_bernoulli(p->rng, 0.5))
		reuse_after_reset(p);
}

/* With rnr_retry 7, max_send_wr sends wait on B; R receives posted later release R of them. */
/* Send i of an RNR script: a 1-byte SEND, or a 1-byte WRITE_WITH_IMM (which needs a receive too). */
static void post_rnr(struct rcp *p, uint32_t i, bool wimm, int *rc)
{
	struct ibv_sge sge = {(uintptr_t)(p->buf + RCP_SRC + i), 1, p->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = p->base_id + i,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = wimm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED,
				 .imm_data = RCP_RNR_IMM ^ i},
			   *bad;

	wr.wr.rdma.remote_addr = (uintptr_t)(p->buf + RCP_TGT + 8 * i);
	wr.wr.rdma.rkey = p->mr->rkey;
	*rc = hw_post_send(p->a, &wr, &bad);
}

static void rnr_forever(struct rcp *p, uint32_t sends, bool wimm)
{
	struct rcp_exp exp[RCP_MAX_WR];
	uint32_t r = (uint32_t)rng_range(p->rng, 0, sends);
	int rc = 0;

	/*
	 * Many times 7 RNR timers of 10 us, looked at every millisecond: on a
	 * loaded machine the device's engine may not run for a while, so the
	 * wait is long enough for it to have retried more than 7 times.
	 */
	for (uint64_t end = clock_ns() + RCP_RNR_WAIT_NS; clock_ns() < end && !rcp_failed(p);) {
		rcp_wait_ns(1000000);
		rcp_expect_empty(p, p->scq,
				 "A's send CQ (sends whose receiver has no receive yet, rnr_retry 7)");
	}
	if (rcp_failed(p))
		return;

	for (uint32_t i = 0; i < r && !rc; i++) {
		post_one_recv(p, p->b, p->base_id + 0x40 + i, RCP_RECV + 32 * i, 16, &rc);
		exp[i] = rcp_done(p->base_id + 0x40 + i, IBV_WC_SUCCESS,
				  wimm ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV);
		exp[i].check_len = true;
		exp[i].byte_len = 1;
		exp[i].imm = wimm;
		exp[i].imm_data = RCP_RNR_IMM ^ i;
		memcpy(p->model + (wimm ? RCP_TGT + 8 * i : RCP_RECV + 32 * i), p->model + RCP_SRC + i, 1);
	}
	if (rc) {
		rcp_fail(p, "a receive refused: %s", strerror(rc));
		return;
	}
	rcp_expect(p, p->rcq, "B's receive CQ (receives posted while sends wait on RNR)", exp, (int)r);
	for (uint32_t i = 0; i < sends; i++) {
		exp[i] = rcp_done(p->base_id + i, i < r ? IBV_WC_SUCCESS : IBV_WC_WR_FLUSH_ERR,
				  wimm ? IBV_WC_RDMA_WRITE : IBV_WC_SEND);
	}
	rcp_expect(p, p->scq, "A's send CQ (sends released by late receives)", exp, (int)r);
	rcp_wait_ns(1000000);
	rcp_expect_empty(p, p->scq, "A's send CQ (sends whose receiver has no receive, rnr_retry 7)");
	if (rcp_failed(p))
		return;
	if (r < sends && rng_bernoulli(p->rng, 0.5)) {
		reuse_after_reset(p); /* the waiting sends go without a trace */
		return;
	}
	if (rcp_to_err(p->a))
		return;
	rcp_expect(p, p->scq, "A's send CQ (sends waiting on RNR when A entered ERR)", exp + r,
		   (int)(sends - r));
	rcp_check_memory(p);
}

void rcp_case_rnr(struct rcp *p)
{
	struct rcp_exp exp[RCP_MAX_WR];
	uint8_t retry = rng_bernoulli(p->rng, 0.7) ? RCP_NO_RETRY : (uint8_t)rng_range(p->rng, 0, 6);
	bool wimm = rng_bernoulli(p->rng, 0.3); /* WRITE_WITH_IMM needs a receive as much as a SEND */
	uint32_t sends;
	int rc = 0;

	p->name = retry == RCP_NO_RETRY ? "RNR, retried for ever" : "RNR, retried a few times";
	p->shape = (struct rcp_shape){.scqe = RCP_CQE,
				      .a_send_wr = (uint32_t)rng_range(p->rng, 1, 8),
				      .a_recv_wr = 1,
				      .b_recv_wr = 16,
				      .a_rnr_retry = retry};
	if (rcp_setup(p))
		return;
	sends = p->acap.max_send_wr;
	if (sends > 16)
		return;
	for (uint32_t i = 0; i < sends && !rc; i++)
		post_rnr(p, i, wimm, &rc);
	if (rc) {
		rcp_fail(p, "a send of the %u max_send_wr allows refused: %s", sends, strerror(rc));
		return;
	}
	if (retry != RCP_NO_RETRY) {
		for (uint32_t i = 0; i < sends; i++)
			exp[i] = rcp_done(p->base_id + i, i ? IBV_WC_WR_FLUSH_ERR : IBV_WC_RNR_RETRY_EXC_ERR,
					  wimm ? IBV_WC_RDMA_WRITE : IBV_WC_SEND);
		rcp_expect(p, p->scq, "A's send CQ (no receive at B)", exp, (int)sends);
		rcp_expect_state(p, p->a, "A after RNR retries ran out", IBV_QPS_ERR);
		rcp_expect_state(p, p->b, "B (it only had no receive)", IBV_QPS_RTS);
		return;
	}
	post_rnr(p, sends, wimm, &rc);
	if (!rc) {
		rcp_fail(p, "a send queue of max_send_wr %u, full of sends waiting on RNR, took one more",
			 sends);
		return;
	}
	rnr_forever(p, sends, wimm);
}

void rcp_case_rq_flush(struct rcp *p)
{
	struct rcp_exp exp[RCP_MAX_WR];
	uint32_t n;
	int rc = 0;

	p->name = "receive queue filled, then flushed";
	p->shape = (struct rcp_shape){.scqe = RCP_CQE,
				      .a_send_wr = 1,
				      .a_recv_wr = 1,
				      .b_recv_wr = (uint32_t)rng_range(p->rng, 1, 32),
				      .a_rnr_retry = RCP_NO_RETRY};
	if (rcp_setup(p))
		return;
	n = p->bcap.max_recv_wr;
	if (n > 32)
		return;
	for (uint32_t i = 0; i < n && !rc; i++) {
		post_one_recv(p, p->b, p->base_id + 0x40 + i, RCP_RECV + 16 * i, 16, &rc);
		exp[i] = rcp_done(p->base_id + 0x40 + i, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV);
	}
	if (rc) {
		rcp_fail(p, "a receive of the %u max_recv_wr allows refused: %s", n, strerror(rc));
		return;
	}
	post_one_recv(p, p->b, p->base_id + 0x3f, RCP_RECV + 16 * n, 16, &rc);
	if (!rc) {
		rcp_fail(p, "a receive queue of max_recv_wr %u, full, took one more", n);
		return;
	}
	post_one_recv(p, p->a, p->base_id + 0x80, RCP_RDST, 64, &rc);
	if (rc || rcp_to_err(p->b))
		return;
	rcp_expect(p, p->rcq, "B's receive CQ (a full receive queue, B moved to ERR)", exp, (int)n);
	post_one_send(p, p->b, p->base_id + 0x20, RCP_SRC, (uint32_t)rng_range(p->rng, 1, 64), &rc);
	exp[0] = rcp_done(p->base_id + 0x20, IBV_WC_WR_FLUSH_ERR, IBV_WC_SEND);
	if (!rc)
		rcp_expect(p, p->ocq, "the CQ of B's sends (a send posted to B in ERR)", exp, 1);
	post_one_recv(p, p->b, p->base_id + 0x60, RCP_RECV, 16, &rc);
	exp[0] = rcp_done(p->base_id + 0x60, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV);
	if (!rc)
		rcp_expect(p, p->rcq, "B's receive CQ (a receive posted to B in ERR)", exp, 1);
	rcp_wait_ns(1000000);
	rcp_expect_empty(p, p->ocq, "the CQ of A's receive (B's send was flushed, it must not arrive)");
	rcp_check_memory(p);
	rcp_expect_state(p, p->a, "A", IBV_QPS_RTS);
}

/*
 * An overflowed CQ stays in error (IBTA: CQ overflow is a CQ error): once what it holds is polled,
 * a later send's completion must not be delivered there as if nothing had happened.
 */
#define OVERFLOW_QUIET_NS (10 * 1000000ull)
static void after_overflow(struct rcp *p, uint32_t n)
{
	uint64_t late_id = p->base_id + n;
	struct ibv_wc wc;
	int rc = 0;

	for (int i = 0; i <= p->scq->cqe && hw_poll_cq(p->scq, 1, &wc) > 0; i++)
		;
	post_one_recv(p, p->b, p->base_id + 0x40 + n, RCP_RECV + 32 * n, 16, &rc);
	if (!rc)
		post_one_send(p, p->a, late_id, RCP_SRC, 4, &rc);
	if (rc)
		return; /* a QP whose CQ failed may refuse work: nothing to judge */
	rcp_wait_ns(OVERFLOW_QUIET_NS);
	while (hw_poll_cq(p->scq, 1, &wc) > 0)
		if (wc.wr_id == late_id && wc.status == IBV_WC_SUCCESS) {
			rcp_fail(p,
				 "A's send CQ, overflowed (IBV_EVENT_CQ_ERR) and then polled empty, delivered a "
				 "later send's completion (wr_id %llx, success) as if it had not failed",
				 (unsigned long long)late_id);
			break;
		}
	/* B may have taken the late message: its receive's bytes are the device's to decide. */
	memcpy(p->model + RCP_RECV + 32 * n, p->buf + RCP_RECV + 32 * n, 16);
}

void rcp_case_cq_overflow(struct rcp *p)
{
	struct rcp_exp exp[RCP_MAX_WR], rexp[RCP_MAX_WR];
	struct ibv_send_wr wr[RCP_MAX_WR], *bad;
	struct ibv_sge sge[RCP_MAX_WR];
	bool over = rng_bernoulli(p->rng, 0.5);
	uint32_t n;
	int rc = 0, ev;

	p->name = over ? "a CQ given one completion more than its capacity" : "a CQ filled exactly";
	p->shape = (struct rcp_shape){.scqe = (int)rng_range(p->rng, 1, 16),
				      .a_send_wr = 33,
				      .a_recv_wr = 1,
				      .b_recv_wr = 33,
				      .a_rnr_retry = RCP_NO_RETRY};
	if (rcp_setup(p))
		return;
	n = (uint32_t)p->scq->cqe + over;
	p->scq_dirty = true;
	if (p->scq->cqe > 32)
		return;
	for (uint32_t i = 0; i < n && !rc; i++) {
		post_one_recv(p, p->b, p->base_id + 0x40 + i, RCP_RECV + 32 * i, 16, &rc);
		rexp[i] = rcp_done(p->base_id + 0x40 + i, IBV_WC_SUCCESS, IBV_WC_RECV);
		exp[i] = rcp_done(p->base_id + i, IBV_WC_SUCCESS, IBV_WC_SEND);
		memcpy(p->model + RCP_RECV + 32 * i, p->model + RCP_SRC + 4 * i, 4);
		sge[i] = (struct ibv_sge){(uintptr_t)(p->buf + RCP_SRC + 4 * i), 4, p->mr->lkey};
		wr[i] = (struct ibv_send_wr){.wr_id = p->base_id + i,
					     .next = i + 1 < n ? &wr[i + 1] : NULL,
					     .sg_list = &sge[i],
					     .num_sge = 1,
					     .opcode = IBV_WR_SEND,
					     .send_flags = IBV_SEND_SIGNALED};
	}
	if (rc || (rc = hw_post_send(p->a, wr, &bad))) {
		rcp_fail(p, "%u sends or receives (max_send_wr %u, max_recv_wr %u) refused: %s", n,
			 p->acap.max_send_wr, p->bcap.max_recv_wr, strerror(rc));
		return;
	}
	rcp_expect(p, p->rcq, "B's receive CQ", rexp, (int)n);
	if (rcp_failed(p))
		return;
	if (over) {
		if (rcp_async_event(p, IBV_EVENT_CQ_ERR, p->scq, 3000 * 1000000ull) == 0)
			rcp_fail(
			    p, "A's send CQ of %d entries got %u completions and raised no IBV_EVENT_CQ_ERR",
			    p->scq->cqe, n);
		else
			after_overflow(p, n);
	} else {
		rcp_expect(p, p->scq, "A's send CQ, filled exactly", exp, (int)n);
		rcp_expect_empty(p, p->scq, "A's send CQ, filled exactly");
		if ((ev = rcp_async_event(p, IBV_EVENT_CQ_ERR, p->scq, 0)) == 1)
			rcp_fail(p, "A's send CQ of %d entries, filled exactly, raised IBV_EVENT_CQ_ERR",
				 p->scq->cqe);
	}
	rcp_check_memory(p);
}
