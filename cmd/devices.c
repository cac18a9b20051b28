/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* rdmatool devices: every verbs device and the soft device, like ibv_devinfo/ibstat. */
#include "hw/hw.h"
#include "hw/soft_wire.h"
#include "cmd/cmd.h"
#include "cmd/print.h"

#include <arpa/inet.h>
#include <errno.h>
#include <popt.h>
#include <string.h>

static const char *const CMD = "devices";

static const char *port_state_str(enum ibv_port_state s)
{
	switch (s) {
	case IBV_PORT_NOP:
		return "NOP";
	case IBV_PORT_DOWN:
		return "DOWN";
	case IBV_PORT_INIT:
		return "INIT";
	case IBV_PORT_ARMED:
		return "ARMED";
	case IBV_PORT_ACTIVE:
		return "ACTIVE";
	case IBV_PORT_ACTIVE_DEFER:
		return "ACTIVE_DEFER";
	}
	return "UNKNOWN";
}

static const char *phys_state_str(uint8_t s)
{
	static const char *const names[] = {"",
					    "Sleep",
					    "Polling",
					    "Disabled",
					    "PortConfigurationTraining",
					    "LinkUp",
					    "LinkErrorRecovery",
					    "PhyTest"};
	return s < sizeof(names) / sizeof(names[0]) && s ? names[s] : "Unknown";
}

static const char *link_layer_str(uint8_t ll)
{
	switch (ll) {
	case IBV_LINK_LAYER_INFINIBAND:
	case IBV_LINK_LAYER_UNSPECIFIED:
		return "InfiniBand";
	case IBV_LINK_LAYER_ETHERNET:
		return "Ethernet";
	default:
		return "Unknown";
	}
}

static int mtu_bytes(enum ibv_mtu mtu)
{
	return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? 128 << mtu : 0;
}

static void format_guid(uint64_t be_guid, char *buf, size_t len)
{
	uint64_t g = be64toh(be_guid);

	snprintf(buf, len, "%04x:%04x:%04x:%04x", (unsigned)(g >> 48) & 0xffff, (unsigned)(g >> 32) & 0xffff,
		 (unsigned)(g >> 16) & 0xffff, (unsigned)g & 0xffff);
}

#define MAX_GIDS 16 /* the first entries of the GID table: the ones -x picks in practice */

struct port_info {
	uint8_t num;
	struct ibv_port_attr attr;
	int ngids;
	char gids[MAX_GIDS][INET6_ADDRSTRLEN]; /* "" for an empty entry */
};

