/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Device discovery across providers, and dispatch from a context to its provider. */
#include "hw/hw.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const struct hw_provider *const providers[] = {
    &hw_verbs_provider,
    &hw_soft_provider,
};
#define NPROVIDERS (sizeof(providers) / sizeof(providers[0]))

const char *hw_open_error(void)
{
	for (size_t i = 0; i < NPROVIDERS; i++) {
		const char *why = providers[i]->open_error ? providers[i]->open_error() : NULL;

		if (why && *why)
			return why;
	}
	return "";
}

/*
 * Under rdmatool exec, libibverbs itself lists the soft device (the
 * preloaded librdmatool-verbs.so), beside the built-in one of the same
 * name.  The libibverbs one is renamed by a "v" before its number
 * (soft0 -> softv0), so either can be chosen: softv0 takes the path a real
 * NIC takes, through hw/verbs.c.
 */
static void rename_verbs_twins(struct hw_device *devs, int n)
{
	for (int i = 0; i < n; i++) {
		if (devs[i].provider != &hw_verbs_provider)
			continue;
		for (int j = 0; j < n; j++) {
			char renamed[sizeof(devs[i].name)];
			size_t digits = strlen(devs[i].name);

			if (devs[j].provider == &hw_verbs_provider || strcmp(devs[i].name, devs[j].name))
				continue;
			while (digits && devs[i].name[digits - 1] >= '0' && devs[i].name[digits - 1] <= '9')
				digits--;
			snprintf(renamed, sizeof(renamed), "%.*sv%s", (int)digits, devs[i].name,
				 devs[i].name + digits);
			memcpy(devs[i].name, renamed, sizeof(renamed));
			break;
		}
	}
}

int hw_list_devices(struct hw_device *out, int max, int *verbs_errno)
{
	int count = 0;

	if (verbs_errno)
		*verbs_errno = 0;
	for (size_t i = 0; i < NPROVIDERS; i++) {
		int n = providers[i]->list_devices(out + count, max - count);

		if (n < 0) {
			if (providers[i] == &hw_verbs_provider && verbs_errno)
				*verbs_errno = -n;
			continue;
		}
		count += n;
	}
	rename_verbs_twins(out, count);
	return count;
}

static bool has_active_port(const struct hw_device *dev)
{
	struct ibv_context *ctx = dev->provider->open_device(dev);
	struct ibv_device_attr attr;
	bool active = false;

	if (!ctx)
		return false;
	if (dev->provider->ops->query_device(ctx, &attr) == 0) {
		for (uint8_t port = 1; port <= attr.phys_port_cnt && !active; port++) {
			struct ibv_port_attr pattr;

			if (dev->provider->ops->query_port(ctx, port, &pattr) == 0)
				active = pattr.state == IBV_PORT_ACTIVE;
		}
	}
	dev->provider->ops->close_device(ctx);
	return active;
}

struct ibv_context *hw_open_device(const char *name, struct hw_device *chosen)
{
	struct hw_device devs[HW_MAX_DEVICES];
	int n = hw_list_devices(devs, HW_MAX_DEVICES, NULL);
	const struct hw_device *pick = NULL;

	for (int i = 0; i < n && !pick; i++) {
		if (name ? strcmp(devs[i].name, name) == 0
			 : devs[i].provider == &hw_soft_provider || has_active_port(&devs[i]))
			pick = &devs[i];
	}
	if (!pick) {
		errno = ENODEV;
		return NULL;
	}
	if (chosen)
		*chosen = *pick;
	return pick->provider->open_device(pick);
}

static const struct hw_provider *provider_of(const struct ibv_context *ctx)
{
	/* Soft first: its test is a pointer comparison, verbs owns the rest. */
	if (hw_soft_provider.owns_context(ctx))
		return &hw_soft_provider;
	return &hw_verbs_provider;
}

const struct hw_ops *hw_ops_of(const struct ibv_context *ctx)
{
	return provider_of(ctx)->ops;
}

const char *hw_provider_name(const struct ibv_context *ctx)
{
	return provider_of(ctx)->name;
}
