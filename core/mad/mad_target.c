/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* LID lists, directed-route paths and numbers from the command line. */
#include "core/mad/mad_target.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void say(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Reads one unsigned number (decimal or 0x hex) at *p, advancing it. */
static bool read_number(const char **p, unsigned long *value)
{
	char *end;

	if (**p < '0' || **p > '9')
		return false;
	errno = 0;
	*value = strtoul(*p, &end, 0);
	if (errno || end == *p)
		return false;
	*p = end;
	return true;
}

int mad_parse_number(const char *text, uint32_t max, uint32_t *value)
{
	unsigned long v;
	const char *p = text;

	if (!text || !read_number(&p, &v) || *p || v > max)
		return -1;
	*value = (uint32_t)v;
	return 0;
}

int mad_parse_lid_list(const char *text, uint16_t **lids, char *err, size_t errlen)
{
	uint8_t *seen = calloc(MAD_LID_MAX + 1, 1);
	uint16_t *out = NULL;
	const char *p = text;
	int n = 0, cap = 0;

	*lids = NULL;
	if (!seen) {
		say(err, errlen, "out of memory");
		return -1;
	}
	if (!text || !*text) {
		say(err, errlen, "empty LID list; give LIDs like 2,4-9");
		goto fail;
	}
	for (;;) {
		const char *item = p;
		unsigned long lo, hi;

		if (!read_number(&p, &lo)) {
			say(err, errlen, "bad LID list '%s' at '%s'; give LIDs like 2,4-9", text, item);
			goto fail;
		}
		hi = lo;
		if (*p == '-') {
			p++;
			if (!read_number(&p, &hi)) {
				say(err, errlen, "bad LID range in '%s' at '%s'; write a range as 4-9", text, item);
				goto fail;
			}
		}
		if (lo < MAD_LID_MIN || hi > MAD_LID_MAX || lo > MAD_LID_MAX) {
			say(err, errlen, "LID %lu in '%s' is not a unicast LID; use %d..%d", lo < MAD_LID_MIN ? lo : hi,
			    text, MAD_LID_MIN, MAD_LID_MAX);
			goto fail;
		}
		if (hi < lo) {
			say(err, errlen, "LID range %lu-%lu runs backwards; write it as %lu-%lu", lo, hi, hi, lo);
			goto fail;
		}
		for (unsigned long l = lo; l <= hi; l++) {
			if (seen[l])
				continue;
			seen[l] = 1;
			if (n == MAD_MAX_DESTS) {
				say(err, errlen, "more than %d LIDs in '%s'; give fewer destinations", MAD_MAX_DESTS,
				    text);
				goto fail;
			}
			if (n == cap) {
				uint16_t *grown;

				cap = cap ? cap * 2 : 16;
				grown = realloc(out, (size_t)cap * sizeof(*out));
				if (!grown) {
					say(err, errlen, "out of memory");
					goto fail;
				}
				out = grown;
			}
			out[n++] = (uint16_t)l;
		}
		if (!*p)
			break;
		if (*p != ',') {
			say(err, errlen, "bad LID list '%s' at '%s'; separate LIDs with commas", text, p);
			goto fail;
		}
		p++;
	}
	free(seen);
	*lids = out;
	return n;
fail:
	free(seen);
	free(out);
	return -1;
}

int mad_parse_dr_path(const char *text, struct smp_route *route, char *err, size_t errlen)
{
	const char *p = text;
	int hops = -1;

	memset(route, 0, sizeof(*route));
	route->directed = true;
	if (!text || !*text) {
		say(err, errlen, "empty directed route; give a path like 0,1,3");
		return -1;
	}
	for (;;) {
		const char *item = p;
		unsigned long port;

		if (!read_number(&p, &port)) {
			say(err, errlen, "bad directed route '%s' at '%s'; give a path like 0,1,3", text, item);
			return -1;
		}
		if (hops < 0) {
			if (port != 0) {
				say(err, errlen, "directed route '%s' must start at 0 (the local port), like 0,1,3",
				    text);
				return -1;
			}
		} else {
			if (port < 1 || port > 254) {
				say(err, errlen, "port %lu in directed route '%s' is not an exit port; use 1..254",
				    port, text);
				return -1;
			}
			if (hops == SMP_MAX_HOPS) {
				say(err, errlen, "directed route '%s' has more than %d hops", text, SMP_MAX_HOPS);
				return -1;
			}
			route->path[hops + 1] = (uint8_t)port;
		}
		hops++;
		if (!*p)
			break;
		if (*p != ',') {
			say(err, errlen, "bad directed route '%s' at '%s'; separate ports with commas", text, p);
			return -1;
		}
		p++;
	}
	route->hops = (uint8_t)hops;
	return 0;
}

void mad_route_format(const struct smp_route *route, char *buf, size_t len)
{
	size_t used;

	if (!route->directed) {
		snprintf(buf, len, "%u", route->lid);
		return;
	}
	used = (size_t)snprintf(buf, len, "0");
	for (int i = 1; i <= route->hops && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, ",%u", route->path[i]);
}
