/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Soft device: verbs semantics a provider can get subtly wrong, each checked
 * the way a verbs user would see it.  Each test passes on the device and
 * fails on the seeded bug named above it (tests/mutation/NAME.mut).
 */
#include "tests/unit/soft_fixture.h"
#include "hw/soft/soft.h"

static void wait_ok(struct ibv_cq *cq, struct ibv_wc *wc)
{
	fx_wait(cq, wc, 3000);
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
}

static void send_plain(struct fx *f, void *addr, uint32_t len)
{
	struct ibv_wc wc;
	assert_int_equal(fx_post(f->a, IBV_WR_SEND, 1, addr, len, f->amr->lkey, 0, 0), 0);
	wait_ok(f->scq, &wc);
}

/* write_imm_wc_opcode_send */
static void write_with_imm_sender_sees_rdma_write(void **state)
{
	struct fx *f = *state;
	struct ibv_wc wc;
	struct ibv_sge sge = {(uintptr_t)f->abuf, 8, f->amr->lkey};
	struct ibv_send_wr wr = {.wr_id = 7,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	assert_int_equal(fx_post_recv(f->b, 1, f->bbuf, 64, f->bmr->lkey), 0);
	wr.wr.rdma.remote_addr = (uintptr_t)f->bbuf + 100;
	wr.wr.rdma.rkey = f->bmr->rkey;
	wr.imm_data = 5;
	assert_int_equal(hw_post_send(f->a, &wr, &bad), 0);
	wait_ok(f->scq, &wc);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_WRITE);
	wait_ok(f->rcq, &wc);
}

/* recv_sge_addr_ignored */
static void receive_lands_at_its_sge_address(void **state)
{
	struct fx *f = *state;
	struct ibv_wc wc;
	memset(f->abuf, 'x', 16);
	assert_int_equal(fx_post_recv(f->b, 1, f->bbuf + 1024, 64, f->bmr->lkey), 0);
	send_plain(f, f->abuf, 16);
	wait_ok(f->rcq, &wc);
	assert_int_equal(f->bbuf[0], 0);
	assert_int_equal(f->bbuf[1024], 'x');
}

/* gather_from_first_sge */
static void send_gathers_every_sge(void **state)
{
	struct fx *f = *state;
	struct ibv_wc wc;
	struct ibv_sge sge[2] = {{(uintptr_t)f->abuf, 8, f->amr->lkey},
				 {(uintptr_t)f->abuf + 100, 8, f->amr->lkey}};
	struct ibv_send_wr wr = {.sg_list = sge,
				 .num_sge = 2,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	memset(f->abuf, 'A', 8);
	memset(f->abuf + 100, 'B', 8);
	assert_int_equal(fx_post_recv(f->b, 1, f->bbuf, 64, f->bmr->lkey), 0);
	assert_int_equal(hw_post_send(f->a, &wr, &bad), 0);
	wait_ok(f->scq, &wc);
	wait_ok(f->rcq, &wc);
	assert_int_equal(f->bbuf[0], 'A');
	assert_int_equal(f->bbuf[8], 'B');
}

/* zero_len_recv_sge_checked */
static void zero_length_receive_sge_is_not_checked(void **state)
{
	struct fx *f = *state;
	struct ibv_wc wc;
	struct ibv_sge sge[2] = {{(uintptr_t)f->bbuf, 64, f->bmr->lkey}, {0, 0, 0xdeadbe00}};
	struct ibv_recv_wr wr = {.wr_id = 3, .sg_list = sge, .num_sge = 2}, *bad;
	assert_int_equal(hw_post_recv(f->b, &wr, &bad), 0);
	send_plain(f, f->abuf, 8);
	wait_ok(f->rcq, &wc);
}

/* bad_wr_is_list_head */
static void bad_wr_names_the_failing_wr(void **state)
{
	struct fx *f = *state;
	struct ibv_sge sge = {(uintptr_t)f->abuf, 8, f->amr->lkey};
	struct ibv_send_wr w2 = {.sg_list = &sge, .num_sge = 99, .opcode = IBV_WR_SEND};
	struct ibv_send_wr w1 = {.next = &w2, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE},
			   *bad = NULL;
	struct ibv_wc wc;
	w1.wr.rdma.remote_addr = (uintptr_t)f->bbuf;
	w1.wr.rdma.rkey = f->bmr->rkey;
	assert_int_equal(hw_post_send(f->a, &w1, &bad), EINVAL);
	assert_ptr_equal(bad, &w2);
	wait_ok(f->scq, &wc);
}

/* post_send_in_rtr */
static void post_send_in_rtr_is_refused(void **state)
{
	struct fx *f = *state;
	struct ibv_qp *q = fx_qp(f->pd, f->scq, IBV_QPT_RC, 1);

	assert_non_null(q);
	fx_rc_to_rtr(q, f->b->qp_num, NULL, 1);
	int rc = fx_post(q, IBV_WR_SEND, 1, f->abuf, 8, f->amr->lkey, 0, 0);
	hw_destroy_qp(q);
	assert_int_equal(rc, EINVAL);
}

/* inline_exact_max_rejected */
static void inline_of_exactly_max_inline_data(void **state)
{
	struct fx *f = *state;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr ia;
	struct ibv_wc wc;
	assert_int_equal(hw_query_qp(f->a, &qa, IBV_QP_CAP, &ia), 0);
	uint32_t max = qa.cap.max_inline_data;
	assert_true(max > 0 && max < 4096);
	struct ibv_sge sge = {(uintptr_t)f->abuf, max, f->amr->lkey};
	struct ibv_send_wr wr = {.sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE},
			   *bad;
	assert_int_equal(fx_post_recv(f->b, 1, f->bbuf, 4096, f->bmr->lkey), 0);
	assert_int_equal(hw_post_send(f->a, &wr, &bad), 0);
	wait_ok(f->scq, &wc);
	wait_ok(f->rcq, &wc);
	assert_int_equal(wc.byte_len, max);
}

/* rts_to_rts_resets_psn */
static void rts_to_rts_keeps_the_send_psn(void **state)
{
	struct fx *f = *state;
	struct ibv_wc wc;
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTS, .qp_access_flags = IBV_ACCESS_REMOTE_WRITE};
	memset(f->abuf, '1', 8);
	assert_int_equal(fx_post_recv(f->b, 1, f->bbuf, 64, f->bmr->lkey), 0);
	send_plain(f, f->abuf, 8);
	wait_ok(f->rcq, &wc);
	assert_int_equal(hw_modify_qp(f->a, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS), 0);
	memset(f->abuf, '2', 8);
	assert_int_equal(fx_post_recv(f->b, 2, f->bbuf + 100, 64, f->bmr->lkey), 0);
	send_plain(f, f->abuf, 8);
	wait_ok(f->rcq, &wc);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(f->bbuf[100], '2');
}

