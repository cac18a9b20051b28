/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The shared-memory wire (hw/soft/shm.c, shm_link.c): two processes of one
 * user move onto shared rings and pull large payloads with one CPU copy per
 * byte; RDMATOOL_SOFT_SHM=0 keeps them on TCP; faults hold on the rings; a
 * planted or foreign segment is refused and a broken ring is reported, never
 * followed; the rings themselves are checked under two threads (make tsan).
 */
#include "tests/unit/soft_fixture.h"
#include "hw/soft/soft.h"
#include "hw/soft/shm.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define BIG   (1u << 20)
#define NSEND 60 /* within the 64 receives fx_qp allows */

#define BUF_LEN (BIG + 4096) /* the receive slots after the WRITE's MiB; aligned_alloc wants whole pages */
#define ACCESS_ALL                                                                                           \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/*
 * This process's side and its forked peer.  Static, not on a test's stack:
 * a failed assertion leaves the test at once, and pair_teardown then stops
 * the peer and closes the device, so the next case opens a fresh NIC that
 * reads its environment again.
 */
static struct fx_side parent;
static pid_t peer_pid;
static int peer_fd = -1;

static int peer_start(int (*child)(int fd))
{
	peer_fd = fx_fork_peer(child, &peer_pid);
	return peer_fd;
}

/* The peer exited cleanly: nothing for pair_teardown to stop. */
static void peer_done(void)
{
	fx_expect_clean_exit(peer_pid);
	peer_pid = 0;
}

static int pair_teardown(void **state)
{
	(void)state;
	if (peer_pid > 0) {
		kill(peer_pid, SIGKILL);
		waitpid(peer_pid, NULL, 0);
		peer_pid = 0;
	}
	if (peer_fd >= 0)
		close(peer_fd);
	peer_fd = -1;
	fx_side_close(&parent);
	unsetenv("RDMATOOL_SOFT_SHM");
	unsetenv("RDMATOOL_SOFT_FAULTS");
	return 0;
}

struct report {
	uint64_t payload, copied; /* the child's counters over the WRITE */
	int32_t shm_conns;
	int ok; /* every SEND arrived once, in order, and the WRITE's bytes are right */
};

/* The target: posts NSEND receives and checks what came, then reports its counters over a WRITE. */
static int target_main(int fd)
{
	struct fx_side s = {0};
	struct soft_nic *nic;
	struct report r = {.ok = 1};
	struct ibv_wc wc;
	uint64_t payload0, copied0;
	char c;

	if (fx_side_open(&s, fd, BUF_LEN, ACCESS_ALL))
		return 10;
	nic = soft_nic_of(s.ctx);
	for (int i = 0; i < NSEND; i++)
		if (fx_post_recv(s.qp, (uint64_t)i, s.buf + BIG + 8 * i, 8, s.mr->lkey))
			return 11;
	if (write(fd, "r", 1) != 1)
		return 12;
	for (int i = 0; i < NSEND; i++) {
		uint64_t v;

		fx_wait(s.cq, &wc, 10000);
		memcpy(&v, s.buf + BIG + 8 * i, 8);
		r.ok &= wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)i && v == (uint64_t)i * 3;
	}
	fx_none(s.cq, 100); /* and nothing more: every message exactly once */
	payload0 = atomic_load(&nic->wire_payload_bytes);
	copied0 = atomic_load(&nic->wire_copied_bytes);
	if (write(fd, "w", 1) != 1 || read(fd, &c, 1) != 1) /* the WRITE is done when the initiator says so */
		return 13;
	r.payload = atomic_load(&nic->wire_payload_bytes) - payload0;
	r.copied = atomic_load(&nic->wire_copied_bytes) - copied0;
	for (uint32_t i = 0; i < BIG; i++)
		r.ok &= s.buf[i] == (uint8_t)(i * 7 + 1);
	r.shm_conns = atomic_load(&nic->shm_conns);
	if (write(fd, &r, sizeof(r)) != sizeof(r) || read(fd, &c, 1) != 1)
		return 14;
	fx_side_close(&s);
	return 0;
}

/*
 * Runs the initiator against a forked target: NSEND SENDs, then (on the
 * shared wire once it is up, when want_shm) one 1 MiB WRITE; returns the
 * target's report and our own copies over the WRITE.
 */
