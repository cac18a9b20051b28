/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * --multinode=true: every client is its own process on this host.  The parent is the hub: it collects each
 * client's address, hands out the table, forwards updates (TCP keeps each source's order), runs the shutdown
 * barrier and merges the statistics.  RDMA traffic goes between the processes' devices (the soft device's TCP
 * wire, or a real NIC).
 */
#include "cmd/walk/bus.h"
#include "cmd/walk/client.h"
#include "cmd/walk/run.h"

#include "core/oob/oob.h"
#include "core/stats/stats.h"
#include "core/stats/stats_reader.h"
#include "core/util/env.h"
#include "core/util/rng.h"
#include "cmd/cmd.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CONNECT_TIMEOUT_MS 20000
#define TABLE_TIMEOUT_MS   (CONNECT_TIMEOUT_MS + 5000)
#define HELLO_TIMEOUT_MS   2000
#define REPORT_TIMEOUT_MS  30000 /* from GO_DOWN to every client's statistics */
#define STOP_TIMEOUT_MS	   5000	 /* from SIGINT/SIGTERM to every client's statistics */

static void hub_barrier(struct walk_client *c)
{
	walk_bus_send_frame(c->bus, FRAME_QUIESCED, NULL, 0);
	while (!walk_bus_go_down(c->bus)) {
		struct ibv_wc wc;

		/*
		 * Keep the CQs and the inbox moving while the others catch up: a full inbox would block the
		 * bus reader, and with it the hub's GO_DOWN this loop waits for.
		 */
		for (int i = 0; i < MAX_CQ; i++)
			if (c->cq[i].used && hw_poll_cq(c->cq[i].cq, 0, &wc) < 0)
				break;
		walk_client_take_messages(c);
		usleep(1000);
	}
}

/* Waits for the hub's peer table: a deadline, and an early end on SIGTERM (the hub gave up). */
static int wait_table(struct oob_conn *conn, struct walk_peer_addr *peers, int clients)
{
	uint32_t want = (uint32_t)(sizeof(*peers) * (size_t)clients), len;
	uint64_t deadline = clock_ns() + (uint64_t)TABLE_TIMEOUT_MS * 1000000ull;
	uint16_t type;

	while (!atomic_load(&walk_stop) && clock_ns() < deadline) {
		int rc = oob_recv(conn, &type, peers, want, &len, 500);

		if (rc == -ETIMEDOUT)
			continue;
		return rc ? rc : type == FRAME_TABLE && len == want ? 0 : -EPROTO;
	}
	return -ETIMEDOUT;
}

