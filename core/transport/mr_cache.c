/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The read-mostly MR cache.  A lookup takes the read side of a rwlock,
 * scans the slot array for a registration covering the range, counts one
 * more operation in flight on it and stamps its recency with a relaxed
 * store: no write lock on a hit.  The operation gives it back when its
 * completion is processed (mr_cache_release).  A miss registers under the
 * control mutex and inserts under the write side; registrations cover the
 * requested range with every access right.
 *
 * The bound: at most attr.env.mr_cache_max (RDMATOOL_MR_CACHE_MAX, default
 * 64, 0 = none kept once idle) cached registrations per endpoint.  A miss
 * that would exceed it first deregisters the least recently used entry with
 * no operation in flight.  When every entry is in flight it registers
 * anyway, and the cache shrinks back as those operations complete.
 * Registrations made by core_mr_reg are pinned (the peer holds their rkey)
 * and do not count.  core_mr_dereg drops overlapping registrations: they
 * leave the slot array at once (no lookup finds them again) and wait on the
 * dropped list until their last operation completes.
 *
 * Who trims: mr_trim says "over the bound, or dropped entries pending".  A
 * release that brings an entry's users to 0 reads it after its decrement;
 * trim raises it before reading the users counts (all seq_cst), so at
 * least one of the two sees the other and no idle entry is left behind.
 * Trimming from a release takes the control mutex: code holding ctrl must
 * never wait for progress.
 */
#include "core/transport/endpoint_impl.h"
#include "hw/hw.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ACCESS_ALL \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)

static struct mr_cache_entry *find(struct core_ep *ep, uintptr_t start, uintptr_t end)
{
	for (int i = 0; i < ep->nmrs; i++)
		if (ep->mrs[i].start <= start && end <= ep->mrs[i].end)
			return ep->mrs[i].entry;
	return NULL;
}

/* Under the read (or write) lock: the entry cannot be evicted while it is counted. */
static inline void acquire(struct core_ep *ep, struct mr_cache_entry *e)
{
	uint64_t now = atomic_load_explicit(&ep->mr_clock, memory_order_relaxed);

	atomic_fetch_add_explicit(&e->uses, MR_HIT + 1, memory_order_relaxed);
	if (atomic_load_explicit(&e->last_use, memory_order_relaxed) != now)
		atomic_store_explicit(&e->last_use, now, memory_order_relaxed);
}

static inline bool idle(struct mr_cache_entry *e)
{
	return (atomic_load_explicit(&e->uses, memory_order_seq_cst) & MR_USERS_MASK) == 0;
}

static void slot_remove(struct core_ep *ep, int i)
{
	ep->mrs[i] = ep->mrs[--ep->nmrs];
}

static int cached_count(struct core_ep *ep)
{
	int n = 0;

	for (int i = 0; i < ep->nmrs; i++)
		n += ep->mrs[i].entry->pins == 0;
	return n;
}

/*
 * Under ctrl and the write lock: unlinks the idle dropped entries, and idle
 * cached ones (least recently used first) until `room` more fit within the
 * bound.  Returns them as a list to deregister after unlocking.
 */
static struct mr_cache_entry *trim_locked(struct core_ep *ep, int room)
{
	struct mr_cache_entry *victims = NULL, **pd = &ep->mr_dropped, *e;
	int cached, max = (int)ep->attr.env.mr_cache_max;

	atomic_store_explicit(&ep->mr_trim, 1, memory_order_seq_cst);
	while ((e = *pd)) {
		if (idle(e)) {
			*pd = e->next;
			e->next = victims;
			victims = e;
		} else {
			pd = &e->next;
		}
	}
	for (cached = cached_count(ep); cached + room > max; cached--) {
		int best = -1;
		uint64_t oldest = 0;

		for (int i = 0; i < ep->nmrs; i++) {
			uint64_t used;

			e = ep->mrs[i].entry;
			if (e->pins || !idle(e))
				continue;
			used = atomic_load_explicit(&e->last_use, memory_order_relaxed);
			if (best < 0 || used < oldest) {
				best = i;
				oldest = used;
			}
		}
		if (best < 0)
			break; /* every one is in flight: their releases trim */
		e = ep->mrs[best].entry;
		slot_remove(ep, best);
		e->next = victims;
		victims = e;
		ep->mr_evictions++;
	}
	return victims;
}

