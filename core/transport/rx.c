/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "core/transport/rx.h"

#include <errno.h>

void rx_sm_init(struct rx_sm *sm)
{
	atomic_init(&sm->state, RX_DISABLED);
	atomic_init(&sm->fc_events, 0);
	pthread_mutex_init(&sm->lock, NULL);
}

void rx_sm_destroy(struct rx_sm *sm)
{
	pthread_mutex_destroy(&sm->lock);
}

bool rx_transition_valid(enum rx_state from, enum rx_state to)
{
	switch (from) {
	case RX_DISABLED:
		return to == RX_ENABLED;
	case RX_ENABLED:
		return to == RX_FLOW_CONTROL || to == RX_DISABLED;
	case RX_FLOW_CONTROL:
		return to == RX_ENABLED || to == RX_DISABLED;
	}
	return false;
}

int rx_transition(struct rx_sm *sm, enum rx_state from, enum rx_state to)
{
	int rc = 0;

	if (!rx_transition_valid(from, to))
		return -EINVAL;
	pthread_mutex_lock(&sm->lock);
	if (atomic_load_explicit(&sm->state, memory_order_relaxed) != (int)from) {
		rc = -EBUSY;
	} else {
		atomic_store_explicit(&sm->state, to, memory_order_release);
		if (to == RX_FLOW_CONTROL)
			atomic_fetch_add_explicit(&sm->fc_events, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&sm->lock);
	return rc;
}
