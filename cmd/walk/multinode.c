/* SPDX-License-Identifier: MIT */
/*
 * --multinode=true: every client is its own process on this host.  The
 * parent is the hub: it collects each client's address, hands out the
 * table, forwards updates (TCP keeps each source's order), runs the
 * shutdown barrier and merges the statistics.  RDMA traffic goes between
 * the processes' devices (the soft device's TCP wire, or a real NIC).
 */
#include "cmd/walk/bus.h"
#include "cmd/walk/client.h"
#include "cmd/walk/run.h"

#include "core/oob/oob.h"
#include "core/stats/stats.h"
#include "cmd/cmd.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CONNECT_TIMEOUT_MS 20000

static void hub_barrier(struct walk_client *c)
{
	walk_bus_send_frame(c->bus, FRAME_QUIESCED, NULL, 0);
	while (!walk_bus_go_down(c->bus)) {
		struct ibv_wc wc;

		/* Keep the CQs moving while the others catch up. */
		for (int i = 0; i < MAX_CQ; i++)
			if (c->cq[i].used && hw_poll_cq(c->cq[i].cq, 0, &wc) < 0)
				break;
		usleep(1000);
	}
}

static int child_main(const struct walk_config *cfg, int id, int port)
{
	struct walk_peer_addr *peers = calloc((size_t)cfg->clients, sizeof(*peers));
	struct walk_client *c = calloc(1, sizeof(*c));
	struct walk_hello hello = {.id = (uint32_t)id};
	struct oob_conn *conn = NULL;
	char addr[32];
	uint16_t type;
	uint32_t len;
	int rc = 1;

	if (!peers || !c)
		goto out;
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	if (oob_connect(addr, CONNECT_TIMEOUT_MS, &conn))
		goto out;
	*c = (struct walk_client){.id = id,
				  .clients = cfg->clients,
				  .cfg = cfg,
				  .peers = peers,
				  .stop = &walk_stop,
				  .barrier = hub_barrier};
	if (walk_client_open(c)) {
		fprintf(stderr, "rdmatool walk: client %d cannot open its device\n", id);
		goto out;
	}
	walk_register_crash_histories(c, 1);
	hello.addr = (struct walk_peer_addr){.gid = c->gid, .lid = c->pattr.lid, .valid = true};
	if (oob_send(conn, FRAME_HELLO, &hello, sizeof(hello)) ||
	    oob_recv(conn, &type, peers, (uint32_t)(sizeof(*peers) * (size_t)cfg->clients), &len, -1) ||
	    type != FRAME_TABLE || len != sizeof(*peers) * (size_t)cfg->clients)
		goto out;
	c->bus = walk_bus_tcp(conn, id);
	if (!c->bus)
		goto out;
	walk_client_run(c);
	if (c->stats.nfailures || atomic_load(&walk_stop_signal))
		walk_history_dump(&c->hist, STDERR_FILENO, id);
	if (cfg->history_file)
		walk_write_history_file(cfg->history_file, &c->hist, id);
	walk_bus_send_frame(c->bus, FRAME_STATS, &c->stats, sizeof(c->stats));
	walk_bus_free(c->bus); /* returns once the hub said BYE */
	rc = 0;
out:
	if (c) {
		walk_register_crash_histories(NULL, 0);
		walk_client_close(c);
		walk_history_free(&c->hist);
	}
	if (conn)
		oob_close(conn);
	free(c);
	free(peers);
	return rc;
}

struct hub {
	int n;
	struct oob_conn **conn; /* by client id */
	bool *quiesced, *reported, *gone;
	int nquiesced, nreported;
};

static void hub_send_all(struct hub *h, uint16_t type, const void *buf, uint32_t len)
{
	for (int i = 0; i < h->n; i++)
		if (!h->gone[i])
			oob_send(h->conn[i], type, buf, len);
}

static int hub_accept(struct hub *h, struct oob_listener *l, struct walk_peer_addr *table)
{
	for (int k = 0; k < h->n; k++) {
		struct walk_hello hello;
		struct oob_conn *conn;
		uint16_t type;
		uint32_t len;

		if (oob_accept(l, CONNECT_TIMEOUT_MS, &conn))
			return -ETIMEDOUT;
		if (oob_recv(conn, &type, &hello, sizeof(hello), &len, CONNECT_TIMEOUT_MS) ||
		    type != FRAME_HELLO || len != sizeof(hello) || hello.id >= (uint32_t)h->n ||
		    h->conn[hello.id]) {
			oob_close(conn);
			return -EPROTO;
		}
		h->conn[hello.id] = conn;
		table[hello.id] = hello.addr;
	}
	hub_send_all(h, FRAME_TABLE, table, (uint32_t)(sizeof(*table) * (size_t)h->n));
	return 0;
}

