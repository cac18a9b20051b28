/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* hw/umad: libibumad port, SMI agents, send/receive of SMPs. */
#include "hw/umad.h"

#include <errno.h>
#include <infiniband/umad.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SMP_SIZE 256
#define CLASS_SMI_LID 0x01
#define CLASS_SMI_DR 0x81
#define PORT_STATE_ACTIVE 4
#define RECV_BUF_SIZE 2048

/* The port to use, or -EINVAL: a switch's only local port is its management port 0 (ports[0]). */
static int pick_port(umad_ca_t *ca, int port)
{
	int first = ca->ports[0] ? 0 : 1;

	if (port) {
		if (port < 1 || port > ca->numports || !ca->ports[port])
			return -EINVAL;
		return port;
	}
	for (int p = first; p <= ca->numports; p++)
		if (ca->ports[p] && ca->ports[p]->state == PORT_STATE_ACTIVE)
			return p;
	for (int p = first; p <= ca->numports; p++)
		if (ca->ports[p])
			return p;
	return -EINVAL;
}

int hw_umad_find_port(const char *ca_name, int port, struct hw_umad_port_info *info)
{
	struct umad_device_node *list, *node;
	char name[UMAD_CA_NAME_LEN];
	umad_ca_t ca;
	int p;

	memset(info, 0, sizeof(*info));
	if (umad_init() < 0)
		return -ENODEV;
	/* Unlike umad_get_cas_names, the device list is empty when there is no umad device. */
	list = umad_get_ca_device_list();
	if (!list)
		return -ENODEV;
	for (node = list; node; node = node->next)
		if (!ca_name || !*ca_name || !strcmp(node->ca_name, ca_name))
			break;
	if (node)
		snprintf(name, sizeof(name), "%s", node->ca_name);
	umad_free_ca_device_list(list);
	if (!node || umad_get_ca(name, &ca) < 0)
		return -ENOENT;
	p = pick_port(&ca, port);
	if (p >= 0) {
		snprintf(info->ca_name, sizeof(info->ca_name), "%s", ca.ca_name);
		info->port = p;
		info->base_lid = (uint16_t)ca.ports[p]->base_lid;
		info->state = (int)ca.ports[p]->state;
		info->simulator = strncmp(ca.ca_type, "simulator", 9) == 0;
	}
	umad_release_ca(&ca);
	return p >= 0 ? 0 : p;
}

void hw_umad_close(struct hw_umad *u)
{
	if (u->opened) {
		if (u->agent_lid >= 0)
			umad_unregister(u->portid, u->agent_lid);
		if (u->agent_dr >= 0)
			umad_unregister(u->portid, u->agent_dr);
		umad_close_port(u->portid);
	}
	free(u->recv_buf);
	u->recv_buf = NULL;
	u->opened = false;
	u->agent_lid = u->agent_dr = -1;
}

int hw_umad_open(struct hw_umad *u, const struct hw_umad_port_info *info)
{
	memset(u, 0, sizeof(*u));
	u->portid = u->agent_lid = u->agent_dr = -1;
	u->info = *info;
	/*
	 * Room to spare past one SMP: umad2sim's read() can copy more than the
	 * length umad_recv asked for.
	 */
	u->recv_buf = calloc(1, RECV_BUF_SIZE);
	if (!u->recv_buf)
		return -ENOMEM;
	u->portid = umad_open_port(info->ca_name, info->port);
	if (u->portid < 0) {
		int err = u->portid;

		free(u->recv_buf);
		u->recv_buf = NULL;
		return err;
	}
	u->opened = true;
	/* No method mask: this side only sends requests and takes their responses. */
	u->agent_lid = umad_register(u->portid, CLASS_SMI_LID, 1, 0, NULL);
	u->agent_dr = umad_register(u->portid, CLASS_SMI_DR, 1, 0, NULL);
	if (u->agent_lid < 0 || u->agent_dr < 0) {
		int err = u->agent_lid < 0 ? u->agent_lid : u->agent_dr;

		hw_umad_close(u);
		return err < 0 ? err : -EIO;
	}
	return 0;
}

int hw_umad_send(struct hw_umad *u, uint16_t dlid, bool directed, const void *smp, size_t len, int timeout_ms)
{
	/* libibumad's buffer: struct ib_user_mad header followed by the MAD. */
	uint64_t buf[(sizeof(struct ib_user_mad) + SMP_SIZE + 7) / 8];
	int rc;

	if (len > SMP_SIZE)
		return -EINVAL;
	memset(buf, 0, sizeof(struct ib_user_mad));
	memcpy(umad_get_mad(buf), smp, len);
	/* A directed-route SMP leaves through QP0 to the permissive LID. */
	umad_set_addr(buf, directed ? 0xffff : dlid, 0, 0, 0);
	rc = umad_send(u->portid, directed ? u->agent_dr : u->agent_lid, buf, (int)len, timeout_ms, 0);
	return rc < 0 ? (errno ? -errno : -EIO) : 0;
}

int hw_umad_wait(struct hw_umad *u, int timeout_ms)
{
	struct pollfd pfd = { .fd = umad_get_fd(u->portid), .events = POLLIN };
	int rc = poll(&pfd, 1, timeout_ms);

	if (rc < 0)
		return errno == EINTR ? 0 : -errno;
	return rc > 0 && (pfd.revents & POLLIN) ? 1 : 0;
}

int hw_umad_recv(struct hw_umad *u, const uint8_t **mad, size_t *len, int *status)
{
	int length = SMP_SIZE;
	int rc;

	/* Look first: umad2sim's read() does not follow the O_NONBLOCK contract. */
	if (hw_umad_wait(u, 0) <= 0)
		return -EAGAIN;
	rc = umad_recv(u->portid, u->recv_buf, &length, 0);
	if (rc < 0)
		return rc == -EWOULDBLOCK || rc == -EAGAIN ? -EAGAIN : rc;
	*mad = umad_get_mad(u->recv_buf);
	*len = length < 0 ? 0 : (size_t)length > SMP_SIZE ? SMP_SIZE : (size_t)length;
	*status = umad_status(u->recv_buf);
	return 0;
}
