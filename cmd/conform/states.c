/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Probe script (rcprobe.h): the QP state machine as a whole (IBTA 11.2.1,
 * ibv_modify_qp(3), the kernel's qp_state_table).  For an RC, UC or UD QP,
 * every (from, to) pair of its states, the whole table:
 *
 *  - a legal transition with the attributes it requires (and, at random,
 *    the optional ones it allows, IBV_QP_CUR_STATE included) succeeds;
 *    ibv_query_qp then reports the new state and the optional values set;
 *  - an illegal one (RESET -> RTR, RTR -> RTR, RTS -> INIT, ERR -> RTS,
 *    anything -> SQE...) fails, and the QP stays in its state;
 *  - a legal transition missing one attribute it requires, or given one
 *    value out of its range (a port or P_Key index the device does not have,
 *    a path MTU above the port's, a 3-bit or 5-bit field too large, a QPN over
 *    24 bits, more RDMA READ resources than the device has), fails
 *    and leaves the QP in its state.
 *
 *  - what posting does in the state a transition reached (IBTA 10.8.2,
 *    11.4.1): a receive is refused in RESET and taken in every other
 *    state (in ERR it flushes at once); a send is refused in RESET, INIT
 *    and RTR (or completed at once with an error), flushed in SQE and ERR
 *    (or refused), never executed.
 *
 * SQE is reached the one way it can be: a UD send that breaks a local
 * rule.  The helpers that bring a fresh QP of any type to any state serve
 * the other scripts too (rcprobe_serve.c).
 */
#include "cmd/conform/rcp.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define ST_NSTATE (IBV_QPS_ERR + 1)

static const char *const st_names[ST_NSTATE] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};

const char *rcp_state_name(enum ibv_qp_state s)
{
	return (unsigned)s < ST_NSTATE ? st_names[s] : "?";
}

static const char *type_name(enum ibv_qp_type t)
{
	return t == IBV_QPT_UD ? "UD" : t == IBV_QPT_UC ? "UC" : "RC";
}

struct ibv_qp *rcp_qp(struct rcp *p, enum ibv_qp_type t, struct ibv_cq *scq, struct ibv_cq *rcq)
{
	struct ibv_qp_init_attr init = {
	    .send_cq = scq,
	    .recv_cq = rcq,
	    .qp_type = t,
	    .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};

	return hw_create_qp(p->pd, &init);
}

/* Every attribute a transition into `to` may take, for qp (RC/UC peer: dest). */
static void fill_attr(struct rcp *p, struct ibv_qp *qp, struct ibv_qp *dest, struct ibv_qp_attr *a)
{
	struct ibv_qp_attr rts;
	int mask;

	rcp_rtr_attr(p, dest ? dest : qp, a, &mask);
	rcp_rts_attr(p, qp, 7, &rts, &mask);
	a->timeout = rts.timeout;
	a->retry_cnt = rts.retry_cnt;
	a->rnr_retry = rts.rnr_retry;
	a->sq_psn = rts.sq_psn;
	a->max_rd_atomic = rts.max_rd_atomic;
	a->port_num = (uint8_t)p->dev->port;
	a->pkey_index = 0;
	a->qkey = RCP_UD_QKEY;
	a->qp_access_flags = qp->qp_type == IBV_QPT_UC ? IBV_ACCESS_REMOTE_WRITE : RCP_REMOTE_RIGHTS;
}

/* The attributes a transition requires (IBTA 11.2.1, table of ib_modify_qp_is_ok); -1: not legal. */
static int required(enum ibv_qp_state from, enum ibv_qp_state to, enum ibv_qp_type t)
{
	bool ud = t == IBV_QPT_UD, rc = t == IBV_QPT_RC;

	if (to == IBV_QPS_RESET || to == IBV_QPS_ERR)
		return 0;
	switch (from) {
	case IBV_QPS_RESET:
		if (to != IBV_QPS_INIT)
			return -1;
		return IBV_QP_PKEY_INDEX | IBV_QP_PORT | (ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS);
	case IBV_QPS_INIT:
		if (to == IBV_QPS_INIT)
			return 0;
		if (to != IBV_QPS_RTR)
			return -1;
		return ud ? 0
			  : IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				(rc ? IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0);
	case IBV_QPS_RTR:
		if (to != IBV_QPS_RTS)
			return -1;
		return IBV_QP_SQ_PSN |
		       (rc ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC
			   : 0);
	case IBV_QPS_RTS:
	case IBV_QPS_SQD:
		return to == IBV_QPS_RTS || to == IBV_QPS_SQD ? 0 : -1;
	case IBV_QPS_SQE:
		return to == IBV_QPS_RTS && !rc ? 0 : -1;
	default:
		return -1;
	}
}

