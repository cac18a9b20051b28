/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Soft device: limits, shared NIC, MR rules, CQ, QP state machine and in-process data movement. */
#include "tests/unit/soft_fixture.h"

static void device_limits_are_reported(void **state)
{
	struct fx *f = *state;
	struct ibv_device_attr a;
	struct ibv_port_attr p;
	union ibv_gid gid, gid1;

	assert_int_equal(hw_query_device(f->ctx, &a), 0);
	assert_int_equal(a.max_qp, 1024);
	assert_int_equal(a.max_qp_wr, 4096);
	assert_int_equal(a.max_sge, 16);
	assert_int_equal(a.max_cqe, 65536);
	assert_int_equal(a.max_mr, 4096);
	assert_int_equal(a.max_mw, 4096);
	assert_int_equal(a.atomic_cap, IBV_ATOMIC_HCA);
	assert_true(a.device_cap_flags & IBV_DEVICE_MEM_WINDOW);
	assert_true(a.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	assert_int_equal(hw_query_port(f->ctx, 1, &p), 0);
	assert_int_equal(p.state, IBV_PORT_ACTIVE);
	assert_int_equal(p.link_layer, IBV_LINK_LAYER_ETHERNET);
	assert_int_equal(hw_query_gid(f->ctx, 1, 0, &gid), 0);
	assert_int_equal(gid.raw[0], 0xfe);
	assert_int_equal(gid.raw[1], 0x80);
	assert_int_equal(gid.raw[8], 127); /* default 127.0.0.1 */
	assert_int_not_equal(gid.raw[12] << 8 | gid.raw[13], 0);
	assert_int_equal(p.gid_tbl_len, 2);
	/* Index 1: the same address and port, another tag (through the wire), then no more. */
	assert_int_equal(hw_query_gid(f->ctx, 1, 1, &gid1), 0);
	assert_memory_equal(gid1.raw, gid.raw, 15);
	assert_int_not_equal(gid1.raw[15], gid.raw[15]);
	assert_int_not_equal(hw_query_gid(f->ctx, 1, 2, &gid1), 0);
}

static void contexts_share_one_nic(void **state)
{
	struct fx *f = *state;
	struct ibv_context *ctx2 = hw_open_device("soft0", NULL);
	union ibv_gid g1, g2;
	struct ibv_pd *pd2;
	struct ibv_cq *cq2;
	struct ibv_qp *q2;
	uint8_t *buf = calloc(1, 4096);
	struct ibv_mr *mr2;
	struct ibv_wc wc;

	assert_non_null(ctx2);
	hw_query_gid(f->ctx, 1, 0, &g1);
	hw_query_gid(ctx2, 1, 0, &g2);
	assert_memory_equal(g1.raw, g2.raw, 16);
	pd2 = hw_alloc_pd(ctx2);
	cq2 = hw_create_cq(ctx2, 16, NULL, NULL, 0);
	q2 = fx_qp(pd2, cq2, IBV_QPT_RC, 1);
	mr2 = hw_reg_mr(pd2, buf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(mr2);
	/* Reconnect f->a to q2 (a QP of the other context) and WRITE into mr2. */
	struct ibv_qp_attr r = { .qp_state = IBV_QPS_RESET };

	assert_int_equal(hw_modify_qp(f->a, &r, IBV_QP_STATE), 0);
	fx_rc_to_rts(f->a, q2->qp_num, &g1, 8, 3, 3, 1);
	fx_rc_to_rts(q2, f->a->qp_num, &g1, 8, 3, 3, 1);
	memcpy(f->abuf, "shared nic", 11);
	assert_int_equal(fx_post(f->a, IBV_WR_RDMA_WRITE, 5, f->abuf, 11, f->amr->lkey, (uintptr_t)buf, mr2->rkey), 0);
	fx_wait(f->scq, &wc, 2000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_string_equal((char *)buf, "shared nic");
	hw_destroy_qp(q2);
	hw_dereg_mr(mr2);
	hw_destroy_cq(cq2);
	hw_dealloc_pd(pd2);
	hw_close_device(ctx2);
	free(buf);
}

static void mr_access_rules(void **state)
{
	struct fx *f = *state;
	struct ibv_mr *mr, *mr2;

	errno = 0;
	assert_null(hw_reg_mr(f->pd, f->abuf, 64, IBV_ACCESS_REMOTE_WRITE));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(hw_reg_mr(f->pd, f->abuf, 64, IBV_ACCESS_REMOTE_ATOMIC));
	assert_int_equal(errno, EINVAL);
	uint32_t key;

	mr = hw_reg_mr(f->pd, f->abuf, 64, IBV_ACCESS_REMOTE_READ);
	assert_non_null(mr);
	assert_int_equal(mr->lkey, mr->rkey);
	key = mr->lkey;
	assert_int_equal(hw_dereg_mr(mr), 0);
	/*
	 * The same slot comes back with a different key byte (it starts at a
	 * random value per process, so 0 is as good as any other).
	 */
	mr2 = hw_reg_mr(f->pd, f->abuf, 64, IBV_ACCESS_REMOTE_READ);
	assert_non_null(mr2);
	assert_int_equal(mr2->lkey >> 8, key >> 8);
	assert_int_not_equal(mr2->lkey & 0xff, key & 0xff);
	assert_int_equal(hw_dereg_mr(mr2), 0);
}

static void qp_state_machine_masks(void **state)
{
	struct fx *f = *state;
	struct ibv_qp *qp = fx_qp(f->pd, f->scq, IBV_QPT_RC, 0);
	struct ibv_qp *ud = fx_qp(f->pd, f->scq, IBV_QPT_UD, 0);
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_qp_init_attr init;

	assert_non_null(qp);
	/* RESET->INIT needs ACCESS_FLAGS on RC. */
	assert_int_equal(hw_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT), EINVAL);
	/* QKEY is not allowed on RC. */
	assert_int_equal(hw_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS |
						      IBV_QP_QKEY),
			 EINVAL);
	/* RESET->RTR is not a transition. */
	a.qp_state = IBV_QPS_RTR;
	assert_int_equal(hw_modify_qp(qp, &a, IBV_QP_STATE), EINVAL);
	a.qp_state = IBV_QPS_INIT;
	assert_int_equal(hw_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
	/* INIT->RTR without DEST_QPN is refused. */
	a.qp_state = IBV_QPS_RTR;
	assert_int_equal(hw_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_RQ_PSN |
						      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
			 EINVAL);
	/* Bad port value. */
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 2;
	assert_int_equal(hw_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT), EINVAL);
	assert_int_equal(hw_query_qp(qp, &a, IBV_QP_STATE, &init), 0);
	assert_int_equal(a.qp_state, IBV_QPS_INIT);
	/* Posting a send before RTS is EINVAL; any state can go to ERR, then RESET. */
	assert_int_equal(fx_post(qp, IBV_WR_SEND, 1, f->abuf, 4, f->amr->lkey, 0, 0), EINVAL);
	a.qp_state = IBV_QPS_ERR;
	assert_int_equal(hw_modify_qp(qp, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_RESET;
	assert_int_equal(hw_modify_qp(qp, &a, IBV_QP_STATE), 0);

	/* UD: RESET->INIT needs QKEY, not ACCESS_FLAGS. */
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	assert_int_equal(hw_modify_qp(ud, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
			 EINVAL);
	fx_ud_to_rts(ud, 0x11111111);
	/* RTS->SQD->RTS; SQD notifies when asked. */
	a.qp_state = IBV_QPS_SQD;
	a.en_sqd_async_notify = 1;
	assert_int_equal(hw_modify_qp(ud, &a, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY), 0);
	a.qp_state = IBV_QPS_RTS;
	assert_int_equal(hw_modify_qp(ud, &a, IBV_QP_STATE), 0);
	/* CUR_STATE must match. */
	a.cur_qp_state = IBV_QPS_RTR;
	assert_int_equal(hw_modify_qp(ud, &a, IBV_QP_STATE | IBV_QP_CUR_STATE), EINVAL);
	assert_int_equal(hw_destroy_qp(qp), 0);
	assert_int_equal(hw_destroy_qp(ud), 0);
}

static void qp_caps_checked(void **state)
{
	struct fx *f = *state;
	struct ibv_qp_init_attr init = { .send_cq = f->scq, .recv_cq = f->scq, .qp_type = IBV_QPT_RC,
					 .cap = { .max_send_wr = 4097, .max_recv_wr = 1, .max_send_sge = 1,
						  .max_recv_sge = 1 } };

	errno = 0;
	assert_null(hw_create_qp(f->pd, &init));
	assert_int_equal(errno, EINVAL);
	init.cap.max_send_wr = 1;
	init.cap.max_send_sge = 17;
	assert_null(hw_create_qp(f->pd, &init));
	init.cap.max_send_sge = 1;
	init.qp_type = IBV_QPT_RAW_PACKET;
	assert_null(hw_create_qp(f->pd, &init));
}

static void send_recv_in_process(void **state)
{
	struct fx *f = *state;
	struct ibv_wc wc;

	memcpy(f->abuf, "hello, soft nic", 16);
	assert_int_equal(fx_post_recv(f->b, 42, f->bbuf, 64, f->bmr->lkey), 0);
	assert_int_equal(fx_post(f->a, IBV_WR_SEND, 7, f->abuf, 16, f->amr->lkey, 0, 0), 0);
	fx_wait(f->scq, &wc, 2000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_SEND);
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(wc.qp_num, f->a->qp_num);
	fx_wait(f->rcq, &wc, 2000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.wr_id, 42);
	assert_int_equal(wc.byte_len, 16);
	assert_int_equal(wc.src_qp, f->a->qp_num);
	assert_int_equal(wc.qp_num, f->b->qp_num);
	assert_string_equal((char *)f->bbuf, "hello, soft nic");
}

static void write_read_atomics_in_process(void **state)
{
	struct fx *f = *state;
	struct ibv_wc wc;
	uint64_t *target = (uint64_t *)(f->bbuf + 4096);

	for (int i = 0; i < FX_BUF; i++)
		f->abuf[i] = (uint8_t)(i * 7);
	assert_int_equal(fx_post(f->a, IBV_WR_RDMA_WRITE, 1, f->abuf, FX_BUF, f->amr->lkey, (uintptr_t)f->bbuf,
				 f->bmr->rkey),
			 0);
	fx_wait(f->scq, &wc, 2000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_WRITE);
	assert_memory_equal(f->abuf, f->bbuf, FX_BUF);

	memset(f->abuf, 0, 4096);
	memcpy(f->bbuf + 100, "read me", 8);
	assert_int_equal(fx_post(f->a, IBV_WR_RDMA_READ, 2, f->abuf, 8, f->amr->lkey, (uintptr_t)(f->bbuf + 100),
				 f->bmr->rkey),
			 0);
	fx_wait(f->scq, &wc, 2000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_READ);
	assert_int_equal(wc.byte_len, 8);
	assert_string_equal((char *)f->abuf, "read me");

	*target = 40;
	struct ibv_sge sge = { .addr = (uintptr_t)f->abuf, .length = 8, .lkey = f->amr->lkey };
	struct ibv_send_wr wr = { .wr_id = 3, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD },
			   *bad;

	wr.wr.atomic.remote_addr = (uintptr_t)target;
	wr.wr.atomic.rkey = f->bmr->rkey;
	wr.wr.atomic.compare_add = 2;
	assert_int_equal(hw_post_send(f->a, &wr, &bad), 0);
	fx_wait(f->scq, &wc, 2000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_FETCH_ADD);
	assert_int_equal(*(uint64_t *)f->abuf, 40);
	assert_int_equal(*target, 42);

	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.compare_add = 42;
	wr.wr.atomic.swap = 99;
	assert_int_equal(hw_post_send(f->a, &wr, &bad), 0);
	fx_wait(f->scq, &wc, 2000);
	assert_int_equal(wc.opcode, IBV_WC_COMP_SWAP);
	assert_int_equal(*(uint64_t *)f->abuf, 42);
	assert_int_equal(*target, 99);
	/* A failed compare leaves the target and returns the current value. */
	assert_int_equal(hw_post_send(f->a, &wr, &bad), 0);
	fx_wait(f->scq, &wc, 2000);
	assert_int_equal(*(uint64_t *)f->abuf, 99);
	assert_int_equal(*target, 99);
}

static void libibverbs_inline_helpers_work(void **state)
{
	struct fx *f = *state;
	struct ibv_wc wc;
	struct ibv_sge sge = { .addr = (uintptr_t)f->abuf, .length = 4, .lkey = f->amr->lkey };
	struct ibv_send_wr wr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE }, *bad;
	uint64_t end = fx_now_ms() + 2000;
	int n;

	memcpy(f->abuf, "ibv", 4);
	wr.wr.rdma.remote_addr = (uintptr_t)f->bbuf;
	wr.wr.rdma.rkey = f->bmr->rkey;
	assert_int_equal(ibv_post_send(f->a, &wr, &bad), 0);
	while ((n = ibv_poll_cq(f->scq, 1, &wc)) == 0 && fx_now_ms() < end)
		;
	assert_int_equal(n, 1);
	assert_int_equal(wc.wr_id, 9);
	assert_string_equal((char *)f->bbuf, "ibv");
}

static void cq_overflow_raises_async_event(void **state)
{
	struct fx *f = *state;
	struct ibv_cq *small = hw_create_cq(f->ctx, 2, NULL, NULL, 0);
	struct ibv_qp *q = fx_qp(f->pd, small, IBV_QPT_RC, 1);
	struct ibv_async_event ev;
	struct ibv_wc wc[4];

	assert_non_null(q);
	fx_rc_to_rts(q, q->qp_num, NULL, 8, 3, 3, 1);
	for (int i = 0; i < 3; i++)
		assert_int_equal(fx_post(q, IBV_WR_RDMA_WRITE, (uint64_t)i, f->abuf, 8, f->amr->lkey,
					 (uintptr_t)f->bbuf, f->bmr->rkey),
				 0);
	assert_int_equal(hw_get_async_event(f->ctx, &ev), 0); /* blocks until the overflow */
	assert_int_equal(ev.event_type, IBV_EVENT_CQ_ERR);
	assert_ptr_equal(ev.element.cq, small);
	hw_ack_async_event(f->ctx, &ev);
	assert_int_equal(hw_poll_cq(small, 4, wc), 2);
	/* A CQ in use by a QP cannot be destroyed. */
	assert_int_equal(hw_destroy_cq(small), EBUSY);
	hw_destroy_qp(q);
	assert_int_equal(hw_destroy_cq(small), 0);
	errno = 0;
	assert_null(hw_create_cq(f->ctx, 65537, NULL, NULL, 0));
	assert_int_equal(errno, EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(device_limits_are_reported, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(contexts_share_one_nic, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(mr_access_rules, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(qp_state_machine_masks, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(qp_caps_checked, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(send_recv_in_process, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(write_read_atomics_in_process, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(libibverbs_inline_helpers_work, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(cq_overflow_raises_async_event, fx_setup, fx_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