static int child_main(const struct walk_config *cfg, int id, int port, uint64_t token)
{
	struct walk_peer_addr *peers = calloc((size_t)cfg->clients, sizeof(*peers));
	struct walk_client *c = calloc(1, sizeof(*c));
	struct walk_hello hello = {.magic = WALK_HELLO_MAGIC, .id = (uint32_t)id, .token = token};
	struct oob_conn *conn = NULL;
	char addr[32];
	int rc = 1, err;

	if (!peers || !c)
		goto out;
	*c = (struct walk_client){.id = id,
				  .clients = cfg->clients,
				  .cfg = cfg,
				  .peers = peers,
				  .stop = &walk_stop,
				  .barrier = hub_barrier,
				  .pause_ns = walk_pace_for(cfg->clients, core_usable_cpus())};
	if (walk_client_open(c)) {
		fprintf(stderr, "rdmatool walk: client %d cannot open its device\n", id);
		goto out;
	}
	walk_register_crash_histories(c, 1);
	hello.addr = (struct walk_peer_addr){.gid = c->gid, .lid = c->pattr.lid, .valid = true};
	/*
	 * Connect only once the device is open: the hub gives a connection HELLO_TIMEOUT_MS to say hello, and
	 * opening a device can take longer (a sanitizer build on a loaded machine took over 2 s).
	 */
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	if ((err = oob_connect(addr, CONNECT_TIMEOUT_MS, &conn)) ||
	    (err = oob_send(conn, FRAME_HELLO, &hello, sizeof(hello))) ||
	    (err = wait_table(conn, peers, cfg->clients))) {
		fprintf(stderr, "rdmatool walk: client %d could not join the hub on %s: %s\n", id, addr,
			strerror(-err));
		goto out;
	}
	c->bus = walk_bus_tcp(conn, id, &walk_stop, cfg->heartbeat_s);
	if (!c->bus)
		goto out;
	walk_client_run(c);
	if (walk_bus_hub_lost(c->bus)) {
		walk_stats_fail(&c->stats, "client %d: the hub closed or was silent for %d s; stopped", id,
				cfg->heartbeat_s);
		fprintf(stderr,
			"rdmatool walk: client %d: lost the hub (it ended or was silent for %d s); stopped\n",
			id, cfg->heartbeat_s);
	}
	if (c->stats.nfailures || atomic_load(&walk_stop_signal))
		walk_history_dump(&c->hist, STDERR_FILENO, id);
	if (cfg->history_file)
		walk_write_history_file(cfg->history_file, &c->hist, id);
	walk_bus_send_frame(c->bus, FRAME_STATS, &c->stats, sizeof(c->stats));
	walk_bus_free(c->bus); /* returns once the hub said BYE, closed or went silent */
	rc = c->stats.nfailures ? 1 : 0;
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
	uint64_t token;
	int heartbeat_s;
	pid_t *pid; /* by client id; 0 once reaped */
	struct hub_client {
		struct oob_conn *conn;
		uint64_t last_seen_ns, sent_ns; /* sent_ns: when its queue last moved, or began to wait */
		bool quiesced, reported, gone;
	} * cl; /* by client id */
	int nquiesced, nreported, strangers, died_early;
	uint64_t go_down_ns;	 /* when GO_DOWN went out (0: not yet) */
	uint64_t stop_ns;	 /* when the hub was told to stop (0: not yet) */
	struct walk_result *res; /* where a dropped client's failure is recorded */
};

static void hub_drop(struct hub *h, int i, const char *why);

/* Says on stderr what client i did ("was silent for 2 s"), kills its process and drops it with why. */
static void hub_kill(struct hub *h, int i, const char *did, const char *why)
{
	fprintf(stderr, "rdmatool walk: client %d (pid %d) %s; killing it\n", i, (int)h->pid[i], did);
	if (h->pid[i] > 0)
		kill(h->pid[i], SIGKILL);
	hub_drop(h, i, why);
}

/*
 * Sends a frame to client i through its own queue (oob_send_queued): a client that reads slowly (its walker
 * thread starved of CPU, its inbox full) holds up only its own frames, where a blocking send held every relay
 * of the hub until it read.  One whose queue does not move for heartbeat_s (hub_heartbeat) or grows past
 * HUB_MAX_QUEUE is stopped or hung: it is killed and dropped, as a silent one is.
 */
#define HUB_MAX_QUEUE (16u << 20) /* some 200k messages: far beyond a slow client's backlog */

static void hub_send(struct hub *h, int i, uint16_t type, const void *buf, uint32_t len)
{
	bool was_idle;
	int rc;

	if (h->cl[i].gone)
		return;
	was_idle = oob_pending(h->cl[i].conn) == 0;
	rc = oob_send_queued(h->cl[i].conn, type, buf, len, HUB_MAX_QUEUE);
	if (was_idle)
		h->cl[i].sent_ns = clock_ns();
	if (rc == -ENOBUFS)
		hub_kill(h, i, "fell 16 MiB of messages behind",
			 "fell 16 MiB of messages behind (stopped or hung); its process was killed");
	else if (rc == -ENOMEM)
		hub_kill(h, i, "could not be queued a message (out of memory)",
			 "the hub had no memory to queue its messages; its process was killed");
	/* A closed connection shows on the next read. */
}

