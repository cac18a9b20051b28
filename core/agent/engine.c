/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The agent's engine; the contract is in engine.h. */
#include "core/agent/engine.h"

#include "core/agent/agent.h"
#include "core/agent/link/link.h"
#include "core/chan/pidfile.h"
#include "core/chan/sibling.h"
#include "core/stats/stats.h"
#include "core/util/clock.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/*
 * After its last work the loop keeps polling for its spin window (yielding
 * the CPU on each empty pass), so back-to-back requests and answers cost no
 * wake-up; then it sleeps in poll() on the gateway's doorbell, the network
 * completion channel and the peers' connections, woken by whichever comes
 * first.  While answers from other nodes are due it polls longer: reading
 * the wire itself saves the hand-off through the device's thread and the
 * completion channel (measured: a deposited round trip 1.3-1.6x faster).
 * Bounded, so a GETMSG that waits on an empty channel leaves the agent
 * asleep.
 *
 * The window adapts to the traffic, like an adaptive lock: work that woke
 * the engine soon after it fell asleep (a peer's requests every 100-300 us,
 * say) doubles it, up to ENGINE_SPIN_MAX_NS, so a steady exchange finds the
 * engine polling instead of paying two wake-ups per message (the device's
 * thread, then the engine); a sleep that lasted longer than that resets it.
 */
#define ENGINE_SPIN_NS	    50000ull
#define ENGINE_SPIN_MAX_NS  1000000ull
#define ENGINE_IN_FLIGHT_NS 2000000ull

struct agent_engine {
	struct agent_engine_config cfg;
	char dir[PATH_MAX];
	char name[32]; /* agent_id_text: "R" or "R.S" */
	uint32_t id;   /* agent_id(rank, sibling) */
	int pid_fd;
	/* The links' virtual ranks (rank x siblings + sibling): each agent's host and port. */
	char (*link_hosts)[GW_HOST_LEN];
	uint16_t *link_ports;
	struct gateway *gw;
	struct agent_links *links; /* NULL on a single node */
	struct stats_entry *stats;
	uint64_t served, failed;
	uint64_t copied; /* answers copied into the gateway (the links count their own copies) */
	struct flow_caps caps;
	uint32_t in_flight; /* requests sent to other nodes whose answer has not come yet */
	uint64_t spin_ns;   /* how long the loop polls after its last work (adaptive, see engine_sleep) */
	/*
	 * Sibling S > 0: the node's first agent's gateway, and the agents per node each other node said
	 * to it.  A node that runs another count may never dial S's rail (core/chan/sibling.h), so
	 * S learns of the mismatch from sibling 0.
	 */
	struct gateway *first;
	uint32_t first_seen[GW_MAX_NODES];
};

static void engine_done(void *arg, uint64_t token, int status, const void *data, size_t len);
static bool engine_orphaned(void *arg, uint64_t token);
static void publish_flow(struct agent_engine *e);
static void publish_agent(struct agent_engine *e);

