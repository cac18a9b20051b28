/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The path an agent's links take through the device, as perftest's -d, -i,
 * -x, --sl and --mtu choose it: copied into the core endpoint's attributes
 * (core/transport/endpoint.h), where NULL or 0 is core's default for each
 * (the first active device, port 1, GID index 0, SL 0, the port's MTU).
 */
#ifndef RDMATOOL_CORE_AGENT_PATH_H
#define RDMATOOL_CORE_AGENT_PATH_H

#include <infiniband/verbs.h>
#include <stdint.h>

struct agent_path {
	const char *device;
	uint8_t port, gid_index, sl;
	enum ibv_mtu mtu;
};

#endif
