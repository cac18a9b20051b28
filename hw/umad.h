/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * hw/umad: a thin layer over libibumad for sending subnet management
 * packets (SMPs) from one local port.  One handle = one umad fd with two
 * SMI agents: LID-routed (class 0x01) and directed-route (class 0x81).
 * A handle is used by one thread at a time.  Nothing here prints.
 */
#ifndef RDMATOOL_HW_UMAD_H
#define RDMATOOL_HW_UMAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HW_UMAD_CA_NAME_LEN 64

struct hw_umad_port_info {
	char ca_name[HW_UMAD_CA_NAME_LEN];
	int port;
	uint16_t base_lid;
	int state;	       /* IB port state: 4 = ACTIVE */
	bool simulator;	       /* the CA is ibsim's (umad2sim reports hca_type "simulator") */
};

struct hw_umad {
	bool opened;
	int portid;
	int agent_lid; /* SMI agent for LID-routed SMPs */
	int agent_dr;  /* SMI agent for directed-route SMPs */
	void *recv_buf;
	struct hw_umad_port_info info;
};

/*
 * Finds the port: ca_name NULL or "" = the first CA; port 0 = the first
 * ACTIVE port (else the first port).  Returns 0, -ENODEV when no umad
 * device exists at all, -ENOENT for an unknown CA, -EINVAL for a bad port.
 */
int hw_umad_find_port(const char *ca_name, int port, struct hw_umad_port_info *info);

/* Opens the port found by hw_umad_find_port and registers both SMI agents. */
int hw_umad_open(struct hw_umad *u, const struct hw_umad_port_info *info);
/* Unregisters the agents and closes the port; safe to call twice. */
void hw_umad_close(struct hw_umad *u);

/*
 * Sends one 256-byte SMP to dlid (ignored for directed route).  timeout_ms is handed to the kernel so that it
 * keeps the send waiting for its response; retries are left to the caller.
 */
int hw_umad_send(struct hw_umad *u, uint16_t dlid, bool directed, const void *smp, size_t len, int timeout_ms);

/* Waits up to timeout_ms (0 = just look) for a received MAD: 1 ready, 0 none, <0 -errno. */
int hw_umad_wait(struct hw_umad *u, int timeout_ms);

/*
 * Takes one received MAD without blocking.  On success returns 0, points
 * mad at the MAD (valid until the next call), sets len, and sets status to
 * the umad status (0, or an errno such as ETIMEDOUT for a send that got no
 * answer).  Returns -EAGAIN when nothing is waiting.
 */
int hw_umad_recv(struct hw_umad *u, const uint8_t **mad, size_t *len, int *status);

#endif
