/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The agent's flow-control caps (HSTA's, plus the injection cap it left for
 * a future release), each a gauge of bytes the agent holds now, its
 * high-water mark and its cap:
 *
 *   injection  origin side: client data taken from the gateway and not yet
 *              sent on a link (waiting items, eager buffers, large frames
 *              until their send completes).  Full: the agent leaves requests
 *              in the gateway, which fills and answers clients -EAGAIN.
 *   ejection   target side: bytes of posted large-message receives.  Large
 *              messages arrive in chunks (RDMATOOL_AGENT_CHUNK_KB), so one
 *              larger than the cap is never received whole.
 *   getmsg     target side: GETMSG data taken from channels and not yet sent
 *              back.  Full: GETMSGs wait in their channel's queue, their
 *              messages stay in the channel.
 *
 * Caps come from RDMATOOL_AGENT_MAX_{INJECTION,EJECTION,GETMSG}_MB (whole
 * MiB, 1..FLOW_MAX_MB, default 8).
 */
#ifndef RDMATOOL_CORE_AGENT_FLOW_H
#define RDMATOOL_CORE_AGENT_FLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FLOW_DEFAULT_MB 8
#define FLOW_MAX_MB	65536

enum flow_kind { FLOW_INJECTION, FLOW_EJECTION, FLOW_GETMSG, FLOW_NKINDS };

struct flow_gauge {
	uint64_t now, hwm, cap;
};

struct flow_caps {
	uint64_t cap[FLOW_NKINDS]; /* bytes */
};

/* "injection", "ejection", "getmsg". */
const char *flow_kind_name(enum flow_kind k);
/* The caps from the environment; -EINVAL with why naming the variable and its valid range. */
int flow_caps_from_env(struct flow_caps *out, char *why, size_t whylen);

void flow_init(struct flow_gauge *g, uint64_t cap);
/* Whether n more bytes stay within the cap. */
bool flow_fits(const struct flow_gauge *g, uint64_t n);
void flow_take(struct flow_gauge *g, uint64_t n);
void flow_give(struct flow_gauge *g, uint64_t n);

#endif
