/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * --verify device probes: short scripts of phases on objects and a random stream of their own, one at a time
 * per client, the kinds in turn.  The model predicts every completion; a queue completes in order, each WR
 * once.  What each kind checks is in rdmatool-walk(1) and at each script below.
 */
#include "cmd/walk/actions.h"
#include "cmd/walk/model.h"
#include "cmd/walk/oracle.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>

#define PERIOD_NS    (100 * 1000000ull)
#define PERIOD_STEPS 250		 /* --steps: also every this many steps, however slow the machine */
#define SETTLE_NS    (10 * 1000000ull)	 /* CQ_FULL: before the first poll (the CQ fills to the brim) */
#define DEADLINE_NS  (2000 * 1000000ull) /* for every completion (or event) to arrive */
#define QUIET_NS     (20 * 1000000ull)	 /* no event may come this long after the completions; one due, all */
#define LATE_POLLS   256		 /* past the deadline: a starved process is not a late device */
#define PROBE_WR     32
#define PROBE_EXP    (PROBE_WR + 4)
#define QKEY	     0x12u
#define RQ_BIT	     0x80u /* in a wr_id: a receive */
#define UC_PATTERN   0x5a
#define IMM(d, i)    ((uint32_t)(d)->base ^ (i))
#define RNR_HOLD_NS  (50 * 1000000ull) /* RC_RNR: far more than 8 RNR timers of 0.64 ms */

enum { CQ_FULL, UD_SQE, UNSIGNALED, NOTIFY, UC, RC, RULES, KINDS };
enum { RC_READ, RC_SHORT, RC_PAST, RC_INV1, RC_RNR, RC_VARIANTS }; /* RC: the rule tried */
enum { EV_NONE, EV_MUST, EV_NEVER };

static const char *const names[KINDS] = {"probe of a CQ filled to its capacity",
					 "probe of a UD send error (SQE)",
					 "probe of unsignaled sends (sq_sig_all 0)",
					 "probe of CQ notification (a completion channel)",
					 "probe of a UC QP pair",
					 "probe of an RC QP pair",
					 "probe of verb rules"};

struct walk_devprobe {
	struct rng rng; /* its own stream: the walk's stays the same */
	uint64_t next_ns, next_step;
	unsigned started;
	bool on, other_pd, sol_only, evented, watch; /* watch: UC, the phase waits for its WRITE to land */
	bool hold; /* RC_RNR: the receive is posted RNR_HOLD_NS after the send */
	int kind, phase, nexp, seen, next[2], late, event, bad; /* bad: the broken WR (-1: none) */
	int variant;						/* RC: the rule tried */
	uint32_t dqkey; /* a UD send's remote Q_Key (0: the probe's own) */
	struct ibv_pd *pd[2];
	struct ibv_mr *mr[3]; /* MR i on PD i; MR 0 also takes remote writes; RC: MR 2 on PD 0 is read-only */
	struct ibv_mw *mw;
	struct ibv_srq *srq;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_cq_ex *cqx; /* now and then the CQ is an extended one, polled by ibv_start_poll(3) */
	struct ibv_qp *qp[2];
	struct ibv_ah *ah;
	struct ibv_qp_cap cap;
	uint64_t base, t0, done_ns;
	unsigned char buf[3][64];
	struct {
		uint64_t id;
		struct model_wc e;
		uint32_t imm; /* a receive with immediate data: the value */
	} exp[PROBE_EXP];
};

