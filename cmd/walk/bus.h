/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The walker's out-of-band backend: delivers struct walk_msg between clients, in order per source.
 * In-process: one bounded mailbox per client.  Multinode: each client process talks to a hub in the parent
 * over TCP (core/oob); the hub forwards frames, so per-source order is TCP's order.
 */
#ifndef RDMATOOL_CMD_WALK_BUS_H
#define RDMATOOL_CMD_WALK_BUS_H

#include "cmd/walk/walk.h"

struct oob_conn;

#define WALK_MAILBOX_DEPTH 4096
/*
 * Messages one FRAME_MSG carries at most.  Every key a client issues or removes is broadcast, so the hub
 * forwards tens of thousands of messages a second; a frame each (four system calls to read it, one to write
 * it) made the hub the bottleneck of a multinode run.
 */
#define WALK_FRAME_MSGS 64

/* In-process bus for `clients` clients. */
struct walk_bus *walk_bus_inproc(int clients);
/*
 * A client process's end of the hub connection; starts its I/O threads.  The writer sends a heartbeat every
 * second it has nothing else to send; when the hub closes the connection before BYE, or is silent for
 * heartbeat_s, the reader sets *stop and walk_bus_hub_lost() turns true.
 */
struct walk_bus *walk_bus_tcp(struct oob_conn *conn, int self, atomic_bool *stop, int heartbeat_s);
/* Multinode: the hub went away (closed or silent) before it said BYE. */
bool walk_bus_hub_lost(struct walk_bus *b);
/* 0, -EAGAIN (destination or outbound queue full: retry later), -EPIPE. */
int walk_bus_send(struct walk_bus *b, const struct walk_msg *m);
/* 0 or -EAGAIN. */
int walk_bus_recv(struct walk_bus *b, int self, struct walk_msg *m);
/* Stops delivery to `self`: later messages for it are dropped. */
void walk_bus_close_inbox(struct walk_bus *b, int self);
void walk_bus_free(struct walk_bus *b);

/* Frame types on the hub connection (besides walk_msg frames). */
enum walk_frame {
	FRAME_HELLO = 1, /* child -> hub: struct walk_hello */
	FRAME_TABLE,	 /* hub -> child: struct walk_peer_addr[clients] */
	FRAME_MSG,	 /* 1..WALK_FRAME_MSGS struct walk_msg, either way */
	FRAME_QUIESCED,	 /* child -> hub: stopped issuing */
	FRAME_GO_DOWN,	 /* hub -> child: everyone stopped, tear down */
	FRAME_STATS,	 /* child -> hub: struct walk_stats */
	FRAME_BYE,	 /* hub -> child: done */
	FRAME_HEARTBEAT, /* either way, every second: "still here" */
};

#define WALK_HELLO_MAGIC 0x574c4b31u /* "WLK1" */

/* The token is the run's secret, inherited from the hub: a stranger on the hub's port cannot join. */
struct walk_hello {
	uint32_t magic;
	uint32_t id;
	uint64_t token;
	struct walk_peer_addr addr;
};

/* Multinode: the child's reader thread sets this when GO_DOWN arrives. */
bool walk_bus_go_down(struct walk_bus *b);
/* Multinode: sends a control frame through the writer, in order with messages. */
int walk_bus_send_frame(struct walk_bus *b, uint16_t type, const void *buf, uint32_t len);

#endif
