/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The soft NIC against a stranger on its wire port (issue 15 items 5, 6, 8,
 * 15): forged requests that know the QPN, PSN and rkey but do not come from
 * the QP's connected remote touch nothing; a header that declares a huge
 * payload is refused before anything is buffered; idle connections do not
 * stop traffic; identifiers are random per NIC; a malformed
 * RDMATOOL_SOFT_FAULTS is an error.
 */
#include "tests/unit/soft_fixture.h"
#include "hw/soft/soft.h"
#include "hw/soft/wire.h"

#include <arpa/inet.h>
#include <endian.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A TCP connection to this process's soft NIC, as any local user can open one. */
static int wire_connect(struct soft_nic *nic)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (const struct sockaddr *)&nic->addr, sizeof(nic->addr)), 0);
	return fd;
}

static void send_forged_write(int fd, uint32_t dst_qpn, uint32_t src_qpn, uint32_t psn, uint32_t rkey,
			      uint64_t raddr, const union ibv_gid *sgid, const void *data, uint32_t len)
{
	struct soft_wire_hdr h = {
	    .magic = htole32(SOFT_WIRE_MAGIC),
	    .payload = htole32(len),
	    .type = SOFT_PKT_REQ,
	    .opcode = IBV_WR_RDMA_WRITE,
	    .qp_type = IBV_QPT_RC,
	    .src_qpn = htole32(src_qpn),
	    .dst_qpn = htole32(dst_qpn),
	    .psn = htole32(psn),
	    .rkey = htole32(rkey),
	    .length = htole32(len),
	    .raddr = htole64(raddr),
	};

	memcpy(h.sgid, sgid->raw, 16);
	assert_int_equal(write(fd, &h, sizeof(h)), sizeof(h));
	assert_int_equal(write(fd, data, len), (ssize_t)len);
}

static bool wait_counter(atomic_ulong *counter, unsigned long above, unsigned ms)
{
	uint64_t end = fx_now_ms() + ms;

	while (atomic_load(counter) <= above && fx_now_ms() < end)
		usleep(1000);
	return atomic_load(counter) > above;
}

