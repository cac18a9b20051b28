/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The stats segment: every process using core publishes its per-stripe and
 * per-CQ counters in one shared-memory file, <dir>/rdmatool-stats.<pid>
 * (<dir> is /dev/shm, or $RDMATOOL_STATS_DIR), so that `rdmatool cqstat` can
 * read them from outside without a lock and without slowing the process.
 *
 * Writer side (this file): a process calls stats_segment_open() once (or lets
 * the first stats_entry_add() open it), adds one entry per stripe/CQ/worker,
 * and bumps the entry's counters with the inline helpers below, e.g.
 *	stats_inc(e, STATS_COMPLETED); stats_ring_depth(e, depth);
 * Counters are _Atomic uint64_t updated with relaxed RMWs (stats_set: a
 * release store): a reader sees each counter torn-free, but not a consistent
 * cut across counters.
 *
 * Every helper accepts a NULL entry and does nothing, so code keeps working
 * when the segment is disabled (RDMATOOL_STATS=0), could not be created, or is
 * full: callers keep the pointer stats_entry_add() returned and never test it.
 *
 * Entries have owners (a stripe, a CQ, a worker): the owner calls
 * stats_entry_remove() when it goes away and must not touch the pointer
 * after.  A removed entry's slot is reused by a later stats_entry_add(), so a
 * process that opens and closes endpoints all day stays within
 * STATS_MAX_ENTRIES as long as its live entries do.
 *
 * Format (version 2): a struct stats_header, then max_entries slots of struct
 * stats_entry.  Slots below nentries have been used; each slot's seq says
 * whether it is live: odd = live, even = free (0, never used; or retired).
 * Every add (append or reuse) and every remove bumps seq by one, so seq also
 * names the entry's generation: a reader matches an entry across two samples
 * by (slot, seq), never by slot alone.  A reader copies a slot seqlock-style
 * (see stats_entry_copy()) and drops it unless seq was the same odd value
 * before and after the copy.
 *
 * The segment is removed at exit (atexit) and by stats_segment_close().
 * Reader side: core/stats/stats_reader.h.
 */
#ifndef RDMATOOL_CORE_STATS_H
#define RDMATOOL_CORE_STATS_H

#include <infiniband/verbs.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define STATS_MAGIC	  0x5453534c54414452ULL /* "RDATLSST" little-endian */
#define STATS_VERSION	  2
#define STATS_NAME_LEN	  32
#define STATS_COMM_LEN	  32
#define STATS_MAX_ENTRIES 256
#define STATS_FILE_PREFIX "rdmatool-stats."
#define STATS_DEFAULT_DIR "/dev/shm"
#define STATS_ENV_DISABLE "RDMATOOL_STATS"
#define STATS_ENV_DIR	  "RDMATOOL_STATS_DIR"

/* What an entry describes.  Values are part of the on-disk format. */
enum stats_kind {
	STATS_KIND_STRIPE = 0,
	STATS_KIND_CQ = 1,
	STATS_KIND_MADSTRESS_WORKER = 2,
	STATS_KIND_WALK_CLIENT = 3,
	STATS_KIND_AGENT = 4,
	STATS_KIND_OTHER = 5,
	STATS_NKINDS
};

/* Error completions by class (see stats_error_kind_of_wc()). */
enum stats_error_kind {
	STATS_ERR_LOCAL = 0,   /* LOC_*_ERR, MW_BIND_ERR, bad length/protection on our side */
	STATS_ERR_REMOTE = 1,  /* REM_*_ERR: the peer refused */
	STATS_ERR_FLUSH = 2,   /* WR_FLUSH_ERR: QP went to ERR */
	STATS_ERR_TIMEOUT = 3, /* RETRY_EXC_ERR, RNR_RETRY_EXC_ERR, MAD timeouts */
	STATS_ERR_OTHER = 4,
	STATS_NERROR_KINDS
};

/* Index of each counter in stats_entry.counter[]; the order is the on-disk order. */
enum stats_counter {
	STATS_POSTED,
	STATS_COMPLETED,
	STATS_POLLS,
	STATS_EMPTY_POLLS,
	STATS_RING_DEPTH, /* a gauge: stats_set() */
	STATS_RING_HWM,	  /* a high-water mark: stats_max() */
	STATS_EAGAIN,
	STATS_ERRORS, /* total; the next five split it by stats_error_kind */
	STATS_ERRORS_LOCAL,
	STATS_ERRORS_REMOTE,
	STATS_ERRORS_FLUSH,
	STATS_ERRORS_TIMEOUT,
	STATS_ERRORS_OTHER,
	STATS_FLOW_CONTROL,
	STATS_NCOUNTERS
};

/*
 * One entry, one cache line multiple so that two stripes' counters never share
 * a line.  name/kind/stripe/created_realtime_ns are written by
 * stats_entry_add() while seq is even, before seq turns odd; with atomic
 * stores because a reader may be copying the previous generation.
 */
struct stats_entry {
	char name[STATS_NAME_LEN];
	uint32_t kind;	      /* enum stats_kind */
	int32_t stripe;	      /* stripe index, or -1 */
	_Atomic uint32_t seq; /* generation: odd = live, even = free or retired */
	uint32_t reserved0;
	uint64_t created_realtime_ns; /* CLOCK_REALTIME when this generation was added */
	uint8_t reserved[8];
	_Atomic uint64_t counter[STATS_NCOUNTERS];
} __attribute__((aligned(64)));