#define fail(c, fmt, ...)                                                                                    \
	WALK_FAIL(c, "%s, phase %d: " fmt, names[(c)->devprobe->kind], (c)->devprobe->phase, ##__VA_ARGS__)

static void devprobe_free(struct walk_devprobe *d)
{
	for (int i = 0; i < 2; i++)
		if (d->qp[i])
			hw_destroy_qp(d->qp[i]);
	if (d->ah)
		hw_destroy_ah(d->ah);
	if (d->mw)
		hw_dealloc_mw(d->mw);
	if (d->srq)
		hw_destroy_srq(d->srq);
	if (d->mr[2])
		hw_dereg_mr(d->mr[2]);
	if (d->cq)
		hw_destroy_cq(d->cq);
	if (d->ch)
		hw_destroy_comp_channel(d->ch);
	for (int i = 0; i < 2; i++) {
		if (d->mr[i])
			hw_dereg_mr(d->mr[i]);
		if (d->pd[i])
			hw_dealloc_pd(d->pd[i]);
	}
	memset(d->pd, 0, (char *)&d->cap - (char *)d->pd);
	d->on = false;
	d->next_ns = clock_ns() + PERIOD_NS;
}

/* The next completion of a queue: a send of qp 0, or a receive (of qp 1 if there is one), 8 bytes. */
static struct model_wc *expect(struct walk_devprobe *d, uint32_t id, uint64_t statuses, bool recv)
{
	struct ibv_qp *qp = d->qp[recv && d->qp[1]];
	struct model_wc *e = &d->exp[d->nexp].e;

	if (recv)
		model_recv_wc(e, qp->qp_type, qp->qp_type == IBV_QPT_UD ? 48 : 8, qp->qp_num);
	else
		model_send_wc(e, IBV_WR_SEND, 8, qp->qp_num);
	e->statuses = statuses;
	e->len_min = recv ? e->len_max : 0; /* a UD receive: the GRH in front */
	d->exp[d->nexp].imm = 0;
	d->exp[d->nexp++].id = d->base + id + (recv ? RQ_BIT : 0);
	return e;
}

static void state_is(struct walk_client *c, struct ibv_qp *qp, enum ibv_qp_state want, const char *what)
{
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;

	if (hw_query_qp(qp, &attr, IBV_QP_STATE, &init) == 0)
		walk_judge_attr(c, "the state", what, attr.qp_state, (int)want);
}

/* A verb's return against the model's `want` (0, or -1: an error); true if it returned 0. */
static bool verb(struct walk_client *c, const char *name, const char *what, int rc, int want)
{
	return walk_judge_verb(c, name, what, rc, want) && !rc;
}

/* Chained UD sends to the other QP, or to our own with another Q_Key (dropped: the receives stay). */
static int post_ud(struct walk_devprobe *d, struct ibv_send_wr *wr, uint32_t n)
{
	struct ibv_send_wr *bad;

	for (uint32_t i = 0; i < n; i++) {
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
		wr[i].wr.ud.ah = d->ah;
		wr[i].wr.ud.remote_qpn = d->qp[d->qp[1] != NULL]->qp_num;
		wr[i].wr.ud.remote_qkey = d->dqkey ? d->dqkey : d->qp[1] ? QKEY : QKEY ^ 1;
	}
	return hw_post_send(d->qp[0], wr, &bad);
}

static int post_recv(struct walk_devprobe *d, int qp, uint32_t id)
{
	struct ibv_sge sge = {(uintptr_t)d->buf[0] + 8, 56, d->mr[0]->lkey};
	struct ibv_recv_wr wr = {.wr_id = d->base + RQ_BIT + id, .sg_list = &sge, .num_sge = 1}, *bad;

	return hw_post_recv(d->qp[qp], &wr, &bad);
}

/* An 8-byte WR from buffer 0; a broken one through MR 1 (another PD), or 1-4 bytes past or before MR 0. */
static uint64_t one(struct walk_devprobe *d, struct ibv_send_wr *wr, struct ibv_sge *sge, uint32_t id,
		    enum ibv_wr_opcode op, unsigned flags, bool broken)
{
	int k = broken && d->other_pd, r = (int)(d->base >> 8) & 7, off = r & 4 ? 57 + r % 4 : -1 - r % 4;
	struct model_key key = {.valid = true,
				.addr = (uintptr_t)d->buf[k],
				.length = sizeof(d->buf[k]),
				.access = IBV_ACCESS_LOCAL_WRITE,
				.pd = (uint32_t)k};

	*sge = (struct ibv_sge){(uintptr_t)d->buf[k] + (broken && !k ? off : 0), 8, d->mr[k]->lkey};
	*wr = (struct ibv_send_wr){
	    .wr_id = d->base + id, .sg_list = sge, .num_sge = 1, .opcode = op, .send_flags = flags};
	wr->imm_data = htobe32(IMM(d, id));
	return MODEL_ST(model_local_sge(&key, 0, sge->addr, sge->length, false));
}

static bool event_ready(struct walk_devprobe *d)
{
	struct pollfd p = {.fd = d->ch->fd, .events = POLLIN};

	return poll(&p, 1, 0) == 1;
}

/*
 * CQ_FULL, UD_SQE, UNSIGNALED: a chain of UD sends, as many as the CQ or the send queue holds, maybe one
 * broken.  `again`: after an error, back from SQE to RTS and one send; unsignaled, the full queue again.
 */
static bool chain(struct walk_client *c, struct walk_devprobe *d, bool again)
{
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_RTS, .cur_qp_state = IBV_QPS_SQE};
	struct ibv_send_wr wr[PROBE_WR];
	struct ibv_sge sge[PROBE_WR];
	uint32_t n = d->kind == CQ_FULL	     ? (uint32_t)d->cq->cqe
		     : d->kind == UNSIGNALED ? (uint32_t)imin((int)d->cap.max_send_wr, PROBE_WR)
					     : (uint32_t)rng_range(&d->rng, 3, PROBE_WR / 2);
	int mask = IBV_QP_STATE | IBV_QP_CUR_STATE, bad = -1;
	uint64_t st = MODEL_ST(IBV_WC_SUCCESS);

	if (again && d->bad >= 0) {
		state_is(c, d->qp[0], IBV_QPS_SQE, "a UD QP after a send failed");
		if (!verb(c, "ibv_modify_qp", "a UD QP from SQE to RTS", hw_modify_qp(d->qp[0], &attr, mask),
			  model_modify_qp(IBV_QPT_UD, IBV_QPS_SQE, IBV_QPS_RTS, mask)))
			return false;
		n = 1;
	} else if (again && d->kind != UNSIGNALED) {
		return false;
	} else if (!again && d->bad >= 0) {
		bad = d->bad = (int)rng_range(&d->rng, 0, n - 1);
	}
	for (uint32_t i = 0; i < n; i++) {
		bool sig = d->kind != UNSIGNALED || i == n - 1 || (!again && rng_bernoulli(&d->rng, 0.25));
		uint64_t rule = one(d, &wr[i], &sge[i], 64 * again + i, IBV_WR_SEND,
				    sig ? IBV_SEND_SIGNALED : 0, (int)i == bad);

		if ((int)i == bad)
			st = rule;
		if (sig || (bad >= 0 && (int)i >= bad))
			expect(d, 64 * again + i, st, false);
		if ((int)i == bad)
			st = MODEL_ST(IBV_WC_WR_FLUSH_ERR); /* the QP is in SQE */
	}
	return verb(
	    c, "ibv_post_send",
	    again ? "a UD QP back in RTS, or its full send queue again once its last (only signaled) WR's "
		    "completion was polled (an unsignaled WR's slot is free once a later one completed)"
		  : "a chain of UD sends, as many as the QP's max_send_wr or CQ allow",
	    post_ud(d, wr, n), 0);
}

