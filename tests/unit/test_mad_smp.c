/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* SMP wire format, attribute decoding and the latency histogram. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/util/histogram.h"
#include "core/mad/mad_smp.h"

#include <infiniband/mad.h>

static void lid_routed_encoding(void **state)
{
	struct smp_route r = { .lid = 7 };
	uint8_t data[SMP_DATA_SIZE], mad[SMP_SIZE];
	struct smp_request req = { SMP_METHOD_SET, SMP_ATTR_LINEAR_FWD_TABLE, 3, 0xdeadbeef, data };
	struct smp_response resp;

	(void)state;
	for (int i = 0; i < SMP_DATA_SIZE; i++)
		data[i] = (uint8_t)i;
	smp_encode(mad, &r, &req);
	assert_int_equal(mad[0], 1);
	assert_int_equal(mad[1], SMP_CLASS_LID);
	assert_int_equal(mad[2], 1);
	assert_int_equal(mad[3], SMP_METHOD_SET);
	/* High 32 bits of the TID are left to the kernel; low 32 big endian. */
	assert_memory_equal(mad + 8, "\0\0\0\0\xde\xad\xbe\xef", 8);
	assert_memory_equal(mad + 16, "\x00\x19\x00\x00\x00\x00\x00\x03", 8);
	assert_memory_equal(mad + 64, data, SMP_DATA_SIZE);

	mad[3] = SMP_METHOD_GET_RESP;
	mad[4] = 0x00;
	mad[5] = 0x1c;
	assert_int_equal(smp_decode(mad, SMP_SIZE, &resp), 0);
	assert_int_equal(resp.method, SMP_METHOD_GET_RESP); /* the response bit included */
	assert_int_equal(resp.tid, 0xdeadbeef);
	assert_int_equal(resp.status, 0x1c);
	assert_int_equal(resp.attr, SMP_ATTR_LINEAR_FWD_TABLE);
	assert_int_equal(resp.mod, 3);
	assert_memory_equal(resp.data, data, SMP_DATA_SIZE);
	assert_int_equal(smp_decode(mad, 100, &resp), -22);
	mad[1] = 0x04; /* PerfMgt is not an SMP */
	assert_int_equal(smp_decode(mad, SMP_SIZE, &resp), -22);
}

static void directed_route_encoding(void **state)
{
	struct smp_route r = { .directed = true, .hops = 2, .path = { 0, 1, 3 } };
	struct smp_request req = { SMP_METHOD_GET, SMP_ATTR_NODE_INFO, 0, 42, NULL };
	struct smp_response resp;
	uint8_t mad[SMP_SIZE];

	(void)state;
	smp_encode(mad, &r, &req);
	assert_int_equal(mad[1], SMP_CLASS_DR);
	assert_int_equal(mad[6], 0); /* hop pointer */
	assert_int_equal(mad[7], 2); /* hop count */
	assert_memory_equal(mad + 32, "\xff\xff\xff\xff", 4);
	assert_int_equal(mad[128 + 1], 1);
	assert_int_equal(mad[128 + 2], 3);
	/* The response carries the direction bit, which is not a status. */
	mad[4] = 0x80;
	mad[5] = 0x00;
	assert_int_equal(smp_decode(mad, SMP_SIZE, &resp), 0);
	assert_int_equal(resp.status, 0);
	mad[5] = 0x0c;
	assert_int_equal(smp_decode(mad, SMP_SIZE, &resp), 0);
	assert_int_equal(resp.status, 0x0c);
}

static uint64_t field(const struct smp_field *f, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(f[i].name, name))
			return f[i].value;
	fail_msg("no field %s", name);
	return 0;
}

static void attribute_decoding(void **state)
{
	uint8_t d[SMP_DATA_SIZE] = { 0 };
	struct smp_field f[SMP_DATA_SIZE];
	int n;

	(void)state;
	/* NodeInfo of a 36-port switch with NodeGUID 0x0002c90300001234, local port 5. */
	d[2] = 2;
	d[3] = 36;
	memcpy(d + 12, "\x00\x02\xc9\x03\x00\x00\x12\x34", 8);
	d[36] = 5;
	memcpy(d + 37, "\x00\x02\xc9", 3);
	n = smp_decode_attr(SMP_ATTR_NODE_INFO, 0, d, f, SMP_DATA_SIZE);
	assert_int_equal(field(f, n, "NodeType"), 2);
	assert_int_equal(field(f, n, "NumPorts"), 36);
	assert_true(field(f, n, "Guid") == 0x0002c90300001234ull);
	assert_int_equal(field(f, n, "LocalPort"), 5);
	assert_int_equal(field(f, n, "VendorId"), 0x2c9);

	/* PortInfo: LID 0x0102, state ACTIVE (4) in the low nibble of byte 32, LMC 2. */
	memset(d, 0, sizeof(d));
	d[16] = 0x01;
	d[17] = 0x02;
	d[32] = 0x24;
	d[34] = 0x02;
	n = smp_decode_attr(SMP_ATTR_PORT_INFO, 0, d, f, SMP_DATA_SIZE);
	assert_int_equal(field(f, n, "Lid"), 0x102);
	assert_int_equal(field(f, n, "LinkState"), 4);
	assert_int_equal(field(f, n, "LinkSpeedSupported"), 2);
	assert_int_equal(field(f, n, "LMC"), 2);
	/* libibmad's field, for its own rendering, as smpquery prints it. */
	for (int i = 0; i < n; i++)
		if (!strcmp(f[i].name, "LinkState")) {
			char text[64];

			mad_dump_val((enum MAD_FIELDS)f[i].mad_field, text, sizeof(text), f[i].raw);
			assert_string_equal(text, "Active");
		}

	/* LFT block 2 = LIDs 128..191. */
	memset(d, 0, sizeof(d));
	d[1] = 7;
	n = smp_decode_attr(SMP_ATTR_LINEAR_FWD_TABLE, 2, d, f, SMP_DATA_SIZE);
	assert_int_equal(n, 64);
	assert_int_equal(field(f, n, "lid129"), 7);

	assert_int_equal(smp_decode_attr(0xff23, 0, d, f, SMP_DATA_SIZE), 0);
}

static void histogram_quantiles(void **state)
{
	struct histogram h, other;

	(void)state;
	hist_init(&h);
	assert_int_equal(hist_quantile(&h, 0.5), 0);
	for (uint64_t v = 1; v <= 10000; v++)
		hist_record(&h, v * 1000);
	assert_int_equal(h.min, 1000);
	assert_int_equal(h.max, 10000000);
	/* Within the 1/16 bucket resolution of the true values. */
	assert_true(hist_quantile(&h, 0.5) > 5000000 * 15 / 16 && hist_quantile(&h, 0.5) < 5000000 * 17 / 16);
	assert_true(hist_quantile(&h, 0.99) > 9900000 * 15 / 16 && hist_quantile(&h, 0.99) <= 10000000);
	assert_true(hist_mean(&h) > 5000499 && hist_mean(&h) < 5000501);

	hist_init(&other);
	hist_record(&other, 3);
	hist_merge(&h, &other);
	assert_int_equal(h.count, 10001);
	assert_int_equal(h.min, 3);
	assert_int_equal(hist_quantile(&h, 0), 3);
	hist_record(&h, UINT64_MAX); /* beyond the last octave: counted, not lost */
	assert_int_equal(h.max, UINT64_MAX);
	assert_int_equal(h.buckets[HIST_BUCKETS - 1], 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lid_routed_encoding),
		cmocka_unit_test(directed_route_encoding),
		cmocka_unit_test(attribute_decoding),
		cmocka_unit_test(histogram_quantiles),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
