/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Bytes copied per payload byte (bench agent_bw), a figure the core count
 * does not change, from the counters each agent publishes in its gateway
 * (core/chan/gateway.h): the bytes the agent copied with the CPU, and the
 * bytes it had its NIC send or READ (a real NIC moves those by DMA; the soft
 * NIC copies each with the CPU, into and out of its socket).  The clients'
 * own copies are one per byte on each side by construction: the sender's
 * into its gateway slot, the drainer's out of the channel.
 */
#ifndef RDMATOOL_CMD_BENCH_AGENT_COPIES_H
#define RDMATOOL_CMD_BENCH_AGENT_COPIES_H

#include <stdint.h>

struct agent_copies {
	uint64_t copied, nic_bytes;
};

/*
 * The counters of the agent of dir and id, once copied reaches want (they
 * are published every 100 ms), or after 2 s; zeros when it cannot be read.
 */
struct agent_copies copies_of_agent(const char *dir, uint32_t id, uint64_t want);

#endif