/* Under ctrl and the write lock; lowering the flag is safe only when nothing is pending. */
static void update_trim_flag(struct core_ep *ep)
{
	bool pending = ep->mr_dropped || cached_count(ep) > (int)ep->attr.env.mr_cache_max;

	atomic_store_explicit(&ep->mr_trim, pending, memory_order_seq_cst);
}

static inline uint64_t hits_of(struct mr_cache_entry *e)
{
	return atomic_load_explicit(&e->uses, memory_order_relaxed) >> MR_USERS_BITS;
}

static inline bool busy(struct mr_cache_entry *e)
{
	return (atomic_load_explicit(&e->uses, memory_order_acquire) & MR_USERS_MASK) != 0;
}

/* Under ctrl: the victims' hits join the total, then they are deregistered outside the write lock. */
static void dereg_list(struct core_ep *ep, struct mr_cache_entry *victims)
{
	struct mr_cache_entry *e;

	while ((e = victims)) {
		victims = e->next;
		ep->mr_gone_hits += hits_of(e);
		hw_dereg_mr(e->mr);
		free(e);
	}
}

/* Under ctrl: trims to the bound and deregisters what it took out. */
static void trim_ctrl_held(struct core_ep *ep)
{
	struct mr_cache_entry *victims;

	pthread_rwlock_wrlock(&ep->mr_lock);
	victims = trim_locked(ep, 0);
	update_trim_flag(ep);
	pthread_rwlock_unlock(&ep->mr_lock);
	dereg_list(ep, victims);
}

static void trim(struct core_ep *ep)
{
	pthread_mutex_lock(&ep->ctrl);
	trim_ctrl_held(ep);
	pthread_mutex_unlock(&ep->ctrl);
}

/* Under ctrl: makes room, registers, inserts.  A pinned entry is not acquired, a cached one is. */
static int add(struct core_ep *ep, uintptr_t start, uintptr_t end, bool pin, struct mr_cache_entry **out)
{
	struct mr_cache_entry *e = NULL, *victims;
	int rc = 0;

	pthread_rwlock_wrlock(&ep->mr_lock);
	victims = trim_locked(ep, pin ? 0 : 1);
	pthread_rwlock_unlock(&ep->mr_lock);
	/* Deregister first: what is pinned at once stays within the bound. */
	dereg_list(ep, victims);

	ep->mr_misses++;
	e = aligned_alloc(64, sizeof(*e));
	if (!e) {
		rc = -ENOMEM;
		goto out;
	}
	memset(e, 0, sizeof(*e));
	e->mr = hw_reg_mr(ep->pd, (void *)start, end - start, ACCESS_ALL);
	if (!e->mr) {
		rc = errno ? -errno : -ENOMEM;
		free(e);
		e = NULL;
		goto out;
	}
	e->pins = pin;
	atomic_init(&e->uses, pin ? 0 : 1);
	atomic_init(&e->last_use, atomic_fetch_add_explicit(&ep->mr_clock, 1, memory_order_relaxed) + 1);
out:
	pthread_rwlock_wrlock(&ep->mr_lock);
	if (!rc && ep->nmrs == ep->mr_cap) {
		int cap = ep->mr_cap ? ep->mr_cap * 2 : 16;
		struct mr_cache_slot *n = realloc(ep->mrs, (size_t)cap * sizeof(*n));

		if (n) {
			ep->mrs = n;
			ep->mr_cap = cap;
		} else {
			rc = -ENOMEM;
		}
	}
	if (!rc)
		ep->mrs[ep->nmrs++] = (struct mr_cache_slot){ start, end, e };
	update_trim_flag(ep);
	pthread_rwlock_unlock(&ep->mr_lock);
	if (rc && e) {
		hw_dereg_mr(e->mr); /* no room in the slot array */
		free(e);
	}
	if (!rc)
		*out = e;
	return rc;
}

static inline void range_of(const void *addr, size_t len, uintptr_t *start, uintptr_t *end)
{
	*start = (uintptr_t)addr;
	*end = *start + (len ? len : 1);
}

