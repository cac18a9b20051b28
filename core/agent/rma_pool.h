/* SPDX-License-Identifier: MIT */
/*
 * The origin's staging buffers of RDMATOOL_AGENT_TRANSPORT_TYPE=rma: one
 * region registered once with the device, cut into fixed slots.  A chunk of
 * a large SENDMSG is copied into a slot (the client's gateway slot is free
 * again at once) and the target RDMA READs it from there; the slot stays
 * taken, and its bytes count toward the injection cap, until the target
 * says it has read it (or its link went down).  Hugepages when asked for
 * and available, else ordinary pages.
 */
#ifndef RDMATOOL_CORE_AGENT_RMA_POOL_H
#define RDMATOOL_CORE_AGENT_RMA_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct core_ep;

struct rma_pool {
	uint8_t *base;
	size_t slot_size, len;
	uint32_t nslots, nfree;
	uint32_t *free_slots; /* a stack of free slot numbers */
	uint32_t *owner;      /* rank + 1 of the peer reading a slot, 0 when free */
	uint32_t rkey;
	bool huge; /* the region is on hugepages */
};

/* nslots slots of slot_size bytes, registered with ep; 0 or a negative errno. */
int rma_pool_open(struct rma_pool *p, struct core_ep *ep, size_t slot_size, uint32_t nslots, bool hugepages);
/* After the endpoint is closed (nothing may read the slots any more). */
void rma_pool_close(struct rma_pool *p);
/* A free slot for a chunk going to rank, or NULL when all are taken. */
uint8_t *rma_pool_take(struct rma_pool *p, uint32_t rank);
/* Gives back the slot at addr that rank has read: 0, or -EINVAL when rank holds no slot there. */
int rma_pool_give(struct rma_pool *p, uint64_t addr, uint32_t rank);
/* Gives back every slot rank holds (its link went down); returns how many. */
uint32_t rma_pool_give_all(struct rma_pool *p, uint32_t rank);

#endif
