/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The writer side of the stats segment: create, publish entries, remove at exit. */
#include "core/stats/stats.h"
#include "core/stats/stats_path.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static struct {
	pthread_mutex_t lock; /* the rare paths only: open, add, close */
	struct stats_header *hdr;
	size_t len;
	pid_t owner; /* the process that created hdr; a forked child is not it */
	bool atexit_done;
	pid_t problem_pid; /* the process whose failure problem tells (a forked child has its own) */
	bool problem_told; /* stats_segment_problem() handed it out already */
	char problem[PATH_MAX + 160];
	char path[PATH_MAX];
} seg = {.lock = PTHREAD_MUTEX_INITIALIZER};

static size_t segment_size(void)
{
	return sizeof(struct stats_header) + (size_t)STATS_MAX_ENTRIES * sizeof(struct stats_entry);
}

static struct stats_entry *segment_entries(struct stats_header *hdr)
{
	return (struct stats_entry *)((char *)hdr + sizeof(*hdr));
}

/* RDMATOOL_STATS: unset, "" or "1" enable, "0" disables, anything else is an error. */
static int stats_enabled(void)
{
	const char *v = getenv(STATS_ENV_DISABLE);

	if (!v || !*v || !strcmp(v, "1"))
		return 0;
	if (!strcmp(v, "0"))
		return -ECANCELED;
	return -EINVAL;
}

int stats_env_check(char *msg, size_t msglen)
{
	if (stats_enabled() != -EINVAL)
		return 0;
	snprintf(msg, msglen,
		 "%s='%s' is invalid; use 1 (publish counters for cqstat, the default) or 0 (off)",
		 STATS_ENV_DISABLE, getenv(STATS_ENV_DISABLE));
	return -EINVAL;
}