/* NOTIFY: a receive and a send to it (solicited or not; broken: it fails). */
static bool notify_pair(struct walk_client *c, struct walk_devprobe *d, bool solicited, bool broken)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	uint32_t id = (uint32_t)d->phase;
	uint64_t st = one(d, &wr, &sge, id, IBV_WR_SEND, solicited ? IBV_SEND_SOLICITED : 0, broken);

	if (!verb(c, "ibv_post_recv", "a UD QP", post_recv(d, 1, id), 0))
		return false;
	expect(d, id, st, false);
	if (!broken)
		expect(d, id, MODEL_ST(IBV_WC_SUCCESS), true);
	/* The CQ fires if armed for every completion, or for this one (solicited, or an error). */
	d->event = !d->evented && (!d->sol_only || solicited || broken) ? EV_MUST : EV_NEVER;
	return verb(c, "ibv_post_send", "a UD QP", post_ud(d, &wr, 1), 0);
}

/* UC: qp 0 sends `op` to qp 1 (RDMA: into buffer 0 at 32 through MR 0, or buffer 1 through MR 1). */
static bool uc_send(struct walk_client *c, struct walk_devprobe *d, enum ibv_wr_opcode op, int mr)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	uint32_t id = (uint32_t)d->phase;
	bool refuse = op == IBV_WR_RDMA_READ || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
	int rc;

	one(d, &wr, &sge, id, op, 0, false);
	wr.wr.rdma.remote_addr = (uintptr_t)d->buf[mr] + (mr ? 0 : op == IBV_WR_RDMA_WRITE ? 48 : 32);
	wr.wr.rdma.rkey = d->mr[mr]->rkey;
	wr.wr.atomic.remote_addr = wr.wr.rdma.remote_addr;
	wr.wr.atomic.rkey = wr.wr.rdma.rkey;
	rc = hw_post_send(d->qp[0], &wr, &bad);
	if (rc) /* UC has no READ or atomics: refused at the post... */
		return refuse || verb(c, "ibv_post_send", "a UC QP", rc, 0);
	expect(d, id, refuse ? ~MODEL_ST(IBV_WC_SUCCESS) : MODEL_ST(IBV_WC_SUCCESS), false)->opcode =
	    op == IBV_WR_SEND_WITH_IMM ? IBV_WC_SEND : IBV_WC_RDMA_WRITE;
	if (refuse) /* ... or failed, and the script ends there */
		d->phase = 7;
	return true;
}