/* Item 5: knowing QPN, PSN and rkey is not enough: the request must come from the QP's remote. */
static void forged_requests_touch_nothing(void **state)
{
	struct fx *f = *state;
	struct soft_nic *nic = soft_nic_of(f->ctx);
	union ibv_gid stranger = {.raw = {0xfe, 0x80, [8] = 127, 0, 0, 1, 0x12, 0x34, 'S', 'W'}}, own;
	unsigned long drops = atomic_load(&nic->foreign_drops);
	struct ibv_wc wc;
	int fd;

	assert_int_equal(hw_query_gid(f->ctx, 1, 0, &own), 0);
	fd = wire_connect(nic);
	/* Everything right (b's QPN, the PSN b expects, a's QPN, b's rkey) but the source GID. */
	send_forged_write(fd, f->b->qp_num, f->a->qp_num, 100, f->bmr->rkey, (uintptr_t)f->bbuf, &stranger,
			  "EVIL", 4);
	assert_true(wait_counter(&nic->foreign_drops, drops, 5000));
	/* Claiming to be the NIC itself, which never speaks to itself over the wire. */
	drops = atomic_load(&nic->foreign_drops);
	send_forged_write(fd, f->b->qp_num, f->a->qp_num, 100, f->bmr->rkey, (uintptr_t)f->bbuf, &own, "EVIL",
			  4);
	assert_true(wait_counter(&nic->foreign_drops, drops, 5000));
	/* Claiming GID index 1, which only the NIC's own connections to itself may carry. */
	assert_int_equal(hw_query_gid(f->ctx, 1, 1, &own), 0);
	drops = atomic_load(&nic->foreign_drops);
	send_forged_write(fd, f->b->qp_num, f->a->qp_num, 100, f->bmr->rkey, (uintptr_t)f->bbuf, &own, "EVIL",
			  4);
	assert_true(wait_counter(&nic->foreign_drops, drops, 5000));
	close(fd);
	assert_memory_equal(f->bbuf, "\0\0\0\0", 4);
	/* The real connection is unharmed: the PSN b expects was not consumed. */
	memcpy(f->abuf, "GOOD", 4);
	assert_int_equal(
	    fx_post(f->a, IBV_WR_RDMA_WRITE, 1, f->abuf, 4, f->amr->lkey, (uintptr_t)f->bbuf, f->bmr->rkey),
	    0);
	fx_wait(f->scq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_memory_equal(f->bbuf, "GOOD", 4);
}

/* Item 8: a declared 1 GiB payload is refused at its header; nothing of it is buffered. */
static void huge_payload_is_refused_at_the_header(void **state)
{
	struct fx *f = *state;
	struct soft_nic *nic = soft_nic_of(f->ctx);
	union ibv_gid stranger = {.raw = {0xfe, 0x80, [8] = 127, 0, 0, 1, 0x12, 0x35, 'S', 'W'}};
	unsigned long rejects = atomic_load(&nic->wire_rejects);
	struct soft_wire_hdr h = {
	    .magic = htole32(SOFT_WIRE_MAGIC),
	    .payload = htole32(1u << 30),
	    .type = SOFT_PKT_REQ,
	    .opcode = IBV_WR_RDMA_WRITE,
	    .qp_type = IBV_QPT_RC,
	    .dst_qpn = htole32(f->b->qp_num),
	    .length = htole32(1u << 30),
	};
	char chunk[65536] = {0}, byte;
	struct pollfd p;
	int fd = wire_connect(nic);

	memcpy(h.sgid, stranger.raw, 16);
	assert_int_equal(write(fd, &h, sizeof(h)), sizeof(h));
	/* The NIC hangs up: reads end with EOF (or a reset) within the deadline, however much we push. */
	for (int i = 0; i < 64; i++)
		if (send(fd, chunk, sizeof(chunk), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			break;
	p = (struct pollfd){.fd = fd, .events = POLLIN};
	assert_int_equal(poll(&p, 1, 5000), 1);
	assert_true(read(fd, &byte, 1) <= 0);
	assert_true(atomic_load(&nic->wire_rejects) > rejects);
	close(fd);
}

/* Item 8: many idle connections neither stop traffic nor are all kept (unverified ones are capped). */
static void idle_connections_cost_nothing(void **state)
{
	struct fx *f = *state;
	struct soft_nic *nic = soft_nic_of(f->ctx);
	int fds[300];
	struct ibv_wc wc;

	for (int i = 0; i < 300; i++)
		fds[i] = wire_connect(nic);
	for (int round = 0; round < 20; round++) {
		f->abuf[0] = (uint8_t)round;
		assert_int_equal(fx_post(f->a, IBV_WR_RDMA_WRITE, 2, f->abuf, 64, f->amr->lkey,
					 (uintptr_t)f->bbuf, f->bmr->rkey),
				 0);
		fx_wait(f->scq, &wc, 5000);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(f->bbuf[0], (uint8_t)round);
	}
	/* The NIC kept at most SOFT_MAX_UNVERIFIED (64) of them: the oldest were closed. */
	assert_true(atomic_load(&nic->n_conns) <= 64 + 2);
	for (int i = 0; i < 300; i++)
		close(fds[i]);
}

/* Item 6: a fresh NIC picks its QPN generations and key bytes at random. */
static void identifiers_are_random(void **state)
{
	(void)state;
	uint32_t qpn[4], rkey[4];

	/* No other test holds the NIC here, so every open creates a new one. */
	for (int i = 0; i < 4; i++) {
		struct ibv_context *ctx = hw_open_device("soft0", NULL);
		struct ibv_pd *pd = hw_alloc_pd(ctx);
		struct ibv_cq *cq = hw_create_cq(ctx, 16, NULL, NULL, 0);
		struct ibv_qp *qp = fx_qp(pd, cq, IBV_QPT_RC, 1);
		static char buf[64];
		struct ibv_mr *mr = hw_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);

		assert_non_null(qp);
		assert_non_null(mr);
		qpn[i] = qp->qp_num;
		rkey[i] = mr->rkey;
		hw_dereg_mr(mr);
		hw_destroy_qp(qp);
		hw_destroy_cq(cq);
		hw_dealloc_pd(pd);
		hw_close_device(ctx);
	}
	assert_false(qpn[0] == qpn[1] && qpn[1] == qpn[2] && qpn[2] == qpn[3]);
	assert_false((rkey[0] & 0xff) == (rkey[1] & 0xff) && (rkey[1] & 0xff) == (rkey[2] & 0xff) &&
		     (rkey[2] & 0xff) == (rkey[3] & 0xff));
}

/* Item 8: out of file descriptors, the NIC stops accepting for a while instead of spinning, then resumes. */
static int emfile_child(int fd)
{
	struct ibv_context *ctx = hw_open_device("soft0", NULL);
	struct soft_nic *nic = ctx ? soft_nic_of(ctx) : NULL;
	struct rlimit saved, tight;
	struct rusage r0, r1;
	uint64_t end;
	char go;
	long result[2];
	int lowest_free = 0;

	if (!nic || write(fd, &nic->addr, sizeof(nic->addr)) != sizeof(nic->addr))
		return 10;
	while (fcntl(lowest_free, F_GETFD) >= 0)
		lowest_free++;
	getrlimit(RLIMIT_NOFILE, &saved);
	tight = saved;
	tight.rlim_cur = (rlim_t)lowest_free; /* no descriptor left: every accept fails with EMFILE */
	if (setrlimit(RLIMIT_NOFILE, &tight) || write(fd, "r", 1) != 1 || read(fd, &go, 1) != 1)
		return 11;
	getrusage(RUSAGE_SELF, &r0);
	usleep(1500000);
	getrusage(RUSAGE_SELF, &r1);
	result[0] =
	    (r1.ru_utime.tv_sec - r0.ru_utime.tv_sec + r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) * 1000000 +
	    (r1.ru_utime.tv_usec - r0.ru_utime.tv_usec + r1.ru_stime.tv_usec - r0.ru_stime.tv_usec);
	setrlimit(RLIMIT_NOFILE, &saved);
	end = fx_now_ms() + 5000;
	while (atomic_load(&nic->n_conns) < 5 && fx_now_ms() < end)
		usleep(1000);
	result[1] = atomic_load(&nic->n_conns);
	return write(fd, result, sizeof(result)) == sizeof(result) ? 0 : 12;
}

static void out_of_fds_backs_off(void **state)
{
	(void)state;
	struct sockaddr_in addr;
	long result[2];
	int fd, conns[5];
	char ready;
	pid_t pid;

	fd = fx_fork_peer(emfile_child, &pid);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, &addr, sizeof(addr)), sizeof(addr));
	assert_int_equal(read(fd, &ready, 1), 1);
	for (int i = 0; i < 5; i++) {
		conns[i] = socket(AF_INET, SOCK_STREAM, 0);
		assert_int_equal(connect(conns[i], (struct sockaddr *)&addr, sizeof(addr)), 0);
	}
	assert_int_equal(write(fd, "g", 1), 1);
	assert_int_equal(read(fd, result, sizeof(result)), sizeof(result));
	/* Spinning on the listener burned 0.67 s of CPU in this 1.5 s here; backing off costs ~4 ms. */
	assert_true(result[0] < 200000);
	/* Once descriptors are back, the waiting connections are accepted. */
	assert_int_equal(result[1], 5);
	for (int i = 0; i < 5; i++)
		close(conns[i]);
	close(fd);
	waitpid(pid, NULL, 0);
}

