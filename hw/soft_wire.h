/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * What the soft NIC's wire does, for cmd/ to show (devices -v) and measure
 * (copies per payload byte): which wire its peers are on and how many bytes
 * its CPU copied to move how many payload bytes.  hw/soft/wire_info.c.
 */
#ifndef RDMATOOL_HW_SOFT_WIRE_INFO_H
#define RDMATOOL_HW_SOFT_WIRE_INFO_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>

struct hw_soft_wire {
	bool shm_allowed;	       /* RDMATOOL_SOFT_SHM: local peers may share memory */
	int shm_conns, tcp_conns;      /* connections to peers on each wire */
	uint64_t payload_bytes;	       /* payload bytes delivered */
	uint64_t copied_bytes;	       /* bytes the CPU copied to move packets */
	unsigned long shm_refused;     /* shared-memory offers refused or failed (stayed on TCP) */
	unsigned long shm_quarantined; /* connections given up for a broken ring */
};

/* Fills out for a context of the soft device; ENODEV for another provider's. */
int hw_soft_wire_info(struct ibv_context *ctx, struct hw_soft_wire *out);

#endif
