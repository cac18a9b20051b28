/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "core/oob/mailbox.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct mailbox {
	pthread_mutex_t lock;
	pthread_cond_t not_full;
	pthread_cond_t not_empty;
	size_t capacity, item_size;
	size_t head, count; /* head: index of the oldest item */
	bool closed;
	unsigned char *items;
};

struct mailbox *mailbox_create(size_t capacity, size_t item_size)
{
	struct mailbox *m;
	pthread_condattr_t ca;

	if (!capacity || !item_size || capacity > SIZE_MAX / item_size) {
		errno = EINVAL;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->items = malloc(capacity * item_size);
	if (!m->items) {
		free(m);
		return NULL;
	}
	m->capacity = capacity;
	m->item_size = item_size;
	pthread_mutex_init(&m->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->not_full, &ca);
	pthread_cond_init(&m->not_empty, &ca);
	pthread_condattr_destroy(&ca);
	return m;
}

void mailbox_destroy(struct mailbox *m)
{
	if (!m)
		return;
	pthread_cond_destroy(&m->not_full);
	pthread_cond_destroy(&m->not_empty);
	pthread_mutex_destroy(&m->lock);
	free(m->items);
	free(m);
}

static void deadline_after(struct timespec *ts, int timeout_ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += timeout_ms / 1000;
	ts->tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* Waits on cond while pred holds; returns 0 or -ETIMEDOUT.  Lock held. */
static int wait_while(struct mailbox *m, pthread_cond_t *cond, bool (*pred)(const struct mailbox *),
		      int timeout_ms)
{
	struct timespec deadline;

	if (timeout_ms >= 0)
		deadline_after(&deadline, timeout_ms);
	while (pred(m)) {
		if (timeout_ms < 0)
			pthread_cond_wait(cond, &m->lock);
		else if (pthread_cond_timedwait(cond, &m->lock, &deadline) == ETIMEDOUT)
			return pred(m) ? -ETIMEDOUT : 0;
	}
	return 0;
}

static bool full_and_open(const struct mailbox *m)
{
	return !m->closed && m->count == m->capacity;
}

static bool empty_and_open(const struct mailbox *m)
{
	return !m->closed && m->count == 0;
}

static void push_locked(struct mailbox *m, const void *item)
{
	size_t tail = (m->head + m->count) % m->capacity;

	memcpy(m->items + tail * m->item_size, item, m->item_size);
	m->count++;
	pthread_cond_signal(&m->not_empty);
}

static void pop_locked(struct mailbox *m, void *item)
{
	memcpy(item, m->items + m->head * m->item_size, m->item_size);
	m->head = (m->head + 1) % m->capacity;
	m->count--;
	pthread_cond_signal(&m->not_full);
}

int mailbox_push(struct mailbox *m, const void *item, int timeout_ms)
{
	int rc;

	pthread_mutex_lock(&m->lock);
	rc = timeout_ms == 0 ? 0 : wait_while(m, &m->not_full, full_and_open, timeout_ms);
	if (rc == 0) {
		if (m->closed)
			rc = -EPIPE;
		else if (m->count == m->capacity)
			rc = timeout_ms == 0 ? -EAGAIN : -ETIMEDOUT;
		else
			push_locked(m, item);
	}
	pthread_mutex_unlock(&m->lock);
	return rc;
}

int mailbox_try_push(struct mailbox *m, const void *item)
{
	return mailbox_push(m, item, 0);
}

int mailbox_pop(struct mailbox *m, void *item, int timeout_ms)
{
	int rc;

	pthread_mutex_lock(&m->lock);
	rc = timeout_ms == 0 ? 0 : wait_while(m, &m->not_empty, empty_and_open, timeout_ms);
	if (rc == 0) {
		if (m->count)
			pop_locked(m, item);
		else if (m->closed)
			rc = -EPIPE;
		else
			rc = timeout_ms == 0 ? -EAGAIN : -ETIMEDOUT;
	}
	pthread_mutex_unlock(&m->lock);
	return rc;
}

int mailbox_try_pop(struct mailbox *m, void *item)
{
	return mailbox_pop(m, item, 0);
}

void mailbox_close(struct mailbox *m)
{
	pthread_mutex_lock(&m->lock);
	m->closed = true;
	pthread_cond_broadcast(&m->not_full);
	pthread_cond_broadcast(&m->not_empty);
	pthread_mutex_unlock(&m->lock);
}

size_t mailbox_count(struct mailbox *m)
{
	size_t n;

	pthread_mutex_lock(&m->lock);
	n = m->count;
	pthread_mutex_unlock(&m->lock);
	return n;
}

size_t mailbox_capacity(const struct mailbox *m)
{
	return m->capacity;
}
