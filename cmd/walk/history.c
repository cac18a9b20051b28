/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The action history ring: the last N actions of a client, each line formatted when it is recorded, so that
 * dumping needs only write(2) and works from a crash signal handler.
 */
#include "cmd/walk/walk.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int walk_history_init(struct walk_history *h, int size)
{
	h->size = size;
	atomic_init(&h->next, 0);
	h->lines = size > 0 ? calloc((size_t)size, sizeof(*h->lines)) : NULL;
	return size > 0 && !h->lines ? -1 : 0;
}

void walk_history_free(struct walk_history *h)
{
	free(h->lines);
	h->lines = NULL;
}

void walk_history_add(struct walk_history *h, const char *fmt, ...)
{
	uint64_t n = atomic_load_explicit(&h->next, memory_order_relaxed);
	char *line;
	va_list ap;

	if (!h->lines)
		return;
	line = h->lines[n % (uint64_t)h->size];
	va_start(ap, fmt);
	vsnprintf(line, WALK_HISTORY_LINE, fmt, ap);
	va_end(ap);
	atomic_store_explicit(&h->next, n + 1, memory_order_release);
}

static void write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t w = write(fd, p, len);

		if (w <= 0)
			return;
		p += w;
		len -= (size_t)w;
	}
}

/* Decimal without stdio: async-signal-safe. */
static size_t format_u64(char *buf, uint64_t v)
{
	char tmp[24];
	size_t n = 0, i;

	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10) && n < sizeof(tmp));
	for (i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	return n;
}

void walk_history_dump(const struct walk_history *h, int fd, int client)
{
	uint64_t next = atomic_load_explicit(&h->next, memory_order_acquire);
	uint64_t first = next > (uint64_t)h->size ? next - (uint64_t)h->size : 0;
	char head[96];
	size_t n = 0;

	if (!h->lines)
		return;
	memcpy(head, "--- history of client ", 22);
	n = 22;
	n += format_u64(head + n, (uint64_t)client);
	memcpy(head + n, ": last ", 7);
	n += 7;
	n += format_u64(head + n, next - first);
	memcpy(head + n, " of ", 4);
	n += 4;
	n += format_u64(head + n, next);
	memcpy(head + n, " entries ---\n", 13);
	n += 13;
	write_all(fd, head, n);
	for (uint64_t i = first; i < next; i++) {
		const char *line = h->lines[i % (uint64_t)h->size];

		write_all(fd, line, strnlen(line, WALK_HISTORY_LINE - 1));
		write_all(fd, "\n", 1);
	}
}
