/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rdmatool agent foreground|start: perftest's -d, -i, -x, --sl and --mtu for
 * the links' endpoint, checked here against the device before the agent
 * starts, so a port or GID the device lacks is a usage error that names the
 * option (an agent alone opens no endpoint, and a started one would only say
 * so in its log).
 */
#include "cmd/agent/agent_cmd.h"
#include "cmd/cmd.h"
#include "hw/hw.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The numbers as given, into p (0 stays core's default); a usage error names the option. */
int agent_path_parse(const struct agent_path_args *a, struct agent_path *p)
{
	if (a->port_given && (a->port < 1 || a->port > 255))
		return usage_error(AGENT_CMD, "--ib-port=%d: give a port number from 1 to 255", a->port);
	if (a->gid_index < 0 || a->gid_index > 255)
		return usage_error(AGENT_CMD, "--gid-index=%d: give a GID index from 0 to 255", a->gid_index);
	if (a->sl < 0 || a->sl > 15)
		return usage_error(AGENT_CMD, "--sl=%d: give a service level from 0 to 15", a->sl);
	if (a->mtu && a->mtu != 256 && a->mtu != 512 && a->mtu != 1024 && a->mtu != 2048 && a->mtu != 4096)
		return usage_error(AGENT_CMD, "--mtu=%d: give 256, 512, 1024, 2048 or 4096", a->mtu);
	*p = (struct agent_path){.device = a->device,
				 .port = (uint8_t)a->port,
				 .gid_index = (uint8_t)a->gid_index,
				 .sl = (uint8_t)a->sl,
				 .mtu = a->mtu ? (enum ibv_mtu)(__builtin_ctz((unsigned)a->mtu) - 7) : 0};
	return 0;
}

/* The device the links of one agent use (NULL: core's default) has the port, GID and MTU asked for. */
static int check_device(const char *name, const struct agent_path *p)
{
	struct hw_device chosen;
	struct ibv_port_attr port;
	union ibv_gid gid;
	uint8_t pn = p->port ? p->port : 1;
	struct ibv_context *ctx = hw_open_device(name, &chosen);
	int rc = 0;

	if (!ctx) {
		if (name && errno == ENODEV)
			return unknown_device_error(AGENT_CMD, name);
		return run_error(AGENT_CMD, "cannot open %s: %s; check 'rdmatool devices'",
				 name ? name : "a device",
				 *hw_open_error() ? hw_open_error() : strerror(errno));
	}
	if (hw_query_port(ctx, pn, &port))
		rc = usage_error(AGENT_CMD,
				 "--ib-port=%u: %s has no such port; 'rdmatool devices' lists its ports", pn,
				 chosen.name);
	else if (hw_query_gid(ctx, pn, p->gid_index, &gid))
		rc = usage_error(
		    AGENT_CMD,
		    "--gid-index=%u: port %u of %s has no such GID (its table holds %d); 'rdmatool "
		    "devices' lists them",
		    p->gid_index, pn, chosen.name, port.gid_tbl_len);
	else if (p->mtu > port.active_mtu)
		rc = usage_error(AGENT_CMD,
				 "--mtu=%d is larger than port %u of %s allows (%d); give at most that",
				 128 << p->mtu, pn, chosen.name, 128 << port.active_mtu);
	hw_close_device(ctx);
	return rc;
}

int agent_path_check(const struct agent_opts *o)
{
	const struct agent_path *p = &o->path;
	int rc = 0;

	if (!p->device && !p->port && !p->gid_index && !p->mtu)
		return 0; /* core's defaults: the endpoint says what it cannot do */
	if (p->device && o->devices)
		return usage_error(AGENT_CMD,
				   "--ib-dev=%s and --agents-per-node=auto (one agent per device) "
				   "disagree; give one of them",
				   p->device);
	for (uint32_t k = 0; !rc && k < (o->devices ? o->siblings : 1); k++)
		rc = check_device(o->devices ? o->devices[k] : p->device, p);
	return rc;
}
