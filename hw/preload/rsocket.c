/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rsockets (librdmacm's rsocket(), used by rstream, rcopy, riostream,
 * udpong and librspreload) are not supported on the soft device: they reach
 * into librdmacm's private layout of an id, which the soft CM's ids do not
 * have, and crashed.  rsocket(), the call every rsocket starts with, fails
 * with EOPNOTSUPP and says why once on stderr, so those programs stop
 * cleanly at their first call.
 */
#include "hw/preload/preload.h"

#include <errno.h>
#include <stdio.h>

PRELOAD_EXPORT int rsocket(int domain, int type, int protocol)
{
	static atomic_bool told;

	(void)domain;
	(void)type;
	(void)protocol;
	if (!atomic_exchange(&told, true))
		fprintf(stderr, "librdmatool-verbs: rsockets (rsocket) are not supported on the soft device; "
				"use rdma_cm and verbs, or plain sockets\n");
	errno = EOPNOTSUPP;
	return -1;
}
