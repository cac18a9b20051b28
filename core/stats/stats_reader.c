/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The reader side of the stats segment: list, map read-only, validate, copy. */
#include "core/stats/stats_reader.h"
#include "core/util/clock.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char *stats_read_strerror(int status)
{
	switch (status) {
	case STATS_READ_OK:
		return "ok";
	case STATS_READ_NOENT:
		return "no stats segment";
	case STATS_READ_IO:
		return "cannot read the segment file";
	case STATS_READ_TRUNCATED:
		return "segment file is truncated";
	case STATS_READ_BAD_MAGIC:
		return "not an rdmatool stats segment";
	case STATS_READ_BAD_VERSION:
		return "segment written by another rdmatool version";
	case STATS_READ_BAD_LAYOUT:
		return "segment layout is inconsistent";
	case STATS_READ_NOT_FILE:
		return "not a regular file (a FIFO, device, directory or symlink)";
	case STATS_READ_BAD_OWNER:
		return "not written by the process's user";
	}
	return "unknown stats error";
}

/*
 * The layout checks, all against the file size, before any entry is read.
 * The header is copied first so that a concurrent writer of a corrupt file
 * cannot change a field between its check and its use.
 */
static int validate(const struct stats_header *mapped, size_t file_len, pid_t expect_pid)
{
	struct stats_header h;

	if (file_len < sizeof(h.magic) + sizeof(h.version))
		return STATS_READ_TRUNCATED;
	memcpy(&h.magic, &mapped->magic, sizeof(h.magic));
	if (h.magic != STATS_MAGIC)
		return STATS_READ_BAD_MAGIC;
	memcpy(&h.version, &mapped->version, sizeof(h.version));
	if (h.version != STATS_VERSION)
		return STATS_READ_BAD_VERSION;
	if (file_len < sizeof(h))
		return STATS_READ_TRUNCATED;
	memcpy(&h, mapped, sizeof(h));
	if (h.header_size != sizeof(struct stats_header) || h.entry_size != sizeof(struct stats_entry) ||
	    h.max_entries == 0 || h.max_entries > STATS_MAX_ENTRIES || h.pid <= 0 ||
	    (expect_pid && h.pid != expect_pid))
		return STATS_READ_BAD_LAYOUT;
	if (file_len < (size_t)h.header_size + (size_t)h.max_entries * h.entry_size)
		return STATS_READ_TRUNCATED;
	return STATS_READ_OK;
}

/*
 * The header as it was when validated, read with pread into a private copy:
 * nothing later reads a size or count from the live file, which its owner
 * (maybe another user) may rewrite at any time.
 */
static int read_header(int fd, size_t file_len, pid_t expect_pid, struct stats_header *h)
{
	ssize_t got;

	memset(h, 0, sizeof(*h));
	got = pread(fd, h, sizeof(*h), 0);
	if (got < 0)
		return STATS_READ_IO;
	/* A short read means a short file: validate what was read; else the file's size bounds the entries.
	 */
	return validate(h, (size_t)got < sizeof(*h) ? (size_t)got : file_len, expect_pid);
}

int stats_reader_open_path(struct stats_reader *r, const char *path, pid_t expect_pid)
{
	struct stats_header h;
	struct stat st;
	void *map;
	int status;

	memset(r, 0, sizeof(*r));
	/* O_NONBLOCK: a FIFO planted under a segment's name must not hang the reader in open(). */
	r->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (r->fd < 0)
		return errno == ENOENT	? STATS_READ_NOENT
		       : errno == ELOOP ? STATS_READ_NOT_FILE
					: STATS_READ_IO;
	if (fstat(r->fd, &st) < 0) {
		status = STATS_READ_IO;
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		status = STATS_READ_NOT_FILE;
		goto fail;
	}
	status = read_header(r->fd, (size_t)st.st_size, expect_pid, &h);
	if (status != STATS_READ_OK)
		goto fail;
	/* Only what the validated header describes is mapped, never more than the file holds. */
	r->len = (size_t)h.header_size + (size_t)h.max_entries * h.entry_size;
	map = mmap(NULL, r->len, PROT_READ, MAP_SHARED, r->fd, 0);
	if (map == MAP_FAILED) {
		status = STATS_READ_IO;
		goto fail;
	}
	r->hdr = map;
	r->pid = h.pid;
	r->max_entries = h.max_entries;
	r->uid = st.st_uid;
	return STATS_READ_OK;
fail:
	close(r->fd);
	r->fd = -1;
	return status;
}

