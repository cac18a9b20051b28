/* SPDX-License-Identifier: MIT */
/* The gateway between clients and their local agent; the contract is in gateway.h. */
#include "core/agent/gateway.h"
#include "core/agent/agent_dir.h"

#include "core/agent/agent.h"
#include "core/agent/pidfile.h"
#include "core/agent/sibling.h"
#include "core/util/clock.h"
#include "core/util/futex.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define GW_MAGIC 0x5957544754414452ULL /* "RDATGTWY" little-endian */
#define GW_VERSION                                                                                           \
	8 /* 2: per-peer traffic counters, 3: aggregation, 4: chunked sends, 5: flow caps, 6: siblings, 7: the \
	     peers' agents per node, 8: pooled send buffers */

enum slot_state { SLOT_FREE, SLOT_CLAIMED, SLOT_READY, SLOT_BUSY, SLOT_DONE, SLOT_ABANDONED };

struct gw_slot {
	_Atomic uint32_t state; /* enum slot_state; the client sleeps on it */
	int32_t pid;		/* the client that claimed it */
	uint64_t ticket;
	uint32_t detached;	   /* "immediately": nobody waits, the agent frees the slot */
	_Atomic uint32_t sleeping; /* the client sleeps on state: the agent must wake it */
	int32_t status;
	uint32_t inlen, outlen;
	uint32_t spilled;   /* the answer is in the spill file (spill_path), outlen unused */
	uint64_t spill_len; /* its size */
	struct gw_request req;
	unsigned char data[GW_INLINE];
};

/* gw_peer_stats in shared memory: each field read and written whole. */
struct gw_shared_peer {
	_Atomic uint64_t msgs_sent, bytes_sent, msgs_recv, bytes_recv, retries;
	_Atomic uint64_t buffers_sent, buffer_items_sent, buffers_recv, large_sent;
	_Atomic int32_t last_error;
	_Atomic uint32_t eager_in_use, waiting, waiting_hwm, agents_per_node;
};

/* What a client checks before it maps the segment (read alone: the whole segment is megabytes). */
struct gw_ident {
	uint64_t magic;
	uint32_t version;
	uint32_t slot_size;
	uint32_t nslots;
	int32_t pid;
	uint32_t rank, nodes;
	uint32_t sibling, siblings; /* core/agent/sibling.h */
};

struct gw_shared {
	struct gw_ident id;
	uint64_t start_realtime_ns;
	char hosts[GW_MAX_NODES][GW_HOST_LEN];
	_Atomic uint8_t peer_up[GW_MAX_NODES];
	struct gw_shared_peer peers[GW_MAX_NODES];
	_Atomic uint64_t flow[FLOW_NKINDS][3];	/* now, hwm, cap */
	_Atomic uint64_t agent[GW_AGENT_STATS]; /* struct gw_agent_stats, field by field */
	_Atomic uint32_t ports_dealt;		/* remote handles given a sibling (gw_deal_sibling) */
	uint32_t pad2;
	_Atomic uint32_t running;
	_Atomic uint32_t doorbell; /* the agent sleeps on it */
	_Atomic uint32_t agent_sleeping;
	uint32_t pad;
	_Atomic uint64_t next_ticket;
	_Atomic uint64_t requests, completed, failed, eagain, reaped;
	struct gw_slot slots[GW_SLOTS];
};

struct gateway {
	struct gw_shared *s;
	char dir[PATH_MAX];
	uint32_t rank;
	bool agent_side;
	uint64_t next_reap_ns;	 /* agent side: looking for dead clients costs a system call per slot */
	uint64_t alive_until_ns; /* client side: the agent was seen alive; checked again after that */
	int bell_fd;		 /* the doorbell socket: bound (agent), or to send from (client); -1: none */
	struct sockaddr_un bell;
	socklen_t bell_len;
	_Atomic uint64_t answer_ns; /* client side: a running average of remote answers' waits */
};

#define GW_ALIVE_NS   50000000ull
#define GW_CALL_SPINS 32 /* yields before a client waiting for its local agent sleeps */
/*
 * A client waiting for an answer from another node polls (yielding) up to
 * twice the usual wait before it sleeps, at most this long; when answers
 * usually take longer it sleeps at once.
 */
#define GW_REMOTE_SPIN_MAX_NS 250000ull
#define GW_YIELD_SHARED_NS    10000ull /* a yield that took longer ran another thread */

#define GW_REAP_NS 20000000ull

static void gw_path(char *path, size_t len, const char *dir, uint32_t rank)
{
	char id[32];

	agent_id_text(rank, id, sizeof(id));
	snprintf(path, len, "%s/%s%s", dir, GW_FILE_PREFIX, id);
}

