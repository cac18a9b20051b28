/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Soft device cases where the other soft tests were blind to a seeded bug
 * (tests/mutation/): bounds one byte past the end and one byte before the
 * start (not 8), compare-and-swap that must not swap with compare, swap and
 * target all distinct, access through an rkey after dereg_mr, a send and a
 * receive posted to a QP in ERR, a receive shorter than the message, a CQ
 * overflow and its async event.  Every test also checks the CQ holds
 * nothing after the completion it expects.
 */
#include "soft_fixture.h"

#include <fcntl.h>

#define ACCESS                                                                                               \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

static void expect(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_status st)
{
	struct ibv_wc wc;

	fx_wait(cq, &wc, 3000);
	assert_int_equal(wc.wr_id, wr_id);
	assert_int_equal(wc.status, st);
	fx_none(cq, 30); /* exactly one completion */
}

static int post_atomic(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, uint64_t *result,
		       uint32_t lkey, uint64_t *target, uint32_t rkey, uint64_t compare_add, uint64_t swap)
{
	struct ibv_sge sge = {.addr = (uintptr_t)result, .length = 8, .lkey = lkey};
	struct ibv_send_wr wr = {.wr_id = wr_id,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;

	wr.wr.atomic.remote_addr = (uintptr_t)target;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	return hw_post_send(qp, &wr, &bad);
}

/* A region in the middle of b's buffer: [4096, 8192). */
static struct ibv_mr *mid_mr(struct fx *f)
{
	struct ibv_mr *mr = hw_reg_mr(f->pd, f->bbuf + 4096, 4096, ACCESS);

	assert_non_null(mr);
	return mr;
}

static void test_last_byte_ok_one_past_fails(void **state)
{
	struct fx *f = *state;
	struct ibv_mr *mr = mid_mr(f);

	assert_int_equal(
	    fx_post(f->a, IBV_WR_RDMA_READ, 1, f->abuf, 1, f->amr->lkey, (uintptr_t)f->bbuf + 8191, mr->rkey),
	    0);
	expect(f->scq, 1, IBV_WC_SUCCESS);
	/* two bytes from the last one: one byte past the end */
	assert_int_equal(
	    fx_post(f->a, IBV_WR_RDMA_READ, 2, f->abuf, 2, f->amr->lkey, (uintptr_t)f->bbuf + 8191, mr->rkey),
	    0);
	expect(f->scq, 2, IBV_WC_REM_ACCESS_ERR);
	hw_dereg_mr(mr);
}

static void test_write_one_past_end_fails(void **state)
{
	struct fx *f = *state;
	struct ibv_mr *mr = mid_mr(f);

	f->bbuf[8192] = 0x5a;
	f->abuf[0] = f->abuf[1] = 0xa5;
	assert_int_equal(fx_post(f->a, IBV_WR_RDMA_WRITE, 1, f->abuf, 2, f->amr->lkey,
				 (uintptr_t)f->bbuf + 8191, mr->rkey),
			 0);
	expect(f->scq, 1, IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(f->bbuf[8192], 0x5a);
	hw_dereg_mr(mr);
}

static void test_one_before_start_fails(void **state)
{
	struct fx *f = *state;
	struct ibv_mr *mr = mid_mr(f);

	assert_int_equal(
	    fx_post(f->a, IBV_WR_RDMA_READ, 1, f->abuf, 2, f->amr->lkey, (uintptr_t)f->bbuf + 4095, mr->rkey),
	    0);
	expect(f->scq, 1, IBV_WC_REM_ACCESS_ERR);
	hw_dereg_mr(mr);
}

static void test_cas_distinct_values(void **state)
{
	struct fx *f = *state;
	uint64_t *target = (uint64_t *)(f->bbuf + 64), *result = (uint64_t *)f->abuf;

	*target = 0x1111111111111111ull;
	*result = 0;
	/* compare, swap and target all distinct: no swap, the original comes back */
	assert_int_equal(post_atomic(f->a, IBV_WR_ATOMIC_CMP_AND_SWP, 1, result, f->amr->lkey, target,
				     f->bmr->rkey, 0x2222222222222222ull, 0x3333333333333333ull),
			 0);
	expect(f->scq, 1, IBV_WC_SUCCESS);
	assert_true(*result == 0x1111111111111111ull);
	assert_true(*target == 0x1111111111111111ull);
	/* a matching compare swaps */
	assert_int_equal(post_atomic(f->a, IBV_WR_ATOMIC_CMP_AND_SWP, 2, result, f->amr->lkey, target,
				     f->bmr->rkey, 0x1111111111111111ull, 0x3333333333333333ull),
			 0);
	expect(f->scq, 2, IBV_WC_SUCCESS);
	assert_true(*result == 0x1111111111111111ull);
	assert_true(*target == 0x3333333333333333ull);
	/* FETCH_ADD returns the original, leaves the sum */
	assert_int_equal(post_atomic(f->a, IBV_WR_ATOMIC_FETCH_AND_ADD, 3, result, f->amr->lkey, target,
				     f->bmr->rkey, 5, 0),
			 0);
	expect(f->scq, 3, IBV_WC_SUCCESS);
	assert_true(*result == 0x3333333333333333ull);
	assert_true(*target == 0x3333333333333338ull);
}

static void test_rkey_after_dereg_fails(void **state)
{
	struct fx *f = *state;
	struct ibv_mr *mr = mid_mr(f);
	uint32_t rkey = mr->rkey;

	assert_int_equal(hw_dereg_mr(mr), 0);
	assert_int_equal(
	    fx_post(f->a, IBV_WR_RDMA_READ, 1, f->abuf, 8, f->amr->lkey, (uintptr_t)f->bbuf + 4096, rkey), 0);
	expect(f->scq, 1, IBV_WC_REM_ACCESS_ERR);
}

static void test_write_after_dereg_fails(void **state)
{
	struct fx *f = *state;
	struct ibv_mr *mr = mid_mr(f);
	uint32_t rkey = mr->rkey;

	assert_int_equal(hw_dereg_mr(mr), 0);
	f->bbuf[4096] = 0x5a;
	f->abuf[0] = 0xa5;
	assert_int_equal(
	    fx_post(f->a, IBV_WR_RDMA_WRITE, 1, f->abuf, 1, f->amr->lkey, (uintptr_t)f->bbuf + 4096, rkey),
	    0);
	expect(f->scq, 1, IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(f->bbuf[4096], 0x5a);
}

static void test_send_to_err_qp_flushes(void **state)
{
	struct fx *f = *state;
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};

	assert_int_equal(fx_post_recv(f->b, 7, f->bbuf, 64, f->bmr->lkey), 0);
	assert_int_equal(hw_modify_qp(f->a, &attr, IBV_QP_STATE), 0);
	assert_int_equal(fx_post(f->a, IBV_WR_SEND, 1, f->abuf, 16, f->amr->lkey, 0, 0), 0);
	expect(f->scq, 1, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(fx_post_recv(f->a, 2, f->abuf + 64, 64, f->amr->lkey), 0);
	expect(f->scq, 2, IBV_WC_WR_FLUSH_ERR);
	/* the send never executed: b's receive is still posted */
	fx_none(f->rcq, 100);
}

static void test_recv_flushes_on_err(void **state)
{
	struct fx *f = *state;
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};

	assert_int_equal(fx_post_recv(f->b, 7, f->bbuf, 64, f->bmr->lkey), 0);
	assert_int_equal(hw_modify_qp(f->b, &attr, IBV_QP_STATE), 0);
	expect(f->rcq, 7, IBV_WC_WR_FLUSH_ERR);
}

static void test_send_byte_len(void **state)
{
	struct fx *f = *state;
	struct ibv_wc wc;

	assert_int_equal(fx_post_recv(f->b, 7, f->bbuf, 64, f->bmr->lkey), 0);
	memset(f->abuf, 0x42, 37);
	assert_int_equal(fx_post(f->a, IBV_WR_SEND, 1, f->abuf, 37, f->amr->lkey, 0, 0), 0);
	expect(f->scq, 1, IBV_WC_SUCCESS);
	fx_wait(f->rcq, &wc, 3000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(wc.byte_len, 37);
	assert_int_equal(f->bbuf[36], 0x42);
	assert_int_equal(f->bbuf[37], 0);
	fx_none(f->rcq, 30);
}

/* One byte too small: LOC_LEN_ERR at the receiver, REM_INV_REQ_ERR at the sender, both QPs in ERR. */
static void test_recv_one_byte_short(void **state)
{
	struct fx *f = *state;

	assert_int_equal(fx_post_recv(f->b, 7, f->bbuf, 36, f->bmr->lkey), 0);
	assert_int_equal(fx_post(f->a, IBV_WR_SEND, 1, f->abuf, 37, f->amr->lkey, 0, 0), 0);
	expect(f->rcq, 7, IBV_WC_LOC_LEN_ERR);
	expect(f->scq, 1, IBV_WC_REM_INV_REQ_ERR);
	expect_state(f->a, IBV_QPS_ERR);
	expect_state(f->b, IBV_QPS_ERR);
}

/* One completion more than a CQ holds raises IBV_EVENT_CQ_ERR for it (five receives flushed into four
 * entries). */
static void test_cq_overflow_event(void **state)
{
	struct fx *f = *state;
	struct ibv_async_event ev;
	struct ibv_cq *cq = hw_create_cq(f->ctx, 4, NULL, NULL, 0);
	struct ibv_qp *qp = cq ? fx_qp(f->pd, cq, IBV_QPT_RC, 0) : NULL;
	struct ibv_qp_attr init = {.qp_state = IBV_QPS_INIT, .port_num = 1}, err = {.qp_state = IBV_QPS_ERR};
	int fd = f->ctx->async_fd, got = 0;
	uint64_t end;

	assert_non_null(qp);
	assert_int_equal(cq->cqe, 4);
	assert_int_equal(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
	assert_int_equal(
	    hw_modify_qp(qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(fx_post_recv(qp, (uint64_t)i, f->bbuf + 8 * i, 8, f->bmr->lkey), 0);
	assert_int_equal(hw_modify_qp(qp, &err, IBV_QP_STATE), 0);
	end = fx_now_ms() + 3000;
	while (!got && fx_now_ms() < end)
		if (hw_get_async_event(f->ctx, &ev) == 0) {
			got = ev.event_type == IBV_EVENT_CQ_ERR && ev.element.cq == cq;
			hw_ack_async_event(f->ctx, &ev);
		}
	assert_true(got);
	assert_int_equal(hw_destroy_qp(qp), 0);
	assert_int_equal(hw_destroy_cq(cq), 0);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_last_byte_ok_one_past_fails),
	    T(test_write_one_past_end_fails),
	    T(test_one_before_start_fails),
	    T(test_cas_distinct_values),
	    T(test_rkey_after_dereg_fails),
	    T(test_write_after_dereg_fails),
	    T(test_send_to_err_qp_flushes),
	    T(test_recv_flushes_on_err),
	    T(test_send_byte_len),
	    T(test_recv_one_byte_short),
	    T(test_cq_overflow_event),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
