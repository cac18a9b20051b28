/* SPDX-License-Identifier: MIT */
/* Registered staging slots of the rma transport; the contract is in rma_pool.h. */
#include "core/agent/rma_pool.h"

#include "core/transport/endpoint.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGEPAGE_SIZE (2u << 20)

static void *map_region(size_t len, bool hugepages, bool *huge)
{
	void *m = MAP_FAILED;

	*huge = false;
	if (hugepages) {
		m = mmap(NULL, (len + HUGEPAGE_SIZE - 1) & ~(size_t)(HUGEPAGE_SIZE - 1),
			 PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
		*huge = m != MAP_FAILED;
	}
	if (m == MAP_FAILED) /* none reserved (vm.nr_hugepages) or not asked for */
		m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return m == MAP_FAILED ? NULL : m;
}

int rma_pool_open(struct rma_pool *p, struct core_ep *ep, size_t slot_size, uint32_t nslots, bool hugepages)
{
	struct core_mr mr;
	int rc;

	memset(p, 0, sizeof(*p));
	if (!slot_size || !nslots)
		return -EINVAL;
	p->slot_size = slot_size;
	p->nslots = nslots;
	p->len = slot_size * nslots;
	p->base = map_region(p->len, hugepages, &p->huge);
	if (p->huge)
		p->len = (p->len + HUGEPAGE_SIZE - 1) & ~(size_t)(HUGEPAGE_SIZE - 1);
	p->free_slots = calloc(nslots, sizeof(*p->free_slots));
	p->owner = calloc(nslots, sizeof(*p->owner));
	if (!p->base || !p->free_slots || !p->owner) {
		rma_pool_close(p);
		return -ENOMEM;
	}
	rc = core_mr_reg(ep, p->base, p->len, &mr);
	if (rc) {
		rma_pool_close(p);
		return rc;
	}
	p->rkey = mr.rkey;
	for (uint32_t i = 0; i < nslots; i++)
		p->free_slots[i] = nslots - 1 - i;
	p->nfree = nslots;
	return 0;
}

void rma_pool_close(struct rma_pool *p)
{
	if (p->base)
		munmap(p->base, p->len);
	free(p->free_slots);
	free(p->owner);
	memset(p, 0, sizeof(*p));
}

uint8_t *rma_pool_take(struct rma_pool *p, uint32_t rank)
{
	uint32_t slot;

	if (!p->nfree)
		return NULL;
	slot = p->free_slots[--p->nfree];
	p->owner[slot] = rank + 1;
	return p->base + (size_t)slot * p->slot_size;
}

static void give_slot(struct rma_pool *p, uint32_t slot)
{
	p->owner[slot] = 0;
	p->free_slots[p->nfree++] = slot;
}

int rma_pool_give(struct rma_pool *p, uint64_t addr, uint32_t rank)
{
	uint64_t base = (uintptr_t)p->base, slot;

	if (!p->base || addr < base || (addr - base) % p->slot_size)
		return -EINVAL;
	slot = (addr - base) / p->slot_size;
	if (slot >= p->nslots || p->owner[slot] != rank + 1)
		return -EINVAL;
	give_slot(p, (uint32_t)slot);
	return 0;
}

uint32_t rma_pool_give_all(struct rma_pool *p, uint32_t rank)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < p->nslots && p->base; i++)
		if (p->owner[i] == rank + 1) {
			give_slot(p, i);
			n++;
		}
	return n;
}
