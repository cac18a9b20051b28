/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* One printer per field for text and JSON (see print.h). */
#include "cmd/print.h"
#include "cmd/cmd.h"
#include "cmd/json.h"

#include <stdarg.h>
#include <stdio.h>

static struct json doc;
static bool json_mode;

void print_begin(void)
{
	json_mode = global_opts.json;
	if (!json_mode)
		return;
	json_init(&doc, stdout, global_opts.pretty);
	json_begin_object(&doc, NULL);
}

void print_end(void)
{
	if (!json_mode)
		return;
	json_end_object(&doc);
	json_finish(&doc);
}

bool print_is_json(void)
{
	return json_mode;
}

void print_open_object(const char *key)
{
	if (json_mode)
		json_begin_object(&doc, key);
}

void print_close_object(void)
{
	if (json_mode)
		json_end_object(&doc);
}

void print_open_array(const char *key)
{
	if (json_mode)
		json_begin_array(&doc, key);
}

void print_close_array(void)
{
	if (json_mode)
		json_end_array(&doc);
}

/* Whether this output takes the field, and then through which channel. */
static bool to_json(enum print_kind kind, const char *key)
{
	return json_mode && kind != PRINT_TEXT && key;
}

static bool to_text(enum print_kind kind, const char *fmt)
{
	return !json_mode && kind != PRINT_JSON && fmt;
}

/* The formats are the callers' literals, typed by the value (see print.h). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"

void print_string(enum print_kind kind, const char *key, const char *fmt, const char *value)
{
	if (to_json(kind, key))
		json_string(&doc, key, value);
	else if (to_text(kind, fmt))
		printf(fmt, value);
}

void print_int(enum print_kind kind, const char *key, const char *fmt, long long value)
{
	if (to_json(kind, key))
		json_int(&doc, key, value);
	else if (to_text(kind, fmt))
		printf(fmt, value);
}

void print_uint(enum print_kind kind, const char *key, const char *fmt, unsigned long long value)
{
	if (to_json(kind, key))
		json_uint(&doc, key, value);
	else if (to_text(kind, fmt))
		printf(fmt, value);
}

void print_double(enum print_kind kind, const char *key, const char *fmt, double value)
{
	if (to_json(kind, key))
		json_double(&doc, key, value);
	else if (to_text(kind, fmt))
		printf(fmt, value);
}

void print_bool(enum print_kind kind, const char *key, const char *fmt, bool value)
{
	if (to_json(kind, key))
		json_bool(&doc, key, value);
	else if (to_text(kind, fmt))
		printf(fmt, value ? "yes" : "no");
}

void print_array_string(enum print_kind kind, const char *fmt, const char *value)
{
	if (json_mode && kind != PRINT_TEXT)
		json_string(&doc, NULL, value);
	else if (to_text(kind, fmt))
		printf(fmt, value);
}

#pragma GCC diagnostic pop

void print_text(const char *fmt, ...)
{
	va_list ap;

	if (json_mode)
		return;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
}
