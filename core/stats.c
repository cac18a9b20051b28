/* SPDX-License-Identifier: MIT */
/* The writer side of the stats segment: create, publish entries, remove at exit. */
#include "stats.h"
#include "stats_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static struct {
	pthread_mutex_t lock; /* the rare paths only: open, add, close */
	struct stats_header *hdr;
	size_t len;
	pid_t owner; /* the process that created hdr; a forked child is not it */
	bool atexit_done;
	char path[PATH_MAX];
} seg = { .lock = PTHREAD_MUTEX_INITIALIZER };

const char *stats_segment_dir(void)
{
	const char *dir = getenv(STATS_ENV_DIR);

	return dir && *dir ? dir : STATS_DEFAULT_DIR;
}

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
 * so a reader never sees a half-written header.  A segment left by an
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
	    snprintf(tmp, sizeof(tmp), "%s/.%s%d.tmp", dir, STATS_FILE_PREFIX, (int)pid) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)len) < 0) {
		err = -errno;
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
	if (err)
		return err;
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

const char *stats_segment_path(void)
{
	const char *path;

	pthread_mutex_lock(&seg.lock);
	path = seg.hdr && seg.owner == getpid() ? seg.path : NULL;
	pthread_mutex_unlock(&seg.lock);
	return path;
}

struct stats_entry *stats_entry_add(const char *name, enum stats_kind kind, int stripe)
{
	struct stats_entry *e = NULL;
	uint32_t n;

	pthread_mutex_lock(&seg.lock);
	if (open_locked(NULL))
		goto out;
	/* Adds are serialised by seg.lock, so only readers race with this. */
	n = atomic_load_explicit(&seg.hdr->nentries, memory_order_relaxed);
	if (n >= seg.hdr->max_entries)
		goto out;
	e = &segment_entries(seg.hdr)[n];
	memset(e, 0, sizeof(*e));
	snprintf(e->name, sizeof(e->name), "%s", name ? name : "");
	e->kind = kind < STATS_NKINDS ? kind : STATS_KIND_OTHER;
	e->stripe = stripe;
	/* Release: a reader that sees n + 1 entries sees this one initialised. */
	atomic_store_explicit(&seg.hdr->nentries, n + 1, memory_order_release);
out:
	pthread_mutex_unlock(&seg.lock);
	return e;
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
