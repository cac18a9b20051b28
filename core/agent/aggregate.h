/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Header aggregation: items (a proto header and its eager data) for one
 * target node are packed back to back into one 2 KB eager buffer, which goes
 * out when the next item would not fit, when it holds max_items (128), or
 * after two progress passes that added nothing (the link sends a lone item
 * on an idle link at once: core/agent/link/link.h).  With aggregation off
 * (RDMATOOL_AGENT_AGGREGATE=0, the benchmark's baseline) max_items is 1.
 * The receiver walks the buffer with proto_next().
 */
#ifndef RDMATOOL_CORE_AGENT_AGGREGATE_H
#define RDMATOOL_CORE_AGENT_AGGREGATE_H

#include "core/agent/proto.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AGG_MAX_ITEMS	128
#define AGG_IDLE_PASSES 2

struct agg_buffer {
	uint8_t data[PROTO_EAGER_BUFFER];
	size_t used;
	uint32_t items, max_items;
	uint32_t idle_passes;
	bool added; /* since the last progress pass */
};

/* max_items: AGG_MAX_ITEMS, or 1 with aggregation off. */
void agg_init(struct agg_buffer *b, uint32_t max_items);
/*
 * Appends one item.  -ENOSPC when it does not fit now (send the buffer, then
 * add again), -EMSGSIZE when it would not fit even an empty buffer.
 */
int agg_add(struct agg_buffer *b, const struct proto_header *h, const void *data);
/* Called once per progress pass: true when the buffer should go out now. */
bool agg_pass(struct agg_buffer *b);
/* After the buffer went out. */
void agg_reset(struct agg_buffer *b);
/* RDMATOOL_AGENT_AGGREGATE: unset or 1 = on, 0 = off; -EINVAL otherwise. */
int agg_max_items_from_env(uint32_t *max_items);

#endif
