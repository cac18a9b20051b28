/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A bounded multi-producer queue of fixed-size items, for handing messages
 * between threads of one process.  Backpressure instead of growth: a full
 * queue refuses (mailbox_try_push) or makes the producer wait
 * (mailbox_push, with a timeout); it never allocates after creation.
 * Items come out in the order each producer pushed them.
 */
#ifndef RDMATOOL_CORE_MAILBOX_H
#define RDMATOOL_CORE_MAILBOX_H

#include <stddef.h>

struct mailbox;

/* Returns NULL with errno set (EINVAL for a zero size or capacity). */
struct mailbox *mailbox_create(size_t capacity, size_t item_size);
void mailbox_destroy(struct mailbox *m);

/* 0, -EAGAIN when full, -EPIPE once closed. */
int mailbox_try_push(struct mailbox *m, const void *item);
/* Waits up to timeout_ms (-1: forever) for room: 0, -ETIMEDOUT, -EPIPE. */
int mailbox_push(struct mailbox *m, const void *item, int timeout_ms);
/* 0, -EAGAIN when empty (-EPIPE when empty and closed). */
int mailbox_try_pop(struct mailbox *m, void *item);
/* Waits up to timeout_ms (-1: forever) for an item: 0, -ETIMEDOUT, -EPIPE. */
int mailbox_pop(struct mailbox *m, void *item, int timeout_ms);
/* Wakes every waiter; later pushes fail, pops drain what is left. */
void mailbox_close(struct mailbox *m);
size_t mailbox_count(struct mailbox *m);
size_t mailbox_capacity(const struct mailbox *m);

#endif
