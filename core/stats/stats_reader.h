/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Reading other processes' stats segments (see core/stats/stats.h) from outside:
 * list them, map one read-only, validate its layout against the file size,
 * copy its counters, and tell a live process from a dead or reused pid.
 * Reading takes no lock and never writes to the segment.
 */
#ifndef RDMATOOL_CORE_STATS_READER_H
#define RDMATOOL_CORE_STATS_READER_H

#include "core/stats/stats.h"
#include "core/stats/stats_path.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum stats_read_status {
	STATS_READ_OK = 0,
	STATS_READ_NOENT = -1,	     /* no segment for that pid */
	STATS_READ_IO = -2,	     /* open/fstat/mmap failed; errno says why */
	STATS_READ_TRUNCATED = -3,   /* shorter than its header says */
	STATS_READ_BAD_MAGIC = -4,   /* not a stats segment, or still being created */
	STATS_READ_BAD_VERSION = -5, /* written by another rdmatool version */
	STATS_READ_BAD_LAYOUT = -6,  /* sizes, counts or pid inconsistent */
	STATS_READ_NOT_FILE = -7,    /* a FIFO, device, directory or symlink */
	STATS_READ_BAD_OWNER = -8,   /* owned by another user than the live process it names */
};

const char *stats_read_strerror(int status);

/* What was validated at open is kept here; the live header is never trusted again. */
struct stats_reader {
	int fd;
	const struct stats_header *hdr; /* mapped read-only, len bytes */
	size_t len;
	pid_t pid;	      /* from the header, checked against the file name */
	uint32_t max_entries; /* from the validated header copy */
	uid_t uid;	      /* the file's owner */
};

/*
 * One live entry as copied by stats_reader_snapshot().  (slot, seq) names the
 * entry across samples: a slot whose seq changed was removed and reused.
 */
struct stats_entry_snapshot {
	char name[STATS_NAME_LEN + 1];
	enum stats_kind kind;
	int stripe;
	uint32_t slot; /* index in the segment */
	uint32_t seq;  /* generation, odd */
	uint64_t created_realtime_ns;
	uint64_t counter[STATS_NCOUNTERS];
};

struct stats_snapshot {
	pid_t pid;
	char comm[STATS_COMM_LEN + 1];
	uint64_t start_realtime_ns;
	uint64_t proc_starttime;
	uint64_t taken_ns; /* CLOCK_MONOTONIC when copied, for rates */
	uint32_t nentries; /* live entries copied into entry[], in slot order */
	struct stats_entry_snapshot entry[STATS_MAX_ENTRIES];
};

/*
 * Opens <stats_segment_dir()>/rdmatool-stats.<pid>: a regular file (no
 * symlink, no FIFO), with a valid header for that pid, owned by the user
 * who runs the process when it is alive.  Returns a stats_read_status.
 */
int stats_reader_open(struct stats_reader *r, pid_t pid);
/* Opens any file as a segment; expect_pid 0 accepts any pid in the header. */
int stats_reader_open_path(struct stats_reader *r, const char *path, pid_t expect_pid);
void stats_reader_close(struct stats_reader *r);
/* Copies the header fields and every live entry.  Returns a stats_read_status. */
int stats_reader_snapshot(const struct stats_reader *r, struct stats_snapshot *s);
/*
 * Copies one slot seqlock-style (see the comment above fill_entry() in
 * core/stats/stats.c): true with out filled (slot left alone) when e is live and the
 * copy is of one generation; false when e is free, retired, or kept changing.
 */
bool stats_entry_copy(const struct stats_entry *e, struct stats_entry_snapshot *out);

enum stats_liveness {
	STATS_LIVE,
	STATS_DEAD,	  /* no such process */
	STATS_PID_REUSED, /* a process with that pid, started at another time */
};

/* proc_starttime 0 checks existence only. */
enum stats_liveness stats_process_liveness(pid_t pid, uint64_t proc_starttime);

/* The pids that have a segment file, sorted; *pids is malloc'd.  0 or -errno. */
int stats_list_pids(pid_t **pids, size_t *n);
/*
 * Unlinks pid's segment file (the caller decides it is stale), only if it
 * is a regular file owned by the caller with a valid segment header for
 * that pid, never through a symlink.  0, -ENOENT, -EPERM (not the caller's,
 * or not a regular file), -EINVAL (not a segment) or another -errno.
 */
int stats_segment_remove(pid_t pid);

#endif
