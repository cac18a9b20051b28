/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * --verify RC probes (rcprobe.h): the pair's objects, its connection and
 * its attributes as ibv_query_qp reports them, the waits for completions
 * and the comparisons against the model.  The probe runs to its end before
 * the walk takes its next step: it is short (microseconds on a working
 * device), and every wait has a deadline.
 */
#include "cmd/conform/rcp.h"

#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define RCP_INLINE 128

#define RCP_SPIN	  256 /* empty polls before a wait yields */
#define RCP_TIMEOUT	  14
#define RCP_RETRY_CNT	  7
#define RCP_MIN_RNR_TIMER 1 /* 10 us: an RNR retry loop is quick */
#define RCP_QP_ACCESS	  (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
#define RCP_MR_ACCESS	  (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND | RCP_QP_ACCESS)

void rcp_fail(struct rcp *p, const char *fmt, ...)
{
	char what[CF_FAILURE_LEN - 80], line[CF_FAILURE_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (!p->a) /* a script without the pair */
		snprintf(line, sizeof(line), "\"%s\": %s", p->name, what);
	else
		snprintf(line, sizeof(line), "\"%s\", QP %u (A) -> QP %u (B): %s", p->name, p->a->qp_num,
			 p->b ? p->b->qp_num : 0, what);
	cf_dev_fail(p->dev, line);
}

bool rcp_failed(const struct rcp *p)
{
	return p->dev->nfailures != p->failures_at_start;
}

void rcp_wait_ns(uint64_t ns)
{
	struct timespec ts = {0, (long)ns};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

bool rcp_late(uint64_t end, unsigned *late)
{
	return clock_ns() > end && ++*late > RCP_LATE_POLLS;
}

/* Spins a while before yielding: under load a yield gives the CPU away for a whole time slice. */
void rcp_idle(unsigned *idle)
{
	if (++*idle > RCP_SPIN)
		sched_yield();
}

static int access_of(const struct ibv_qp *qp)
{
	return qp->qp_type == IBV_QPT_UC ? IBV_ACCESS_REMOTE_WRITE : RCP_QP_ACCESS;
}

int rcp_to_init(struct rcp *p, struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
	    .qp_state = IBV_QPS_INIT, .port_num = (uint8_t)p->dev->port, .qp_access_flags = access_of(qp)};

	return hw_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

static uint32_t psn_of(const struct rcp *p, const struct ibv_qp *qp)
{
	return qp == p->a ? p->psn_a : p->psn_b;
}

void rcp_legal_path(struct rcp *p, struct ibv_ah_attr *ah)
{
	ah->grh.hop_limit = 64;
	if (!rng_bernoulli(p->rng, 0.3))
		return;
	/* DSCP only: the ECN bits are the network's.  Hop limits stay high enough to cross routers. */
	ah->sl = (uint8_t)rng_range(p->rng, 0, 15);
	ah->grh.traffic_class = (uint8_t)(rng_range(p->rng, 0, 63) << 2);
	ah->grh.flow_label = (uint32_t)rng_range(p->rng, 0, 0xfffff);
	ah->grh.hop_limit = (uint8_t)rng_range(p->rng, 64, 255);
}

void rcp_rtr_attr(struct rcp *p, struct ibv_qp *dest, struct ibv_qp_attr *a, int *mask)
{
	*a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTR,
				  .path_mtu = p->path_mtu ? p->path_mtu : p->dev->pattr.active_mtu,
				  .dest_qp_num = dest->qp_num,
				  .rq_psn = psn_of(p, dest),
				  .max_dest_rd_atomic = 1,
				  .min_rnr_timer = RCP_MIN_RNR_TIMER};
	a->ah_attr.dlid = p->dev->pattr.lid;
	a->ah_attr.port_num = (uint8_t)p->dev->port;
	a->ah_attr.is_global = 1;
	a->ah_attr.grh.dgid = p->dev->gid;
	a->ah_attr.grh.sgid_index = (uint8_t)p->dev->gid_index;
	a->ah_attr.grh.hop_limit = 64;
	if (p->path.grh.hop_limit) { /* the pair's own, drawn by rcp_setup */
		a->ah_attr.sl = p->path.sl;
		a->ah_attr.grh.traffic_class = p->path.grh.traffic_class;
		a->ah_attr.grh.flow_label = p->path.grh.flow_label;
		a->ah_attr.grh.hop_limit = p->path.grh.hop_limit;
	}
	*mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	if (dest->qp_type == IBV_QPT_RC)
		*mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
}

void rcp_rts_attr(struct rcp *p, struct ibv_qp *qp, uint8_t rnr_retry, struct ibv_qp_attr *a, int *mask)
{
	*a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTS,
				  .timeout = RCP_TIMEOUT,
				  .retry_cnt = RCP_RETRY_CNT,
				  .rnr_retry = rnr_retry,
				  .sq_psn = psn_of(p, qp),
				  .max_rd_atomic = 1};
	if (qp == p->a && p->shape.timeout) {
		a->timeout = p->shape.timeout;
		a->retry_cnt = p->shape.retry_cnt;
	}
	if (qp == p->a && p->shape.timeout0)
		a->timeout = 0;
	*mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (qp->qp_type == IBV_QPT_RC)
		*mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
}

