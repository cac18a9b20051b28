/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "core/agent/aggregate.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void agg_init(struct agg_buffer *b, uint32_t max_items)
{
	b->max_items = max_items ? max_items : 1;
	agg_reset(b);
}

void agg_reset(struct agg_buffer *b)
{
	b->used = 0;
	b->items = 0;
	b->idle_passes = 0;
	b->added = false;
}

int agg_add(struct agg_buffer *b, const struct proto_header *h, const void *data)
{
	size_t need = PROTO_HEADER_SIZE + (size_t)h->eager_size;

	if (need > PROTO_EAGER_BUFFER)
		return -EMSGSIZE;
	if (b->items >= b->max_items || b->used + need > PROTO_EAGER_BUFFER)
		return -ENOSPC;
	proto_header_encode(h, b->data + b->used);
	if (h->eager_size)
		memcpy(b->data + b->used + PROTO_HEADER_SIZE, data, h->eager_size);
	b->used += need;
	b->items++;
	b->added = true;
	return 0;
}

bool agg_pass(struct agg_buffer *b)
{
	if (!b->items)
		return false;
	if (b->items >= b->max_items || b->used + PROTO_HEADER_SIZE > PROTO_EAGER_BUFFER)
		return true;
	b->idle_passes = b->added ? 0 : b->idle_passes + 1;
	b->added = false;
	return b->idle_passes >= AGG_IDLE_PASSES;
}

int agg_max_items_from_env(uint32_t *max_items)
{
	const char *v = getenv("RDMATOOL_AGENT_AGGREGATE");

	if (!v || !strcmp(v, "1")) {
		*max_items = AGG_MAX_ITEMS;
		return 0;
	}
	if (!strcmp(v, "0")) {
		*max_items = 1;
		return 0;
	}
	return -EINVAL;
}
