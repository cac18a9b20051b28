/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The device a conformance run judges (dev.h). */
#include "cmd/conform/dev.h"

#include "hw/hw.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int cf_dev_open(struct cf_dev *d, const char *device, int port, int gid_index, char *why, size_t len)
{
	struct hw_device chosen;

	*d = (struct cf_dev){.port = port, .gid_index = gid_index};
	errno = 0;
	if (!(d->ctx = hw_open_device(device, &chosen))) {
		if (device && errno == ENODEV) {
			snprintf(why, len, "--ib-dev %s: no such device; 'rdmatool devices' lists them",
				 device);
			return 2;
		}
		if (*hw_open_error())
			snprintf(why, len, "%s", hw_open_error());
		else
			snprintf(why, len, "cannot open %s: %s; check 'rdmatool devices'",
				 device ? device : "a device", strerror(errno ? errno : ENODEV));
		return 1;
	}
	snprintf(d->name, sizeof(d->name), "%s", chosen.name);
	if (hw_query_device(d->ctx, &d->dattr)) {
		snprintf(why, len, "ibv_query_device of %s failed: %s", d->name, strerror(errno));
		cf_dev_close(d);
		return 1;
	}
	if (hw_query_port(d->ctx, (uint8_t)port, &d->pattr)) {
		snprintf(why, len, "--ib-port %d: %s has no such port (it has %d)", port, d->name,
			 d->dattr.phys_port_cnt);
		cf_dev_close(d);
		return 2;
	}
	if (hw_query_gid(d->ctx, (uint8_t)port, gid_index, &d->gid)) {
		snprintf(why, len, "--gid-index %d: port %d of %s has no such GID", gid_index, port, d->name);
		cf_dev_close(d);
		return 2;
	}
	return 0;
}

void cf_dev_close(struct cf_dev *d)
{
	if (d->ctx)
		hw_close_device(d->ctx);
	d->ctx = NULL;
}

void cf_dev_fail(struct cf_dev *d, const char *what)
{
	if (d->nfailures < CF_FAILURES_KEPT)
		snprintf(d->failure[d->nfailures], sizeof(d->failure[0]), "%s", what);
	d->nfailures++;
}