/* Transitions the QP state machine forbids must be refused; 0: all were. */
static int check_forbidden_transitions(struct rcp *p, struct ibv_qp *qp, struct ibv_qp *dest)
{
	struct ibv_qp_attr rtr, rts;
	int rtr_mask, rts_mask;
	struct ibv_send_wr wr = {.opcode = IBV_WR_SEND}, *bad;
	const char *bad_what = NULL;

	rcp_rtr_attr(p, dest, &rtr, &rtr_mask);
	rcp_rts_attr(p, qp, 7, &rts, &rts_mask);
	struct ibv_sge sge = {(uintptr_t)p->buf, 8, p->mr->lkey};
	struct ibv_recv_wr rwr = {.sg_list = &sge, .num_sge = 1}, *rbad;

	if (!hw_post_recv(qp, &rwr, &rbad))
		bad_what = "a receive posted in RESET";
	else if (!hw_post_send(qp, &wr, &bad))
		bad_what = "a send posted in RESET";
	else if (!hw_modify_qp(qp, &rtr, rtr_mask))
		bad_what = "RESET -> RTR";
	else if (!hw_modify_qp(qp, &rts, rts_mask))
		bad_what = "RESET -> RTS";
	else if (rcp_to_init(p, qp))
		return -1;
	else if (!hw_modify_qp(qp, &rts, rts_mask))
		bad_what = "INIT -> RTS";
	else if (!hw_modify_qp(qp, &rtr, rtr_mask & ~IBV_QP_DEST_QPN))
		bad_what = "INIT -> RTR without IBV_QP_DEST_QPN";
	else if (!hw_post_send(qp, &wr, &bad))
		bad_what = "a send posted in INIT";
	if (bad_what)
		rcp_fail(p, "%s was accepted; the QP state machine forbids it", bad_what);
	return bad_what ? -1 : 0;
}

/*
 * RTR has no send queue yet: a send WR posted there must be refused
 * (ibv_post_send(3), IBTA 10.8.2); a device that takes it must at least
 * complete it with an error at once and never execute it.  0: it did.
 */
