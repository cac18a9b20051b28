/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Bounded MPMC ring after Dmitry Vyukov ("Bounded MPMC queue", 1024cores).
 *
 * State: enqueue_pos and dequeue_pos (64-bit, never wrap in practice),
 * each alone on its cache line, and slots[capacity], each holding a
 * sequence number `seq` plus the element.  Initially slots[i].seq = i.
 *
 * Turn rule for position p, slot s = slots[p & mask]:
 *   s.seq == p       the slot is free for the producer of position p;
 *   s.seq == p + 1   it holds the element of position p, ready to consume;
 *   the consumer of p hands it to the producer of p + capacity by storing
 *   s.seq = p + capacity.
 *
 * Memory-ordering argument:
 *  1. A producer claims p by CAS on enqueue_pos (relaxed: the CAS only
 *     arbitrates between producers; nothing is published by it).  Only
 *     after winning does it write the element, then it stores
 *     s.seq = p + 1 with RELEASE.  A consumer reads s.seq with ACQUIRE and
 *     touches the element only once it sees p + 1, so the release/acquire
 *     pair orders the element write before the element read.  This is the
 *     step a naive ring gets wrong when it advances head (making the slot
 *     look published) before copying the entry, and checks for full only
 *     after having claimed, which leaves a hole.  Here claiming and
 *     publishing are two separate steps and fullness is decided before
 *     claiming.
 *  2. A consumer claims p by CAS on dequeue_pos (relaxed, same reason),
 *     copies the element out, then stores s.seq = p + capacity with
 *     RELEASE.  The producer of p + capacity acquires that value before it
 *     writes the slot, so its write cannot overtake the consumer's read
 *     (no write-after-read race on a reused slot).
 *  3. Full: a producer that sees s.seq < p (the previous lap's element is
 *     still there) returns -EAGAIN without touching anything.  Empty: a
 *     consumer that sees s.seq < p + 1 returns -EAGAIN likewise.
 *  4. A loser of either CAS reloads the position and retries; a slot seq
 *     ahead of the position it read means another thread already moved
 *     on, so it reloads too.  Progress is lock-free (some thread always
 *     completes), not wait-free.
 *  5. Wakeups (was_empty): after publishing p, a producer issues a SEQ_CST
 *     fence and reads dequeue_pos; equal to p means every older element
 *     was consumed, so the ring went empty -> non-empty.  The waiter side
 *     (cq_sread) advances dequeue_pos, issues its own SEQ_CST fence, then
 *     re-checks the slot before sleeping.  With a fence on both sides of
 *     this store->load pattern (Dekker), at least one of them sees the
 *     other: either the waiter finds the element or the producer sees
 *     dequeue_pos == p and signals.
 */
#include "core/transport/ring.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct ring_slot {
	_Atomic uint64_t seq;
	unsigned char data[];
};

struct ring {
	_Alignas(RING_CACHE_LINE) _Atomic uint64_t enqueue_pos;
	_Alignas(RING_CACHE_LINE) _Atomic uint64_t dequeue_pos;
	_Alignas(RING_CACHE_LINE) uint64_t mask;
	size_t elem_size;
	size_t stride;
	unsigned char *slots;
};

bool ring_valid_capacity(uint64_t capacity)
{
	return capacity >= 2 && capacity <= RING_MAX_CAPACITY && (capacity & (capacity - 1)) == 0;
}

static inline struct ring_slot *slot_at(const struct ring *r, uint64_t pos)
{
	return (struct ring_slot *)(r->slots + (pos & r->mask) * r->stride);
}

int ring_create(uint32_t capacity, size_t elem_size, struct ring **out)
{
	struct ring *r;

	if (!ring_valid_capacity(capacity) || elem_size == 0 || elem_size > 4096)
		return -EINVAL;
	if (posix_memalign((void **)&r, RING_CACHE_LINE, sizeof(*r)))
		return -ENOMEM;
	memset(r, 0, sizeof(*r));
	r->mask = capacity - 1;
	r->elem_size = elem_size;
	r->stride = (sizeof(struct ring_slot) + elem_size + 7) & ~(size_t)7;
	if (posix_memalign((void **)&r->slots, RING_CACHE_LINE, r->stride * capacity)) {
		free(r);
		return -ENOMEM;
	}
	for (uint64_t i = 0; i < capacity; i++)
		atomic_init(&slot_at(r, i)->seq, i);
	atomic_init(&r->enqueue_pos, 0);
	atomic_init(&r->dequeue_pos, 0);
	*out = r;
	return 0;
}

