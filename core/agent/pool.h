/* SPDX-License-Identifier: MIT */
/*
 * The agent's link buffers in one region registered once with the device
 * (hugepages with RDMATOOL_AGENT_HUGEPAGES=1 when the system has them
 * reserved, else ordinary pages): first the receive buffers (eager, then
 * large), then, with RDMATOOL_AGENT_TRANSPORT_TYPE=rma, the staging slots
 * targets read large chunks from.  A chunk is copied into a slot (the
 * client's gateway slot is free again at once) and the slot stays taken,
 * its bytes counted toward the injection cap, until the target says it has
 * read it (or its link went down).
 */
#ifndef RDMATOOL_CORE_AGENT_POOL_H
#define RDMATOOL_CORE_AGENT_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct core_ep;

struct agent_pool {
	uint8_t *region; /* the receive buffers start here */
	size_t len, rx_bytes;
	bool huge;	/* the region is on hugepages */
	uint8_t *slots; /* rma staging slots, after the receive buffers */
	size_t slot_size;
	uint32_t nslots, nfree;
	uint32_t slots_hwm;   /* slots taken at once, at most */
	uint32_t *free_slots; /* a stack of free slot numbers */
	uint32_t *owner;      /* rank + 1 of the peer reading a slot, 0 when free */
	uint32_t rkey;
};

/* rx_bytes of receive buffers and nslots (may be 0) slots of slot_size bytes, registered with ep. */
int pool_open(struct agent_pool *p, struct core_ep *ep, size_t rx_bytes, size_t slot_size, uint32_t nslots,
	      bool hugepages);
/* After the endpoint is closed (nothing may write or read the region any more). */
void pool_close(struct agent_pool *p);
/* A free slot for a chunk going to rank, or NULL when all are taken. */
uint8_t *pool_take_slot(struct agent_pool *p, uint32_t rank);
/* Gives back the slot at addr that rank has read: 0, or -EINVAL when rank holds no slot there. */
int pool_give_slot(struct agent_pool *p, uint64_t addr, uint32_t rank);
/* Gives back every slot rank holds (its link went down); returns how many. */
uint32_t pool_give_slots(struct agent_pool *p, uint32_t rank);

#endif