static bool uc_recv(struct walk_client *c, struct walk_devprobe *d, int opcode)
{
	uint32_t id = (uint32_t)d->phase;
	struct model_wc *e = expect(d, id, MODEL_ST(IBV_WC_SUCCESS), true);

	e->opcode = opcode; /* flags_clear stays 0 (a UC receive, model_recv_wc) */
	e->len_min = opcode == IBV_WC_RECV ? 8 : 0;
	e->len_max = opcode == IBV_WC_RECV ? 8 : MODEL_ANY_LEN;
	e->flags_set = IBV_WC_WITH_IMM;
	d->exp[d->nexp - 1].imm = IMM(d, id);
	return verb(c, "ibv_post_recv", "a UC QP", post_recv(d, 1, id), 0);
}

static void uc_check(struct walk_client *c, struct walk_devprobe *d, bool landed) /* landed: the WRITEs did */
{
	if (landed && memcmp(d->buf[0] + 32, d->buf[0], 8))
		fail(c, "the target of a WRITE_WITH_IMM whose receive completed does not hold its data");
	if (landed && d->buf[1][0] != UC_PATTERN)
		fail(c, "a WRITE through an rkey without remote write changed its memory");
	for (int i = 0; i < 2; i++)
		state_is(c, d->qp[i], IBV_QPS_RTS, "a UC QP whose messages the responder dropped");
}

/* RC: one rule of the data path, its completions predicted; all but RC_RNR end the QPs in ERR. */
static bool rc_rule(struct walk_client *c, struct walk_devprobe *d)
{
	struct model_key k = {true, (uintptr_t)d->buf[0], sizeof(d->buf[0]), IBV_ACCESS_LOCAL_WRITE, 0, 0};
	struct ibv_sge sge, rsge = {(uintptr_t)d->buf[0] + 8, 56, d->mr[0]->lkey};
	struct ibv_recv_wr rwr = {.wr_id = d->base + RQ_BIT, .sg_list = &rsge, .num_sge = 1}, *rbad;
	struct ibv_mw_bind b = {.wr_id = d->base, .send_flags = IBV_SEND_SIGNALED};
	struct ibv_send_wr wr, *bad;
	uint64_t rst = IBV_WC_SUCCESS, any_err = ~MODEL_ST(IBV_WC_SUCCESS);
	struct model_wc *e;

	one(d, &wr, &sge, 0, IBV_WR_SEND, IBV_SEND_SIGNALED, false);
	switch (d->variant) {
	case RC_READ: /* into an MR without local write */
		k.addr = sge.addr = (uintptr_t)d->buf[2];
		k.access = 0;
		sge.lkey = d->mr[2]->lkey;
		wr.opcode = IBV_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = (uintptr_t)d->buf[0];
		wr.wr.rdma.rkey = d->mr[0]->rkey;
		expect(d, 0, MODEL_ST(model_local_sge(&k, 0, sge.addr, sge.length, true)), false)->opcode =
		    IBV_WC_RDMA_READ;
		return verb(c, "ibv_post_send", "an RC QP (a READ)", hw_post_send(d->qp[0], &wr, &bad), 0);
	case RC_INV1: /* a LOCAL_INV of a bound type-1 window */
		if (!(d->mw = hw_alloc_mw(d->pd[0], IBV_MW_TYPE_1)))
			return false; /* no type-1 windows: not a finding */
		b.bind_info =
		    (struct ibv_mw_bind_info){d->mr[0], (uintptr_t)d->buf[0], 64, IBV_ACCESS_REMOTE_WRITE};
		e = expect(d, 0, 0, false);
		model_send_wc(e, IBV_WR_BIND_MW, 0, d->qp[0]->qp_num);
		if (!verb(c, "ibv_bind_mw", "a type-1 window", hw_bind_mw(d->qp[0], d->mw, &b), 0))
			return false;
		wr = (struct ibv_send_wr){.wr_id = d->base + 1,
					  .opcode = IBV_WR_LOCAL_INV,
					  .send_flags = IBV_SEND_SIGNALED,
					  .invalidate_rkey = d->mw->rkey};
		rst = model_invalidate_mw(1, false);
		expect(d, 1, rst ? any_err : MODEL_ST(rst), false)->opcode = IBV_WC_LOCAL_INV;
		return verb(c, "ibv_post_send", "an RC QP (a LOCAL_INV)", hw_post_send(d->qp[0], &wr, &bad),
			    0);
	case RC_SHORT: /* a receive one byte shorter than the SEND */
		rsge.length = sge.length - 1;
		rst = model_recv_fits(rsge.length, sge.length);
		break;
	case RC_PAST: /* a receive SGE ending one byte past its MR */
		sge.length = rsge.length = sizeof(d->buf[0]) - 56 + 1;
		rsge.addr = (uintptr_t)d->buf[0] + 56;
		rst = model_local_sge(&k, 0, rsge.addr, rsge.length, true);
		break;
	default: /* RC_RNR: the receive comes after 8 RNR timers (rnr_retry 7: retried for ever) */
		d->hold = true;
	}
	if (!d->hold && !verb(c, "ibv_post_recv", "an RC QP", hw_post_recv(d->qp[1], &rwr, &rbad), 0))
		return false;
	expect(d, 0, rst ? any_err : MODEL_ST(rst), false);
	e = expect(d, 0, MODEL_ST(rst), true);
	e->len_min = e->len_max = sge.length;
	return verb(c, "ibv_post_send", "an RC QP", hw_post_send(d->qp[0], &wr, &bad), 0);
}

