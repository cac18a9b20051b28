/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The receive path's state: an atomic word read on every receive post
 * (the lock-free fast path runs only while it says ENABLED) and a narrow
 * mutex taken only to change it.  FLOW_CONTROL means posted receives ran
 * out (the post ring or the receive pool was full); the slow path recovers
 * by re-checking the resources under the lock and moving back to ENABLED.
 */
#ifndef RDMATOOL_CORE_RX_H
#define RDMATOOL_CORE_RX_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

enum rx_state {
	RX_DISABLED,	 /* before enable / after close: posts fail with -ESHUTDOWN */
	RX_ENABLED,	 /* fast path */
	RX_FLOW_CONTROL, /* receives exhausted: posts take the slow path */
};

struct rx_sm {
	_Atomic int state;
	pthread_mutex_t lock;
	_Atomic uint64_t fc_events; /* ENABLED -> FLOW_CONTROL transitions */
};

void rx_sm_init(struct rx_sm *sm);
void rx_sm_destroy(struct rx_sm *sm);
bool rx_transition_valid(enum rx_state from, enum rx_state to);
/*
 * Moves from -> to under the state lock.  0 on success, -EBUSY when the
 * state is no longer `from` (someone else moved it), -EINVAL for a
 * transition the machine does not have.
 */
int rx_transition(struct rx_sm *sm, enum rx_state from, enum rx_state to);

static inline enum rx_state rx_state_get(struct rx_sm *sm)
{
	/* Acquire: pairs with the release in rx_transition, so a thread that
	 * sees ENABLED again also sees the resources the recovery freed. */
	return (enum rx_state)atomic_load_explicit(&sm->state, memory_order_acquire);
}

#endif
