/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The soft NIC's wire format (wire.c).  Every packet is this header, all
 * fields little-endian, then `payload` bytes: a SEND's or WRITE's data, or
 * a READ response's.  REQ packets go from a requester to the responder's
 * listening address; RSP packets come back on the same connection.
 */
#ifndef RDMATOOL_HW_SOFT_WIRE_H
#define RDMATOOL_HW_SOFT_WIRE_H

#include <stdint.h>

#define SOFT_WIRE_MAGIC 0x53574952u /* "SWIR" */

enum { SOFT_PKT_REQ = 1, SOFT_PKT_RSP = 2 };

struct soft_wire_hdr {
	uint32_t magic, payload;
	uint8_t type, opcode, qp_type, solicited, kind, status, rnr_timer, pad;
	uint32_t src_qpn, dst_qpn, psn, qkey, rkey, imm_data, invalidate_rkey, length;
	uint64_t raddr, compare_add, swap;
	uint8_t sgid[16], dgid[16];
} __attribute__((packed));

#endif