/* RULES: verb returns on a UD QP in RTS (qp 0), one in RTR (qp 1) and an SRQ; a privileged Q_Key's send. */
static bool rules(struct walk_client *c, struct walk_devprobe *d)
{
	struct ibv_srq_init_attr si = {.attr = {.max_wr = (uint32_t)rng_range(&d->rng, 1, 16), .max_sge = 1}};
	struct ibv_sge sge, rsge = {(uintptr_t)d->buf[0] + 8, 56, d->mr[0]->lkey};
	struct ibv_recv_wr rwr = {.sg_list = &rsge, .num_sge = 1}, *rbad;
	struct ibv_send_wr wr, *bad;
	int rc = 0;
	char what[96];

	one(d, &wr, &sge, 1, IBV_WR_SEND, IBV_SEND_SIGNALED, false);
	wr.wr.ud.ah = d->ah;
	wr.wr.ud.remote_qpn = d->qp[0]->qp_num;
	wr.wr.ud.remote_qkey = QKEY;
	verb(c, "ibv_post_send", "a UD QP in RTR (the send queue starts in RTS)",
	     hw_post_send(d->qp[1], &wr, &bad), model_can_post_send(IBV_QPS_RTR) ? 0 : -1);
	if ((d->srq = hw_create_srq(d->pd[0], &si)) && hw_query_srq(d->srq, &si.attr) == 0)
		for (uint32_t n = 0; n <= si.attr.max_wr && !rc; n++) {
			snprintf(what, sizeof(what), "an SRQ of max_wr %u holding %u receives",
				 si.attr.max_wr, n);
			rc = hw_post_srq_recv(d->srq, &rwr, &rbad);
			if (!walk_judge_verb(c, "ibv_post_srq_recv", what, rc,
					     model_post_srq_recv(n, si.attr.max_wr) ? -1 : 0))
				return false;
		}
	d->dqkey = 0x80000000u | (uint32_t)rng_range(&d->rng, 0, 0xffffff);
	if (!verb(c, "ibv_post_recv", "a UD QP in RTR", post_recv(d, 1, 2), 0))
		return false;
	expect(d, 2, MODEL_ST(IBV_WC_SUCCESS), false);
	if (model_ud_qkey(d->dqkey, QKEY) == QKEY) /* the receiver's: it must arrive */
		expect(d, 2, MODEL_ST(IBV_WC_SUCCESS), true);
	one(d, &wr, &sge, 2, IBV_WR_SEND, IBV_SEND_SIGNALED, false);
	return verb(c, "ibv_post_send", "a UD QP, with a privileged remote Q_Key", post_ud(d, &wr, 1), 0);
}