/* One RC QP whose connected remote is a stranger's GID and QPN (what a forger would claim to be). */
struct lone {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t buf[4096];
};

static void lone_open(struct lone *l, const union ibv_gid *remote, uint32_t remote_qpn)
{
	l->ctx = hw_open_device("soft0", NULL);
	assert_non_null(l->ctx);
	l->pd = hw_alloc_pd(l->ctx);
	l->cq = hw_create_cq(l->ctx, 16, NULL, NULL, 0);
	l->qp = fx_qp(l->pd, l->cq, IBV_QPT_RC, 1);
	memset(l->buf, 0, sizeof(l->buf));
	l->mr = hw_reg_mr(l->pd, l->buf, sizeof(l->buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(l->qp);
	assert_non_null(l->mr);
	fx_rc_to_rts(l->qp, remote_qpn, remote, 8, 3, 3, 1);
}

static void lone_close(struct lone *l)
{
	hw_dereg_mr(l->mr);
	hw_destroy_qp(l->qp);
	hw_destroy_cq(l->cq);
	hw_dealloc_pd(l->pd);
	hw_close_device(l->ctx);
}

/* Item 7: with a secret, nothing is served to a connection that did not prove it. */
static void secret_required_before_any_packet(void **state)
{
	(void)state;
	union ibv_gid peer = {.raw = {0xfe, 0x80, [8] = 127, 0, 0, 1, 0x22, 0x22, 'S', 'W'}};
	struct lone *l = calloc(1, sizeof(*l));
	uint8_t hello[SOFT_AUTH_HELLO_LEN], nonce[SOFT_AUTH_NONCE], bad_proof[SOFT_AUTH_PROOF_LEN] = {1};
	struct soft_nic *nic;
	unsigned long failures;
	int fd;

	assert_non_null(l);
	/* Without a secret the wire trusts whoever claims the right GID, QPN and PSN: the control case. */
	unsetenv("RDMATOOL_SOFT_SECRET");
	lone_open(l, &peer, 0x2222);
	nic = soft_nic_of(l->ctx);
	fd = wire_connect(nic);
	send_forged_write(fd, l->qp->qp_num, 0x2222, 100, l->mr->rkey, (uintptr_t)l->buf, &peer, "OPEN", 4);
	for (uint64_t end = fx_now_ms() + 5000; memcmp(l->buf, "OPEN", 4) && fx_now_ms() < end;)
		usleep(1000);
	assert_memory_equal(l->buf, "OPEN", 4);
	close(fd);
	lone_close(l);

	setenv("RDMATOOL_SOFT_SECRET", "s3cret", 1);
	lone_open(l, &peer, 0x2222);
	nic = soft_nic_of(l->ctx);
	assert_true(nic->auth.on);
	/* The same packet, straight away: not a HELLO, the connection is dropped. */
	failures = atomic_load(&nic->auth_failures);
	fd = wire_connect(nic);
	send_forged_write(fd, l->qp->qp_num, 0x2222, 100, l->mr->rkey, (uintptr_t)l->buf, &peer, "EVIL", 4);
	assert_true(wait_counter(&nic->auth_failures, failures, 5000));
	close(fd);
	/* A HELLO, then a proof made without the secret, then the packet. */
	failures = atomic_load(&nic->auth_failures);
	fd = wire_connect(nic);
	soft_auth_hello(nonce, hello);
	assert_int_equal(write(fd, hello, sizeof(hello)), sizeof(hello));
	assert_int_equal(write(fd, bad_proof, sizeof(bad_proof)), sizeof(bad_proof));
	send_forged_write(fd, l->qp->qp_num, 0x2222, 100, l->mr->rkey, (uintptr_t)l->buf, &peer, "EVIL", 4);
	assert_true(wait_counter(&nic->auth_failures, failures, 5000));
	close(fd);
	/* A HELLO and then silence: dropped at the handshake's deadline. */
	failures = atomic_load(&nic->auth_failures);
	fd = wire_connect(nic);
	assert_int_equal(write(fd, hello, sizeof(hello)), sizeof(hello));
	assert_true(wait_counter(&nic->auth_failures, failures, 10000));
	close(fd);
	assert_memory_equal(l->buf, "\0\0\0\0", 4);
	lone_close(l);
	unsetenv("RDMATOOL_SOFT_SECRET");
	free(l);
}

/* The secret file of secret_file_must_be_private: removed by its teardown even when an assertion failed. */
static char secret_path[] = "/tmp/rdmatool-secret.XXXXXX";

static int secret_file_teardown(void **state)
{
	(void)state;
	unsetenv("RDMATOOL_SOFT_SECRET");
	unsetenv("RDMATOOL_SOFT_SECRET_FILE");
	if (strcmp(secret_path + strlen(secret_path) - 6, "XXXXXX"))
		unlink(secret_path);
	return 0;
}

/* Item 7: a secret file must be the user's own, unreadable by others. */
static void secret_file_must_be_private(void **state)
{
	(void)state;
	char *path = secret_path;
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "s3cret\n", 7), 7);
	close(fd);
	setenv("RDMATOOL_SOFT_SECRET_FILE", path, 1);
	assert_int_equal(chmod(path, 0644), 0);
	assert_null(hw_open_device("soft0", NULL));
	assert_non_null(strstr(hw_open_error(), "mode 0600"));
	assert_int_equal(chmod(path, 0600), 0);
	struct ibv_context *ctx = hw_open_device("soft0", NULL);

	assert_non_null(ctx);
	assert_true(soft_nic_of(ctx)->auth.on);
	assert_int_equal(soft_nic_of(ctx)->auth.len, 6); /* the newline is not part of it */
	hw_close_device(ctx);
	setenv("RDMATOOL_SOFT_SECRET", "other", 1);
	assert_null(hw_open_device("soft0", NULL));
	assert_non_null(strstr(hw_open_error(), "both set"));
}

