/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * --verify device probes on objects of their own (two PDs with an MR each, a
 * CQ, a UD QP, an AH to ourselves) and their own random stream, so a walk
 * replays the same with or without them; one at a time per client, every
 * DEVPROBE_PERIOD_NS, the walk going on while the completions settle:
 *  - CQ_FULL: a CQ of capacity N, polled once N signaled sends had time to
 *    complete, holds all N, in order, and nothing more (the walk itself never
 *    fills a CQ to the brim).
 *  - UD_SQE: of a chain of UD sends, the second breaks a local rule (an lkey
 *    of another PD, or 1 to 4 bytes past its MR): the first succeeds, it
 *    fails with LOC_PROT_ERR, the rest flush, the QP is in SQE; back in RTS,
 *    a send works.  Either way the receive queue takes exactly max_recv_wr
 *    receives first (the sends' other Q_Key never consumes them).
 */
#include "cmd/walk/actions.h"
#include "cmd/walk/model.h"
#include "cmd/walk/oracle.h"

#include <stdio.h>

#define DEVPROBE_PERIOD_NS    (100 * 1000000ull)
#define DEVPROBE_PERIOD_STEPS 250 /* --steps: also every this many steps, however slow the machine */
#define DEVPROBE_SETTLE_NS    (10 * 1000000ull)	  /* before the first poll of a CQ_FULL probe */
#define DEVPROBE_DEADLINE_NS  (2000 * 1000000ull) /* for every completion to arrive */
/*
 * Past the deadline, polls before the probe is judged late: on a loaded
 * machine the whole process (the soft device's progress with it) can
 * stall for longer than the deadline, and then the first poll after it
 * comes too soon to tell.
 */
#define DEVPROBE_LATE_POLLS 256
#define DEVPROBE_MR_BYTES   64
#define DEVPROBE_QKEY	    0x11u

enum { DEVPROBE_IDLE, DEVPROBE_CQ_FULL, DEVPROBE_UD_SQE, DEVPROBE_UD_RECOVERED };

static void devprobe_free(struct walk_client *c)
{
	struct walk_devprobe *d = &c->devprobe;

	if (d->qp)
		hw_destroy_qp(d->qp);
	if (d->ah)
		hw_destroy_ah(d->ah);
	if (d->cq)
		hw_destroy_cq(d->cq);
	for (int i = 0; i < 2; i++) {
		if (d->mr[i])
			hw_dereg_mr(d->mr[i]);
		if (d->pd[i])
			hw_dealloc_pd(d->pd[i]);
	}
	d->qp = NULL;
	d->ah = NULL;
	d->cq = NULL;
	memset(d->mr, 0, sizeof(d->mr));
	memset(d->pd, 0, sizeof(d->pd));
	d->kind = DEVPROBE_IDLE;
	d->next_ns = walk_now_ns() + DEVPROBE_PERIOD_NS;
}

/* A receive queue takes as many receives as ibv_create_qp said it would (the probe's sends never reach them).
 */
static void fill_rq(struct walk_client *c, uint32_t n)
{
	struct walk_devprobe *d = &c->devprobe;
	struct ibv_sge sge = {(uintptr_t)d->buf[0], DEVPROBE_MR_BYTES, d->mr[0]->lkey};
	struct ibv_recv_wr wr = {.sg_list = &sge, .num_sge = 1}, *bad;
	int rc = 0;
	uint32_t i;

	for (i = 0; i < n && !rc; i++) {
		wr.wr_id = d->base_id + 0x80 + i;
		rc = hw_post_recv(d->qp, &wr, &bad);
	}
	if (rc)
		walk_stats_fail(&c->stats,
				"client %d #%llu: UD QP %u: receive %u of the %u its max_recv_wr allows was "
				"refused (%s)",
				c->id, (unsigned long long)c->seq, d->qp->qp_num, i, n, strerror(rc));
}

/* The objects of one probe: a CQ of cqe entries, a UD QP (room for a CQ's worth of sends), an AH to
 * ourselves. */
static int devprobe_objects(struct walk_client *c, int cqe)
{
	struct walk_devprobe *d = &c->devprobe;
	struct ibv_qp_init_attr init = {.qp_type = IBV_QPT_UD, .sq_sig_all = 1};
	struct ibv_ah_attr ah = {
	    .dlid = c->peers[c->id].lid, .port_num = (uint8_t)c->cfg->port, .is_global = 1};

	for (int i = 0; i < 2; i++) {
		if (!(d->pd[i] = hw_alloc_pd(c->ctx)))
			return -1;
		if (!(d->mr[i] = hw_reg_mr(d->pd[i], d->buf[i], DEVPROBE_MR_BYTES, IBV_ACCESS_LOCAL_WRITE)))
			return -1;
	}
	if (!(d->cq = hw_create_cq(c->ctx, cqe, NULL, NULL, 0)))
		return -1;
	init.send_cq = init.recv_cq = d->cq;
	init.cap = (struct ibv_qp_cap){.max_send_wr = (uint32_t)d->cq->cqe,
				       .max_recv_wr = (uint32_t)rng_range(&d->rng, 1, DEVPROBE_MAX_WR),
				       .max_send_sge = 1,
				       .max_recv_sge = 1};
	if (!(d->qp = hw_create_qp(d->pd[0], &init)) || walk_ud_to_rts(c, d->qp, DEVPROBE_QKEY))
		return -1;
	fill_rq(c, init.cap.max_recv_wr);
	ah.grh.dgid = c->peers[c->id].gid;
	ah.grh.sgid_index = (uint8_t)c->cfg->gid_index;
	ah.grh.hop_limit = 64;
	return (d->ah = hw_create_ah(d->pd[0], &ah)) ? 0 : -1;
}

/* Posts n chained sends; wr `bad` (if < n) breaks a local rule. 0: all posted. */
static int post_chain(struct walk_client *c, uint32_t n, uint32_t bad)
{
	struct walk_devprobe *d = &c->devprobe;
	struct ibv_send_wr wr[DEVPROBE_MAX_WR], *badwr;
	struct ibv_sge sge[DEVPROBE_MAX_WR];

	for (uint32_t i = 0; i < n; i++) {
		sge[i] = (struct ibv_sge){(uintptr_t)d->buf[0], 8, d->mr[0]->lkey};
		if (i == bad && d->bad_other_pd)
			sge[i] = (struct ibv_sge){(uintptr_t)d->buf[1], 8,
						  d->mr[1]->lkey}; /* an MR of another PD */
		else if (i == bad)				   /* 1 to 4 bytes past the end */
			sge[i].addr = (uintptr_t)d->buf[0] + DEVPROBE_MR_BYTES - 8 + d->past;
		wr[i] = (struct ibv_send_wr){.wr_id = d->base_id + i,
					     .next = i + 1 < n ? &wr[i + 1] : NULL,
					     .sg_list = &sge[i],
					     .num_sge = 1,
					     .opcode = IBV_WR_SEND};
		wr[i].wr.ud.ah = d->ah;
		wr[i].wr.ud.remote_qpn = d->qp->qp_num;
		wr[i].wr.ud.remote_qkey = DEVPROBE_QKEY ^ 1; /* another Q_Key: the receives stay posted */
	}
	d->posted = n;
	d->seen = 0;
	d->t0 = walk_now_ns();
	d->late_polls = 0;
	return hw_post_send(d->qp, wr, &badwr);
}

static void devprobe_start(struct walk_client *c)
{
	struct walk_devprobe *d = &c->devprobe;
	bool cq_full = rng_bernoulli(&d->rng, 0.5);
	int cqe = cq_full ? (int)rng_range(&d->rng, 1, DEVPROBE_MAX_WR) : DEVPROBE_MAX_WR;
	uint32_t n;

	d->base_id = rng_next(&d->rng) << 8;
	d->bad_other_pd = rng_bernoulli(&d->rng, 0.5);
	d->past = (uint32_t)rng_range(&d->rng, 1, 4);
	if (devprobe_objects(c, cqe)) {
		devprobe_free(c); /* a device may refuse a resource: not a finding */
		return;
	}
	d->cqe = d->cq->cqe;
	if (cq_full && d->cqe > DEVPROBE_MAX_WR) {
		devprobe_free(c);
		return;
	}
	n = cq_full ? (uint32_t)d->cqe : (uint32_t)rng_range(&d->rng, 3, DEVPROBE_MAX_WR / 2);
	d->kind = cq_full ? DEVPROBE_CQ_FULL : DEVPROBE_UD_SQE;
	if (post_chain(c, n, cq_full ? n : 1)) {
		devprobe_free(c);
		return;
	}
	c->stats.devprobes[cq_full ? 0 : 1]++;
	LOG(c, "c%d #%llu device probe %s: %u sends on qp=%u, cq of %d", c->id, (unsigned long long)c->seq,
	    cq_full ? "CQ filled to capacity" : "UD send error", n, d->qp->qp_num, d->cqe);
}

/* Completion i of the probe against the model: a SEND of 8 bytes on the probe's QP, ending in `statuses`. */
static bool judge_wc(struct walk_client *c, uint32_t i, uint64_t statuses, const char *what)
{
	struct walk_devprobe *d = &c->devprobe;
	struct model_wc e;

	model_send_wc(&e, IBV_WR_SEND, 8, d->qp->qp_num);
	e.statuses = statuses;
	return walk_oracle(
	    c,
	    &(struct walk_obs){.kind = WALK_OBS_PREDICTED, .predicted = &e, .wc = &d->wc[i], .what = what});
}

/* The status of the chain's broken send, from the key rules: its SGE is in MR 1 (PD 1) or past MR 0's end. */
static uint64_t broken_send_status(struct walk_client *c)
{
	struct walk_devprobe *d = &c->devprobe;
	uint32_t k = d->bad_other_pd ? 1 : 0;
	struct model_key key = {.valid = true,
				.addr = (uintptr_t)d->buf[k],
				.length = DEVPROBE_MR_BYTES,
				.access = IBV_ACCESS_LOCAL_WRITE,
				.pd = k};
	uint64_t addr =
	    d->bad_other_pd ? (uintptr_t)d->buf[1] : (uintptr_t)d->buf[0] + DEVPROBE_MR_BYTES - 8 + d->past;

	return MODEL_ST(model_local_sge(&key, 0, addr, 8, false));
}

static void judge_sqe(struct walk_client *c)
{
	struct walk_devprobe *d = &c->devprobe;
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;
	const char *why = d->bad_other_pd ? "an lkey of another PD" : "a range past its MR's end";
	char what[160];

	for (uint32_t i = 0; i < d->posted; i++) {
		snprintf(what, sizeof(what), "UD QP %u, send %u of a chain of %u (send 2 with %s)%s",
			 d->qp->qp_num, i + 1, d->posted, why,
			 i > 1 ? ", posted behind the one that failed," : "");
		if (!judge_wc(c, i,
			      i == 0   ? MODEL_ST(IBV_WC_SUCCESS)
			      : i == 1 ? broken_send_status(c)
				       : MODEL_ST(IBV_WC_WR_FLUSH_ERR), /* the QP is in SQE */
			      what))
			break;
	}
	if (hw_query_qp(d->qp, &attr, IBV_QP_STATE, &init) == 0) {
		snprintf(what, sizeof(what), "UD QP %u after a send failed (%s)", d->qp->qp_num, why);
		walk_oracle(c, &(struct walk_obs){.kind = WALK_OBS_ATTR,
						  .verb = "the state",
						  .what = what,
						  .rc = attr.qp_state,
						  .want = IBV_QPS_SQE});
	}
	attr = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTS, .cur_qp_state = IBV_QPS_SQE};
	if (hw_modify_qp(d->qp, &attr, IBV_QP_STATE | IBV_QP_CUR_STATE) == 0 && post_chain(c, 1, 1) == 0) {
		d->kind = DEVPROBE_UD_RECOVERED;
		return;
	}
	devprobe_free(c);
}