/* Writes what client i's socket takes now of its queue. */
static void hub_flush(struct hub *h, int i)
{
	size_t before = oob_pending(h->cl[i].conn);

	if (!oob_flush(h->cl[i].conn) && oob_pending(h->cl[i].conn) < before)
		h->cl[i].sent_ns = clock_ns();
}

static void hub_send_all(struct hub *h, uint16_t type, const void *buf, uint32_t len)
{
	for (int i = 0; i < h->n; i++)
		hub_send(h, i, type, buf, len);
}

/* A client that died before it said HELLO ends the wait now, not at the deadline: -ECHILD, else 0. */
static int hub_child_died(struct hub *h)
{
	for (int i = 0; i < h->n; i++) {
		int status;

		if (!h->cl[i].conn && h->pid[i] > 0 && waitpid(h->pid[i], &status, WNOHANG) == h->pid[i]) {
			h->pid[i] = 0; /* reaped */
			h->died_early = i;
			return -ECHILD;
		}
	}
	return 0;
}

/* Reads the HELLO that waits whole on conn: the client's id, or -1 (and conn closed) for a stranger. */
static int hub_hello(struct hub *h, struct oob_conn *conn, struct walk_peer_addr *table)
{
	struct walk_hello hello;
	uint16_t type;
	uint32_t len;

	if (oob_recv(conn, &type, &hello, sizeof(hello), &len, HELLO_TIMEOUT_MS) || type != FRAME_HELLO ||
	    len != sizeof(hello) || hello.magic != WALK_HELLO_MAGIC || hello.token != h->token ||
	    hello.id >= (uint32_t)h->n || h->cl[hello.id].conn) {
		oob_close(conn);
		h->strangers++;
		return -1;
	}
	h->cl[hello.id].conn = conn;
	h->cl[hello.id].last_seen_ns = clock_ns();
	table[hello.id] = hello.addr;
	return (int)hello.id;
}

/*
 * Takes connections until every client said HELLO with the run's token, or the deadline.  Connections wait
 * side by side (up to HUB_PENDING_MAX), each with HELLO_TIMEOUT_MS to send a whole HELLO, so silent ones
 * (strangers on the port) cannot hold up the clients behind them; one that is not ours (silent, a wrong
 * token, a duplicate id) is closed and the wait goes on.
 */
#define HUB_PENDING_MAX 32

static int hub_accept(struct hub *h, struct oob_listener *l, struct walk_peer_addr *table)
{
	uint64_t deadline = clock_ns() + (uint64_t)CONNECT_TIMEOUT_MS * 1000000ull;
	struct oob_conn *pend[HUB_PENDING_MAX];
	uint64_t pend_end[HUB_PENDING_MAX];
	int joined = 0, np = 0, rc = 0;

	while (joined < h->n && !rc) {
		struct pollfd fds[1 + HUB_PENDING_MAX] = {{.fd = oob_listener_fd(l), .events = POLLIN}};
		uint64_t now = clock_ns();
		int n;

		if (now >= deadline) {
			rc = -ETIMEDOUT;
			break;
		}
		for (int i = 0; i < np; i++)
			fds[1 + i] = (struct pollfd){.fd = oob_conn_fd(pend[i]), .events = POLLIN};
		n = poll(fds, (nfds_t)(1 + np), 250);
		if (n == 0)
			rc = hub_child_died(h);
		now = clock_ns();
		for (int i = np - 1; i >= 0; i--) {
			int ready =
			    fds[1 + i].revents ? oob_frame_ready(pend[i], sizeof(struct walk_hello)) : 0;

			if (ready == 0 && now < pend_end[i])
				continue;
			if (ready == 1)
				joined += hub_hello(h, pend[i], table) >= 0;
			else {
				oob_close(pend[i]);
				h->strangers++;
			}
			pend[i] = pend[--np];
			pend_end[i] = pend_end[np];
		}
		if (n > 0 && (fds[0].revents & POLLIN)) {
			struct oob_conn *conn;

			if (oob_accept(l, 0, &conn))
				continue;
			if (np == HUB_PENDING_MAX) { /* the oldest one has waited longest */
				int oldest = 0;

				for (int i = 1; i < np; i++)
					if (pend_end[i] < pend_end[oldest])
						oldest = i;
				oob_close(pend[oldest]);
				h->strangers++;
				pend[oldest] = pend[--np];
				pend_end[oldest] = pend_end[np];
			}
			pend[np] = conn;
			pend_end[np++] = now + (uint64_t)HELLO_TIMEOUT_MS * 1000000ull;
		}
	}
	h->strangers += np; /* every client joined: the rest were not ours */
	while (np)
		oob_close(pend[--np]);
	if (rc)
		return rc;
	hub_send_all(h, FRAME_TABLE, table, (uint32_t)(sizeof(*table) * (size_t)h->n));
	return 0;
}

