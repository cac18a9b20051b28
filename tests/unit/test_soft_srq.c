/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Shared receive queues on the soft device (rxe's semantics): creation
 * limits, post_srq_recv errors, QPs of every type taking their receives
 * from one SRQ in posting order with the consuming QP's number in the
 * completion, srq_limit and its one-shot event, resizing, EBUSY while a QP
 * uses it, RNR while it is empty, and an SRQ QP entering ERR: nothing of
 * the SRQ is flushed, IBV_EVENT_QP_LAST_WQE_REACHED is raised instead.
 */
#include "tests/unit/soft_fixture.h"
#include "hw/soft/soft.h"

#include <fcntl.h>
#include <poll.h>

struct sx {
	struct fx *f;
	struct ibv_srq *srq;
	struct ibv_qp *qps[8];
	int nqps;
};

static struct ibv_srq *sx_srq(struct ibv_pd *pd, uint32_t max_wr, uint32_t max_sge)
{
	struct ibv_srq_init_attr init = {.attr = {.max_wr = max_wr, .max_sge = max_sge}};

	return hw_create_srq(pd, &init);
}

/* A QP of type on the SRQ (srq NULL: its own receive queue), completions on cq. */
static struct ibv_qp *sx_qp(struct sx *s, struct ibv_cq *cq, enum ibv_qp_type type, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr init = {
	    .send_cq = cq,
	    .recv_cq = cq,
	    .srq = srq,
	    .qp_type = type,
	    .sq_sig_all = 1,
	    .cap = {.max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 4, .max_recv_sge = 4},
	};
	struct ibv_qp *qp = hw_create_qp(s->f->pd, &init);

	assert_non_null(qp);
	s->qps[s->nqps++] = qp;
	return qp;
}

static void sx_uc_to_rts(struct ibv_qp *qp, uint32_t dest_qpn)
{
	struct ibv_qp_attr a = {
	    .qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = IBV_ACCESS_REMOTE_WRITE};

	assert_int_equal(
	    hw_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_4096;
	a.dest_qp_num = dest_qpn;
	a.ah_attr.port_num = 1;
	a.ah_attr.is_global = 1;
	assert_int_equal(hw_query_gid(qp->context, 1, 0, &a.ah_attr.grh.dgid), 0);
	assert_int_equal(
	    hw_modify_qp(qp, &a,
			 IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN),
	    0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	assert_int_equal(hw_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
}

/* An RC pair: sender on scq (its own RQ), receiver on the SRQ with rcq; rnr_retry 7, small RNR timer. */
static void sx_rc_pair(struct sx *s, struct ibv_qp **snd, struct ibv_qp **rcv)
{
	*snd = sx_qp(s, s->f->scq, IBV_QPT_RC, NULL);
	*rcv = sx_qp(s, s->f->rcq, IBV_QPT_RC, s->srq);
	fx_rc_to_rts(*snd, (*rcv)->qp_num, NULL, 14, 7, 7, 1);
	fx_rc_to_rts(*rcv, (*snd)->qp_num, NULL, 14, 7, 7, 1);
}

static int sx_post_srq(struct ibv_srq *srq, uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = {.addr = (uintptr_t)addr, .length = len, .lkey = lkey};
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1}, *bad = NULL;

	return hw_post_srq_recv(srq, &wr, &bad);
}

static int sx_setup(void **state)
{
	struct sx *s = calloc(1, sizeof(*s));
	void *fs;

	if (!s || fx_setup(&fs)) {
		free(s);
		return -1;
	}
	s->f = fs;
	s->srq = sx_srq(s->f->pd, 16, 2);
	if (!s->srq) {
		fx_free(s->f);
		free(s);
		return -1;
	}
	*state = s;
	return 0;
}

static int sx_teardown(void **state)
{
	struct sx *s = *state;

	for (int i = 0; i < s->nqps; i++)
		hw_destroy_qp(s->qps[i]);
	if (s->srq)
		assert_int_equal(hw_destroy_srq(s->srq), 0);
	fx_free(s->f);
	free(s);
	return 0;
}

/* The next async event on ctx within ms, or false. */
static bool sx_event(struct ibv_context *ctx, struct ibv_async_event *ev, int ms)
{
	struct pollfd p = {.fd = ctx->async_fd, .events = POLLIN};

	if (poll(&p, 1, ms) != 1)
		return false;
	assert_int_equal(hw_get_async_event(ctx, ev), 0);
	hw_ack_async_event(ctx, ev);
	return true;
}

static void test_device_reports_srq(void **state)
{
	struct sx *s = *state;
	struct ibv_device_attr d;

	assert_int_equal(hw_query_device(s->f->ctx, &d), 0);
	assert_true(d.max_srq > 0);
	assert_true(d.max_srq_wr >= 4096);
	assert_true(d.max_srq_sge >= 1);
	assert_true(d.device_cap_flags & IBV_DEVICE_SRQ_RESIZE);
}

static void test_create_limits_and_query(void **state)
{
	struct sx *s = *state;
	struct ibv_device_attr d;
	struct ibv_srq_attr a;

	assert_int_equal(hw_query_device(s->f->ctx, &d), 0);
	errno = 0;
	assert_null(sx_srq(s->f->pd, 0, 1));
	assert_int_equal(errno, EINVAL);
	assert_null(sx_srq(s->f->pd, (uint32_t)d.max_srq_wr + 1, 1));
	assert_int_equal(errno, EINVAL);
	assert_null(sx_srq(s->f->pd, 4, (uint32_t)d.max_srq_sge + 1));
	assert_int_equal(errno, EINVAL);
	assert_int_equal(hw_query_srq(s->srq, &a), 0);
	assert_int_equal(a.max_wr, 16);
	assert_int_equal(a.max_sge, 2);
	assert_int_equal(a.srq_limit, 0);
	assert_ptr_equal(s->srq->pd, s->f->pd);
	assert_ptr_equal(s->srq->context, s->f->ctx);
}

static void test_post_srq_recv_errors(void **state)
{
	struct sx *s = *state;
	struct ibv_sge sge[3] = {{.addr = (uintptr_t)s->f->bbuf, .length = 8, .lkey = s->f->bmr->lkey}};
	struct ibv_recv_wr wr[17], *bad = NULL;

	/* Three SGEs on an SRQ of max_sge 2. */
	memset(wr, 0, sizeof(wr));
	wr[0].num_sge = 3;
	wr[0].sg_list = sge;
	assert_int_equal(hw_post_srq_recv(s->srq, &wr[0], &bad), EINVAL);
	assert_ptr_equal(bad, &wr[0]);
	/* 17 WRs on 16 slots: the 17th is refused and named. */
	for (int i = 0; i < 17; i++) {
		wr[i].wr_id = (uint64_t)i;
		wr[i].sg_list = sge;
		wr[i].num_sge = 1;
		wr[i].next = i < 16 ? &wr[i + 1] : NULL;
	}
	assert_int_equal(hw_post_srq_recv(s->srq, wr, &bad), ENOMEM);
	assert_ptr_equal(bad, &wr[16]);
	/* libibverbs' inline ibv_post_srq_recv finds the op in the context. */
	assert_ptr_equal(s->f->ctx->ops.post_srq_recv, hw_ops_of(s->f->ctx)->post_srq_recv);
}

/* Two RC receivers on one SRQ: each message takes the oldest WQE; the completion names its QP. */
static void test_rc_shared_in_order(void **state)
{
	struct sx *s = *state;
	struct ibv_qp *a1, *b1, *a2, *b2;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	struct ibv_wc wc;

	sx_rc_pair(s, &a1, &b1);
	sx_rc_pair(s, &a2, &b2);
	assert_int_equal(hw_query_qp(b1, &qa, IBV_QP_CAP, &qi), 0);
	assert_ptr_equal(qi.srq, s->srq);
	assert_int_equal(qi.cap.max_recv_wr, 0);
	/* A QP on an SRQ has no receive queue of its own. */
	assert_int_equal(fx_post_recv(b1, 1, s->f->bbuf, 8, s->f->bmr->lkey), EINVAL);
	for (int i = 0; i < 4; i++)
		assert_int_equal(sx_post_srq(s->srq, 100 + i, s->f->bbuf + 64 * i, 64, s->f->bmr->lkey), 0);
	memcpy(s->f->abuf, "to-b2", 6);
	memcpy(s->f->abuf + 64, "to-b1", 6);
	assert_int_equal(fx_post(a2, IBV_WR_SEND, 1, s->f->abuf, 6, s->f->amr->lkey, 0, 0), 0);
	fx_wait(s->f->scq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(fx_post(a1, IBV_WR_SEND, 2, s->f->abuf + 64, 6, s->f->amr->lkey, 0, 0), 0);
	fx_wait(s->f->scq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);

	fx_wait(s->f->rcq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 100);
	assert_int_equal(wc.qp_num, b2->qp_num);
	assert_int_equal(wc.src_qp, a2->qp_num);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.byte_len, 6);
	assert_string_equal((char *)s->f->bbuf, "to-b2");
	fx_wait(s->f->rcq, &wc, 5000);
	assert_int_equal(wc.wr_id, 101);
	assert_int_equal(wc.qp_num, b1->qp_num);
	assert_string_equal((char *)s->f->bbuf + 64, "to-b1");
	/* Two WQEs are left for whoever receives next. */
	assert_int_equal(fx_post(a1, IBV_WR_SEND_WITH_IMM, 3, s->f->abuf, 6, s->f->amr->lkey, 0, 0), 0);
	fx_wait(s->f->scq, &wc, 5000);
	fx_wait(s->f->rcq, &wc, 5000);
	assert_int_equal(wc.wr_id, 102);
	assert_int_equal(wc.qp_num, b1->qp_num);
	assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
}

/* UD and UC QPs take their receives from an SRQ too. */
static void test_ud_and_uc_on_srq(void **state)
{
	struct sx *s = *state;
	struct ibv_qp *us = sx_qp(s, s->f->scq, IBV_QPT_UD, NULL),
		      *ur = sx_qp(s, s->f->rcq, IBV_QPT_UD, s->srq);
	struct ibv_qp *cs = sx_qp(s, s->f->scq, IBV_QPT_UC, NULL),
		      *cr = sx_qp(s, s->f->rcq, IBV_QPT_UC, s->srq);
	struct ibv_ah_attr aa = {.is_global = 1, .port_num = 1};
	struct ibv_sge sge = {.addr = (uintptr_t)s->f->abuf, .length = 5, .lkey = s->f->amr->lkey};
	struct ibv_send_wr wr = {.wr_id = 9, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND}, *bad;
	struct ibv_ah *ah;
	struct ibv_wc wc;

	fx_ud_to_rts(us, 0x1234);
	fx_ud_to_rts(ur, 0x1234);
	sx_uc_to_rts(cs, cr->qp_num);
	sx_uc_to_rts(cr, cs->qp_num);
	assert_int_equal(hw_query_gid(s->f->ctx, 1, 0, &aa.grh.dgid), 0);
	ah = hw_create_ah(s->f->pd, &aa);
	assert_non_null(ah);
	assert_int_equal(sx_post_srq(s->srq, 200, s->f->bbuf, 128, s->f->bmr->lkey), 0);
	assert_int_equal(sx_post_srq(s->srq, 201, s->f->bbuf + 128, 128, s->f->bmr->lkey), 0);
	memcpy(s->f->abuf, "hello", 5);
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = ur->qp_num;
	wr.wr.ud.remote_qkey = 0x1234;
	assert_int_equal(hw_post_send(us, &wr, &bad), 0);
	fx_wait(s->f->scq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	fx_wait(s->f->rcq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 200);
	assert_int_equal(wc.qp_num, ur->qp_num);
	assert_int_equal(wc.byte_len, SOFT_GRH_LEN + 5);
	assert_memory_equal(s->f->bbuf + SOFT_GRH_LEN, "hello", 5);

	assert_int_equal(fx_post(cs, IBV_WR_SEND, 10, s->f->abuf, 5, s->f->amr->lkey, 0, 0), 0);
	fx_wait(s->f->scq, &wc, 5000);
	fx_wait(s->f->rcq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 201);
	assert_int_equal(wc.qp_num, cr->qp_num);
	assert_memory_equal(s->f->bbuf + 128, "hello", 5);
	assert_int_equal(hw_destroy_ah(ah), 0);
}

/* An armed limit raises SRQ_LIMIT_REACHED once, when fewer WQEs than it are left, and disarms. */
static void test_limit_event(void **state)
{
	struct sx *s = *state;
	struct ibv_qp *a, *b;
	struct ibv_srq_attr attr = {.srq_limit = 17};
	struct ibv_async_event ev;
	struct ibv_wc wc;

	sx_rc_pair(s, &a, &b);
	assert_int_equal(hw_modify_srq(s->srq, &attr, IBV_SRQ_LIMIT), EINVAL); /* above max_wr */
	for (int i = 0; i < 3; i++)
		assert_int_equal(sx_post_srq(s->srq, (uint64_t)i, s->f->bbuf, 64, s->f->bmr->lkey), 0);
	attr.srq_limit = 2;
	assert_int_equal(hw_modify_srq(s->srq, &attr, IBV_SRQ_LIMIT), 0);
	assert_int_equal(hw_query_srq(s->srq, &attr), 0);
	assert_int_equal(attr.srq_limit, 2);
	/* 3 -> 2 WQEs: not below the limit. */
	assert_int_equal(fx_post(a, IBV_WR_SEND, 1, s->f->abuf, 8, s->f->amr->lkey, 0, 0), 0);
	fx_wait(s->f->rcq, &wc, 5000);
	assert_false(sx_event(s->f->ctx, &ev, 50));
	/* 2 -> 1: below it. */
	assert_int_equal(fx_post(a, IBV_WR_SEND, 2, s->f->abuf, 8, s->f->amr->lkey, 0, 0), 0);
	fx_wait(s->f->rcq, &wc, 5000);
	assert_true(sx_event(s->f->ctx, &ev, 5000));
	assert_int_equal(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
	assert_ptr_equal(ev.element.srq, s->srq);
	assert_int_equal(hw_query_srq(s->srq, &attr), 0);
	assert_int_equal(attr.srq_limit, 0);
	/* Disarmed: the next one is silent. */
	assert_int_equal(fx_post(a, IBV_WR_SEND, 3, s->f->abuf, 8, s->f->amr->lkey, 0, 0), 0);
	fx_wait(s->f->rcq, &wc, 5000);
	assert_false(sx_event(s->f->ctx, &ev, 50));
}

/* IBV_SRQ_MAX_WR resizes, keeping the posted WQEs in order; never below what it holds or its limit. */
static void test_resize(void **state)
{
	struct sx *s = *state;
	struct ibv_srq_attr attr = {.max_wr = 8};
	struct ibv_qp *a, *b;
	struct ibv_wc wc;

	sx_rc_pair(s, &a, &b);
	for (int i = 0; i < 12; i++)
		assert_int_equal(sx_post_srq(s->srq, (uint64_t)i, s->f->bbuf + 64 * i, 64, s->f->bmr->lkey),
				 0);
	assert_int_equal(hw_modify_srq(s->srq, &attr, IBV_SRQ_MAX_WR), EINVAL); /* holds 12 */
	attr.max_wr = 40;
	assert_int_equal(hw_modify_srq(s->srq, &attr, IBV_SRQ_MAX_WR), 0);
	assert_int_equal(hw_query_srq(s->srq, &attr), 0);
	assert_int_equal(attr.max_wr, 40);
	for (int i = 12; i < 40; i++)
		assert_int_equal(sx_post_srq(s->srq, (uint64_t)i, s->f->bbuf, 64, s->f->bmr->lkey), 0);
	assert_int_equal(sx_post_srq(s->srq, 99, s->f->bbuf, 64, s->f->bmr->lkey), ENOMEM);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(fx_post(a, IBV_WR_SEND, 1, s->f->abuf, 8, s->f->amr->lkey, 0, 0), 0);
		fx_wait(s->f->rcq, &wc, 5000);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, (uint64_t)i);
	}
	/* An armed limit of 30 forbids shrinking to 20 (37 held forbids it anyway: drain first). */
	attr.srq_limit = 30;
	assert_int_equal(hw_modify_srq(s->srq, &attr, IBV_SRQ_LIMIT), 0);
	attr.max_wr = 20;
	assert_int_equal(hw_modify_srq(s->srq, &attr, IBV_SRQ_MAX_WR), EINVAL);
	assert_int_equal(hw_modify_srq(s->srq, &attr, 1 << 7), EINVAL); /* unknown mask bit */
}

/* destroy_srq refuses while a QP uses the SRQ. */
static void test_destroy_busy(void **state)
{
	struct sx *s = *state;
	struct ibv_srq *srq = sx_srq(s->f->pd, 4, 1);
	struct ibv_qp *qp;

	assert_non_null(srq);
	qp = sx_qp(s, s->f->rcq, IBV_QPT_RC, srq);
	assert_int_equal(hw_destroy_srq(srq), EBUSY);
	/* The PD is in use by the SRQ as well. */
	s->nqps--;
	assert_int_equal(hw_destroy_qp(qp), 0);
	assert_int_equal(hw_destroy_srq(srq), 0);
}

/* A SEND to an SRQ QP while the SRQ is empty: RNR NAK, retried, served once a WQE is posted. */
static void test_empty_srq_rnr(void **state)
{
	struct sx *s = *state;
	struct ibv_qp *a, *b;
	struct ibv_wc wc;

	sx_rc_pair(s, &a, &b);
	assert_int_equal(fx_post(a, IBV_WR_SEND, 7, s->f->abuf, 8, s->f->amr->lkey, 0, 0), 0);
	fx_none(s->f->rcq, 30);
	assert_int_equal(sx_post_srq(s->srq, 70, s->f->bbuf, 64, s->f->bmr->lkey), 0);
	fx_wait(s->f->scq, &wc, 10000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	fx_wait(s->f->rcq, &wc, 5000);
	assert_int_equal(wc.wr_id, 70);
	assert_int_equal(wc.qp_num, b->qp_num);
}

/*
 * A QP on the SRQ entering ERR: its send queue flushes, the SRQ's WQEs do not
 * (another QP still takes them), and LAST_WQE_REACHED names it, once.
 */
static void test_err_keeps_srq_wqes(void **state)
{
	struct sx *s = *state;
	struct ibv_qp *a1, *b1, *a2, *b2;
	struct ibv_qp_attr err = {.qp_state = IBV_QPS_ERR};
	struct ibv_async_event ev;
	struct ibv_wc wc;

	sx_rc_pair(s, &a1, &b1);
	sx_rc_pair(s, &a2, &b2);
	for (int i = 0; i < 2; i++)
		assert_int_equal(sx_post_srq(s->srq, 300 + i, s->f->bbuf, 64, s->f->bmr->lkey), 0);
	assert_int_equal(hw_modify_qp(b1, &err, IBV_QP_STATE), 0);
	fx_none(s->f->rcq, 30);
	assert_true(sx_event(s->f->ctx, &ev, 5000));
	assert_int_equal(ev.event_type, IBV_EVENT_QP_LAST_WQE_REACHED);
	assert_ptr_equal(ev.element.qp, b1);
	assert_int_equal(hw_modify_qp(b1, &err, IBV_QP_STATE), 0); /* ERR -> ERR: no second event */
	assert_false(sx_event(s->f->ctx, &ev, 50));
	assert_int_equal(fx_post(a2, IBV_WR_SEND, 1, s->f->abuf, 8, s->f->amr->lkey, 0, 0), 0);
	fx_wait(s->f->rcq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 300);
	assert_int_equal(wc.qp_num, b2->qp_num);
	assert_int_equal(fx_post(a2, IBV_WR_SEND, 2, s->f->abuf, 8, s->f->amr->lkey, 0, 0), 0);
	fx_wait(s->f->rcq, &wc, 5000);
	assert_int_equal(wc.wr_id, 301);
}

/*
 * Destroying a QP drops its events not yet read, as the kernel does: an
 * event never names a freed QP (UCX's async thread acked one after its main
 * thread destroyed the QP, and crashed).
 */
static void test_destroy_drops_unread_events(void **state)
{
	struct sx *s = *state;
	struct ibv_qp *a, *b;
	struct ibv_qp_attr err = {.qp_state = IBV_QPS_ERR};
	struct ibv_async_event ev;
	int fd = s->f->ctx->async_fd;

	sx_rc_pair(s, &a, &b);
	assert_int_equal(hw_modify_qp(b, &err, IBV_QP_STATE), 0); /* LAST_WQE_REACHED, unread */
	s->qps[--s->nqps] = NULL;
	assert_int_equal(hw_destroy_qp(b), 0);
	assert_int_equal(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
	errno = 0;
	assert_int_equal(hw_get_async_event(s->f->ctx, &ev), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK), 0);
	/* A live QP's event still comes. */
	sx_rc_pair(s, &a, &b);
	assert_int_equal(hw_modify_qp(b, &err, IBV_QP_STATE), 0);
	assert_true(sx_event(s->f->ctx, &ev, 5000));
	assert_int_equal(ev.event_type, IBV_EVENT_QP_LAST_WQE_REACHED);
	assert_ptr_equal(ev.element.qp, b);
}

/* ibv_create_srq_ex's op: the basic type, with or without a CQ; XRC and TM are not implemented. */
static void test_create_srq_ex(void **state)
{
	struct sx *s = *state;
	struct verbs_context *v = verbs_get_ctx_op(s->f->ctx, create_srq_ex);
	struct ibv_srq_init_attr_ex ex = {
	    .attr = {.max_wr = 8, .max_sge = 1},
	    .comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ,
	    .srq_type = IBV_SRQT_BASIC,
	    .pd = s->f->pd,
	    .cq = s->f->rcq,
	};
	struct ibv_srq *srq;

	assert_non_null(v);
	srq = v->create_srq_ex(s->f->ctx, &ex);
	assert_non_null(srq);
	assert_int_equal(hw_destroy_srq(srq), 0);
	ex.srq_type = IBV_SRQT_XRC;
	errno = 0;
	assert_null(v->create_srq_ex(s->f->ctx, &ex));
	assert_int_equal(errno, EOPNOTSUPP);
	ex.srq_type = IBV_SRQT_BASIC;
	ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE;
	assert_null(v->create_srq_ex(s->f->ctx, &ex));
	assert_int_equal(errno, EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_device_reports_srq, sx_setup, sx_teardown),
	    cmocka_unit_test_setup_teardown(test_create_limits_and_query, sx_setup, sx_teardown),
	    cmocka_unit_test_setup_teardown(test_post_srq_recv_errors, sx_setup, sx_teardown),
	    cmocka_unit_test_setup_teardown(test_rc_shared_in_order, sx_setup, sx_teardown),
	    cmocka_unit_test_setup_teardown(test_ud_and_uc_on_srq, sx_setup, sx_teardown),
	    cmocka_unit_test_setup_teardown(test_limit_event, sx_setup, sx_teardown),
	    cmocka_unit_test_setup_teardown(test_resize, sx_setup, sx_teardown),
	    cmocka_unit_test_setup_teardown(test_destroy_busy, sx_setup, sx_teardown),
	    cmocka_unit_test_setup_teardown(test_empty_srq_rnr, sx_setup, sx_teardown),
	    cmocka_unit_test_setup_teardown(test_err_keeps_srq_wqes, sx_setup, sx_teardown),
	    cmocka_unit_test_setup_teardown(test_create_srq_ex, sx_setup, sx_teardown),
	    cmocka_unit_test_setup_teardown(test_destroy_drops_unread_events, sx_setup, sx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
