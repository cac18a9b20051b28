/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A bounded lock-free MPMC ring (Dmitry Vyukov's design): every slot
 * carries a sequence number that says whose turn it is, so a producer
 * writes the slot *before* it becomes visible to a consumer, and a full
 * ring refuses (-EAGAIN) instead of overwriting.  Used as the MPSC
 * completion ring (many stripes push, cq_read pops) and as the request
 * free-list of a stripe (any thread allocates and frees).
 *
 * Capacity is a power of two >= 2; elements are copied in and out
 * (elem_size bytes), so no pointer into the ring ever escapes.
 *
 * ring_locked_* is a mutex-protected queue with the same contract: the
 * baseline `rdmatool bench ring` compares against.
 */
#ifndef RDMATOOL_CORE_RING_H
#define RDMATOOL_CORE_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RING_CACHE_LINE 64
#define RING_MAX_CAPACITY (1u << 24)

struct ring;
struct ring_locked;

/* 0, or -EINVAL (capacity not a power of two in [2, RING_MAX_CAPACITY], elem_size 0) / -ENOMEM. */
int ring_create(uint32_t capacity, size_t elem_size, struct ring **out);
void ring_destroy(struct ring *r);

/*
 * Copies *elem into the ring.  Safe from any number of threads at once.
 * Returns 0, or -EAGAIN when the ring is full (nothing is written).
 * *was_empty (optional) is set when the ring held nothing older than this
 * element at the moment it was published: the empty-to-non-empty edge that
 * a waiter needs to hear about (see ring_push in ring.c for how it is decided).
 */
int ring_push(struct ring *r, const void *elem, bool *was_empty);
/* Copies the oldest element out.  Safe from any number of threads. 0 or -EAGAIN (empty). */
int ring_pop(struct ring *r, void *elem);

/* Elements in the ring right now (exact when no push/pop is in flight). */
uint32_t ring_count(const struct ring *r);
uint32_t ring_capacity(const struct ring *r);
bool ring_valid_capacity(uint64_t capacity);

/* The mutex baseline: same semantics, one pthread mutex around everything. */
int ring_locked_create(uint32_t capacity, size_t elem_size, struct ring_locked **out);
void ring_locked_destroy(struct ring_locked *q);
int ring_locked_push(struct ring_locked *q, const void *elem, bool *was_empty);
int ring_locked_pop(struct ring_locked *q, void *elem);
uint32_t ring_locked_count(struct ring_locked *q);

#endif
