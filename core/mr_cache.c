/* SPDX-License-Identifier: MIT */
/*
 * The read-mostly MR cache: lookups take the read side of a rwlock and
 * scan the (few) cached registrations; a miss registers under the control
 * mutex and appends under the write side.  Registrations cover the whole
 * requested range with every access right and live until the endpoint
 * closes (the application must not free a buffer it still moves data with).
 */
#include "endpoint_impl.h"
#include "../hw/hw.h"

#include <errno.h>
#include <stdlib.h>

static struct ibv_mr *find(struct core_ep *ep, uintptr_t start, uintptr_t end)
{
	for (int i = 0; i < ep->nmrs; i++)
		if (ep->mrs[i].start <= start && end <= ep->mrs[i].end)
			return ep->mrs[i].mr;
	return NULL;
}

int mr_cache_lookup(struct core_ep *ep, const void *addr, size_t len, struct ibv_mr **out)
{
	uintptr_t start = (uintptr_t)addr, end = start + (len ? len : 1);
	struct ibv_mr *mr;
	int rc = 0;

	pthread_rwlock_rdlock(&ep->mr_lock);
	mr = find(ep, start, end);
	pthread_rwlock_unlock(&ep->mr_lock);
	if (mr) {
		*out = mr;
		return 0;
	}
	pthread_mutex_lock(&ep->ctrl);
	pthread_rwlock_rdlock(&ep->mr_lock);
	mr = find(ep, start, end); /* another thread may have registered it meanwhile */
	pthread_rwlock_unlock(&ep->mr_lock);
	if (!mr) {
		mr = hw_reg_mr(ep->pd, (void *)start, end - start,
			       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
				       IBV_ACCESS_REMOTE_ATOMIC);
		if (!mr) {
			rc = errno ? -errno : -ENOMEM;
		} else {
			pthread_rwlock_wrlock(&ep->mr_lock);
			if (ep->nmrs == ep->mr_cap) {
				int cap = ep->mr_cap ? ep->mr_cap * 2 : 16;
				struct mr_cache_entry *n = realloc(ep->mrs, (size_t)cap * sizeof(*n));

				if (!n) {
					rc = -ENOMEM;
				} else {
					ep->mrs = n;
					ep->mr_cap = cap;
				}
			}
			if (!rc)
				ep->mrs[ep->nmrs++] = (struct mr_cache_entry){ start, end, mr };
			pthread_rwlock_unlock(&ep->mr_lock);
			if (rc)
				hw_dereg_mr(mr);
		}
	}
	pthread_mutex_unlock(&ep->ctrl);
	if (!rc)
		*out = mr;
	return rc;
}

void mr_cache_fini(struct core_ep *ep)
{
	for (int i = 0; i < ep->nmrs; i++)
		hw_dereg_mr(ep->mrs[i].mr);
	free(ep->mrs);
	ep->mrs = NULL;
	ep->nmrs = ep->mr_cap = 0;
}

int core_mr_reg(struct core_ep *ep, void *addr, size_t len, struct core_mr *out)
{
	struct ibv_mr *mr;
	int rc = mr_cache_lookup(ep, addr, len, &mr);

	if (rc)
		return rc;
	out->addr = addr;
	out->len = len;
	out->lkey = mr->lkey;
	out->rkey = mr->rkey;
	return 0;
}
