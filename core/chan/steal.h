/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Work stealing between the agents of one node (core/chan/sibling.h): each
 * agent publishes a board, <dir>/steal.<id> (owner-only, O_EXCL), of up to
 * STEAL_SLOTS large-message READs it cannot post yet (its ejection cap is
 * full: the backlog of core/agent/link/link.h).  A sibling whose own backlog is
 * empty takes one, READs the chunk from the sending agent over its own link
 * to it (every agent links to every agent of the other nodes) into the
 * slot's buffer, and marks it done; the owner copies the chunk into its
 * message and answers the sender as if it had read it itself.  The message,
 * queued in order on the owner's rail, is served only once every chunk is
 * in, so per-port order holds whoever read the chunks.
 *
 * Slot states: FREE (owner's) -> OFFERED (owner) -> TAKEN (a thief's CAS) ->
 * DONE (thief) -> FREE (owner); the owner takes back an OFFERED slot with a
 * CAS, and a TAKEN one whose thief died.  Thieves copy and check every
 * field they read (the board is another process's memory).
 */
#ifndef RDMATOOL_CORE_CHAN_STEAL_H
#define RDMATOOL_CORE_CHAN_STEAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define STEAL_SLOTS	  8
#define STEAL_SLOT_MAX	  (508u << 10) /* a chunk: PROTO_RMA_MAX */
#define STEAL_FILE_PREFIX "steal."

/* A READ to do: from the sending agent's link rank, len bytes at its addr/rkey. */
struct steal_job {
	uint32_t from, len, rkey;
	uint64_t addr;
};

struct steal_board;

/* Owner: creates its board (replacing a dead agent's: the caller holds the pid file lock). */
int steal_board_create(const char *dir, uint32_t id, struct steal_board **out);
/* Owner: removes it (thieves still mapping it only write into their mapping). */
void steal_board_destroy(struct steal_board *b, const char *dir);
/* Owner: offers a job in a FREE slot; the slot, or -1 when none is free. */
int steal_offer(struct steal_board *b, const struct steal_job *job);
/* Owner: takes back an OFFERED slot before any thief did (true), else it is taken. */
bool steal_reclaim(struct steal_board *b, int slot);
/*
 * Owner: a slot it offered.  1 with *status and *data (len bytes) once the
 * thief is done; then steal_release().  0 while offered or being read.  -1
 * when the thief died while reading it (looked at only with check_thief: a
 * few system calls): the slot is the owner's again (FREE).
 */
int steal_poll(struct steal_board *b, int slot, bool check_thief, int *status, const uint8_t **data);
void steal_release(struct steal_board *b, int slot);

/* Thief: maps a sibling's board; -ENOENT when it has none (yet). */
int steal_board_open(const char *dir, uint32_t id, struct steal_board **out);
void steal_board_close(struct steal_board *b);
/* Thief: whether the board's file is still the one mapped (its agent may have restarted). */
bool steal_board_current(struct steal_board *b, const char *dir, uint32_t id);
/* Thief: takes an OFFERED slot (its job copied into *job), or -1. */
int steal_take(struct steal_board *b, struct steal_job *job);
/* Thief: gives a slot it cannot serve back to the owner, still offered. */
void steal_untake(struct steal_board *b, int slot);
/* Thief: where the chunk goes (STEAL_SLOT_MAX bytes). */
uint8_t *steal_slot_data(struct steal_board *b, int slot);
/* Thief: the READ is over (0 or a negative errno). */
void steal_finish(struct steal_board *b, int slot, int status);
/* Rings the board's agent's doorbell: there is work for it (a job offered, or done). */
void steal_wake(struct steal_board *b);

#endif