/* An answer larger than a slot: <dir>/gateway.<rank>.spill.<slot>.<ticket>, named from the slot alone. */
#define SPILL_PATH_MAX (PATH_MAX + 64)

static bool spill_path(char *path, size_t len, const char *dir, uint32_t rank, uint32_t slot, uint64_t ticket)
{
	char id[32];
	int n;

	agent_id_text(rank, id, sizeof(id));
	n = snprintf(path, len, "%s/%s%s.spill.%u.%llu", dir, GW_FILE_PREFIX, id, slot,
		     (unsigned long long)ticket);
	return n > 0 && (size_t)n < len;
}

/* Writes the answer to its spill file (owner-only, never an existing file); 0 or a negative errno. */
static int spill_write(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	int rc = 0;

	if (fd < 0)
		return -errno;
	for (size_t off = 0; off < len && !rc;) {
		ssize_t n = write(fd, (const uint8_t *)data + off, len - off);

		if (n > 0)
			off += (size_t)n;
		else if (n < 0 && errno != EINTR)
			rc = -errno;
	}
	close(fd);
	if (rc)
		unlink(path);
	return rc;
}

/* Client side: reads (at most cap bytes of) the answer and removes its file; -EBADMSG if it is not ours. */
static int spill_read(const char *path, void *out, size_t cap, uint64_t len)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	size_t want = len < cap ? (size_t)len : cap;
	int rc = 0;

	if (fd < 0)
		return -errno;
	unlink(path);
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) ||
	    (uint64_t)st.st_size != len)
		rc = -EBADMSG;
	for (size_t off = 0; off < want && !rc;) {
		ssize_t n = read(fd, (uint8_t *)out + off, want - off);

		if (n > 0)
			off += (size_t)n;
		else if (n == 0)
			rc = -EBADMSG;
		else if (errno != EINTR)
			rc = -errno;
	}
	close(fd);
	return rc;
}

/*
 * The doorbell: a datagram socket <dir>/gateway.<rank>.bell the agent polls
 * together with its network completions, so a request wakes an agent that
 * sleeps in poll().  A client rings it only when the agent said it sleeps.
 * A socket, not a FIFO: ringing a dead agent's bell is an error, not SIGPIPE.
 * false when the path does not fit a socket address (the agent then naps).
 */
static bool bell_addr(struct gateway *g, const char *dir, uint32_t rank)
{
	char id[32];
	int n;

	memset(&g->bell, 0, sizeof(g->bell));
	g->bell.sun_family = AF_UNIX;
	agent_id_text(rank, id, sizeof(id));
	n = snprintf(g->bell.sun_path, sizeof(g->bell.sun_path), "%s/%s%s.bell", dir, GW_FILE_PREFIX, id);
	g->bell_len = (socklen_t)sizeof(g->bell);
	return n > 0 && (size_t)n < sizeof(g->bell.sun_path);
}

static void bell_ring(struct gateway *g)
{
	char b = 0;
	ssize_t n;

	if (g->bell_fd < 0)
		return;
	n = sendto(g->bell_fd, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&g->bell, g->bell_len);
	(void)n; /* full: it rings already; refused: the agent is gone, which gw_call notices */
}

int gw_create(const char *dir, const struct gw_info *self, struct gateway **out)
{
	char path[PATH_MAX];
	struct gateway *g;
	struct gw_shared *s;
	int fd;

	uint32_t id = agent_id(self->rank, self->sibling);

	gw_path(path, sizeof(path), dir, id);
	unlink(path); /* a dead agent's; the caller holds the pid file lock */
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, sizeof(*s))) {
		int rc = -errno;

		close(fd);
		unlink(path);
		return rc;
	}
	s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	g = calloc(1, sizeof(*g));
	if (s == MAP_FAILED || !g) {
		if (s != MAP_FAILED)
			munmap(s, sizeof(*s));
		free(g);
		unlink(path);
		return -ENOMEM;
	}
	s->id.version = GW_VERSION;
	s->id.slot_size = sizeof(struct gw_slot);
	s->id.nslots = GW_SLOTS;
	s->id.pid = self->pid;
	s->id.rank = self->rank;
	s->id.nodes = self->nodes;
	s->id.sibling = self->sibling;
	s->id.siblings = self->siblings;
	s->start_realtime_ns = self->start_realtime_ns;
	memcpy(s->hosts, self->hosts, sizeof(s->hosts));
	atomic_store(&s->running, 1);
	atomic_thread_fence(memory_order_release);
	s->id.magic = GW_MAGIC;
	g->s = s;
	snprintf(g->dir, sizeof(g->dir), "%s", dir);
	g->rank = id;
	g->agent_side = true;
	g->bell_fd = -1;
	if (bell_addr(g, dir, id)) {
		unlink(g->bell.sun_path); /* a dead agent's */
		g->bell_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (g->bell_fd >= 0 && bind(g->bell_fd, (struct sockaddr *)&g->bell, g->bell_len)) {
			close(g->bell_fd);
			g->bell_fd = -1;
		}
	}
	*out = g;
	return 0;
}

