/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* walk: action names, default weights, presets, --weight parsing, message checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cmd/walk/client.h"
#include "cmd/walk/walk.h"

static void test_names_round_trip(void **state)
{
	(void)state;
	for (int a = 0; a < ACT_COUNT; a++) {
		assert_non_null(walk_action_names[a]);
		assert_int_equal(walk_action_from_name(walk_action_names[a]), a);
	}
	assert_int_equal(walk_action_from_name("nope"), -1);
	assert_int_equal(ACT_COUNT, 28);
}

static void test_default_weights_are_the_originals(void **state)
{
	uint32_t w[ACT_COUNT];

	(void)state;
	assert_int_equal(walk_preset("default", w), 0);
	assert_int_equal(w[ACT_CREATE_CQ], 1);
	assert_int_equal(w[ACT_DEALLOC_PD], 1);
	assert_int_equal(w[ACT_CREATE_UD_QP], 1);
	assert_int_equal(w[ACT_ALLOC_PD], 2);
	assert_int_equal(w[ACT_CREATE_RC_QP_PAIR], 2);
	assert_int_equal(w[ACT_BIND_MW_TYPE2], 5);
	assert_int_equal(w[ACT_RECV], 5);
	assert_int_equal(w[ACT_READ], 10);
	assert_int_equal(w[ACT_COMP_SWAP], 10);
	/* ours: the two the original leaves at 0; every QP is retired through ERR, as often as destroyed */
	assert_int_equal(w[ACT_MODIFY_QP_ERROR], w[ACT_DESTROY_QP]);
	assert_int_equal(w[ACT_SEND_WITH_INV], 5);
	for (int a = 0; a < ACT_COUNT; a++)
		assert_true(w[a] > 0);
}

static void test_presets(void **state)
{
	uint32_t w[ACT_COUNT], d[ACT_COUNT];

	(void)state;
	walk_preset("default", d);
	assert_int_equal(walk_preset("control", w), 0);
	assert_int_equal(w[ACT_READ], 0);
	assert_int_equal(w[ACT_SEND], 0);
	assert_int_equal(w[ACT_RECV], 0);
	assert_int_equal(w[ACT_REG_MR], d[ACT_REG_MR]);
	assert_int_equal(walk_preset("rdma", w), 0);
	assert_int_equal(w[ACT_WRITE], 5 * d[ACT_WRITE]);
	assert_int_equal(w[ACT_CREATE_CQ], d[ACT_CREATE_CQ]);
	assert_int_equal(walk_preset("bogus", w), -1);
}

static void test_weight_specs(void **state)
{
	uint32_t w[ACT_COUNT];
	char why[200];

	(void)state;
	walk_preset("default", w);
	assert_int_equal(walk_apply_weight("read=42", w, why, sizeof(why)), 0);
	assert_int_equal(w[ACT_READ], 42);
	assert_int_equal(walk_apply_weight("send_with_inv=0", w, why, sizeof(why)), 0);
	assert_int_equal(w[ACT_SEND_WITH_INV], 0);
	assert_int_equal(walk_apply_weight("read", w, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "ACTION=W"));
	assert_int_equal(walk_apply_weight("reed=1", w, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "unknown action 'reed'"));
	assert_int_equal(walk_apply_weight("read=-1", w, why, sizeof(why)), -1);
	assert_int_equal(walk_apply_weight("read=x", w, why, sizeof(why)), -1);
	assert_int_equal(walk_apply_weight("read=", w, why, sizeof(why)), -1);
	assert_int_equal(walk_apply_weight("=3", w, why, sizeof(why)), -1);
	assert_int_equal(w[ACT_READ], 42); /* failures change nothing */
}

static void test_drop_type2(void **state)
{
	uint32_t w[ACT_COUNT];

	(void)state;
	walk_preset("default", w);
	assert_true(walk_drop_type2(w));
	assert_int_equal(w[ACT_ALLOC_MW_TYPE2] + w[ACT_DEALLOC_MW_TYPE2] + w[ACT_BIND_MW_TYPE2], 0);
	assert_int_equal(w[ACT_BIND_MW_TYPE1], 5);
	assert_false(walk_drop_type2(w));
}

static void test_msg_validation(void **state)
{
	struct walk_msg m = { .type = MSG_ADD_RKEY, .src = 1, .dst = 2, .kind = 2 };

	(void)state;
	assert_true(walk_msg_valid(&m, 3));
	m.dst = 3;
	assert_false(walk_msg_valid(&m, 3));
	m.dst = 0;
	m.kind = 3;
	assert_false(walk_msg_valid(&m, 3));
	m.kind = 0;
	m.type = 0;
	assert_false(walk_msg_valid(&m, 3));
	m.type = MSG_TYPE_MAX;
	assert_false(walk_msg_valid(&m, 3));
}

static void test_stats_merge_and_failures(void **state)
{
	static struct walk_stats a, b;

	(void)state;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	a.issued[ACT_READ] = 3;
	b.issued[ACT_READ] = 4;
	b.wc[ACT_READ][IBV_WC_REM_ACCESS_ERR] = 2;
	b.seconds = 2.5;
	walk_stats_fail(&b, "client %d: boom", 1);
	walk_stats_merge(&a, &b);
	assert_int_equal(a.issued[ACT_READ], 7);
	assert_int_equal(a.wc[ACT_READ][IBV_WC_REM_ACCESS_ERR], 2);
	assert_int_equal(a.nfailures, 1);
	assert_string_equal(walk_stats_failure(&a, 0), "client 1: boom");
	for (int i = 0; i < WALK_MAX_FAILURES + 5; i++)
		walk_stats_fail(&a, "x%d", i);
	assert_int_equal(a.nfailures, WALK_MAX_FAILURES + 6);
}

/* --multinode pacing: each client runs 200 us, then sleeps until it has used no more than its CPU share. */
static void test_pace_to_share(void **state)
{
	(void)state;
	assert_int_equal(walk_pace_for(5, 2), 300000); /* runs 200 of every 500 us: 2/5 of a CPU */
	assert_int_equal(walk_pace_for(3, 2), 100000);
	assert_int_equal(walk_pace_for(4, 1), 600000);
	assert_int_equal(walk_pace_for(2, 2), 0); /* a CPU each: never pauses */
	assert_int_equal(walk_pace_for(3, 64), 0);
	assert_int_equal(walk_pace_for(5, -1), 0); /* no CPU count: do not guess */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_round_trip), cmocka_unit_test(test_default_weights_are_the_originals),
		cmocka_unit_test(test_presets),		 cmocka_unit_test(test_weight_specs),
		cmocka_unit_test(test_drop_type2),	 cmocka_unit_test(test_msg_validation),
		cmocka_unit_test(test_stats_merge_and_failures), cmocka_unit_test(test_pace_to_share),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