/* The next phase of the script: false when it is over. */
static bool next_phase(struct walk_client *c, struct walk_devprobe *d)
{
	d->nexp = d->seen = d->next[0] = d->next[1] = d->late = 0;
	d->event = EV_NONE;
	d->watch = false;
	d->t0 = clock_ns();
	switch (d->kind * 8 + d->phase++) {
	case CQ_FULL * 8:
	case UD_SQE * 8:
	case UNSIGNALED * 8:
		return chain(c, d, false);
	case UD_SQE * 8 + 1:
	case UNSIGNALED * 8 + 1:
		return chain(c, d, true);
	case NOTIFY * 8:
		return notify_pair(c, d, rng_bernoulli(&d->rng, 0.5), d->bad >= 0);
	case NOTIFY * 8 + 1:
		return d->bad < 0 && notify_pair(c, d, true, false);
	case UC * 8: /* a READ or atomic refused, then a SEND with no receive posted: dropped */
		uc_send(c, d, d->bad >= 0 ? IBV_WR_ATOMIC_FETCH_AND_ADD : IBV_WR_RDMA_READ, 0);
		return d->phase == 7 || uc_send(c, d, IBV_WR_SEND_WITH_IMM, 0);
	case UC * 8 + 1: /* a refused WRITE (dropped), then one that lands: all before it were taken */
		d->watch = true;
		return uc_send(c, d, IBV_WR_RDMA_WRITE, 1) && uc_send(c, d, IBV_WR_RDMA_WRITE, 0);
	case UC * 8 + 2:
		return uc_recv(c, d, IBV_WC_RECV_RDMA_WITH_IMM) &&
		       uc_send(c, d, IBV_WR_RDMA_WRITE_WITH_IMM, 0);
	case UC * 8 + 3:
		uc_check(c, d, true);
		return uc_recv(c, d, IBV_WC_RECV) && uc_send(c, d, IBV_WR_SEND_WITH_IMM, 0);
	case RC * 8:
		return rc_rule(c, d);
	case RULES * 8:
		return rules(c, d);
	default:
		return false;
	}
}

#define queue_of(d, wr_id) (((wr_id) - (d)->base) & RQ_BIT ? 1 : 0)

/* A completion against the next expected one of its queue. */
static bool match(struct walk_client *c, struct walk_devprobe *d, const struct ibv_wc *wc)
{
	int q = queue_of(d, wc->wr_id), i = d->next[q];
	char what[200];

	while (i < d->nexp && queue_of(d, d->exp[i].id) != q)
		i++;
	if (i >= d->nexp || d->exp[i].id != wc->wr_id) {
		fail(c,
		     "a completion (%s) with wr_id %llx came; expected %s %llx (a successful unsignaled WR "
		     "never completes, a failed one always; a queue completes in order, each WR once)",
		     ibv_wc_status_str(wc->status), (unsigned long long)wc->wr_id,
		     i < d->nexp ? "wr_id" : "none after",
		     (unsigned long long)d->exp[i < d->nexp ? i : i - 1].id);
		return false;
	}
	d->next[q] = i + 1;
	d->seen++;
	snprintf(what, sizeof(what), "%s, phase %d: the %s %llx", names[d->kind], d->phase,
		 q ? "receive" : "send", (unsigned long long)wc->wr_id);
	if (!walk_oracle(c,
			 &(struct walk_obs){
			     .kind = WALK_OBS_PREDICTED, .predicted = &d->exp[i].e, .wc = wc, .what = what}))
		return false;
	if (d->exp[i].imm && wc->status == IBV_WC_SUCCESS && be32toh(wc->imm_data) != d->exp[i].imm) {
		fail(c,
		     "receive %llx holds immediate data %x; expected %x (its message's: one the responder "
		     "had to drop must never land in a later receive)",
		     (unsigned long long)wc->wr_id, be32toh(wc->imm_data), d->exp[i].imm);
		return false;
	}
	return true;
}

/* Up to n completions through ibv_start_poll / ibv_next_poll, as ibv_poll_cq gives them; -1 on an error. */
static int poll_ex(struct ibv_cq_ex *x, int n, struct ibv_wc *wc)
{
	struct ibv_poll_cq_attr pa = {0};
	int i = 0, rc = ibv_start_poll(x, &pa);

	if (rc)
		return rc == ENOENT ? 0 : -1;
	while (rc == 0) {
		wc[i] = (struct ibv_wc){.wr_id = x->wr_id,
					.status = x->status,
					.opcode = ibv_wc_read_opcode(x),
					.byte_len = ibv_wc_read_byte_len(x),
					.imm_data = ibv_wc_read_imm_data(x),
					.qp_num = ibv_wc_read_qp_num(x),
					.src_qp = ibv_wc_read_src_qp(x),
					.wc_flags = ibv_wc_read_wc_flags(x)};
		rc = ++i < n ? ibv_next_poll(x) : ENOENT;
	}
	ibv_end_poll(x);
	return rc == ENOENT ? i : -1;
}