/*
 * The segment header.  A reader checks magic, version, header_size,
 * entry_size and max_entries against the file size before touching entries,
 * then loads nentries with acquire: entries below it are fully initialised.
 */
struct stats_header {
	uint64_t magic;
	uint32_t version;
	uint32_t header_size;
	uint32_t entry_size;
	uint32_t max_entries;
	_Atomic uint32_t nentries; /* published with release after an entry is filled */
	int32_t pid;
	uint64_t start_realtime_ns; /* CLOCK_REALTIME at creation */
	uint64_t proc_starttime;    /* field 22 of /proc/<pid>/stat: detects a reused pid */
	char comm[STATS_COMM_LEN];  /* the rdmatool command, e.g. "bench" */
	uint8_t reserved[40];
} __attribute__((aligned(64)));

/* 32 name + 8 kind/stripe + 8 seq + 8 created + 8 reserved + 14 * 8 counters = 176, aligned to 192. */
_Static_assert(sizeof(struct stats_entry) == 192, "stats_entry layout is part of the format");
_Static_assert(offsetof(struct stats_entry, seq) == 40 && offsetof(struct stats_entry, counter) == 64,
	       "stats_entry layout is part of the format");
_Static_assert(sizeof(struct stats_header) == 128, "stats_header layout is part of the format");

/*
 * Creates this process's segment, named after comm (NULL: /proc/self/comm).
 * Idempotent: a second call returns 0 and keeps the first name.  After fork()
 * the child gets its own segment on its first open.
 * Returns 0, or a negative errno: -EINVAL for a bad RDMATOOL_STATS value,
 * -ECANCELED when RDMATOOL_STATS=0 disabled it, or what open/mmap failed with.
 */
int stats_segment_open(const char *comm);
/* 0 when RDMATOOL_STATS is unset or valid; else -EINVAL with a message naming it and its values. */
int stats_env_check(char *msg, size_t msglen);
/* Unmaps and removes the segment; entries handed out become invalid. */
void stats_segment_close(void);
/* The segment's path, or NULL when none is open. */
const char *stats_segment_path(void);
/*
 * Why the last creation failed (a full file system, say), for the command to
 * tell its user once: a message the first time it is asked after a failure,
 * else NULL.  A disabled segment (RDMATOOL_STATS=0) is no failure.
 */
const char *stats_segment_problem(void);

/*
 * A new zeroed entry (opening the segment if needed), or NULL when the segment
 * is disabled, failed or every slot is live.  Reuses a removed entry's slot
 * before appending a new one.  Thread-safe; meant for setup, not the data path.
 */
struct stats_entry *stats_entry_add(const char *name, enum stats_kind kind, int stripe);
/*
 * Retires e (NULL: nothing): readers stop showing it and its slot goes to the
 * next stats_entry_add().  The caller must have stopped updating e, in every
 * thread, and must drop the pointer.  Thread-safe; not for the data path.
 */
void stats_entry_remove(struct stats_entry *e);

/* Maps a completion status to its error class. */
enum stats_error_kind stats_error_kind_of_wc(enum ibv_wc_status status);

static inline void stats_add(struct stats_entry *e, enum stats_counter c, uint64_t v)
{
	if (e)
		atomic_fetch_add_explicit(&e->counter[c], v, memory_order_relaxed);
}

static inline void stats_inc(struct stats_entry *e, enum stats_counter c)
{
	stats_add(e, c, 1);
}

/*
 * Release, unlike the relaxed increments: a plain store does not continue the
 * release sequence of stats_entry_add()'s store of 0 (an RMW does), and a
 * reader that sees this value must also see the seq it was written under
 * (see core/stats/stats.c).  On x86 a release store is a plain move.
 */
static inline void stats_set(struct stats_entry *e, enum stats_counter c, uint64_t v)
{
	if (e)
		atomic_store_explicit(&e->counter[c], v, memory_order_release);
}

/* Raises the counter to v if v is larger; concurrent callers never lower it. */
static inline void stats_max(struct stats_entry *e, enum stats_counter c, uint64_t v)
{
	if (!e)
		return;
	uint64_t cur = atomic_load_explicit(&e->counter[c], memory_order_relaxed);

	while (cur < v && !atomic_compare_exchange_weak_explicit(&e->counter[c], &cur, v,
								 memory_order_relaxed, memory_order_relaxed))
		;
}

/* Counts one error completion: the total and its class. */
static inline void stats_error(struct stats_entry *e, enum stats_error_kind kind)
{
	stats_inc(e, STATS_ERRORS);
	stats_inc(e, STATS_ERRORS_LOCAL + (kind < STATS_NERROR_KINDS ? kind : STATS_ERR_OTHER));
}

static inline void stats_wc_error(struct stats_entry *e, enum ibv_wc_status status)
{
	stats_error(e, stats_error_kind_of_wc(status));
}

/* Depth gauge plus high-water mark in one call, for rings and queues. */
static inline void stats_ring_depth(struct stats_entry *e, uint64_t depth)
{
	stats_set(e, STATS_RING_DEPTH, depth);
	stats_max(e, STATS_RING_HWM, depth);
}

#endif
