/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * One call per field for both outputs, after iproute2's json_print: with -j
 * a field becomes "key": value in the JSON document, without it the value
 * is printed through the field's text format.  PRINT_ANY fields appear in
 * both; PRINT_JSON and PRINT_TEXT fields in one only (a JSON-only limit, a
 * text-only separator).  A NULL key or format means "nothing for that
 * output".  Formats take the value's own type: %s, %lld, %llu, %f/%g, and
 * for print_bool a %s that gets "yes" or "no".
 */
#ifndef RDMATOOL_PRINT_H
#define RDMATOOL_PRINT_H

#include <stdbool.h>

enum print_kind {
	PRINT_ANY,
	PRINT_JSON,
	PRINT_TEXT,
};

/* Opens (with -j) the document's top-level object; print_end closes and flushes it. */
void print_begin(void);
void print_end(void);
bool print_is_json(void);

/* Nesting exists in JSON only; key is NULL inside arrays. */
void print_open_object(const char *key);
void print_close_object(void);
void print_open_array(const char *key);
void print_close_array(void);

void print_string(enum print_kind kind, const char *key, const char *fmt, const char *value);
void print_int(enum print_kind kind, const char *key, const char *fmt, long long value);
void print_uint(enum print_kind kind, const char *key, const char *fmt, unsigned long long value);
void print_double(enum print_kind kind, const char *key, const char *fmt, double value);
void print_bool(enum print_kind kind, const char *key, const char *fmt, bool value);
/* An element of the enclosing JSON array (no key); in text, printed through fmt. */
void print_array_string(enum print_kind kind, const char *fmt, const char *value);
/* Text output only: labels, separators, newlines. */
void print_text(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