/* The uid that owns a running process, or -1 when there is none. */
static long process_uid(pid_t pid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	return stat(path, &st) == 0 ? (long)st.st_uid : -1;
}

int stats_reader_open(struct stats_reader *r, pid_t pid)
{
	char path[PATH_MAX];
	long owner;
	int status;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	if (pid <= 0 || stats_pid_path(pid, path, sizeof(path)) < 0)
		return STATS_READ_NOENT;
	status = stats_reader_open_path(r, path, pid);
	if (status != STATS_READ_OK)
		return status;
	/* A segment for a running process that its user did not write is someone else's forgery. */
	owner = process_uid(pid);
	if (owner >= 0 && (uid_t)owner != r->uid) {
		stats_reader_close(r);
		return STATS_READ_BAD_OWNER;
	}
	return STATS_READ_OK;
}

void stats_reader_close(struct stats_reader *r)
{
	if (r->hdr)
		munmap((void *)r->hdr, r->len);
	if (r->fd >= 0)
		close(r->fd);
	r->hdr = NULL;
	r->fd = -1;
}

/*
 * The segment's owner may truncate the file while it is mapped here, and a
 * read of a page past the new end raises SIGBUS.  The copy runs with a
 * SIGBUS handler that jumps back out, so that case reads as "truncated".
 * Process-wide while it runs: not for concurrent snapshots from several
 * threads (cqstat takes one at a time).
 */
static __thread sigjmp_buf *copy_escape;

