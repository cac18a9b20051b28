/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The in-flight table of one MAD worker.  A MAD's TID (its low 32 bits,
 * which survive the kernel's rewrite of the high 32) is
 *     generation << bits | slot index,
 * so a reply finds its slot in O(1) and a late or duplicate reply (whose
 * generation no longer matches) is recognised without a search.  In-flight
 * slots also sit on a list in send order; every MAD has the same timeout,
 * so the head of that list is always the next one to expire.
 * Single-threaded: each worker owns its table.
 */
#ifndef RDMATOOL_CORE_MAD_SLOTS_H
#define RDMATOOL_CORE_MAD_SLOTS_H

#include <stdbool.h>
#include <stdint.h>

struct mad_slot {
	bool busy;
	uint32_t gen;
	int32_t dest;
	int32_t prev, next; /* send-order list of busy slots, -1 ends it */
	int tries_left;
	uint64_t sent_ns;
	uint64_t deadline_ns;
};

struct mad_slots {
	unsigned bits;
	uint32_t nslots;
	uint32_t nbusy;
	struct mad_slot *slot;
	int32_t *free_stack;
	uint32_t nfree;
	int32_t head, tail;
};

/* Room for capacity MADs in flight (rounded up to a power of two, at least 2). */
int mad_slots_init(struct mad_slots *s, uint32_t capacity);
void mad_slots_destroy(struct mad_slots *s);

/* Takes a free slot for dest and arms it; returns its index, or -1 when full. */
int mad_slots_take(struct mad_slots *s, int32_t dest, int tries_left, uint64_t now_ns, uint64_t deadline_ns);
/* Gives the slot a new TID and deadline for a retransmission (it moves to the list's tail). */
void mad_slots_rearm(struct mad_slots *s, int idx, uint64_t now_ns, uint64_t deadline_ns);
/* Frees a busy slot. */
void mad_slots_release(struct mad_slots *s, int idx);

/* The TID (low 32 bits) of a busy slot. */
static inline uint32_t mad_slots_tid(const struct mad_slots *s, int idx)
{
	return s->slot[idx].gen << s->bits | (uint32_t)idx;
}

/* The busy slot a reply's TID belongs to, or -1 (late, duplicate or foreign). */
static inline int mad_slots_lookup(const struct mad_slots *s, uint32_t tid)
{
	uint32_t idx = tid & (s->nslots - 1);
	const struct mad_slot *m = &s->slot[idx];

	return m->busy && (m->gen << s->bits | idx) == tid ? (int)idx : -1;
}

/* The busy slot sent longest ago (the next to expire), or -1. */
static inline int mad_slots_oldest(const struct mad_slots *s)
{
	return s->head;
}

#endif