static int check_send_in_rtr(struct rcp *p, struct ibv_qp *qp)
{
	struct ibv_send_wr wr = {.wr_id = p->base_id + 0x9f,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	struct ibv_wc wc;

	if (hw_post_send(qp, &wr, &bad))
		return 0;
	if (!rcp_poll1(p, qp->send_cq, &wc))
		rcp_fail(p, "a send posted to QP %u in RTR was accepted and neither completed nor refused",
			 qp->qp_num);
	else if (wc.status == IBV_WC_SUCCESS)
		rcp_fail(p, "a send posted to QP %u in RTR was accepted and completed with SUCCESS",
			 qp->qp_num);
	else
		return 0;
	return -1;
}

static int connect_one(struct rcp *p, struct ibv_qp *qp, struct ibv_qp *dest, uint8_t rnr_retry)
{
	struct ibv_qp_attr a;
	bool check = rng_bernoulli(p->rng, 0.2);
	int mask, rc;

	if (check)
		rc = check_forbidden_transitions(p, qp, dest);
	else
		rc = rcp_to_init(p, qp);
	if (rc)
		return rc;
	/* Every attribute below is legal (IB ranges, the port's MTU): a refusal is the device's fault. */
	rcp_rtr_attr(p, dest, &a, &mask);
	if ((rc = hw_modify_qp(qp, &a, mask))) {
		rcp_fail(p,
			 "modify_qp of QP %u INIT->RTR with legal attributes (path_mtu %d, min_rnr_timer %u) "
			 "refused: %s",
			 qp->qp_num, a.path_mtu, a.min_rnr_timer, strerror(rc));
		return rc;
	}
	if (check && check_send_in_rtr(p, qp))
		return -1;
	rcp_rts_attr(p, qp, rnr_retry, &a, &mask);
	if ((rc = hw_modify_qp(qp, &a, mask)))
		rcp_fail(
		    p,
		    "modify_qp of QP %u RTR->RTS with legal attributes (timeout %u, retry_cnt %u, rnr_retry "
		    "%u, max_rd_atomic %u) refused: %s",
		    qp->qp_num, a.timeout, a.retry_cnt, a.rnr_retry, a.max_rd_atomic, strerror(rc));
	return rc;
}

/* RESET, then RESET -> INIT -> RTR -> RTS again with new PSNs; 0: both QPs back in RTS. */
int rcp_reconnect(struct rcp *p)
{
	struct ibv_qp_attr r = {.qp_state = IBV_QPS_RESET};

	if (hw_modify_qp(p->a, &r, IBV_QP_STATE) || hw_modify_qp(p->b, &r, IBV_QP_STATE))
		return -1;
	p->psn_a = (uint32_t)rng_next(p->rng) & 0xffffff;
	p->psn_b = (uint32_t)rng_next(p->rng) & 0xffffff;
	return connect_one(p, p->a, p->b, p->shape.a_rnr_retry) || connect_one(p, p->b, p->a, 7) ? -1 : 0;
}

/* ibv_query_qp must report what was set, and the capacities ibv_create_qp reported. */
static void check_query(struct rcp *p, struct ibv_qp *qp, struct ibv_qp *dest, const struct ibv_qp_cap *cap,
			uint8_t rnr_retry, const char *who)
{
	struct ibv_qp_attr got, rtr, rts;
	struct ibv_qp_init_attr init;
	const char *bad = NULL;
	bool rc = qp->qp_type == IBV_QPT_RC;
	int mask;

	if (hw_query_qp(qp, &got,
			IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PORT | IBV_QP_AV |
			    IBV_QP_PATH_MTU | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			    IBV_QP_MIN_RNR_TIMER | IBV_QP_DEST_QPN | IBV_QP_MAX_QP_RD_ATOMIC |
			    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_CAP | IBV_QP_SQ_PSN | IBV_QP_RQ_PSN,
			&init)) {
		rcp_fail(p, "ibv_query_qp of %s failed", who);
		return;
	}
	rcp_rtr_attr(p, dest, &rtr, &mask);
	rcp_rts_attr(p, qp, rnr_retry, &rts, &mask);
	if (got.qp_state != IBV_QPS_RTS)
		bad = "qp_state";
	else if (got.qp_access_flags != (unsigned)access_of(qp))
		bad = "qp_access_flags";
	else if (got.port_num != (uint8_t)p->dev->port)
		bad = "port_num";
	else if (got.path_mtu != rtr.path_mtu)
		bad = "path_mtu";
	else if (got.dest_qp_num != rtr.dest_qp_num)
		bad = "dest_qp_num";
	else if (rc && got.min_rnr_timer != rtr.min_rnr_timer)
		bad = "min_rnr_timer";
	else if (rc && got.max_dest_rd_atomic != rtr.max_dest_rd_atomic)
		bad = "max_dest_rd_atomic";
	else if (rc && got.timeout != rts.timeout)
		bad = "timeout";
	else if (rc && got.retry_cnt != rts.retry_cnt)
		bad = "retry_cnt";
	else if (rc && got.rnr_retry != rts.rnr_retry)
		bad = "rnr_retry";
	else if (rc && got.max_rd_atomic != rts.max_rd_atomic)
		bad = "max_rd_atomic";
	else if (got.sq_psn != rts.sq_psn) /* nothing was sent yet */
		bad = "sq_psn";
	else if (got.rq_psn != rtr.rq_psn)
		bad = "rq_psn";
	else if (memcmp(&got.ah_attr.grh.dgid, &rtr.ah_attr.grh.dgid, sizeof(union ibv_gid)))
		bad = "ah_attr.grh.dgid";
	else if (got.ah_attr.sl != rtr.ah_attr.sl || got.ah_attr.grh.traffic_class != rtr.ah_attr.grh.traffic_class ||
		 got.ah_attr.grh.flow_label != rtr.ah_attr.grh.flow_label ||
		 got.ah_attr.grh.hop_limit != rtr.ah_attr.grh.hop_limit)
		bad = "ah_attr (sl, traffic_class, flow_label or hop_limit)";
	else if (init.cap.max_send_wr != cap->max_send_wr || init.cap.max_recv_wr != cap->max_recv_wr ||
		 init.cap.max_send_sge != cap->max_send_sge || init.cap.max_recv_sge != cap->max_recv_sge ||
		 init.cap.max_inline_data != cap->max_inline_data)
		bad = "init_attr.cap (not what ibv_create_qp reported)";
	else if (init.send_cq != qp->send_cq || init.recv_cq != qp->recv_cq || init.qp_type != qp->qp_type ||
		 !init.sq_sig_all != !(qp == p->a && p->shape.sig_all))
		bad = "init_attr (CQs, type or sq_sig_all)";
	if (bad)
		rcp_fail(p, "ibv_query_qp of %s after RESET->INIT->RTR->RTS reports another %s than was set",
			 who, bad);
}

/* ext: by ibv_create_qp_ex, with the ibv_wr_* operations the probes use. */
static struct ibv_qp *create_qp_of(struct rcp *p, struct ibv_qp_init_attr *init, bool ext)
{
	struct ibv_qp_init_attr_ex x = {
	    .send_cq = init->send_cq,
	    .recv_cq = init->recv_cq,
	    .cap = init->cap,
	    .qp_type = init->qp_type,
	    .sq_sig_all = init->sq_sig_all,
	    .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
	    .pd = p->pd,
	    .send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
			      IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
			      IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_RDMA_READ};
	struct ibv_qp *qp;

	if (!ext)
		return hw_create_qp(p->pd, init);
	if (p->shape.ext_inv)
		x.send_ops_flags |= IBV_QP_EX_WITH_SEND_WITH_INV;
	if (p->shape.ext_aw)
		x.send_ops_flags |= IBV_QP_EX_WITH_ATOMIC_WRITE;
	if (p->shape.ext_local_inv)
		x.send_ops_flags |= IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW;
	if ((qp = ibv_create_qp_ex(p->dev->ctx, &x)))
		init->cap = x.cap;
	return qp;
}

static struct ibv_qp *create_rc(struct rcp *p, struct ibv_cq *scq, struct ibv_cq *rcq, uint32_t send_wr,
				uint32_t recv_wr, bool sig_all, bool ext, struct ibv_qp_cap *cap)
{
	int sge = imin(RCP_MAX_SGE, p->dev->dattr.max_sge);
	struct ibv_qp_init_attr init = {.send_cq = scq,
					.recv_cq = rcq,
					.qp_type = p->shape.uc ? IBV_QPT_UC : IBV_QPT_RC,
					.sq_sig_all = sig_all,
					.cap = {.max_send_wr = send_wr,
						.max_recv_wr = recv_wr,
						.max_send_sge = (uint32_t)sge,
						.max_recv_sge = (uint32_t)sge,
						.max_inline_data = RCP_INLINE}};
	struct ibv_qp *qp = create_qp_of(p, &init, ext);

	if (!qp && errno == EINVAL) { /* a device without so much inline room */
		init.cap.max_inline_data = 0;
		qp = create_qp_of(p, &init, ext);
	}
	*cap = init.cap;
	return qp;
}

/* The port and its GID are as they were when the walk started (nothing changes them). */
static void check_port(struct rcp *p)
{
	struct ibv_port_attr port;
	union ibv_gid gid;

	if (hw_query_port(p->dev->ctx, (uint8_t)p->dev->port, &port) == 0 &&
	    (port.state != p->dev->pattr.state || port.active_mtu != p->dev->pattr.active_mtu ||
	     port.lid != p->dev->pattr.lid))
		rcp_fail(p,
			 "ibv_query_port now says state %d, active_mtu %d, lid %u; at the start %d, %d, %u",
			 port.state, port.active_mtu, port.lid, p->dev->pattr.state, p->dev->pattr.active_mtu,
			 p->dev->pattr.lid);
	if (hw_query_gid(p->dev->ctx, (uint8_t)p->dev->port, p->dev->gid_index, &gid) == 0 &&
	    memcmp(&gid, &p->dev->gid, sizeof(gid)))
		rcp_fail(p, "ibv_query_gid of index %d now gives another GID than at the start",
			 p->dev->gid_index);
}

/* An RC QP of one WR and one SGE each way on the probe's other CQ: the limit checks raise one field. */
static struct ibv_qp_init_attr smallest_rc(const struct rcp *p)
{
	return (struct ibv_qp_init_attr){
	    .send_cq = p->ocq,
	    .recv_cq = p->ocq,
	    .qp_type = IBV_QPT_RC,
	    .cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
}

/*
 * Up to the limits ibv_query_device reports, creation must succeed (one
 * limit at a time: the device need not take all at once), with capacities
 * at least those asked for; the QP then takes a receive of max_sge SGEs.
 */
static void check_device_maxima(struct rcp *p)
{
	const struct ibv_device_attr *d = &p->dev->dattr;
	struct ibv_qp_init_attr init = smallest_rc(p);
	struct ibv_qp_cap want;
	struct ibv_qp *qp;
	const char *what;
	int rc;

	switch (rng_range(p->rng, 0, 3)) {
	case 0:
		init.cap.max_send_wr = (uint32_t)d->max_qp_wr;
		what = "max_send_wr = max_qp_wr";
		break;
	case 1:
		init.cap.max_recv_wr = (uint32_t)d->max_qp_wr;
		what = "max_recv_wr = max_qp_wr";
		break;
	case 2:
		init.cap.max_send_sge = (uint32_t)d->max_sge;
		what = "max_send_sge = max_sge";
		break;
	default:
		init.cap.max_recv_sge = (uint32_t)d->max_sge;
		what = "max_recv_sge = max_sge";
		break;
	}
	want = init.cap;
	if (!(qp = hw_create_qp(p->pd, &init))) {
		rcp_fail(p, "ibv_create_qp with %s (the limit ibv_query_device reports) failed: %s", what,
			 strerror(errno));
		return;
	}
	if (init.cap.max_send_wr < want.max_send_wr || init.cap.max_recv_wr < want.max_recv_wr ||
	    init.cap.max_send_sge < want.max_send_sge || init.cap.max_recv_sge < want.max_recv_sge)
		rcp_fail(p, "ibv_create_qp with %s reported smaller capacities (wr %u/%u, sge %u/%u)", what,
			 init.cap.max_send_wr, init.cap.max_recv_wr, init.cap.max_send_sge,
			 init.cap.max_recv_sge);
	else if (want.max_recv_sge > 1 && want.max_recv_sge <= RCP_MAX_WR && rcp_to_init(p, qp) == 0) {
		struct ibv_sge sge[RCP_MAX_WR];
		struct ibv_recv_wr wr = {.wr_id = p->base_id + 0x9e,
					 .sg_list = sge,
					 .num_sge = (int)want.max_recv_sge},
				   *bad;

		for (uint32_t i = 0; i < want.max_recv_sge; i++)
			sge[i] = (struct ibv_sge){(uintptr_t)(p->buf + RCP_RECV + 8 * i), 8, p->mr->lkey};
		if ((rc = hw_post_recv(qp, &wr, &bad)))
			rcp_fail(p, "a receive of max_sge = %u SGEs on a QP made with %s was refused: %s",
				 want.max_recv_sge, what, strerror(rc));
	}
	hw_destroy_qp(qp);
}

const char *rcp_cap_past_limit(struct rcp *p, struct ibv_qp_cap *cap)
{
	const struct ibv_device_attr *d = &p->dev->dattr;

	switch (rng_range(p->rng, 0, 3)) {
	case 0:
		cap->max_send_wr = (uint32_t)d->max_qp_wr + 1;
		return "max_send_wr = max_qp_wr + 1";
	case 1:
		cap->max_recv_wr = (uint32_t)d->max_qp_wr + 1;
		return "max_recv_wr = max_qp_wr + 1";
	case 2:
		cap->max_send_sge = (uint32_t)d->max_sge + 1;
		return "max_send_sge = max_sge + 1";
	default:
		cap->max_recv_sge = (uint32_t)d->max_sge + 1;
		return "max_recv_sge = max_sge + 1";
	}
}

/* Beyond the limits ibv_query_device reports, creation must fail. */
static void check_device_limits(struct rcp *p)
{
	const struct ibv_device_attr *d = &p->dev->dattr;
	struct ibv_qp_init_attr init = smallest_rc(p);
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	const char *what = NULL;

	struct ibv_mr *mr =
	    hw_reg_mr(p->pd, p->buf, 64,
		      rng_bernoulli(p->rng, 0.5) ? IBV_ACCESS_REMOTE_WRITE : IBV_ACCESS_REMOTE_ATOMIC);

	if (mr) {
		hw_dereg_mr(mr);
		rcp_fail(p, "ibv_reg_mr with a remote write or atomic right but no LOCAL_WRITE succeeded");
	}
	if (d->max_cqe > 0 && d->max_cqe < 1 << 24 &&
	    (cq = hw_create_cq(p->dev->ctx, d->max_cqe + 1, NULL, NULL, 0))) {
		hw_destroy_cq(cq);
		rcp_fail(p, "ibv_create_cq of max_cqe + 1 = %d entries succeeded", d->max_cqe + 1);
	}
	what = rcp_cap_past_limit(p, &init.cap);
	check_port(p);
	if (d->max_qp_wr <= 0 || d->max_qp_wr >= 1 << 20 || d->max_sge <= 0)
		return;
	if ((qp = hw_create_qp(p->pd, &init))) {
		hw_destroy_qp(qp);
		rcp_fail(p, "ibv_create_qp with %s succeeded", what);
	}
	/* Rarer: a QP of max_qp_wr WRs costs the device (the soft one: milliseconds) and the probes' time. */
	if (rng_bernoulli(p->rng, 0.25))
		check_device_maxima(p);
}

/*
 * B's receive CQ (its cq_context is the probe, for the completion events to name): half the time made by
 * ibv_create_cq_ex and read with ibv_wc_read_* (src_qp, imm_data, wc_flags...), so that both faces of a CQ
 * are judged on every field, receives included; ibv_poll_cq otherwise.
 */
static struct ibv_cq *receive_cq(struct rcp *p)
{
	struct ibv_cq_init_attr_ex ca = {
	    .cqe = RCP_CQE, .cq_context = p, .channel = p->ch, .wc_flags = IBV_WC_STANDARD_FLAGS};

	if (rng_bernoulli(p->rng, 0.5) && (p->rcq_ex = ibv_create_cq_ex(p->dev->ctx, &ca)))
		return ibv_cq_ex_to_cq(p->rcq_ex);
	return hw_create_cq(p->dev->ctx, RCP_CQE, p, p->ch, 0);
}

int rcp_poll_ex(struct rcp *p, struct ibv_cq_ex *cx, struct ibv_wc *wc, int n)
{
	uint64_t end = clock_ns() + RCP_DEADLINE_NS;
	unsigned idle = 0, late = 0;
	int got = 0;

	while (got < n) {
		struct ibv_poll_cq_attr pa = {0};
		int rc = ibv_start_poll(cx, &pa);

		if (rc == ENOENT) {
			if (rcp_late(end, &late))
				break;
			rcp_idle(&idle);
			continue;
		}
		if (rc) {
			rcp_fail(p, "ibv_start_poll returned %d", rc);
			return got;
		}
		do {
			struct ibv_wc *w = &wc[got++];

			*w = (struct ibv_wc){.wr_id = cx->wr_id,
					     .status = cx->status,
					     .opcode = ibv_wc_read_opcode(cx),
					     .byte_len = ibv_wc_read_byte_len(cx),
					     .qp_num = ibv_wc_read_qp_num(cx),
					     .src_qp = ibv_wc_read_src_qp(cx),
					     .wc_flags = ibv_wc_read_wc_flags(cx),
					     .slid = ibv_wc_read_slid(cx),
					     .sl = ibv_wc_read_sl(cx)};
			if (w->wc_flags & IBV_WC_WITH_IMM)
				w->imm_data = ibv_wc_read_imm_data(cx);
			else if (w->wc_flags & IBV_WC_WITH_INV)
				w->invalidated_rkey = ibv_wc_read_invalidated_rkey(cx);
		} while (got < n && (rc = ibv_next_poll(cx)) == 0);
		ibv_end_poll(cx);
		if (rc && rc != ENOENT) {
			rcp_fail(p, "ibv_next_poll returned %d", rc);
			return got;
		}
	}
	return got;
}

static int setup_pair(struct rcp *p)
{
	struct cf_dev *c = p->dev;
	struct rcp_shape *s = &p->shape;

	for (uint32_t i = 0; i < RCP_BYTES; i += 8) {
		uint64_t x = rng_next(p->rng);

		memcpy(p->buf + i, &x, 8);
	}
	memcpy(p->model, p->buf, RCP_BYTES);
	p->base_id = rng_next(p->rng) << 8;
	if (!(p->pd = hw_alloc_pd(c->ctx)) || !(p->mr = hw_reg_mr(p->pd, p->buf, RCP_BYTES, RCP_MR_ACCESS)))
		return -1;
	if (s->ext) {
		struct ibv_cq_init_attr_ex ca = {.cqe = (uint32_t)s->scqe,
						 .wc_flags = IBV_WC_STANDARD_FLAGS | s->ext_wc_flags};

		if (!(p->scq_ex = ibv_create_cq_ex(c->ctx, &ca))) {
			p->abandoned = true;
			return -1;
		}
		p->scq = ibv_cq_ex_to_cq(p->scq_ex);
	}
	if ((!p->scq && !(p->scq = hw_create_cq(c->ctx, s->scqe, NULL, NULL, 0))) ||
	    (s->channel && !(p->ch = hw_create_comp_channel(c->ctx))) || !(p->rcq = receive_cq(p)) ||
	    !(p->ocq = hw_create_cq(c->ctx, RCP_CQE, NULL, NULL, 0)))
		return -1;
	if (rng_bernoulli(p->rng, 0.25))
		check_device_limits(p);
	p->a = create_rc(p, p->scq, p->ocq, s->a_send_wr, s->a_recv_wr, s->sig_all, s->ext, &p->acap);
	if (!p->a && s->ext) { /* the device need not have the extended API */
		p->abandoned = true;
		return -1;
	}
	p->b = p->a ? create_rc(p, p->ocq, p->rcq, 1, s->b_recv_wr, false, false, &p->bcap) : NULL;
	if (!p->b)
		return -1;
	/* A quarter of the pairs run a smaller path MTU: every one up to the port's is legal (IBTA 11.2.1.2). */
	p->path_mtu = c->pattr.active_mtu;
	if (c->pattr.active_mtu > IBV_MTU_256 && rng_bernoulli(p->rng, 0.25))
		p->path_mtu = (enum ibv_mtu)rng_range(p->rng, IBV_MTU_256, (uint64_t)c->pattr.active_mtu - 1);
	p->path = (struct ibv_ah_attr){.grh.hop_limit = 64};
	rcp_legal_path(p, &p->path);
	/* Half the time the PSNs start just short of the 24-bit wrap. */
	p->psn_a = rng_bernoulli(p->rng, 0.5) ? 0xffffffu - (uint32_t)rng_range(p->rng, 0, 3)
					      : (uint32_t)rng_next(p->rng) & 0xffffff;
	p->psn_b = rng_bernoulli(p->rng, 0.5) ? 0xffffffu - (uint32_t)rng_range(p->rng, 0, 3)
					      : (uint32_t)rng_next(p->rng) & 0xffffff;
	if (connect_one(p, p->a, p->b, s->a_rnr_retry) || connect_one(p, p->b, p->a, 7))
		return -1;
	check_query(p, p->a, p->b, &p->acap, s->a_rnr_retry, "A");
	check_query(p, p->b, p->a, &p->bcap, 7, "B");
	p->ran = true;
	return 0;
}

int rcp_setup(struct rcp *p)
{
	int rc = setup_pair(p);

	if (rc && !p->abandoned && !rcp_failed(p)) {
		p->setup_errno = errno ? errno : EINVAL;
		/* UC and the extended API are optional: a device without them judges nothing this round. */
		if (p->shape.uc || p->shape.ext)
			p->abandoned = true;
		else
			rcp_fail(p, "creating a PD, an MR, CQs and an RC pair (the verbs every device has) failed: %s",
				 strerror(p->setup_errno));
	}
	return rc;
}

void rcp_teardown(struct rcp *p)
{
	if (p->a)
		hw_destroy_qp(p->a);
	if (p->b)
		hw_destroy_qp(p->b);
	if (p->scq)
		hw_destroy_cq(p->scq);
	if (p->rcq)
		hw_destroy_cq(p->rcq);
	if (p->ocq)
		hw_destroy_cq(p->ocq);
	if (p->ch)
		hw_destroy_comp_channel(p->ch);
	if (p->mr)
		hw_dereg_mr(p->mr);
	if (p->pd)
		hw_dealloc_pd(p->pd);
}

int rcp_pieces(struct rcp *p, uint32_t off, uint32_t len, int k, uint32_t gap, struct rcp_piece *out)
{
	uint32_t left = len;

	if (!len)
		return 0;
	for (int i = 0; i < k; i++) {
		uint32_t take = i == k - 1 ? left : (uint32_t)rng_range(p->rng, 0, left);

		out[i] = (struct rcp_piece){off, take};
		off += take + (uint32_t)rng_range(p->rng, 0, gap);
		left -= take;
	}
	return k;
}

void rcp_sges(const struct rcp *p, const struct rcp_piece *pc, int n, struct ibv_sge *sge)
{
	for (int i = 0; i < n; i++)
		sge[i] = (struct ibv_sge){(uintptr_t)(p->buf + pc[i].off), pc[i].len, p->mr->lkey};
}

void rcp_model_move(struct rcp *p, const struct rcp_piece *src, int ns, const struct rcp_piece *dst, int nd)
{
	unsigned char tmp[RCP_SLOT];
	uint32_t n = 0, at = 0;

	for (int i = 0; i < ns; i++) {
		memcpy(tmp + n, p->model + src[i].off, src[i].len);
		n += src[i].len;
	}
	for (int i = 0; i < nd && at < n; i++) {
		uint32_t take = dst[i].len < n - at ? dst[i].len : n - at;

		memcpy(p->model + dst[i].off, tmp + at, take);
		at += take;
	}
}

static const char *region_of(uint32_t off)
{
	return off < RCP_RECV	? "A's send sources"
	       : off < RCP_TGT	? "B's receive buffers"
	       : off < RCP_RDST ? "B's WRITE targets"
				: "A's READ and atomic results";
}

void rcp_check_memory(struct rcp *p)
{
	for (uint32_t i = 0; i < RCP_BYTES; i++)
		if (p->buf[i] != p->model[i]) {
			rcp_fail(p, "memory at offset %u (%s, slot %u, byte %u) holds %#x; expected %#x", i,
				 region_of(i), (i % RCP_AREA) / RCP_SLOT, i % RCP_SLOT, p->buf[i],
				 p->model[i]);
			return;
		}
}

int rcp_wait_landed(struct rcp *p, uint32_t off, uint32_t len, const char *what)
{
	uint64_t end = clock_ns() + RCP_DEADLINE_NS;
	unsigned late = 0, idle = 0;

	while (memcmp(p->buf + off, p->model + off, len)) {
		if (rcp_late(end, &late)) {
			rcp_fail(p, "%s did not land within %llu ms", what, RCP_DEADLINE_NS / 1000000);
			return -1;
		}
		rcp_idle(&idle);
	}
	return 0;
}

static void check_one(struct rcp *p, const char *who, int i, const struct ibv_wc *wc, const struct rcp_exp *e,
		      uint32_t qpn)
{
	const char *f = NULL;
	unsigned long long got = 0, want = 0;
	bool recv = e->opcode == IBV_WC_RECV || e->opcode == IBV_WC_RECV_RDMA_WITH_IMM;

	if (wc->wr_id != e->wr_id)
		f = "wr_id", got = wc->wr_id, want = e->wr_id;
	else if (wc->status != e->status) {
		rcp_fail(p, "%s completion %d (wr_id %llx): status %s; expected %s", who, i + 1,
			 (unsigned long long)wc->wr_id, ibv_wc_status_str(wc->status),
			 ibv_wc_status_str(e->status));
		return;
	} else if (wc->qp_num != qpn)
		f = "qp_num", got = wc->qp_num, want = qpn;
	else if (e->status != IBV_WC_SUCCESS)
		return;
	else if (wc->opcode != e->opcode)
		f = "opcode", got = wc->opcode, want = e->opcode;
	else if (e->check_len && wc->byte_len != e->byte_len)
		f = "byte_len", got = wc->byte_len, want = e->byte_len;
	else if (!!(wc->wc_flags & IBV_WC_WITH_IMM) != e->imm)
		f = "IBV_WC_WITH_IMM flag", got = !!(wc->wc_flags & IBV_WC_WITH_IMM), want = e->imm;
	else if (e->imm && wc->imm_data != e->imm_data)
		f = "imm_data", got = wc->imm_data, want = e->imm_data;
	else if (recv && !!(wc->wc_flags & IBV_WC_GRH) != e->ud)
		f = "IBV_WC_GRH flag", got = !!(wc->wc_flags & IBV_WC_GRH), want = e->ud;
	else if (recv && !!(wc->wc_flags & IBV_WC_WITH_INV) != e->inv)
		f = e->inv ? "IBV_WC_WITH_INV flag (a SEND_WITH_INV was sent)"
			   : "IBV_WC_WITH_INV flag (no SEND_WITH_INV was sent)",
		got = !e->inv, want = e->inv;
	else if (e->inv && wc->invalidated_rkey != e->inv_rkey)
		f = "invalidated_rkey", got = wc->invalidated_rkey, want = e->inv_rkey;
	else if (e->src_qp && wc->src_qp != e->src_qp)
		f = "src_qp", got = wc->src_qp, want = e->src_qp;
	if (f)
		rcp_fail(p, "%s completion %d (wr_id %llx, %s): %s %#llx; expected %#llx", who, i + 1,
			 (unsigned long long)wc->wr_id, ibv_wc_status_str(wc->status), f, got, want);
}

void rcp_expect(struct rcp *p, struct ibv_cq *cq, const char *who, const struct rcp_exp *exp, int n)
{
	struct ibv_wc wc[RCP_MAX_WR];
	uint64_t end = clock_ns() + RCP_DEADLINE_NS;
	int got = 0;
	unsigned idle = 0, late = 0;

	if (cq == p->rcq && p->rcq_ex) {
		got = rcp_poll_ex(p, p->rcq_ex, wc, n);
		rcp_judge(p, cq, who, wc, got, exp, n);
		return;
	}
	while (got < n) {
		/* Half the time fewer than may be waiting: ibv_poll_cq returns at most num_entries, the rest stay. */
		int ask = n - got > 1 && rng_bernoulli(p->rng, 0.5) ? (int)rng_range(p->rng, 1, (uint64_t)(n - got))
								    : n - got;
		const struct ibv_wc canary = {.wr_id = 0xc0ffee5a5a5a5a5aull, .status = IBV_WC_GENERAL_ERR};
		int k;

		if (got + ask < RCP_MAX_WR)
			wc[got + ask] = canary;
		k = hw_poll_cq(cq, ask, wc + got);
		if (k < 0 || k > ask) {
			rcp_fail(p, "ibv_poll_cq of %d entries on %s's CQ returned %d", ask, who, k);
			return;
		}
		if (got + ask < RCP_MAX_WR && (wc[got + ask].wr_id != canary.wr_id || wc[got + ask].status != canary.status)) {
			rcp_fail(p, "ibv_poll_cq of %d entries on %s's CQ wrote a work completion past them", ask,
				 who);
			return;
		}
		got += k;
		if (!k && rcp_late(end, &late))
			break;
		if (!k)
			rcp_idle(&idle);
	}
	rcp_judge(p, cq, who, wc, got, exp, n);
}

void rcp_judge(struct rcp *p, struct ibv_cq *cq, const char *who, const struct ibv_wc *wc, int got,
	       const struct rcp_exp *exp, int n)
{
	uint32_t qpn = cq == p->scq ? p->a->qp_num : p->b->qp_num; /* the other CQ: only B's sends */

	for (int i = 0; i < got && !rcp_failed(p); i++)
		check_one(p, who, i, &wc[i], &exp[i], qpn);
	if (got < n)
		rcp_fail(p, "%s: %d of %d completions arrived within %llu ms (next expected: wr_id %llx, %s)",
			 who, got, n, RCP_DEADLINE_NS / 1000000, (unsigned long long)exp[got].wr_id,
			 ibv_wc_status_str(exp[got].status));
}

int rcp_poll1_within(struct ibv_cq *cq, struct ibv_wc *wc)
{
	uint64_t end = clock_ns() + RCP_DEADLINE_NS;
	unsigned idle = 0, late = 0;
	int k;

	while ((k = hw_poll_cq(cq, 1, wc)) == 0 && !rcp_late(end, &late))
		rcp_idle(&idle);
	return k;
}

int rcp_poll1(struct rcp *p, struct ibv_cq *cq, struct ibv_wc *wc)
{
	int k = rcp_poll1_within(cq, wc);

	if (k < 0)
		rcp_fail(p, "ibv_poll_cq returned %d", k);
	else if (k == 0)
		rcp_fail(p, "no completion within %llu ms", RCP_DEADLINE_NS / 1000000);
	return k > 0;
}

void rcp_expect_empty(struct rcp *p, struct ibv_cq *cq, const char *who)
{
	struct ibv_wc wc;

	if (hw_poll_cq(cq, 1, &wc) > 0)
		rcp_fail(
		    p,
		    "%s: a completion nobody should have produced: wr_id %llx status %s opcode %d qp_num %u",
		    who, (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status), wc.opcode, wc.qp_num);
}

/* A QP may enter ERR just after the completion that tells why: the state gets until the deadline. */
void rcp_expect_state(struct rcp *p, struct ibv_qp *qp, const char *who, enum ibv_qp_state st)
{
	uint64_t end = clock_ns() + RCP_DEADLINE_NS;
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;
	unsigned idle = 0, late = 0;

	while (hw_query_qp(qp, &attr, IBV_QP_STATE, &init) == 0 && attr.qp_state != st) {
		if (rcp_late(end, &late)) {
			rcp_fail(p, "%s is in state %d; expected %d", who, attr.qp_state, st);
			return;
		}
		rcp_idle(&idle);
	}
}

int rcp_to_err(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};

	return hw_modify_qp(qp, &a, IBV_QP_STATE);
}

struct ibv_ah_attr rcp_self_ah_attr(const struct rcp *p)
{
	return (struct ibv_ah_attr){.dlid = p->dev->pattr.lid,
				    .port_num = (uint8_t)p->dev->port,
				    .is_global = 1,
				    .grh = {.dgid = p->dev->gid,
					    .sgid_index = (uint8_t)p->dev->gid_index,
					    .hop_limit = 64}};
}

struct ibv_ah *rcp_self_ah(struct rcp *p)
{
	struct ibv_ah_attr aha = rcp_self_ah_attr(p);
	struct ibv_ah *ah;

	rcp_legal_path(p, &aha);
	if (!(ah = hw_create_ah(p->pd, &aha)) && errno == EINVAL)
		rcp_fail(p, "ibv_create_ah to this port (sl %u, traffic_class %u, flow_label %#x, hop_limit %u) failed: %s",
			 aha.sl, aha.grh.traffic_class, aha.grh.flow_label, aha.grh.hop_limit, strerror(errno));
	return ah;
}

void rcp_ud_free(struct ibv_qp *ua, struct ibv_qp *ub, struct ibv_ah *ah)
{
	if (ua)
		hw_destroy_qp(ua);
	if (ub)
		hw_destroy_qp(ub);
	if (ah)
		hw_destroy_ah(ah);
}

void rcp_ud_pair_free(struct rcp *p, struct ibv_qp *rc_a, struct ibv_qp *rc_b, struct ibv_qp *ua,
		      struct ibv_qp *ub, struct ibv_ah *ah)
{
	p->a = rc_a;
	p->b = rc_b;
	rcp_ud_free(ua, ub, ah);
}

int rcp_async_event(struct rcp *p, enum ibv_event_type type, const void *obj, uint64_t wait_ns)
{
	uint64_t end = clock_ns() + wait_ns;
	struct ibv_async_event ev;
	int fd = p->dev->ctx->async_fd;
	unsigned idle = 0, late = 0;

	if (!(fcntl(fd, F_GETFL) & O_NONBLOCK) && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK))
		return -1;
	for (;;) {
		if (hw_get_async_event(p->dev->ctx, &ev) == 0) {
			bool mine = ev.event_type == type &&
				    (type == IBV_EVENT_CQ_ERR ? (const void *)ev.element.cq
							      : (const void *)ev.element.qp) == obj;

			hw_ack_async_event(p->dev->ctx, &ev);
			if (mine)
				return 1;
			continue;
		}
		if (wait_ns >= RCP_DEADLINE_NS ? rcp_late(end, &late) : clock_ns() >= end)
			return 0;
		rcp_idle(&idle);
	}
}