static void hub_client_done(struct hub *h, int i)
{
	if (!h->cl[i].quiesced) {
		h->cl[i].quiesced = true;
		if (++h->nquiesced == h->n) {
			h->go_down_ns = clock_ns();
			hub_send_all(h, FRAME_GO_DOWN, NULL, 0);
		}
	}
}

/* A client whose process ended, or went silent, without reporting: it is out of the run. */
static void hub_drop(struct hub *h, int i, const char *why)
{
	h->cl[i].gone = true;
	if (!h->cl[i].reported) {
		h->cl[i].reported = true;
		h->nreported++;
		walk_stats_fail(&h->res->total, "client %d: %s", i, why);
	}
	hub_client_done(h, i);
}

/*
 * Heartbeats out every second; a client silent for heartbeat_s, or without a report REPORT_TIMEOUT_MS after
 * GO_DOWN, is reported and killed.
 */
static void hub_heartbeat(struct hub *h, uint64_t now, uint64_t *last_sent)
{
	uint64_t beat_ns = (uint64_t)h->heartbeat_s * 1000000000ull;
	char did[64], why[128];

	if (now - *last_sent >= 1000000000ull) {
		hub_send_all(h, FRAME_HEARTBEAT, NULL, 0);
		*last_sent = now;
	}
	for (int i = 0; i < h->n; i++) {
		if (h->cl[i].gone)
			continue;
		/* Heartbeats do not prove progress: once the run is over, every report has a deadline. */
		if (!h->cl[i].reported && h->go_down_ns &&
		    now - h->go_down_ns >= (uint64_t)REPORT_TIMEOUT_MS * 1000000ull) {
			snprintf(did, sizeof(did), "did not report within %d s of the end",
				 REPORT_TIMEOUT_MS / 1000);
			hub_kill(h, i, did, "did not report at the end of the run; its process was killed");
		} else if (oob_pending(h->cl[i].conn) && now - h->cl[i].sent_ns >= beat_ns) {
			snprintf(did, sizeof(did), "took no message for %d s", h->heartbeat_s);
			snprintf(why, sizeof(why), "%s (stopped or hung); its process was killed", did);
			hub_kill(h, i, did, why);
		} else if (now - h->cl[i].last_seen_ns >= beat_ns) {
			snprintf(did, sizeof(did), "was silent for %d s", h->heartbeat_s);
			snprintf(why, sizeof(why),
				 "silent for %d s (stopped or hung); its process was killed", h->heartbeat_s);
			hub_kill(h, i, did, why);
		}
	}
}

/*
 * SIGINT/SIGTERM: the clients are told too and end their runs; one that has not reported STOP_TIMEOUT_MS
 * later is killed, so a stop always ends the run.
 */
