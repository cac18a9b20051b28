/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * walk's reference model (cmd/walk/model.c) on its own: ibv_modify_qp(3)'s
 * per-transition attribute masks, the local and remote key rules, and the
 * predicted completions the oracle compares against.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cmd/walk/model.h"
#include "core/util/rng.h"
#include "hw/soft/soft.h"

#define RC_INIT (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)
#define UD_INIT (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)
#define RC_RTR                                                                                               \
	(IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |                      \
	 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)
#define RC_RTS                                                                                               \
	(IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |               \
	 IBV_QP_MAX_QP_RD_ATOMIC)

static void test_connect_sequence(void **state)
{
	(void)state;
	assert_int_equal(model_modify_qp(IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_INIT, RC_INIT), 0);
	assert_int_equal(model_modify_qp(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR, RC_RTR), 0);
	assert_int_equal(model_modify_qp(IBV_QPT_RC, IBV_QPS_RTR, IBV_QPS_RTS, RC_RTS), 0);
	assert_int_equal(model_modify_qp(IBV_QPT_UD, IBV_QPS_RESET, IBV_QPS_INIT, UD_INIT), 0);
	assert_int_equal(model_modify_qp(IBV_QPT_UD, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QP_STATE), 0);
	assert_int_equal(model_modify_qp(IBV_QPT_UD, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QP_STATE | IBV_QP_SQ_PSN),
			 0);
	/* UC: the path, without the RC-only read/atomic and RNR attributes */
	assert_int_equal(
	    model_modify_qp(IBV_QPT_UC, IBV_QPS_INIT, IBV_QPS_RTR,
			    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN),
	    0);
	assert_int_equal(model_modify_qp(IBV_QPT_UC, IBV_QPS_INIT, IBV_QPS_RTR, RC_RTR), EINVAL);
}

static void test_required_and_extra_attributes(void **state)
{
	(void)state;
	/* every required attribute missing in turn */
	for (int i = 0; i < 31; i++) {
		int bit = 1 << i;

		if ((RC_RTR & bit) && bit != IBV_QP_STATE)
			assert_int_equal(
			    model_modify_qp(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR, RC_RTR & ~bit), EINVAL);
	}
	assert_int_equal(model_modify_qp(IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_INIT, RC_INIT | IBV_QP_QKEY),
			 EINVAL);
	assert_int_equal(model_modify_qp(IBV_QPT_UD, IBV_QPS_RESET, IBV_QPS_INIT, RC_INIT), EINVAL);
	/* RTS to RTS: UD may change its Q_Key, RC may not; RC may change its RNR timer */
	assert_int_equal(model_modify_qp(IBV_QPT_UD, IBV_QPS_RTS, IBV_QPS_RTS, IBV_QP_STATE | IBV_QP_QKEY),
			 0);
	assert_int_equal(model_modify_qp(IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_RTS, IBV_QP_STATE | IBV_QP_QKEY),
			 EINVAL);
	assert_int_equal(
	    model_modify_qp(IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_RTS, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER), 0);
	assert_int_equal(
	    model_modify_qp(IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_RTS, IBV_QP_STATE | IBV_QP_PATH_MTU), EINVAL);
	/* INIT to INIT is legal with nothing but the state */
	assert_int_equal(model_modify_qp(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_INIT, IBV_QP_STATE), 0);
	/* IBV_QP_CUR_STATE only where the transition accepts it */
	assert_int_equal(
	    model_modify_qp(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_INIT, IBV_QP_STATE | IBV_QP_CUR_STATE), EINVAL);
	assert_int_equal(
	    model_modify_qp(IBV_QPT_UD, IBV_QPS_RTS, IBV_QPS_RTS, IBV_QP_STATE | IBV_QP_CUR_STATE), 0);
	/* no IBV_QP_STATE: no transition at all */
	assert_int_equal(model_modify_qp(IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_ERR, 0), EINVAL);
}