/* Optional attributes the checks can see in ibv_query_qp afterwards (a subset of what IBTA allows). */
static int optional(enum ibv_qp_state from, enum ibv_qp_state to, enum ibv_qp_type t)
{
	bool ud = t == IBV_QPT_UD, rc = t == IBV_QPT_RC;
	int flags = ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS;

	if (to == IBV_QPS_RESET || to == IBV_QPS_ERR || required(from, to, t) < 0)
		return 0;
	if (from == IBV_QPS_INIT)
		return to == IBV_QPS_INIT ? flags | IBV_QP_PKEY_INDEX | IBV_QP_PORT : flags;
	if (to == IBV_QPS_RTS) /* from RTR, RTS, SQD, SQE */
		return IBV_QP_CUR_STATE | flags | (rc && from != IBV_QPS_SQE ? IBV_QP_MIN_RNR_TIMER : 0);
	if (from == IBV_QPS_SQD && to == IBV_QPS_SQD)
		return flags |
		       (rc ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MIN_RNR_TIMER |
				 IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC
			   : 0);
	return 0;
}

/* A UD send that reads past its MR's end: LOC_PROT_ERR, and the QP goes to SQE (IBTA 10.8.3.2). */
static int ud_to_sqe(struct rcp *p, struct ibv_qp *qp)
{
	struct ibv_sge sge = {(uintptr_t)(p->buf + RCP_BYTES - 8), 64, p->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = p->base_id + 0xe0,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	struct ibv_ah *ah = rcp_self_ah(p);
	struct ibv_wc wc;
	int rc = -1;

	if (!ah)
		return -1;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qp->qp_num;
	wr.wr.ud.remote_qkey = RCP_UD_QKEY;
	if (hw_post_send(qp, &wr, &bad) == 0 && rcp_poll1(p, qp->send_cq, &wc)) {
		if (wc.wr_id != wr.wr_id || wc.status != IBV_WC_LOC_PROT_ERR)
			rcp_fail(p,
				 "a UD send of 64 bytes from 8 before its MR's end completed with %s (wr_id "
				 "%llx); expected LOC_PROT_ERR",
				 ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id);
		else
			rc = 0;
	}
	hw_destroy_ah(ah);
	if (!rc)
		rcp_expect_state(p, qp, "a UD QP after a send failed on a local error", IBV_QPS_SQE);
	return rc || rcp_failed(p) ? -1 : 0;
}

int rcp_bring(struct rcp *p, struct ibv_qp *qp, struct ibv_qp *dest, enum ibv_qp_state st)
{
	static const enum ibv_qp_state path[] = {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS};
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RESET};

	if (hw_modify_qp(qp, &a, IBV_QP_STATE))
		return -1;
	if (st == IBV_QPS_RESET)
		return 0;
	if (st == IBV_QPS_ERR)
		return rcp_to_err(qp);
	for (int i = 0; i < 3; i++) {
		enum ibv_qp_state from = i ? path[i - 1] : IBV_QPS_RESET;

		fill_attr(p, qp, dest, &a);
		a.qp_state = path[i];
		if (hw_modify_qp(qp, &a, IBV_QP_STATE | required(from, path[i], qp->qp_type)))
			return -1;
		if (st == path[i])
			return 0;
	}
	if (st == IBV_QPS_SQD) {
		a = (struct ibv_qp_attr){.qp_state = IBV_QPS_SQD};
		return hw_modify_qp(qp, &a, IBV_QP_STATE);
	}
	if (st == IBV_QPS_SQE && qp->qp_type == IBV_QPT_UD)
		return ud_to_sqe(p, qp);
	return st == IBV_QPS_RTS ? 0 : -1;
}