static void hub_stop(struct hub *h, uint64_t now)
{
	char did[64];

	if (!atomic_load(&walk_stop))
		return;
	if (!h->stop_ns) {
		h->stop_ns = now;
		for (int i = 0; i < h->n; i++)
			if (!h->cl[i].gone && !h->cl[i].reported && h->pid[i] > 0)
				kill(h->pid[i], SIGTERM);
		return;
	}
	if (now - h->stop_ns < (uint64_t)STOP_TIMEOUT_MS * 1000000ull)
		return;
	snprintf(did, sizeof(did), "still running %d s after the stop", STOP_TIMEOUT_MS / 1000);
	for (int i = 0; i < h->n; i++)
		if (!h->cl[i].gone && !h->cl[i].reported)
			hub_kill(h, i, did,
				 "still running when the walk was stopped; its process was killed");
}

/*
 * Forwards the messages of one frame from client src, batched per destination (one frame to each, not one per
 * message).  A message that is not valid, or claims another source, is dropped.
 */
static void hub_route(struct hub *h, int src, const struct walk_msg *m, size_t count,
		      struct walk_msg (*out)[WALK_FRAME_MSGS], int *nout)
{
	for (size_t k = 0; k < count; k++) {
		int d = m[k].dst;

		if (!walk_msg_valid(&m[k], h->n) || m[k].src != src)
			continue;
		out[d][nout[d]++] = m[k];
		if (nout[d] == WALK_FRAME_MSGS) {
			hub_send(h, d, FRAME_MSG, out[d], (uint32_t)sizeof(out[d]));
			nout[d] = 0;
		}
	}
	for (int d = 0; d < h->n; d++)
		if (nout[d]) {
			hub_send(h, d, FRAME_MSG, out[d], (uint32_t)(nout[d] * sizeof(out[d][0])));
			nout[d] = 0;
		}
}

