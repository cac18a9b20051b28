/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Channels in shared memory; the contract and the design are in channel.h. */
#include "core/chan/channel.h"
#include "core/chan/agent_dir.h"

#include "core/util/clock.h"
#include "core/util/futex.h"
#include "core/util/rng.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHAN_MAGIC	   0x4e414843544d4452ULL /* "RDMTCHAN" little-endian */
#define CHAN_VERSION	   3			 /* 3: the destroyed flag */
#define CHAN_HEADER	   4096u
#define REC_MSG		   0x3147534du /* "MSG1" */
#define REC_WRAP	   0x50415257u /* "WRAP" */
#define CHAN_LOCK_SPINS	   256
#define CHAN_WAIT_SPINS	   2048
#define CHAN_LOCK_GRACE_NS 2000000ull /* a try-once call waits this long for a busy lock */

/* One end of the ring as the code sees it: where it is, how many messages and bytes passed it. */
struct chan_end {
	uint64_t off, seq, bytes;
};

/*
 * Layout, by who writes what.  The lock and both ends share one cache line:
 * every operation takes them together, so a message moves that line once per
 * side.  An end is committed by one 64-bit store of {seq low 32 bits, offset},
 * after the record is complete: a process killed with the lock held leaves a
 * whole message or none (see chan_recover() for the counters that follow).
 * The producers' and the consumers' counters live on lines of their own.
 */
struct chan_shared {
	uint64_t magic;
	uint32_t version;
	uint32_t header_size;
	uint64_t data_size;
	uint32_t capacity_msgs;
	uint32_t max_msg;
	_Atomic uint64_t recovered;
	_Atomic uint64_t futex_calls; /* waits and wakes: the system calls the channel made */
	_Atomic uint32_t destroyed;   /* set by chan_destroy before it removes the name */
	pthread_mutex_t lock __attribute__((aligned(64)));
	_Atomic uint64_t head, tail; /* committed ends: seq32 << 32 | offset */
	/*
	 * The ends' message counts (and byte totals), stored (seq_cst) after each
	 * commit.  A waiter spins on them without the lock, and their low 32
	 * bits are the futex words: a sleeper increments its sleeper count, then
	 * sleeps only while the word still holds what it saw under the lock; a
	 * waker stores the word, then wakes only if the count says someone
	 * sleeps.  Store-then-load on both sides (seq_cst) means one of the two
	 * always sees the other, so no wake is lost and an uncontended message
	 * costs no read-modify-write beyond the lock.  The waker takes the
	 * sleepers it woke off the count (a woken sleeper leaves it alone; one
	 * that timed out or found the word changed takes itself off): the
	 * messages sent while a woken receiver is on its way to a CPU make no
	 * system call, where one each would (measured: one futex call per
	 * message between an agent and a draining reader).
	 */
	_Atomic uint64_t sent __attribute__((aligned(64)));
	_Atomic uint64_t bytes_in;
	_Atomic uint32_t recv_sleepers;
	_Atomic uint64_t taken __attribute__((aligned(64)));
	_Atomic uint64_t bytes_out;
	_Atomic uint32_t send_sleepers;
};
_Static_assert(offsetof(struct chan_shared, tail) + 8 <= offsetof(struct chan_shared, lock) + 64,
	       "the lock and both ends share one cache line");
_Static_assert(sizeof(struct chan_shared) <= CHAN_HEADER, "channel header fits its page");

struct chan_record {
	uint32_t len;
	uint32_t mark;
	uint64_t seq;
};
_Static_assert(sizeof(struct chan_record) == CHAN_RECORD_HEADER, "record header size");

struct chan {
	struct chan_shared *s;
	unsigned char *data;
	size_t map_len;
	/* Geometry copied and validated at open: bounds never come from shared memory. */
	uint64_t data_size;
	uint32_t capacity_msgs, max_msg;
	char name[CHAN_NAME_MAX + 1];
	bool wake_owed; /* a quiet send left receivers asleep (chan_send_quiet) */
	bool corrupt;	/* its shared state was found inconsistent: quarantined, never followed again */
	bool try_lock;	/* try-once calls do not wait for the lock at all (chan_set_try_lock) */
};