int rcp_reconnect_a_at(struct rcp *p, uint32_t psn)
{
	p->psn_a = psn & 0xffffff;
	if (!rcp_bring(p, p->a, p->b, IBV_QPS_RTS))
		return 0;
	if (!rcp_failed(p))
		rcp_fail(p, "%s A could not be reconnected (RESET -> RTS) with send PSN %u",
			 p->a->qp_type == IBV_QPT_UC ? "UC" : "RC", p->psn_a);
	return -1;
}

/* New values for the optional attributes of mask, so that ibv_query_qp can show they were taken. */
static void vary(struct rcp *p, struct ibv_qp *qp, struct ibv_qp_attr *a, int mask, enum ibv_qp_state from)
{
	int rights = qp->qp_type == IBV_QPT_UC ? IBV_ACCESS_REMOTE_WRITE : RCP_REMOTE_RIGHTS;

	a->cur_qp_state = from;
	if (mask & IBV_QP_QKEY)
		a->qkey = RCP_UD_QKEY + (uint32_t)rng_range(p->rng, 1, 255);
	if (mask & IBV_QP_ACCESS_FLAGS)
		a->qp_access_flags = (unsigned)(rng_next(p->rng) & (uint64_t)rights);
	if (mask & IBV_QP_MIN_RNR_TIMER)
		a->min_rnr_timer = (uint8_t)rng_range(p->rng, 1, 12);
	if (mask & IBV_QP_TIMEOUT)
		a->timeout = (uint8_t)rng_range(p->rng, 10, 20);
	if (mask & IBV_QP_RETRY_CNT)
		a->retry_cnt = (uint8_t)rng_range(p->rng, 0, 7);
	if (mask & IBV_QP_RNR_RETRY)
		a->rnr_retry = (uint8_t)rng_range(p->rng, 0, 7);
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		a->max_rd_atomic = (uint8_t)rng_range(
		    p->rng, 1,
		    (uint64_t)(p->dev->dattr.max_qp_init_rd_atom > 1 ? p->dev->dattr.max_qp_init_rd_atom : 1));
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		a->max_dest_rd_atomic = (uint8_t)rng_range(
		    p->rng, 1, (uint64_t)(p->dev->dattr.max_qp_rd_atom > 1 ? p->dev->dattr.max_qp_rd_atom : 1));
}

/* ibv_query_qp shows the optional values a legal transition took; NULL: it does. */
static const char *taken(struct ibv_qp *qp, const struct ibv_qp_attr *a, int mask)
{
	struct ibv_qp_attr got;
	struct ibv_qp_init_attr init;

	if (hw_query_qp(qp, &got, mask | IBV_QP_STATE, &init))
		return "ibv_query_qp failed";
	if ((mask & IBV_QP_QKEY) && got.qkey != a->qkey)
		return "qkey";
	if ((mask & IBV_QP_ACCESS_FLAGS) && got.qp_access_flags != a->qp_access_flags)
		return "qp_access_flags";
	if ((mask & IBV_QP_MIN_RNR_TIMER) && got.min_rnr_timer != a->min_rnr_timer)
		return "min_rnr_timer";
	if ((mask & IBV_QP_TIMEOUT) && got.timeout != a->timeout)
		return "timeout";
	if ((mask & IBV_QP_RETRY_CNT) && got.retry_cnt != a->retry_cnt)
		return "retry_cnt";
	if ((mask & IBV_QP_RNR_RETRY) && got.rnr_retry != a->rnr_retry)
		return "rnr_retry";
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && got.max_rd_atomic != a->max_rd_atomic)
		return "max_rd_atomic";
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && got.max_dest_rd_atomic != a->max_dest_rd_atomic)
		return "max_dest_rd_atomic";
	return NULL;
}

static enum ibv_qp_state state_of(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr init;

	return hw_query_qp(qp, &a, IBV_QP_STATE, &init) ? (enum ibv_qp_state) - 1 : a.qp_state;
}

/* The attributes one would give to enter `to` by its usual way in: an illegal move is refused for its states.
 */
static int usual(enum ibv_qp_state to, enum ibv_qp_type t)
{
	return to == IBV_QPS_INIT  ? required(IBV_QPS_RESET, to, t)
	       : to == IBV_QPS_RTR ? required(IBV_QPS_INIT, to, t)
	       : to == IBV_QPS_RTS ? required(IBV_QPS_RTR, to, t)
				   : 0;
}

