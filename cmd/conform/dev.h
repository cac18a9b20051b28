/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The device a conformance run judges: one context on one port and GID,
 * what ibv_query_* said of it at the start, and the failures of the case
 * that runs now.  The cases' own objects live in struct rcp (rcp.h).
 */
#ifndef RDMATOOL_CMD_CONFORM_DEV_H
#define RDMATOOL_CMD_CONFORM_DEV_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stddef.h>

#define CF_FAILURES_KEPT 4
#define CF_FAILURE_LEN	 400

struct cf_dev {
	struct ibv_context *ctx;
	char name[64];
	struct ibv_device_attr dattr;
	struct ibv_port_attr pattr;
	union ibv_gid gid;
	int port, gid_index;
	bool no_atomic_write; /* the device refused IBV_WR_ATOMIC_WRITE */
	/* The case that runs now. */
	int nfailures;
	char failure[CF_FAILURES_KEPT][CF_FAILURE_LEN];
};

/*
 * Opens device (NULL: the default one) and queries port and GID index;
 * 0, or 2 (a usage error: no such device, port or GID) or 1 (it would not
 * open) with why naming the problem and the fix.
 */
int cf_dev_open(struct cf_dev *d, const char *device, int port, int gid_index, char *why, size_t len);
void cf_dev_close(struct cf_dev *d);
/* Records one failure of the case that runs now. */
void cf_dev_fail(struct cf_dev *d, const char *what);

#endif