/* The phase's completions and event: true when it is over (*ok: as predicted), false while it waits. */
static bool phase_done(struct walk_client *c, struct walk_devprobe *d, bool *ok)
{
	struct ibv_wc wc[PROBE_EXP];
	struct ibv_cq *cq = NULL;
	void *ctx;
	uint64_t now = clock_ns();
	bool late = now - d->t0 > DEADLINE_NS && ++d->late > LATE_POLLS;
	int n = d->kind == CQ_FULL && now - d->t0 < SETTLE_NS ? 0
		: d->cqx				      ? poll_ex(d->cqx, PROBE_EXP, wc)
							      : hw_poll_cq(d->cq, PROBE_EXP, wc);

	if (d->hold && now - d->t0 >= RNR_HOLD_NS) {
		d->hold = false;
		if (!verb(c, "ibv_post_recv", "an RC QP whose peer's SEND waits on RNR", post_recv(d, 1, 0),
			  0))
			return *ok = false, true;
	}

	for (int i = 0; i < n && *ok; i++)
		*ok = match(c, d, &wc[i]);
	if (n < 0)
		fail(c, "ibv_poll_cq failed");
	if (!*ok || n < 0)
		return *ok = false, true;
	if (d->seen < d->nexp || n > 0) { /* one more poll after the last: an extra completion shows */
		if (late && d->seen < d->nexp)
			fail(c, "%d of %d completions arrived within %llu ms", d->seen, d->nexp,
			     DEADLINE_NS / 1000000);
		d->done_ns = now;
		return !(*ok = !late);
	}
	if (d->watch && memcmp(d->buf[0] + 48, d->buf[0], 8)) /* UC may lose it: then only the states count */
		return late ? (uc_check(c, d, false), d->phase = 7, true) : false;
	if (d->event == EV_MUST && event_ready(d)) {
		if (hw_get_cq_event(d->ch, &cq, &ctx) || cq != d->cq)
			fail(c, "ibv_get_cq_event gave CQ %p; expected %p", (void *)cq, (void *)d->cq);
		else
			hw_ack_cq_events(d->cq, 1);
		d->evented = true;
		return *ok = cq == d->cq, true;
	}
	late = now - d->done_ns > 5 * QUIET_NS && ++d->late > LATE_POLLS; /* from the completions: one due */
	if (d->event == EV_MUST && late)
		fail(c,
		     "no event within %llu ms of a completion the armed CQ (solicited_only %d) had to signal",
		     5 * QUIET_NS / 1000000, d->sol_only);
	if (d->event == EV_MUST)
		return !(*ok = !late);
	if (d->event == EV_NEVER && event_ready(d)) {
		fail(c,
		     "the CQ signaled (solicited_only %d, signaled before: %d); expected no event (an armed "
		     "CQ fires once until re-armed; solicited_only: for a solicited receive or an error)",
		     d->sol_only, d->evented);
		return *ok = false, true;
	}
	return d->event != EV_NEVER || now - d->done_ns > QUIET_NS;
}

static int create(struct walk_client *c, struct walk_devprobe *d)
{
	int k = d->kind, cqe = k == CQ_FULL ? (int)rng_range(&d->rng, 1, PROBE_WR) : PROBE_EXP, rc = 0;
	int rc_access = k == RC ? IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND : 0;
	struct ibv_qp_init_attr init = {
	    .qp_type = k == UC	 ? IBV_QPT_UC
		       : k == RC ? IBV_QPT_RC
				 : IBV_QPT_UD,
	    .sq_sig_all = k != UNSIGNALED,
	    .cap = {.max_send_wr = k == UNSIGNALED ? (uint32_t)rng_range(&d->rng, 2, 16) : PROBE_WR,
		    .max_recv_wr = (uint32_t)rng_range(&d->rng, 1, PROBE_WR),
		    .max_send_sge = 1,
		    .max_recv_sge = 1}};
	struct ibv_ah_attr ah;

	for (int i = 0; i < 2; i++)
		if (!(d->pd[i] = hw_alloc_pd(c->ctx)) ||
		    !(d->mr[i] =
			  hw_reg_mr(d->pd[i], d->buf[i], sizeof(d->buf[i]),
				    IBV_ACCESS_LOCAL_WRITE | (i ? 0 : IBV_ACCESS_REMOTE_WRITE | rc_access))))
			return -1;
	if (k == RC && !(d->mr[2] = hw_reg_mr(d->pd[0], d->buf[2], sizeof(d->buf[2]), 0)))
		return -1;
	if (k != NOTIFY && rng_bernoulli(&d->rng, 0.5) &&
	    (d->cqx = ibv_create_cq_ex(c->ctx, &(struct ibv_cq_init_attr_ex){
						   .cqe = (uint32_t)cqe, .wc_flags = IBV_WC_STANDARD_FLAGS})))
		d->cq = ibv_cq_ex_to_cq(d->cqx);
	if ((k == NOTIFY && !(d->ch = hw_create_comp_channel(c->ctx))) ||
	    (!d->cq && !(d->cq = hw_create_cq(c->ctx, cqe, NULL, d->ch, 0))) ||
	    (k == CQ_FULL && d->cq->cqe > PROBE_WR))
		return -1;
	init.send_cq = init.recv_cq = d->cq;
	if (k == CQ_FULL)
		init.cap.max_send_wr = (uint32_t)d->cq->cqe;
	for (int i = 0; i < (k >= NOTIFY ? 2 : 1); i++)
		if (!(d->qp[i] = hw_create_qp(d->pd[0], &init)))
			return -1;
	for (int i = 0; i < (k >= NOTIFY ? 2 : 1); i++)
		if (!verb(c, "ibv_modify_qp", "a new QP to RTS, with the attributes each transition requires",
			  walk_qp_to(c, d->qp[i], k == RULES && i ? IBV_QPS_RTR : IBV_QPS_RTS, QKEY,
				     IBV_ACCESS_REMOTE_WRITE | (rc_access & IBV_ACCESS_REMOTE_READ),
				     k == UC || k == RC ? c->id : -1, d->qp[!i] ? d->qp[!i]->qp_num : 0),
			  0))
			return -1;
	d->cap = init.cap;
	for (uint32_t i = 0; k < NOTIFY && i < d->cap.max_recv_wr && !rc; i++) /* never consumed: Q_Key */
		rc = post_recv(d, 0, i);
	if (rc)
		fail(c, "a receive queue took fewer receives than its max_recv_wr (%u): %s",
		     d->cap.max_recv_wr, strerror(rc));
	walk_fill_ah_attr(c, c->id, &ah);
	if (k == NOTIFY && (rc = hw_req_notify_cq(d->cq, d->sol_only)) == 0 && event_ready(d))
		fail(c, "an event on a CQ armed (solicited_only %d) with no completion in it", d->sol_only);
	return rc || (k != UC && k != RC && !(d->ah = hw_create_ah(d->pd[0], &ah))) ? -1 : 0;
}

