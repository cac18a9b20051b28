/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The soft CM's messages on the wire:
 *
 *	0  magic "SCM1"    4  type   5  qp_type   6  responder_resources
 *	7  initiator_depth 8  retry_count   9  rnr_retry_count   10 status (16)
 *	12 qpn (32)        16 psn (32)      20 gid[16]   36 private_data_len
 *	37 reserved, zero (3 bytes)         40 private data
 *
 * all little-endian.  What arrives is parsed from a private copy and checked
 * field by field before anything acts on it.
 */
#include "hw/soft/cm/cm.h"

#include <endian.h>
#include <stdatomic.h>
#include <string.h>

static atomic_ulong soft_cm_bad;

unsigned long soft_cm_bad_messages(void)
{
	return atomic_load_explicit(&soft_cm_bad, memory_order_relaxed);
}

void soft_cm_count_bad_message(void)
{
	atomic_fetch_add_explicit(&soft_cm_bad, 1, memory_order_relaxed);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

size_t soft_cm_msg_encode(const struct soft_cm_msg *m, uint8_t *out)
{
	uint16_t status = htole16(m->status);
	uint8_t len = m->private_data_len > SOFT_CM_MAX_PRIVATE ? SOFT_CM_MAX_PRIVATE : m->private_data_len;

	memset(out, 0, SOFT_CM_HDR_LEN);
	put32(out, SOFT_CM_MAGIC);
	out[4] = m->type;
	out[5] = m->qp_type;
	out[6] = m->responder_resources;
	out[7] = m->initiator_depth;
	out[8] = m->retry_count;
	out[9] = m->rnr_retry_count;
	memcpy(out + 10, &status, 2);
	put32(out + 12, m->qpn);
	put32(out + 16, m->psn);
	memcpy(out + 20, m->gid, 16);
	out[36] = len;
	memcpy(out + SOFT_CM_HDR_LEN, m->private_data, len);
	return SOFT_CM_HDR_LEN + len;
}

long soft_cm_msg_decode(const uint8_t *buf, size_t len, struct soft_cm_msg *m)
{
	uint8_t hdr[SOFT_CM_HDR_LEN];
	uint16_t status;
	size_t total;

	if (len < 4)
		return 0;
	if (get32(buf) != SOFT_CM_MAGIC)
		return -1;
	if (len < SOFT_CM_HDR_LEN)
		return 0;
	memcpy(hdr, buf, sizeof(hdr));
	if (hdr[4] < SOFT_CM_REQ || hdr[4] > SOFT_CM_DREP || hdr[36] > SOFT_CM_MAX_PRIVATE || hdr[37] ||
	    hdr[38] || hdr[39] || get32(hdr + 12) > 0xffffffu || get32(hdr + 16) > 0xffffffu)
		return -1;
	if (hdr[4] == SOFT_CM_REQ && hdr[5] != IBV_QPT_RC && hdr[5] != IBV_QPT_UC && hdr[5] != IBV_QPT_UD)
		return -1;
	total = SOFT_CM_HDR_LEN + hdr[36];
	if (len < total)
		return 0;
	memset(m, 0, sizeof(*m));
	m->type = hdr[4];
	m->qp_type = hdr[5];
	m->responder_resources = hdr[6];
	m->initiator_depth = hdr[7];
	m->retry_count = hdr[8];
	m->rnr_retry_count = hdr[9];
	memcpy(&status, hdr + 10, 2);
	m->status = le16toh(status);
	m->qpn = get32(hdr + 12);
	m->psn = get32(hdr + 16);
	memcpy(m->gid, hdr + 20, 16);
	m->private_data_len = hdr[36];
	memcpy(m->private_data, buf + SOFT_CM_HDR_LEN, hdr[36]);
	return (long)total;
}
