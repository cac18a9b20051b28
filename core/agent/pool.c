/* SPDX-License-Identifier: MIT */
/* The agent's registered link buffers; the contract is in pool.h. */
#include "core/agent/pool.h"

#include "core/transport/endpoint.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGEPAGE_SIZE (2u << 20)
#define SLOT_ALIGN    4096u

static size_t round_up(size_t n, size_t to)
{
	return (n + to - 1) / to * to;
}

static void *map_region(size_t *len, bool hugepages, bool *huge)
{
	void *m = MAP_FAILED;

	*huge = false;
	if (hugepages) {
		m = mmap(NULL, round_up(*len, HUGEPAGE_SIZE), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
		*huge = m != MAP_FAILED;
		if (*huge)
			*len = round_up(*len, HUGEPAGE_SIZE);
	}
	if (m == MAP_FAILED) /* none reserved (vm.nr_hugepages) or not asked for */
		m = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return m == MAP_FAILED ? NULL : m;
}

int pool_open(struct agent_pool *p, struct core_ep *ep, size_t rx_bytes, size_t slot_size, uint32_t nslots,
	      bool hugepages)
{
	size_t slots_at = round_up(rx_bytes, SLOT_ALIGN);
	struct core_mr mr;
	int rc;

	memset(p, 0, sizeof(*p));
	if (nslots && !slot_size)
		return -EINVAL;
	p->rx_bytes = rx_bytes;
	p->slot_size = slot_size;
	p->nslots = nslots;
	p->len = slots_at + slot_size * nslots;
	p->region = map_region(&p->len, hugepages, &p->huge);
	p->free_slots = calloc(nslots + 1, sizeof(*p->free_slots));
	p->owner = calloc(nslots + 1, sizeof(*p->owner));
	if (!p->region || !p->free_slots || !p->owner) {
		pool_close(p);
		return -ENOMEM;
	}
	rc = core_mr_reg(ep, p->region, p->len, &mr);
	if (rc) {
		pool_close(p);
		return rc;
	}
	p->rkey = mr.rkey;
	p->slots = p->region + slots_at;
	for (uint32_t i = 0; i < nslots; i++)
		p->free_slots[i] = nslots - 1 - i;
	p->nfree = nslots;
	return 0;
}

void pool_close(struct agent_pool *p)
{
	if (p->region)
		munmap(p->region, p->len);
	free(p->free_slots);
	free(p->owner);
	memset(p, 0, sizeof(*p));
}

uint8_t *pool_take_slot(struct agent_pool *p, uint32_t rank)
{
	uint32_t slot;

	if (!p->nfree)
		return NULL;
	slot = p->free_slots[--p->nfree];
	p->owner[slot] = rank + 1;
	if (p->nslots - p->nfree > p->slots_hwm)
		p->slots_hwm = p->nslots - p->nfree;
	return p->slots + (size_t)slot * p->slot_size;
}

static void give(struct agent_pool *p, uint32_t slot)
{
	p->owner[slot] = 0;
	p->free_slots[p->nfree++] = slot;
}

int pool_give_slot(struct agent_pool *p, uint64_t addr, uint32_t rank)
{
	uint64_t base = (uintptr_t)p->slots, slot;

	if (!p->nslots || addr < base || (addr - base) % p->slot_size)
		return -EINVAL;
	slot = (addr - base) / p->slot_size;
	if (slot >= p->nslots || p->owner[slot] != rank + 1)
		return -EINVAL;
	give(p, (uint32_t)slot);
	return 0;
}

uint32_t pool_give_slots(struct agent_pool *p, uint32_t rank)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < p->nslots; i++)
		if (p->owner[i] == rank + 1) {
			give(p, i);
			n++;
		}
	return n;
}
