/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The JSON writer: commas, nesting, escaping, non-finite numbers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cmd/json.h"

static char *render(void (*build)(struct json *), bool pretty);

/* A process or channel name is bytes: what is not UTF-8 must not reach the document as it is. */
static void build_bytes(struct json *j)
{
	json_begin_object(j, NULL);
	json_string(j, "ok", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	json_string(j, "bad",
		    "a\xff"
		    "b\xc3"
		    "c\xc0\xaf"
		    "d\xed\xa0\x80"
		    "e\xf4\x90\x80\x80"
		    "f\x7f");
	json_end_object(j);
}

static void invalid_utf8_replaced(void **state)
{
	char *out = render(build_bytes, false);

	(void)state;
	assert_string_equal(out, "{\"ok\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\","
				 "\"bad\":\"a\\ufffdb\\ufffdc\\ufffd\\ufffdd\\ufffd\\ufffd\\ufffde"
				 "\\ufffd\\ufffd\\ufffd\\ufffdf\\u007f\"}");
	free(out);
}

static char *render(void (*build)(struct json *), bool pretty)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct json j;

	json_init(&j, f, pretty);
	build(&j);
	fclose(f);
	return buf;
}

static void build_nested(struct json *j)
{
	json_begin_object(j, NULL);
	json_string(j, "name", "soft0");
	json_begin_array(j, "ports");
	json_begin_object(j, NULL);
	json_int(j, "port", 1);
	json_bool(j, "up", true);
	json_end_object(j);
	json_begin_object(j, NULL);
	json_int(j, "port", -2);
	json_end_object(j);
	json_end_array(j);
	json_begin_array(j, "empty");
	json_end_array(j);
	json_uint(j, "big", 18446744073709551615ULL);
	json_end_object(j);
}

static void nested_compact(void **state)
{
	(void)state;
	char *s = render(build_nested, false);

	assert_string_equal(s, "{\"name\":\"soft0\",\"ports\":[{\"port\":1,\"up\":true},{\"port\":-2}],"
			       "\"empty\":[],\"big\":18446744073709551615}");
	free(s);
}

static void nested_pretty(void **state)
{
	(void)state;
	char *s = render(build_nested, true);

	assert_non_null(strstr(s, "{\n  \"name\": \"soft0\",\n  \"ports\": [\n    {\n      \"port\": 1,"));
	assert_non_null(strstr(s, "\"empty\": [],"));
	free(s);
}

static void build_escapes(struct json *j)
{
	json_begin_object(j, NULL);
	json_string(j, "s", "a\"b\\c\nd\x01");
	json_string(j, "null", NULL);
	json_double(j, "nan", 0.0 / 0.0);
	json_double(j, "x", 2.5);
	json_end_object(j);
}

static void escapes_and_numbers(void **state)
{
	(void)state;
	char *s = render(build_escapes, false);

	assert_string_equal(s, "{\"s\":\"a\\\"b\\\\c\\nd\\u0001\",\"null\":null,\"nan\":null,\"x\":2.5}");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(nested_compact),
	    cmocka_unit_test(nested_pretty),
	    cmocka_unit_test(escapes_and_numbers),
	    cmocka_unit_test(invalid_utf8_replaced),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
