/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "cmd/walk/bus.h"

#include "core/oob/mailbox.h"
#include "core/oob/oob.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

struct walk_bus {
	int clients;
	struct mailbox **inbox; /* in-process: one per client; tcp: [0] only */
	/* tcp only */
	struct oob_conn *conn;
	struct mailbox *outbound;
	pthread_mutex_t send_lock;
	pthread_t reader, writer;
	atomic_bool go_down, hub_lost;
	atomic_bool *stop;
	int heartbeat_ms;
	bool tcp;
};

struct walk_bus *walk_bus_inproc(int clients)
{
	struct walk_bus *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->clients = clients;
	b->inbox = calloc((size_t)clients, sizeof(*b->inbox));
	if (!b->inbox) {
		free(b);
		return NULL;
	}
	for (int i = 0; i < clients; i++) {
		b->inbox[i] = mailbox_create(WALK_MAILBOX_DEPTH, sizeof(struct walk_msg));
		if (!b->inbox[i]) {
			walk_bus_free(b);
			return NULL;
		}
	}
	return b;
}

static void *reader_main(void *arg)
{
	struct walk_bus *b = arg;
	struct walk_msg m[WALK_FRAME_MSGS];

	for (;;) {
		uint16_t type;
		uint32_t len;
		/* The hub sends a heartbeat every second: this long without a frame means it is gone. */
		int rc = oob_recv(b->conn, &type, &m, sizeof(m), &len, b->heartbeat_ms);

		if (rc == -EMSGSIZE)
			continue; /* not ours: consumed and ignored */
		if (rc < 0) {
			atomic_store(&b->hub_lost, true);
			atomic_store(b->stop, true);
			break;
		}
		if (type == FRAME_BYE)
			break;
		if (type == FRAME_GO_DOWN)
			atomic_store(&b->go_down, true);
		else if (type == FRAME_MSG && len && len % sizeof(m[0]) == 0)
			for (uint32_t i = 0; i < len / sizeof(m[0]); i++)
				mailbox_push(b->inbox[0], &m[i], -1); /* -EPIPE once closed: dropped */
	}
	atomic_store(&b->go_down, true);
	mailbox_close(b->inbox[0]);
	return NULL;
}

static void *writer_main(void *arg)
{
	struct walk_bus *b = arg;
	struct walk_msg m[WALK_FRAME_MSGS];

	for (;;) {
		int rc = mailbox_pop(b->outbound, &m[0], 1000), n = 1;

		if (rc == -EPIPE)
			break;
		while (rc == 0 && n < WALK_FRAME_MSGS && mailbox_try_pop(b->outbound, &m[n]) == 0)
			n++;
		pthread_mutex_lock(&b->send_lock);
		if (rc == 0)
			oob_send(b->conn, FRAME_MSG, m, (uint32_t)(n * sizeof(m[0])));
		else
			oob_send(b->conn, FRAME_HEARTBEAT, NULL, 0);
		pthread_mutex_unlock(&b->send_lock);
	}
	return NULL;
}

struct walk_bus *walk_bus_tcp(struct oob_conn *conn, int self, atomic_bool *stop, int heartbeat_s)
{
	struct walk_bus *b = calloc(1, sizeof(*b));

	(void)self;
	if (!b)
		return NULL;
	b->tcp = true;
	b->conn = conn;
	b->stop = stop;
	b->heartbeat_ms = heartbeat_s * 1000;
	b->clients = 1;
	b->inbox = calloc(1, sizeof(*b->inbox));
	b->outbound = mailbox_create(WALK_MAILBOX_DEPTH, sizeof(struct walk_msg));
	if (b->inbox)
		b->inbox[0] = mailbox_create(WALK_MAILBOX_DEPTH, sizeof(struct walk_msg));
	if (!b->inbox || !b->inbox[0] || !b->outbound) {
		mailbox_destroy(b->outbound);
		if (b->inbox)
			mailbox_destroy(b->inbox[0]);
		free(b->inbox);
		free(b);
		return NULL;
	}
	pthread_mutex_init(&b->send_lock, NULL);
	atomic_init(&b->go_down, false);
	atomic_init(&b->hub_lost, false);
	pthread_create(&b->reader, NULL, reader_main, b);
	pthread_create(&b->writer, NULL, writer_main, b);
	return b;
}

int walk_bus_send(struct walk_bus *b, const struct walk_msg *m)
{
	if (b->tcp)
		return mailbox_try_push(b->outbound, m);
	if (m->dst >= b->clients)
		return -EPIPE;
	return mailbox_try_push(b->inbox[m->dst], m);
}

int walk_bus_recv(struct walk_bus *b, int self, struct walk_msg *m)
{
	int rc = mailbox_try_pop(b->inbox[b->tcp ? 0 : self], m);

	return rc == -EPIPE ? -EAGAIN : rc;
}

void walk_bus_close_inbox(struct walk_bus *b, int self)
{
	struct mailbox *box = b->inbox[b->tcp ? 0 : self];
	struct walk_msg m;

	mailbox_close(box);
	while (mailbox_try_pop(box, &m) == 0)
		;
}

bool walk_bus_go_down(struct walk_bus *b)
{
	return atomic_load(&b->go_down);
}

bool walk_bus_hub_lost(struct walk_bus *b)
{
	return b->tcp && atomic_load(&b->hub_lost);
}

int walk_bus_send_frame(struct walk_bus *b, uint16_t type, const void *buf, uint32_t len)
{
	int rc;

	pthread_mutex_lock(&b->send_lock);
	rc = oob_send(b->conn, type, buf, len);
	pthread_mutex_unlock(&b->send_lock);
	return rc;
}

void walk_bus_free(struct walk_bus *b)
{
	if (!b)
		return;
	if (b->tcp) {
		mailbox_close(b->outbound);
		pthread_join(b->writer, NULL);
		/* The reader ends when the hub says BYE or closes. */
		pthread_join(b->reader, NULL);
		mailbox_destroy(b->outbound);
		pthread_mutex_destroy(&b->send_lock);
	}
	for (int i = 0; i < (b->tcp ? 1 : b->clients); i++)
		if (b->inbox)
			mailbox_destroy(b->inbox[i]);
	free(b->inbox);
	free(b);
}