/* Puts one attribute of `mask` out of its range; its name, or NULL when none of mask has a range to leave. */
static const char *out_of_range(struct rcp *p, struct ibv_qp_attr *a, int mask)
{
	const struct ibv_device_attr *d = &p->dev->dattr;
	const char *what[8];
	int bits[8], n = 0, k;

#define OOR(b, name)                                                                                         \
	do {                                                                                                 \
		if (mask & (b)) {                                                                            \
			bits[n] = (b);                                                                       \
			what[n++] = (name);                                                                  \
		}                                                                                            \
	} while (0)
	OOR(IBV_QP_PORT, "port_num = phys_port_cnt + 1");
	if (d->max_pkeys > 0 && d->max_pkeys < 0xffff)
		OOR(IBV_QP_PKEY_INDEX, "pkey_index = max_pkeys");
	if (p->dev->pattr.max_mtu < IBV_MTU_4096)
		OOR(IBV_QP_PATH_MTU, "path_mtu above the port's max_mtu");
	OOR(IBV_QP_MIN_RNR_TIMER, "min_rnr_timer = 32 (a 5-bit field)");
	OOR(IBV_QP_RETRY_CNT, "retry_cnt = 8 (a 3-bit field)");
	OOR(IBV_QP_RNR_RETRY, "rnr_retry = 8 (a 3-bit field)");
	OOR(IBV_QP_DEST_QPN, "dest_qp_num = 2^24");
	if (d->max_qp_init_rd_atom > 0 && d->max_qp_init_rd_atom < 255)
		OOR(IBV_QP_MAX_QP_RD_ATOMIC, "max_rd_atomic = max_qp_init_rd_atom + 1");
#undef OOR
	if (!n)
		return NULL;
	k = (int)rng_range(p->rng, 0, (uint64_t)n - 1);
	switch (bits[k]) {
	case IBV_QP_PORT:
		a->port_num = (uint8_t)(d->phys_port_cnt + 1);
		break;
	case IBV_QP_PKEY_INDEX:
		a->pkey_index = (uint16_t)d->max_pkeys;
		break;
	case IBV_QP_PATH_MTU:
		a->path_mtu = (enum ibv_mtu)(p->dev->pattr.max_mtu + 1);
		break;
	case IBV_QP_MIN_RNR_TIMER:
		a->min_rnr_timer = 32;
		break;
	case IBV_QP_RETRY_CNT:
		a->retry_cnt = 8;
		break;
	case IBV_QP_RNR_RETRY:
		a->rnr_retry = 8;
		break;
	case IBV_QP_DEST_QPN:
		a->dest_qp_num = 1u << 24;
		break;
	default:
		a->max_rd_atomic = (uint8_t)(d->max_qp_init_rd_atom + 1);
	}
	return what[k];
}

/* One malformed modify_qp (why says how): it must fail and leave the QP in `from`. */
static void refuse_one(struct rcp *p, struct ibv_qp *qp, enum ibv_qp_state from, enum ibv_qp_state to,
		       struct ibv_qp_attr *a, int mask, const char *why)
{
	int rc = hw_modify_qp(qp, a, mask);
	enum ibv_qp_state now = state_of(qp);

	if (!rc)
		rcp_fail(p, "%s QP %u: modify_qp %s -> %s %s succeeded", type_name(qp->qp_type), qp->qp_num,
			 rcp_state_name(from), rcp_state_name(to), why);
	else if (now != from)
		rcp_fail(p, "%s QP %u: a refused modify_qp %s -> %s (%s) left it in %s",
			 type_name(qp->qp_type), qp->qp_num, rcp_state_name(from), rcp_state_name(to), why,
			 rcp_state_name(now));
}

/*
 * A legal transition given too little or a value out of range must fail and
 * change nothing.  Every required attribute is left out in turn (one drawn at
 * random let a device that took one of five as optional through in most runs),
 * then one value is put out of its range.
 */
