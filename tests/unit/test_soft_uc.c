/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * UC QPs on the soft device: connected like RC, unacknowledged like UD.
 * A send completes once it left; the responder drops, without an answer
 * and without leaving RTS, a message it cannot take (no receive posted, a
 * bad rkey, no remote write on the QP); READ, atomics and SEND with
 * invalidate are not UC operations.
 */
#include "tests/unit/soft_fixture.h"

struct uc {
	struct fx *f;
	struct ibv_qp *a, *b; /* a on f->scq, b on f->rcq */
};

static void uc_to_rts(struct ibv_qp *qp, uint32_t dest_qpn, int access)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = access};

	assert_int_equal(
	    hw_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_4096;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = 7;
	a.ah_attr.port_num = 1;
	a.ah_attr.is_global = 1;
	assert_int_equal(hw_query_gid(qp->context, 1, 0, &a.ah_attr.grh.dgid), 0);
	/* RC's responder attributes (max_dest_rd_atomic, min_rnr_timer) are not UC's. */
	assert_int_equal(hw_modify_qp(qp, &a,
				      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					  IBV_QP_RQ_PSN | IBV_QP_MIN_RNR_TIMER),
			 EINVAL);
	assert_int_equal(
	    hw_modify_qp(qp, &a,
			 IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN),
	    0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 7;
	a.retry_cnt = 7;
	assert_int_equal(hw_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RETRY_CNT), EINVAL);
	assert_int_equal(hw_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
}

static int uc_setup(void **state)
{
	struct uc *u = calloc(1, sizeof(*u));
	void *fs;

	if (!u || fx_setup(&fs)) {
		free(u);
		return -1;
	}
	u->f = fs;
	u->a = fx_qp(u->f->pd, u->f->scq, IBV_QPT_UC, 0);
	u->b = fx_qp(u->f->pd, u->f->rcq, IBV_QPT_UC, 0);
	assert_non_null(u->a);
	assert_non_null(u->b);
	uc_to_rts(u->a, u->b->qp_num, IBV_ACCESS_REMOTE_WRITE);
	uc_to_rts(u->b, u->a->qp_num, IBV_ACCESS_REMOTE_WRITE);
	*state = u;
	return 0;
}

static int uc_teardown(void **state)
{
	struct uc *u = *state;

	hw_destroy_qp(u->a);
	hw_destroy_qp(u->b);
	void *fs = u->f;
	fx_teardown(&fs);
	free(u);
	return 0;
}

static void uc_send_and_write_arrive(void **state)
{
	struct uc *u = *state;
	struct fx *f = u->f;
	struct ibv_wc wc;

	memcpy(f->abuf, "unreliable, connected", 22);
	assert_int_equal(fx_post_recv(u->b, 5, f->bbuf, 64, f->bmr->lkey), 0);
	assert_int_equal(fx_post(u->a, IBV_WR_SEND, 1, f->abuf, 22, f->amr->lkey, 0, 0), 0);
	fx_wait(f->scq, &wc, 2000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_SEND);
	fx_wait(f->rcq, &wc, 2000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 5);
	assert_int_equal(wc.byte_len, 22);
	assert_int_equal(wc.src_qp, u->a->qp_num);
	assert_string_equal((char *)f->bbuf, "unreliable, connected");

	memcpy(f->abuf, "written", 8);
	assert_int_equal(fx_post(u->a, IBV_WR_RDMA_WRITE, 2, f->abuf, 8, f->amr->lkey,
				 (uintptr_t)f->bbuf + 100, f->bmr->rkey),
			 0);
	fx_wait(f->scq, &wc, 2000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_string_equal((char *)f->bbuf + 100, "written");
	fx_none(f->rcq, 20); /* a WRITE consumes no receive */
}

static void uc_drops_what_it_cannot_take(void **state)
{
	struct uc *u = *state;
	struct fx *f = u->f;
	struct ibv_wc wc;

	/* No receive posted: no RNR on UC, the message is gone and the sender never knows. */
	assert_int_equal(fx_post(u->a, IBV_WR_SEND, 1, f->abuf, 8, f->amr->lkey, 0, 0), 0);
	fx_wait(f->scq, &wc, 2000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	/* A bad rkey: dropped silently, nothing written, both QPs stay up. */
	memset(f->bbuf, 0, 64);
	memcpy(f->abuf, "nope", 5);
	assert_int_equal(fx_post(u->a, IBV_WR_RDMA_WRITE, 2, f->abuf, 5, f->amr->lkey, (uintptr_t)f->bbuf,
				 f->bmr->rkey ^ 0x80),
			 0);
	fx_wait(f->scq, &wc, 2000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(f->bbuf[0], 0);
	expect_state(u->a, IBV_QPS_RTS);
	expect_state(u->b, IBV_QPS_RTS);
	fx_none(f->rcq, 20);
	/* The next message with a receive posted arrives (the responder resynchronized). */
	assert_int_equal(fx_post_recv(u->b, 9, f->bbuf, 64, f->bmr->lkey), 0);
	memcpy(f->abuf, "after", 6);
	assert_int_equal(fx_post(u->a, IBV_WR_SEND, 3, f->abuf, 6, f->amr->lkey, 0, 0), 0);
	fx_wait(f->scq, &wc, 2000);
	fx_wait(f->rcq, &wc, 2000);
	assert_int_equal(wc.wr_id, 9);
	assert_string_equal((char *)f->bbuf, "after");
}

static void uc_has_no_read_atomics_or_invalidate(void **state)
{
	struct uc *u = *state;
	struct fx *f = u->f;
	const enum ibv_wr_opcode ops[] = {IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
					  IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_SEND_WITH_INV};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		assert_int_equal(
		    fx_post(u->a, ops[i], 1, f->abuf, 8, f->amr->lkey, (uintptr_t)f->bbuf, f->bmr->rkey),
		    EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(uc_send_and_write_arrive, uc_setup, uc_teardown),
	    cmocka_unit_test_setup_teardown(uc_drops_what_it_cannot_take, uc_setup, uc_teardown),
	    cmocka_unit_test_setup_teardown(uc_has_no_read_atomics_or_invalidate, uc_setup, uc_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