/* Item 15: a malformed RDMATOOL_SOFT_FAULTS makes the device open fail with a message naming it. */
static void malformed_faults_are_an_error(void **state)
{
	(void)state;
	const char *bad[] = {",,,", "drop=0.1,", ",drop=0.1", "drop", "drop=2", "nosuch=1"};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("RDMATOOL_SOFT_FAULTS", bad[i], 1);
		assert_null(hw_open_device("soft0", NULL));
		assert_non_null(strstr(hw_open_error(), "RDMATOOL_SOFT_FAULTS"));
	}
	setenv("RDMATOOL_SOFT_FAULTS", "drop=0.1,seed=2", 1);
	struct ibv_context *ctx = hw_open_device("soft0", NULL);

	assert_non_null(ctx);
	hw_close_device(ctx);
	unsetenv("RDMATOOL_SOFT_FAULTS");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(forged_requests_touch_nothing, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(huge_payload_is_refused_at_the_header, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(idle_connections_cost_nothing, fx_setup, fx_teardown),
	    cmocka_unit_test(identifiers_are_random),
	    cmocka_unit_test(malformed_faults_are_an_error),
	    cmocka_unit_test(secret_required_before_any_packet),
	    cmocka_unit_test_teardown(secret_file_must_be_private, secret_file_teardown),
	    cmocka_unit_test(out_of_fds_backs_off),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
