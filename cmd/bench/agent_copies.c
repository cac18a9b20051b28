/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Bytes copied per payload byte: the agents' counters bench agent_bw reads (agent_copies.h). */
#include "cmd/bench/agent_copies.h"
#include "core/chan/gateway.h"
#include "core/util/clock.h"

#include <stdlib.h>
#include <unistd.h>

struct agent_copies copies_of_agent(const char *dir, uint32_t id, uint64_t want)
{
	uint64_t deadline = clock_ns() + 2000000000ull;
	struct gw_info *info = malloc(sizeof(*info)); /* hundreds of KiB: not on the stack */
	struct agent_copies got = {0};
	struct gateway *g;

	if (!info || gw_open(dir, id, &g)) {
		free(info);
		return got;
	}
	do {
		gw_info(g, info);
		got = (struct agent_copies){info->agent.copied, info->agent.nic_bytes};
		if (got.copied >= want)
			break;
		usleep(10000);
	} while (clock_ns() < deadline);
	gw_close(g);
	free(info);
	return got;
}
