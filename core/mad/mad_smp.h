/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Subnet management packets (IBTA vol. 1, 14.2.1): encode a LID-routed or
 * directed-route SMP request, decode a response.  Wire order is big endian.
 */
#ifndef RDMATOOL_CORE_MAD_SMP_H
#define RDMATOOL_CORE_MAD_SMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SMP_SIZE 256
#define SMP_DATA_SIZE 64
#define SMP_MAX_HOPS 63

#define SMP_CLASS_LID 0x01
#define SMP_CLASS_DR 0x81

#define SMP_METHOD_GET 0x01
#define SMP_METHOD_SET 0x02
#define SMP_METHOD_GET_RESP 0x81

#define SMP_ATTR_NODE_INFO 0x0011
#define SMP_ATTR_SWITCH_INFO 0x0012
#define SMP_ATTR_PORT_INFO 0x0015
#define SMP_ATTR_LINEAR_FWD_TABLE 0x0019

/* Where an SMP goes: a LID, or a directed route of hops exit ports. */
struct smp_route {
	bool directed;
	uint16_t lid;
	uint8_t hops;
	uint8_t path[SMP_MAX_HOPS + 1]; /* path[1..hops]; path[0] unused, as in the SMP */
};

struct smp_request {
	uint8_t method;
	uint16_t attr;
	uint32_t mod;
	uint32_t tid; /* low 32 bits; the kernel (or umad2sim) owns the high 32 */
	const uint8_t *data; /* SMP_DATA_SIZE bytes for SET, NULL for zeros */
};

struct smp_response {
	uint8_t mgmt_class;
	uint8_t method;
	uint16_t status; /* the MAD status without the directed-route D bit */
	uint32_t tid;
	uint16_t attr;
	uint32_t mod;
	const uint8_t *data; /* SMP_DATA_SIZE bytes inside the decoded buffer */
};

void smp_encode(uint8_t mad[SMP_SIZE], const struct smp_route *route, const struct smp_request *req);
/* Returns 0, or -EINVAL when the buffer is too short or not an SMP. */
int smp_decode(const uint8_t *mad, size_t len, struct smp_response *resp);

/* "GET", "SET" ... */
const char *smp_method_name(uint8_t method);
/* "NodeInfo" ..., or NULL for an attribute this file does not know. */
const char *smp_attr_name(uint16_t attr);

/*
 * One decoded attribute field, for -v: libibmad's name and value.  The
 * rendering smpquery prints (mad_dump_val(mad_field, .., raw)) is left to
 * the caller: libibmad's dump functions warn on stderr about odd values,
 * and core never prints.
 */
struct smp_field {
	char name[32];
	uint64_t value;		 /* fields of up to 64 bits */
	int mad_field;		 /* libibmad's enum MAD_FIELDS, 0 for an LFT entry */
	uint64_t raw[8];	 /* the field as mad_decode_field wrote it, for mad_dump_val */
};

/*
 * Decodes the attributes -v knows (NodeInfo, PortInfo, SwitchInfo,
 * LinearForwardingTable; mod is the attribute modifier, used for the LFT
 * block's first LID).  Returns the number of fields written (at most max),
 * or 0 for other attributes.
 */
int smp_decode_attr(uint16_t attr, uint32_t mod, const uint8_t data[SMP_DATA_SIZE], struct smp_field *out,
		    int max);

#endif