/*
 * Pairs with the client's seq_cst store of sleeping before its last look at
 * state.  A seq_cst read-modify-write rather than a fence and a load: the
 * same store-load ordering, and one ThreadSanitizer models (it rejects
 * atomic_thread_fence).
 */
static void slot_wake(struct gw_slot *sl)
{
	if (atomic_fetch_or(&sl->sleeping, 0))
		futex_wake_all(&sl->state);
}

/* The agent finished a request: hand it back, or free it when nobody waits any more. */
static void slot_complete(struct gw_shared *s, struct gw_slot *sl, int status)
{
	uint32_t busy = SLOT_BUSY;

	sl->status = status;
	atomic_fetch_add(status ? &s->failed : &s->completed, 1);
	if (sl->detached) {
		atomic_store_explicit(&sl->state, SLOT_FREE, memory_order_release);
		return;
	}
	if (!atomic_compare_exchange_strong(&sl->state, &busy, SLOT_DONE))
		atomic_store_explicit(&sl->state, SLOT_FREE, memory_order_release); /* abandoned */
	slot_wake(sl);
}

void gw_destroy(struct gateway *g, const char *dir)
{
	char path[PATH_MAX];
	struct gw_shared *s;

	if (!g)
		return;
	s = g->s;
	atomic_store(&s->running, 0);
	/* Every request still waiting or in progress fails: nothing is left hanging. */
	for (int i = 0; i < GW_SLOTS; i++) {
		struct gw_slot *sl = &s->slots[i];
		uint32_t st = SLOT_READY;

		if (atomic_compare_exchange_strong(&sl->state, &st, SLOT_BUSY) || st == SLOT_BUSY ||
		    st == SLOT_ABANDONED) {
			sl->outlen = 0;
			slot_complete(s, sl, -ESHUTDOWN);
		}
	}
	gw_path(path, sizeof(path), dir, g->rank);
	unlink(path);
	if (g->bell_fd >= 0) {
		close(g->bell_fd);
		unlink(g->bell.sun_path);
	}
	munmap(s, sizeof(*s));
	free(g);
}

static bool pid_gone(int32_t pid)
{
	return pid <= 0 || (kill(pid, 0) && errno == ESRCH);
}

bool gw_slot_orphaned(struct gateway *g, uint32_t slot, struct gw_request *req)
{
	struct gw_slot *sl;

	if (slot >= GW_SLOTS)
		return false;
	sl = &g->s->slots[slot];
	*req = sl->req;
	req->name[sizeof(req->name) - 1] = '\0';
	return atomic_load(&sl->state) == SLOT_ABANDONED || (!sl->detached && pid_gone(sl->pid));
}

void gw_complete(struct gateway *g, uint32_t slot, int status, const void *out, size_t outlen)
{
	struct gw_slot *sl;

	if (slot >= GW_SLOTS)
		return;
	sl = &g->s->slots[slot];
	sl->spilled = 0;
	if (outlen > GW_INLINE && !status && atomic_load(&sl->state) == SLOT_BUSY) {
		char path[SPILL_PATH_MAX];

		status = spill_path(path, sizeof(path), g->dir, g->rank, slot, sl->ticket)
			     ? spill_write(path, out, outlen)
			     : -ENAMETOOLONG;
		sl->spilled = status == 0;
		sl->spill_len = outlen;
		sl->outlen = 0;
		slot_complete(g->s, sl, status);
		/* Nobody will read it after all: the client died, or gave up meanwhile. */
		if (sl->spilled && atomic_load(&sl->state) == SLOT_FREE)
			unlink(path);
		return;
	}
	if (outlen > GW_INLINE)
		outlen = GW_INLINE;
	if (outlen && out != sl->data)
		memcpy(sl->data, out, outlen);
	sl->outlen = (uint32_t)outlen;
	slot_complete(g->s, sl, status);
}

