/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The soft NIC's wire as cmd/ sees it (hw/soft_wire.h): counters read without locks. */
#include "hw/soft_wire.h"
#include "hw/soft/soft.h"

#include <errno.h>
#include <string.h>

int hw_soft_wire_info(struct ibv_context *ctx, struct hw_soft_wire *out)
{
	struct soft_nic *nic;

	if (!ctx || !hw_soft_provider.owns_context(ctx))
		return ENODEV;
	nic = soft_nic_of(ctx);
	memset(out, 0, sizeof(*out));
	out->shm_allowed = nic->shm_allowed;
	out->shm_conns = atomic_load_explicit(&nic->shm_conns, memory_order_relaxed);
	out->tcp_conns = atomic_load_explicit(&nic->n_conns, memory_order_relaxed) - out->shm_conns;
	if (out->tcp_conns < 0)
		out->tcp_conns = 0;
	out->payload_bytes = atomic_load_explicit(&nic->wire_payload_bytes, memory_order_relaxed);
	out->copied_bytes = atomic_load_explicit(&nic->wire_copied_bytes, memory_order_relaxed);
	out->shm_refused = atomic_load_explicit(&nic->shm_refused, memory_order_relaxed);
	out->shm_quarantined = atomic_load_explicit(&nic->shm_quarantined, memory_order_relaxed);
	return 0;
}
