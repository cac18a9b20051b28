/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Channels: named, bounded, multi-producer multi-consumer message queues in
 * shared memory on one node (DESIGN.md "agent"; HSTA's channels).
 *
 * A channel is one file, <dir>/chan.<NAME>, mapped by every process that uses
 * it; the directory is owner-only (core/chan/agent_dir.h), so only the owning
 * user can attach.  Messages keep their boundaries and are 0 .. max_msg bytes;
 * a channel holds at most capacity_msgs messages and data_size bytes of
 * records (a 16-byte record header plus the payload rounded up to 8).
 *
 * Concurrency: one process-shared robust mutex guards the ring, so a process
 * killed while holding it does not wedge the others.  Every change of a ring
 * end is committed by a single atomic store ({seq, offset} packed in 64 bits)
 * made after the record is complete, so the next locker that inherits a dead
 * owner's mutex finds either the whole message or none of it: no torn
 * message; it only brings the counters that follow a commit up to date.  An uncontended send or
 * receive makes no system call; waiters sleep on futex words (put_events,
 * take_events) and are woken only when the sleeper count says someone sleeps.
 *
 * Timeouts: timeout_ms < 0 waits forever, 0 tries once (-EAGAIN), > 0 waits up
 * to that many milliseconds (-ETIMEDOUT).  A signal ends a wait with -EINTR.
 * The lock counts as a wait: a process stopped while holding it (SIGSTOP, a
 * debugger) makes a try-once call return -EAGAIN (after 2 ms at most: a
 * running holder copies one message) and a bounded one -ETIMEDOUT, never
 * hang.  Every offset read from the shared mapping is
 * checked before use; a channel found inconsistent gives -EBADMSG
 * (chan_corrupt).
 * Every function returns 0 or a negative errno.
 */
#ifndef RDMATOOL_CORE_CHAN_CHANNEL_H
#define RDMATOOL_CORE_CHAN_CHANNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CHAN_NAME_MAX	      63
#define CHAN_DEFAULT_MAX_MSG  (4u << 20)
#define CHAN_DEFAULT_CAPACITY 1024u
#define CHAN_DEFAULT_BYTES    (16ull << 20)
#define CHAN_MAX_BYTES	      ((1ull << 32) - 8) /* offsets are 32 bits */
#define CHAN_RECORD_HEADER    16u
#define CHAN_FILE_PREFIX      "chan."

struct chan_attr {
	uint32_t capacity_msgs;	 /* 0: CHAN_DEFAULT_CAPACITY */
	uint64_t capacity_bytes; /* 0: CHAN_DEFAULT_BYTES, at least one max_msg record */
	uint32_t max_msg;	 /* 0: CHAN_DEFAULT_MAX_MSG */
};

/* What poll reports; nothing is taken. */
struct chan_state {
	uint32_t count; /* messages waiting */
	uint64_t bytes; /* their payload bytes */
	uint32_t capacity_msgs;
	uint64_t capacity_bytes;
	uint32_t max_msg;
	bool empty, full;	 /* full: a max_msg message would not fit now */
	uint64_t sent, received; /* messages ever put in / taken out */
	uint64_t recovered;	 /* times a dead process's lock was taken over */
	uint64_t futex_calls;	 /* futex waits and wakes made on this channel: its only system calls */
};

struct chan;

/* A valid name: 1..63 of [A-Za-z0-9._-], not starting with '.'. */
bool chan_name_valid(const char *name);

/* -EEXIST if it exists, -EINVAL for a bad name or attributes. */
int chan_create(const char *dir, const char *name, const struct chan_attr *attr);
/*
 * Removes the name; processes that have it open keep using their mapping,
 * which chan_destroyed() then reports.  -ENOENT.
 */
int chan_destroy(const char *dir, const char *name);
/* Whether chan_destroy removed this channel (a file removed by other means is not seen). */
bool chan_destroyed(const struct chan *c);
/*
 * Maps an existing channel after checking it is a regular file owned by this
 * user with no group/other access and a consistent header (-EPERM, -EBADMSG).
 */
int chan_open(const char *dir, const char *name, struct chan **out);
void chan_close(struct chan *c);
const char *chan_name(const struct chan *c);

/*
 * Copies len bytes into the channel; on success *seq (if not NULL) is the
 * message's sequence number, for chan_wait_taken().  -EMSGSIZE if len >
 * max_msg; -EAGAIN/-ETIMEDOUT while full.
 */
int chan_send(struct chan *c, const void *buf, size_t len, int timeout_ms, uint64_t *seq);
/*
 * chan_send with timeout 0 that leaves sleeping receivers asleep: a process
 * depositing many messages in a row (the agent serving an eager buffer) pays
 * one wake-up for all of them, in chan_wake_owed(), which it must call before
 * it waits for anything.  chan_close() wakes what is owed.
 */
int chan_send_quiet(struct chan *c, const void *buf, size_t len, uint64_t *seq);
/* Wakes the receivers that sleep through quiet sends on this handle, if any. */
void chan_wake_owed(struct chan *c);
/*
 * Takes the oldest message into buf.  *len gets its size; if it exceeds cap
 * the message stays in the channel and the call returns -EMSGSIZE.
 */
int chan_recv(struct chan *c, void *buf, size_t cap, size_t *len, int timeout_ms);
/* Fills *st; with timeout_ms != 0 first waits until the channel is not empty. */
int chan_poll(struct chan *c, struct chan_state *st, int timeout_ms);
/* Waits until the message numbered seq has been taken by a receiver. */
int chan_wait_taken(struct chan *c, uint64_t seq, int timeout_ms);

/*
 * Whether this handle found the channel's shared state inconsistent (an
 * offset outside the ring, a bad record): it is quarantined, every call on
 * the handle fails with -EBADMSG, and nothing read from it is followed.
 */
bool chan_corrupt(const struct chan *c);
/* The size of the file the handle mapped (a file now shorter was cut by someone: SIGBUS to touch). */
uint64_t chan_file_size(const struct chan *c);
/* Try-once calls on this handle do not wait for a busy lock at all: the agent's, which serves others. */
void chan_set_try_lock(struct chan *c);

/* Calls fn for every channel name in dir (in directory order); stops at fn's nonzero return. */
int chan_list(const char *dir, int (*fn)(const char *name, void *arg), void *arg);

#endif
