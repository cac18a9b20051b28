/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The soft NIC's TCP wire format (wire.c).  Every packet is the header of
 * struct soft_pkt (soft.h: its first SOFT_PKT_HDR_LEN bytes, every field
 * little-endian, the GIDs as they are), then `payload` bytes: a SEND's or
 * WRITE's data, or a READ response's.  REQ packets go from a requester to
 * the responder's listening address; RSP packets come back on the same
 * connection.
 */
#ifndef RDMATOOL_HW_SOFT_WIRE_H
#define RDMATOOL_HW_SOFT_WIRE_H

#include <stdint.h>

#define SOFT_WIRE_MAGIC 0x53574952u /* "SWIR" */
/*
 * On the shared-memory rings only: the payload is a list of (address,
 * length) pairs, 16 bytes each, little-endian, in the sender's memory, which
 * the receiver pulls with process_vm_readv (shm.h).
 */
#define SOFT_WIRE_MAGIC_REF 0x53574946u /* "FWIS" */
#define SOFT_SHM_INLINE_MAX 16384	/* larger stable payloads go by reference on the rings */

#endif