/* One signaled WR of one SGE to raddr through rkey (a FETCH_ADD adds 1). */
int rcp_post1_through(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, struct ibv_sge sge,
			 uint64_t raddr, uint32_t rkey)
{
	struct ibv_send_wr wr = {.wr_id = wr_id,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = 1;
	}
	return hw_post_send(qp, &wr, &bad);
}

int rcp_post1(struct rcp *p, struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, struct ibv_sge sge,
	      uint64_t raddr)
{
	return rcp_post1_through(qp, op, wr_id, sge, raddr, p->mr->rkey);
}

int rcp_recv1(struct ibv_qp *qp, uint64_t wr_id, struct ibv_sge sge)
{
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1}, *bad;

	return hw_post_recv(qp, &wr, &bad);
}

/* A signaled WRITE of `from` to raddr through rkey. */
int rcp_post1_rkey(struct rcp *p, struct ibv_qp *qp, uint64_t wr_id, struct rcp_piece from, uint64_t raddr,
		   uint32_t rkey)
{
	struct ibv_sge sge = {(uintptr_t)(p->buf + from.off), from.len, p->mr->lkey};

	return rcp_post1_through(qp, IBV_WR_RDMA_WRITE, wr_id, sge, raddr, rkey);
}

/* Only type-2 windows can be invalidated (ibv_post_send(3), IBTA 10.6.7.2): LOCAL_INV of a type-1 one fails.
 */
