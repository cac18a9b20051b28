/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Queue pairs: creation against the device limits, the verbs state machine
 * with the kernel's per-transition required/optional attribute masks
 * (ib_modify_qp_is_ok), flush on ERR, and address handles.
 */
#include "hw/soft/soft.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct soft_transition {
	bool valid;
	int req[3], opt[3]; /* by transport: RC, UD, UC */
};

#define RC   0
#define UD   1
#define UC   2
#define S(x) IBV_QPS_##x

static const struct soft_transition soft_qp_table[IBV_QPS_ERR + 1][IBV_QPS_ERR + 1] =
    {
	[S(RESET)] =
	    {
		[S(RESET)] = {.valid = true},
		[S(ERR)] = {.valid = true},
		[S(INIT)] = {.valid = true,
			     .req = {[RC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
				     [UD] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
				     [UC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS}},
	    },
	[S(INIT)] =
	    {
		[S(RESET)] = {.valid = true},
		[S(ERR)] = {.valid = true},
		[S(INIT)] = {.valid = true,
			     .opt = {[RC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
				     [UD] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
				     [UC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS}},
		[S(RTR)] = {.valid = true,
			    .req = {[RC] = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
				    [UC] = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN},
			    .opt = {[RC] = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
				    [UD] = IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
				    [UC] = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX}},
	    },
	[S(RTR)] =
	    {
		[S(RESET)] = {.valid = true},
		[S(ERR)] = {.valid = true},
		[S(RTS)] = {.valid = true,
			    .req = {[RC] = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					   IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
				    [UD] = IBV_QP_SQ_PSN,
				    [UC] = IBV_QP_SQ_PSN},
			    .opt = {[RC] = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					   IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE,
				    [UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY,
				    [UC] = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					   IBV_QP_PATH_MIG_STATE}},
	    },
	[S(RTS)] =
	    {
		[S(RESET)] = {.valid = true},
		[S(ERR)] = {.valid = true},
		[S(RTS)] = {.valid = true,
			    .opt = {[RC] = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |
					   IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER,
				    [UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY,
				    [UC] = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |
					   IBV_QP_PATH_MIG_STATE}},
		[S(SQD)] = {.valid = true,
			    .opt = {[RC] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				    [UD] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				    [UC] = IBV_QP_EN_SQD_ASYNC_NOTIFY}},
	    },
	[S(SQD)] =
	    {
		[S(RESET)] = {.valid = true},
		[S(ERR)] = {.valid = true},
		[S(RTS)] = {.valid = true,
			    .opt = {[RC] = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					   IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE,
				    [UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY,
				    [UC] = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					   IBV_QP_PATH_MIG_STATE}},
		[S(SQD)] = {.valid = true,
			    .opt = {[RC] = IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					   IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC |
					   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					   IBV_QP_PKEY_INDEX | IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE,
				    [UD] = IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
				    [UC] = IBV_QP_AV | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					   IBV_QP_PKEY_INDEX | IBV_QP_PATH_MIG_STATE}},
	    },
	[S(SQE)] =
	    {
		[S(RESET)] = {.valid = true},
		[S(ERR)] = {.valid = true},
		[S(RTS)] = {.valid = true,
			    .opt = {[UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY,
				    [UC] = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS}},
	    },
	[S(ERR)] =
	    {
		[S(RESET)] = {.valid = true},
		[S(ERR)] = {.valid = true},
	    },
};

bool soft_modify_is_ok(enum ibv_qp_state cur, enum ibv_qp_state next, enum ibv_qp_type type, int mask)
{
	int t = type == IBV_QPT_UD ? UD : type == IBV_QPT_UC ? UC : RC;
	const struct soft_transition *tr;

	if ((unsigned)cur > IBV_QPS_ERR || (unsigned)next > IBV_QPS_ERR)
		return false;
	if ((mask & IBV_QP_CUR_STATE) && cur != S(RTR) && cur != S(RTS) && cur != S(SQD) && cur != S(SQE))
		return false;
	tr = &soft_qp_table[cur][next];
	if (!tr->valid)
		return false;
	if ((mask & tr->req[t]) != tr->req[t])
		return false;
	return !(mask & ~(tr->req[t] | tr->opt[t] | IBV_QP_STATE));
}

/* Ring slots for a queue of n entries: a power of two, so indices may wrap. */
static uint32_t soft_ring_slots(uint32_t n)
{
	uint32_t slots = 1;

	while (slots < n)
		slots <<= 1;
	return slots;
}

/*
 * Empties both rings (qp->lock and, once the QP is visible, rq_lock held).  The free-running 32-bit indices
 * start just short of their wrap-around, so every QP that completes a few dozen requests exercises the wrap
 * (harmless: slots are indexed by index & mask).
 */
static void soft_ring_reset(struct soft_qp *qp)
{
	qp->sq_head = qp->sq_next = qp->sq_tail = qp->sq_started = SOFT_RING_START;
	qp->rq_head = qp->rq_tail = SOFT_RING_START;
}

struct soft_qp *soft_lookup_qp(struct soft_nic *nic, uint32_t qpn)
{
	struct soft_qp *qp = nic->qps[qpn % SOFT_MAX_QP];

	return qp && qp->ibv.qp_num == qpn ? qp : NULL;
}

/* A QP type the verbs API defines but this NIC does not implement: callers expect EOPNOTSUPP, not EINVAL. */
static bool soft_qp_type_unsupported(enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_RAW_PACKET:
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
	case IBV_QPT_DRIVER:
		return true;
	default:
		return false;
	}
}

struct ibv_qp *soft_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *init)
{
	struct soft_nic *nic = soft_nic_of(pd->context);
	struct ibv_qp_cap *cap = &init->cap;
	struct soft_qp *qp;
	int index = -1;

	pd = soft_pd_base(pd);
	if (soft_qp_type_unsupported(init->qp_type)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((init->qp_type != IBV_QPT_RC && init->qp_type != IBV_QPT_UD && init->qp_type != IBV_QPT_UC) ||
	    !init->send_cq || !init->recv_cq || init->send_cq->context->device != pd->context->device ||
	    init->recv_cq->context->device != pd->context->device ||
	    (init->srq && init->srq->context->device != pd->context->device) ||
	    cap->max_send_wr > SOFT_MAX_QP_WR || cap->max_send_sge > SOFT_MAX_SGE ||
	    cap->max_inline_data > SOFT_MAX_INLINE ||
	    (!init->srq && (cap->max_recv_wr > SOFT_MAX_QP_WR || cap->max_recv_sge > SOFT_MAX_SGE))) {
		errno = EINVAL;
		return NULL;
	}
	/* On an SRQ the QP has no receive queue of its own: its receive capabilities are 0. */
	if (init->srq)
		cap->max_recv_wr = cap->max_recv_sge = 0;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	qp->sq_size = cap->max_send_wr ? cap->max_send_wr : 1;
	qp->rq_size = cap->max_recv_wr ? cap->max_recv_wr : 1;
	qp->sq_mask = soft_ring_slots(qp->sq_size) - 1;
	qp->rq_mask = soft_ring_slots(qp->rq_size) - 1;
	soft_ring_reset(qp);
	qp->sq = calloc(qp->sq_mask + 1, sizeof(*qp->sq));
	qp->rq = calloc(qp->rq_mask + 1, sizeof(*qp->rq));
	if (!qp->sq || !qp->rq) {
		free(qp->sq);
		free(qp->rq);
		free(qp);
		errno = ENOMEM;
		return NULL;
	}
	cap->max_inline_data = SOFT_MAX_INLINE;
	qp->cap = *cap;
	qp->sq_sig_all = init->sq_sig_all;
	qp->nic = nic;
	pthread_mutex_init(&qp->lock, NULL);
	pthread_mutex_init(&qp->rq_lock, NULL);
	qp->ibv.context = pd->context;
	qp->ibv.qp_context = init->qp_context;
	qp->ibv.pd = pd;
	qp->ibv.send_cq = init->send_cq;
	qp->ibv.recv_cq = init->recv_cq;
	qp->ibv.srq = init->srq;
	qp->ibv.qp_type = init->qp_type;
	qp->ibv.state = IBV_QPS_RESET;
	pthread_mutex_init(&qp->ibv.mutex, NULL);
	pthread_cond_init(&qp->ibv.cond, NULL);
	qp->attr.qp_state = IBV_QPS_RESET;
	qp->attr.path_mtu = IBV_MTU_4096;
	qp->attr.port_num = 1;
	qp->attr.cap = *cap;
	soft_qp_ex_init(qp);

	pthread_rwlock_wrlock(&nic->obj_lock);
	for (int i = 0; i < SOFT_MAX_QP && index < 0; i++)
		if (!nic->qps[i])
			index = i;
	if (index >= 0) {
		/* A fresh QPN each time: a late packet for a destroyed QP finds nothing. */
		nic->qp_gen[index] = (uint16_t)(nic->qp_gen[index] % 0x3fff + 1);
		qp->ibv.qp_num = ((uint32_t)nic->qp_gen[index] << 10) | (uint32_t)index;
		nic->qps[index] = qp;
		nic->n_qp++;
	}
	pthread_rwlock_unlock(&nic->obj_lock);
	if (index < 0) {
		free(qp->sq);
		free(qp->rq);
		free(qp);
		errno = ENOMEM;
		return NULL;
	}
	atomic_fetch_add(&to_soft_cq(init->send_cq)->qp_refs, 1);
	atomic_fetch_add(&to_soft_cq(init->recv_cq)->qp_refs, 1);
	if (init->srq)
		atomic_fetch_add(&to_soft_srq(init->srq)->users, 1);
	soft_pd_hold(pd);
	return &qp->ibv;
}

static bool soft_attr_values_ok(const struct ibv_qp_attr *a, int mask)
{
	if ((mask & IBV_QP_PORT) && a->port_num != 1)
		return false;
	if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index != 0)
		return false;
	if ((mask & IBV_QP_PATH_MTU) && (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096))
		return false;
	/* The port's link layer is Ethernet (like RoCE): every address carries a GRH, as rxe demands. */
	if ((mask & IBV_QP_AV) && (a->ah_attr.port_num > 1 || !a->ah_attr.is_global ||
				   a->ah_attr.grh.sgid_index >= SOFT_GID_TBL_LEN))
		return false;
	if ((mask & IBV_QP_TIMEOUT) && a->timeout > 31)
		return false;
	if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7)
		return false;
	if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7)
		return false;
	if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return false;
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > 16)
		return false;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > 16)
		return false;
	if ((mask & IBV_QP_DEST_QPN) && a->dest_qp_num > 0xffffff)
		return false;
	if ((mask & IBV_QP_SQ_PSN) && a->sq_psn > 0xffffff)
		return false;
	if ((mask & IBV_QP_RQ_PSN) && a->rq_psn > 0xffffff)
		return false;
	if ((mask & IBV_QP_ACCESS_FLAGS) &&
	    (a->qp_access_flags & ~(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)))
		return false;
	return true;
}

static void soft_push_flush(struct ibv_cq *cq, struct soft_qp *qp, uint64_t wr_id, enum ibv_wc_opcode op)
{
	struct ibv_wc wc = {
	    .wr_id = wr_id,
	    .status = IBV_WC_WR_FLUSH_ERR,
	    .opcode = op,
	    .qp_num = qp->ibv.qp_num,
	};

	soft_cq_push(cq, &wc, false);
}

/*
 * Completes every outstanding WR with WR_FLUSH_ERR; qp->lock held.  A QP on
 * an SRQ flushes only its send queue: the SRQ's WQEs stay for the other QPs,
 * and the QP's owner learns that no receive will complete on it any more
 * from IBV_EVENT_QP_LAST_WQE_REACHED (once per entry into ERR).
 */
void soft_qp_flush_locked(struct soft_qp *qp)
{
	for (; qp->sq_head != qp->sq_tail; qp->sq_head++)
		soft_complete_send(qp, &qp->sq[qp->sq_head & qp->sq_mask], IBV_WC_WR_FLUSH_ERR, 0);
	qp->sq_next = qp->sq_head;
	if (qp->ibv.srq) {
		if (qp->attr.qp_state == IBV_QPS_ERR && !qp->last_wqe_told) {
			qp->last_wqe_told = true;
			soft_async_event(qp->ibv.context, IBV_EVENT_QP_LAST_WQE_REACHED, &qp->ibv);
		}
		return;
	}
	pthread_mutex_lock(&qp->rq_lock);
	for (; qp->rq_head != qp->rq_tail; qp->rq_head++)
		soft_push_flush(qp->ibv.recv_cq, qp, qp->rq[qp->rq_head & qp->rq_mask].wr_id, IBV_WC_RECV);
	pthread_mutex_unlock(&qp->rq_lock);
}

static void soft_set_state(struct soft_qp *qp, enum ibv_qp_state state)
{
	qp->attr.qp_state = state;
	__atomic_store_n(&qp->ibv.state, state, __ATOMIC_RELEASE);
}

/* ERR and flush, whatever the QP type; qp->lock held. */
void soft_qp_error_all(struct soft_qp *qp)
{
	soft_set_state(qp, IBV_QPS_ERR);
	soft_qp_flush_locked(qp);
}

/* An error moves the QP to ERR (RC) or SQE (UD send side); qp->lock held. */
void soft_qp_error(struct soft_qp *qp)
{
	if (qp->ibv.qp_type == IBV_QPT_UD && qp->attr.qp_state != IBV_QPS_ERR) {
		soft_set_state(qp, IBV_QPS_SQE);
		for (; qp->sq_head != qp->sq_tail; qp->sq_head++)
			soft_complete_send(qp, &qp->sq[qp->sq_head & qp->sq_mask], IBV_WC_WR_FLUSH_ERR, 0);
		qp->sq_next = qp->sq_head;
		return;
	}
	soft_qp_error_all(qp);
}

bool soft_sq_draining(const struct soft_qp *qp)
{
	return qp->attr.qp_state == IBV_QPS_SQD && (int32_t)(qp->sq_started - qp->sq_head) > 0;
}

int soft_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask)
{
	struct soft_qp *qp = to_soft_qp(ibqp);
	enum ibv_qp_state cur, next;
	bool kick = false;

	pthread_mutex_lock(&qp->lock);
	cur = (mask & IBV_QP_CUR_STATE) ? attr->cur_qp_state : qp->attr.qp_state;
	next = (mask & IBV_QP_STATE) ? attr->qp_state : cur;
	if (!soft_modify_is_ok(cur, next, ibqp->qp_type, mask) || !soft_attr_values_ok(attr, mask) ||
	    ((mask & IBV_QP_CUR_STATE) && cur != qp->attr.qp_state)) {
		pthread_mutex_unlock(&qp->lock);
		return EINVAL;
	}
	if (mask & IBV_QP_PKEY_INDEX)
		qp->attr.pkey_index = attr->pkey_index;
	if (mask & IBV_QP_PORT)
		qp->attr.port_num = attr->port_num;
	if (mask & IBV_QP_QKEY)
		qp->attr.qkey = attr->qkey;
	if (mask & IBV_QP_ACCESS_FLAGS)
		qp->attr.qp_access_flags = attr->qp_access_flags;
	if (mask & IBV_QP_AV)
		qp->attr.ah_attr = attr->ah_attr;
	if (mask & IBV_QP_PATH_MTU)
		qp->attr.path_mtu = attr->path_mtu;
	if (mask & IBV_QP_DEST_QPN)
		qp->attr.dest_qp_num = attr->dest_qp_num;
	if (mask & IBV_QP_RQ_PSN)
		qp->attr.rq_psn = attr->rq_psn;
	if (mask & IBV_QP_SQ_PSN)
		qp->attr.sq_psn = attr->sq_psn;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		qp->attr.max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		qp->attr.max_rd_atomic = attr->max_rd_atomic;
	if (mask & IBV_QP_MIN_RNR_TIMER)
		qp->attr.min_rnr_timer = attr->min_rnr_timer;
	if (mask & IBV_QP_TIMEOUT)
		qp->attr.timeout = attr->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		qp->attr.retry_cnt = attr->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		qp->attr.rnr_retry = attr->rnr_retry;
	if (mask & IBV_QP_STATE) {
		switch (next) {
		case IBV_QPS_RESET:
			/*
			 * Outstanding work is discarded without completions, and the
			 * QP's completions still in its CQs go too (as mlx4/mlx5 clean
			 * the CQ): a QP reused after an error starts clean.
			 */
			pthread_mutex_lock(&qp->rq_lock);
			soft_ring_reset(qp);
			pthread_mutex_unlock(&qp->rq_lock);
			soft_cq_clean(ibqp->send_cq, ibqp->qp_num);
			if (ibqp->recv_cq != ibqp->send_cq)
				soft_cq_clean(ibqp->recv_cq, ibqp->qp_num);
			qp->has_atomic = false;
			qp->last_wqe_told = false;
			break;
		case IBV_QPS_RTR:
			if (cur == IBV_QPS_INIT)
				qp->resp_psn = qp->attr.rq_psn;
			break;
		case IBV_QPS_RTS:
			if (cur == IBV_QPS_RTR)
				qp->next_psn = qp->attr.sq_psn;
			kick = true;
			break;
		case IBV_QPS_SQD:
			qp->sqd_notify = (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY) && attr->en_sqd_async_notify;
			kick = true;
			break;
		default:
			break;
		}
		soft_set_state(qp, next);
		if (next == IBV_QPS_ERR)
			soft_qp_flush_locked(qp);
	}
	pthread_mutex_unlock(&qp->lock);
	if (kick)
		soft_ring_doorbell(qp);
	return 0;
}

int soft_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask, struct ibv_qp_init_attr *init)
{
	struct soft_qp *qp = to_soft_qp(ibqp);

	(void)attr_mask;
	pthread_mutex_lock(&qp->lock);
	*attr = qp->attr;
	attr->cur_qp_state = qp->attr.qp_state;
	attr->cap = qp->cap;
	attr->sq_draining = soft_sq_draining(qp);
	pthread_mutex_unlock(&qp->lock);
	memset(init, 0, sizeof(*init));
	init->qp_context = ibqp->qp_context;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = qp->cap;
	init->qp_type = ibqp->qp_type;
	init->sq_sig_all = qp->sq_sig_all;
	return 0;
}

