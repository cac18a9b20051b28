/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The verbs provider without hardware: discovery failure is a normal answer, soft0 remains. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "hw/hw.h"

static void no_rdma_kernel_is_enosys_and_soft_remains(void **state)
{
	struct hw_device devs[HW_MAX_DEVICES];
	int verbs_errno = -1, n, direct, soft = 0;

	(void)state;
	direct = hw_verbs_provider.list_devices(devs, HW_MAX_DEVICES);
	n = hw_list_devices(devs, HW_MAX_DEVICES, &verbs_errno);
	if (access("/sys/class/infiniband_verbs", F_OK) != 0) {
		/* This kernel has no RDMA: libibverbs says ENOSYS. */
		assert_int_equal(direct, -ENOSYS);
		assert_int_equal(verbs_errno, ENOSYS);
	} else {
		assert_true(direct >= 0);
		assert_int_equal(verbs_errno, 0);
	}
	for (int i = 0; i < n; i++)
		if (strcmp(devs[i].name, "soft0") == 0 && devs[i].provider == &hw_soft_provider)
			soft++;
	assert_int_equal(soft, 1);
}

static void discovery_is_stable_across_calls(void **state)
{
	struct hw_device a[HW_MAX_DEVICES], b[HW_MAX_DEVICES];
	int ea, eb;

	(void)state;
	assert_int_equal(hw_list_devices(a, HW_MAX_DEVICES, &ea), hw_list_devices(b, HW_MAX_DEVICES, &eb));
	assert_int_equal(ea, eb);
}

static void default_open_falls_back_to_soft(void **state)
{
	struct hw_device chosen;
	struct ibv_context *ctx;

	(void)state;
	if (access("/sys/class/infiniband_verbs", F_OK) == 0)
		skip();
	ctx = hw_open_device(NULL, &chosen);
	assert_non_null(ctx);
	assert_ptr_equal(chosen.provider, &hw_soft_provider);
	assert_string_equal(hw_provider_name(ctx), "soft");
	assert_ptr_equal(hw_ops_of(ctx), hw_soft_provider.ops);
	assert_int_equal(hw_close_device(ctx), 0);
}

static void verbs_ops_table_is_complete(void **state)
{
	const struct hw_ops *o = hw_verbs_provider.ops;
	const void *const *slot = (const void *const *)o;

	(void)state;
	/* Every op forwards somewhere: no NULL slot for a caller to trip on. */
	for (size_t i = 0; i < sizeof(*o) / sizeof(void *); i++)
		assert_non_null(slot[i]);
	slot = (const void *const *)hw_soft_provider.ops;
	for (size_t i = 0; i < sizeof(*o) / sizeof(void *); i++)
		assert_non_null(slot[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(no_rdma_kernel_is_enosys_and_soft_remains),
		cmocka_unit_test(discovery_is_stable_across_calls),
		cmocka_unit_test(default_open_falls_back_to_soft),
		cmocka_unit_test(verbs_ops_table_is_complete),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
