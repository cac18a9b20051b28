/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Soft device: every operation and every error status, each from a test that expects exactly it. */
#include "tests/unit/soft_fixture.h"

#include <poll.h>

static void expect_send_status(struct fx *f, enum ibv_wc_status st)
{
	struct ibv_wc wc;

	fx_wait(f->scq, &wc, 3000);
	assert_int_equal(wc.status, st);
}

static void send_with_imm_and_write_with_imm(void **state)
{
	struct fx *f = *state;
	struct ibv_sge sge = {.addr = (uintptr_t)f->abuf, .length = 8, .lkey = f->amr->lkey};
	struct ibv_send_wr wr = {.wr_id = 1,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND_WITH_IMM,
				 .imm_data = htobe32(0xabcd)},
			   *bad;
	struct ibv_wc wc;

	memcpy(f->abuf, "immdata", 8);
	assert_int_equal(fx_post_recv(f->b, 10, f->bbuf, 64, f->bmr->lkey), 0);
	assert_int_equal(hw_post_send(f->a, &wr, &bad), 0);
	fx_wait(f->rcq, &wc, 2000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
	assert_int_equal(be32toh(wc.imm_data), 0xabcd);
	assert_string_equal((char *)f->bbuf, "immdata");

	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.imm_data = htobe32(77);
	wr.wr.rdma.remote_addr = (uintptr_t)(f->bbuf + 1000);
	wr.wr.rdma.rkey = f->bmr->rkey;
	assert_int_equal(fx_post_recv(f->b, 11, NULL, 0, 0), 0);
	assert_int_equal(hw_post_send(f->a, &wr, &bad), 0);
	fx_wait(f->rcq, &wc, 2000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(wc.wr_id, 11);
	assert_int_equal(wc.byte_len, 8);
	assert_int_equal(be32toh(wc.imm_data), 77);
	assert_string_equal((char *)f->bbuf + 1000, "immdata");
	expect_send_status(f, IBV_WC_SUCCESS);
	expect_send_status(f, IBV_WC_SUCCESS);
}

static void multi_sge_and_inline(void **state)
{
	struct fx *f = *state;
	struct ibv_sge sge[3] = {
	    {.addr = (uintptr_t)f->abuf, .length = 3, .lkey = f->amr->lkey},
	    {.addr = (uintptr_t)f->abuf + 100, .length = 4, .lkey = f->amr->lkey},
	    {.addr = (uintptr_t)f->abuf + 200, .length = 5, .lkey = f->amr->lkey},
	};
	struct ibv_sge rsge[2] = {
	    {.addr = (uintptr_t)f->bbuf, .length = 5, .lkey = f->bmr->lkey},
	    {.addr = (uintptr_t)f->bbuf + 500, .length = 20, .lkey = f->bmr->lkey},
	};
	struct ibv_recv_wr rwr = {.wr_id = 5, .sg_list = rsge, .num_sge = 2}, *rbad;
	struct ibv_send_wr wr = {.wr_id = 1, .sg_list = sge, .num_sge = 3, .opcode = IBV_WR_SEND}, *bad;
	struct ibv_wc wc;
	char stack[32] = "inline!";
	struct ibv_sge isge = {.addr = (uintptr_t)stack, .length = 8, .lkey = 0};

	memcpy(f->abuf, "abc", 3);
	memcpy(f->abuf + 100, "defg", 4);
	memcpy(f->abuf + 200, "hijkl", 5);
	assert_int_equal(hw_post_recv(f->b, &rwr, &rbad), 0);
	assert_int_equal(hw_post_send(f->a, &wr, &bad), 0);
	fx_wait(f->rcq, &wc, 2000);
	assert_int_equal(wc.byte_len, 12);
	assert_memory_equal(f->bbuf, "abcde", 5);
	assert_memory_equal(f->bbuf + 500, "fghijkl", 7);

	/* Inline: the data is copied at post time, no lkey needed. */
	wr.sg_list = &isge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_INLINE;
	assert_int_equal(fx_post_recv(f->b, 6, f->bbuf, 64, f->bmr->lkey), 0);
	assert_int_equal(hw_post_send(f->a, &wr, &bad), 0);
	memset(stack, 'X', sizeof(stack));
	fx_wait(f->rcq, &wc, 2000);
	assert_string_equal((char *)f->bbuf, "inline!");
	/* Inline beyond the QP's capacity is refused at post time. */
	isge.length = 300;
	char big[300];

	isge.addr = (uintptr_t)big;
	assert_int_equal(hw_post_send(f->a, &wr, &bad), EINVAL);
	assert_ptr_equal(bad, &wr);
	/* More SGEs than max_send_sge. */
	wr.send_flags = 0;
	wr.num_sge = 5;
	assert_int_equal(hw_post_send(f->a, &wr, &bad), EINVAL);
}

static void unsignaled_and_full_queue(void **state)
{
	struct fx *f = *state;
	struct ibv_send_wr wr[70], *bad;
	struct ibv_sge sge = {.addr = (uintptr_t)f->abuf, .length = 8, .lkey = f->amr->lkey};
	struct ibv_wc wc;
	struct ibv_qp *q;
	struct ibv_cq *cq = hw_create_cq(f->ctx, 256, NULL, NULL, 0);
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_SQD};

	q = fx_qp(f->pd, cq, IBV_QPT_RC, 0);
	fx_rc_to_rts(q, q->qp_num, NULL, 8, 3, 3, 1);
	/* Unsignaled: no completion; the signaled one after it completes. */
	memset(wr, 0, sizeof(wr));
	wr[0].opcode = wr[1].opcode = IBV_WR_RDMA_WRITE;
	wr[0].sg_list = wr[1].sg_list = &sge;
	wr[0].num_sge = wr[1].num_sge = 1;
	wr[0].wr.rdma.remote_addr = wr[1].wr.rdma.remote_addr = (uintptr_t)f->bbuf;
	wr[0].wr.rdma.rkey = wr[1].wr.rdma.rkey = f->bmr->rkey;
	wr[1].wr_id = 2;
	wr[1].send_flags = IBV_SEND_SIGNALED;
	wr[0].next = &wr[1];
	assert_int_equal(hw_post_send(q, &wr[0], &bad), 0);
	fx_wait(cq, &wc, 2000);
	assert_int_equal(wc.wr_id, 2);
	fx_none(cq, 20);
	/* Hold the send queue in SQD so it fills: the 65th WR is ENOMEM with bad_wr on it. */
	assert_int_equal(hw_modify_qp(q, &a, IBV_QP_STATE), 0);
	for (int i = 0; i < 70; i++) {
		wr[i] = wr[0];
		wr[i].wr_id = (uint64_t)i;
		wr[i].next = i + 1 < 70 ? &wr[i + 1] : NULL;
	}
	assert_int_equal(hw_post_send(q, &wr[0], &bad), ENOMEM);
	assert_ptr_equal(bad, &wr[64]);
	/* Moving to ERR flushes every outstanding WR, signaled or not. */
	a.qp_state = IBV_QPS_ERR;
	assert_int_equal(hw_modify_qp(q, &a, IBV_QP_STATE), 0);
	for (int i = 0; i < 64; i++) {
		fx_wait(cq, &wc, 2000);
		assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
		assert_int_equal(wc.wr_id, (uint64_t)i);
	}
	hw_destroy_qp(q);
	hw_destroy_cq(cq);
}

static void flush_receive_queue(void **state)
{
	struct fx *f = *state;
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
	struct ibv_wc wc;

	assert_int_equal(fx_post_recv(f->b, 1, f->bbuf, 64, f->bmr->lkey), 0);
	assert_int_equal(fx_post_recv(f->b, 2, f->bbuf, 64, f->bmr->lkey), 0);
	assert_int_equal(hw_modify_qp(f->b, &a, IBV_QP_STATE), 0);
	fx_wait(f->rcq, &wc, 1000);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(wc.wr_id, 1);
	fx_wait(f->rcq, &wc, 1000);
	assert_int_equal(wc.wr_id, 2);
	/* Posted to a QP in ERR: flushed at once. */
	assert_int_equal(fx_post_recv(f->b, 3, f->bbuf, 64, f->bmr->lkey), 0);
	fx_wait(f->rcq, &wc, 1000);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(wc.wr_id, 3);
}

static void loc_len_err_on_short_receive(void **state)
{
	struct fx *f = *state;
	struct ibv_wc wc;

	assert_int_equal(fx_post_recv(f->b, 1, f->bbuf, 4, f->bmr->lkey), 0);
	assert_int_equal(fx_post(f->a, IBV_WR_SEND, 1, f->abuf, 16, f->amr->lkey, 0, 0), 0);
	fx_wait(f->rcq, &wc, 2000);
	assert_int_equal(wc.status, IBV_WC_LOC_LEN_ERR);
	expect_send_status(f, IBV_WC_REM_INV_REQ_ERR);
	expect_state(f->a, IBV_QPS_ERR);
	expect_state(f->b, IBV_QPS_ERR);
}

static void loc_prot_err_on_bad_lkey(void **state)
{
	struct fx *f = *state;

	assert_int_equal(fx_post(f->a, IBV_WR_RDMA_WRITE, 1, f->abuf, 16, f->amr->lkey + 1,
				 (uintptr_t)f->bbuf, f->bmr->rkey),
			 0);
	expect_send_status(f, IBV_WC_LOC_PROT_ERR);
	expect_state(f->a, IBV_QPS_ERR);
}

static void loc_prot_err_out_of_bounds(void **state)
{
	struct fx *f = *state;

	assert_int_equal(fx_post(f->a, IBV_WR_RDMA_WRITE, 1, f->abuf + FX_BUF - 8, 16, f->amr->lkey,
				 (uintptr_t)f->bbuf, f->bmr->rkey),
			 0);
	expect_send_status(f, IBV_WC_LOC_PROT_ERR);
}

static void rem_access_err_bad_rkey_bounds_access(void **state)
{
	struct fx *f = *state;
	struct ibv_mr *ro = hw_reg_mr(f->pd, f->bbuf, 4096, IBV_ACCESS_REMOTE_READ);

	/* Writing into a read-only MR. */
	assert_int_equal(
	    fx_post(f->a, IBV_WR_RDMA_WRITE, 1, f->abuf, 16, f->amr->lkey, (uintptr_t)f->bbuf, ro->rkey), 0);
	expect_send_status(f, IBV_WC_REM_ACCESS_ERR);
	expect_state(f->a, IBV_QPS_ERR);
	expect_state(f->b, IBV_QPS_ERR);
	hw_dereg_mr(ro);
}

static void rem_access_err_out_of_bounds(void **state)
{
	struct fx *f = *state;

	assert_int_equal(fx_post(f->a, IBV_WR_RDMA_READ, 1, f->abuf, 16, f->amr->lkey,
				 (uintptr_t)f->bbuf + FX_BUF - 8, f->bmr->rkey),
			 0);
	expect_send_status(f, IBV_WC_REM_ACCESS_ERR);
}

static void rem_access_err_other_pd(void **state)
{
	struct fx *f = *state;
	struct ibv_pd *pd2 = hw_alloc_pd(f->ctx);
	struct ibv_mr *mr2 = hw_reg_mr(pd2, f->bbuf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);

	assert_int_equal(
	    fx_post(f->a, IBV_WR_RDMA_WRITE, 1, f->abuf, 16, f->amr->lkey, (uintptr_t)f->bbuf, mr2->rkey), 0);
	expect_send_status(f, IBV_WC_REM_ACCESS_ERR);
	hw_dereg_mr(mr2);
	hw_dealloc_pd(pd2);
}

static void rem_inv_req_err_misaligned_atomic(void **state)
{
	struct fx *f = *state;
	struct ibv_sge sge = {.addr = (uintptr_t)f->abuf, .length = 8, .lkey = f->amr->lkey};
	struct ibv_send_wr wr = {.wr_id = 1,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;

	wr.wr.atomic.remote_addr = (uintptr_t)f->bbuf + 4;
	wr.wr.atomic.rkey = f->bmr->rkey;
	assert_int_equal(hw_post_send(f->a, &wr, &bad), 0);
	expect_send_status(f, IBV_WC_REM_INV_REQ_ERR);
}

static void rem_inv_req_err_qp_without_remote_write(void **state)
{
	struct fx *f = *state;
	struct ibv_qp_attr a = {.qp_access_flags = IBV_ACCESS_REMOTE_READ};

	assert_int_equal(hw_modify_qp(f->b, &a, IBV_QP_ACCESS_FLAGS), 0);
	assert_int_equal(
	    fx_post(f->a, IBV_WR_RDMA_WRITE, 1, f->abuf, 8, f->amr->lkey, (uintptr_t)f->bbuf, f->bmr->rkey),
	    0);
	expect_send_status(f, IBV_WC_REM_INV_REQ_ERR);
}

static void atomic_needs_remote_atomic_on_mr(void **state)
{
	struct fx *f = *state;
	struct ibv_mr *mr = hw_reg_mr(f->pd, f->bbuf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	struct ibv_sge sge = {.addr = (uintptr_t)f->abuf, .length = 8, .lkey = f->amr->lkey};
	struct ibv_send_wr wr = {.wr_id = 1,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_ATOMIC_CMP_AND_SWP},
			   *bad;

	wr.wr.atomic.remote_addr = (uintptr_t)f->bbuf;
	wr.wr.atomic.rkey = mr->rkey;
	assert_int_equal(hw_post_send(f->a, &wr, &bad), 0);
	expect_send_status(f, IBV_WC_REM_ACCESS_ERR);
	hw_dereg_mr(mr);
}

static void rem_op_err_bad_receive_lkey(void **state)
{
	struct fx *f = *state;
	struct ibv_wc wc;

	assert_int_equal(fx_post_recv(f->b, 1, f->bbuf, 64, 0xdead00), 0);
	assert_int_equal(fx_post(f->a, IBV_WR_SEND, 1, f->abuf, 16, f->amr->lkey, 0, 0), 0);
	fx_wait(f->rcq, &wc, 2000);
	assert_int_equal(wc.status, IBV_WC_LOC_PROT_ERR);
	expect_send_status(f, IBV_WC_REM_OP_ERR);
}

static void rnr_retry_exceeded(void **state)
{
	struct fx *f = *state;
	uint64_t start = fx_now_ms();

	/* rnr_retry 3, min_rnr_timer 1 (10 us): fails fast when no receive is ever posted. */
	assert_int_equal(fx_post(f->a, IBV_WR_SEND, 1, f->abuf, 16, f->amr->lkey, 0, 0), 0);
	expect_send_status(f, IBV_WC_RNR_RETRY_EXC_ERR);
	assert_true(fx_now_ms() - start < 2000);
	expect_state(f->a, IBV_QPS_ERR);
}

static void rnr_retry_forever_then_delivered(void **state)
{
	struct fx *f = *state;
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RESET};
	struct ibv_wc wc;

	assert_int_equal(hw_modify_qp(f->a, &a, IBV_QP_STATE), 0);
	fx_rc_to_rts(f->a, f->b->qp_num, NULL, 8, 3, 7, 1);
	/* b expects the PSN it was given; a restarts at the same sq_psn. */
	assert_int_equal(fx_post(f->a, IBV_WR_SEND, 1, f->abuf, 16, f->amr->lkey, 0, 0), 0);
	fx_none(f->scq, 50); /* well past 3 retries of 10 us: 7 retries forever */
	assert_int_equal(fx_post_recv(f->b, 9, f->bbuf, 64, f->bmr->lkey), 0);
	expect_send_status(f, IBV_WC_SUCCESS);
	fx_wait(f->rcq, &wc, 2000);
	assert_int_equal(wc.wr_id, 9);
}

static void retry_exceeded_no_such_qp(void **state)
{
	struct fx *f = *state;
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RESET};

	assert_int_equal(hw_modify_qp(f->a, &a, IBV_QP_STATE), 0);
	/* timeout 8 (~1 ms) x retry_cnt 2 */
	fx_rc_to_rts(f->a, 0xfffff, NULL, 8, 2, 3, 1);
	assert_int_equal(
	    fx_post(f->a, IBV_WR_RDMA_WRITE, 1, f->abuf, 16, f->amr->lkey, (uintptr_t)f->bbuf, f->bmr->rkey),
	    0);
	expect_send_status(f, IBV_WC_RETRY_EXC_ERR);
	expect_state(f->a, IBV_QPS_ERR);
}

static void post_bind(struct ibv_qp *qp, struct ibv_mw *mw, uint32_t rkey, struct ibv_mr *mr, void *addr,
		      uint64_t len, int access)
{
	struct ibv_send_wr wr = {.wr_id = 77, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED},
			   *bad;

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = (uintptr_t)addr;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = (unsigned)access;
	assert_int_equal(hw_post_send(qp, &wr, &bad), 0);
}

static void mw_type2_bind_use_invalidate(void **state)
{
	struct fx *f = *state;
	struct ibv_mw *mw = hw_alloc_mw(f->pd, IBV_MW_TYPE_2);
	uint32_t rkey;
	struct ibv_wc wc;
	struct ibv_send_wr wr = {.wr_id = 3, .opcode = IBV_WR_LOCAL_INV, .send_flags = IBV_SEND_SIGNALED},
			   *bad;

	assert_non_null(mw);
	rkey = ibv_inc_rkey(mw->rkey);
	/* b binds a window on its buffer: a may write into it through the window's rkey. */
	post_bind(f->b, mw, rkey, f->bmr, f->bbuf + 256, 256, IBV_ACCESS_REMOTE_WRITE);
	fx_wait(f->rcq, &wc, 2000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_BIND_MW);
	/* An MR with bound windows cannot be deregistered. */
	assert_int_equal(hw_dereg_mr(f->bmr), EBUSY);
	memcpy(f->abuf, "via window", 11);
	assert_int_equal(
	    fx_post(f->a, IBV_WR_RDMA_WRITE, 1, f->abuf, 11, f->amr->lkey, (uintptr_t)f->bbuf + 300, rkey),
	    0);
	expect_send_status(f, IBV_WC_SUCCESS);
	assert_string_equal((char *)f->bbuf + 300, "via window");
	/* b invalidates locally; the window's rkey no longer grants access. */
	wr.invalidate_rkey = rkey;
	assert_int_equal(hw_post_send(f->b, &wr, &bad), 0);
	fx_wait(f->rcq, &wc, 2000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_LOCAL_INV);
	assert_int_equal(
	    fx_post(f->a, IBV_WR_RDMA_WRITE, 2, f->abuf, 11, f->amr->lkey, (uintptr_t)f->bbuf + 300, rkey),
	    0);
	expect_send_status(f, IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(hw_dealloc_mw(mw), 0);
}

static void mw_type2_send_with_inv(void **state)
{
	struct fx *f = *state;
	struct ibv_mw *mw = hw_alloc_mw(f->pd, IBV_MW_TYPE_2);
	uint32_t rkey = ibv_inc_rkey(mw->rkey);
	struct ibv_sge sge = {.addr = (uintptr_t)f->abuf, .length = 4, .lkey = f->amr->lkey};
	struct ibv_send_wr wr = {.wr_id = 1,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND_WITH_INV,
				 .send_flags = IBV_SEND_SIGNALED,
				 .invalidate_rkey = rkey},
			   *bad;
	struct ibv_wc wc;

	post_bind(f->b, mw, rkey, f->bmr, f->bbuf, 4096, IBV_ACCESS_REMOTE_READ);
	fx_wait(f->rcq, &wc, 2000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(fx_post_recv(f->b, 5, f->bbuf + 8192, 64, f->bmr->lkey), 0);
	assert_int_equal(hw_post_send(f->a, &wr, &bad), 0);
	fx_wait(f->rcq, &wc, 2000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_true(wc.wc_flags & IBV_WC_WITH_INV);
	assert_int_equal(wc.invalidated_rkey, rkey);
	expect_send_status(f, IBV_WC_SUCCESS);
	/* The MR is free again, and the rkey is dead. */
	assert_int_equal(
	    fx_post(f->a, IBV_WR_RDMA_READ, 2, f->abuf, 8, f->amr->lkey, (uintptr_t)f->bbuf, rkey), 0);
	expect_send_status(f, IBV_WC_REM_ACCESS_ERR);
	hw_dealloc_mw(mw);
}

static void mw_type1_bind_and_dealloc(void **state)
{
	struct fx *f = *state;
	struct ibv_mw *mw = hw_alloc_mw(f->pd, IBV_MW_TYPE_1);
	struct ibv_mw_bind bind = {.wr_id = 8, .send_flags = IBV_SEND_SIGNALED};
	uint32_t old = mw->rkey;
	struct ibv_wc wc;

	bind.bind_info.mr = f->bmr;
	bind.bind_info.addr = (uintptr_t)f->bbuf;
	bind.bind_info.length = 128;
	bind.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
	/* Through libibverbs' own inline ibv_bind_mw, which calls ctx->ops.bind_mw. */
	assert_int_equal(ibv_bind_mw(f->b, mw, &bind), 0);
	assert_int_equal(mw->rkey, ibv_inc_rkey(old));
	fx_wait(f->rcq, &wc, 2000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 8);
	memcpy(f->bbuf, "type1", 6);
	assert_int_equal(
	    fx_post(f->a, IBV_WR_RDMA_READ, 1, f->abuf, 6, f->amr->lkey, (uintptr_t)f->bbuf, mw->rkey), 0);
	expect_send_status(f, IBV_WC_SUCCESS);
	assert_string_equal((char *)f->abuf, "type1");
	/* Out of the window's range. */
	assert_int_equal(
	    fx_post(f->a, IBV_WR_RDMA_READ, 1, f->abuf, 8, f->amr->lkey, (uintptr_t)f->bbuf + 124, mw->rkey),
	    0);
	expect_send_status(f, IBV_WC_REM_ACCESS_ERR);
	/* Deallocated: the MR can go. */
	assert_int_equal(hw_dealloc_mw(mw), 0);
	struct ibv_mr *again = hw_reg_mr(f->pd, f->bbuf, 64, IBV_ACCESS_LOCAL_WRITE);

	assert_int_equal(hw_dereg_mr(again), 0);
}

static void mw_bind_errors(void **state)
{
	struct fx *f = *state;
	struct ibv_mw *mw = hw_alloc_mw(f->pd, IBV_MW_TYPE_2);
	struct ibv_mr *nobind = hw_reg_mr(f->pd, f->bbuf, 4096, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_wc wc;

	/* The MR lacks IBV_ACCESS_MW_BIND. */
	post_bind(f->b, mw, ibv_inc_rkey(mw->rkey), nobind, f->bbuf, 64, IBV_ACCESS_REMOTE_READ);
	fx_wait(f->rcq, &wc, 2000);
	assert_int_equal(wc.status, IBV_WC_MW_BIND_ERR);
	expect_state(f->b, IBV_QPS_ERR);
	hw_dereg_mr(nobind);
	hw_dealloc_mw(mw);
}

static void mw_bind_err_out_of_range(void **state)
{
	struct fx *f = *state;
	struct ibv_mw *mw = hw_alloc_mw(f->pd, IBV_MW_TYPE_2);
	struct ibv_wc wc;

	post_bind(f->b, mw, ibv_inc_rkey(mw->rkey), f->bmr, f->bbuf + FX_BUF - 10, 64,
		  IBV_ACCESS_REMOTE_READ);
	fx_wait(f->rcq, &wc, 2000);
	assert_int_equal(wc.status, IBV_WC_MW_BIND_ERR);
	hw_dealloc_mw(mw);
}

static void mw_alloc_type_checked(void **state)
{
	struct fx *f = *state;

	errno = 0;
	assert_null(hw_alloc_mw(f->pd, (enum ibv_mw_type)3));
	assert_int_equal(errno, EINVAL);
}

static void ud_send_grh_qkey_and_mtu(void **state)
{
	struct fx *f = *state;
	struct ibv_cq *cq = hw_create_cq(f->ctx, 64, NULL, NULL, 0);
	struct ibv_qp *u1 = fx_qp(f->pd, cq, IBV_QPT_UD, 1), *u2 = fx_qp(f->pd, cq, IBV_QPT_UD, 1);
	struct ibv_ah_attr aa = {.port_num = 1, .is_global = 1};
	struct ibv_ah *ah;
	struct ibv_sge sge = {.addr = (uintptr_t)f->abuf, .length = 32, .lkey = f->amr->lkey};
	struct ibv_send_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND}, *bad;
	struct ibv_wc wc;
	union ibv_gid gid;

	hw_query_gid(f->ctx, 1, 0, &gid);
	aa.grh.dgid = gid;
	ah = hw_create_ah(f->pd, &aa);
	assert_non_null(ah);
	fx_ud_to_rts(u1, 0x1234);
	fx_ud_to_rts(u2, 0x1234);
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = u2->qp_num;
	wr.wr.ud.remote_qkey = 0x1234;
	memcpy(f->abuf, "datagram", 9);
	assert_int_equal(fx_post_recv(u2, 50, f->bbuf, 40 + 64, f->bmr->lkey), 0);
	assert_int_equal(hw_post_send(u1, &wr, &bad), 0);
	for (int i = 0; i < 2; i++) {
		fx_wait(cq, &wc, 2000);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		if (wc.opcode == IBV_WC_RECV) {
			assert_int_equal(wc.byte_len, 40 + 32);
			assert_int_equal(wc.src_qp, u1->qp_num);
			assert_true(wc.wc_flags & IBV_WC_GRH);
			assert_string_equal((char *)f->bbuf + 40, "datagram");
			assert_memory_equal(f->bbuf + 8, gid.raw, 16); /* GRH source GID */
		}
	}
	/* Wrong qkey: silently dropped; no receive consumed. */
	wr.wr.ud.remote_qkey = 0x9999;
	assert_int_equal(hw_post_send(u1, &wr, &bad), 0);
	fx_wait(cq, &wc, 2000);
	assert_int_equal(wc.opcode, IBV_WC_SEND);
	fx_none(cq, 20);
	/* No receive posted: dropped too; the recv posted later does not see it. */
	wr.wr.ud.remote_qkey = 0x1234;
	assert_int_equal(hw_post_send(u1, &wr, &bad), 0);
	fx_wait(cq, &wc, 2000);
	assert_int_equal(wc.opcode, IBV_WC_SEND);
	fx_none(cq, 20);
	/* Over the MTU: the sender's WR fails, the QP goes to SQE. */
	sge.length = 4097;
	assert_int_equal(hw_post_send(u1, &wr, &bad), 0);
	fx_wait(cq, &wc, 2000);
	assert_int_equal(wc.status, IBV_WC_LOC_LEN_ERR);
	expect_state(u1, IBV_QPS_SQE);
	/* RDMA opcodes are not valid on UD. */
	wr.opcode = IBV_WR_RDMA_WRITE;
	assert_int_equal(hw_post_send(u2, &wr, &bad), EINVAL);
	hw_destroy_qp(u1);
	hw_destroy_qp(u2);
	hw_destroy_ah(ah);
	hw_destroy_cq(cq);
}

/*
 * A remote Q_Key with the high bit set is privileged: the sender's own QP
 * Q_Key goes on the wire instead (IBA 10.2.5), and the receiver checks it
 * as any other.  A receive with a bad lkey on UD is a receive-queue error:
 * the QP goes to ERR and its other receives flush.
 */
static void ud_privileged_qkey_and_receive_error(void **state)
{
	struct fx *f = *state;
	struct ibv_cq *cq = hw_create_cq(f->ctx, 64, NULL, NULL, 0);
	struct ibv_qp *u1 = fx_qp(f->pd, cq, IBV_QPT_UD, 1), *same = fx_qp(f->pd, cq, IBV_QPT_UD, 1),
		      *other = fx_qp(f->pd, cq, IBV_QPT_UD, 1);
	struct ibv_ah_attr aa = {.port_num = 1, .is_global = 1};
	struct ibv_sge sge = {.addr = (uintptr_t)f->abuf, .length = 16, .lkey = f->amr->lkey};
	struct ibv_send_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND}, *bad;
	struct ibv_ah *ah;
	struct ibv_wc wc;

	hw_query_gid(f->ctx, 1, 0, &aa.grh.dgid);
	ah = hw_create_ah(f->pd, &aa);
	assert_non_null(ah);
	fx_ud_to_rts(u1, 0x1234);
	fx_ud_to_rts(same, 0x1234);
	fx_ud_to_rts(other, 0x5678);
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qkey = 0x80000000u;
	/* To a QP whose Q_Key is the sender's: delivered. */
	assert_int_equal(fx_post_recv(same, 50, f->bbuf, 40 + 64, f->bmr->lkey), 0);
	wr.wr.ud.remote_qpn = same->qp_num;
	assert_int_equal(hw_post_send(u1, &wr, &bad), 0);
	for (int i = 0; i < 2; i++) {
		fx_wait(cq, &wc, 2000);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
	}
	/* To a QP with another Q_Key: dropped, its receive stays posted. */
	assert_int_equal(fx_post_recv(other, 60, f->bbuf, 40 + 64, f->bmr->lkey), 0);
	wr.wr.ud.remote_qpn = other->qp_num;
	assert_int_equal(hw_post_send(u1, &wr, &bad), 0);
	fx_wait(cq, &wc, 2000);
	assert_int_equal(wc.opcode, IBV_WC_SEND);
	fx_none(cq, 20);
	/* A receive with a bad lkey fails; the QP goes to ERR and the next receive flushes. */
	assert_int_equal(fx_post_recv(same, 70, f->bbuf, 40 + 64, f->bmr->lkey + 1000), 0);
	assert_int_equal(fx_post_recv(same, 71, f->bbuf, 40 + 64, f->bmr->lkey), 0);
	wr.wr.ud.remote_qpn = same->qp_num;
	assert_int_equal(hw_post_send(u1, &wr, &bad), 0);
	for (int i = 0; i < 3; i++) {
		fx_wait(cq, &wc, 2000);
		if (wc.wr_id == 70)
			assert_int_equal(wc.status, IBV_WC_LOC_PROT_ERR);
		else if (wc.wr_id == 71)
			assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
		else
			assert_int_equal(wc.opcode, IBV_WC_SEND);
	}
	expect_state(same, IBV_QPS_ERR);
	fx_none(cq, 20);
	hw_destroy_qp(u1);
	hw_destroy_qp(same);
	hw_destroy_qp(other);
	hw_destroy_ah(ah);
	hw_destroy_cq(cq);
}

static void comp_channel_notifies_through_fd(void **state)
{
	struct fx *f = *state;
	struct ibv_comp_channel *ch = hw_create_comp_channel(f->ctx);
	struct ibv_cq *cq = hw_create_cq(f->ctx, 16, (void *)0x1234, ch, 0);
	struct ibv_qp *q = fx_qp(f->pd, cq, IBV_QPT_RC, 1);
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};
	struct ibv_cq *got;
	void *ctx;
	struct ibv_wc wc;

	fx_rc_to_rts(q, q->qp_num, NULL, 8, 3, 3, 1);
	assert_int_equal(hw_req_notify_cq(cq, 0), 0);
	assert_int_equal(poll(&p, 1, 0), 0);
	assert_int_equal(
	    fx_post(q, IBV_WR_RDMA_WRITE, 1, f->abuf, 8, f->amr->lkey, (uintptr_t)f->bbuf, f->bmr->rkey), 0);
	assert_int_equal(poll(&p, 1, 2000), 1);
	assert_int_equal(hw_get_cq_event(ch, &got, &ctx), 0);
	assert_ptr_equal(got, cq);
	assert_ptr_equal(ctx, (void *)0x1234);
	hw_ack_cq_events(cq, 1);
	fx_wait(cq, &wc, 1000);
	/* Not re-armed: a second completion does not notify. */
	assert_int_equal(
	    fx_post(q, IBV_WR_RDMA_WRITE, 2, f->abuf, 8, f->amr->lkey, (uintptr_t)f->bbuf, f->bmr->rkey), 0);
	fx_wait(cq, &wc, 1000);
	assert_int_equal(poll(&p, 1, 20), 0);
	assert_int_equal(hw_destroy_comp_channel(ch), EBUSY);
	hw_destroy_qp(q);
	hw_destroy_cq(cq);
	assert_int_equal(hw_destroy_comp_channel(ch), 0);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(send_with_imm_and_write_with_imm),
	    T(multi_sge_and_inline),
	    T(unsignaled_and_full_queue),
	    T(flush_receive_queue),
	    T(loc_len_err_on_short_receive),
	    T(loc_prot_err_on_bad_lkey),
	    T(loc_prot_err_out_of_bounds),
	    T(rem_access_err_bad_rkey_bounds_access),
	    T(rem_access_err_out_of_bounds),
	    T(rem_access_err_other_pd),
	    T(rem_inv_req_err_misaligned_atomic),
	    T(rem_inv_req_err_qp_without_remote_write),
	    T(atomic_needs_remote_atomic_on_mr),
	    T(rem_op_err_bad_receive_lkey),
	    T(rnr_retry_exceeded),
	    T(rnr_retry_forever_then_delivered),
	    T(retry_exceeded_no_such_qp),
	    T(mw_type2_bind_use_invalidate),
	    T(mw_type2_send_with_inv),
	    T(mw_type1_bind_and_dealloc),
	    T(mw_bind_errors),
	    T(mw_bind_err_out_of_range),
	    T(mw_alloc_type_checked),
	    T(ud_send_grh_qkey_and_mtu),
	    T(ud_privileged_qkey_and_receive_error),
	    T(comp_channel_notifies_through_fd),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
