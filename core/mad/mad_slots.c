/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* In-flight MAD table: free stack, generation-tagged TIDs, send-order list. */
#include "core/mad/mad_slots.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int mad_slots_init(struct mad_slots *s, uint32_t capacity)
{
	memset(s, 0, sizeof(*s));
	s->bits = 1;
	while ((1u << s->bits) < capacity)
		s->bits++;
	if (s->bits > 20)
		return -EINVAL;
	s->nslots = 1u << s->bits;
	s->slot = calloc(s->nslots, sizeof(*s->slot));
	s->free_stack = calloc(s->nslots, sizeof(*s->free_stack));
	if (!s->slot || !s->free_stack) {
		mad_slots_destroy(s);
		return -ENOMEM;
	}
	/* Pop order 0, 1, 2 ...: the stack holds indices high to low. */
	for (uint32_t i = 0; i < s->nslots; i++)
		s->free_stack[i] = (int32_t)(s->nslots - 1 - i);
	s->nfree = s->nslots;
	s->head = s->tail = -1;
	return 0;
}

void mad_slots_destroy(struct mad_slots *s)
{
	free(s->slot);
	free(s->free_stack);
	s->slot = NULL;
	s->free_stack = NULL;
}

static void list_append(struct mad_slots *s, int idx)
{
	struct mad_slot *m = &s->slot[idx];

	m->prev = s->tail;
	m->next = -1;
	if (s->tail >= 0)
		s->slot[s->tail].next = idx;
	else
		s->head = idx;
	s->tail = idx;
}

static void list_remove(struct mad_slots *s, int idx)
{
	struct mad_slot *m = &s->slot[idx];

	if (m->prev >= 0)
		s->slot[m->prev].next = m->next;
	else
		s->head = m->next;
	if (m->next >= 0)
		s->slot[m->next].prev = m->prev;
	else
		s->tail = m->prev;
	m->prev = m->next = -1;
}

/* A new generation, wrapped to the bits left above the index. */
static void next_gen(struct mad_slots *s, struct mad_slot *m)
{
	m->gen = (m->gen + 1) & ((1u << (32 - s->bits)) - 1);
}

int mad_slots_take(struct mad_slots *s, int32_t dest, int tries_left, uint64_t now_ns, uint64_t deadline_ns)
{
	struct mad_slot *m;
	int idx;

	if (!s->nfree)
		return -1;
	idx = s->free_stack[--s->nfree];
	m = &s->slot[idx];
	next_gen(s, m);
	m->busy = true;
	m->dest = dest;
	m->tries_left = tries_left;
	m->sent_ns = now_ns;
	m->deadline_ns = deadline_ns;
	list_append(s, idx);
	s->nbusy++;
	return idx;
}

void mad_slots_rearm(struct mad_slots *s, int idx, uint64_t now_ns, uint64_t deadline_ns)
{
	struct mad_slot *m = &s->slot[idx];

	next_gen(s, m);
	m->sent_ns = now_ns;
	m->deadline_ns = deadline_ns;
	list_remove(s, idx);
	list_append(s, idx);
}

void mad_slots_release(struct mad_slots *s, int idx)
{
	struct mad_slot *m = &s->slot[idx];

	list_remove(s, idx);
	m->busy = false;
	s->free_stack[s->nfree++] = idx;
	s->nbusy--;
}