static void test_illegal_transitions(void **state)
{
	static const enum ibv_qp_type types[] = {IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD};

	(void)state;
	for (size_t t = 0; t < 3; t++)
		for (int s = IBV_QPS_RESET; s <= IBV_QPS_ERR; s++) {
			/* RESET and ERR are reachable from every state with the state alone */
			assert_int_equal(
			    model_modify_qp(types[t], (enum ibv_qp_state)s, IBV_QPS_ERR, IBV_QP_STATE), 0);
			assert_int_equal(
			    model_modify_qp(types[t], (enum ibv_qp_state)s, IBV_QPS_RESET, IBV_QP_STATE), 0);
			assert_int_equal(model_modify_qp(types[t], (enum ibv_qp_state)s, IBV_QPS_ERR,
							 IBV_QP_STATE | IBV_QP_QKEY),
					 EINVAL);
		}
	/* no skipping INIT, no way back from ERR but RESET, SQE only for unreliable transports */
	assert_int_equal(model_modify_qp(IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_RTR, RC_RTR), EINVAL);
	assert_int_equal(model_modify_qp(IBV_QPT_RC, IBV_QPS_ERR, IBV_QPS_INIT, RC_INIT), EINVAL);
	assert_int_equal(model_modify_qp(IBV_QPT_RC, IBV_QPS_SQE, IBV_QPS_RTS, IBV_QP_STATE), EINVAL);
	assert_int_equal(model_modify_qp(IBV_QPT_UD, IBV_QPS_SQE, IBV_QPS_RTS, IBV_QP_STATE), 0);
	assert_int_equal(model_modify_qp(IBV_QPT_UD, IBV_QPS_RTS, IBV_QPS_SQD, IBV_QP_STATE), 0);
	assert_int_equal(model_modify_qp(IBV_QPT_RC, IBV_QPS_SQD, IBV_QPS_SQD, IBV_QP_STATE | IBV_QP_TIMEOUT),
			 0);
	assert_false(model_can_post_send(IBV_QPS_INIT));
	assert_true(model_can_post_send(IBV_QPS_ERR)); /* and it flushes */
	assert_false(model_can_post_recv(IBV_QPS_RESET));
}

/*
 * The soft device is the walk's default: model and device must agree on
 * every transition, or the oracle raises false alarms (or the device has a
 * bug: either way this says which mask).
 */
static void test_agrees_with_soft_device(void **state)
{
	static const enum ibv_qp_type types[] = {IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD};
	struct rng rng;

	(void)state;
	rng_seed(&rng, 45, 0);
	for (int i = 0; i < 200000; i++) {
		enum ibv_qp_type type = types[rng_range(&rng, 0, 2)];
		enum ibv_qp_state cur = (enum ibv_qp_state)rng_range(&rng, 0, IBV_QPS_ERR);
		enum ibv_qp_state next = (enum ibv_qp_state)rng_range(&rng, 0, IBV_QPS_ERR);
		int req = 0, opt = 0, mask;

		/* mostly near-legal masks: the required set, plus or minus a bit or two */
		if (model_qp_masks(type, cur, next, &req, &opt) && rng_range(&rng, 0, 3))
			mask = IBV_QP_STATE | req | (opt & (int)rng_next(&rng));
		else
			mask = (int)(rng_next(&rng) & ((1u << 21) - 1));
		if (rng_range(&rng, 0, 1))
			mask ^= 1 << rng_range(&rng, 0, 20);
		if (!(mask & IBV_QP_STATE))
			continue; /* the device reads no target state then */
		if ((model_modify_qp(type, cur, next, mask) == 0) != soft_modify_is_ok(cur, next, type, mask))
			fail_msg("type %d %d -> %d mask %#x: model %s, soft device %s", type, cur, next, mask,
				 model_modify_qp(type, cur, next, mask) ? "EINVAL" : "ok",
				 soft_modify_is_ok(cur, next, type, mask) ? "ok" : "refuses");
	}
}

static void test_local_sge(void **state)
{
	struct model_key k = {
	    .valid = true, .addr = 0x1000, .length = 256, .access = IBV_ACCESS_LOCAL_WRITE, .pd = 3};

	(void)state;
	assert_int_equal(model_local_sge(&k, 3, 0x1000, 256, true), IBV_WC_SUCCESS);
	assert_int_equal(model_local_sge(&k, 3, 0x10f8, 8, false), IBV_WC_SUCCESS);
	/* a gather entry ending one byte past the region, or starting one byte before it */
	assert_int_equal(model_local_sge(&k, 3, 0x10f9, 8, false), IBV_WC_LOC_PROT_ERR);
	assert_int_equal(model_local_sge(&k, 3, 0x0fff, 8, false), IBV_WC_LOC_PROT_ERR);
	/* no wrap-around */
	assert_int_equal(model_local_sge(&k, 3, UINT64_MAX - 3, 8, false), IBV_WC_LOC_PROT_ERR);
	assert_int_equal(model_local_sge(&k, 4, 0x1000, 8, false), IBV_WC_LOC_PROT_ERR);
	k.access = 0; /* a receive (or READ result) needs LOCAL_WRITE; a send does not */
	assert_int_equal(model_local_sge(&k, 3, 0x1000, 8, false), IBV_WC_SUCCESS);
	assert_int_equal(model_local_sge(&k, 3, 0x1000, 8, true), IBV_WC_LOC_PROT_ERR);
	k.valid = false; /* deregistered */
	assert_int_equal(model_local_sge(&k, 3, 0x1000, 8, false), IBV_WC_LOC_PROT_ERR);
}

