/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * core/chan/channel: boundaries and order, wrap-around, full/empty and
 * timeouts, sizes, permissions, exactly-once delivery between several
 * producer and consumer processes, and producers killed mid-send.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "core/chan/channel.h"
#include "core/util/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct fixture {
	char dir[64];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/rdmatool-chan.XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	if (system(cmd))
		return -1;
	free(f);
	return 0;
}

/* A self-checking message: producer, number, length and a byte pattern derived from them. */
static size_t make_msg(unsigned char *buf, uint32_t producer, uint32_t n, size_t len)
{
	uint32_t hdr[2] = {producer, n};

	for (size_t i = 0; i < len; i++)
		buf[i] = (unsigned char)(producer * 131 + n * 7 + i);
	if (len >= sizeof(hdr))
		memcpy(buf, hdr, sizeof(hdr));
	return len;
}

static bool msg_intact(const unsigned char *buf, size_t len, uint32_t *producer, uint32_t *n)
{
	uint32_t hdr[2];

	if (len < sizeof(hdr))
		return false;
	memcpy(hdr, buf, sizeof(hdr));
	for (size_t i = sizeof(hdr); i < len; i++)
		if (buf[i] != (unsigned char)(hdr[0] * 131 + hdr[1] * 7 + i))
			return false;
	*producer = hdr[0];
	*n = hdr[1];
	return true;
}

static void test_names(void **state)
{
	(void)state;
	assert_true(chan_name_valid("a"));
	assert_true(chan_name_valid("work-queue_1.x"));
	assert_false(chan_name_valid(""));
	assert_false(chan_name_valid(".hidden"));
	assert_false(chan_name_valid("a/b"));
	assert_false(chan_name_valid("../x"));
	assert_false(chan_name_valid("sp ace"));
	assert_false(chan_name_valid("0123456789012345678901234567890123456789012345678901234567890123"));
}

static void test_create_open_destroy(void **state)
{
	struct fixture *f = *state;
	struct chan_attr bad = {.capacity_msgs = 4, .capacity_bytes = 64, .max_msg = 1024};
	struct chan *c;

	assert_int_equal(chan_create(f->dir, "x", NULL), 0);
	assert_int_equal(chan_create(f->dir, "x", NULL), -EEXIST);
	assert_int_equal(chan_create(f->dir, "y", &bad), -EINVAL);
	assert_int_equal(chan_create(f->dir, "bad/name", NULL), -EINVAL);
	assert_int_equal(chan_open(f->dir, "nope", &c), -ENOENT);
	assert_int_equal(chan_open(f->dir, "x", &c), 0);
	assert_string_equal(chan_name(c), "x");
	assert_false(chan_destroyed(c));
	/* A mapping kept open learns the channel was destroyed; one made anew under the name has not. */
	assert_int_equal(chan_destroy(f->dir, "x"), 0);
	assert_true(chan_destroyed(c));
	assert_int_equal(chan_destroy(f->dir, "x"), -ENOENT);
	chan_close(c);
	assert_int_equal(chan_create(f->dir, "x", NULL), 0);
	assert_int_equal(chan_open(f->dir, "x", &c), 0);
	assert_false(chan_destroyed(c));
	chan_close(c);
	assert_int_equal(chan_destroy(f->dir, "x"), 0);
}