static void refuse_malformed(struct rcp *p, struct ibv_qp *qp, enum ibv_qp_state from, enum ibv_qp_state to,
			     int req)
{
	struct ibv_qp_attr a;
	const char *why;
	char buf[64];

	fill_attr(p, qp, p->a, &a);
	a.qp_state = to;
	for (int rest = req; rest && !rcp_failed(p); rest &= rest - 1) {
		int bit = rest & -rest;

		snprintf(buf, sizeof(buf), "without the required attribute %#x", bit);
		refuse_one(p, qp, from, to, &a, (IBV_QP_STATE | req) & ~bit, buf);
	}
	if (!rcp_failed(p) && (why = out_of_range(p, &a, req)))
		refuse_one(p, qp, from, to, &a, IBV_QP_STATE | req, why);
}

/* Takes the one completion a post in `st` must give (a flush): 0 when it is one. */
static int flushed(struct rcp *p, struct ibv_qp *qp, enum ibv_qp_state st, uint64_t wr_id, const char *what)
{
	struct ibv_wc wc;

	if (!rcp_poll1(p, qp->send_cq, &wc))
		return -1;
	if (wc.wr_id != wr_id || wc.status == IBV_WC_SUCCESS || wc.qp_num != qp->qp_num ||
	    (st != IBV_QPS_RTR && wc.status != IBV_WC_WR_FLUSH_ERR)) {
		rcp_fail(
		    p, "%s QP %u in %s: %s completed with %s (wr_id %llx, qp_num %u); expected WR_FLUSH_ERR",
		    type_name(qp->qp_type), qp->qp_num, rcp_state_name(st), what,
		    ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id, wc.qp_num);
		return -1;
	}
	return 0;
}