void ring_destroy(struct ring *r)
{
	if (!r)
		return;
	free(r->slots);
	free(r);
}

int ring_push(struct ring *r, const void *elem, bool *was_empty)
{
	uint64_t pos = atomic_load_explicit(&r->enqueue_pos, memory_order_relaxed);
	struct ring_slot *s;

	for (;;) {
		s = slot_at(r, pos);
		uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
		int64_t dif = (int64_t)(seq - pos);

		if (dif == 0) {
			if (atomic_compare_exchange_weak_explicit(&r->enqueue_pos, &pos, pos + 1,
								  memory_order_relaxed, memory_order_relaxed))
				break;
		} else if (dif < 0) {
			return -EAGAIN;
		} else {
			pos = atomic_load_explicit(&r->enqueue_pos, memory_order_relaxed);
		}
	}
	memcpy(s->data, elem, r->elem_size);
	atomic_store_explicit(&s->seq, pos + 1, memory_order_release);
	if (was_empty) {
		atomic_thread_fence(memory_order_seq_cst);
		*was_empty = atomic_load_explicit(&r->dequeue_pos, memory_order_relaxed) == pos;
	}
	return 0;
}

int ring_pop(struct ring *r, void *elem)
{
	uint64_t pos = atomic_load_explicit(&r->dequeue_pos, memory_order_relaxed);
	struct ring_slot *s;

	for (;;) {
		s = slot_at(r, pos);
		uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
		int64_t dif = (int64_t)(seq - (pos + 1));

		if (dif == 0) {
			if (atomic_compare_exchange_weak_explicit(&r->dequeue_pos, &pos, pos + 1,
								  memory_order_relaxed, memory_order_relaxed))
				break;
		} else if (dif < 0) {
			return -EAGAIN;
		} else {
			pos = atomic_load_explicit(&r->dequeue_pos, memory_order_relaxed);
		}
	}
	memcpy(elem, s->data, r->elem_size);
	atomic_store_explicit(&s->seq, pos + r->mask + 1, memory_order_release);
	return 0;
}

uint32_t ring_count(const struct ring *r)
{
	uint64_t deq = atomic_load_explicit(&((struct ring *)r)->dequeue_pos, memory_order_relaxed);
	uint64_t enq = atomic_load_explicit(&((struct ring *)r)->enqueue_pos, memory_order_relaxed);

	return enq > deq ? (uint32_t)(enq - deq) : 0;
}

uint32_t ring_capacity(const struct ring *r)
{
	return (uint32_t)(r->mask + 1);
}

struct ring_locked {
	pthread_mutex_t lock;
	uint64_t head, tail, mask;
	size_t elem_size;
	unsigned char *data;
};

int ring_locked_create(uint32_t capacity, size_t elem_size, struct ring_locked **out)
{
	struct ring_locked *q;

	if (!ring_valid_capacity(capacity) || elem_size == 0 || elem_size > 4096)
		return -EINVAL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->data = malloc((size_t)capacity * elem_size);
	if (!q->data) {
		free(q);
		return -ENOMEM;
	}
	pthread_mutex_init(&q->lock, NULL);
	q->mask = capacity - 1;
	q->elem_size = elem_size;
	*out = q;
	return 0;
}

void ring_locked_destroy(struct ring_locked *q)
{
	if (!q)
		return;
	pthread_mutex_destroy(&q->lock);
	free(q->data);
	free(q);
}

int ring_locked_push(struct ring_locked *q, const void *elem, bool *was_empty)
{
	int rc = 0;

	pthread_mutex_lock(&q->lock);
	if (q->tail - q->head > q->mask) {
		rc = -EAGAIN;
	} else {
		if (was_empty)
			*was_empty = q->tail == q->head;
		memcpy(q->data + (q->tail & q->mask) * q->elem_size, elem, q->elem_size);
		q->tail++;
	}
	pthread_mutex_unlock(&q->lock);
	return rc;
}

int ring_locked_pop(struct ring_locked *q, void *elem)
{
	int rc = 0;

	pthread_mutex_lock(&q->lock);
	if (q->tail == q->head) {
		rc = -EAGAIN;
	} else {
		memcpy(elem, q->data + (q->head & q->mask) * q->elem_size, q->elem_size);
		q->head++;
	}
	pthread_mutex_unlock(&q->lock);
	return rc;
}

uint32_t ring_locked_count(struct ring_locked *q)
{
	uint32_t n;

	pthread_mutex_lock(&q->lock);
	n = (uint32_t)(q->tail - q->head);
	pthread_mutex_unlock(&q->lock);
	return n;
}