int mr_cache_lookup(struct core_ep *ep, const void *addr, size_t len, struct mr_cache_entry **out)
{
	struct mr_cache_entry *e;
	uintptr_t start, end;
	int rc = 0;

	range_of(addr, len, &start, &end);
	pthread_rwlock_rdlock(&ep->mr_lock);
	e = find(ep, start, end);
	if (e)
		acquire(ep, e);
	pthread_rwlock_unlock(&ep->mr_lock);
	if (e) {
		*out = e;
		return 0;
	}
	pthread_mutex_lock(&ep->ctrl);
	pthread_rwlock_rdlock(&ep->mr_lock);
	e = find(ep, start, end); /* another thread may have registered it meanwhile */
	if (e)
		acquire(ep, e);
	pthread_rwlock_unlock(&ep->mr_lock);
	if (!e)
		rc = add(ep, start, end, false, &e);
	pthread_mutex_unlock(&ep->ctrl);
	if (!rc)
		*out = e;
	return rc;
}

void mr_cache_release(struct core_ep *ep, struct mr_cache_entry *e)
{
	/* After the decrement e may be gone: only the endpoint's flag is read. */
	if (e && (atomic_fetch_sub_explicit(&e->uses, 1, memory_order_seq_cst) & MR_USERS_MASK) == 1 &&
	    atomic_load_explicit(&ep->mr_trim, memory_order_seq_cst))
		trim(ep);
}

void mr_cache_fini(struct core_ep *ep)
{
	struct mr_cache_entry *victims = ep->mr_dropped;

	for (int i = 0; i < ep->nmrs; i++) {
		ep->mrs[i].entry->next = victims;
		victims = ep->mrs[i].entry;
	}
	dereg_list(ep, victims);
	free(ep->mrs);
	ep->mrs = NULL;
	ep->mr_dropped = NULL;
	ep->nmrs = ep->mr_cap = 0;
}

int core_mr_reg(struct core_ep *ep, void *addr, size_t len, struct core_mr *out)
{
	struct mr_cache_entry *e;
	uintptr_t start, end;
	int rc = 0;

	range_of(addr, len, &start, &end);
	pthread_mutex_lock(&ep->ctrl);
	pthread_rwlock_rdlock(&ep->mr_lock);
	e = find(ep, start, end);
	pthread_rwlock_unlock(&ep->mr_lock);
	if (e) {
		/* pins belongs to ctrl holders, who alone evict: e stays while we hold ctrl. */
		e->pins++;
		atomic_fetch_add_explicit(&e->uses, MR_HIT, memory_order_relaxed);
	} else {
		rc = add(ep, start, end, true, &e);
	}
	pthread_mutex_unlock(&ep->ctrl);
	if (rc)
		return rc;
	out->addr = addr;
	out->len = len;
	out->lkey = e->mr->lkey;
	out->rkey = e->mr->rkey;
	return 0;
}

int core_mr_dereg(struct core_ep *ep, void *addr, size_t len)
{
	uintptr_t start, end;
	int n = 0;

	range_of(addr, len, &start, &end);
	pthread_mutex_lock(&ep->ctrl);
	pthread_rwlock_wrlock(&ep->mr_lock);
	for (int i = 0; i < ep->nmrs;) {
		struct mr_cache_slot *s = &ep->mrs[i];

		if (s->start >= end || start >= s->end) {
			i++;
			continue;
		}
		s->entry->next = ep->mr_dropped;
		ep->mr_dropped = s->entry;
		slot_remove(ep, i);
		n++;
	}
	ep->mr_drops += (uint64_t)n;
	pthread_rwlock_unlock(&ep->mr_lock);
	/* The dropped entries are out of the slots already: no lookup finds them in between. */
	trim_ctrl_held(ep);
	pthread_mutex_unlock(&ep->ctrl);
	return n;
}

void core_mr_cache_stats(struct core_ep *ep, struct core_mr_cache_stats *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&ep->ctrl);
	pthread_rwlock_rdlock(&ep->mr_lock);
	out->hits = ep->mr_gone_hits;
	out->misses = ep->mr_misses;
	out->evictions = ep->mr_evictions;
	out->drops = ep->mr_drops;
	for (int i = 0; i < ep->nmrs; i++) {
		struct mr_cache_entry *e = ep->mrs[i].entry;
		bool in_flight = busy(e);

		out->hits += hits_of(e);
		out->entries++;
		out->in_flight += in_flight;
		out->pinned += e->pins != 0;
		out->idle += !in_flight && !e->pins;
	}
	for (struct mr_cache_entry *e = ep->mr_dropped; e; e = e->next) {
		out->hits += hits_of(e);
		out->entries++;
		out->in_flight += busy(e);
	}
	pthread_rwlock_unlock(&ep->mr_lock);
	pthread_mutex_unlock(&ep->ctrl);
}