int agent_engine_open(const struct agent_engine_config *cfg, struct agent_engine **out, char *why,
		      size_t whylen)
{
	struct agent_engine *e = calloc(1, sizeof(*e));
	struct gw_info self = {0};
	struct timespec now;
	pid_t holder = 0;
	int rc;

	if (!e)
		return -ENOMEM;
	e->cfg = *cfg;
	e->spin_ns = ENGINE_SPIN_NS;
	snprintf(e->dir, sizeof(e->dir), "%s", cfg->dir);
	e->cfg.dir = e->dir;
	if (e->cfg.siblings == 0)
		e->cfg.siblings = 1; /* one agent per node */
	cfg = &e->cfg;
	if (cfg->nodes == 0 || cfg->nodes > GW_MAX_NODES || cfg->rank >= cfg->nodes) {
		snprintf(why, whylen,
			 "rank %u of %u nodes: the rank must be below the node count (at most %d nodes)",
			 cfg->rank, cfg->nodes, GW_MAX_NODES);
		free(e);
		return -EINVAL;
	}
	if (cfg->siblings > AGENT_SIBLINGS_MAX || cfg->sibling >= cfg->siblings ||
	    cfg->nodes * cfg->siblings > GW_MAX_NODES) {
		snprintf(
		    why, whylen,
		    "agent %u of %u per node on %u nodes: at most %d agents per node and %d agents in all",
		    cfg->sibling, cfg->siblings, cfg->nodes, AGENT_SIBLINGS_MAX, GW_MAX_NODES);
		free(e);
		return -EINVAL;
	}
	e->id = agent_id(cfg->rank, cfg->sibling);
	agent_id_text(e->id, e->name, sizeof(e->name));
	rc = flow_caps_from_env(&e->caps, why, whylen);
	if (rc) {
		free(e);
		return rc;
	}
	rc = pidfile_acquire(e->dir, e->id, &e->pid_fd, &holder);
	if (rc) {
		if (rc == -EEXIST)
			snprintf(why, whylen,
				 "an agent already runs for %s agent %s (pid %d); stop it with 'rdmatool "
				 "agent stop'",
				 e->dir, e->name, (int)holder);
		else
			snprintf(why, whylen, "cannot take the pid file in %s: %s", e->dir, strerror(-rc));
		free(e);
		return rc;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	self.pid = getpid();
	self.rank = cfg->rank;
	self.nodes = cfg->nodes;
	self.sibling = cfg->sibling;
	self.siblings = cfg->siblings;
	self.start_realtime_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	for (uint32_t i = 0; cfg->hosts && i < cfg->nodes; i++)
		snprintf(self.hosts[i], GW_HOST_LEN, "%s", cfg->hosts[i]);
	rc = gw_create(e->dir, &self, &e->gw);
	if (rc) {
		snprintf(why, whylen, "cannot create the gateway in %s: %s%s", e->dir, strerror(-rc),
			 rc == -ENOSPC ? " (it reserves about 17 MiB: free space there)" : "");
		pidfile_release(e->dir, e->id, e->pid_fd);
		free(e);
		return rc;
	}
	if (cfg->nodes > 1) {
		uint32_t n = cfg->siblings;
		struct link_config lc = {.rank = cfg->rank * n + cfg->sibling,
					 .nodes = cfg->nodes * n,
					 .siblings = n,
					 .path = cfg->path,
					 .dir = e->dir,
					 .bind = cfg->bind,
					 .done = engine_done,
					 .orphaned = engine_orphaned,
					 .log = cfg->log,
					 .caps = e->caps,
					 .arg = e};

		e->link_hosts = calloc(lc.nodes, sizeof(*e->link_hosts));
		e->link_ports = calloc(lc.nodes, sizeof(*e->link_ports));
		rc = e->link_hosts && e->link_ports ? 0 : -ENOMEM;
		for (uint32_t v = 0; !rc && v < lc.nodes; v++) {
			uint32_t base =
			    cfg->ports && cfg->ports[v / n] ? cfg->ports[v / n] : LINK_DEFAULT_PORT;

			snprintf(e->link_hosts[v], GW_HOST_LEN, "%s", cfg->hosts[v / n]);
			e->link_ports[v] = (uint16_t)(base + v % n);
			if (base + v % n > 65535) {
				snprintf(
				    why, whylen,
				    "node %u's port %u leaves no room for its %u agents (agent S listens on "
				    "the port + S); give a lower port in --hosts",
				    v / n, base, n);
				rc = -EINVAL;
			}
		}
		lc.hosts = e->link_hosts;
		lc.ports = e->link_ports;
		if (!rc)
			rc = links_open(&lc, &e->links, why, whylen);
		if (rc) {
			gw_destroy(e->gw, e->dir);
			pidfile_release(e->dir, e->id, e->pid_fd);
			free(e->link_hosts);
			free(e->link_ports);
			free(e);
			return rc;
		}
	}
	/* `agent status` right after start shows the caps and the pool, not zeros. */
	publish_flow(e);
	publish_agent(e);
	e->stats = stats_entry_add("agent gateway", STATS_KIND_AGENT, -1);
	agent_logf(&e->cfg.log, "agent rank %u of %u (agent %u of %u on the node) serving %s (pid %d)",
		   cfg->rank, cfg->nodes, cfg->sibling, cfg->siblings, e->dir, (int)getpid());
	*out = e;
	return 0;
}

static int engine_handle(void *arg, uint32_t slot, const struct gw_request *req, const void *in, size_t inlen,
			 void *out, size_t *outlen)
{
	struct agent_engine *e = arg;
	int rc;

	(void)out;
	*outlen = 0;
	if (req->node >= e->cfg.nodes)
		rc = -EHOSTUNREACH;
	else if (req->node == e->cfg.rank)
		rc = -EINVAL; /* this node's channels are reached directly, never through the gateway */
	else if (!e->links)
		rc = -EHOSTDOWN;
	else if (e->first_seen[req->node] && e->first_seen[req->node] != e->cfg.siblings)
		rc = -EBADE; /* that node runs another count of agents (sibling 0 met it) */
	else if (!links_can_inject(e->links))
		return GW_DEFER; /* over the injection cap: it waits in the gateway, which may fill (-EAGAIN)
				  */
	else {
		/* Over this agent's rail: to the same sibling of the target node. */
		struct gw_request rail = *req;

		rail.node = req->node * e->cfg.siblings + e->cfg.sibling;
		/* 0 for immediately and buffered once the data is on the link: the caller may go on. */
		rc = links_request(e->links, &rail, in, inlen, slot);
	}
	if (e->cfg.debug)
		agent_logf(&e->cfg.log, "request op %u node %u channel %s len %zu: %s", req->op, req->node,
			   req->name, inlen,
			   rc == -EINPROGRESS ? "sent"
			   : rc		      ? strerror(-rc)
					      : "done");
	if (rc == -EINPROGRESS)
		e->in_flight++;
	else if (rc)
		e->failed++;
	e->served++;
	return rc;
}

/* The target answered a request the engine left in progress. */
/*
 * A GETMSG's message came back for a client that died meanwhile (its slot
 * will be reaped unread): the message goes back into its channel, at the
 * end, as a buffered SENDMSG over this agent's rail, so it is not lost (it
 * may come after messages sent later).  Chunked like a client's when larger
 * than a slot.
 */
#define ENGINE_CHUNK ((size_t)AGENT_CHUNK_MAX_KB << 10) /* what one READ moves (proto.h) */

static void engine_return(struct agent_engine *e, const struct gw_request *get, const uint8_t *data,
			  size_t len)
{
	static uint32_t counter;
	struct gw_request s = {.op = GW_OP_SEND,
			       .mode = AGENT_SEND_BUFFERED,
			       .node = get->node * e->cfg.siblings + e->cfg.sibling,
			       .timeout_ms = 60000};
	int rc = 0;

	memcpy(s.name, get->name, sizeof(s.name));
	if (len > ENGINE_CHUNK) {
		s.msg_total = len;
		s.msg_id = (uint64_t)getpid() << 32 | 0x80000000u | counter++;
	}
	for (size_t off = 0; off < len && (!rc || rc == -EINPROGRESS); off += ENGINE_CHUNK) {
		s.msg_offset = off;
		rc = links_request(e->links, &s, data + off,
				   len - off < ENGINE_CHUNK ? len - off : ENGINE_CHUNK, LINK_NO_TOKEN);
	}
	agent_logf(&e->cfg.log, "a GETMSG of %u/%s came back (%zu bytes) for a client that died: %s",
		   get->node, get->name, len,
		   !rc || rc == -EINPROGRESS ? "returned to the channel" : strerror(-rc));
}

/* A receive whose client died (links.h: its GETMSG is withdrawn at the target). */
static bool engine_orphaned(void *arg, uint64_t token)
{
	struct agent_engine *e = arg;
	struct gw_request req;

	return gw_slot_orphaned(e->gw, (uint32_t)token, &req) && req.op == GW_OP_RECV;
}

static void engine_done(void *arg, uint64_t token, int status, const void *data, size_t len)
{
	struct agent_engine *e = arg;
	struct gw_request req;

	if (e->in_flight)
		e->in_flight--;
	if (!status && len && e->links && gw_slot_orphaned(e->gw, (uint32_t)token, &req) &&
	    req.op == GW_OP_RECV && req.node < e->cfg.nodes)
		engine_return(e, &req, data, len);
	if (e->cfg.debug)
		agent_logf(&e->cfg.log, "answer for slot %llu: %s", (unsigned long long)token,
			   status ? strerror(-status) : "done");
	e->copied += status ? 0 : len;
	gw_complete(e->gw, (uint32_t)token, status, data, len);
}

#define ENGINE_STATS_NS 100000000ull

/* Sibling S > 0: what the node's first agent learnt of the other nodes' agent counts. */
static void first_sibling_news(struct agent_engine *e)
{
	struct gw_info *info;

	if (!e->cfg.sibling || !e->links)
		return;
	if (e->first && !gw_alive(e->first)) {
		gw_close(e->first);
		e->first = NULL;
	}
	if (!e->first && gw_open(e->dir, agent_id(e->cfg.rank, 0), &e->first))
		return;
	info = malloc(sizeof(*info));
	if (!info)
		return;
	gw_info(e->first, info);
	for (uint32_t i = 0; i < e->cfg.nodes && i < GW_MAX_NODES; i++)
		if (i != e->cfg.rank)
			e->first_seen[i] = info->peer_stats[i].agents_per_node;
	free(info);
}
#define ENGINE_POLL_FDS (2 + 2 + GW_MAX_NODES)

/* Sleeps until a request, a network completion, a peer's news, or the next stats update. */
static void engine_sleep(struct agent_engine *e)
{
	uint64_t start = clock_ns();
	struct pollfd fds[ENGINE_POLL_FDS];
	int n = 0, timeout_ms = (int)(ENGINE_STATS_NS / 1000000), bell = gw_bell_fd(e->gw);

	if (bell < 0)
		timeout_ms = 1; /* no doorbell: nap */
	else
		fds[n++] = (struct pollfd){.fd = bell, .events = POLLIN};
	if (e->links) {
		int k = links_sleep_prepare(e->links, fds + n, ENGINE_POLL_FDS - n, &timeout_ms);

		if (k < 0)
			return; /* work came in meanwhile */
		n += k;
	}
	if (gw_sleep_begin(e->gw)) {
		poll(fds, (nfds_t)n, timeout_ms);
		gw_sleep_end(e->gw);
	}
	if (e->links)
		links_sleep_end(e->links, fds + (bell >= 0), n - (bell >= 0));
	/* Woken soon: the next gap is likely as short, so poll through it next time. */
	if (clock_ns() - start < ENGINE_SPIN_MAX_NS)
		e->spin_ns = e->spin_ns * 2 < ENGINE_SPIN_MAX_NS ? e->spin_ns * 2 : ENGINE_SPIN_MAX_NS;
	else
		e->spin_ns = ENGINE_SPIN_NS;
}

static void publish_flow(struct agent_engine *e)
{
	struct flow_gauge flow[FLOW_NKINDS];

	if (e->links) {
		links_flow_stats(e->links, flow);
	} else {
		for (int k = 0; k < FLOW_NKINDS; k++)
			flow_init(&flow[k], e->caps.cap[k]);
	}
	gw_set_flow(e->gw, flow);
}

static void publish_agent(struct agent_engine *e)
{
	struct gw_agent_stats st = {0};

	if (e->links)
		links_agent_stats(e->links, &st);
	st.copied += e->copied;
	gw_set_agent_stats(e->gw, &st);
}

int agent_engine_run(struct agent_engine *e, volatile sig_atomic_t *stop)
{
	uint64_t last_work = 0, last_stats = 0;

	while (!*stop) {
		/*
		 * The gateway on both sides of the network pass: a pass reads the wire (system calls,
		 * a few microseconds), and a client's request that came during the last yield goes
		 * out before it, not after (measured: 2.4 us from a request being ready to the
		 * engine taking it, most of a pass).
		 */
		int served = gw_serve(e->gw, engine_handle, e);
		int work = e->links ? links_progress(e->links) : 0;
		uint64_t now;

		served += gw_serve(e->gw, engine_handle, e);

		/* What the requests put on an idle link goes now, not after the next network read. */
		if (served && e->links)
			links_post(e->links);
		work += served;
		now = clock_ns();
		if (work)
			last_work = now;
		else if (e->links && !links_idle(e->links)) {
			/* Nothing new this pass: the idle passes that send the eager buffers being filled. */
			for (int i = 0; i < 2 && !links_tx_pass(e->links); i++)
				;
			continue;
		} else if (now - last_work < (e->in_flight ? ENGINE_IN_FLIGHT_NS : e->spin_ns))
			sched_yield();
		else
			engine_sleep(e);
		if (now - last_stats < ENGINE_STATS_NS)
			continue;
		last_stats = now;
		struct gw_info info;

		first_sibling_news(e);
		for (uint32_t i = 0; e->links && i < e->cfg.nodes; i++) {
			struct gw_peer_stats ps;

			uint32_t v = i * e->cfg.siblings + e->cfg.sibling;

			gw_set_peer_up(e->gw, i, i == e->cfg.rank || links_up(e->links, v));
			links_peer_stats(e->links, v, &ps);
			if (e->first_seen[i] && e->first_seen[i] != e->cfg.siblings) {
				ps.agents_per_node = e->first_seen[i];
				ps.last_error = -EBADE;
			}
			gw_set_peer_stats(e->gw, i, &ps);
		}
		publish_flow(e);
		publish_agent(e);
		gw_info(e->gw, &info);
		stats_set(e->stats, STATS_POSTED, info.requests);
		stats_set(e->stats, STATS_COMPLETED, info.completed + info.failed);
		stats_set(e->stats, STATS_ERRORS, info.failed);
		stats_set(e->stats, STATS_EAGAIN, info.eagain);
		stats_set(e->stats, STATS_RING_DEPTH, info.depth);
		stats_max(e->stats, STATS_RING_HWM, info.depth);
	}
	return 0;
}

void agent_engine_close(struct agent_engine *e)
{
	if (!e)
		return;
	agent_logf(&e->cfg.log, "agent %s stopping: %llu requests served, %llu failed", e->name,
		   (unsigned long long)e->served, (unsigned long long)e->failed);
	links_close(e->links); /* fails what waits on other nodes, through engine_done */
	gw_destroy(e->gw, e->dir);
	gw_close(e->first);
	stats_entry_remove(e->stats);
	pidfile_release(e->dir, e->id, e->pid_fd);
	free(e->link_hosts);
	free(e->link_ports);
	free(e);
}