static void test_order_and_boundaries(void **state)
{
	struct fixture *f = *state;
	struct chan_attr a = {.capacity_msgs = 8, .capacity_bytes = 4096, .max_msg = 1000};
	unsigned char out[1000], in[1000];
	struct chan *c;
	size_t len;
	uint32_t p = 0, n = 0;

	assert_int_equal(chan_create(f->dir, "o", &a), 0);
	assert_int_equal(chan_open(f->dir, "o", &c), 0);
	/* Many laps around a small ring, sizes varying so records wrap at every offset. */
	for (uint32_t i = 0; i < 2000; i++) {
		size_t sz = 8 + (i * 37) % 992;
		uint64_t seq;

		assert_int_equal(chan_send(c, out, make_msg(out, 1, i, sz), 0, &seq), 0);
		assert_int_equal(seq, i);
		if (i % 3 == 2) {
			for (int k = 0; k < 3; k++) {
				assert_int_equal(chan_recv(c, in, sizeof(in), &len, 0), 0);
				assert_true(msg_intact(in, len, &p, &n));
				assert_int_equal(n, i - 2 + k);
				assert_int_equal(len, 8 + (n * 37) % 992);
			}
		}
	}
	/* A zero-length message keeps its boundary. */
	assert_int_equal(chan_recv(c, in, sizeof(in), &len, 0), 0);
	assert_int_equal(chan_recv(c, in, sizeof(in), &len, 0), 0);
	assert_int_equal(chan_send(c, out, 0, 0, NULL), 0);
	assert_int_equal(chan_send(c, out, make_msg(out, 1, 9, 16), 0, NULL), 0);
	assert_int_equal(chan_recv(c, in, sizeof(in), &len, 0), 0);
	assert_int_equal(len, 0);
	assert_int_equal(chan_recv(c, in, sizeof(in), &len, 0), 0);
	assert_int_equal(len, 16);
	assert_int_equal(chan_recv(c, in, sizeof(in), &len, 0), -EAGAIN);
	chan_close(c);
}

static void test_full_empty_timeouts_sizes(void **state)
{
	struct fixture *f = *state;
	struct chan_attr a = {.capacity_msgs = 3, .capacity_bytes = 8192, .max_msg = 512};
	unsigned char buf[1024] = {0};
	struct chan_state st;
	struct chan *c;
	size_t len;
	uint64_t t0;

	assert_int_equal(chan_create(f->dir, "f", &a), 0);
	assert_int_equal(chan_open(f->dir, "f", &c), 0);
	assert_int_equal(chan_poll(c, &st, 0), 0);
	assert_true(st.empty);
	assert_false(st.full);
	assert_int_equal(st.capacity_msgs, 3);
	t0 = clock_ns();
	assert_int_equal(chan_recv(c, buf, sizeof(buf), &len, 50), -ETIMEDOUT);
	assert_true(clock_ns() - t0 >= 45000000ull);
	assert_int_equal(chan_poll(c, &st, 30), -ETIMEDOUT);
	assert_int_equal(chan_send(c, buf, 513, 0, NULL), -EMSGSIZE);
	for (int i = 0; i < 3; i++)
		assert_int_equal(chan_send(c, buf, 100, 0, NULL), 0);
	assert_int_equal(chan_send(c, buf, 1, 0, NULL), -EAGAIN);
	assert_int_equal(chan_send(c, buf, 1, 40, NULL), -ETIMEDOUT);
	assert_int_equal(chan_poll(c, &st, 0), 0);
	assert_int_equal(st.count, 3);
	assert_int_equal(st.bytes, 300);
	assert_true(st.full);
	/* Too small a buffer: told the size, and the message stays. */
	assert_int_equal(chan_recv(c, buf, 99, &len, 0), -EMSGSIZE);
	assert_int_equal(len, 100);
	assert_int_equal(chan_poll(c, &st, 0), 0);
	assert_int_equal(st.count, 3);
	assert_int_equal(chan_recv(c, buf, 100, &len, 0), 0);
	assert_int_equal(chan_poll(c, &st, 0), 0);
	assert_int_equal(st.count, 2);
	assert_int_equal(st.received, 1);
	chan_close(c);
}

