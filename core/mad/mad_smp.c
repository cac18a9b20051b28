/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* SMP encoding and decoding, and the attribute decoders behind -v. */
#include "core/mad/mad_smp.h"

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Offsets in the 256-byte SMP (IBTA 14.2.1.1 and 14.2.1.2). */
enum {
	OFF_BASE_VERSION = 0,
	OFF_MGMT_CLASS = 1,
	OFF_CLASS_VERSION = 2,
	OFF_METHOD = 3,
	OFF_STATUS = 4,
	OFF_HOP_POINTER = 6,
	OFF_HOP_COUNT = 7,
	OFF_TID = 8,
	OFF_ATTR_ID = 16,
	OFF_ATTR_MOD = 20,
	OFF_MKEY = 24,
	OFF_DR_SLID = 32,
	OFF_DR_DLID = 34,
	OFF_DATA = 64,
	OFF_INITIAL_PATH = 128,
	OFF_RETURN_PATH = 192,
};

#define DR_DIRECTION_BIT 0x8000
#define PERMISSIVE_LID 0xffff

static void put16(uint8_t *p, uint16_t v)
{
	v = htobe16(v);
	memcpy(p, &v, 2);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, 4);
}

static uint16_t get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return be16toh(v);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return be32toh(v);
}

void smp_encode(uint8_t mad[SMP_SIZE], const struct smp_route *route, const struct smp_request *req)
{
	memset(mad, 0, SMP_SIZE);
	mad[OFF_BASE_VERSION] = 1;
	mad[OFF_MGMT_CLASS] = route->directed ? SMP_CLASS_DR : SMP_CLASS_LID;
	mad[OFF_CLASS_VERSION] = 1;
	mad[OFF_METHOD] = req->method;
	/* TID bytes 8..11 stay zero: the kernel puts the agent id there. */
	put32(mad + OFF_TID + 4, req->tid);
	put16(mad + OFF_ATTR_ID, req->attr);
	put32(mad + OFF_ATTR_MOD, req->mod);
	if (route->directed) {
		mad[OFF_HOP_POINTER] = 0;
		mad[OFF_HOP_COUNT] = route->hops;
		put16(mad + OFF_DR_SLID, PERMISSIVE_LID);
		put16(mad + OFF_DR_DLID, PERMISSIVE_LID);
		memcpy(mad + OFF_INITIAL_PATH, route->path, (size_t)route->hops + 1);
	}
	if (req->data)
		memcpy(mad + OFF_DATA, req->data, SMP_DATA_SIZE);
}

int smp_decode(const uint8_t *mad, size_t len, struct smp_response *resp)
{
	uint16_t status;

	if (len < OFF_DATA + SMP_DATA_SIZE)
		return -EINVAL;
	if (mad[OFF_MGMT_CLASS] != SMP_CLASS_LID && mad[OFF_MGMT_CLASS] != SMP_CLASS_DR)
		return -EINVAL;
	status = get16(mad + OFF_STATUS);
	resp->mgmt_class = mad[OFF_MGMT_CLASS];
	resp->method = mad[OFF_METHOD];
	resp->status = resp->mgmt_class == SMP_CLASS_DR ? status & ~DR_DIRECTION_BIT : status;
	resp->tid = get32(mad + OFF_TID + 4);
	resp->attr = get16(mad + OFF_ATTR_ID);
	resp->mod = get32(mad + OFF_ATTR_MOD);
	resp->data = mad + OFF_DATA;
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

/* A field of a big-endian attribute: bit offset from the start, width in bits (<= 64). */
struct field_def {
	const char *name;
	uint16_t bit;
	uint8_t width;
	bool hex;
};

static uint64_t get_bits(const uint8_t *data, unsigned bit, unsigned width)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < width; i++) {
		unsigned b = bit + i;

		v = (v << 1) | ((data[b / 8] >> (7 - b % 8)) & 1);
	}
	return v;
}

