/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Device, port, GID and P_Key queries. */
#include "hw/preload/preload.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#undef ibv_query_port

/* The soft port's only P_Key: the default, full membership. */
#define PRELOAD_DEFAULT_PKEY 0xffff

/* rdma-core's private GID-type enum (driver.h), which ibv_devinfo and pyverbs read. */
enum preload_gid_type_sysfs {
	PRELOAD_GID_TYPE_SYSFS_IB_ROCE_V1,
	PRELOAD_GID_TYPE_SYSFS_ROCE_V2,
};
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       enum preload_gid_type_sysfs *type);

PRELOAD_EXPORT int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	if (preload_is_soft(context))
		return preload_soft_ops()->query_device(context, attr);
	return PRELOAD_NEXT(ibv_query_device, "IBVERBS_1.1")(context, attr);
}

/*
 * The exported ibv_query_port takes the old, shorter struct, 48 bytes, up
 * to and with "flags" (verbs.h's inline ibv_query_port calls it only for
 * contexts without the extended op; old binaries call it directly): never
 * write past it.
 */
#define PRELOAD_COMPAT_PORT_ATTR_SIZE offsetof(struct ibv_port_attr, port_cap_flags2)
PRELOAD_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
				  struct _compat_ibv_port_attr *port_attr)
{
	if (!preload_is_soft(context))
		return PRELOAD_NEXT(ibv_query_port, "IBVERBS_1.1")(context, port_num, port_attr);
	/* The soft context's sized query writes no more than it is told. */
	return verbs_get_ctx(context)->query_port(context, port_num, (struct ibv_port_attr *)port_attr,
						  PRELOAD_COMPAT_PORT_ATTR_SIZE);
}

PRELOAD_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
	if (!preload_is_soft(context))
		return PRELOAD_NEXT(ibv_query_gid, "IBVERBS_1.1")(context, port_num, index, gid);
	return preload_soft_ops()->query_gid(context, port_num, index, gid) ? -1 : 0;
}

/* A soft GID's entry, RoCE v2 style (it names an IPv4 endpoint). */
static int preload_soft_gid_entry(struct ibv_context *context, uint32_t port_num, uint32_t index,
				  struct ibv_gid_entry *entry)
{
	memset(entry, 0, sizeof(*entry));
	if (port_num > 255 || index > 255 ||
	    preload_soft_ops()->query_gid(context, (uint8_t)port_num, (int)index, &entry->gid))
		return ENODATA;
	entry->gid_index = index;
	entry->port_num = port_num;
	entry->gid_type = IBV_GID_TYPE_ROCE_V2;
	entry->ndev_ifindex = 0;
	return 0;
}

PRELOAD_EXPORT int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
				     struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	struct ibv_gid_entry full;
	int err;

	if (!preload_is_soft(context))
		return PRELOAD_NEXT(_ibv_query_gid_ex, "IBVERBS_1.11")(context, port_num, gid_index, entry,
								       flags, entry_size);
	if (flags || entry_size < sizeof(full))
		return EINVAL;
	err = preload_soft_gid_entry(context, port_num, gid_index, &full);
	if (!err)
		memcpy(entry, &full, sizeof(full));
	return err;
}

PRELOAD_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
					    size_t max_entries, uint32_t flags, size_t entry_size)
{
	if (!preload_is_soft(context))
		return PRELOAD_NEXT(_ibv_query_gid_table, "IBVERBS_1.11")(context, entries, max_entries,
									  flags, entry_size);
	struct ibv_port_attr port;

	if (flags || entry_size < sizeof(*entries))
		return -EINVAL;
	if (verbs_get_ctx(context)->query_port(context, 1, &port, sizeof(port)))
		return -EIO;
	/* Every entry of the port's table, or EINVAL when they do not all fit (as the kernel answers). */
	if (max_entries < (size_t)port.gid_tbl_len)
		return -EINVAL;
	for (int i = 0; i < port.gid_tbl_len; i++)
		if (preload_soft_gid_entry(
			context, 1, (uint32_t)i,
			(struct ibv_gid_entry *)((char *)entries + (size_t)i * entry_size)))
			return -EIO;
	return port.gid_tbl_len;
}

PRELOAD_EXPORT int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
				      enum preload_gid_type_sysfs *type)
{
	union ibv_gid gid;

	if (!preload_is_soft(context))
		return PRELOAD_NEXT(ibv_query_gid_type, "IBVERBS_PRIVATE_34")(context, port_num, index, type);
	if (index > 255 || preload_soft_ops()->query_gid(context, port_num, (int)index, &gid)) {
		errno = EINVAL;
		return -1;
	}
	*type = PRELOAD_GID_TYPE_SYSFS_ROCE_V2;
	return 0;
}

PRELOAD_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
	if (!preload_is_soft(context))
		return PRELOAD_NEXT(ibv_query_pkey, "IBVERBS_1.1")(context, port_num, index, pkey);
	if (port_num != 1 || index != 0)
		return -1; /* as libibverbs: no such entry */
	*pkey = htobe16(PRELOAD_DEFAULT_PKEY);
	return 0;
}

PRELOAD_EXPORT int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	if (!preload_is_soft(context))
		return PRELOAD_NEXT(ibv_get_pkey_index, "IBVERBS_1.5")(context, port_num, pkey);
	/* Limited membership (high bit clear) matches the same partition. */
	if (port_num == 1 && (be16toh(pkey) & 0x7fff) == (PRELOAD_DEFAULT_PKEY & 0x7fff))
		return 0;
	errno = ENOENT;
	return -1;
}