static void test_permissions(void **state)
{
	struct fixture *f = *state;
	char path[PATH_MAX], link_path[PATH_MAX];
	struct chan *c;

	assert_int_equal(chan_create(f->dir, "p", NULL), 0);
	snprintf(path, sizeof(path), "%s/chan.p", f->dir);
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(chan_open(f->dir, "p", &c), -EPERM);
	assert_int_equal(chmod(path, 0600), 0);
	/* A symlink planted under a channel's name is refused, not followed. */
	snprintf(link_path, sizeof(link_path), "%s/chan.l", f->dir);
	assert_int_equal(symlink(path, link_path), 0);
	assert_int_equal(chan_open(f->dir, "l", &c), -EPERM);
	/* A corrupt header is refused. */
	int fd = open(path, O_WRONLY);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "garbage!", 8, 0), 8);
	close(fd);
	assert_int_equal(chan_open(f->dir, "p", &c), -EBADMSG);
}

/* Waits for the message numbered seq to be taken: "received" mode's primitive. */
static void test_wait_taken(void **state)
{
	struct fixture *f = *state;
	unsigned char buf[64];
	struct chan *c;
	uint64_t seq;
	size_t len;
	pid_t pid;
	int status;

	assert_int_equal(chan_create(f->dir, "r", NULL), 0);
	assert_int_equal(chan_open(f->dir, "r", &c), 0);
	assert_int_equal(chan_send(c, buf, 8, 0, &seq), 0);
	assert_int_equal(chan_wait_taken(c, seq, 30), -ETIMEDOUT);
	pid = fork();
	if (pid == 0) {
		struct chan *cc;

		usleep(50000);
		_exit(chan_open(f->dir, "r", &cc) || chan_recv(cc, buf, sizeof(buf), &len, 1000) ? 1 : 0);
	}
	uint64_t t0 = clock_ns();

	assert_int_equal(chan_wait_taken(c, seq, 5000), 0);
	assert_true(clock_ns() - t0 >= 40000000ull);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);
	chan_close(c);
}

#define PRODUCERS    3
#define CONSUMERS    2
#define PER_PRODUCER 20000

