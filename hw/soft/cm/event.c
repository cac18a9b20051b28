/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The soft CM's event channels.  A channel's fd is the read end of a pipe
 * holding one byte per queued event, so it polls readable exactly while an
 * event waits, and a program that made it non-blocking gets EAGAIN from
 * rdma_get_cm_event as with librdmacm.
 */
#include "hw/soft/cm/cm.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct soft_cm_event {
	struct rdma_cm_event ev;
	uint8_t private_data[SOFT_CM_MAX_PRIVATE];
	struct soft_cm_event *next;
};

struct soft_cm_channel {
	struct rdma_event_channel ch;
	int wr_fd;
	struct soft_cm_event *head, *tail; /* under soft_cm_lock */
	bool destroyed;			   /* under soft_cm_lock */
	int readers;			   /* threads in rdma_get_cm_event, under soft_cm_lock */
	struct soft_cm_channel *next_dead;
};

/* Destroyed channels, kept (a few bytes each) so a late reader finds them destroyed. */
static struct soft_cm_channel *soft_cm_dead_channels;

/*
 * rdma_get_cm_event on a destroyed channel blocks for good, as a read of
 * librdmacm's closed fd does in effect: rping's CM thread loops into it
 * while main tears down, and exits the process with an error if it returns.
 */
static void soft_cm_block_forever(void)
{
	for (;;)
		pause();
}

static struct soft_cm_channel *to_channel(struct rdma_event_channel *ch)
{
	return (struct soft_cm_channel *)((char *)ch - offsetof(struct soft_cm_channel, ch));
}

struct rdma_event_channel *soft_cm_create_event_channel(void)
{
	struct soft_cm_channel *c = calloc(1, sizeof(*c));
	int fds[2];

	if (!c)
		return NULL;
	if (pipe2(fds, O_CLOEXEC)) {
		free(c);
		return NULL;
	}
	fcntl(fds[1], F_SETFL, O_NONBLOCK);
	c->ch.fd = fds[0];
	c->wr_fd = fds[1];
	return &c->ch;
}

void soft_cm_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct soft_cm_channel *c;
	int readers;

	if (!channel)
		return;
	c = to_channel(channel);
	pthread_mutex_lock(&soft_cm_lock);
	while (c->head) {
		struct soft_cm_event *e = c->head;

		c->head = e->next;
		free(e);
	}
	c->tail = NULL;
	c->destroyed = true;
	c->next_dead = soft_cm_dead_channels;
	soft_cm_dead_channels = c;
	readers = c->readers;
	pthread_mutex_unlock(&soft_cm_lock);
	/*
	 * The few bytes of the struct stay: a late rdma_get_cm_event on it must
	 * find it destroyed.  A thread still reading the fd (rping destroys the
	 * channel under its CM thread) wakes at the end of the pipe and closes
	 * it itself: closing an fd under another thread's read is a race.
	 */
	close(c->wr_fd);
	if (!readers)
		close(c->ch.fd);
}

void soft_cm_post(struct rdma_event_channel *channel, struct rdma_cm_id *id, struct rdma_cm_id *listen,
		  enum rdma_cm_event_type type, int status, const struct soft_cm_msg *m)
{
	struct soft_cm_channel *c = to_channel(channel);
	struct soft_cm_event *e = calloc(1, sizeof(*e));
	char one = 1;

	if (!e)
		return;
	e->ev.id = id;
	e->ev.listen_id = listen;
	e->ev.event = type;
	e->ev.status = status;
	if (m && id->qp_type == IBV_QPT_UD) {
		struct rdma_ud_param *u = &e->ev.param.ud;

		memcpy(e->private_data, m->private_data, m->private_data_len);
		u->private_data = m->private_data_len ? e->private_data : NULL;
		u->private_data_len = m->private_data_len;
		u->ah_attr.is_global = 1;
		u->ah_attr.port_num = 1;
		u->ah_attr.grh.hop_limit = 1;
		memcpy(u->ah_attr.grh.dgid.raw, m->gid, 16);
		u->qp_num = m->qpn;
		u->qkey = RDMA_UDP_QKEY;
	} else if (m) {
		struct rdma_conn_param *p = &e->ev.param.conn;

		memcpy(e->private_data, m->private_data, m->private_data_len);
		p->private_data = m->private_data_len ? e->private_data : NULL;
		p->private_data_len = m->private_data_len;
		p->responder_resources = m->responder_resources;
		p->initiator_depth = m->initiator_depth;
		p->retry_count = m->retry_count;
		p->rnr_retry_count = m->rnr_retry_count;
		p->qp_num = m->qpn;
	}
	if (c->tail)
		c->tail->next = e;
	else
		c->head = e;
	c->tail = e;
	if (write(c->wr_fd, &one, 1) != 1) {
		/* The pipe is full (64 Ki unread events): the event stays queued but cannot be announced. */
		errno = ENOBUFS;
	}
}