static const struct field_def node_info[] = {
	{ "BaseVers", 0, 8, false },	    { "ClassVers", 8, 8, false },      { "NodeType", 16, 8, false },
	{ "NumPorts", 24, 8, false },	    { "SystemImageGUID", 32, 64, true }, { "NodeGUID", 96, 64, true },
	{ "PortGUID", 160, 64, true },	    { "PartitionCap", 224, 16, false }, { "DeviceID", 240, 16, true },
	{ "Revision", 256, 32, true },	    { "LocalPortNum", 288, 8, false }, { "VendorID", 296, 24, true },
};

static const struct field_def switch_info[] = {
	{ "LinearFDBCap", 0, 16, false },     { "RandomFDBCap", 16, 16, false },
	{ "MulticastFDBCap", 32, 16, false }, { "LinearFDBTop", 48, 16, false },
	{ "DefaultPort", 64, 8, false },      { "DefMcastPriPort", 72, 8, false },
	{ "DefMcastNotPriPort", 80, 8, false }, { "LifeTimeValue", 88, 5, false },
	{ "PortStateChange", 93, 1, false },  { "LIDsPerPort", 96, 16, false },
	{ "PartEnforceCap", 112, 16, false }, { "EnhancedPort0", 132, 1, false },
};

static const struct field_def port_info[] = {
	{ "Mkey", 0, 64, true },
	{ "GidPrefix", 64, 64, true },
	{ "Lid", 128, 16, false },
	{ "SMLid", 144, 16, false },
	{ "CapMask", 160, 32, true },
	{ "DiagCode", 192, 16, true },
	{ "MkeyLeasePeriod", 208, 16, false },
	{ "LocalPort", 224, 8, false },
	{ "LinkWidthEnabled", 232, 8, false },
	{ "LinkWidthSupported", 240, 8, false },
	{ "LinkWidthActive", 248, 8, false },
	{ "LinkSpeedSupported", 256, 4, false },
	{ "LinkState", 260, 4, false },
	{ "PhysLinkState", 264, 4, false },
	{ "LinkDownDefState", 268, 4, false },
	{ "LMC", 277, 3, false },
	{ "LinkSpeedActive", 280, 4, false },
	{ "LinkSpeedEnabled", 284, 4, false },
	{ "NeighborMTU", 288, 4, false },
	{ "SMSL", 292, 4, false },
	{ "VLCap", 296, 4, false },
	{ "VLHighLimit", 304, 8, false },
	{ "MtuCap", 332, 4, false },
	{ "OperVLs", 344, 4, false },
};

static int decode_table(const struct field_def *defs, int n, const uint8_t *data, struct smp_field *out, int max)
{
	int i;

	for (i = 0; i < n && i < max; i++) {
		snprintf(out[i].name, sizeof(out[i].name), "%s", defs[i].name);
		out[i].value = get_bits(data, defs[i].bit, defs[i].width);
		out[i].hex = defs[i].hex;
	}
	return i;
}

#define ARRAY_SIZE(a) ((int)(sizeof(a) / sizeof((a)[0])))

int smp_decode_attr(uint16_t attr, uint32_t mod, const uint8_t data[SMP_DATA_SIZE], struct smp_field *out,
		    int max)
{
	int i;

	switch (attr) {
	case SMP_ATTR_NODE_INFO:
		return decode_table(node_info, ARRAY_SIZE(node_info), data, out, max);
	case SMP_ATTR_SWITCH_INFO:
		return decode_table(switch_info, ARRAY_SIZE(switch_info), data, out, max);
	case SMP_ATTR_PORT_INFO:
		return decode_table(port_info, ARRAY_SIZE(port_info), data, out, max);
	case SMP_ATTR_LINEAR_FWD_TABLE:
		/* Block mod holds LIDs 64*mod .. 64*mod+63, one egress port byte each. */
		for (i = 0; i < SMP_DATA_SIZE && i < max; i++) {
			snprintf(out[i].name, sizeof(out[i].name), "lid%u", (unsigned)(mod * 64 + (unsigned)i));
			out[i].value = data[i];
			out[i].hex = false;
		}
		return i;
	}
	return 0;
}
