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
 *   heap       large messages (over a chunk) held whole on the heap: at a
 *              target from their first READ until deposited, and GETMSG
 *              answers being put together at an origin.  Full: READs of
 *              further large messages wait (their senders' slots stay
 *              taken, which fills the senders' injection caps); a message
 *              larger than the cap is refused (-EMSGSIZE).
 *
 * Caps come from RDMATOOL_AGENT_MAX_{INJECTION,EJECTION,GETMSG,HEAP}_MB
 * (whole MiB, 1..FLOW_MAX_MB, default 8; heap FLOW_HEAP_DEFAULT_MB).
 */
#ifndef RDMATOOL_CORE_CHAN_FLOW_H
#define RDMATOOL_CORE_CHAN_FLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FLOW_DEFAULT_MB	     8
#define FLOW_MAX_MB	     65536
#define FLOW_HEAP_DEFAULT_MB 1024 /* four of the largest remote messages */

enum flow_kind { FLOW_INJECTION, FLOW_EJECTION, FLOW_GETMSG, FLOW_HEAP, FLOW_NKINDS };

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
