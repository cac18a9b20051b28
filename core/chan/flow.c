/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The agent's flow-control gauges; the contract is in flow.h. */
#include "core/chan/flow.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static const char *const kind_names[FLOW_NKINDS] = {"injection", "ejection", "getmsg", "heap"};
static const char *const kind_env[FLOW_NKINDS] = {
    "RDMATOOL_AGENT_MAX_INJECTION_MB", "RDMATOOL_AGENT_MAX_EJECTION_MB", "RDMATOOL_AGENT_MAX_GETMSG_MB",
    "RDMATOOL_AGENT_MAX_HEAP_MB"};
static const unsigned long kind_default[FLOW_NKINDS] = {FLOW_DEFAULT_MB, FLOW_DEFAULT_MB, FLOW_DEFAULT_MB,
							FLOW_HEAP_DEFAULT_MB};

const char *flow_kind_name(enum flow_kind k)
{
	return k < FLOW_NKINDS ? kind_names[k] : "?";
}

int flow_caps_from_env(struct flow_caps *out, char *why, size_t whylen)
{
	for (int k = 0; k < FLOW_NKINDS; k++) {
		const char *v = getenv(kind_env[k]);
		unsigned long mb = kind_default[k];
		char *end = NULL;

		if (v) {
			mb = *v >= '0' && *v <= '9' ? strtoul(v, &end, 10) : 0;
			if (!end || *end || mb < 1 || mb > FLOW_MAX_MB) {
				snprintf(why, whylen,
					 "%s='%s' is invalid; give whole MiB, 1 to %d (default %lu)",
					 kind_env[k], v, FLOW_MAX_MB, kind_default[k]);
				return -EINVAL;
			}
		}
		out->cap[k] = (uint64_t)mb << 20;
	}
	return 0;
}

void flow_init(struct flow_gauge *g, uint64_t cap)
{
	*g = (struct flow_gauge){.cap = cap};
}

bool flow_fits(const struct flow_gauge *g, uint64_t n)
{
	return g->now + n <= g->cap;
}

void flow_take(struct flow_gauge *g, uint64_t n)
{
	g->now += n;
	if (g->now > g->hwm)
		g->hwm = g->now;
}

void flow_give(struct flow_gauge *g, uint64_t n)
{
	g->now = n > g->now ? 0 : g->now - n;
}