/* A receive and a send posted to qp in st (the state it was just moved to). */
static void post_in_state(struct rcp *p, struct ibv_qp *qp, enum ibv_qp_state st, struct ibv_ah *ah)
{
	struct ibv_sge sge = {(uintptr_t)(p->buf + RCP_RDST), 64, p->mr->lkey};
	struct ibv_recv_wr rw = {.wr_id = p->base_id + 0xd0, .sg_list = &sge, .num_sge = 1}, *rbad;
	struct ibv_send_wr wr = {.wr_id = p->base_id + 0xd1,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	bool sendable = st == IBV_QPS_RTS || st == IBV_QPS_SQD;
	int rc;

	rc = hw_post_recv(qp, &rw, &rbad);
	if (st == IBV_QPS_RESET && !rc) {
		rcp_fail(p, "%s QP %u in RESET took a receive", type_name(qp->qp_type), qp->qp_num);
		return;
	}
	if (st != IBV_QPS_RESET && rc) {
		rcp_fail(p, "%s QP %u in %s refused a receive: %s", type_name(qp->qp_type), qp->qp_num,
			 rcp_state_name(st), strerror(rc));
		return;
	}
	if (st == IBV_QPS_ERR) {
		struct ibv_wc wc;

		if (rcp_poll1(p, qp->recv_cq, &wc) &&
		    (wc.wr_id != rw.wr_id || wc.status != IBV_WC_WR_FLUSH_ERR || wc.qp_num != qp->qp_num))
			rcp_fail(
			    p,
			    "%s QP %u in ERR: a receive posted completed with %s (wr_id %llx, qp_num %u); "
			    "expected WR_FLUSH_ERR",
			    type_name(qp->qp_type), qp->qp_num, ibv_wc_status_str(wc.status),
			    (unsigned long long)wc.wr_id, wc.qp_num);
		if (rcp_failed(p))
			return;
	}
	if (sendable) /* a send there would execute (RTS) or wait (SQD): other scripts judge those */
		return;
	if (qp->qp_type == IBV_QPT_UD) {
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = qp->qp_num;
		wr.wr.ud.remote_qkey = RCP_UD_QKEY;
	}
	rc = hw_post_send(qp, &wr, &bad);
	if (!rc && (st == IBV_QPS_RESET || st == IBV_QPS_INIT)) {
		rcp_fail(p, "%s QP %u in %s took a send", type_name(qp->qp_type), qp->qp_num,
			 rcp_state_name(st));
		return;
	}
	if (!rc)
		flushed(p, qp, st, wr.wr_id, "a send posted there");
}

static void one_pair(struct rcp *p, struct ibv_qp *qp, enum ibv_qp_state from, enum ibv_qp_state to,
		     struct ibv_ah *ah)
{
	enum ibv_qp_type t = qp->qp_type;
	int req = required(from, to, t), mask, rc;
	struct ibv_qp_attr a;
	enum ibv_qp_state now;
	const char *bad;

	if (rcp_bring(p, qp, p->a, from)) {
		if (!rcp_failed(p))
			rcp_fail(p, "%s QP %u could not be brought to %s along the legal path", type_name(t),
				 qp->qp_num, rcp_state_name(from));
		return;
	}
	fill_attr(p, qp, p->a, &a);
	a.qp_state = to;
	if (req < 0) {
		mask = IBV_QP_STATE | usual(to, t);
		rc = hw_modify_qp(qp, &a, mask);
		now = state_of(qp);
		if (!rc)
			rcp_fail(
			    p, "%s QP %u: modify_qp %s -> %s (mask %#x) succeeded; the transition is illegal",
			    type_name(t), qp->qp_num, rcp_state_name(from), rcp_state_name(to), mask);
		else if (now != from)
			rcp_fail(p, "%s QP %u: a refused modify_qp %s -> %s (%s) left it in %s; expected %s",
				 type_name(t), qp->qp_num, rcp_state_name(from), rcp_state_name(to),
				 strerror(rc), rcp_state_name(now), rcp_state_name(from));
		return;
	}
	if (req) {
		refuse_malformed(p, qp, from, to, req);
		if (rcp_failed(p))
			return;
	}
	mask = IBV_QP_STATE | req | (int)(rng_next(p->rng) & (uint64_t)optional(from, to, t));
	vary(p, qp, &a, mask & ~req, from);
	if ((rc = hw_modify_qp(qp, &a, mask))) {
		rcp_fail(p, "%s QP %u: modify_qp %s -> %s (mask %#x) failed: %s; the transition is legal",
			 type_name(t), qp->qp_num, rcp_state_name(from), rcp_state_name(to), mask,
			 strerror(rc));
		return;
	}
	if ((now = state_of(qp)) != to)
		rcp_fail(p, "%s QP %u: after modify_qp %s -> %s succeeded, ibv_query_qp reports %s",
			 type_name(t), qp->qp_num, rcp_state_name(from), rcp_state_name(to),
			 rcp_state_name(now));
	else if ((bad = taken(qp, &a, mask & ~req & ~IBV_QP_CUR_STATE & ~IBV_QP_PORT & ~IBV_QP_PKEY_INDEX)))
		rcp_fail(p,
			 "%s QP %u: after modify_qp %s -> %s with optional mask %#x, ibv_query_qp reports "
			 "another %s than was set",
			 type_name(t), qp->qp_num, rcp_state_name(from), rcp_state_name(to), mask & ~req,
			 bad);
	else if (rng_bernoulli(p->rng, 0.5))
		post_in_state(p, qp, to, ah);
}

void rcp_case_transitions(struct rcp *p)
{
	static const enum ibv_qp_type types[] = {IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD};
	enum ibv_qp_type t = types[rng_range(p->rng, 0, 2)];
	struct ibv_qp *qp;
	struct ibv_ah *ah = NULL;

	p->name = t == IBV_QPT_UD   ? "states: the UD QP state machine"
		  : t == IBV_QPT_UC ? "states: the UC QP state machine"
				    : "states: the RC QP state machine";
	p->shape = (struct rcp_shape){
	    .scqe = RCP_CQE, .a_send_wr = 1, .a_recv_wr = 1, .b_recv_wr = 1, .a_rnr_retry = 7};
	if (rcp_setup(p))
		return;
	if (!(qp = rcp_qp(p, t, p->ocq, p->ocq)))
		return;
	if (t == IBV_QPT_UD && !(ah = rcp_self_ah(p))) {
		hw_destroy_qp(qp);
		return;
	}
	/* The whole table, every state to every state (SQE only where a send error leads: UD). */
	for (int i = 0; i < ST_NSTATE * ST_NSTATE && !rcp_failed(p); i++) {
		enum ibv_qp_state from = (enum ibv_qp_state)(i / ST_NSTATE),
				  to = (enum ibv_qp_state)(i % ST_NSTATE);

		if (from != IBV_QPS_SQE || t == IBV_QPT_UD)
			one_pair(p, qp, from, to, ah);
	}
	hw_destroy_qp(qp);
	if (ah)
		hw_destroy_ah(ah);
}