bool soft_cm_drop_event(struct rdma_event_channel *channel, struct rdma_cm_id *id, struct rdma_cm_id **child)
{
	struct soft_cm_channel *c = to_channel(channel);
	struct soft_cm_event *prev = NULL;

	*child = NULL;
	for (struct soft_cm_event *e = c->head; e; prev = e, e = e->next) {
		if (e->ev.id != id && e->ev.listen_id != id)
			continue;
		if (prev)
			prev->next = e->next;
		else
			c->head = e->next;
		if (c->tail == e)
			c->tail = prev;
		if (e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST && e->ev.id != id)
			*child = e->ev.id;
		free(e);
		return true; /* its byte stays in the pipe: rdma_get_cm_event skips it */
	}
	return false;
}

int soft_cm_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct soft_cm_channel *c;
	struct soft_cm_event *e;
	bool destroyed;
	char byte;
	ssize_t n;
	int err;

	if (!channel || !event) {
		errno = EINVAL;
		return -1;
	}
	c = to_channel(channel);
	pthread_mutex_lock(&soft_cm_lock);
again:
	destroyed = c->destroyed;
	c->readers += !destroyed;
	pthread_mutex_unlock(&soft_cm_lock);
	if (destroyed)
		soft_cm_block_forever();
	do
		n = read(c->ch.fd, &byte, 1);
	while (n < 0 && errno == EINTR);
	err = errno;
	pthread_mutex_lock(&soft_cm_lock);
	c->readers--;
	if (c->destroyed) {
		/* Destroyed while this thread read (its events are freed): block, as on a closed fd. */
		bool last = c->readers == 0;

		pthread_mutex_unlock(&soft_cm_lock);
		if (last)
			close(c->ch.fd);
		soft_cm_block_forever();
	}
	if (n != 1) {
		pthread_mutex_unlock(&soft_cm_lock);
		errno = n == 0 ? ENODATA : err;
		return -1;
	}
	e = c->head;
	if (!e)
		goto again; /* the byte of an event dropped with its id (soft_cm_drop_event) */
	c->head = e->next;
	if (!c->head)
		c->tail = NULL;
	pthread_mutex_unlock(&soft_cm_lock);
	*event = &e->ev;
	return 0;
}

int soft_cm_ack_cm_event(struct rdma_cm_event *event)
{
	if (!event) {
		errno = EINVAL;
		return -1;
	}
	free((struct soft_cm_event *)((char *)event - offsetof(struct soft_cm_event, ev)));
	return 0;
}

static int soft_cm_event_errno(const struct rdma_cm_event *ev)
{
	if (ev->status < 0)
		return -ev->status;
	switch (ev->event) {
	case RDMA_CM_EVENT_REJECTED:
		return ECONNREFUSED;
	case RDMA_CM_EVENT_UNREACHABLE:
		return ETIMEDOUT;
	case RDMA_CM_EVENT_ADDR_ERROR:
		return EADDRNOTAVAIL;
	default:
		return ECONNABORTED;
	}
}

int soft_cm_wait(struct rdma_cm_id *id, enum rdma_cm_event_type expected)
{
	struct rdma_cm_event *ev;
	int err = 0;

	if (soft_cm_get_cm_event(id->channel, &ev))
		return -1;
	if (ev->event != expected || ev->status)
		err = soft_cm_event_errno(ev);
	soft_cm_ack_cm_event(ev);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}
