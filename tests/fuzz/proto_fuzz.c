/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * libFuzzer target for the agents' receive-side parser (core/agent/proto.c,
 * proto_parse: what an agent runs on every message from a peer), built and
 * run by `make fuzz` with clang's -fsanitize=fuzzer,address,undefined.  The
 * first input byte picks an eager buffer or a large frame; the rest is the
 * message, in a buffer of exactly its length.  Aborts when an accepted item
 * lies outside the message, or a rejection is not counted exactly once.
 */
#include "core/agent/proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct parsed {
	const uint8_t *buf;
	size_t len;
	int items;
};

static void check_item(void *arg, const struct proto_header *h, const uint8_t *data, size_t len)
{
	struct parsed *p = arg;

	if (data < p->buf + PROTO_HEADER_SIZE || data + len > p->buf + p->len || h->type >= PROTO_NTYPES ||
	    (h->type >= PROTO_ACK && len < 4))
		abort();
	p->items++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_errors e = {0};
	struct parsed p;
	uint64_t counted = 0;
	uint8_t *msg;
	int rc;

	if (size == 0)
		return 0;
	msg = malloc(size - 1 ? size - 1 : 1);
	if (!msg)
		return 0;
	memcpy(msg, data + 1, size - 1);
	p = (struct parsed){.buf = msg, .len = size - 1};
	rc = proto_parse(msg, size - 1, data[0] & 1, check_item, &p, &e);
	for (int i = 0; i < PROTO_NERRORS; i++)
		counted += e.count[i];
	if (rc < 0 ? rc != -EBADMSG || counted != 1 : rc != p.items || counted != 0)
		abort();
	free(msg);
	return 0;
}
