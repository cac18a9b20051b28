/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "cmd/json.h"

#include <math.h>

void json_init(struct json *j, FILE *out, bool pretty)
{
	j->out = out;
	j->pretty = pretty;
	j->depth = 0;
	j->has_items[0] = false;
}

/*
 * The length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF), or 0 if there is none.
 */
static int utf8_length(const unsigned char *p)
{
	unsigned c = p[0];
	int n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;

	if (c >= 0xf5)
		return 0;
	for (int i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] >= 0xa0) || (c == 0xf0 && p[1] < 0x90) ||
	    (c == 0xf4 && p[1] >= 0x90))
		return 0;
	return n;
}

/* A JSON string, valid UTF-8 whatever the bytes: each byte of a malformed sequence becomes U+FFFD. */
static void write_escaped(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p >= 0x80) {
			int n = utf8_length(p);

			if (n) {
				fwrite(p, 1, (size_t)n, out);
				p += n - 1;
			} else {
				fputs("\\ufffd", out);
			}
			continue;
		}
		switch (*p) {
		case '"':
			fputs("\\\"", out);
			break;
		case '\\':
			fputs("\\\\", out);
			break;
		case '\n':
			fputs("\\n", out);
			break;
		case '\t':
			fputs("\\t", out);
			break;
		case '\r':
			fputs("\\r", out);
			break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				fprintf(out, "\\u%04x", *p);
			else
				fputc(*p, out);
		}
	}
	fputc('"', out);
}

static void indent(struct json *j)
{
	if (!j->pretty)
		return;
	fputc('\n', j->out);
	for (int i = 0; i < j->depth; i++)
		fputs("  ", j->out);
}

/* Separator, indentation and key before any value. */
static void begin_value(struct json *j, const char *key)
{
	if (j->depth > 0) {
		if (j->has_items[j->depth])
			fputc(',', j->out);
		indent(j);
	}
	j->has_items[j->depth] = true;
	if (key) {
		write_escaped(j->out, key);
		fputs(j->pretty ? ": " : ":", j->out);
	}
}

static void open_container(struct json *j, const char *key, char bracket)
{
	begin_value(j, key);
	fputc(bracket, j->out);
	if (j->depth + 1 < JSON_MAX_DEPTH)
		j->depth++;
	j->has_items[j->depth] = false;
}

static void close_container(struct json *j, char bracket)
{
	bool had_items = j->has_items[j->depth];

	if (j->depth > 0)
		j->depth--;
	if (had_items)
		indent(j);
	fputc(bracket, j->out);
}

void json_begin_object(struct json *j, const char *key)
{
	open_container(j, key, '{');
}

void json_end_object(struct json *j)
{
	close_container(j, '}');
}

void json_begin_array(struct json *j, const char *key)
{
	open_container(j, key, '[');
}

void json_end_array(struct json *j)
{
	close_container(j, ']');
}

void json_string(struct json *j, const char *key, const char *value)
{
	begin_value(j, key);
	if (value)
		write_escaped(j->out, value);
	else
		fputs("null", j->out);
}

void json_int(struct json *j, const char *key, long long value)
{
	begin_value(j, key);
	fprintf(j->out, "%lld", value);
}

void json_uint(struct json *j, const char *key, unsigned long long value)
{
	begin_value(j, key);
	fprintf(j->out, "%llu", value);
}

void json_double(struct json *j, const char *key, double value)
{
	begin_value(j, key);
	/* JSON has no NaN or infinity. */
	if (isfinite(value))
		fprintf(j->out, "%.10g", value);
	else
		fputs("null", j->out);
}

void json_bool(struct json *j, const char *key, bool value)
{
	begin_value(j, key);
	fputs(value ? "true" : "false", j->out);
}

void json_null(struct json *j, const char *key)
{
	begin_value(j, key);
	fputs("null", j->out);
}

void json_finish(struct json *j)
{
	fputc('\n', j->out);
	fflush(j->out);
}