static void self_comm(char *buf, size_t len)
{
	FILE *f = fopen("/proc/self/comm", "re");

	snprintf(buf, len, "rdmatool");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

static void remove_at_exit(void)
{
	pthread_mutex_lock(&seg.lock);
	/*
	 * Unlink only: other threads may still be bumping counters while exit
	 * handlers run, so the mapping stays until the process is gone.
	 */
	if (seg.hdr && seg.owner == getpid())
		unlink(seg.path);
	pthread_mutex_unlock(&seg.lock);
}

static void fill_header(struct stats_header *hdr, const char *comm)
{
	struct timespec ts;
	uint64_t starttime = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	stats_proc_starttime(getpid(), &starttime);
	hdr->version = STATS_VERSION;
	hdr->header_size = sizeof(*hdr);
	hdr->entry_size = sizeof(struct stats_entry);
	hdr->max_entries = STATS_MAX_ENTRIES;
	atomic_init(&hdr->nentries, 0);
	hdr->pid = getpid();
	hdr->start_realtime_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	hdr->proc_starttime = starttime;
	if (comm)
		snprintf(hdr->comm, sizeof(hdr->comm), "%s", comm);
	else
		self_comm(hdr->comm, sizeof(hdr->comm));
	hdr->magic = STATS_MAGIC;
}

/*
 * The segment is built under a hidden temporary name and renamed into place,
 * so a reader never sees a half-written header.  The temporary name is
 * random and created with O_EXCL (mkostemp): another user who guessed it
 * cannot hand this process a file of theirs.  Mode 0644: readers need to
 * read it, nobody else may write or truncate it.  A segment left by an
 * earlier process with the same pid is replaced.
 */
static int create_segment(const char *comm)
{
	char tmp[PATH_MAX];
	const char *dir = stats_segment_dir();
	size_t len = segment_size();
	pid_t pid = getpid();
	struct stats_header *hdr;
	int fd, err;

	if (stats_pid_path(pid, seg.path, sizeof(seg.path)) < 0 ||
	    snprintf(tmp, sizeof(tmp), "%s/.%s%d.XXXXXX", dir, STATS_FILE_PREFIX, (int)pid) >=
		(int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, 0644) < 0 || ftruncate(fd, (off_t)len) < 0) {
		err = -errno;
		goto fail;
	}
	/*
	 * Every page reserved now: on a full tmpfs (any user can fill /dev/shm)
	 * creation fails with ENOSPC here, instead of a SIGBUS at the first
	 * counter that lands on a page the file system cannot give.
	 */
	err = posix_fallocate(fd, 0, (off_t)len);
	if (err) {
		err = -err;
		goto fail;
	}
	hdr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (hdr == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	fill_header(hdr, comm);
	if (rename(tmp, seg.path) < 0) {
		err = -errno;
		munmap(hdr, len);
		goto fail;
	}
	close(fd);
	seg.hdr = hdr;
	seg.len = len;
	seg.owner = pid;
	return 0;
fail:
	close(fd);
	unlink(tmp);
	return err;
}

/* The first failure to create a segment, told once per process (a forked child has its own). */
static void remember_problem(int err)
{
	pid_t pid = getpid();

	if (seg.problem_pid == pid)
		return;
	snprintf(seg.problem, sizeof(seg.problem),
		 "no stats segment in %s (%s%s): cqstat will not show this process; it runs on without "
		 "(RDMATOOL_STATS_DIR names another directory)",
		 stats_segment_dir(), strerror(-err), err == -ENOSPC ? ": the file system is full" : "");
	seg.problem_pid = pid;
	seg.problem_told = false;
}

static int open_locked(const char *comm)
{
	int err = stats_enabled();

	if (err)
		return err;
	if (seg.hdr && seg.owner == getpid())
		return 0;
	/*
	 * In a forked child seg.hdr is the parent's segment; entries the child
	 * inherited still point into it, so it stays mapped.
	 */
	seg.hdr = NULL;
	err = create_segment(comm);
	if (err) {
		remember_problem(err);
		return err;
	}
	if (!seg.atexit_done)
		seg.atexit_done = atexit(remove_at_exit) == 0;
	return 0;
}

int stats_segment_open(const char *comm)
{
	int err;

	pthread_mutex_lock(&seg.lock);
	err = open_locked(comm);
	pthread_mutex_unlock(&seg.lock);
	return err;
}

void stats_segment_close(void)
{
	pthread_mutex_lock(&seg.lock);
	if (seg.hdr && seg.owner == getpid()) {
		unlink(seg.path);
		munmap(seg.hdr, seg.len);
	}
	seg.hdr = NULL;
	pthread_mutex_unlock(&seg.lock);
}

const char *stats_segment_problem(void)
{
	const char *why = NULL;

	pthread_mutex_lock(&seg.lock);
	if (seg.problem_pid == getpid() && !seg.problem_told) {
		seg.problem_told = true;
		why = seg.problem;
	}
	pthread_mutex_unlock(&seg.lock);
	return why;
}

const char *stats_segment_path(void)
{
	const char *path;

	pthread_mutex_lock(&seg.lock);
	path = seg.hdr && seg.owner == getpid() ? seg.path : NULL;
	pthread_mutex_unlock(&seg.lock);
	return path;
}

/*
 * Memory ordering between a writer rewriting a slot and a reader copying it
 * (stats_entry_copy() in stats_reader.c), a seqlock with per-field ordering:
 *
 * - Writers (add, remove) run under seg.lock, so a remove's "seq = even"
 *   happens-before the next add's rewrite of that slot.
 * - add writes every field a reader copies (name, kind, stripe, created,
 *   counters) with release stores, then publishes "seq = odd" with release.
 *   The reader loads seq (acquire), the fields (acquire), then seq again.
 * - A reader that saw seq == G (odd, acquire) sees generation G's fields or
 *   newer ones: G's field stores came before the release of G.
 * - A reader whose field load returns a newer generation's value (or a
 *   counter bumped by its owner: relaxed increments continue the release
 *   sequence of add's store of 0, and stats_set() stores with release)
 *   synchronizes with that release
 *   store, so the "seq = even" that preceded it happens-before the reader's
 *   second seq load, which therefore cannot return G: the copy is dropped.
 * So an accepted copy never mixes two generations.  seq wraps after 2^31
 * reuses of one slot, far more than can happen during one copy.
 *
 * Release/acquire on each field instead of the textbook fences: GCC's
 * ThreadSanitizer does not model atomic_thread_fence (and warns about it),
 * and on x86 these are plain moves anyway; neither side is on a data path.
 * Every access is atomic, so an in-process reader has no data race.
 */
static void fill_entry(struct stats_entry *e, const char *name, enum stats_kind kind, int stripe)
{
	uint64_t words[STATS_NAME_LEN / sizeof(uint64_t)] = {0};
	uint64_t *name_words = (uint64_t *)(void *)e->name;
	struct timespec ts;

	snprintf((char *)words, sizeof(words), "%s", name ? name : "");
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		__atomic_store_n(&name_words[i], words[i], __ATOMIC_RELEASE);
	__atomic_store_n(&e->kind, (uint32_t)(kind < STATS_NKINDS ? kind : STATS_KIND_OTHER),
			 __ATOMIC_RELEASE);
	__atomic_store_n(&e->stripe, (int32_t)stripe, __ATOMIC_RELEASE);
	clock_gettime(CLOCK_REALTIME, &ts);
	__atomic_store_n(&e->created_realtime_ns, (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec,
			 __ATOMIC_RELEASE);
	for (int c = 0; c < STATS_NCOUNTERS; c++)
		atomic_store_explicit(&e->counter[c], 0, memory_order_release);
}

/* A retired slot below n to reuse, or NULL.  Called under seg.lock. */
static struct stats_entry *retired_slot_locked(uint32_t n)
{
	struct stats_entry *entries = segment_entries(seg.hdr);

	for (uint32_t i = 0; i < n; i++)
		if (!(atomic_load_explicit(&entries[i].seq, memory_order_relaxed) & 1))
			return &entries[i];
	return NULL;
}

struct stats_entry *stats_entry_add(const char *name, enum stats_kind kind, int stripe)
{
	struct stats_entry *e = NULL;
	uint32_t n, seq;

	pthread_mutex_lock(&seg.lock);
	if (open_locked(NULL))
		goto out;
	/* Adds and removes are serialised by seg.lock, so only readers race with this. */
	n = atomic_load_explicit(&seg.hdr->nentries, memory_order_relaxed);
	e = retired_slot_locked(n);
	if (!e && n < seg.hdr->max_entries)
		e = &segment_entries(seg.hdr)[n];
	if (!e)
		goto out;
	seq = atomic_load_explicit(&e->seq, memory_order_relaxed);
	fill_entry(e, name, kind, stripe);
	/* Release: a reader that sees the odd seq sees the fields just written. */
	atomic_store_explicit(&e->seq, seq + 1, memory_order_release);
	/* Release: a reader that sees n + 1 entries sees the new slot's seq. */
	if (e == &segment_entries(seg.hdr)[n])
		atomic_store_explicit(&seg.hdr->nentries, n + 1, memory_order_release);
out:
	pthread_mutex_unlock(&seg.lock);
	return e;
}

void stats_entry_remove(struct stats_entry *e)
{
	struct stats_entry *entries;
	uint32_t seq;

	if (!e)
		return;
	pthread_mutex_lock(&seg.lock);
	/*
	 * Only this process's own segment: a forked child still holds the
	 * parent's entries, and retiring them would hide the parent's counters.
	 */
	if (!seg.hdr || seg.owner != getpid())
		goto out;
	entries = segment_entries(seg.hdr);
	if (e < entries || e >= entries + seg.hdr->max_entries)
		goto out;
	seq = atomic_load_explicit(&e->seq, memory_order_relaxed);
	if (seq & 1)
		atomic_store_explicit(&e->seq, seq + 1, memory_order_release);
out:
	pthread_mutex_unlock(&seg.lock);
}

enum stats_error_kind stats_error_kind_of_wc(enum ibv_wc_status status)
{
	switch (status) {
	case IBV_WC_LOC_LEN_ERR:
	case IBV_WC_LOC_QP_OP_ERR:
	case IBV_WC_LOC_EEC_OP_ERR:
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_LOC_ACCESS_ERR:
	case IBV_WC_LOC_RDD_VIOL_ERR:
	case IBV_WC_MW_BIND_ERR:
	case IBV_WC_BAD_RESP_ERR:
		return STATS_ERR_LOCAL;
	case IBV_WC_REM_INV_REQ_ERR:
	case IBV_WC_REM_ACCESS_ERR:
	case IBV_WC_REM_OP_ERR:
	case IBV_WC_REM_INV_RD_REQ_ERR:
	case IBV_WC_REM_ABORT_ERR:
	case IBV_WC_INV_EECN_ERR:
	case IBV_WC_INV_EEC_STATE_ERR:
		return STATS_ERR_REMOTE;
	case IBV_WC_WR_FLUSH_ERR:
		return STATS_ERR_FLUSH;
	case IBV_WC_RETRY_EXC_ERR:
	case IBV_WC_RNR_RETRY_EXC_ERR:
	case IBV_WC_RESP_TIMEOUT_ERR:
		return STATS_ERR_TIMEOUT;
	default:
		return STATS_ERR_OTHER;
	}
}