/* cq_clean_takes_all_qps */
static void reset_of_one_qp_keeps_others_completions(void **state)
{
	struct fx *f = *state;
	struct ibv_wc wc;
	struct ibv_qp *c = fx_qp(f->pd, f->rcq, IBV_QPT_RC, 1);
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = 0};
	assert_non_null(c);
	assert_int_equal(
	    hw_modify_qp(c, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
	assert_int_equal(fx_post_recv(f->b, 1, f->bbuf, 64, f->bmr->lkey), 0);
	send_plain(f, f->abuf, 8);
	a.qp_state = IBV_QPS_RESET;
	assert_int_equal(hw_modify_qp(c, &a, IBV_QP_STATE), 0);
	hw_destroy_qp(c);
	wait_ok(f->rcq, &wc);
	assert_int_equal(wc.qp_num, f->b->qp_num);
}

/* cq_event_context_lost */
static void cq_event_carries_cq_context(void **state)
{
	struct fx *f = *state;
	int ctxval;
	struct ibv_comp_channel *ch = hw_create_comp_channel(f->ctx);
	assert_non_null(ch);
	struct ibv_cq *cq = hw_create_cq(f->ctx, 16, &ctxval, ch, 0), *got;
	void *gotctx = NULL;
	struct ibv_wc wc;
	assert_non_null(cq);
	struct ibv_qp *q = fx_qp(f->pd, cq, IBV_QPT_RC, 1);
	assert_non_null(q);
	fx_rc_to_rts(q, q->qp_num, NULL, 8, 3, 3, 1);
	assert_int_equal(fx_post_recv(q, 1, f->abuf + 512, 64, f->amr->lkey), 0);
	assert_int_equal(hw_req_notify_cq(cq, 0), 0);
	assert_int_equal(fx_post(q, IBV_WR_SEND, 2, f->abuf, 8, f->amr->lkey, 0, 0), 0);
	assert_int_equal(hw_get_cq_event(ch, &got, &gotctx), 0);
	assert_ptr_equal(got, cq);
	hw_ack_cq_events(cq, 1);
	while (hw_poll_cq(cq, 1, &wc) > 0)
		;
	hw_destroy_qp(q);
	hw_destroy_cq(cq);
	hw_destroy_comp_channel(ch);
	assert_ptr_equal(gotctx, &ctxval);
}

/* sqd_stops_receiving */
static void sqd_still_receives(void **state)
{
	struct fx *f = *state;
	struct ibv_wc wc;
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_SQD};
	assert_int_equal(hw_modify_qp(f->b, &a, IBV_QP_STATE), 0);
	assert_int_equal(fx_post_recv(f->b, 1, f->bbuf, 64, f->bmr->lkey), 0);
	assert_int_equal(fx_post(f->a, IBV_WR_SEND, 1, f->abuf, 8, f->amr->lkey, 0, 0), 0);
	fx_wait(f->rcq, &wc, 3000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
}

/* Waits (a deadline, not a speed) until the head send of qp has had an RNR NAK: it is in progress. */
static void wait_first_rnr_nak(struct ibv_qp *ibqp)
{
	struct soft_qp *qp = (struct soft_qp *)ibqp;
	uint64_t end = fx_now_ms() + 60000;
	bool nak;

	do {
		pthread_mutex_lock(&qp->lock);
		nak = qp->sq[qp->sq_head & qp->sq_mask].rnr_until_ns != 0; /* set by the first RNR NAK */
		pthread_mutex_unlock(&qp->lock);
	} while (!nak && fx_now_ms() < end);
	assert_true(nak);
}

/*
 * sqd_draining_forgets_rnr: a SEND that waits on RNR NAKs when its QP goes
 * RTS -> SQD is still in progress: sq_draining stays 1 until it completes.
 */
static void sqd_drains_a_send_waiting_on_rnr(void **state)
{
	struct fx *f = *state;
	struct ibv_wc wc;
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RESET}, q;
	struct ibv_qp_init_attr ia;
	uint64_t end;

	assert_int_equal(hw_modify_qp(f->a, &a, IBV_QP_STATE), 0);
	fx_rc_to_rts(f->a, f->b->qp_num, NULL, 8, 3, 7,
		     1); /* rnr_retry 7: it waits for as long as it takes */
	assert_int_equal(fx_post(f->a, IBV_WR_SEND, 1, f->abuf, 8, f->amr->lkey, 0, 0), 0);
	wait_first_rnr_nak(f->a); /* B has no receive */
	fx_none(f->scq, 10);
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_SQD, .en_sqd_async_notify = 1};
	assert_int_equal(hw_modify_qp(f->a, &a, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY), 0);
	fx_none(f->scq, 10);
	assert_int_equal(hw_query_qp(f->a, &q, IBV_QP_STATE, &ia), 0);
	assert_int_equal(q.qp_state, IBV_QPS_SQD);
	assert_int_equal(q.sq_draining, 1);
	assert_int_equal(fx_post_recv(f->b, 1, f->bbuf, 64, f->bmr->lkey), 0);
	wait_ok(f->scq, &wc); /* sent again in SQD */
	for (end = fx_now_ms() + 3000;; assert_true(fx_now_ms() < end)) {
		assert_int_equal(hw_query_qp(f->a, &q, IBV_QP_STATE, &ia), 0);
		if (!q.sq_draining)
			break;
	}
	assert_int_equal(q.qp_state, IBV_QPS_SQD);
}