static void judge(struct walk_client *c)
{
	struct walk_devprobe *d = &c->devprobe;
	char what[160];

	if (d->kind == DEVPROBE_CQ_FULL) {
		for (uint32_t i = 0; i < d->posted; i++) {
			snprintf(what, sizeof(what),
				 "UD send %u of %u on QP %u (CQ of capacity %d, filled exactly)", i + 1,
				 d->posted, d->qp->qp_num, d->cqe);
			if (!judge_wc(c, i, MODEL_ST(IBV_WC_SUCCESS), what))
				break;
		}
	} else if (d->kind == DEVPROBE_UD_SQE) {
		judge_sqe(c);
		return;
	} else {
		snprintf(what, sizeof(what), "UD QP %u moved from SQE back to RTS: a send", d->qp->qp_num);
		judge_wc(c, 0, MODEL_ST(IBV_WC_SUCCESS), what);
	}
	devprobe_free(c);
}

/* Takes what the probe CQ holds, and judges the probe once every completion is in (or late). */
static void devprobe_poll(struct walk_client *c)
{
	struct walk_devprobe *d = &c->devprobe;
	struct ibv_wc wc[DEVPROBE_MAX_WR + 1];
	uint64_t now = walk_now_ns();
	int n;

	if (d->kind == DEVPROBE_CQ_FULL && now - d->t0 < DEVPROBE_SETTLE_NS)
		return; /* the CQ must fill before anybody empties it */
	n = hw_poll_cq(d->cq, DEVPROBE_MAX_WR + 1, wc);
	for (int i = 0; i < n; i++) {
		uint64_t k = wc[i].wr_id - d->base_id;

		if (k != d->seen || d->seen >= d->posted) {
			walk_stats_fail(
			    &c->stats,
			    "client %d #%llu: probe CQ of capacity %d: completion %u has wr_id %llx; "
			    "expected %llx (%u sends posted, completed in order, once)",
			    c->id, (unsigned long long)c->seq, d->cqe, d->seen + 1,
			    (unsigned long long)wc[i].wr_id, (unsigned long long)(d->base_id + d->seen),
			    d->posted);
			devprobe_free(c);
			return;
		}
		d->wc[d->seen++] = wc[i];
	}
	if (d->seen == d->posted) {
		judge(c);
	} else if (n < 0 || (now - d->t0 > DEVPROBE_DEADLINE_NS && ++d->late_polls > DEVPROBE_LATE_POLLS)) {
		walk_stats_fail(
		    &c->stats,
		    "client %d #%llu: %s: %u of %u completions arrived within %llu ms (CQ of "
		    "capacity %d on QP %u)%s",
		    c->id, (unsigned long long)c->seq,
		    d->kind == DEVPROBE_CQ_FULL ? "a CQ filled exactly to its capacity" : "UD sends", d->seen,
		    d->posted, DEVPROBE_DEADLINE_NS / 1000000, d->cqe, d->qp->qp_num,
		    d->kind == DEVPROBE_CQ_FULL ? "; a CQ holds as many completions as its capacity" : "");
		devprobe_free(c);
	}
}

void walk_devprobe_step(struct walk_client *c)
{
	struct walk_devprobe *d = &c->devprobe;

	if (!c->cfg->verify)
		return;
	if (d->kind != DEVPROBE_IDLE) {
		devprobe_poll(c);
		return;
	}
	if (!d->next_ns) {
		rng_seed(&d->rng, c->cfg->seed, 0xde7000u + (uint64_t)c->id);
		d->next_ns = walk_now_ns() + DEVPROBE_PERIOD_NS;
	}
	if (!d->next_step)
		d->next_step = c->seq + DEVPROBE_PERIOD_STEPS;
	if (walk_now_ns() >= d->next_ns || (c->cfg->steps && c->seq >= d->next_step)) {
		d->next_step = c->seq + DEVPROBE_PERIOD_STEPS;
		devprobe_start(c);
	}
}

/* At the end: what is in flight is abandoned, unjudged. */
void walk_devprobe_end(struct walk_client *c)
{
	if (c->devprobe.kind != DEVPROBE_IDLE)
		devprobe_free(c);
}
