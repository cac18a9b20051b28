/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The agent's link buffers in one region registered once with the device
 * (hugepages with RDMATOOL_AGENT_HUGEPAGES=1 when the system has them
 * reserved, else ordinary pages; `huge` says which): first the receive
 * buffers (eager, then large), then the eager send buffers (blocks of
 * `tx`: 4 per peer, twice over for the ones a dead link leaves in flight),
 * then the large frames that carry GETMSG data and p2p chunks (blocks of
 * `frames`, the GETMSG cap's worth, and with p2p the injection cap's too),
 * then, with RDMATOOL_AGENT_TRANSPORT_TYPE=rma, the staging slots
 * targets read large chunks from.  Sends from the region find its one
 * registration in core's MR cache; a block class that runs out falls back to
 * the heap (counted in `fallbacks`: that memory is registered on first use
 * and must be deregistered before it is freed).  A chunk is copied into a slot (the
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

/* Fixed-size blocks of the region, handed out and back in any order. */
struct pool_blocks {
	uint8_t *base;
	size_t size; /* of a block */
	uint32_t n, nfree, hwm;
	uint32_t *free; /* a stack of free block numbers */
	uint64_t fallbacks; /* takes that found every block taken */
};

struct agent_pool {
	uint8_t *region; /* the receive buffers start here */
	size_t len, rx_bytes;
	bool huge;	/* the region is on hugepages */
	bool huge_asked;
	struct pool_blocks tx, frames;
	uint8_t *slots; /* rma staging slots, after the receive buffers */
	size_t slot_size;
	uint32_t nslots, nfree;
	uint32_t slots_hwm;   /* slots taken at once, at most */
	uint32_t *free_slots; /* a stack of free slot numbers */
	uint32_t *owner;      /* rank + 1 of the peer reading a slot, 0 when free */
	uint32_t rkey;
};

/* The sizes and counts of what pool_open lays out (a count may be 0). */
struct pool_layout {
	size_t rx_bytes;
	size_t tx_size, frame_size, slot_size;
	uint32_t ntx, nframes, nslots;
	bool hugepages; /* asked for */
};
/* The region of layout l, registered with ep. */
int pool_open(struct agent_pool *p, struct core_ep *ep, const struct pool_layout *l);
/* A free block of b (zeroed), or NULL (counted in b->fallbacks) when all are taken. */
void *pool_take(struct pool_blocks *b);
/* Gives back a block of b: true, or false when ptr is not one of b's (heap memory). */
bool pool_give(struct pool_blocks *b, void *ptr);
/* After the endpoint is closed (nothing may write or read the region any more). */
void pool_close(struct agent_pool *p);
/* A free slot for a chunk going to rank, or NULL when all are taken. */
uint8_t *pool_take_slot(struct agent_pool *p, uint32_t rank);
/* Gives back the slot at addr that rank has read: 0, or -EINVAL when rank holds no slot there. */
int pool_give_slot(struct agent_pool *p, uint64_t addr, uint32_t rank);
/* Gives back every slot rank holds (its link went down); returns how many. */
uint32_t pool_give_slots(struct agent_pool *p, uint32_t rank);

#endif
