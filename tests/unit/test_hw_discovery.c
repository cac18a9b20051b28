/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Device discovery: no RDMA kernel support is a normal answer, the soft device is always there. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <string.h>
#include <cmocka.h>

#include "hw/hw.h"

static void soft_device_always_listed(void **state)
{
	(void)state;
	struct hw_device devs[HW_MAX_DEVICES];
	int verbs_errno = -1;
	int n = hw_list_devices(devs, HW_MAX_DEVICES, &verbs_errno);
	int soft = 0;

	assert_true(n >= 1);
	assert_true(verbs_errno >= 0);
	for (int i = 0; i < n; i++)
		if (devs[i].provider == &hw_soft_provider)
			soft++;
	assert_int_equal(soft, 1);
}

static void open_by_name_and_default(void **state)
{
	(void)state;
	struct hw_device chosen;
	struct ibv_context *ctx = hw_open_device("soft0", &chosen);

	assert_non_null(ctx);
	assert_string_equal(chosen.name, "soft0");
	assert_string_equal(hw_provider_name(ctx), "soft");
	assert_int_equal(hw_close_device(ctx), 0);

	/* Without a name: the first verbs device with an ACTIVE port, else soft. */
	ctx = hw_open_device(NULL, &chosen);
	assert_non_null(ctx);
	if (chosen.provider == &hw_soft_provider)
		assert_string_equal(hw_provider_name(ctx), "soft");
	assert_int_equal(hw_close_device(ctx), 0);
}

static void unknown_name_is_enodev(void **state)
{
	(void)state;
	errno = 0;
	assert_null(hw_open_device("no_such_device9", NULL));
	assert_int_equal(errno, ENODEV);
}

static void list_respects_capacity(void **state)
{
	(void)state;
	struct hw_device devs[1];

	assert_true(hw_list_devices(devs, 1, NULL) <= 1);
	assert_int_equal(hw_list_devices(devs, 0, NULL), 0);
}

static void soft_port_is_active(void **state)
{
	(void)state;
	struct ibv_context *ctx = hw_open_device("soft0", NULL);
	struct ibv_device_attr dattr;
	struct ibv_port_attr pattr;

	assert_non_null(ctx);
	assert_int_equal(hw_query_device(ctx, &dattr), 0);
	assert_true(dattr.phys_port_cnt >= 1);
	assert_int_equal(hw_query_port(ctx, 1, &pattr), 0);
	assert_int_equal(pattr.state, IBV_PORT_ACTIVE);
	assert_int_equal(pattr.active_mtu, IBV_MTU_4096);
	assert_int_not_equal(hw_query_port(ctx, 2, &pattr), 0);
	hw_close_device(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(soft_device_always_listed),
		cmocka_unit_test(open_by_name_and_default),
		cmocka_unit_test(unknown_name_is_enodev),
		cmocka_unit_test(list_respects_capacity),
		cmocka_unit_test(soft_port_is_active),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
