/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* SMP encoding and decoding, and the attribute decoders behind -v, on libibmad's field tables. */
#include "core/mad/mad_smp.h"

#include <errno.h>
#include <infiniband/mad.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define PERMISSIVE_LID 0xffff

/* libibmad's accessors take a non-const buffer for reading too; they only read. */
#define RD(mad) ((void *)(uintptr_t)(mad))

void smp_encode(uint8_t mad[SMP_SIZE], const struct smp_route *route, const struct smp_request *req)
{
	uint8_t path[64] = {0};

	memset(mad, 0, SMP_SIZE);
	mad_set_field(mad, 0, IB_MAD_BASEVER_F, 1);
	mad_set_field(mad, 0, IB_MAD_MGMTCLASS_F, route->directed ? SMP_CLASS_DR : SMP_CLASS_LID);
	mad_set_field(mad, 0, IB_MAD_CLASSVER_F, 1);
	/* libibmad splits the method byte: the response bit on top, the method below. */
	mad_set_field(mad, 0, IB_MAD_METHOD_F, req->method & 0x7f);
	mad_set_field(mad, 0, IB_MAD_RESPONSE_F, req->method >> 7);
	/* The TID's high 32 bits stay zero: the kernel puts the agent id there. */
	mad_set_field64(mad, 0, IB_MAD_TRID_F, req->tid);
	mad_set_field(mad, 0, IB_MAD_ATTRID_F, req->attr);
	mad_set_field(mad, 0, IB_MAD_ATTRMOD_F, req->mod);
	if (route->directed) {
		mad_set_field(mad, 0, IB_DRSMP_HOPPTR_F, 0);
		mad_set_field(mad, 0, IB_DRSMP_HOPCNT_F, route->hops);
		mad_set_field(mad, 0, IB_DRSMP_DRSLID_F, PERMISSIVE_LID);
		mad_set_field(mad, 0, IB_DRSMP_DRDLID_F, PERMISSIVE_LID);
		memcpy(path, route->path, (size_t)route->hops + 1);
		mad_set_array(mad, 0, IB_DRSMP_PATH_F, path);
	}
	if (req->data)
		memcpy(mad + IB_SMP_DATA_OFFS, req->data, SMP_DATA_SIZE);
}

int smp_decode(const uint8_t *mad, size_t len, struct smp_response *resp)
{
	if (len < IB_SMP_DATA_OFFS + SMP_DATA_SIZE)
		return -EINVAL;
	resp->mgmt_class = (uint8_t)mad_get_field(RD(mad), 0, IB_MAD_MGMTCLASS_F);
	if (resp->mgmt_class != SMP_CLASS_LID && resp->mgmt_class != SMP_CLASS_DR)
		return -EINVAL;
	resp->method = (uint8_t)(mad_get_field(RD(mad), 0, IB_MAD_METHOD_F) |
				 mad_get_field(RD(mad), 0, IB_MAD_RESPONSE_F) << 7);
	/* A directed-route SMP's status has the direction bit on top: not part of the status. */
	resp->status = (uint16_t)mad_get_field(
	    RD(mad), 0, resp->mgmt_class == SMP_CLASS_DR ? IB_DRSMP_STATUS_F : IB_MAD_STATUS_F);
	resp->tid = (uint32_t)mad_get_field64(RD(mad), 0, IB_MAD_TRID_F);
	resp->attr = (uint16_t)mad_get_field(RD(mad), 0, IB_MAD_ATTRID_F);
	resp->mod = mad_get_field(RD(mad), 0, IB_MAD_ATTRMOD_F);
	resp->data = mad + IB_SMP_DATA_OFFS;
	return 0;
}

const char *smp_method_name(uint8_t method)
{
	switch (method) {
	case SMP_METHOD_GET:
		return "GET";
	case SMP_METHOD_SET:
		return "SET";
	case SMP_METHOD_GET_RESP:
		return "GET_RESP";
	}
	return "UNKNOWN";
}

const char *smp_attr_name(uint16_t attr)
{
	switch (attr) {
	case SMP_ATTR_NODE_INFO:
		return "NodeInfo";
	case SMP_ATTR_SWITCH_INFO:
		return "SwitchInfo";
	case SMP_ATTR_PORT_INFO:
		return "PortInfo";
	case SMP_ATTR_LINEAR_FWD_TABLE:
		return "LinearForwardingTable";
	}
	return NULL;
}

/* One field of an attribute through libibmad's own table: smpquery's names and offsets. */
static void decode_field(const uint8_t *data, enum MAD_FIELDS f, struct smp_field *out)
{
	uint32_t v32;

	snprintf(out->name, sizeof(out->name), "%s", mad_field_name(f));
	out->mad_field = (int)f;
	memset(out->raw, 0, sizeof(out->raw)); /* mad_decode_field writes a uint32_t, a uint64_t or bytes */
	mad_decode_field(RD(data), f, out->raw);
	/*
	 * The value as a number in either byte order: a field of up to 32 bits
	 * came as a uint32_t (what mad_get_field says, nothing after it), a
	 * 64-bit one as a uint64_t.
	 */
	memcpy(&v32, out->raw, sizeof(v32));
	if (v32 == mad_get_field(RD(data), 0, f) && !memcmp((const char *)out->raw + 4, "\0\0\0\0", 4))
		out->value = v32;
	else
		out->value = out->raw[0];
}

static int decode_range(enum MAD_FIELDS first, enum MAD_FIELDS last, const uint8_t *data,
			struct smp_field *out, int max)
{
	int n = 0;

	for (int f = first; f < (int)last && n < max; f++)
		if (mad_field_name((enum MAD_FIELDS)f))
			decode_field(data, (enum MAD_FIELDS)f, &out[n++]);
	return n;
}

int smp_decode_attr(uint16_t attr, uint32_t mod, const uint8_t data[SMP_DATA_SIZE], struct smp_field *out,
		    int max)
{
	int i;

	switch (attr) {
	case SMP_ATTR_NODE_INFO:
		return decode_range(IB_NODE_FIRST_F, IB_NODE_LAST_F, data, out, max);
	case SMP_ATTR_SWITCH_INFO:
		return decode_range(IB_SW_FIRST_F, IB_SW_LAST_F, data, out, max);
	case SMP_ATTR_PORT_INFO:
		return decode_range(IB_PORT_FIRST_F, IB_PORT_LAST_F, data, out, max);
	case SMP_ATTR_LINEAR_FWD_TABLE:
		/* Block mod holds LIDs 64*mod .. 64*mod+63, one egress port byte each. */
		for (i = 0; i < SMP_DATA_SIZE && i < max; i++) {
			snprintf(out[i].name, sizeof(out[i].name), "lid%u",
				 (unsigned)(mod * 64 + (unsigned)i));
			out[i].value = data[i];
			out[i].mad_field = 0;
		}
		return i;
	}
	return 0;
}