static uint64_t record_size(uint64_t len)
{
	return CHAN_RECORD_HEADER + ((len + 7) & ~7ull);
}

bool chan_name_valid(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0 || n > CHAN_NAME_MAX || name[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = name[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		      ch == '.' || ch == '_' || ch == '-'))
			return false;
	}
	return true;
}

static int chan_path(char *path, size_t len, const char *dir, const char *name)
{
	if (!chan_name_valid(name))
		return -EINVAL;
	if ((size_t)snprintf(path, len, "%s/%s%s", dir, CHAN_FILE_PREFIX, name) >= len)
		return -ENAMETOOLONG;
	return 0;
}

static uint64_t end_pack(uint64_t seq, uint64_t off)
{
	return (uint64_t)(uint32_t)seq << 32 | (uint32_t)off;
}

/* Under the lock: the counters agree with the committed ends (chan_recover() saw to it). */
static struct chan_end tail_load(struct chan_shared *s)
{
	return (struct chan_end){(uint32_t)atomic_load_explicit(&s->tail, memory_order_relaxed),
				 atomic_load_explicit(&s->sent, memory_order_relaxed),
				 atomic_load_explicit(&s->bytes_in, memory_order_relaxed)};
}

static struct chan_end head_load(struct chan_shared *s)
{
	return (struct chan_end){(uint32_t)atomic_load_explicit(&s->head, memory_order_relaxed),
				 atomic_load_explicit(&s->taken, memory_order_relaxed),
				 atomic_load_explicit(&s->bytes_out, memory_order_relaxed)};
}

static void tail_commit(struct chan_shared *s, struct chan_end next)
{
	atomic_store_explicit(&s->tail, end_pack(next.seq, next.off), memory_order_release);
	atomic_store_explicit(&s->bytes_in, next.bytes, memory_order_relaxed);
	atomic_store(&s->sent, next.seq);
}

static void head_commit(struct chan_shared *s, struct chan_end next)
{
	atomic_store_explicit(&s->head, end_pack(next.seq, next.off), memory_order_release);
	atomic_store_explicit(&s->bytes_out, next.bytes, memory_order_relaxed);
	atomic_store(&s->taken, next.seq);
}