/* retry_cnt_ignored */
static void retry_cnt_is_stored(void **state)
{
	struct fx *f = *state;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr ia;
	assert_int_equal(hw_query_qp(f->a, &qa, IBV_QP_RETRY_CNT, &ia), 0);
	assert_int_equal(qa.retry_cnt, 3);
}

/* ud_full_mtu_rejected */
static void ud_send_of_exactly_the_mtu(void **state)
{
	struct fx *f = *state;
	struct ibv_wc wc;
	struct ibv_qp *u1 = fx_qp(f->pd, f->scq, IBV_QPT_UD, 1), *u2 = fx_qp(f->pd, f->rcq, IBV_QPT_UD, 1);
	struct ibv_ah_attr aa = {.is_global = 1, .port_num = 1};
	assert_non_null(u1);
	assert_non_null(u2);
	fx_ud_to_rts(u1, 0x11);
	fx_ud_to_rts(u2, 0x11);
	assert_int_equal(hw_query_gid(f->ctx, 1, 0, &aa.grh.dgid), 0);
	struct ibv_ah *ah = hw_create_ah(f->pd, &aa);
	assert_non_null(ah);
	assert_int_equal(fx_post_recv(u2, 1, f->bbuf, 4096 + 40, f->bmr->lkey), 0);
	struct ibv_sge sge = {(uintptr_t)f->abuf, 4096, f->amr->lkey};
	struct ibv_send_wr wr = {.sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = u2->qp_num;
	wr.wr.ud.remote_qkey = 0x11;
	assert_int_equal(hw_post_send(u1, &wr, &bad), 0);
	fx_wait(f->scq, &wc, 3000);
	enum ibv_wc_status st = wc.status;
	fx_wait(f->rcq, &wc, 3000);
	hw_destroy_qp(u1);
	hw_destroy_qp(u2);
	hw_destroy_ah(ah);
	assert_int_equal(st, IBV_WC_SUCCESS);
}

/* create_qp_max_wr_refused */
static void create_qp_at_max_qp_wr(void **state)
{
	struct fx *f = *state;
	struct ibv_device_attr da;
	assert_int_equal(hw_query_device(f->ctx, &da), 0);
	struct ibv_qp_init_attr init = {
	    .send_cq = f->scq,
	    .recv_cq = f->scq,
	    .qp_type = IBV_QPT_RC,
	    .cap = {.max_send_wr = da.max_qp_wr, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp *q = hw_create_qp(f->pd, &init);
	assert_non_null(q);
	hw_destroy_qp(q);
}

/* flush_recv_wrong_wr_id */
static void flushed_receives_keep_their_wr_ids(void **state)
{
	struct fx *f = *state;
	struct ibv_wc wc;
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
	assert_int_equal(fx_post_recv(f->b, 11, f->bbuf, 64, f->bmr->lkey), 0);
	assert_int_equal(fx_post_recv(f->b, 12, f->bbuf + 64, 64, f->bmr->lkey), 0);
	assert_int_equal(hw_modify_qp(f->b, &a, IBV_QP_STATE), 0);
	fx_wait(f->rcq, &wc, 3000);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(wc.wr_id, 11);
	fx_wait(f->rcq, &wc, 3000);
	assert_int_equal(wc.wr_id, 12);
}

/* ibv_dealloc_pd refuses (EBUSY) while an MR, MW, QP or AH lives on the PD (as the kernel does). */
static void dealloc_pd_in_use_is_busy(void **state)
{
	struct fx *f = *state;
	struct ibv_pd *pd = hw_alloc_pd(f->ctx);
	struct ibv_ah_attr aa = {.is_global = 1, .port_num = 1};
	struct ibv_mr *mr;
	struct ibv_mw *mw;
	struct ibv_qp *qp;
	struct ibv_ah *ah;

	assert_non_null(pd);
	assert_int_equal(hw_query_gid(f->ctx, 1, 0, &aa.grh.dgid), 0);
	mr = hw_reg_mr(pd, f->abuf, 64, IBV_ACCESS_LOCAL_WRITE);
	mw = hw_alloc_mw(pd, IBV_MW_TYPE_2);
	qp = fx_qp(pd, f->scq, IBV_QPT_RC, 1);
	ah = hw_create_ah(pd, &aa);
	assert_non_null(mr);
	assert_non_null(mw);
	assert_non_null(qp);
	assert_non_null(ah);
	assert_int_equal(hw_dealloc_pd(pd), EBUSY);
	assert_int_equal(hw_dereg_mr(mr), 0);
	assert_int_equal(hw_dealloc_pd(pd), EBUSY);
	assert_int_equal(hw_dealloc_mw(mw), 0);
	assert_int_equal(hw_dealloc_pd(pd), EBUSY);
	assert_int_equal(hw_destroy_qp(qp), 0);
	assert_int_equal(hw_dealloc_pd(pd), EBUSY);
	assert_int_equal(hw_destroy_ah(ah), 0);
	assert_int_equal(hw_dealloc_pd(pd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(n) cmocka_unit_test_setup_teardown(n, fx_setup, fx_teardown)
	    T(write_with_imm_sender_sees_rdma_write),
	    T(receive_lands_at_its_sge_address),
	    T(send_gathers_every_sge),
	    T(zero_length_receive_sge_is_not_checked),
	    T(bad_wr_names_the_failing_wr),
	    T(post_send_in_rtr_is_refused),
	    T(inline_of_exactly_max_inline_data),
	    T(rts_to_rts_keeps_the_send_psn),
	    T(reset_of_one_qp_keeps_others_completions),
	    T(cq_event_carries_cq_context),
	    T(sqd_still_receives),
	    T(sqd_drains_a_send_waiting_on_rnr),
	    T(retry_cnt_is_stored),
	    T(ud_send_of_exactly_the_mtu),
	    T(create_qp_at_max_qp_wr),
	    T(flushed_receives_keep_their_wr_ids),

	    T(dealloc_pd_in_use_is_busy),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
