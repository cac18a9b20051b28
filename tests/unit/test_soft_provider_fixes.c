/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Regression tests for the places where the soft device behaved unlike a
 * real NIC when unmodified verbs programs ran on it (issue 19): a non-GRH
 * address on its Ethernet-like port, LOCAL_WRITE in a window's access, and
 * the errno of an unsupported QP type.
 */
#include "tests/unit/soft_fixture.h"

/* ibv_rc_pingpong without -g: the QP must refuse RTR, not talk to a local QP of that number. */
static void rtr_without_grh_is_einval(void **state)
{
	struct fx *f = *state;
	struct ibv_qp *qp = fx_qp(f->pd, f->scq, IBV_QPT_RC, 1);
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};
	struct ibv_qp_init_attr init;

	assert_non_null(qp);
	assert_int_equal(
	    hw_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = f->b->qp_num;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.port_num = 1;
	a.ah_attr.dlid = 1;
	const int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	assert_int_equal(hw_modify_qp(qp, &a, mask), EINVAL);
	assert_int_equal(hw_query_qp(qp, &a, IBV_QP_STATE, &init), 0);
	assert_int_equal(a.qp_state, IBV_QPS_INIT);
	/* The same attributes with a GRH are fine. */
	a.qp_state = IBV_QPS_RTR;
	a.ah_attr.is_global = 1;
	assert_int_equal(hw_query_gid(f->ctx, 1, 0, &a.ah_attr.grh.dgid), 0);
	assert_int_equal(hw_modify_qp(qp, &a, mask), 0);
	assert_int_equal(hw_destroy_qp(qp), 0);
}

static void create_ah_without_grh_is_einval(void **state)
{
	struct fx *f = *state;
	struct ibv_ah_attr aa = {.port_num = 1, .dlid = 1};
	struct ibv_ah *ah;

	errno = 0;
	assert_null(hw_create_ah(f->pd, &aa));
	assert_int_equal(errno, EINVAL);
	aa.is_global = 1;
	assert_int_equal(hw_query_gid(f->ctx, 1, 0, &aa.grh.dgid), 0);
	ah = hw_create_ah(f->pd, &aa);
	assert_non_null(ah);
	assert_int_equal(hw_destroy_ah(ah), 0);
}

/* rxe and mlx5 accept LOCAL_WRITE among a window's access flags; the window still works remotely. */
static void mw_bind_accepts_local_write(void **state)
{
	struct fx *f = *state;
	struct ibv_mw *mw = hw_alloc_mw(f->pd, IBV_MW_TYPE_1);
	struct ibv_mw_bind bind = {.wr_id = 9, .send_flags = IBV_SEND_SIGNALED};
	struct ibv_wc wc;

	assert_non_null(mw);
	bind.bind_info.mr = f->bmr;
	bind.bind_info.addr = (uintptr_t)f->bbuf;
	bind.bind_info.length = 64;
	bind.bind_info.mw_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	assert_int_equal(ibv_bind_mw(f->b, mw, &bind), 0);
	fx_wait(f->rcq, &wc, 2000);
	assert_int_equal(wc.wr_id, 9);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	memcpy(f->abuf, "window", 7);
	assert_int_equal(
	    fx_post(f->a, IBV_WR_RDMA_WRITE, 1, f->abuf, 7, f->amr->lkey, (uintptr_t)f->bbuf, mw->rkey), 0);
	fx_wait(f->scq, &wc, 2000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_string_equal((char *)f->bbuf, "window");
	assert_int_equal(hw_dealloc_mw(mw), 0);
}

static void unsupported_qp_types_are_eopnotsupp(void **state)
{
	struct fx *f = *state;
	const enum ibv_qp_type types[] = {IBV_QPT_RAW_PACKET, IBV_QPT_XRC_SEND, IBV_QPT_XRC_RECV,
					  IBV_QPT_DRIVER};

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		errno = 0;
		assert_null(fx_qp(f->pd, f->scq, types[i], 0));
		assert_int_equal(errno, EOPNOTSUPP);
	}
	/* Malformed attributes of a supported type stay EINVAL. */
	struct ibv_qp_init_attr bad = {.send_cq = f->scq,
				       .recv_cq = f->scq,
				       .qp_type = IBV_QPT_RC,
				       .cap = {.max_send_wr = 1u << 20, .max_recv_wr = 1}};
	errno = 0;
	assert_null(hw_create_qp(f->pd, &bad));
	assert_int_equal(errno, EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(rtr_without_grh_is_einval, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(create_ah_without_grh_is_einval, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(mw_bind_accepts_local_write, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(unsupported_qp_types_are_eopnotsupp, fx_setup, fx_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
