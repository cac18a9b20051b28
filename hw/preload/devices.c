/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The device list with soft0 in it, and opening and closing devices. */
#include "hw/preload/preload.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* rdma-core's sysfs indexes are small; this one cannot collide with a real device's. */
#define PRELOAD_SOFT_DEVICE_INDEX 1000

#undef ibv_get_device_list

void *preload_next(const char *name, const char *version)
{
	return dlvsym(RTLD_NEXT, name, version);
}

struct ibv_device *preload_soft_device(void)
{
	static struct ibv_device *soft;
	struct ibv_device *dev = __atomic_load_n(&soft, __ATOMIC_ACQUIRE);
	struct hw_device hw;

	if (!dev && hw_soft_provider.list_devices(&hw, 1) == 1) {
		dev = hw.ibv_device;
		__atomic_store_n(&soft, dev, __ATOMIC_RELEASE);
	}
	return dev;
}

/*
 * The list handed out: soft0 first (a program run through rdmatool exec
 * that picks the first device gets the soft one), then libibverbs' own
 * devices.  Their list is kept to be freed with ours.
 */
struct preload_device_list {
	struct ibv_device **real;
	struct ibv_device *devices[];
};

PRELOAD_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
	__typeof__(&ibv_get_device_list) next = PRELOAD_NEXT(ibv_get_device_list, "IBVERBS_1.1");
	struct ibv_device **real = NULL;
	struct preload_device_list *list;
	int n_real = 0, n = 0;

	/* A kernel without RDMA makes libibverbs fail (ENOSYS): that is no real devices, not an error. */
	if (next)
		real = next(&n_real);
	if (!real)
		n_real = 0;
	list = calloc(1, sizeof(*list) + ((size_t)n_real + 2) * sizeof(list->devices[0]));
	if (!list) {
		if (real)
			PRELOAD_NEXT(ibv_free_device_list, "IBVERBS_1.1")(real);
		errno = ENOMEM;
		return NULL;
	}
	list->real = real;
	if (preload_soft_device())
		list->devices[n++] = preload_soft_device();
	for (int i = 0; i < n_real; i++)
		list->devices[n++] = real[i];
	if (num_devices)
		*num_devices = n;
	return list->devices;
}

PRELOAD_EXPORT void ibv_free_device_list(struct ibv_device **devices)
{
	struct preload_device_list *list;

	if (!devices)
		return;
	list = SOFT_CONTAINER_OF(devices, struct preload_device_list, devices);
	if (list->real)
		PRELOAD_NEXT(ibv_free_device_list, "IBVERBS_1.1")(list->real);
	free(list);
}

PRELOAD_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
	if (preload_is_soft_device(device))
		return device->name;
	return PRELOAD_NEXT(ibv_get_device_name, "IBVERBS_1.1")(device);
}

PRELOAD_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	struct ibv_device_attr attr;
	struct ibv_context *ctx;

	if (!preload_is_soft_device(device))
		return PRELOAD_NEXT(ibv_get_device_guid, "IBVERBS_1.1")(device);
	/* The GUID is the NIC's: bring it up for the question (it stays up while a context holds it). */
	ctx = ibv_open_device(device);
	if (!ctx)
		return 0;
	if (preload_soft_ops()->query_device(ctx, &attr))
		attr.node_guid = 0;
	ibv_close_device(ctx);
	return attr.node_guid;
}

PRELOAD_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
	if (preload_is_soft_device(device))
		return PRELOAD_SOFT_DEVICE_INDEX;
	return PRELOAD_NEXT(ibv_get_device_index, "IBVERBS_1.9")(device);
}

PRELOAD_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct ibv_context *ctx;
	struct hw_device hw;

	if (!preload_is_soft_device(device))
		return PRELOAD_NEXT(ibv_open_device, "IBVERBS_1.1")(device);
	if (hw_soft_provider.list_devices(&hw, 1) != 1) {
		errno = ENODEV;
		return NULL;
	}
	ctx = hw_soft_provider.open_device(&hw);
	/* The program only says "couldn't open"; a configuration error is worth its own words. */
	if (!ctx && hw_soft_provider.open_error() && *hw_soft_provider.open_error()) {
		int err = errno;

		fprintf(stderr, "librdmatool-verbs: soft0: %s\n", hw_soft_provider.open_error());
		errno = err;
	}
	/* The context is the NIC's own allocation; hw only named the device to open. */
	// cppcheck-suppress returnDanglingLifetime
	return ctx;
}

PRELOAD_EXPORT int ibv_close_device(struct ibv_context *context)
{
	if (preload_is_soft(context))
		return preload_soft_ops()->close_device(context);
	return PRELOAD_NEXT(ibv_close_device, "IBVERBS_1.1")(context);
}
