/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The gateway between clients and their local agent (gateway.h): its mapping, file names, spill files. */
#include "core/chan/gateway_impl.h"

void gw_path(char *path, size_t len, const char *dir, uint32_t rank)
{
	char id[32];

	agent_id_text(rank, id, sizeof(id));
	snprintf(path, len, "%s/%s%s", dir, GW_FILE_PREFIX, id);
}

bool gw_spill_path(char *path, size_t len, const char *dir, uint32_t rank, uint32_t slot, uint64_t ticket)
{
	char id[32];
	int n;

	agent_id_text(rank, id, sizeof(id));
	n = snprintf(path, len, "%s/%s%s.spill.%u.%llu", dir, GW_FILE_PREFIX, id, slot,
		     (unsigned long long)ticket);
	return n > 0 && (size_t)n < len;
}

/* Writes the answer to its spill file (owner-only, never an existing file); 0 or a negative errno. */
int gw_spill_write(const char *path, const void *data, size_t len)
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
int gw_spill_read(const char *path, void *out, size_t cap, uint64_t len)
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

/*
 * Reserves what the gateway can ever hold, so a full file system fails the
 * agent's start (-ENOSPC) rather than a client or the agent writing a slot
 * (SIGBUS): the header, the large slots whole, and of each other slot its
 * header and the GW_SMALL_INLINE bytes it may carry.  The rest stays sparse.
 */
static int gw_reserve(int fd)
{
	uint64_t large_end =
	    offsetof(struct gw_shared, slots) + (uint64_t)GW_LARGE_SLOTS * sizeof(struct gw_slot);
	int rc = agent_dir_reserve(fd, 0, large_end);

	for (uint32_t i = GW_LARGE_SLOTS; !rc && i < GW_SLOTS; i++)
		rc = agent_dir_reserve(
		    fd, offsetof(struct gw_shared, slots) + (uint64_t)i * sizeof(struct gw_slot),
		    offsetof(struct gw_slot, data) + GW_SMALL_INLINE);
	return rc;
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
	int rc = ftruncate(fd, sizeof(*s)) ? -errno : gw_reserve(fd);

	if (rc) {
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
	g->deferred = true; /* the first pass scans whatever the slots hold */
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
	info->agent.copied = atomic_load(&s->agent[16]);
	info->agent.nic_bytes = atomic_load(&s->agent[17]);
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