static void hub_loop(struct hub *h, void *buf, uint32_t cap)
{
	struct walk_result *res = h->res;
	struct pollfd *pfd = calloc((size_t)h->n, sizeof(*pfd));
	struct walk_msg(*out)[WALK_FRAME_MSGS] = calloc((size_t)h->n, sizeof(*out));
	int *nout = calloc((size_t)h->n, sizeof(*nout));
	uint64_t last_sent = clock_ns();

	while (pfd && out && nout && h->nreported < h->n) {
		for (int i = 0; i < h->n; i++) {
			pfd[i].fd = h->cl[i].gone ? -1 : oob_conn_fd(h->cl[i].conn);
			pfd[i].events = POLLIN | (!h->cl[i].gone && oob_pending(h->cl[i].conn) ? POLLOUT : 0);
		}
		if (poll(pfd, (nfds_t)h->n, 250) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < h->n; i++) {
			uint16_t type;
			uint32_t len;
			int rc;

			if (!h->cl[i].gone && (pfd[i].revents & POLLOUT))
				hub_flush(h, i);
			if (h->cl[i].gone || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			rc = oob_recv(h->cl[i].conn, &type, buf, cap, &len, 1000);
			if (rc == -EMSGSIZE || rc == -ETIMEDOUT)
				continue;
			if (rc) {
				hub_drop(h, i, "its process ended without reporting");
				continue;
			}
			h->cl[i].last_seen_ns = clock_ns();
			if (type == FRAME_MSG && len && len % sizeof(struct walk_msg) == 0) {
				hub_route(h, i, buf, len / sizeof(struct walk_msg), out, nout);
			} else if (type == FRAME_QUIESCED) {
				hub_client_done(h, i);
			} else if (type == FRAME_STATS && len == sizeof(struct walk_stats) &&
				   !h->cl[i].reported) {
				struct walk_stats *s = buf;

				s->nfailures = s->nfailures < 0 ? 0 : s->nfailures;
				res->per_client[i] = *s;
				walk_stats_merge(&res->total, s);
				h->cl[i].reported = true;
				h->nreported++;
			}
		}
		uint64_t now = clock_ns();

		hub_heartbeat(h, now, &last_sent);
		hub_stop(h, now);
	}
	free(nout);
	free(out);
	free(pfd);
}

/* Waits for a child; after the grace period it is killed.  Returns its wait status. */
static int reap_child(pid_t pid, int grace_ms)
{
	int status = 0;

	for (int waited = 0;; waited += 10) {
		pid_t got = waitpid(pid, &status, grace_ms < 0 ? 0 : WNOHANG);

		if (got == pid || (got < 0 && errno != EINTR))
			return status;
		if (grace_ms >= 0 && waited >= grace_ms) {
			kill(pid, SIGKILL);
			grace_ms = -1;
			continue;
		}
		usleep(10000);
	}
}

int walk_run_multinode(const struct walk_config *cfg, struct walk_result *res, const char *cmd)
{
	int n = cfg->clients, rc = 0;
	struct hub h = {.n = n, .heartbeat_s = cfg->heartbeat_s, .token = rng_entropy_seed(), .res = res};
	struct oob_listener *l = NULL;
	struct walk_peer_addr *table = calloc((size_t)n, sizeof(*table));
	pid_t *pid = calloc((size_t)n, sizeof(*pid));
	/* the largest frame the hub reads: a client's stats or a full batch of messages */
	uint32_t cap = (uint32_t)(sizeof(struct walk_stats) > sizeof(struct walk_msg[WALK_FRAME_MSGS])
				      ? sizeof(struct walk_stats)
				      : sizeof(struct walk_msg[WALK_FRAME_MSGS])) +
		       64;
	void *buf = malloc(cap);
	uint64_t start = clock_ns();
	int err, port;

	h.pid = pid;
	h.cl = calloc((size_t)n, sizeof(*h.cl));
	if (!table || !pid || !buf || !h.cl) {
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
			int status = child_main(cfg, i, port, h.token);

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
	if (!rc && (err = hub_accept(&h, l, table))) {
		int missing = 0;

		for (int i = 0; i < n; i++)
			missing += !h.cl[i].conn;
		if (err == -ECHILD)
			rc = run_error(
			    cmd, "client %d's process ended before it joined the run (see its message above)",
			    h.died_early);
		else
			rc = run_error(
			    cmd, "%d of %d client processes did not connect to the hub within %d s%s",
			    missing, n, CONNECT_TIMEOUT_MS / 1000,
			    h.strangers ? " (connections that were not walk clients were dropped)" : "");
	}
	if (!rc && h.strangers)
		notice(cmd, "dropped %d connection%s to the hub that %s not walk clients", h.strangers,
		       h.strangers == 1 ? "" : "s", h.strangers == 1 ? "was" : "were");
	if (!rc) {
		hub_loop(&h, buf, cap);
		/* Last, and the one send that waits: BYE after everything queued (at most a heartbeat). */
		for (int i = 0; i < n; i++)
			if (!h.cl[i].gone)
				oob_send_timeout(h.cl[i].conn, FRAME_BYE, NULL, 0, h.heartbeat_s * 1000);
	}
	for (int i = 0; i < n; i++) {
		int status;

		if (pid[i] <= 0)
			continue;
		if (rc)
			kill(pid[i], SIGTERM);
		/* A client that does not end 5 s after the run is over is killed, never waited on forever. */
		status = reap_child(pid[i], 5000);
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
			stats_segment_remove(pid[i]); /* it could not remove its own */
		if (!rc && WIFSIGNALED(status) && !h.cl[i].gone)
			walk_stats_fail(&res->total, "client %d: its process died of signal %d", i,
					WTERMSIG(status));
	}
	res->wall_s = (double)(clock_ns() - start) / 1e9;
out:
	for (int i = 0; h.cl && i < n; i++)
		if (h.cl[i].conn)
			oob_close(h.cl[i].conn);
	if (l)
		oob_listener_close(l);
	free(h.cl);
	free(buf);
	free(pid);
	free(table);
	return rc;
}
