/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* A streaming JSON writer: commas, nesting, escaping and -p indentation. */
#ifndef RDMATOOL_JSON_H
#define RDMATOOL_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 32

struct json {
	FILE *out;
	bool pretty;
	int depth;
	bool has_items[JSON_MAX_DEPTH];
};

void json_init(struct json *j, FILE *out, bool pretty);
/* key is NULL for array elements and the top-level value. */
void json_begin_object(struct json *j, const char *key);
void json_end_object(struct json *j);
void json_begin_array(struct json *j, const char *key);
void json_end_array(struct json *j);
void json_string(struct json *j, const char *key, const char *value);
void json_int(struct json *j, const char *key, long long value);
void json_uint(struct json *j, const char *key, unsigned long long value);
void json_double(struct json *j, const char *key, double value);
void json_bool(struct json *j, const char *key, bool value);
void json_null(struct json *j, const char *key);
/* Ends the document with a newline and flushes. */
void json_finish(struct json *j);

#endif
