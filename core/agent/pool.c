/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
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

static size_t blocks_layout(struct pool_blocks *b, size_t at, size_t size, uint32_t n)
{
	b->size = round_up(size, 64);
	b->n = b->nfree = n;
	return round_up(at, 64) + b->size * n;
}

static int blocks_init(struct pool_blocks *b, uint8_t *region, size_t at)
{
	b->base = region + round_up(at, 64);
	b->free = calloc(b->n + 1, sizeof(*b->free));
	if (!b->free)
		return -ENOMEM;
	for (uint32_t i = 0; i < b->n; i++)
		b->free[i] = b->n - 1 - i;
	return 0;
}

int pool_open(struct agent_pool *p, struct core_ep *ep, const struct pool_layout *l)
{
	size_t tx_at = l->rx_bytes, frames_at, slots_at;
	struct core_mr mr;
	int rc;

	memset(p, 0, sizeof(*p));
	if ((l->nslots && !l->slot_size) || (l->ntx && !l->tx_size) || (l->nframes && !l->frame_size))
		return -EINVAL;
	frames_at = blocks_layout(&p->tx, tx_at, l->tx_size, l->ntx);
	slots_at = round_up(blocks_layout(&p->frames, frames_at, l->frame_size, l->nframes), SLOT_ALIGN);
	p->rx_bytes = l->rx_bytes;
	p->slot_size = l->slot_size;
	p->nslots = l->nslots;
	p->huge_asked = l->hugepages;
	p->len = slots_at + l->slot_size * l->nslots;
	p->region = map_region(&p->len, l->hugepages, &p->huge);
	p->free_slots = calloc(l->nslots + 1, sizeof(*p->free_slots));
	p->owner = calloc(l->nslots + 1, sizeof(*p->owner));
	if (!p->region || !p->free_slots || !p->owner || blocks_init(&p->tx, p->region, tx_at) ||
	    blocks_init(&p->frames, p->region, frames_at)) {
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
	for (uint32_t i = 0; i < l->nslots; i++)
		p->free_slots[i] = l->nslots - 1 - i;
	p->nfree = l->nslots;
	return 0;
}

void *pool_take(struct pool_blocks *b)
{
	uint8_t *m;

	if (!b->nfree) {
		b->fallbacks++;
		return NULL;
	}
	m = b->base + (size_t)b->free[--b->nfree] * b->size;
	if (b->n - b->nfree > b->hwm)
		b->hwm = b->n - b->nfree;
	memset(m, 0, b->size);
	return m;
}

bool pool_give(struct pool_blocks *b, void *ptr)
{
	uintptr_t at = (uintptr_t)ptr, base = (uintptr_t)b->base;

	if (!b->n || at < base || at >= base + b->size * b->n || (at - base) % b->size)
		return false;
	b->free[b->nfree++] = (uint32_t)((at - base) / b->size);
	return true;
}

void pool_close(struct agent_pool *p)
{
	if (p->region)
		munmap(p->region, p->len);
	free(p->free_slots);
	free(p->owner);
	free(p->tx.free);
	free(p->frames.free);
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