/* Several producer and consumer processes: every message arrives exactly once, in per-producer order. */
static void test_exactly_once_processes(void **state)
{
	struct fixture *f = *state;
	struct chan_attr a = {.capacity_msgs = 64, .capacity_bytes = 16384, .max_msg = 256};
	/* One bit per message, in shared memory so consumers can mark what they took. */
	size_t nbits = (size_t)PRODUCERS * PER_PRODUCER;
	_Atomic unsigned char *seen =
	    mmap(NULL, nbits + sizeof(size_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	_Atomic size_t *total = (_Atomic size_t *)(seen + nbits); /* nbits is a multiple of 8 */
	pid_t pids[PRODUCERS + CONSUMERS];
	int status;

	assert_true(seen != MAP_FAILED);
	assert_int_equal(chan_create(f->dir, "m", &a), 0);
	for (int p = 0; p < PRODUCERS; p++) {
		pids[p] = fork();
		if (pids[p] == 0) {
			unsigned char buf[256];
			struct chan *c;

			if (chan_open(f->dir, "m", &c))
				_exit(2);
			for (uint32_t n = 0; n < PER_PRODUCER; n++)
				if (chan_send(c, buf, make_msg(buf, (uint32_t)p, n, 8 + n % 249), 60000,
					      NULL))
					_exit(3);
			_exit(0);
		}
	}
	for (int k = 0; k < CONSUMERS; k++) {
		pids[PRODUCERS + k] = fork();
		if (pids[PRODUCERS + k] == 0) {
			uint32_t last[PRODUCERS];
			unsigned char buf[256];
			struct chan *c;
			size_t len;
			uint32_t p = 0, n = 0;
			int rc;

			memset(last, 0xff, sizeof(last));
			if (chan_open(f->dir, "m", &c))
				_exit(2);
			/* Until all messages are in, whoever took them; a deadline in case some never come.
			 */
			uint64_t until = clock_ns() + 60000000000ull;

			while (atomic_load(total) < nbits && clock_ns() < until) {
				rc = chan_recv(c, buf, sizeof(buf), &len, 100);
				if (rc == -ETIMEDOUT)
					continue;
				if (rc)
					_exit(7);
				if (!msg_intact(buf, len, &p, &n) || p >= PRODUCERS || n >= PER_PRODUCER ||
				    len != 8 + n % 249)
					_exit(4);
				if (last[p] != UINT32_MAX && n <= last[p])
					_exit(5); /* out of order within one producer */
				last[p] = n;
				if (atomic_fetch_add(&seen[(size_t)p * PER_PRODUCER + n], 1))
					_exit(6); /* duplicate */
				atomic_fetch_add(total, 1);
			}
			_exit(atomic_load(total) == nbits ? 0 : 8);
		}
	}
	for (int i = 0; i < PRODUCERS + CONSUMERS; i++) {
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	for (size_t i = 0; i < nbits; i++)
		assert_int_equal(seen[i], 1);
	munmap((void *)seen, nbits + sizeof(_Atomic size_t));
}

/*
 * Producers killed with SIGKILL at random moments, many times, some while
 * holding the lock in the middle of a copy: the channel keeps working, every
 * message a consumer gets is whole, and the lock was taken over.
 */
static void test_sigkill_mid_send(void **state)
{
	struct fixture *f = *state;
	struct chan_attr a = {.capacity_msgs = 256, .capacity_bytes = 1 << 20, .max_msg = 64 << 10};
	unsigned char *buf = malloc(64 << 10);
	struct chan_state st;
	struct chan *c;
	uint64_t got = 0;
	size_t len;
	uint32_t p = 0, n = 0;
	int status;

	assert_int_equal(chan_create(f->dir, "k", &a), 0);
	assert_int_equal(chan_open(f->dir, "k", &c), 0);
	/*
	 * 40 rounds, more (for up to a minute) while no kill has yet landed inside the lock: on a
	 * loaded machine the producer spends most of its time asleep on a full channel, and 400
	 * rounds sometimes saw no kill land inside.
	 */
	uint64_t give_up = clock_ns() + 60000000000ull;

	for (int round = 0;
	     round < 40 || (clock_ns() < give_up && chan_poll(c, &st, 0) == 0 && st.recovered == 0);
	     round++) {
		assert_int_equal(chan_poll(c, &st, 0), 0); /* st.sent before this producer */
		pid_t pid = fork();

		if (pid == 0) {
			struct chan *cc;

			if (chan_open(f->dir, "k", &cc))
				_exit(2);
			for (uint32_t i = 0;; i++)
				chan_send(cc, buf,
					  make_msg(buf, (uint32_t)round, i, 8 + (i * 4099) % (64 << 10)), -1,
					  NULL);
		}
		/*
		 * Wait until it is sending (a slow start, e.g. under TSan, must not
		 * make every kill land before the first send), then drain while it
		 * sends, so that it is mostly inside a copy when the signal lands.
		 */
		uint64_t sent_before = st.sent, started = clock_ns() + 10000000000ull;

		while (chan_poll(c, &st, 0) == 0 && st.sent == sent_before && clock_ns() < started)
			usleep(100);
		uint64_t until = clock_ns() + 1000000ull + (uint64_t)(round * 373) % 4000 * 1000ull;

		while (clock_ns() < until)
			if (chan_recv(c, buf, 64 << 10, &len, 0) == 0) {
				assert_true(msg_intact(buf, len, &p, &n));
				got++;
			}
		assert_int_equal(kill(pid, SIGKILL), 0);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		while (chan_recv(c, buf, 64 << 10, &len, 0) == 0) {
			assert_true(msg_intact(buf, len, &p, &n));
			assert_int_equal(p, (uint32_t)round);
			assert_int_equal(len, 8 + (n * 4099) % (64 << 10));
			got++;
		}
	}
	assert_true(got > 0);
	/* Still usable after all that. */
	assert_int_equal(chan_send(c, buf, make_msg(buf, 99, 1, 100), 0, NULL), 0);
	assert_int_equal(chan_recv(c, buf, 64 << 10, &len, 0), 0);
	assert_true(msg_intact(buf, len, &p, &n));
	assert_int_equal(chan_poll(c, &st, 0), 0);
	assert_true(st.empty);
	assert_int_equal(st.bytes, 0); /* the byte count was repaired after every takeover */
	assert_int_equal(st.sent, st.received);
	/* Some kills landed while the producer held the lock, and the next locker took it over. */
	print_message("%llu messages, lock taken over from a dead producer %llu times\n",
		      (unsigned long long)got, (unsigned long long)st.recovered);
	assert_true(st.recovered > 0);
	chan_close(c);
	free(buf);
}

struct thread_arg {
	const char *dir;
	uint32_t id;
	_Atomic unsigned char *seen;
	_Atomic int *producers_left;
	int failed;
};

#define THREAD_MSGS 20000

static void *producer_thread(void *p)
{
	struct thread_arg *a = p;
	unsigned char buf[64];
	struct chan *c;

	if (chan_open(a->dir, "t", &c)) {
		a->failed = 1;
		return NULL;
	}
	for (uint32_t n = 0; n < THREAD_MSGS; n++)
		if (chan_send(c, buf, make_msg(buf, a->id, n, 8 + n % 56), 10000, NULL))
			a->failed = 1;
	atomic_fetch_sub(a->producers_left, 1);
	chan_close(c);
	return NULL;
}

static void *consumer_thread(void *p)
{
	struct thread_arg *a = p;
	unsigned char buf[64];
	struct chan *c;
	size_t len;
	uint32_t pr, n;

	if (chan_open(a->dir, "t", &c)) {
		a->failed = 1;
		return NULL;
	}
	for (;;) {
		int rc = chan_recv(c, buf, sizeof(buf), &len, 50);

		if (rc == -ETIMEDOUT && atomic_load(a->producers_left) == 0)
			break;
		if (rc == -ETIMEDOUT)
			continue;
		if (rc || !msg_intact(buf, len, &pr, &n) || pr >= 3 || n >= THREAD_MSGS ||
		    atomic_fetch_add(&a->seen[pr * THREAD_MSGS + n], 1))
			a->failed = 1;
	}
	chan_close(c);
	return NULL;
}

/* The same exactly-once count with threads, each with its own mapping: what TSan can watch. */
static void test_exactly_once_threads(void **state)
{
	struct fixture *f = *state;
	struct chan_attr a = {.capacity_msgs = 32, .capacity_bytes = 2048, .max_msg = 64};
	_Atomic unsigned char *seen = calloc(3 * THREAD_MSGS, 1);
	_Atomic int left = 3;
	struct thread_arg args[5];
	pthread_t t[5];

	assert_int_equal(chan_create(f->dir, "t", &a), 0);
	for (int i = 0; i < 5; i++) {
		args[i] = (struct thread_arg){f->dir, (uint32_t)(i < 3 ? i : 0), seen, &left, 0};
		assert_int_equal(
		    pthread_create(&t[i], NULL, i < 3 ? producer_thread : consumer_thread, &args[i]), 0);
	}
	for (int i = 0; i < 5; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(args[i].failed, 0);
	}
	for (int i = 0; i < 3 * THREAD_MSGS; i++)
		assert_int_equal(seen[i], 1);
	free((void *)seen);
}

/*
 * A channel of one message between two sending and two receiving threads:
 * nearly every message makes a side sleep and the other wake it, both ways
 * (empty and full), with several sleepers on each word.  A lost wake-up
 * leaves a thread asleep until its 2 s timeout, which fails the test.
 */
#define HANDOFF_MSGS 4000 /* per sender */
#define HANDOFF_STOP UINT32_MAX

struct handoff {
	const char *dir;
	bool sender;
	_Atomic uint32_t *received;
	int rc;
};

static void *handoff_thread(void *p)
{
	struct handoff *h = p;
	struct chan *c;
	uint32_t v = 0;
	size_t len;

	h->rc = chan_open(h->dir, "h", &c);
	if (h->rc)
		return NULL;
	for (uint32_t n = 0; h->sender && n < HANDOFF_MSGS && !h->rc; n++)
		h->rc = chan_send(c, &n, sizeof(n), 2000, NULL);
	/* Receivers take messages until a stop message (HANDOFF_STOP) comes, one for each. */
	while (!h->sender && !h->rc) {
		h->rc = chan_recv(c, &v, sizeof(v), &len, 2000);
		if (!h->rc && len != sizeof(v))
			h->rc = -EBADMSG;
		if (h->rc || v == HANDOFF_STOP)
			break;
		atomic_fetch_add(h->received, 1);
	}
	chan_close(c);
	return NULL;
}

static void test_no_lost_wakeup(void **state)
{
	struct fixture *f = *state;
	struct chan_attr a = {.capacity_msgs = 1, .max_msg = 64};
	_Atomic uint32_t received = 0;
	struct handoff h[4];
	struct chan_state st;
	struct chan *c;
	pthread_t t[4];

	assert_int_equal(chan_create(f->dir, "h", &a), 0);
	for (int i = 0; i < 4; i++) {
		h[i] = (struct handoff){.dir = f->dir, .sender = i < 2, .received = &received};
		assert_int_equal(pthread_create(&t[i], NULL, handoff_thread, &h[i]), 0);
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(h[i].rc, 0);
	}
	assert_int_equal(chan_open(f->dir, "h", &c), 0);
	for (uint32_t i = 0, stop = HANDOFF_STOP; i < 2; i++)
		assert_int_equal(chan_send(c, &stop, sizeof(stop), 2000, NULL), 0);
	for (int i = 2; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(h[i].rc, 0);
	}
	assert_int_equal(atomic_load(&received), 2 * HANDOFF_MSGS);
	assert_int_equal(chan_poll(c, &st, 0), 0);
	assert_true(st.empty);
	assert_true(st.futex_calls > 0); /* the threads did sleep on each other */
	chan_close(c);
}

/* Maps a channel's file as another process of the user could, to corrupt it or hold its lock. */
static unsigned char *map_file(const char *dir, const char *name, size_t *len)
{
	char path[PATH_MAX];
	struct stat st;
	unsigned char *m;
	int fd;

	snprintf(path, sizeof(path), "%s/" CHAN_FILE_PREFIX "%s", dir, name);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	assert_true(m != MAP_FAILED);
	*len = (size_t)st.st_size;
	return m;
}

/* The header word holding a packed end {seq32, offset}: found by its value, not by a layout copy. */
static uint64_t *find_end(unsigned char *m, uint64_t value)
{
	for (size_t off = 0; off + 8 <= 4096; off += 8)
		if (!memcmp(m + off, &value, 8))
			return (uint64_t *)(m + off);
	return NULL;
}

/*
 * Issue 44 N4: ring offsets from the shared mapping are checked before use.
 * With the tail or head pointing far outside the ring (another process of
 * the user wrote them), send, recv and poll report -EBADMSG and the handle
 * stays quarantined; nothing is read or written out of bounds (the old code
 * died with SIGSEGV).
 */
static void test_corrupt_offsets(void **state)
{
	struct fixture *f = *state;
	struct chan_attr a = {.capacity_msgs = 8, .capacity_bytes = 4096, .max_msg = 256};
	unsigned char buf[256] = {1}, *m;
	struct chan_state st;
	struct chan *c;
	uint64_t *tail, *head;
	size_t len, maplen;

	for (int which = 0; which < 2; which++) {
		char name[16];

		snprintf(name, sizeof(name), "bad%d", which);
		assert_int_equal(chan_create(f->dir, name, &a), 0);
		assert_int_equal(chan_open(f->dir, name, &c), 0);
		assert_int_equal(chan_send(c, buf, 8, 0, NULL), 0); /* tail = {1, 24} */
		m = map_file(f->dir, name, &maplen);
		tail = find_end(m, 1ull << 32 | 24);
		assert_non_null(tail);
		head = tail - 1; /* the head is the word before the tail: {0, 0} */
		assert_true(*head == 0);
		if (which == 0)
			*tail = 2ull << 32 | 0x7ffffff0u; /* a tail far beyond the ring */
		else
			*head = 0x40000000u; /* a head far beyond the ring */
		assert_int_equal(chan_send(c, buf, 8, 0, NULL), -EBADMSG);
		assert_true(chan_corrupt(c));
		assert_int_equal(chan_recv(c, buf, sizeof(buf), &len, 0), -EBADMSG);
		assert_int_equal(chan_poll(c, &st, 0), -EBADMSG);
		chan_close(c);
		/* A fresh handle finds it corrupt too, whatever it tries first. */
		assert_int_equal(chan_open(f->dir, name, &c), 0);
		assert_int_equal(chan_recv(c, buf, sizeof(buf), &len, 0), -EBADMSG);
		chan_close(c);
		munmap(m, maplen);
	}
}

/*
 * Issue 44 N5: a process stopped while it holds a channel's lock.  A
 * try-once call returns -EAGAIN at once, a bounded one -ETIMEDOUT near its
 * deadline; none hangs (the old code waited forever on timeout 0).  Once
 * the holder goes on, the channel works.  alarm() fails the test rather
 * than letting it hang.
 */
static void test_stopped_lock_holder(void **state)
{
	struct fixture *f = *state;
	unsigned char buf[64] = {0}, *m;
	struct chan_state st;
	struct chan *c;
	size_t len, maplen;
	uint64_t t0, waited_ms;
	pid_t holder;
	int status;

	assert_int_equal(chan_create(f->dir, "held", NULL), 0);
	assert_int_equal(chan_open(f->dir, "held", &c), 0);
	assert_int_equal(chan_send(c, buf, 8, 0, NULL), 0);
	m = map_file(f->dir, "held", &maplen);
	holder = fork();
	assert_true(holder >= 0);
	if (holder == 0) {
		/* The lock is the first thing on the header's second cache line (channel.c). */
		pthread_mutex_t *lock = (pthread_mutex_t *)(m + 64);

		if (pthread_mutex_lock(lock) != 0)
			_exit(1);
		raise(SIGSTOP);
		pthread_mutex_unlock(lock);
		_exit(0);
	}
	assert_int_equal(waitpid(holder, &status, WUNTRACED), holder);
	assert_true(WIFSTOPPED(status));
	alarm(20);
	t0 = clock_ns();
	assert_int_equal(chan_recv(c, buf, sizeof(buf), &len, 0), -EAGAIN);
	assert_int_equal(chan_send(c, buf, 8, 0, NULL), -EAGAIN);
	assert_int_equal(chan_poll(c, &st, 0), -EAGAIN);
	assert_int_equal(chan_wait_taken(c, 0, 0), -EAGAIN);
	chan_set_try_lock(c);
	assert_int_equal(chan_recv(c, buf, sizeof(buf), &len, 0), -EAGAIN);
	assert_true(clock_ns() - t0 < 2000000000ull);
	t0 = clock_ns();
	assert_int_equal(chan_recv(c, buf, sizeof(buf), &len, 300), -ETIMEDOUT);
	waited_ms = (clock_ns() - t0) / 1000000;
	assert_true(waited_ms >= 250 && waited_ms < 5000);
	assert_int_equal(chan_send(c, buf, 8, 100, NULL), -ETIMEDOUT);
	kill(holder, SIGCONT);
	assert_int_equal(waitpid(holder, &status, 0), holder);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(chan_recv(c, buf, sizeof(buf), &len, 1000), 0);
	assert_int_equal(len, 8);
	alarm(0);
	chan_close(c);
	munmap(m, maplen);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names),
	    cmocka_unit_test_setup_teardown(test_create_open_destroy, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_order_and_boundaries, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_full_empty_timeouts_sizes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_no_lost_wakeup, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_permissions, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_wait_taken, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_exactly_once_processes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_exactly_once_threads, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sigkill_mid_send, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_corrupt_offsets, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_stopped_lock_holder, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