static void run_pair(bool want_shm, struct report *r, uint64_t *copied, int32_t *shm_conns)
{
	struct fx_side *s = &parent;
	struct soft_nic *nic;
	struct ibv_wc wc;
	uint64_t copied0, end;
	int fd = peer_start(target_main);
	char c;

	assert_int_equal(fx_side_open(s, fd, BUF_LEN, ACCESS_ALL), 0);
	nic = soft_nic_of(s->ctx);
	for (uint32_t i = 0; i < BIG; i++)
		s->buf[i] = (uint8_t)(i * 7 + 1);
	assert_int_equal(read(fd, &c, 1), 1);
	for (int i = 0; i < NSEND; i++) {
		uint64_t v = (uint64_t)i * 3;

		memcpy(s->buf + BIG + 8 * i, &v, 8);
		assert_int_equal(
		    fx_post(s->qp, IBV_WR_SEND, (uint64_t)i, s->buf + BIG + 8 * i, 8, s->mr->lkey, 0, 0), 0);
		fx_wait(s->cq, &wc, 10000);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
	}
	assert_int_equal(read(fd, &c, 1), 1);
	end = fx_now_ms() + FX_PEER_WAIT_MS;
	while (want_shm && !atomic_load(&nic->shm_conns) && fx_now_ms() < end)
		usleep(1000);
	copied0 = atomic_load(&nic->wire_copied_bytes);
	assert_int_equal(
	    fx_post(s->qp, IBV_WR_RDMA_WRITE, 1, s->buf, BIG, s->mr->lkey, s->peer.addr, s->peer.rkey), 0);
	fx_wait(s->cq, &wc, 10000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	*copied = atomic_load(&nic->wire_copied_bytes) - copied0;
	assert_int_equal(write(fd, "d", 1), 1);
	assert_int_equal(read(fd, r, sizeof(*r)), sizeof(*r));
	*shm_conns = atomic_load(&nic->shm_conns);
	assert_int_equal(write(fd, "q", 1), 1);
	peer_done();
	fx_side_close(s);
}

/* Two processes: the shared wire by default, data right, once each, one CPU copy per payload byte. */
static void shm_pair_one_copy(void **state)
{
	struct report r;
	uint64_t copied;
	int32_t conns;

	(void)state;
	unsetenv("RDMATOOL_SOFT_SHM");
	run_pair(true, &r, &copied, &conns);
	assert_true(r.ok);
	assert_true(conns >= 1 && r.shm_conns >= 1);
	assert_int_equal(r.payload, BIG);
	/* Both sides' copies over the WRITE: the pull, and a few headers through the rings. */
	fprintf(stderr, "shm: %llu + %llu bytes copied for %llu payload bytes\n", (unsigned long long)copied,
		(unsigned long long)r.copied, (unsigned long long)r.payload);
	assert_true(copied + r.copied >= BIG && copied + r.copied < BIG + BIG / 100);
}

/* RDMATOOL_SOFT_SHM=0: the same over TCP, and the copies say so. */
static void shm_off_stays_on_tcp(void **state)
{
	struct report r;
	uint64_t copied;
	int32_t conns;

	(void)state;
	setenv("RDMATOOL_SOFT_SHM", "0", 1);
	run_pair(false, &r, &copied, &conns);
	unsetenv("RDMATOOL_SOFT_SHM");
	assert_true(r.ok);
	assert_int_equal(conns, 0);
	assert_int_equal(r.shm_conns, 0);
	assert_true(copied + r.copied >= 2ull * BIG);
}

/* A malformed RDMATOOL_SOFT_SHM makes the device open fail with a message naming it. */
static void shm_env_checked(void **state)
{
	(void)state;
	setenv("RDMATOOL_SOFT_SHM", "yes", 1);
	assert_null(hw_open_device("soft0", NULL));
	assert_non_null(strstr(hw_open_error(), "RDMATOOL_SOFT_SHM"));
	unsetenv("RDMATOOL_SOFT_SHM");
}

/* A segment someone else planted (wrong mode, wrong size, a symlink) is refused, not mapped. */
static void planted_segments_refused(void **state)
{
	char name[SOFT_SHM_NAME_MAX], path[128];
	int fd;

	(void)state;
	/* A name of the shared wire's form, this process's own: two runs of this test may overlap. */
	snprintf(name, sizeof(name), "/rdmatool-softwire-%08x%016llx", (unsigned)getpid(), 0x5eedull);
	snprintf(path, sizeof(path), "/dev/shm%s", name);
	shm_unlink(name);
	fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	assert_int_equal(fchmod(fd, 0644), 0);
	assert_int_equal(ftruncate(fd, 1 << 20), 0);
	assert_null(soft_shm_open(name));
	assert_int_equal(errno, EPERM);
	assert_int_equal(fchmod(fd, 0600), 0); /* right mode, wrong size */
	assert_null(soft_shm_open(name));
	assert_int_equal(errno, EINVAL);
	close(fd);
	shm_unlink(name);
	assert_int_equal(symlink("/dev/null", path), 0);
	assert_null(soft_shm_open(name));
	unlink(path);
	assert_null(soft_shm_open("/etc/passwd"));
	assert_null(soft_shm_open("/rdmatool-softwire-../../etc/x"));
}

/* The creator's segment is 0600, the opener maps it, and the name goes once both did. */
static void segment_made_private(void **state)
{
	char name[SOFT_SHM_NAME_MAX], buf[64];
	struct soft_shm *a, *b;
	struct stat st;

	(void)state;
	a = soft_shm_create(name);
	assert_non_null(a);
	b = soft_shm_open(name);
	assert_non_null(b);
	/* The creator's file is the user's own, 0600, and goes once both mapped. */
	char path[128];

	snprintf(path, sizeof(path), "/dev/shm%s", name);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	soft_shm_unlink(a);
	assert_int_not_equal(stat(path, &st), 0);
	assert_int_equal(soft_shm_write(a, "hello", 5), 5);
	assert_int_equal(soft_shm_read(b, buf, sizeof(buf)), 5);
	assert_memory_equal(buf, "hello", 5);
	soft_shm_close(a);
	soft_shm_close(b);
}

/*
 * A peer that writes impossible ring indices (the segment's ring 0 tail at
 * byte 128, its head at 192: shm.c's layout) gets -EPROTO, and nothing is
 * read or written; a connection would be quarantined (wire.c).
 */
static void broken_ring_reported(void **state)
{
	char name[SOFT_SHM_NAME_MAX], buf[64];
	struct soft_shm *a, *b;
	uint8_t *raw;
	int fd;

	(void)state;
	a = soft_shm_create(name);
	assert_non_null(a);
	b = soft_shm_open(name);
	assert_non_null(b);
	fd = shm_open(name, O_RDWR, 0);
	assert_true(fd >= 0);
	raw = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(raw != MAP_FAILED);
	close(fd);
	soft_shm_unlink(a);
	__atomic_store_n((uint64_t *)(raw + 128), (uint64_t)1 << 40, __ATOMIC_RELEASE);
	assert_int_equal(soft_shm_read(b, buf, sizeof(buf)), -EPROTO);
	__atomic_store_n((uint64_t *)(raw + 192), (uint64_t)1 << 40, __ATOMIC_RELEASE);
	assert_int_equal(soft_shm_write(a, "x", 1), -EPROTO);
	munmap(raw, 4096);
	soft_shm_close(a);
	soft_shm_close(b);
}

#if defined(__SANITIZE_THREAD__)
void __tsan_ignore_thread_begin(void);
void __tsan_ignore_thread_end(void);
#define HOSTILE_BEGIN() __tsan_ignore_thread_begin()
#define HOSTILE_END()	__tsan_ignore_thread_end()
#else
#define HOSTILE_BEGIN() ((void)0)
#define HOSTILE_END()	((void)0)
#endif

/*
 * Writes impossible indices over both rings of every shared-wire segment this
 * process mapped; how many.  It stands for another process: ThreadSanitizer
 * is told to ignore its writes (the device's own accesses stay checked).
 */
static int scribble_segments(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	while (f && fgets(line, sizeof(line), f)) {
		uint8_t *seg;

		if (!strstr(line, "/rdmatool-softwire-"))
			continue;
		/* shm.c's layout: ring 0's tail at byte 128, its head at 192, ring 1's at 256 and 320. */
		seg = (uint8_t *)(uintptr_t)strtoull(line, NULL, 16);
		HOSTILE_BEGIN();
		for (int off = 128; off <= 320; off += 64)
			__atomic_store_n((uint64_t *)(seg + off), ~0ull / 3, __ATOMIC_RELEASE);
		HOSTILE_END();
		n++;
	}
	if (f)
		fclose(f);
	return n;
}

static bool wait_shm(struct soft_nic *nic)
{
	uint64_t end = fx_now_ms() + FX_PEER_WAIT_MS;

	while (!atomic_load(&nic->shm_conns) && fx_now_ms() < end)
		usleep(1000);
	return atomic_load(&nic->shm_conns) > 0;
}

/* The hostile peer: once on the rings, it scribbles impossible indices over both of them. */
static int scribbler_main(int fd)
{
	struct fx_side s = {0};
	struct ibv_wc wc;
	char c;

	/* A second receive: our peer's next SEND may come on a new connection, once it gave this one up. */
	if (fx_side_open(&s, fd, BUF_LEN, ACCESS_ALL) || fx_post_recv(s.qp, 1, s.buf + BIG, 8, s.mr->lkey) ||
	    fx_post_recv(s.qp, 2, s.buf + BIG + 8, 8, s.mr->lkey) || write(fd, "r", 1) != 1)
		return 10;
	fx_wait(s.cq, &wc, 10000);
	/* Both sides on the rings (the initiator says when it is) before the scribbling starts. */
	if (wc.status != IBV_WC_SUCCESS || !wait_shm(soft_nic_of(s.ctx)) || read(fd, &c, 1) != 1 ||
	    !scribble_segments())
		return 11;
	if (write(fd, "c", 1) != 1 || read(fd, &c, 1) != 1)
		return 12;
	return 0; /* no clean close: the device may already have given the connection up */
}

/* A peer that breaks the rings loses its connection (quarantined); the device survives and says so. */
static void broken_peer_quarantined(void **state)
{
	struct fx_side *s = &parent;
	struct soft_nic *nic;
	struct ibv_wc wc;
	uint64_t end;
	int fd;
	char c;

	(void)state;
	unsetenv("RDMATOOL_SOFT_SHM");
	fd = peer_start(scribbler_main);
	assert_int_equal(fx_side_open(s, fd, BUF_LEN, ACCESS_ALL), 0);
	nic = soft_nic_of(s->ctx);
	assert_int_equal(read(fd, &c, 1), 1);
	assert_int_equal(fx_post(s->qp, IBV_WR_SEND, 1, s->buf, 8, s->mr->lkey, 0, 0), 0);
	fx_wait(s->cq, &wc, 10000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_true(wait_shm(nic));
	assert_int_equal(write(fd, "g", 1), 1);
	assert_int_equal(read(fd, &c, 1), 1);
	/*
	 * Our next packet meets the broken ring, or the engine found it first
	 * and the SEND leaves on a new connection (the peer is still alive):
	 * either way it completes, and the broken one was quarantined.
	 */
	assert_int_equal(fx_post(s->qp, IBV_WR_SEND, 2, s->buf, 8, s->mr->lkey, 0, 0), 0);
	fx_wait(s->cq, &wc, 20000);
	assert_int_equal(wc.wr_id, 2);
	end = fx_now_ms() + FX_PEER_WAIT_MS;
	while (!atomic_load(&nic->shm_quarantined) && fx_now_ms() < end)
		usleep(1000);
	assert_true(atomic_load(&nic->shm_quarantined) >= 1);
	assert_int_equal(write(fd, "q", 1), 1);
	peer_done();
	fx_side_close(s);
}

/* The faults hold on the shared wire: with drops every atomic still executes exactly once. */
static int adder_target_main(int fd)
{
	struct fx_side s = {0};
	char c;

	if (fx_side_open(&s, fd, BUF_LEN, ACCESS_ALL) || write(fd, "r", 1) != 1 || read(fd, &c, 1) != 1)
		return 10;
	if (*(uint64_t *)s.buf != 40)
		return 11;
	if (write(fd, "y", 1) != 1 || read(fd, &c, 1) != 1)
		return 12;
	fx_side_close(&s);
	return 0;
}

static void faults_on_the_shared_wire(void **state)
{
	struct fx_side *s = &parent;
	struct ibv_wc wc;
	int fd;
	char c;

	(void)state;
	unsetenv("RDMATOOL_SOFT_SHM");
	setenv("RDMATOOL_SOFT_FAULTS", "drop=0.3,delay_us=50,seed=5", 1);
	fd = peer_start(adder_target_main);
	assert_int_equal(fx_side_open(s, fd, BUF_LEN, ACCESS_ALL), 0);
	unsetenv("RDMATOOL_SOFT_FAULTS");
	assert_int_equal(read(fd, &c, 1), 1);
	for (int i = 0; i < 40; i++) {
		struct ibv_sge sge = {.addr = (uintptr_t)s->buf, .length = 8, .lkey = s->mr->lkey};
		struct ibv_send_wr wr = {.wr_id = (uint64_t)i,
					 .sg_list = &sge,
					 .num_sge = 1,
					 .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD},
				   *bad;

		wr.wr.atomic.remote_addr = s->peer.addr;
		wr.wr.atomic.rkey = s->peer.rkey;
		wr.wr.atomic.compare_add = 1;
		assert_int_equal(hw_post_send(s->qp, &wr, &bad), 0);
		fx_wait(s->cq, &wc, 20000);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(*(uint64_t *)s->buf, (uint64_t)i);
	}
	assert_true(atomic_load(&soft_nic_of(s->ctx)->fault_drops) > 0);
	assert_true(atomic_load(&soft_nic_of(s->ctx)->shm_conns) > 0);
	assert_int_equal(write(fd, "d", 1), 1);
	assert_int_equal(read(fd, &c, 1), 1);
	assert_int_equal(c, 'y');
	assert_int_equal(write(fd, "q", 1), 1);
	peer_done();
	fx_side_close(s);
}

/* One writer thread, one reader thread: every byte arrives once, in order (run under make tsan). */
struct ring_pair {
	struct soft_shm *w, *r;
};

#define RING_TOTAL (8u << 20)

static void *ring_writer(void *arg)
{
	struct ring_pair *p = arg;
	uint8_t chunk[3001];
	uint32_t sent = 0;

	while (sent < RING_TOTAL) {
		uint32_t n = RING_TOTAL - sent < sizeof(chunk) ? RING_TOTAL - sent : (uint32_t)sizeof(chunk);
		ssize_t k;

		for (uint32_t i = 0; i < n; i++)
			chunk[i] = (uint8_t)((sent + i) * 13);
		k = soft_shm_write(p->w, chunk, n);
		assert_true(k >= 0);
		if (k < (ssize_t)n) {
			/* Partial: resend the rest from the right offset next time. */
			sent += (uint32_t)k;
			sched_yield();
			continue;
		}
		sent += n;
	}
	return NULL;
}

static void rings_under_two_threads(void **state)
{
	char name[SOFT_SHM_NAME_MAX];
	struct ring_pair p;
	pthread_t t;
	uint8_t buf[4096];
	uint32_t got = 0;
	int bad = 0;

	(void)state;
	p.w = soft_shm_create(name);
	assert_non_null(p.w);
	p.r = soft_shm_open(name);
	assert_non_null(p.r);
	soft_shm_unlink(p.w);
	/* The opener reads what the creator writes: ring 0. */
	assert_int_equal(pthread_create(&t, NULL, ring_writer, &p), 0);
	while (got < RING_TOTAL) {
		ssize_t n = soft_shm_read(p.r, buf, sizeof(buf));

		assert_true(n >= 0);
		for (ssize_t i = 0; i < n; i++)
			bad |= buf[i] != (uint8_t)((got + (uint32_t)i) * 13);
		got += (uint32_t)n;
		if (!n)
			sched_yield();
	}
	pthread_join(t, NULL);
	assert_false(bad);
	assert_false(soft_shm_readable(p.r));
	soft_shm_close(p.w);
	soft_shm_close(p.r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(shm_pair_one_copy, pair_teardown),
	    cmocka_unit_test_teardown(shm_off_stays_on_tcp, pair_teardown),
	    cmocka_unit_test_teardown(shm_env_checked, pair_teardown),
	    cmocka_unit_test_teardown(planted_segments_refused, pair_teardown),
	    cmocka_unit_test_teardown(segment_made_private, pair_teardown),
	    cmocka_unit_test_teardown(broken_ring_reported, pair_teardown),
	    cmocka_unit_test_teardown(rings_under_two_threads, pair_teardown),
	    cmocka_unit_test_teardown(broken_peer_quarantined, pair_teardown),
	    cmocka_unit_test_teardown(faults_on_the_shared_wire, pair_teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