/* The limits: all of them in JSON, the ones people look for on one text line. */
static void print_limits(const struct ibv_device_attr *a)
{
	print_open_object("limits");
	print_text("\tlimits:      ");
	print_int(PRINT_ANY, "max_qp", "max_qp %lld, ", a->max_qp);
	print_int(PRINT_ANY, "max_qp_wr", "max_qp_wr %lld, ", a->max_qp_wr);
	print_int(PRINT_ANY, "max_sge", "max_sge %lld, ", a->max_sge);
	print_int(PRINT_JSON, "max_cq", NULL, a->max_cq);
	print_int(PRINT_ANY, "max_cqe", "max_cqe %lld, ", a->max_cqe);
	print_int(PRINT_ANY, "max_mr", "max_mr %lld, ", a->max_mr);
	print_uint(PRINT_JSON, "max_mr_size", NULL, a->max_mr_size);
	print_int(PRINT_JSON, "max_pd", NULL, a->max_pd);
	print_int(PRINT_ANY, "max_mw", "max_mw %lld, ", a->max_mw);
	print_int(PRINT_JSON, "max_ah", NULL, a->max_ah);
	print_string(PRINT_JSON, "atomic_cap", NULL,
		     a->atomic_cap == IBV_ATOMIC_HCA	? "HCA"
		     : a->atomic_cap == IBV_ATOMIC_GLOB ? "GLOB"
							: "NONE");
	print_bool(PRINT_TEXT, NULL, "atomics %s, ", a->atomic_cap != IBV_ATOMIC_NONE);
	print_text("mw types:");
	print_bool(PRINT_JSON, "mw_type_1", NULL, a->device_cap_flags & IBV_DEVICE_MEM_WINDOW);
	print_bool(PRINT_JSON, "mw_type_2b", NULL, a->device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	print_text("%s%s\n", a->device_cap_flags & IBV_DEVICE_MEM_WINDOW ? " 1" : "",
		   a->device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B ? " 2B" : "");
	print_close_object();
}

static void print_port(const struct port_info *port)
{
	const struct ibv_port_attr *p = &port->attr;

	print_open_object(NULL);
	print_int(PRINT_ANY, "port", "\tport %lld:\n", port->num);
	print_string(PRINT_ANY, "state", "\t\tstate:          %s", port_state_str(p->state));
	print_string(PRINT_ANY, "physical_state", " (%s)\n", phys_state_str(p->phys_state));
	print_int(PRINT_ANY, "lid", "\t\tlid:            %lld\n", p->lid);
	print_int(PRINT_ANY, "sm_lid", "\t\tsm_lid:         %lld\n", p->sm_lid);
	print_string(PRINT_ANY, "link_layer", "\t\tlink_layer:     %s\n", link_layer_str(p->link_layer));
	print_int(PRINT_ANY, "active_mtu", "\t\tactive_mtu:     %lld\n", mtu_bytes(p->active_mtu));
	/* As ibv_devinfo -v: every entry that holds a GID, with its index (perftest's -x). */
	print_open_array("gids");
	for (int i = 0; i < port->ngids; i++) {
		if (!*port->gids[i])
			continue;
		print_open_object(NULL);
		print_int(PRINT_ANY, "index", "\t\tgid[%2lld]:", i);
		print_string(PRINT_ANY, "gid", "        %s\n", port->gids[i]);
		print_close_object();
	}
	print_close_array();
	print_close_object();
}

/* -v, the soft device: which wire its peers are on, and the copies it made per payload byte. */
static void print_wire(const struct hw_soft_wire *w)
{
	print_open_object("wire");
	print_string(PRINT_ANY, "local_peers", "\twire:        %s",
		     w->shm_allowed ? "shared memory to local peers, TCP otherwise"
				    : "TCP (RDMATOOL_SOFT_SHM=0)");
	print_int(PRINT_ANY, "shm_connections", "; connections: %lld shm", w->shm_conns);
	print_int(PRINT_ANY, "tcp_connections", ", %lld tcp\n", w->tcp_conns);
	print_uint(PRINT_ANY, "payload_bytes", "\twire bytes:  %llu payload", w->payload_bytes);
	print_uint(PRINT_ANY, "copied_bytes", ", %llu copied by the CPU", w->copied_bytes);
	print_uint(PRINT_ANY, "shm_refused", "; shm refused %llu", w->shm_refused);
	print_uint(PRINT_ANY, "shm_quarantined", ", quarantined %llu\n", w->shm_quarantined);
	print_close_object();
}

static void print_device(const struct hw_device *dev, const struct ibv_device_attr *attr,
			 const struct port_info *ports, int nports, const char *why,
			 const struct hw_soft_wire *wire)
{
	char guid[32];

	print_open_object(NULL);
	print_string(PRINT_ANY, "name", "%s", dev->name);
	print_string(PRINT_ANY, "provider", " (%s)\n", dev->provider->name);
	if (!attr) {
		print_string(PRINT_ANY, "error", "\tcannot open the device: %s\n", why);
		print_close_object();
		return;
	}
	format_guid(attr->node_guid, guid, sizeof(guid));
	print_string(PRINT_ANY, "node_guid", "\tnode_guid:   %s\n", guid);
	print_string(PRINT_ANY, "fw_ver", "\tfw_ver:      %s\n", attr->fw_ver);
	print_limits(attr);
	print_open_array("ports");
	for (int i = 0; i < nports; i++)
		print_port(&ports[i]);
	print_close_array();
	if (wire && global_opts.verbose)
		print_wire(wire);
	print_close_object();
}

/* Queries one device; returns the number of ports filled, -1 if it cannot be opened. */
static int query_device(const struct hw_device *dev, struct ibv_device_attr *attr, struct port_info *ports,
			int max_ports, struct hw_soft_wire *wire, bool *has_wire)
{
	struct ibv_context *ctx = dev->provider->open_device(dev);
	int n = 0;

	if (!ctx)
		return -1;
	if (hw_query_device(ctx, attr)) {
		hw_close_device(ctx);
		return -1;
	}
	for (uint8_t port = 1; port <= attr->phys_port_cnt && n < max_ports; port++) {
		union ibv_gid gid;

		memset(&ports[n], 0, sizeof(ports[n]));
		ports[n].num = port;
		if (hw_query_port(ctx, port, &ports[n].attr))
			continue;
		ports[n].ngids = ports[n].attr.gid_tbl_len < MAX_GIDS ? ports[n].attr.gid_tbl_len : MAX_GIDS;
		for (int i = 0; i < ports[n].ngids; i++) {
			static const uint8_t zero[16];

			if (hw_query_gid(ctx, port, i, &gid) == 0 && memcmp(gid.raw, zero, 16))
				inet_ntop(AF_INET6, gid.raw, ports[n].gids[i], sizeof(ports[n].gids[i]));
		}
		n++;
	}
	*has_wire = hw_soft_wire_info(ctx, wire) == 0;
	hw_close_device(ctx);
	return n;
}

int cmd_devices(int argc, const char **argv)
{
	struct poptOption options[] = {
	    CMD_HELP(options),
	    POPT_TABLEEND,
	};
	poptContext pc = poptGetContext(argv[0], argc, argv, options, 0);
	struct hw_device devs[HW_MAX_DEVICES];
	int rc, n, verbs_errno, status = EXIT_OK;

	poptSetOtherOptionHelp(pc, "[OPTION...]");
	rc = poptGetNextOpt(pc);
	if (rc < -1) {
		rc = popt_usage_error(CMD, pc, rc, argv);
		poptFreeContext(pc);
		return rc;
	}
	if (poptPeekArg(pc)) {
		rc =
		    usage_error(CMD, "unexpected argument '%s'; devices takes no arguments", poptPeekArg(pc));
		poptFreeContext(pc);
		return rc;
	}
	poptFreeContext(pc);

	n = hw_list_devices(devs, HW_MAX_DEVICES, &verbs_errno);
	if (verbs_errno)
		notice(CMD, "no RDMA hardware found (%s); listing the soft device", strerror(verbs_errno));

	print_begin();
	print_open_array("devices");
	for (int i = 0; i < n; i++) {
		struct ibv_device_attr attr;
		struct port_info ports[8];
		struct hw_soft_wire wire;
		bool has_wire = false;
		char why[256] = "";
		int nports;

		errno = 0;
		nports = query_device(&devs[i], &attr, ports, 8, &wire, &has_wire);
		if (nports < 0) {
			/* The provider's own reason (a bad RDMATOOL_SOFT_* setting names the variable). */
			snprintf(why, sizeof(why), "%s",
				 *hw_open_error() ? hw_open_error() : strerror(errno ? errno : EIO));
			status = run_error(CMD, "cannot open %s: %s", devs[i].name, why);
		}
		print_device(&devs[i], nports < 0 ? NULL : &attr, ports, nports, why,
			     has_wire ? &wire : NULL);
	}
	print_close_array();
	print_end();
	return status;
}