int gw_serve(struct gateway *g, gw_handler fn, void *arg)
{
	struct gw_shared *s = g->s;
	struct gw_slot *ready[GW_SLOTS];
	bool taken[GW_SLOTS] = {false};
	uint64_t now = clock_ns(), newest = 0;
	bool reap = now >= g->next_reap_ns;
	int n = 0;

	if (reap)
		g->next_reap_ns = now + GW_REAP_NS;

	for (int i = 0; i < GW_SLOTS; i++) {
		struct gw_slot *sl = &s->slots[i];
		uint32_t st = atomic_load_explicit(&sl->state, memory_order_acquire);

		if (st == SLOT_READY) {
			ready[n++] = sl;
			taken[i] = true;
			if (sl->ticket > newest)
				newest = sl->ticket;
		} else if (reap && (st == SLOT_CLAIMED || st == SLOT_DONE) && pid_gone(sl->pid) &&
			 atomic_compare_exchange_strong(&sl->state, &st, SLOT_FREE)) {
			atomic_fetch_add(&s->reaped, 1); /* its client died mid-request */
			if (st == SLOT_DONE && sl->spilled) {
				char path[SPILL_PATH_MAX];

				if (spill_path(path, sizeof(path), g->dir, g->rank, (uint32_t)i, sl->ticket))
					unlink(path);
			}
		}
	}
	/*
	 * The scan can pass a slot just before its client marks it ready, then
	 * find the same client's next request in a later slot.  That request's
	 * earlier ones were ready before it took its ticket, so a second look
	 * finds every one the first missed below the newest ticket taken.
	 */
	for (int i = 0; i < GW_SLOTS && n; i++) {
		struct gw_slot *sl = &s->slots[i];

		if (!taken[i] && atomic_load_explicit(&sl->state, memory_order_acquire) == SLOT_READY &&
		    sl->ticket < newest)
			ready[n++] = sl;
	}
	/* Ticket order keeps each client's requests in the order it made them. */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && ready[j]->ticket < ready[j - 1]->ticket; j--) {
			struct gw_slot *t = ready[j];

			ready[j] = ready[j - 1];
			ready[j - 1] = t;
		}
	for (int i = 0; i < n; i++) {
		struct gw_slot *sl = ready[i];
		uint32_t st = SLOT_READY;
		struct gw_request req;
		size_t outlen = 0;

		if (!atomic_compare_exchange_strong(&sl->state, &st, SLOT_BUSY))
			continue; /* the client gave up first */
		req = sl->req;	  /* a private copy: the client could still scribble on the slot */
		req.name[CHAN_NAME_MAX] = '\0';
		uint32_t inlen = sl->inlen > GW_INLINE ? GW_INLINE : sl->inlen;
		int rc = fn(arg, (uint32_t)(sl - s->slots), &req, sl->data, inlen, sl->data, &outlen);

		if (rc == GW_DEFER) {
			uint32_t busy = SLOT_BUSY;

			/* Back in the queue, and the later ones behind it, so tickets keep their order. */
			if (!atomic_compare_exchange_strong(&sl->state, &busy, SLOT_READY))
				slot_complete(s, sl, -ETIMEDOUT); /* abandoned meanwhile: freed */
			return i;
		}
		if (rc == -EINPROGRESS)
			continue; /* gw_complete() finishes it */
		sl->outlen = (uint32_t)(outlen > GW_INLINE ? GW_INLINE : outlen);
		slot_complete(s, sl, rc);
	}
	return n;
}

void gw_set_peer_up(struct gateway *g, uint32_t node, bool up)
{
	if (node < GW_MAX_NODES)
		atomic_store_explicit(&g->s->peer_up[node], up, memory_order_relaxed);
}

void gw_set_peer_stats(struct gateway *g, uint32_t node, const struct gw_peer_stats *st)
{
	struct gw_shared_peer *p;

	if (node >= GW_MAX_NODES)
		return;
	p = &g->s->peers[node];
	atomic_store_explicit(&p->msgs_sent, st->msgs_sent, memory_order_relaxed);
	atomic_store_explicit(&p->bytes_sent, st->bytes_sent, memory_order_relaxed);
	atomic_store_explicit(&p->msgs_recv, st->msgs_recv, memory_order_relaxed);
	atomic_store_explicit(&p->bytes_recv, st->bytes_recv, memory_order_relaxed);
	atomic_store_explicit(&p->retries, st->retries, memory_order_relaxed);
	atomic_store_explicit(&p->last_error, st->last_error, memory_order_relaxed);
	atomic_store_explicit(&p->buffers_sent, st->buffers_sent, memory_order_relaxed);
	atomic_store_explicit(&p->buffer_items_sent, st->buffer_items_sent, memory_order_relaxed);
	atomic_store_explicit(&p->buffers_recv, st->buffers_recv, memory_order_relaxed);
	atomic_store_explicit(&p->large_sent, st->large_sent, memory_order_relaxed);
	atomic_store_explicit(&p->eager_in_use, st->eager_in_use, memory_order_relaxed);
	atomic_store_explicit(&p->waiting, st->waiting, memory_order_relaxed);
	atomic_store_explicit(&p->waiting_hwm, st->waiting_hwm, memory_order_relaxed);
	atomic_store_explicit(&p->agents_per_node, st->agents_per_node, memory_order_relaxed);
}

