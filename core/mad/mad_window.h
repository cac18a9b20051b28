/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A counting window shared by MAD workers without a lock: at most limit
 * holders at once.  Used for the local port's window (-N, all workers
 * together), each destination's window (-n) and the MAD count (-c).
 */
#ifndef RDMATOOL_CORE_MAD_WINDOW_H
#define RDMATOOL_CORE_MAD_WINDOW_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct mad_window {
	_Atomic uint64_t used;
	uint64_t limit; /* 0 = unlimited */
};

static inline void mad_window_init(struct mad_window *w, uint64_t limit)
{
	atomic_init(&w->used, 0);
	w->limit = limit;
}

static inline bool mad_window_acquire(struct mad_window *w)
{
	uint64_t cur = atomic_load_explicit(&w->used, memory_order_relaxed);

	if (!w->limit) {
		atomic_fetch_add_explicit(&w->used, 1, memory_order_relaxed);
		return true;
	}
	do {
		if (cur >= w->limit)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(&w->used, &cur, cur + 1, memory_order_acq_rel,
							memory_order_relaxed));
	return true;
}

static inline void mad_window_release(struct mad_window *w)
{
	atomic_fetch_sub_explicit(&w->used, 1, memory_order_acq_rel);
}

static inline bool mad_window_full(struct mad_window *w)
{
	return w->limit && atomic_load_explicit(&w->used, memory_order_relaxed) >= w->limit;
}

static inline uint64_t mad_window_used(struct mad_window *w)
{
	return atomic_load_explicit(&w->used, memory_order_relaxed);
}

#endif
