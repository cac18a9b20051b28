/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Asynchronous events of a soft context (soft.h).  The events wait in a
 * queue; the context's async_fd is the read end of a pipe holding one byte
 * per event, so it polls readable while one waits and a non-blocking fd
 * gives EAGAIN.  As libibverbs and the kernel do, an object's destruction
 * drops its events not yet read (their bytes stay: a reader skips them) and
 * waits until the application acked those it read, so an event never names
 * a freed QP, SRQ or CQ (UCX acks on its async thread while its main thread
 * destroys the QP the event was about).
 */
#include "hw/soft/soft.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#define SOFT_ASYNC_MAX 4096 /* queued events per context; fewer than the pipe holds bytes */

struct soft_async_item {
	struct ibv_async_event ev;
	struct soft_async_item *next;
};

void soft_async_event(struct ibv_context *ctx, enum ibv_event_type type, void *obj)
{
	struct soft_context *sctx = to_soft_context(ctx);
	struct soft_async_item *it = calloc(1, sizeof(*it));
	char one = 1;
	ssize_t n;

	if (!it)
		return;
	it->ev.event_type = type;
	switch (type) {
	case IBV_EVENT_CQ_ERR:
		it->ev.element.cq = obj;
		break;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		it->ev.element.srq = obj;
		break;
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
		it->ev.element.port_num = 1;
		break;
	default:
		it->ev.element.qp = obj;
		break;
	}
	pthread_mutex_lock(&sctx->async_lock);
	if (sctx->async_queued >= SOFT_ASYNC_MAX) {
		/* Nobody reads them: the NIC never blocks on its consumer, the event is dropped. */
		pthread_mutex_unlock(&sctx->async_lock);
		free(it);
		return;
	}
	if (sctx->async_tail)
		sctx->async_tail->next = it;
	else
		sctx->async_head = it;
	sctx->async_tail = it;
	sctx->async_queued++;
	pthread_mutex_unlock(&sctx->async_lock);
	n = write(sctx->async_wr, &one, 1);
	(void)n;
}

enum soft_async_kind { SOFT_ASYNC_NONE, SOFT_ASYNC_QP, SOFT_ASYNC_SRQ, SOFT_ASYNC_CQ };

/* What object an event names: a QP, SRQ or CQ, or none (port and device events). */
static enum soft_async_kind soft_async_kind(enum ibv_event_type type)
{
	switch (type) {
	case IBV_EVENT_CQ_ERR:
		return SOFT_ASYNC_CQ;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return SOFT_ASYNC_SRQ;
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_GID_CHANGE:
	case IBV_EVENT_DEVICE_FATAL:
	case IBV_EVENT_WQ_FATAL:
		return SOFT_ASYNC_NONE;
	default:
		return SOFT_ASYNC_QP;
	}
}

/* The counter of events handed out for the event's object, or NULL (port events); async_lock held. */
static uint32_t *soft_async_reported(struct ibv_async_event *ev)
{
	switch (soft_async_kind(ev->event_type)) {
	case SOFT_ASYNC_CQ:
		return &to_soft_cq(ev->element.cq)->async_reported;
	case SOFT_ASYNC_SRQ:
		return &to_soft_srq(ev->element.srq)->async_reported;
	case SOFT_ASYNC_QP:
		return &to_soft_qp(ev->element.qp)->async_reported;
	default:
		return NULL;
	}
}

int soft_get_async_event(struct ibv_context *ctx, struct ibv_async_event *event)
{
	struct soft_context *sctx = to_soft_context(ctx);

	for (;;) {
		struct soft_async_item *it;
		char byte;
		ssize_t n = read(ctx->async_fd, &byte, 1);

		if (n != 1) {
			if (n == 0)
				errno = EIO;
			return -1;
		}
		pthread_mutex_lock(&sctx->async_lock);
		it = sctx->async_head;
		if (it) {
			uint32_t *reported = soft_async_reported(&it->ev);

			sctx->async_head = it->next;
			if (!sctx->async_head)
				sctx->async_tail = NULL;
			sctx->async_queued--;
			if (reported)
				(*reported)++;
		}
		pthread_mutex_unlock(&sctx->async_lock);
		if (it) {
			*event = it->ev;
			free(it);
			return 0;
		}
		/* The byte of an event dropped with its object: wait for the next (EAGAIN if non-blocking).
		 */
	}
}

void soft_ack_async_event(struct ibv_async_event *event)
{
	pthread_mutex_t *mutex;
	pthread_cond_t *cond;
	uint32_t *completed;

	switch (soft_async_kind(event->event_type)) {
	case SOFT_ASYNC_CQ:
		mutex = &event->element.cq->mutex;
		cond = &event->element.cq->cond;
		completed = &event->element.cq->async_events_completed;
		break;
	case SOFT_ASYNC_SRQ:
		mutex = &event->element.srq->mutex;
		cond = &event->element.srq->cond;
		completed = &event->element.srq->events_completed;
		break;
	case SOFT_ASYNC_QP:
		mutex = &event->element.qp->mutex;
		cond = &event->element.qp->cond;
		completed = &event->element.qp->events_completed;
		break;
	default:
		return;
	}
	pthread_mutex_lock(mutex);
	(*completed)++;
	pthread_cond_broadcast(cond);
	pthread_mutex_unlock(mutex);
}

void soft_async_forget(struct ibv_context *ctx, void *obj, const uint32_t *reported, pthread_mutex_t *mutex,
		       pthread_cond_t *cond, const uint32_t *completed)
{
	struct soft_context *sctx = to_soft_context(ctx);
	struct soft_async_item **pp, *prev = NULL;
	uint32_t handed_out;

	pthread_mutex_lock(&sctx->async_lock);
	for (pp = &sctx->async_head; *pp;) {
		struct soft_async_item *it = *pp;

		if (it->ev.element.qp == obj && soft_async_reported(&it->ev)) {
			*pp = it->next;
			sctx->async_queued--;
			free(it);
			continue;
		}
		prev = it;
		pp = &it->next;
	}
	sctx->async_tail = prev;
	handed_out = *reported;
	pthread_mutex_unlock(&sctx->async_lock);
	pthread_mutex_lock(mutex);
	while (*completed != handed_out)
		pthread_cond_wait(cond, mutex);
	pthread_mutex_unlock(mutex);
}

void soft_async_free(struct soft_context *sctx)
{
	while (sctx->async_head) {
		struct soft_async_item *it = sctx->async_head;

		sctx->async_head = it->next;
		free(it);
	}
	sctx->async_tail = NULL;
	pthread_mutex_destroy(&sctx->async_lock);
}