void gw_set_flow(struct gateway *g, const struct flow_gauge flow[FLOW_NKINDS])
{
	for (int k = 0; k < FLOW_NKINDS; k++) {
		atomic_store_explicit(&g->s->flow[k][0], flow[k].now, memory_order_relaxed);
		atomic_store_explicit(&g->s->flow[k][1], flow[k].hwm, memory_order_relaxed);
		atomic_store_explicit(&g->s->flow[k][2], flow[k].cap, memory_order_relaxed);
	}
}

void gw_set_agent_stats(struct gateway *g, const struct gw_agent_stats *st)
{
	const uint64_t v[GW_AGENT_STATS] = {
	    st->steals,		 st->steal_bytes, st->stolen,	 st->pool_bytes,     st->pool_slots,
	    st->slots_in_use,	 st->slots_hwm,	  st->hugepages, st->hugepages_asked, st->tx_buffers,
	    st->tx_hwm,		 st->frames,	  st->frames_hwm, st->fallbacks,     st->registrations,
	    st->registered_now};

	for (int i = 0; i < GW_AGENT_STATS; i++)
		atomic_store_explicit(&g->s->agent[i], v[i], memory_order_relaxed);
}

int gw_bell_fd(const struct gateway *g)
{
	return g->bell_fd;
}

bool gw_sleep_begin(struct gateway *g)
{
	struct gw_shared *s = g->s;

	/* Pairs with gw_call's seq_cst doorbell increment after READY: one of the two sees the other. */
	atomic_store(&s->agent_sleeping, 1);
	for (int i = 0; i < GW_SLOTS; i++)
		if (atomic_load(&s->slots[i].state) == SLOT_READY) {
			atomic_store(&s->agent_sleeping, 0);
			return false;
		}
	return true;
}