static void hub_client_done(struct hub *h, int i)
{
	if (!h->quiesced[i]) {
		h->quiesced[i] = true;
		if (++h->nquiesced == h->n)
			hub_send_all(h, FRAME_GO_DOWN, NULL, 0);
	}
}

/* Forwards frames until every client reported its statistics (or died). */
static void hub_loop(struct hub *h, struct walk_result *res, void *buf, uint32_t cap)
{
	struct pollfd *pfd = calloc((size_t)h->n, sizeof(*pfd));

	while (pfd && h->nreported < h->n) {
		for (int i = 0; i < h->n; i++) {
			pfd[i].fd = h->gone[i] ? -1 : oob_conn_fd(h->conn[i]);
			pfd[i].events = POLLIN;
		}
		if (poll(pfd, (nfds_t)h->n, 1000) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < h->n; i++) {
			uint16_t type;
			uint32_t len;
			int rc;

			if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			rc = oob_recv(h->conn[i], &type, buf, cap, &len, 1000);
			if (rc == -EMSGSIZE || rc == -ETIMEDOUT)
				continue;
			if (rc) {
				h->gone[i] = true;
				if (!h->reported[i]) {
					h->reported[i] = true;
					h->nreported++;
					walk_stats_fail(&res->total,
							"client %d: its process ended without reporting", i);
				}
				hub_client_done(h, i);
				continue;
			}
			if (type == FRAME_MSG && len == sizeof(struct walk_msg)) {
				struct walk_msg *m = buf;

				if (walk_msg_valid(m, h->n) && m->src == i && !h->gone[m->dst])
					oob_send(h->conn[m->dst], FRAME_MSG, m, len);
			} else if (type == FRAME_QUIESCED) {
				hub_client_done(h, i);
			} else if (type == FRAME_STATS && len == sizeof(struct walk_stats) &&
				   !h->reported[i]) {
				struct walk_stats *s = buf;

				s->nfailures = s->nfailures < 0 ? 0 : s->nfailures;
				res->per_client[i] = *s;
				walk_stats_merge(&res->total, s);
				h->reported[i] = true;
				h->nreported++;
			}
		}
	}
	free(pfd);
}

int walk_run_multinode(const struct walk_config *cfg, struct walk_result *res, const char *cmd)
{
	int n = cfg->clients, rc = 0;
	struct hub h = {.n = n};
	struct oob_listener *l = NULL;
	struct walk_peer_addr *table = calloc((size_t)n, sizeof(*table));
	pid_t *pid = calloc((size_t)n, sizeof(*pid));
	uint32_t cap = sizeof(struct walk_stats) + 64;
	void *buf = malloc(cap);
	uint64_t start = walk_now_ns();
	int err, port;

	h.conn = calloc((size_t)n, sizeof(*h.conn));
	h.quiesced = calloc((size_t)n, sizeof(bool));
	h.reported = calloc((size_t)n, sizeof(bool));
	h.gone = calloc((size_t)n, sizeof(bool));
	if (!table || !pid || !buf || !h.conn || !h.quiesced || !h.reported || !h.gone) {
		rc = run_error(cmd, "out of memory");
		goto out;
	}
	if ((err = oob_listen(NULL, &l))) {
		rc = run_error(cmd, "cannot listen on 127.0.0.1 for the clients: %s", strerror(-err));
		goto out;
	}
	port = oob_listener_port(l);
	fflush(NULL);
	for (int i = 0; i < n; i++) {
		pid[i] = fork();
		if (pid[i] == 0) {
			oob_listener_close(l);
			int status = child_main(cfg, i, port);

			/* _exit skips atexit: remove the client's own stats segment here. */
			stats_segment_close();
			_exit(status);
		}
		if (pid[i] < 0) {
			rc = run_error(cmd, "cannot start client %d: %s; use fewer --clients", i,
				       strerror(errno));
			break;
		}
	}
	if (!rc && (err = hub_accept(&h, l, table)))
		rc = run_error(cmd, "the client processes did not all connect: %s", strerror(-err));
	if (!rc) {
		hub_loop(&h, res, buf, cap);
		hub_send_all(&h, FRAME_BYE, NULL, 0);
	}
	for (int i = 0; i < n; i++) {
		int status;

		if (pid[i] <= 0)
			continue;
		if (rc)
			kill(pid[i], SIGTERM);
		while (waitpid(pid[i], &status, 0) < 0 && errno == EINTR)
			;
		if (!rc && WIFSIGNALED(status))
			walk_stats_fail(&res->total, "client %d: its process died of signal %d", i,
					WTERMSIG(status));
	}
	res->wall_s = (double)(walk_now_ns() - start) / 1e9;
out:
	for (int i = 0; h.conn && i < n; i++)
		if (h.conn[i])
			oob_close(h.conn[i]);
	if (l)
		oob_listener_close(l);
	free(h.conn);
	free(h.quiesced);
	free(h.reported);
	free(h.gone);
	free(buf);
	free(pid);
	free(table);
	return rc;
}