static void on_sigbus(int sig)
{
	if (copy_escape)
		siglongjmp(*copy_escape, 1);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void copy_live(const struct stats_reader *r, struct stats_snapshot *s, uint32_t n)
{
	const struct stats_header *h = r->hdr;
	const struct stats_entry *entries = (const struct stats_entry *)(const void *)(h + 1);

	memcpy(s->comm, (const char *)h->comm, STATS_COMM_LEN);
	s->comm[STATS_COMM_LEN] = '\0';
	s->start_realtime_ns = h->start_realtime_ns;
	s->proc_starttime = h->proc_starttime;
	for (uint32_t i = 0; i < n; i++) {
		struct stats_entry_snapshot *out = &s->entry[s->nentries];

		if (stats_entry_copy(&entries[i], out)) {
			out->slot = i;
			s->nentries++;
		}
	}
}

int stats_reader_snapshot(const struct stats_reader *r, struct stats_snapshot *s)
{
	struct sigaction guard = {.sa_handler = on_sigbus}, saved;
	sigjmp_buf escape;
	struct stat st;
	uint32_t n;
	int status = STATS_READ_OK;

	/* A file shrunk after mapping would fault on access: check again (the guard covers the race). */
	if (fstat(r->fd, &st) < 0)
		return STATS_READ_IO;
	if ((size_t)st.st_size < r->len)
		return STATS_READ_TRUNCATED;
	s->taken_ns = clock_ns();
	s->pid = r->pid;
	s->nentries = 0;
	sigemptyset(&guard.sa_mask);
	sigaction(SIGBUS, &guard, &saved);
	if (sigsetjmp(escape, 1) == 0) {
		copy_escape = &escape;
		/* Acquire pairs with the writer's release: entries below n are initialised.  n is bounded by
		 * the validated copy of the header, never by the live one. */
		n = atomic_load_explicit(&((struct stats_header *)r->hdr)->nentries, memory_order_acquire);
		if (n > r->max_entries)
			status = STATS_READ_BAD_LAYOUT;
		else
			copy_live(r, s, n);
	} else {
		status = STATS_READ_TRUNCATED;
		s->nentries = 0;
	}
	copy_escape = NULL;
	sigaction(SIGBUS, &saved, NULL);
	return status;
}

/* A slot rewritten this many times during one copy is skipped for this sample. */
#define COPY_TRIES 4

bool stats_entry_copy(const struct stats_entry *e, struct stats_entry_snapshot *out)
{
	const uint64_t *name_words = (const uint64_t *)(const void *)e->name;
	uint64_t words[STATS_NAME_LEN / sizeof(uint64_t)];

	for (int t = 0; t < COPY_TRIES; t++) {
		uint32_t seq = atomic_load_explicit((_Atomic uint32_t *)&e->seq, memory_order_acquire);
		uint32_t kind;

		if (!(seq & 1))
			return false;
		/* Acquire on every field: see the ordering argument in core/stats/stats.c. */
		for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
			words[i] = __atomic_load_n(&name_words[i], __ATOMIC_ACQUIRE);
		kind = __atomic_load_n(&e->kind, __ATOMIC_ACQUIRE);
		out->stripe = __atomic_load_n(&e->stripe, __ATOMIC_ACQUIRE);
		out->created_realtime_ns = __atomic_load_n(&e->created_realtime_ns, __ATOMIC_ACQUIRE);
		for (int c = 0; c < STATS_NCOUNTERS; c++)
			out->counter[c] =
			    atomic_load_explicit((_Atomic uint64_t *)&e->counter[c], memory_order_acquire);
		if (atomic_load_explicit((_Atomic uint32_t *)&e->seq, memory_order_relaxed) != seq)
			continue;
		memcpy(out->name, words, STATS_NAME_LEN);
		out->name[STATS_NAME_LEN] = '\0';
		out->kind = kind < STATS_NKINDS ? (enum stats_kind)kind : STATS_KIND_OTHER;
		out->seq = seq;
		return true;
	}
	return false;
}

enum stats_liveness stats_process_liveness(pid_t pid, uint64_t proc_starttime)
{
	uint64_t now_start;

	if (pid <= 0 || (kill(pid, 0) < 0 && errno == ESRCH))
		return STATS_DEAD;
	if (proc_starttime && stats_proc_starttime(pid, &now_start) == 0 && now_start != proc_starttime)
		return STATS_PID_REUSED;
	return STATS_LIVE;
}

/* "rdmatool-stats.<digits>" and nothing else; returns the pid or 0. */
static pid_t pid_of_name(const char *name)
{
	const size_t plen = strlen(STATS_FILE_PREFIX);
	char *end;
	long v;

	if (strncmp(name, STATS_FILE_PREFIX, plen) || !isdigit((unsigned char)name[plen]))
		return 0;
	errno = 0;
	v = strtol(name + plen, &end, 10);
	if (errno || *end || v <= 0 || v > INT_MAX)
		return 0;
	return (pid_t)v;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

int stats_list_pids(pid_t **pids, size_t *n)
{
	DIR *d = opendir(stats_segment_dir());
	struct dirent *de;
	size_t cap = 0;
	pid_t *out = NULL;

	*pids = NULL;
	*n = 0;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		pid_t pid = pid_of_name(de->d_name);

		if (!pid)
			continue;
		if (*n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			pid_t *grown = realloc(out, ncap * sizeof(*out));

			if (!grown) {
				free(out);
				closedir(d);
				*n = 0;
				return -ENOMEM;
			}
			out = grown;
			cap = ncap;
		}
		out[(*n)++] = pid;
	}
	closedir(d);
	if (*n)
		qsort(out, *n, sizeof(*out), cmp_pid);
	*pids = out;
	return 0;
}

int stats_segment_remove(pid_t pid)
{
	char path[PATH_MAX], name[64];
	struct stats_header h;
	struct stat st, again;
	int fd, dirfd, err = 0;

	if (stats_pid_path(pid, path, sizeof(path)) < 0)
		return -ENAMETOOLONG;
	snprintf(name, sizeof(name), "%s%d", STATS_FILE_PREFIX, (int)pid);
	dirfd = open(stats_segment_dir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return -errno;
	/* Never through a symlink, never a FIFO's open, only a segment of ours. */
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		err = errno == ELOOP ? -EPERM : -errno;
		goto out;
	}
	if (fstat(fd, &st) < 0)
		err = -errno;
	else if (!S_ISREG(st.st_mode) || st.st_uid != geteuid())
		err = -EPERM;
	else if (read_header(fd, (size_t)st.st_size, pid, &h) != STATS_READ_OK)
		err = -EINVAL;
	/* The name must still be the file that was checked. */
	else if (fstatat(dirfd, name, &again, AT_SYMLINK_NOFOLLOW) < 0)
		err = -errno;
	else if (again.st_dev != st.st_dev || again.st_ino != st.st_ino)
		err = -EAGAIN;
	else if (unlinkat(dirfd, name, 0) < 0)
		err = -errno;
	close(fd);
out:
	close(dirfd);
	return err;
}