static void check_type1_inv(struct rcp *p, struct ibv_mw *mw)
{
	struct ibv_send_wr wr = {.wr_id = p->base_id + 0x91,
				 .opcode = IBV_WR_LOCAL_INV,
				 .send_flags = IBV_SEND_SIGNALED,
				 .invalidate_rkey = mw->rkey},
			   *bad;
	struct ibv_wc wc;

	if (hw_post_send(p->a, &wr, &bad)) /* refused at post: right too */
		return;
	if (rcp_poll1(p, p->scq, &wc) && wc.status == IBV_WC_SUCCESS)
		rcp_fail(p, "LOCAL_INV of a bound type-1 window's rkey %#x completed with SUCCESS", mw->rkey);
}

/* Objects in use must refuse to go: a CQ a QP uses, a channel a CQ uses, an MR a window is bound to. */
static void check_busy(struct rcp *p)
{
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;
	struct ibv_mw_bind bind = {.wr_id = p->base_id + 0x90, .send_flags = IBV_SEND_SIGNALED};
	struct rcp_exp exp = {.wr_id = bind.wr_id, .status = IBV_WC_SUCCESS, .opcode = IBV_WC_BIND_MW};
	struct ibv_mw *mw;

	int rc;

	if ((rc = hw_destroy_cq(p->scq)) != EBUSY) {
		if (!rc)
			p->scq = NULL;
		rcp_fail(p, "ibv_destroy_cq of the CQ QP A sends to returned %d (%s); expected EBUSY", rc,
			 rc ? strerror(rc) : "success");
		return;
	}
	if (p->ch && (rc = hw_destroy_comp_channel(p->ch)) != EBUSY) {
		if (!rc)
			p->ch = NULL;
		rcp_fail(p,
			 "ibv_destroy_comp_channel of the channel of B's receive CQ returned %d (%s); "
			 "expected EBUSY",
			 rc, rc ? strerror(rc) : "success");
		return;
	}
	if (!(p->dev->dattr.device_cap_flags & IBV_DEVICE_MEM_WINDOW) ||
	    hw_query_qp(p->a, &attr, IBV_QP_STATE, &init) || attr.qp_state != IBV_QPS_RTS ||
	    !(mw = hw_alloc_mw(p->pd, IBV_MW_TYPE_1)))
		return;
	bind.bind_info = (struct ibv_mw_bind_info){.mr = p->mr,
						   .addr = (uintptr_t)(p->buf + RCP_TGT),
						   .length = 64,
						   .mw_access_flags = IBV_ACCESS_REMOTE_READ};
	if (hw_bind_mw(p->a, mw, &bind) == 0) {
		rcp_expect(p, p->scq, "A's send CQ (a type-1 window bound)", &exp, 1);
		if (!rcp_failed(p) && (rc = hw_dereg_mr(p->mr)) != EBUSY) {
			if (!rc)
				p->mr = NULL;
			rcp_fail(p,
				 "ibv_dereg_mr of an MR a type-1 window is bound to returned %d (%s); "
				 "expected EBUSY",
				 rc, rc ? strerror(rc) : "success");
		}
		if (!rcp_failed(p))
			check_type1_inv(p, mw);
	}
	hw_dealloc_mw(mw);
}

/* limits.busy: a data pair, then the objects it uses must refuse to go. */
void rcp_case_busy(struct rcp *p)
{
	p->name = "objects in use refuse to go";
	p->shape = (struct rcp_shape){.scqe = RCP_CQE, .a_send_wr = 8, .a_recv_wr = 1, .b_recv_wr = 8,
				      .a_rnr_retry = 7, .channel = rng_bernoulli(p->rng, 0.5)};
	if (rcp_setup(p) == 0)
		check_busy(p);
}
