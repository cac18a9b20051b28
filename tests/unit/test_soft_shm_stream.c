/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The move onto the shared-memory wire under a stream (hw/soft/wire.c): a
 * program that posts large RC WRITEs from its very first post, and keeps its
 * send queue full, must still see its connection move onto the rings (its ON
 * must not wait for a TCP queue that never empties), and every WRITE, those
 * queued while the move was negotiated included, must land once and right.
 * Over the last WRITEs the initiator copies next to nothing: the target pulls.
 */
#include "tests/unit/soft_fixture.h"
#include "hw/soft/soft.h"

#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#define MSG   (1u << 20)
#define NMSG  400 /* WRITEs in the stream */
#define NSLOT 60  /* in flight, each from its own source slot of MSG bytes (fx_qp allows 64 WRs) */
/*
 * The WRITEs whose copies are counted: all but those in flight while the move
 * was negotiated (queued then, they were copied once into the queue).  Before
 * the fix the move came when a TCP queue happened to empty, anywhere in the
 * stream (after 15 to 394 of 400 WRITEs in five runs): PAIRS streams.
 */
#define LAST_N	(NMSG - 2 * NSLOT - 8)
#define PAIRS	3
#define WAIT_MS 20000

/* WRITE msg carries slot msg % NSLOT's bytes, filled once: the poster does nothing else between posts. */
static unsigned char pattern(uint32_t msg, uint32_t i)
{
	return (unsigned char)(i * 13 + (msg % NSLOT) * 7 + 1);
}

/* The target: one MSG-byte MR; when told the stream ended, checks the last WRITE's bytes. */
static int target_main(int fd)
{
	struct fx_side s = {0};
	int32_t report[2];
	char c;

	if (fx_side_open(&s, fd, MSG, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE))
		return 10;
	if (read(fd, &c, 1) != 1)
		return 11;
	report[0] = 1;
	for (uint32_t i = 0; i < MSG; i++)
		if (s.buf[i] != pattern(NMSG - 1, i))
			report[0] = 0;
	report[1] = atomic_load(&soft_nic_of(s.ctx)->shm_conns);
	if (write(fd, report, sizeof(report)) != sizeof(report) || read(fd, &c, 1) != 1)
		return 12;
	fx_side_close(&s);
	return 0;
}

static void post_write(struct fx_side *s, uint32_t n)
{
	uint8_t *src = s->buf + (size_t)(n % NSLOT) * MSG;

	assert_int_equal(
	    fx_post(s->qp, IBV_WR_RDMA_WRITE, n, src, MSG, s->mr->lkey, s->peer.addr, s->peer.rkey), 0);
}

static void stream_pair(void)
{
	struct fx_side s = {0};
	struct soft_nic *nic;
	struct ibv_wc wc;
	uint64_t copied0 = 0;
	uint32_t posted = 0, done = 0;
	int32_t report[2];
	pid_t pid;
	int fd;

	fd = fx_fork_peer(target_main, &pid);
	assert_int_equal(
	    fx_side_open(&s, fd, (size_t)NSLOT * MSG, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE), 0);
	nic = soft_nic_of(s.ctx);
	for (uint32_t n = 0; n < NSLOT; n++)
		for (uint32_t i = 0; i < MSG; i++)
			s.buf[(size_t)n * MSG + i] = pattern(n, i);
	/* The stream starts with the connection: nothing waits for the shared wire first. */
	while (posted < NSLOT)
		post_write(&s, posted++);
	while (done < NMSG) {
		fx_wait(s.cq, &wc, WAIT_MS);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, done);
		done++;
		if (done == NMSG - LAST_N)
			copied0 = atomic_load(&nic->wire_copied_bytes);
		/* A slot is refilled once its WRITE completed: NSLOT in flight, each from its own slot. */
		if (posted < NMSG)
			post_write(&s, posted++);
	}
	uint64_t copied = atomic_load(&nic->wire_copied_bytes) - copied0;

	assert_int_equal(write(fd, "d", 1), 1);
	assert_int_equal(read(fd, report, sizeof(report)), sizeof(report));
	fprintf(stderr,
		"stream: shm_conns %d (target %d); initiator copied %llu bytes over the last %d MiB\n",
		atomic_load(&nic->shm_conns), report[1], (unsigned long long)copied, LAST_N);
	assert_true(report[0]);
	assert_true(atomic_load(&nic->shm_conns) >= 1 && report[1] >= 1);
	/* On the rings the target pulls each payload: the initiator copies only headers. */
	assert_true(copied < (uint64_t)LAST_N * MSG / 100);
	assert_int_equal(write(fd, "q", 1), 1);
	fx_expect_clean_exit(pid);
	close(fd);
	fx_side_close(&s);
}

static void stream_moves_onto_the_rings(void **state)
{
	(void)state;
	unsetenv("RDMATOOL_SOFT_SHM");
	for (int i = 0; i < PAIRS; i++)
		stream_pair();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(stream_moves_onto_the_rings),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
