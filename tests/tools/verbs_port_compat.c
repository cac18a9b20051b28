/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Calls libibverbs' exported ibv_query_port (not verbs.h's inline wrapper)
 * on the first device, as binaries built against old headers do, with the
 * old 48-byte struct in a larger buffer, and reports whether anything past
 * it was written.  exec_basic.sh runs it under rdmatool exec.
 */
#include <infiniband/verbs.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#undef ibv_query_port

int main(void)
{
	const size_t old_size = offsetof(struct ibv_port_attr, port_cap_flags2);
	struct ibv_device **list = ibv_get_device_list(NULL);
	unsigned char buf[sizeof(struct ibv_port_attr) + 16];
	struct ibv_port_attr attr;
	struct ibv_context *ctx;
	int rc;

	if (!list || !list[0] || !(ctx = ibv_open_device(list[0]))) {
		fprintf(stderr, "no device to open\n");
		return 2;
	}
	memset(buf, 0xab, sizeof(buf));
	rc = ibv_query_port(ctx, 1, (struct _compat_ibv_port_attr *)buf);
	memcpy(&attr, buf, sizeof(attr));
	for (size_t i = old_size; i < sizeof(buf); i++) {
		if (buf[i] != 0xab) {
			printf("%s: rc %d, byte %zu past the old struct written\n", ibv_get_device_name(list[0]), rc, i);
			return 1;
		}
	}
	printf("%s: rc %d, state %d, nothing past %zu bytes\n", ibv_get_device_name(list[0]), rc, (int)attr.state,
	       old_size);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return rc ? 1 : 0;
}