void gw_sleep_end(struct gateway *g)
{
	char buf[64];

	atomic_store(&g->s->agent_sleeping, 0);
	while (g->bell_fd >= 0 && recv(g->bell_fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

void gw_wait_for_work(struct gateway *g, int timeout_us)
{
	struct pollfd pfd = {.fd = g->bell_fd, .events = POLLIN};
	struct timespec ts = {.tv_sec = timeout_us / 1000000, .tv_nsec = (long)(timeout_us % 1000000) * 1000};

	if (!gw_sleep_begin(g))
		return;
	if (g->bell_fd >= 0)
		ppoll(&pfd, 1, &ts, NULL);
	else
		nanosleep(&ts, NULL);
	gw_sleep_end(g);
}

int gw_open(const char *dir, uint32_t rank, struct gateway **out)
{
	char path[PATH_MAX];
	struct gateway *g;
	struct stat st;
	void *map;
	struct gw_ident hdr = {0};
	int fd;

	if (!pidfile_holder(dir, rank))
		return -ENOTCONN;
	gw_path(path, sizeof(path), dir, rank);
	fd = agent_dir_open_own(path, &st);
	if (fd < 0)
		return fd == -ENOENT ? -ENOTCONN : fd;
	if ((size_t)st.st_size >= sizeof(hdr) && pread(fd, &hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr))
		hdr.magic = 0;
	/* An agent of another rdmatool version: its segment's layout is not ours (said apart from damage). */
	if (hdr.magic == GW_MAGIC && hdr.version != GW_VERSION) {
		close(fd);
		return -EPROTONOSUPPORT;
	}
	if ((size_t)st.st_size != sizeof(struct gw_shared) || hdr.magic != GW_MAGIC ||
	    hdr.slot_size != sizeof(struct gw_slot) || hdr.nslots != GW_SLOTS ||
	    agent_id(hdr.rank, hdr.sibling) != rank) {
		close(fd);
		return hdr.magic == 0 ? -ENOTCONN : -EBADMSG; /* a gateway still being made reads as zeros */
	}
	map = mmap(NULL, sizeof(struct gw_shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	g = calloc(1, sizeof(*g));
	if (map == MAP_FAILED || !g) {
		if (map != MAP_FAILED)
			munmap(map, sizeof(struct gw_shared));
		free(g);
		return -ENOMEM;
	}
	g->s = map;
	snprintf(g->dir, sizeof(g->dir), "%s", dir);
	g->rank = rank;
	g->bell_fd =
	    bell_addr(g, dir, rank) ? socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0) : -1;
	*out = g;
	return 0;
}

uint32_t gw_deal_sibling(struct gateway *g)
{
	uint32_t n = g->s->id.siblings;

	if (n <= 1 || n > AGENT_SIBLINGS_MAX)
		return 0;
	return atomic_fetch_add_explicit(&g->s->ports_dealt, 1, memory_order_relaxed) % n;
}

uint32_t gw_siblings(struct gateway *g)
{
	uint32_t n = g->s->id.siblings;

	return n < 1 ? 1 : n > AGENT_SIBLINGS_MAX ? AGENT_SIBLINGS_MAX : n;
}

bool gw_peer_is_up(struct gateway *g, uint32_t node)
{
	return node < GW_MAX_NODES && atomic_load_explicit(&g->s->peer_up[node], memory_order_relaxed) != 0;
}

void gw_close(struct gateway *g)
{
	if (!g)
		return;
	if (g->bell_fd >= 0)
		close(g->bell_fd);
	munmap(g->s, sizeof(*g->s));
	free(g);
}

void gw_info(struct gateway *g, struct gw_info *info)
{
	struct gw_shared *s = g->s;

	memset(info, 0, sizeof(*info));
	info->pid = s->id.pid;
	info->rank = s->id.rank;
	info->nodes = s->id.nodes > GW_MAX_NODES ? GW_MAX_NODES : s->id.nodes;
	info->sibling = s->id.sibling;
	info->siblings = s->id.siblings;
	info->agent.steals = atomic_load(&s->agent[0]);
	info->agent.steal_bytes = atomic_load(&s->agent[1]);
	info->agent.stolen = atomic_load(&s->agent[2]);
	info->agent.pool_bytes = atomic_load(&s->agent[3]);
	info->agent.pool_slots = atomic_load(&s->agent[4]);
	info->agent.slots_in_use = atomic_load(&s->agent[5]);
	info->agent.slots_hwm = atomic_load(&s->agent[6]);
	info->agent.hugepages = atomic_load(&s->agent[7]);
	info->agent.hugepages_asked = atomic_load(&s->agent[8]);
	info->agent.tx_buffers = atomic_load(&s->agent[9]);
	info->agent.tx_hwm = atomic_load(&s->agent[10]);
	info->agent.frames = atomic_load(&s->agent[11]);
	info->agent.frames_hwm = atomic_load(&s->agent[12]);
	info->agent.fallbacks = atomic_load(&s->agent[13]);
	info->agent.registrations = atomic_load(&s->agent[14]);
	info->agent.registered_now = atomic_load(&s->agent[15]);
	info->start_realtime_ns = s->start_realtime_ns;
	memcpy(info->hosts, s->hosts, sizeof(info->hosts));
	for (int i = 0; i < GW_MAX_NODES; i++)
		info->hosts[i][GW_HOST_LEN - 1] = '\0';
	info->requests = atomic_load(&s->requests);
	info->completed = atomic_load(&s->completed);
	info->failed = atomic_load(&s->failed);
	info->eagain = atomic_load(&s->eagain);
	info->reaped = atomic_load(&s->reaped);
	for (uint32_t i = 0; i < info->nodes; i++) {
		const struct gw_shared_peer *p = &s->peers[i];
		struct gw_peer_stats *st = &info->peer_stats[i];
		int32_t err = atomic_load_explicit(&p->last_error, memory_order_relaxed);

		info->peer_up[i] = atomic_load_explicit(&s->peer_up[i], memory_order_relaxed) != 0;
		st->msgs_sent = atomic_load_explicit(&p->msgs_sent, memory_order_relaxed);
		st->bytes_sent = atomic_load_explicit(&p->bytes_sent, memory_order_relaxed);
		st->msgs_recv = atomic_load_explicit(&p->msgs_recv, memory_order_relaxed);
		st->bytes_recv = atomic_load_explicit(&p->bytes_recv, memory_order_relaxed);
		st->retries = atomic_load_explicit(&p->retries, memory_order_relaxed);
		st->buffers_sent = atomic_load_explicit(&p->buffers_sent, memory_order_relaxed);
		st->buffer_items_sent = atomic_load_explicit(&p->buffer_items_sent, memory_order_relaxed);
		st->buffers_recv = atomic_load_explicit(&p->buffers_recv, memory_order_relaxed);
		st->large_sent = atomic_load_explicit(&p->large_sent, memory_order_relaxed);
		st->eager_in_use = atomic_load_explicit(&p->eager_in_use, memory_order_relaxed);
		st->waiting = atomic_load_explicit(&p->waiting, memory_order_relaxed);
		st->waiting_hwm = atomic_load_explicit(&p->waiting_hwm, memory_order_relaxed);
		st->agents_per_node = atomic_load_explicit(&p->agents_per_node, memory_order_relaxed);
		/* The segment is shared: keep only what an errno can be. */
		st->last_error = err > 0 || err < -4095 ? -EPROTO : err;
	}
	for (int k = 0; k < FLOW_NKINDS; k++) {
		info->flow[k].now = atomic_load_explicit(&s->flow[k][0], memory_order_relaxed);
		info->flow[k].hwm = atomic_load_explicit(&s->flow[k][1], memory_order_relaxed);
		info->flow[k].cap = atomic_load_explicit(&s->flow[k][2], memory_order_relaxed);
	}
	for (int i = 0; i < GW_SLOTS; i++)
		info->depth += atomic_load(&s->slots[i].state) != SLOT_FREE;
	info->running = atomic_load(&s->running) && pidfile_holder(g->dir, g->rank);
}

/* getpid() is a system call per request otherwise; a forked child forgets the parent's. */
static _Atomic pid_t cached_pid;

static void forget_pid(void)
{
	atomic_store_explicit(&cached_pid, 0, memory_order_relaxed);
}

static void watch_forks(void)
{
	pthread_atfork(NULL, NULL, forget_pid);
}

static pid_t my_pid(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pid_t pid;

	pthread_once(&once, watch_forks);
	pid = atomic_load_explicit(&cached_pid, memory_order_relaxed);
	if (!pid) {
		pid = getpid();
		atomic_store_explicit(&cached_pid, pid, memory_order_relaxed);
	}
	return pid;
}

static bool agent_alive(struct gateway *g)
{
	return atomic_load(&g->s->running) && pidfile_holder(g->dir, g->rank) == g->s->id.pid;
}

bool gw_alive(struct gateway *g)
{
	uint64_t now;

	if (!atomic_load(&g->s->running))
		return false;
	now = clock_ns();
	if (now < g->alive_until_ns)
		return true;
	if (!agent_alive(g))
		return false;
	g->alive_until_ns = now + GW_ALIVE_NS;
	return true;
}

/*
 * How long a client polls for an answer from another node: twice the usual
 * wait, when that is short enough to be worth a CPU; else nothing.  Spinning
 * skips the wake-up, which on a busy machine costs more than the answer
 * (measured: the woken client waited 50-90 us for a CPU).
 */
static uint64_t remote_spin_ns(struct gateway *g)
{
	uint64_t usual = atomic_load_explicit(&g->answer_ns, memory_order_relaxed);

	if (usual > GW_REMOTE_SPIN_MAX_NS)
		return 0;
	return usual * 2 < GW_REMOTE_SPIN_MAX_NS ? usual * 2 : GW_REMOTE_SPIN_MAX_NS;
}

/* One answer's wait into the running average (weight 1/4; one long wait counts as a few short ones). */
static void remote_answer_took(struct gateway *g, uint64_t ns)
{
	uint64_t usual = atomic_load_explicit(&g->answer_ns, memory_order_relaxed);

	if (ns > 4 * GW_REMOTE_SPIN_MAX_NS)
		ns = 4 * GW_REMOTE_SPIN_MAX_NS;
	atomic_store_explicit(&g->answer_ns, usual - usual / 4 + ns / 4, memory_order_relaxed);
}

int gw_post(struct gateway *g, const struct gw_request *req, const void *in, size_t inlen, bool wait,
	    struct gw_posted *p)
{
	struct gw_shared *s = g->s;
	struct gw_slot *sl = NULL;
	pid_t me = my_pid();
	uint64_t start = (uint64_t)me * 2654435761u;

	if (inlen > GW_INLINE)
		return -EMSGSIZE;
	if (!atomic_load(&s->running))
		return -ENOTCONN;
	for (int i = 0; i < GW_SLOTS && !sl; i++) {
		struct gw_slot *cand = &s->slots[(start + (uint64_t)i) % GW_SLOTS];
		uint32_t free_state = SLOT_FREE;

		/* A plain look first: a compare-and-swap on each busy slot takes its line from the agent. */
		if (atomic_load_explicit(&cand->state, memory_order_relaxed) == SLOT_FREE &&
		    atomic_compare_exchange_strong(&cand->state, &free_state, SLOT_CLAIMED))
			sl = cand;
	}
	if (!sl) {
		atomic_fetch_add(&s->eagain, 1);
		return -EAGAIN;
	}
	sl->pid = me;
	sl->req = *req;
	sl->detached = !wait;
	atomic_store(&sl->sleeping, 0);
	sl->status = 0;
	sl->inlen = (uint32_t)inlen;
	sl->outlen = 0;
	sl->spilled = 0;
	if (inlen)
		memcpy(sl->data, in, inlen);
	sl->ticket = atomic_fetch_add(&s->next_ticket, 1);
	atomic_fetch_add(&s->requests, 1);
	atomic_store_explicit(&sl->state, SLOT_READY, memory_order_release);
	atomic_fetch_add(&s->doorbell, 1);
	if (atomic_load(&s->agent_sleeping))
		bell_ring(g);
	p->slot = (uint32_t)(sl - s->slots);
	p->op = req->op;
	p->mode = req->mode;
	p->timeout_ms = req->timeout_ms;
	return 0;
}

int gw_wait(struct gateway *g, const struct gw_posted *p, void *out, size_t cap, size_t *outlen)
{
	struct gw_shared *s = g->s;
	struct gw_slot *sl = &s->slots[p->slot % GW_SLOTS];
	uint64_t deadline;

	deadline = p->timeout_ms < 0 ? 0 : clock_ns() + ((uint64_t)p->timeout_ms + 1000) * 1000000ull;
	/* Checking the agent costs system calls: only once a wait of 100 ms passed without an answer. */
	bool check = false;
	bool remote_answer = p->op != GW_OP_SEND || p->mode > AGENT_SEND_BUFFERED;
	int spins = 0;
	uint64_t wait_start = clock_ns(), spin_ns = remote_spin_ns(g);

	for (;;) {
		uint32_t st = atomic_load_explicit(&sl->state, memory_order_acquire);

		if (st == SLOT_DONE) {
			int rc = sl->status;
			size_t n = sl->outlen > cap ? cap : sl->outlen;

			if (sl->spilled) {
				char path[SPILL_PATH_MAX];
				uint64_t len = sl->spill_len;

				spill_path(path, sizeof(path), g->dir, g->rank, (uint32_t)(sl - s->slots),
					   sl->ticket);
				rc = spill_read(path, out, cap, len);
				if (!rc && len > cap)
					rc = -EMSGSIZE;
				n = 0;
				if (outlen)
					*outlen = (size_t)len;
			} else if (outlen) {
				*outlen = sl->outlen;
			}
			if (n)
				memcpy(out, sl->data, n);
			atomic_store_explicit(&sl->state, SLOT_FREE, memory_order_release);
			if (remote_answer)
				remote_answer_took(g, clock_ns() - wait_start);
			return rc;
		}
		uint64_t now = clock_ns();
		/* Wake every 100 ms to check the agent is still there. */
		uint64_t until = now + 100000000ull;
		bool dead = check && !agent_alive(g), late = deadline && now >= deadline;

		if (dead || late) {
			uint32_t ready = SLOT_READY, busy = SLOT_BUSY;

			if (atomic_compare_exchange_strong(&sl->state, &ready, SLOT_FREE))
				return dead ? -ENOTCONN : -ETIMEDOUT;
			/*
			 * A receive the agent took on stays: its answer may carry a message already taken
			 * from the channel, which giving up would lose.  The agent answers by the request's
			 * own timeout, or fails it when the link goes down.
			 */
			if (!dead && p->op == GW_OP_RECV) {
				deadline = 0;
				continue;
			}
			if (atomic_compare_exchange_strong(&sl->state, &busy, SLOT_ABANDONED))
				return dead ? -ECONNABORTED : -ETIMEDOUT;
			continue; /* it just became DONE */
		}
		if (deadline && deadline < until)
			until = deadline;
		/*
		 * The local agent alone usually answers within a few of its passes, another node
		 * within the usual wait: yield meanwhile, and sleep only when that is over.  A
		 * yield that gave the CPU to another thread says this CPU is shared: polling on it
		 * only takes turns with the threads that make the answer, so sleep instead.
		 */
		if (remote_answer ? now - wait_start < spin_ns : spins++ < GW_CALL_SPINS) {
			sched_yield();
			if (remote_answer && clock_ns() - now > GW_YIELD_SHARED_NS)
				spin_ns = 0;
			continue;
		}
		atomic_store(&sl->sleeping, 1);
		if (atomic_load(&sl->state) != st)
			continue;
		check = futex_wait_until(&sl->state, st, until) == -ETIMEDOUT || !atomic_load(&s->running);
	}
}

int gw_call(struct gateway *g, const struct gw_request *req, const void *in, size_t inlen, void *out,
	    size_t cap, size_t *outlen, bool wait)
{
	struct gw_posted p;
	int rc = gw_post(g, req, in, inlen, wait, &p);

	return rc || !wait ? rc : gw_wait(g, &p, out, cap, outlen);
}