int soft_destroy_qp(struct ibv_qp *ibqp)
{
	struct soft_qp *qp = to_soft_qp(ibqp);
	struct soft_nic *nic = qp->nic;

	/* The engine works under the read lock: once we hold it for writing, it no longer sees this QP. */
	pthread_rwlock_wrlock(&nic->obj_lock);
	nic->qps[ibqp->qp_num % SOFT_MAX_QP] = NULL;
	nic->n_qp--;
	pthread_mutex_lock(&nic->runq_lock);
	if (qp->queued) {
		struct soft_qp **pp = &nic->runq_head;

		nic->runq_tail = NULL;
		while (*pp) {
			if (*pp == qp)
				*pp = qp->run_next;
			else
				nic->runq_tail = *pp, pp = &(*pp)->run_next;
		}
		atomic_store(&nic->runq_nonempty, nic->runq_head != NULL);
	}
	pthread_mutex_unlock(&nic->runq_lock);
	pthread_rwlock_unlock(&nic->obj_lock);
	atomic_fetch_sub(&to_soft_cq(ibqp->send_cq)->qp_refs, 1);
	atomic_fetch_sub(&to_soft_cq(ibqp->recv_cq)->qp_refs, 1);
	if (ibqp->srq)
		atomic_fetch_sub(&to_soft_srq(ibqp->srq)->users, 1);
	soft_pd_release(ibqp->pd);
	soft_async_forget(ibqp->context, ibqp, &qp->async_reported, &ibqp->mutex, &ibqp->cond,
			  &ibqp->events_completed);
	pthread_mutex_destroy(&qp->lock);
	pthread_mutex_destroy(&qp->rq_lock);
	pthread_mutex_destroy(&qp->ibv.mutex);
	pthread_cond_destroy(&qp->ibv.cond);
	soft_qp_ex_free(qp);
	free(qp->sq);
	free(qp->rq);
	free(qp);
	return 0;
}

struct ibv_ah *soft_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct soft_nic *nic = soft_nic_of(pd->context);
	struct soft_ah *ah;

	pd = soft_pd_base(pd);
	if (attr->port_num > 1 || !attr->is_global || attr->grh.sgid_index >= SOFT_GID_TBL_LEN) {
		errno = EINVAL;
		return NULL;
	}
	if (atomic_fetch_add(&nic->n_ah, 1) >= SOFT_MAX_AH) {
		atomic_fetch_sub(&nic->n_ah, 1);
		errno = ENOMEM;
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		atomic_fetch_sub(&nic->n_ah, 1);
		return NULL;
	}
	ah->ibv.context = pd->context;
	ah->ibv.pd = pd;
	ah->attr = *attr;
	soft_pd_hold(pd);
	return &ah->ibv;
}

int soft_destroy_ah(struct ibv_ah *ah)
{
	soft_pd_release(ah->pd);
	atomic_fetch_sub(&soft_nic_of(ah->context)->n_ah, 1);
	free(ah);
	return 0;
}