static void devprobe_start(struct walk_client *c, struct walk_devprobe *d)
{
	d->kind = (int)(d->started++ % (c->faults ? 2 : KINDS)); /* in turn; faults' losses fail NOTIFY, UC */
	d->phase = 0;
	d->base = rng_next(&d->rng) << 8;
	d->bad = -(d->kind == CQ_FULL ||
		   (d->kind != UD_SQE && rng_bernoulli(&d->rng, d->kind == NOTIFY ? .75 : .5)));
	d->other_pd = rng_bernoulli(&d->rng, 0.5);
	d->sol_only = rng_bernoulli(&d->rng, 0.5);
	d->evented = d->hold = false;
	d->variant = (int)rng_range(&d->rng, 0, RC_VARIANTS - 1);
	d->dqkey = 0;
	d->on = true;
	memset(d->buf, 0, sizeof(d->buf));
	memset(d->buf[1], UC_PATTERN, sizeof(d->buf[1]));
	walk_fill_pattern(d->buf[0], 8, d->base);
	if (create(c, d) || !next_phase(c, d)) { /* a device may refuse a resource: not a finding */
		devprobe_free(d);
		return;
	}
	c->stats.devprobes[d->kind]++;
	LOG_STEP(c, "%s: qp=%u bad=%d other_pd=%d solicited_only=%d variant=%d", names[d->kind],
		 d->qp[0]->qp_num, d->bad, d->other_pd, d->sol_only, d->variant);
}

void walk_devprobe_step(struct walk_client *c)
{
	struct walk_devprobe *d = c->devprobe;
	bool ok = true;

	if (!c->cfg->verify || (!d && !(d = c->devprobe = calloc(1, sizeof(*d)))))
		return;
	if (!d->next_ns) {
		rng_seed(&d->rng, c->cfg->seed, 0xde7000u + (uint64_t)c->id);
		d->next_ns = clock_ns() + PERIOD_NS;
		d->next_step = c->seq + PERIOD_STEPS;
	}
	if (d->on) {
		if (phase_done(c, d, &ok) && (!ok || !next_phase(c, d)))
			devprobe_free(d);
	} else if (clock_ns() >= d->next_ns || (c->cfg->steps && c->seq >= d->next_step)) {
		d->next_step = c->seq + PERIOD_STEPS;
		devprobe_start(c, d);
	}
}

/* At the end: what is in flight is abandoned, unjudged. */
void walk_devprobe_end(struct walk_client *c)
{
	if (c->devprobe)
		devprobe_free(c->devprobe);
	free(c->devprobe);
	c->devprobe = NULL;
}