int chan_create(const char *dir, const char *name, const struct chan_attr *attr)
{
	struct chan_attr a = attr ? *attr : (struct chan_attr){0};
	char path[PATH_MAX], tmp[PATH_MAX];
	pthread_mutexattr_t ma;
	struct chan_shared *s;
	int fd, rc;

	if (!a.capacity_msgs)
		a.capacity_msgs = CHAN_DEFAULT_CAPACITY;
	if (!a.max_msg)
		a.max_msg = CHAN_DEFAULT_MAX_MSG;
	if (!a.capacity_bytes)
		a.capacity_bytes =
		    CHAN_DEFAULT_BYTES > record_size(a.max_msg) ? CHAN_DEFAULT_BYTES : record_size(a.max_msg);
	a.capacity_bytes = (a.capacity_bytes + 7) & ~7ull;
	if (a.capacity_bytes < record_size(a.max_msg) || a.capacity_bytes > CHAN_MAX_BYTES ||
	    a.max_msg > CHAN_MAX_BYTES - CHAN_RECORD_HEADER)
		return -EINVAL;
	rc = chan_path(path, sizeof(path), dir, name);
	if (rc)
		return rc;
	/* Built under a private temporary name, then linked in whole: nobody maps a half-made channel. */
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s/.tmp.%s.%016llx", dir, name,
			     (unsigned long long)rng_entropy_seed()) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	size_t len = CHAN_HEADER + a.capacity_bytes;

	/* Every page reserved now: a full file system fails the create, never a send (SIGBUS). */
	rc = agent_dir_reserve(fd, 0, len);
	if (rc)
		goto fail;
	s = mmap(NULL, CHAN_HEADER, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (s == MAP_FAILED) {
		rc = -errno;
		goto fail;
	}
	memset(s, 0, sizeof(*s));
	s->version = CHAN_VERSION;
	s->header_size = CHAN_HEADER;
	s->data_size = a.capacity_bytes;
	s->capacity_msgs = a.capacity_msgs;
	s->max_msg = a.max_msg;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	rc = -pthread_mutex_init(&s->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	atomic_thread_fence(memory_order_release);
	s->magic = CHAN_MAGIC;
	munmap(s, CHAN_HEADER);
	if (rc)
		goto fail;
	if (link(tmp, path)) {
		rc = -errno;
		goto fail;
	}
	unlink(tmp);
	close(fd);
	return 0;
fail:
	unlink(tmp);
	close(fd);
	return rc;
}

int chan_destroy(const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct chan *c;
	int rc = chan_path(path, sizeof(path), dir, name);

	if (rc)
		return rc;
	/*
	 * Those who keep it mapped learn it is gone without looking at the name
	 * (chan_destroyed): marked before the name goes, so nobody sends into it
	 * after it is unreachable; unmarked again if the name stays.
	 */
	if (chan_open(dir, name, &c))
		c = NULL;
	if (c)
		atomic_store_explicit(&c->s->destroyed, 1, memory_order_release);
	rc = unlink(path) ? -errno : 0;
	if (c && rc)
		atomic_store_explicit(&c->s->destroyed, 0, memory_order_release);
	chan_close(c);
	return rc;
}

bool chan_destroyed(const struct chan *c)
{
	return atomic_load_explicit(&c->s->destroyed, memory_order_acquire) != 0;
}

int chan_open(const char *dir, const char *name, struct chan **out)
{
	char path[PATH_MAX];
	struct chan_shared hdr;
	struct stat st;
	struct chan *c;
	void *map;
	int fd, rc = chan_path(path, sizeof(path), dir, name);

	if (rc)
		return rc;
	fd = agent_dir_open_own(path, &st);
	if (fd < 0)
		return fd;
	if ((uint64_t)st.st_size < CHAN_HEADER || pread(fd, &hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr)) {
		close(fd);
		return -EBADMSG;
	}
	/* Validated on this private copy; the mapping's geometry is never trusted later. */
	if (hdr.magic != CHAN_MAGIC || hdr.version != CHAN_VERSION || hdr.header_size != CHAN_HEADER ||
	    hdr.data_size % 8 || hdr.data_size > CHAN_MAX_BYTES || hdr.capacity_msgs == 0 ||
	    (uint64_t)st.st_size != CHAN_HEADER + hdr.data_size || record_size(hdr.max_msg) > hdr.data_size) {
		close(fd);
		return -EBADMSG;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	rc = map == MAP_FAILED ? -errno : 0;
	close(fd);
	if (rc)
		return rc;
	c = calloc(1, sizeof(*c));
	if (!c) {
		munmap(map, (size_t)st.st_size);
		return -ENOMEM;
	}
	c->s = map;
	c->data = (unsigned char *)map + CHAN_HEADER;
	c->map_len = (size_t)st.st_size;
	c->data_size = hdr.data_size;
	c->capacity_msgs = hdr.capacity_msgs;
	c->max_msg = hdr.max_msg;
	snprintf(c->name, sizeof(c->name), "%s", name);
	*out = c;
	return 0;
}

void chan_close(struct chan *c)
{
	if (!c)
		return;
	chan_wake_owed(c);
	munmap(c->s, c->map_len);
	free(c);
}

const char *chan_name(const struct chan *c)
{
	return c->name;
}

/*
 * A call's timeout, turned into a deadline when it first has to wait: the
 * path that takes the lock at once and finds room (or a message) reads no
 * clock (a clock read per message was an eighth of chan_rate's profile).
 */
struct chan_deadline {
	int timeout_ms; /* > 0: a deadline applies; otherwise 0 = never wait, < 0 = forever */
	uint64_t at;	/* 0 until computed */
};

static uint64_t deadline_get(struct chan_deadline *d)
{
	if (d->timeout_ms > 0 && !d->at)
		d->at = clock_ns() + (uint64_t)d->timeout_ms * 1000000ull;
	return d->at;
}

static _Atomic uint32_t *futex_word(_Atomic uint64_t *count);
static void wake_sleepers(struct chan_shared *s, _Atomic uint32_t *events, _Atomic uint32_t *sleepers);

/* The count a committed end says, given the counter that may lag it by one message. */
static uint64_t count_of(uint64_t packed, uint64_t counter)
{
	return counter + (uint32_t)((uint32_t)(packed >> 32) - (uint32_t)counter);
}

/*
 * Whether the ends read from the shared mapping can be followed: offsets
 * inside the ring and 8-aligned, no more messages than the capacity.  Any
 * process of the user can write the file, and a bug must not become an
 * overrun: a channel that fails this is quarantined (chan_corrupt).
 */
static bool ends_valid(const struct chan *c, struct chan_end h, struct chan_end t)
{
	return h.off <= c->data_size && t.off <= c->data_size && !(h.off % 8) && !(t.off % 8) &&
	       t.seq - h.seq <= c->capacity_msgs;
}

/* Marks the channel corrupt (quarantined): every later call on this handle fails with -EBADMSG. */
static int quarantine(struct chan *c)
{
	c->corrupt = true;
	return -EBADMSG;
}

bool chan_corrupt(const struct chan *c)
{
	return c->corrupt;
}

uint64_t chan_file_size(const struct chan *c)
{
	return c->map_len;
}

void chan_set_try_lock(struct chan *c)
{
	c->try_lock = true;
}

/*
 * Called with the lock of a process that died holding it.  The ends are
 * whole (one store each), but the owner may have died between committing an
 * end and storing the counters that follow it: bring the message counts up
 * to the ends, and recount the bytes waiting by walking the records.
 */
static void chan_recover(struct chan *c)
{
	struct chan_shared *s = c->s;
	uint64_t head = atomic_load(&s->head), tail = atomic_load(&s->tail);
	uint64_t taken = count_of(head, atomic_load(&s->taken)), sent = count_of(tail, atomic_load(&s->sent));
	uint64_t off = (uint32_t)head, waiting = 0;

	/* Offsets from the mapping are followed only inside the ring. */
	if (off > c->data_size || off % 8 || (uint32_t)tail > c->data_size)
		sent = taken;
	for (uint64_t i = 0; i < sent - taken && i < c->capacity_msgs; i++) {
		struct chan_record r;

		if (c->data_size - off < CHAN_RECORD_HEADER)
			off = 0;
		memcpy(&r, c->data + off, sizeof(r));
		if (r.mark == REC_WRAP) {
			off = 0;
			memcpy(&r, c->data, sizeof(r));
		}
		if (r.mark != REC_MSG || r.len > c->max_msg || off + record_size(r.len) > c->data_size)
			break; /* cannot happen with whole commits; keep what was counted */
		waiting += r.len;
		off += record_size(r.len);
	}
	atomic_store(&s->bytes_in, atomic_load(&s->bytes_out) + waiting);
	atomic_store(&s->taken, taken);
	atomic_store(&s->sent, sent);
	wake_sleepers(s, futex_word(&s->sent), &s->recv_sleepers);
	wake_sleepers(s, futex_word(&s->taken), &s->send_sleepers);
}

/*
 * Whether the lock word says free, read without writing it: a spinner's
 * trylock is a locked read-modify-write that pulls the line away from the
 * holder, which is in the middle of a copy and two stores on it (the
 * test-and-test-and-set spin).  glibc keeps a process-shared mutex's state,
 * the owner's thread id, in the first word; elsewhere every look says free.
 */
static bool lock_looks_free(struct chan *c)
{
#ifdef __GLIBC__
	return atomic_load_explicit((_Atomic int *)&c->s->lock.__data.__lock, memory_order_relaxed) == 0;
#else
	(void)c;
	return true;
#endif
}

/*
 * pthread_mutex_clocklock until a CLOCK_MONOTONIC deadline (ns), which a
 * change of the wall clock does not move.  ThreadSanitizer (GCC 12's libtsan)
 * does not intercept it: it would not see the lock taken and would report the
 * unlock as one of an unlocked mutex.  A TSan build waits with the
 * intercepted pthread_mutex_timedlock on the same deadline in CLOCK_REALTIME.
 */
static int lock_until(pthread_mutex_t *m, uint64_t at)
{
	struct timespec ts;

#if defined(__SANITIZE_THREAD__)
	uint64_t now = clock_ns(), left = at > now ? at - now : 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	at = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + left;
#endif
	ts.tv_sec = (time_t)(at / 1000000000ull);
	ts.tv_nsec = (long)(at % 1000000000ull);
#if defined(__SANITIZE_THREAD__)
	return pthread_mutex_timedlock(m, &ts);
#else
	return pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &ts);
#endif
}

static int chan_lock(struct chan *c, struct chan_deadline *d)
{
	int rc = EBUSY;

	if (c->corrupt)
		return -EBADMSG;
	/*
	 * Critical sections are a copy and two stores: a short spin on trylock
	 * almost always wins, where a contended pthread_mutex_lock would sleep
	 * in the kernel (two system calls per message between two busy processes).
	 */
	for (int spin = 0; spin < CHAN_LOCK_SPINS && rc == EBUSY; spin++) {
		if (lock_looks_free(c))
			rc = pthread_mutex_trylock(&c->s->lock);
		if (rc == EBUSY)
			atomic_signal_fence(memory_order_seq_cst);
	}
	/*
	 * The holder may be stopped (Ctrl-Z, SIGSTOP, a debugger) for as long as it likes: a try-once
	 * call waits for it a moment at most (a running holder copies one message at most) and then
	 * gives -EAGAIN, or not at all on a try-lock handle (the agent's: it serves its other
	 * channels meanwhile); a bounded one waits until its deadline (-ETIMEDOUT), and only a call
	 * that asked to wait forever does.
	 */
	if (rc != EBUSY) {
		/* taken (or its owner died) while spinning */
	} else if (d->timeout_ms == 0) {
		if (c->try_lock)
			return -EAGAIN;
		rc = lock_until(&c->s->lock, clock_ns() + CHAN_LOCK_GRACE_NS);
		if (rc == ETIMEDOUT)
			return -EAGAIN;
	} else if (deadline_get(d)) {
		rc = lock_until(&c->s->lock, d->at);
	} else {
		rc = pthread_mutex_lock(&c->s->lock);
	}
	if (rc == EOWNERDEAD) {
		chan_recover(c);
		atomic_fetch_add_explicit(&c->s->recovered, 1, memory_order_relaxed);
		pthread_mutex_consistent(&c->s->lock);
		return 0;
	}
	return rc == ETIMEDOUT && d->timeout_ms > 0 ? -ETIMEDOUT : -rc;
}

static void chan_unlock(struct chan *c)
{
	pthread_mutex_unlock(&c->s->lock);
}

/* The low half of a count, as a futex word (little- or big-endian). */
static _Atomic uint32_t *futex_word(_Atomic uint64_t *count)
{
	return (_Atomic uint32_t *)count + (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__);
}

/* Sleeps on *events (read under the lock as seen) until it moves, the deadline passes or a signal. */
static int chan_sleep(struct chan_shared *s, _Atomic uint32_t *events, uint32_t seen,
		      _Atomic uint32_t *sleepers, int timeout_ms, uint64_t deadline)
{
	int rc;

	if (timeout_ms == 0)
		return -EAGAIN;
	atomic_fetch_add_explicit(&s->futex_calls, 1, memory_order_relaxed);
	atomic_fetch_add(sleepers, 1);
	rc = futex_wait_counted(events, seen, deadline);
	if (rc != 1)
		atomic_fetch_sub(sleepers, 1); /* no waker took it off */
	return rc == 1 ? 0 : rc;
}

static void wake_sleepers(struct chan_shared *s, _Atomic uint32_t *events, _Atomic uint32_t *sleepers)
{
	uint32_t n;

	atomic_fetch_add_explicit(&s->futex_calls, 1, memory_order_relaxed);
	n = futex_wake_counted(events);
	if (n)
		atomic_fetch_sub(sleepers, n);
}

static void chan_wake(struct chan_shared *s, _Atomic uint32_t *events, _Atomic uint32_t *sleepers)
{
	if (atomic_load(sleepers))
		wake_sleepers(s, events, sleepers);
}

/*
 * Before taking the lock to find the channel empty (or full) again, watch the
 * counts for a moment with plain loads: a waiter that hammers the lock steals
 * its cache line from the process that is about to make progress.  Bounded:
 * after it, the caller sleeps on a futex.  No PAUSE in these loops: under a
 * hypervisor with pause-loop exiting (this project's CI runs in a microVM) a
 * PAUSE loop gets the vCPU descheduled, which made a channel 30x slower.
 */
static void wait_while_empty(struct chan_shared *s)
{
	for (int i = 0; i < CHAN_WAIT_SPINS; i++) {
		if (atomic_load_explicit(&s->sent, memory_order_acquire) !=
		    atomic_load_explicit(&s->taken, memory_order_acquire))
			return;
		atomic_signal_fence(memory_order_seq_cst);
	}
}

static void wait_while_full(const struct chan *c)
{
	for (int i = 0; i < CHAN_WAIT_SPINS; i++) {
		if (atomic_load_explicit(&c->s->sent, memory_order_acquire) -
			atomic_load_explicit(&c->s->taken, memory_order_acquire) <
		    c->capacity_msgs)
			return;
		atomic_signal_fence(memory_order_seq_cst);
	}
}

/* Where a record of `need` bytes goes, or UINT64_MAX when it does not fit now. */
static uint64_t place_record(const struct chan *c, struct chan_end h, struct chan_end t, uint64_t need)
{
	uint64_t count = t.seq - h.seq;

	if (count >= c->capacity_msgs)
		return UINT64_MAX;
	if (count == 0 || t.off > h.off) {
		if (t.off + need <= c->data_size)
			return t.off;
		return need <= (count == 0 ? c->data_size : h.off) ? 0 : UINT64_MAX;
	}
	return t.off + need <= h.off ? t.off : UINT64_MAX;
}

static int send_record(struct chan *c, const void *buf, size_t len, int timeout_ms, uint64_t *seq, bool quiet)
{
	struct chan_deadline d = {.timeout_ms = timeout_ms};
	uint64_t need = record_size(len);
	struct chan_shared *s = c->s;
	int rc;

	if (len > c->max_msg)
		return -EMSGSIZE;
	for (;;) {
		if (timeout_ms)
			wait_while_full(c);
		rc = chan_lock(c, &d);
		if (rc)
			return rc;
		struct chan_end h = head_load(s), t = tail_load(s);
		uint64_t at;

		if (!ends_valid(c, h, t)) {
			chan_unlock(c);
			return quarantine(c);
		}
		at = place_record(c, h, t, need);
		if (at != UINT64_MAX) {
			struct chan_record *r = (struct chan_record *)(c->data + at);

			if (at != t.off && c->data_size - t.off >= CHAN_RECORD_HEADER)
				*(struct chan_record *)(c->data + t.off) =
				    (struct chan_record){0, REC_WRAP, t.seq};
			if (len)
				memcpy(r + 1, buf, len);
			*r = (struct chan_record){(uint32_t)len, REC_MSG, t.seq};
			tail_commit(s, (struct chan_end){at + need, t.seq + 1, t.bytes + len});
			chan_unlock(c);
			if (seq)
				*seq = t.seq;
			if (quiet)
				c->wake_owed = true;
			else
				chan_wake(s, futex_word(&s->sent), &s->recv_sleepers);
			return 0;
		}
		uint32_t seen = atomic_load(futex_word(&s->taken));

		chan_unlock(c);
		rc = chan_sleep(s, futex_word(&s->taken), seen, &s->send_sleepers, timeout_ms,
				deadline_get(&d));
		if (rc)
			return rc;
	}
}

int chan_send(struct chan *c, const void *buf, size_t len, int timeout_ms, uint64_t *seq)
{
	return send_record(c, buf, len, timeout_ms, seq, false);
}

int chan_send_quiet(struct chan *c, const void *buf, size_t len, uint64_t *seq)
{
	return send_record(c, buf, len, 0, seq, true);
}

void chan_wake_owed(struct chan *c)
{
	if (!c->wake_owed)
		return;
	c->wake_owed = false;
	chan_wake(c->s, futex_word(&c->s->sent), &c->s->recv_sleepers);
}

int chan_recv(struct chan *c, void *buf, size_t cap, size_t *len, int timeout_ms)
{
	struct chan_deadline d = {.timeout_ms = timeout_ms};
	struct chan_shared *s = c->s;
	int rc;

	for (;;) {
		if (timeout_ms)
			wait_while_empty(s);
		rc = chan_lock(c, &d);
		if (rc)
			return rc;
		struct chan_end h = head_load(s), t = tail_load(s);

		if (!ends_valid(c, h, t)) {
			chan_unlock(c);
			return quarantine(c);
		}
		if (t.seq != h.seq) {
			uint64_t off = h.off;
			struct chan_record r;

			if (c->data_size - off < CHAN_RECORD_HEADER)
				off = 0;
			memcpy(&r, c->data + off, sizeof(r));
			if (r.mark == REC_WRAP) {
				off = 0;
				memcpy(&r, c->data + off, sizeof(r));
			}
			/* Only this user can write the file, but a bug must not become an overrun. */
			if (r.mark != REC_MSG || r.len > c->max_msg ||
			    off + record_size(r.len) > c->data_size || (uint32_t)r.seq != (uint32_t)h.seq) {
				chan_unlock(c);
				return quarantine(c);
			}
			*len = r.len;
			if (r.len > cap) {
				chan_unlock(c);
				return -EMSGSIZE;
			}
			if (r.len)
				memcpy(buf, c->data + off + CHAN_RECORD_HEADER, r.len);
			head_commit(s,
				    (struct chan_end){off + record_size(r.len), h.seq + 1, h.bytes + r.len});
			chan_unlock(c);
			chan_wake(s, futex_word(&s->taken), &s->send_sleepers);
			return 0;
		}
		uint32_t seen = atomic_load(futex_word(&s->sent));

		chan_unlock(c);
		rc = chan_sleep(s, futex_word(&s->sent), seen, &s->recv_sleepers, timeout_ms,
				deadline_get(&d));
		if (rc)
			return rc;
	}
}

int chan_poll(struct chan *c, struct chan_state *st, int timeout_ms)
{
	struct chan_deadline d = {.timeout_ms = timeout_ms};
	struct chan_shared *s = c->s;
	int rc;

	for (;;) {
		rc = chan_lock(c, &d);
		if (rc)
			return rc;
		struct chan_end h = head_load(s), t = tail_load(s);

		if (!ends_valid(c, h, t)) {
			chan_unlock(c);
			return quarantine(c);
		}
		if (t.seq != h.seq || timeout_ms == 0) {
			*st = (struct chan_state){
			    .count = (uint32_t)(t.seq - h.seq),
			    .bytes = t.bytes - h.bytes,
			    .capacity_msgs = c->capacity_msgs,
			    .capacity_bytes = c->data_size,
			    .max_msg = c->max_msg,
			    .empty = t.seq == h.seq,
			    .full = place_record(c, h, t, record_size(c->max_msg)) == UINT64_MAX,
			    .sent = t.seq,
			    .received = h.seq,
			    .recovered = atomic_load_explicit(&s->recovered, memory_order_relaxed),
			    .futex_calls = atomic_load_explicit(&s->futex_calls, memory_order_relaxed),
			};
			chan_unlock(c);
			return 0;
		}
		uint32_t seen = atomic_load(futex_word(&s->sent));

		chan_unlock(c);
		rc = chan_sleep(s, futex_word(&s->sent), seen, &s->recv_sleepers, timeout_ms,
				deadline_get(&d));
		if (rc)
			return rc;
	}
}

int chan_wait_taken(struct chan *c, uint64_t seq, int timeout_ms)
{
	struct chan_deadline d = {.timeout_ms = timeout_ms};
	struct chan_shared *s = c->s;
	int rc;

	for (;;) {
		rc = chan_lock(c, &d);
		if (rc)
			return rc;
		struct chan_end h = head_load(s);
		uint32_t seen = atomic_load(futex_word(&s->taken));

		chan_unlock(c);
		if (h.seq > seq)
			return 0;
		rc = chan_sleep(s, futex_word(&s->taken), seen, &s->send_sleepers, timeout_ms,
				deadline_get(&d));
		if (rc)
			return rc;
	}
}

int chan_list(const char *dir, int (*fn)(const char *name, void *arg), void *arg)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int rc = 0;

	if (!d)
		return -errno;
	while (!rc && (de = readdir(d))) {
		const char *name = de->d_name + strlen(CHAN_FILE_PREFIX);

		if (!strncmp(de->d_name, CHAN_FILE_PREFIX, strlen(CHAN_FILE_PREFIX)) && chan_name_valid(name))
			rc = fn(name, arg);
	}
	closedir(d);
	return rc;
}
