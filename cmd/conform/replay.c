/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Probe script (rcprobe.h): an RC responder answers a duplicate atomic
 * from the result it saved and does not execute it again (IBTA 9.7.5.1.1,
 * rxe's atomic reply cache): an atomic takes effect once, however often
 * the requester retransmits it.
 *
 * A runs 0-2 WRITEs, then a FETCH_ADD or a COMP_SWAP that swaps.  Then A
 * is reconnected with its send PSN back at the atomic's, as a requester
 * whose acknowledgement was lost retransmits from there, and posts the
 * same atomic again and a fresh FETCH_ADD to the same place.  The
 * duplicate completes with SUCCESS and the original value B answered the
 * first time; the fresh FETCH_ADD finds the value after one execution.
 */
#include "cmd/conform/rcp.h"

#include <stdio.h>
#include <string.h>

#define REPLAY_WR 4

struct replay {
	struct ibv_send_wr wr[REPLAY_WR];
	struct ibv_sge sge[REPLAY_WR];
	struct rcp_exp exp[REPLAY_WR];
	uint64_t id; /* the chain's first wr_id, past p->base_id */
	int n;
};

static struct ibv_send_wr *replay_add(struct rcp *p, struct replay *r, enum ibv_wr_opcode op,
				      enum ibv_wc_opcode wc_op, uint32_t from, uint32_t len)
{
	struct ibv_send_wr *w = &r->wr[r->n];

	r->sge[r->n] = (struct ibv_sge){(uintptr_t)(p->buf + from), len, p->mr->lkey};
	*w = (struct ibv_send_wr){.wr_id = p->base_id + r->id + (uint64_t)r->n,
				  .sg_list = &r->sge[r->n],
				  .num_sge = 1,
				  .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED};
	r->exp[r->n] = rcp_done(w->wr_id, IBV_WC_SUCCESS, wc_op);
	if (wc_op == IBV_WC_FETCH_ADD || wc_op == IBV_WC_COMP_SWAP) {
		r->exp[r->n].check_len = true;
		r->exp[r->n].byte_len = 8;
	}
	if (r->n)
		r->wr[r->n - 1].next = w;
	r->n++;
	return w;
}

static void replay_atomic(struct rcp *p, struct replay *r, bool cas, uint32_t tgt, uint32_t res, uint64_t arg,
			  uint64_t swap)
{
	struct ibv_send_wr *w =
	    replay_add(p, r, cas ? IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_ATOMIC_FETCH_AND_ADD,
		       cas ? IBV_WC_COMP_SWAP : IBV_WC_FETCH_ADD, res, 8);

	w->wr.atomic.remote_addr = (uintptr_t)(p->buf + tgt);
	w->wr.atomic.rkey = p->mr->rkey;
	w->wr.atomic.compare_add = arg;
	w->wr.atomic.swap = swap;
}

static void replay_run(struct rcp *p, struct replay *r, const char *who)
{
	struct ibv_send_wr *bad;

	if (hw_post_send(p->a, r->wr, &bad)) {
		rcp_fail(p, "%s: a chain of %d WRs refused at post", who, r->n);
		return;
	}
	rcp_expect(p, p->scq, who, r->exp, r->n);
}

void rcp_case_replay(struct rcp *p)
{
	bool cas = rng_bernoulli(p->rng, 0.5);
	int writes = (int)rng_range(p->rng, 0, 2);
	uint32_t tgt = RCP_TGT + 8 * (uint32_t)rng_range(p->rng, 0, 63), atomic_psn;
	uint32_t res = RCP_RDST + 8 * (uint32_t)rng_range(p->rng, 0, 15);
	uint64_t orig, once, add = rng_next(p->rng) | 1, swap = rng_next(p->rng),
			     fresh_add = rng_next(p->rng) | 1;
	struct replay first = {.id = 0}, again = {.id = 0x20};
	char who[160];

	p->name = cas ? "replay: a duplicate COMP_SWAP is answered from the saved result"
		      : "replay: a duplicate FETCH_ADD is answered from the saved result";
	if (p->dev->dattr.atomic_cap == IBV_ATOMIC_NONE) {
		p->abandoned = true; /* rcprobe_holds.c judges that claim */
		return;
	}
	p->shape = (struct rcp_shape){
	    .scqe = RCP_CQE, .a_send_wr = REPLAY_WR, .a_recv_wr = 1, .b_recv_wr = 1, .a_rnr_retry = 7};
	if (rcp_setup(p))
		return;
	memcpy(&orig, p->model + tgt, 8);
	if (swap == orig)
		swap = ~orig;
	once = cas ? swap : orig + add;
	for (int i = 0; i < writes; i++) {
		struct rcp_piece from = {RCP_SRC + 64 * (uint32_t)i, (uint32_t)rng_range(p->rng, 1, 64)},
				 to = {RCP_TGT + RCP_SLOT + 128 * (uint32_t)i, from.len};
		struct ibv_send_wr *w =
		    replay_add(p, &first, IBV_WR_RDMA_WRITE, IBV_WC_RDMA_WRITE, from.off, from.len);

		w->wr.rdma.remote_addr = (uintptr_t)(p->buf + to.off);
		w->wr.rdma.rkey = p->mr->rkey;
		rcp_model_move(p, &from, 1, &to, 1);
	}
	atomic_psn = (p->psn_a + (uint32_t)writes) & 0xffffff;
	replay_atomic(p, &first, cas, tgt, res, cas ? orig : add, swap);
	memcpy(p->model + tgt, &once, 8);
	memcpy(p->model + res, &orig, 8);
	snprintf(who, sizeof(who), "A's send CQ (%d WRITEs, then a %s)", writes,
		 cas ? "COMP_SWAP" : "FETCH_ADD");
	replay_run(p, &first, who);
	rcp_check_memory(p);
	if (rcp_failed(p))
		return;

	/* A retransmits from the atomic's PSN: the atomic is a duplicate, the FETCH_ADD after it is new. */
	if (rcp_reconnect_a_at(p, atomic_psn))
		return;
	replay_atomic(p, &again, cas, tgt, res + 8 * 16, cas ? orig : add, swap);
	memcpy(p->model + res + 8 * 16, &orig, 8);
	replay_atomic(p, &again, false, tgt, res + 8 * 32, fresh_add, 0);
	memcpy(p->model + res + 8 * 32, &once, 8);
	once += fresh_add;
	memcpy(p->model + tgt, &once, 8);
	snprintf(who, sizeof(who),
		 "A's send CQ (the %s again at PSN %u, which B executed already, then a fresh FETCH_ADD)",
		 cas ? "COMP_SWAP" : "FETCH_ADD", atomic_psn);
	replay_run(p, &again, who);
	if (!rcp_failed(p)) {
		uint64_t answered;

		memcpy(&answered, p->buf + res + 8 * 16, 8);
		if (answered != orig)
			rcp_fail(p,
				 "a duplicate %s (PSN %u) answered %#llx, not %#llx as B did the first time: "
				 "B executed it again instead of answering from its saved result",
				 cas ? "COMP_SWAP" : "FETCH_ADD", atomic_psn, (unsigned long long)answered,
				 (unsigned long long)orig);
	}
	rcp_check_memory(p);
	rcp_expect_state(p, p->a, "A after a duplicate atomic", IBV_QPS_RTS);
	rcp_expect_state(p, p->b, "B after a duplicate atomic", IBV_QPS_RTS);
}