static void test_remote_access(void **state)
{
	const uint32_t all = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	struct model_key w = {
	    .valid = true, .addr = 0x2000, .length = 64, .access = IBV_ACCESS_REMOTE_READ, .pd = 1};

	(void)state;
	assert_int_equal(model_remote_access(&w, 1, 9, all, IBV_ACCESS_REMOTE_READ, 0x203f, 1),
			 IBV_WC_SUCCESS);
	assert_int_equal(model_remote_access(&w, 1, 9, all, IBV_ACCESS_REMOTE_READ, 0x2040, 1),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(model_remote_access(&w, 1, 9, all, IBV_ACCESS_REMOTE_WRITE, 0x2000, 8),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(model_remote_access(&w, 2, 9, all, IBV_ACCESS_REMOTE_READ, 0x2000, 8),
			 IBV_WC_REM_ACCESS_ERR);
	/* the responder QP's own flags count too */
	assert_int_equal(
	    model_remote_access(&w, 1, 9, IBV_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_READ, 0x2000, 8),
	    IBV_WC_REM_ACCESS_ERR);
	/* a type-2 window serves only the QP it is bound to */
	w.qpn = 9;
	assert_int_equal(model_remote_access(&w, 1, 9, all, IBV_ACCESS_REMOTE_READ, 0x2000, 8),
			 IBV_WC_SUCCESS);
	assert_int_equal(model_remote_access(&w, 1, 10, all, IBV_ACCESS_REMOTE_READ, 0x2000, 8),
			 IBV_WC_REM_ACCESS_ERR);
	/* atomics: 8 aligned bytes */
	w.access = IBV_ACCESS_REMOTE_ATOMIC;
	assert_int_equal(model_remote_access(&w, 1, 9, all, IBV_ACCESS_REMOTE_ATOMIC, 0x2008, 8),
			 IBV_WC_SUCCESS);
	assert_int_equal(model_remote_access(&w, 1, 9, all, IBV_ACCESS_REMOTE_ATOMIC, 0x2004, 8),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(model_access_for(IBV_WR_ATOMIC_CMP_AND_SWP), IBV_ACCESS_REMOTE_ATOMIC);
	assert_int_equal(model_access_for(IBV_WR_SEND), 0);
}

static void test_predicted_completions(void **state)
{
	struct ibv_wc wc = {
	    .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RDMA_READ, .byte_len = 300, .qp_num = 7};
	struct model_wc e;
	char why[200];

	(void)state;
	model_send_wc(&e, IBV_WR_RDMA_READ, 300, 7);
	assert_true(model_wc_matches(&e, &wc, why, sizeof(why)));
	wc.byte_len = 299; /* a READ reports the bytes read */
	assert_false(model_wc_matches(&e, &wc, why, sizeof(why)));
	assert_non_null(strstr(why, "byte_len 299; expected 300"));
	wc.qp_num = 8;
	assert_false(model_wc_matches(&e, &wc, why, sizeof(why)));
	assert_non_null(strstr(why, "qp_num 8"));
	/* atomics: 8 bytes, their own opcode */
	model_send_wc(&e, IBV_WR_ATOMIC_FETCH_AND_ADD, 8, 7);
	wc =
	    (struct ibv_wc){.status = IBV_WC_SUCCESS, .opcode = IBV_WC_COMP_SWAP, .byte_len = 8, .qp_num = 7};
	assert_false(model_wc_matches(&e, &wc, why, sizeof(why)));
	/* any of these: the status must be in the set, the fields of an error are not judged */
	e.statuses = MODEL_ST(IBV_WC_LOC_PROT_ERR) | MODEL_ST(IBV_WC_WR_FLUSH_ERR);
	wc.status = IBV_WC_WR_FLUSH_ERR;
	assert_true(model_wc_matches(&e, &wc, why, sizeof(why)));
	wc.status = IBV_WC_SUCCESS;
	wc.opcode = IBV_WC_FETCH_ADD;
	assert_false(model_wc_matches(&e, &wc, why, sizeof(why)));
	assert_non_null(strstr(why, "local protection error or Work Request Flushed Error"));
	/* a UD receive holds a GRH */
	model_recv_wc(&e, IBV_QPT_UD, 1040, 7);
	wc = (struct ibv_wc){.status = IBV_WC_SUCCESS, .opcode = IBV_WC_RECV, .byte_len = 1040, .qp_num = 7};
	assert_false(model_wc_matches(&e, &wc, why, sizeof(why)));
	wc.wc_flags = IBV_WC_GRH;
	assert_true(model_wc_matches(&e, &wc, why, sizeof(why)));
	wc.byte_len = 1041;
	assert_false(model_wc_matches(&e, &wc, why, sizeof(why)));
	/* a WR posted to a QP in ERR */
	model_flush_wc(&e, 7);
	wc.status = IBV_WC_SUCCESS;
	assert_false(model_wc_matches(&e, &wc, why, sizeof(why)));
}

/* SRQs: destroy is refused while a QP uses one; a QP entering ERR flushes at most the receive it took. */
static void test_srq(void **state)
{
	(void)state;
	assert_int_equal(model_destroy_srq(0), 0);
	assert_int_equal(model_destroy_srq(1), EBUSY);
	assert_int_equal(model_destroy_srq(7), EBUSY);
	assert_true(model_srq_recv_may_fail(0));
	assert_false(model_srq_recv_may_fail(1));
	assert_false(model_srq_recv_may_fail(2));
}

/* The rules the device probes added for the fresh bugs: a claimed current state, type-1 invalidation, a
 * privileged Q_Key, a short receive, an SRQ at max_wr. */
static void test_rules(void **state)
{
	int m = IBV_QP_STATE | IBV_QP_CUR_STATE;

	(void)state;
	assert_int_equal(model_modify_qp_claimed(IBV_QPT_UD, IBV_QPS_RTS, IBV_QPS_RTS, IBV_QPS_RTS, m), 0);
	assert_int_equal(model_modify_qp_claimed(IBV_QPT_UD, IBV_QPS_RTS, IBV_QPS_SQE, IBV_QPS_RTS, m),
			 EINVAL);
	assert_int_equal(model_modify_qp_claimed(IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_SQD, IBV_QPS_RTS, m),
			 EINVAL);
	/* without IBV_QP_CUR_STATE the claim is not read */
	assert_int_equal(
	    model_modify_qp_claimed(IBV_QPT_UD, IBV_QPS_RTS, IBV_QPS_SQE, IBV_QPS_RTS, IBV_QP_STATE), 0);
	assert_false(model_can_post_send(IBV_QPS_RTR));
	assert_true(model_can_post_recv(IBV_QPS_RTR));
	assert_int_equal(model_invalidate_mw(2, false), IBV_WC_SUCCESS);
	assert_int_equal(model_invalidate_mw(1, false), IBV_WC_LOC_QP_OP_ERR);
	assert_int_equal(model_invalidate_mw(1, true), IBV_WC_REM_INV_REQ_ERR);
	assert_int_equal(model_ud_qkey(0x80000005u, 0x12), 0x12u);
	assert_int_equal(model_ud_qkey(0x7fffffffu, 0x12), 0x7fffffffu);
	assert_int_equal(model_recv_fits(7, 8), IBV_WC_LOC_LEN_ERR);
	assert_int_equal(model_recv_fits(8, 8), IBV_WC_SUCCESS);
	assert_int_equal(model_post_srq_recv(3, 4), 0);
	assert_int_equal(model_post_srq_recv(4, 4), ENOMEM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_connect_sequence),
	    cmocka_unit_test(test_required_and_extra_attributes),
	    cmocka_unit_test(test_illegal_transitions),
	    cmocka_unit_test(test_agrees_with_soft_device),
	    cmocka_unit_test(test_local_sge),
	    cmocka_unit_test(test_remote_access),
	    cmocka_unit_test(test_predicted_completions),
	    cmocka_unit_test(test_srq),
	    cmocka_unit_test(test_rules),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
