/* SPDX-License-Identifier: MIT */
/* rdmatool devices: every verbs device and the soft device, like ibv_devinfo/ibstat. */
#include "hw/hw.h"
#include "cmd/cmd.h"
#include "cmd/json.h"

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
	static const char *const names[] = { "", "Sleep", "Polling", "Disabled", "PortConfigurationTraining",
					     "LinkUp", "LinkErrorRecovery", "PhyTest" };
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

struct port_info {
	uint8_t num;
	struct ibv_port_attr attr;
	char gid[INET6_ADDRSTRLEN];
};

static void print_limits_json(struct json *j, const struct ibv_device_attr *a)
{
	json_begin_object(j, "limits");
	json_int(j, "max_qp", a->max_qp);
	json_int(j, "max_qp_wr", a->max_qp_wr);
	json_int(j, "max_sge", a->max_sge);
	json_int(j, "max_cq", a->max_cq);
	json_int(j, "max_cqe", a->max_cqe);
	json_int(j, "max_mr", a->max_mr);
	json_uint(j, "max_mr_size", a->max_mr_size);
	json_int(j, "max_pd", a->max_pd);
	json_int(j, "max_mw", a->max_mw);
	json_int(j, "max_ah", a->max_ah);
	json_string(j, "atomic_cap", a->atomic_cap == IBV_ATOMIC_HCA	 ? "HCA"
				     : a->atomic_cap == IBV_ATOMIC_GLOB ? "GLOB"
									: "NONE");
	json_bool(j, "mw_type_1", a->device_cap_flags & IBV_DEVICE_MEM_WINDOW);
	json_bool(j, "mw_type_2b", a->device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	json_end_object(j);
}

static void print_device_json(struct json *j, const struct hw_device *dev, const struct ibv_device_attr *attr,
			      const struct port_info *ports, int nports)
{
	char guid[32];

	json_begin_object(j, NULL);
	json_string(j, "name", dev->name);
	json_string(j, "provider", dev->provider->name);
	if (!attr) {
		json_string(j, "error", "cannot open device");
		json_end_object(j);
		return;
	}
	format_guid(attr->node_guid, guid, sizeof(guid));
	json_string(j, "node_guid", guid);
	json_string(j, "fw_ver", attr->fw_ver);
	print_limits_json(j, attr);
	json_begin_array(j, "ports");
	for (int i = 0; i < nports; i++) {
		const struct ibv_port_attr *p = &ports[i].attr;

		json_begin_object(j, NULL);
		json_int(j, "port", ports[i].num);
		json_string(j, "state", port_state_str(p->state));
		json_string(j, "physical_state", phys_state_str(p->phys_state));
		json_int(j, "lid", p->lid);
		json_int(j, "sm_lid", p->sm_lid);
		json_string(j, "link_layer", link_layer_str(p->link_layer));
		json_int(j, "active_mtu", mtu_bytes(p->active_mtu));
		json_string(j, "gid0", ports[i].gid);
		json_end_object(j);
	}
	json_end_array(j);
	json_end_object(j);
}

static void print_device_text(const struct hw_device *dev, const struct ibv_device_attr *attr,
			      const struct port_info *ports, int nports)
{
	char guid[32];

	printf("%s (%s)\n", dev->name, dev->provider->name);
	if (!attr) {
		printf("\tcannot open device\n");
		return;
	}
	format_guid(attr->node_guid, guid, sizeof(guid));
	printf("\tnode_guid:   %s\n\tfw_ver:      %s\n", guid, attr->fw_ver);
	printf("\tlimits:      max_qp %d, max_qp_wr %d, max_sge %d, max_cqe %d, max_mr %d, max_mw %d, "
	       "atomics %s, mw types:%s%s\n",
	       attr->max_qp, attr->max_qp_wr, attr->max_sge, attr->max_cqe, attr->max_mr, attr->max_mw,
	       attr->atomic_cap == IBV_ATOMIC_NONE ? "no" : "yes",
	       attr->device_cap_flags & IBV_DEVICE_MEM_WINDOW ? " 1" : "",
	       attr->device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B ? " 2B" : "");
	for (int i = 0; i < nports; i++) {
		const struct ibv_port_attr *p = &ports[i].attr;

		printf("\tport %u:\n", ports[i].num);
		printf("\t\tstate:          %s (%s)\n", port_state_str(p->state), phys_state_str(p->phys_state));
		printf("\t\tlid:            %u\n\t\tsm_lid:         %u\n", p->lid, p->sm_lid);
		printf("\t\tlink_layer:     %s\n", link_layer_str(p->link_layer));
		printf("\t\tactive_mtu:     %d\n", mtu_bytes(p->active_mtu));
		printf("\t\tgid[0]:         %s\n", ports[i].gid);
	}
}

/* Queries one device; returns the number of ports filled, -1 if it cannot be opened. */
static int query_device(const struct hw_device *dev, struct ibv_device_attr *attr, struct port_info *ports,
			int max_ports)
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
		if (hw_query_gid(ctx, port, 0, &gid) == 0)
			inet_ntop(AF_INET6, gid.raw, ports[n].gid, sizeof(ports[n].gid));
		n++;
	}
	hw_close_device(ctx);
	return n;
}

int cmd_devices(int argc, const char **argv)
{
	struct poptOption options[] = {
		POPT_AUTOHELP POPT_TABLEEND,
	};
	poptContext pc = poptGetContext(argv[0], argc, argv, options, 0);
	struct hw_device devs[HW_MAX_DEVICES];
	int rc, n, verbs_errno;
	struct json j;

	poptSetOtherOptionHelp(pc, "[OPTION...]");
	rc = poptGetNextOpt(pc);
	if (rc < -1) {
		rc = popt_usage_error(CMD, pc, rc, argv);
		poptFreeContext(pc);
		return rc;
	}
	if (poptPeekArg(pc)) {
		rc = usage_error(CMD, "unexpected argument '%s'; devices takes no arguments", poptPeekArg(pc));
		poptFreeContext(pc);
		return rc;
	}
	poptFreeContext(pc);

	n = hw_list_devices(devs, HW_MAX_DEVICES, &verbs_errno);
	if (verbs_errno)
		notice(CMD, "no RDMA hardware found (%s); listing the soft device", strerror(verbs_errno));

	if (global_opts.json) {
		json_init(&j, stdout, global_opts.pretty);
		json_begin_object(&j, NULL);
		json_begin_array(&j, "devices");
	}
	for (int i = 0; i < n; i++) {
		struct ibv_device_attr attr;
		struct port_info ports[8];
		int nports = query_device(&devs[i], &attr, ports, 8);

		if (global_opts.json)
			print_device_json(&j, &devs[i], nports < 0 ? NULL : &attr, ports, nports);
		else
			print_device_text(&devs[i], nports < 0 ? NULL : &attr, ports, nports);
	}
	if (global_opts.json) {
		json_end_array(&j);
		json_end_object(&j);
		json_finish(&j);
	}
	return EXIT_OK;
}
