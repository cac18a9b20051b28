/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The soft NIC against a stranger on its wire port (issue 15 items 5, 6, 8,
 * 15; issue 44 N1, N13): with no configuration nothing is served to a
 * connection that did not prove the user's key; forged requests that know
 * the QPN, PSN and rkey but do not come from the QP's connected remote
 * touch nothing, even on an authenticated connection; a header that
 * declares a huge payload is refused before anything is buffered; idle
 * connections do not stop traffic; identifiers are random per NIC; a
 * malformed RDMATOOL_SOFT_FAULTS, an empty secret, a secret file past the
 * limit and a key file or directory others may read are errors.
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
#include <limits.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
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

static void read_full(int fd, uint8_t *buf, size_t len)
{
	struct timeval tv = {.tv_sec = 5};
	size_t got = 0;

	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);

		assert_true(n > 0);
		got += (size_t)n;
	}
}

/*
 * A connection that ran the handshake with key, claiming to be port claim,
 * as another process of the user (holding the same key) would; returns the
 * socket and sets *done to whether the NIC proved the same key back.
 */
static int wire_connect_key(struct soft_nic *nic, const struct soft_auth_key *key, const union ibv_gid *claim,
			    bool *done)
{
	struct soft_auth_session s;
	uint8_t hello[SOFT_AUTH_HELLO_LEN], in[SOFT_AUTH_HELLO_LEN + SOFT_AUTH_PROOF_LEN],
	    proof[SOFT_AUTH_PROOF_LEN];
	size_t used;
	bool send;
	int fd = wire_connect(nic);

	soft_auth_start(&s, true, claim->raw, nic->gid.raw, hello);
	assert_int_equal(write(fd, hello, sizeof(hello)), sizeof(hello));
	read_full(fd, in, SOFT_AUTH_HELLO_LEN);
	used = soft_auth_step(&s, key, in, SOFT_AUTH_HELLO_LEN, proof, &send);
	assert_int_equal(used, SOFT_AUTH_HELLO_LEN);
	assert_true(send);
	assert_int_equal(write(fd, proof, sizeof(proof)), sizeof(proof));
	read_full(fd, in + used, SOFT_AUTH_PROOF_LEN);
	soft_auth_step(&s, key, in + used, SOFT_AUTH_PROOF_LEN, proof, &send);
	*done = s.state == SOFT_AUTH_DONE;
	return fd;
}

/* An authenticated connection: what another process of this user can open. */
static int wire_connect_authed(struct soft_nic *nic, const union ibv_gid *claim)
{
	bool done;
	int fd = wire_connect_key(nic, &nic->auth, claim, &done);

	assert_true(done);
	return fd;
}

static void send_forged_write(int fd, uint32_t dst_qpn, uint32_t src_qpn, uint32_t psn, uint32_t rkey,
			      uint64_t raddr, const union ibv_gid *sgid, const void *data, uint32_t len)
{
	struct soft_pkt h = {
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

	memcpy(h.sgid.raw, sgid->raw, 16);
	/* A NIC that refused the connection may have closed it already: what it reads is the point. */
	if (send(fd, &h, SOFT_PKT_HDR_LEN, MSG_NOSIGNAL) == (ssize_t)SOFT_PKT_HDR_LEN)
		(void)!send(fd, data, len, MSG_NOSIGNAL);
}

static bool wait_counter(atomic_ulong *counter, unsigned long above, unsigned ms)
{
	uint64_t end = fx_now_ms() + ms;

	while (atomic_load(counter) <= above && fx_now_ms() < end)
		usleep(1000);
	return atomic_load(counter) > above;
}

/*
 * Item 5: knowing QPN, PSN and rkey is not enough, even on a connection that
 * proved the key: the request must come from the QP's remote, and its source
 * GID must be the port the handshake proved.
 */
static void forged_requests_touch_nothing(void **state)
{
	struct fx *f = *state;
	struct soft_nic *nic = soft_nic_of(f->ctx);
	union ibv_gid stranger = {.raw = {0xfe, 0x80, [8] = 127, 0, 0, 1, 0x12, 0x34, 'S', 'W'}}, own;
	union ibv_gid claim = {.raw = {0xfe, 0x80, [8] = 127, 0, 0, 1, 0x12, 0x36, 'S', 'W'}};
	unsigned long drops = atomic_load(&nic->foreign_drops);
	struct ibv_wc wc;
	int fd;

	assert_int_equal(hw_query_gid(f->ctx, 1, 0, &own), 0);
	fd = wire_connect_authed(nic, &claim);
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

/*
 * Item 8: a declared 1 GiB payload is refused at its header; nothing of it is
 * buffered.  A stranger is hung up on; a peer that proved the key (whose QP
 * may just have been destroyed) loses the packet, its payload discarded as
 * it arrives, and keeps the connection.
 */
static void huge_payload_is_refused_at_the_header(void **state)
{
	struct fx *f = *state;
	struct soft_nic *nic = soft_nic_of(f->ctx);
	union ibv_gid stranger = {.raw = {0xfe, 0x80, [8] = 127, 0, 0, 1, 0x12, 0x35, 'S', 'W'}};
	unsigned long rejects = atomic_load(&nic->wire_rejects), stale = atomic_load(&nic->stale_drops);
	struct soft_pkt h = {
	    .magic = htole32(SOFT_WIRE_MAGIC),
	    .payload = htole32(1u << 30),
	    .type = SOFT_PKT_REQ,
	    .opcode = IBV_WR_RDMA_WRITE,
	    .qp_type = IBV_QPT_RC,
	    .dst_qpn = htole32(f->b->qp_num),
	    .length = htole32(1u << 30),
	};
	char chunk[65536] = {0};
	struct pollfd p;
	int fd = wire_connect(nic);

	memcpy(h.sgid.raw, stranger.raw, 16);
	assert_int_equal(write(fd, &h, SOFT_PKT_HDR_LEN), SOFT_PKT_HDR_LEN);
	/* The NIC hangs up: reads end with EOF (or a reset) within the deadline, however much we push. */
	for (int i = 0; i < 64; i++)
		if (send(fd, chunk, sizeof(chunk), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			break;
	p = (struct pollfd){.fd = fd, .events = POLLIN};
	for (;;) { /* past the NIC's HELLO, to the end */
		assert_int_equal(poll(&p, 1, 5000), 1);
		if (read(fd, chunk, sizeof(chunk)) <= 0)
			break;
	}
	assert_true(atomic_load(&nic->wire_rejects) > rejects);
	close(fd);

	fd = wire_connect_authed(nic, &stranger);
	assert_int_equal(write(fd, &h, SOFT_PKT_HDR_LEN), SOFT_PKT_HDR_LEN);
	for (int i = 0; i < 64; i++)
		if (send(fd, chunk, sizeof(chunk), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			break;
	assert_true(wait_counter(&nic->stale_drops, stale, 5000));
	p = (struct pollfd){.fd = fd, .events = POLLIN};
	assert_int_equal(poll(&p, 1, 0), 0); /* still up */
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

/*
 * Waits until the NIC counts one more failed handshake, and checks that the
 * socket received nothing but the handshake (the NIC's HELLO, and its proof
 * once it had ours) before the NIC hung up: no packet.
 */
static void expect_refused(struct soft_nic *nic, int fd, unsigned long failures)
{
	uint8_t buf[4096];
	size_t got = 0;
	struct pollfd p = {.fd = fd, .events = POLLIN};
	ssize_t n;

	assert_true(wait_counter(&nic->auth_failures, failures, 10000));
	while (poll(&p, 1, 5000) == 1 && (n = read(fd, buf, sizeof(buf))) > 0)
		got += (size_t)n;
	assert_true(got <= SOFT_AUTH_HELLO_LEN + SOFT_AUTH_PROOF_LEN);
	close(fd);
}

/*
 * N1 and item 7: with no configuration at all (the user's own key), and with
 * RDMATOOL_SOFT_SECRET, nothing is served to a connection that did not
 * prove the key: a packet straight away, a HELLO with a made-up proof, a
 * HELLO and silence, a proof under another key.
 */
static void key_required_before_any_packet(void **state)
{
	(void)state;
	union ibv_gid peer = {.raw = {0xfe, 0x80, [8] = 127, 0, 0, 1, 0x22, 0x22, 'S', 'W'}};
	struct lone *l = calloc(1, sizeof(*l));
	uint8_t hello[SOFT_AUTH_HELLO_LEN], bad_proof[SOFT_AUTH_PROOF_LEN] = {1};
	struct soft_auth_key *other = calloc(1, sizeof(*other));
	struct soft_auth_session s;
	struct soft_nic *nic;
	unsigned long failures;
	bool done;
	int fd;

	assert_non_null(l);
	assert_non_null(other);
	other->len = 5;
	memcpy(other->secret, "other", 5);
	unsetenv("RDMATOOL_SOFT_SECRET");
	unsetenv("RDMATOOL_SOFT_SECRET_FILE");
	for (int with_secret = 0; with_secret < 2; with_secret++) {
		if (with_secret)
			setenv("RDMATOOL_SOFT_SECRET", "s3cret", 1);
		lone_open(l, &peer, 0x2222);
		nic = soft_nic_of(l->ctx);
		/* A well-formed packet from the QP's remote, straight away: not a HELLO, dropped. */
		failures = atomic_load(&nic->auth_failures);
		fd = wire_connect(nic);
		send_forged_write(fd, l->qp->qp_num, 0x2222, 100, l->mr->rkey, (uintptr_t)l->buf, &peer,
				  "EVIL", 4);
		expect_refused(nic, fd, failures);
		/* A HELLO, then a proof made without the key, then the packet. */
		failures = atomic_load(&nic->auth_failures);
		fd = wire_connect(nic);
		soft_auth_start(&s, true, peer.raw, nic->gid.raw, hello);
		assert_int_equal(write(fd, hello, sizeof(hello)), sizeof(hello));
		assert_int_equal(write(fd, bad_proof, sizeof(bad_proof)), sizeof(bad_proof));
		send_forged_write(fd, l->qp->qp_num, 0x2222, 100, l->mr->rkey, (uintptr_t)l->buf, &peer,
				  "EVIL", 4);
		expect_refused(nic, fd, failures);
		/* A HELLO and then silence: dropped at the handshake's deadline. */
		failures = atomic_load(&nic->auth_failures);
		fd = wire_connect(nic);
		assert_int_equal(write(fd, hello, sizeof(hello)), sizeof(hello));
		expect_refused(nic, fd, failures);
		/* The whole handshake, under another key: neither side accepts the other. */
		failures = atomic_load(&nic->auth_failures);
		fd = wire_connect_key(nic, other, &peer, &done);
		assert_false(done);
		send_forged_write(fd, l->qp->qp_num, 0x2222, 100, l->mr->rkey, (uintptr_t)l->buf, &peer,
				  "EVIL", 4);
		assert_true(wait_counter(&nic->auth_failures, failures, 5000));
		close(fd);
		assert_memory_equal(l->buf, "\0\0\0\0", 4);
		/* The control: with the key, the same packet is served. */
		fd = wire_connect_authed(nic, &peer);
		send_forged_write(fd, l->qp->qp_num, 0x2222, 100, l->mr->rkey, (uintptr_t)l->buf, &peer,
				  "GOOD", 4);
		for (uint64_t end = fx_now_ms() + 5000; memcmp(l->buf, "GOOD", 4) && fx_now_ms() < end;)
			usleep(1000);
		assert_memory_equal(l->buf, "GOOD", 4);
		close(fd);
		lone_close(l);
	}
	unsetenv("RDMATOOL_SOFT_SECRET");
	free(other);
	free(l);
}

/* Files of the key tests: removed by their teardown even when an assertion failed. */
static char secret_path[] = "/tmp/rdmatool-secret.XXXXXX";
static char home_path[] = "/tmp/rdmatool-home.XXXXXX";
static char *saved_home;

static int secret_file_teardown(void **state)
{
	char cmd[128];

	(void)state;
	unsetenv("RDMATOOL_SOFT_SECRET");
	unsetenv("RDMATOOL_SOFT_SECRET_FILE");
	if (strcmp(secret_path + strlen(secret_path) - 6, "XXXXXX"))
		unlink(secret_path);
	if (strcmp(home_path + strlen(home_path) - 6, "XXXXXX")) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", home_path);
		assert_int_equal(system(cmd), 0);
	}
	if (saved_home)
		setenv("HOME", saved_home, 1);
	return 0;
}

static void write_file(const char *path, const char *text, size_t len)
{
	int fd = open(path, O_WRONLY | O_TRUNC);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
}

static void expect_open_error(const char *words)
{
	assert_null(hw_open_device("soft0", NULL));
	if (!strstr(hw_open_error(), words))
		fail_msg("open error '%s' does not say '%s'", hw_open_error(), words);
}

/* Item 7 and N13: a secret file must be the user's own, unreadable by others, and not over the limit. */
static void secret_file_must_be_private(void **state)
{
	(void)state;
	char *path = secret_path, *big = malloc(SOFT_AUTH_MAX_SECRET + 2);
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_non_null(big);
	close(fd);
	write_file(path, "s3cret\n", 7);
	setenv("RDMATOOL_SOFT_SECRET_FILE", path, 1);
	assert_int_equal(chmod(path, 0644), 0);
	expect_open_error("mode 0600");
	assert_int_equal(chmod(path, 0600), 0);
	struct ibv_context *ctx = hw_open_device("soft0", NULL);

	assert_non_null(ctx);
	assert_int_equal(soft_nic_of(ctx)->auth.len, 6); /* the newline is not part of it */
	hw_close_device(ctx);
	/* Exactly the limit (and a newline) is taken; one byte more is refused, not cut. */
	memset(big, 'k', SOFT_AUTH_MAX_SECRET + 1);
	big[SOFT_AUTH_MAX_SECRET] = '\n';
	write_file(path, big, SOFT_AUTH_MAX_SECRET + 1);
	ctx = hw_open_device("soft0", NULL);
	assert_non_null(ctx);
	assert_int_equal(soft_nic_of(ctx)->auth.len, SOFT_AUTH_MAX_SECRET);
	hw_close_device(ctx);
	big[SOFT_AUTH_MAX_SECRET] = 'k';
	write_file(path, big, SOFT_AUTH_MAX_SECRET + 1);
	expect_open_error("longer than 4096 bytes");
	write_file(path, "", 0);
	expect_open_error("is empty");
	setenv("RDMATOOL_SOFT_SECRET", "other", 1);
	expect_open_error("both set");
	/* Empty is an error, never "off". */
	unsetenv("RDMATOOL_SOFT_SECRET_FILE");
	setenv("RDMATOOL_SOFT_SECRET", "", 1);
	expect_open_error("RDMATOOL_SOFT_SECRET is set but empty");
	unsetenv("RDMATOOL_SOFT_SECRET");
	setenv("RDMATOOL_SOFT_SECRET_FILE", "", 1);
	expect_open_error("RDMATOOL_SOFT_SECRET_FILE is set but empty");
	unsetenv("RDMATOOL_SOFT_SECRET_FILE");
	free(big);
}

/*
 * N1: with nothing configured the user's key is made on first use:
 * ~/.rdmatool (0700) and soft-wire.key in it (0600, the user's), the same
 * key on every later open; a directory or key file others may read, or a
 * key that is a symlink, is refused with the fix in the message.
 */
static void user_key_is_made_private(void **state)
{
	(void)state;
	char dir[PATH_MAX], key[PATH_MAX + 32], link_to[PATH_MAX + 32];
	uint8_t first[64];
	struct ibv_context *ctx;
	struct stat st;

	assert_non_null(mkdtemp(home_path));
	saved_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
	setenv("HOME", home_path, 1);
	snprintf(dir, sizeof(dir), "%s/.rdmatool", home_path);
	snprintf(key, sizeof(key), "%s/soft-wire.key", dir);
	ctx = hw_open_device("soft0", NULL);
	assert_non_null(ctx);
	assert_int_equal(lstat(dir, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(lstat(key, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_uid, geteuid());
	assert_int_equal(st.st_size, 65); /* 32 random bytes as hex, a newline */
	assert_int_equal(soft_nic_of(ctx)->auth.len, 64);
	memcpy(first, soft_nic_of(ctx)->auth.secret, 64);
	hw_close_device(ctx);
	ctx = hw_open_device("soft0", NULL);
	assert_non_null(ctx);
	assert_memory_equal(soft_nic_of(ctx)->auth.secret, first, 64);
	hw_close_device(ctx);

	assert_int_equal(chmod(key, 0640), 0);
	expect_open_error("mode 0600");
	assert_int_equal(chmod(key, 0600), 0);
	assert_int_equal(chmod(dir, 0755), 0);
	expect_open_error("chmod 700");
	assert_int_equal(chmod(dir, 0700), 0);
	/* A key planted as a symlink (to a file of the user's, even) is not followed. */
	snprintf(link_to, sizeof(link_to), "%s/elsewhere", dir);
	assert_int_equal(rename(key, link_to), 0);
	assert_int_equal(symlink(link_to, key), 0);
	expect_open_error("soft-wire.key");
	assert_int_equal(unlink(key), 0);
	/* Gone: made anew, a different key. */
	ctx = hw_open_device("soft0", NULL);
	assert_non_null(ctx);
	assert_memory_not_equal(soft_nic_of(ctx)->auth.secret, first, 64);
	hw_close_device(ctx);
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
	    cmocka_unit_test(key_required_before_any_packet),
	    cmocka_unit_test_teardown(secret_file_must_be_private, secret_file_teardown),
	    cmocka_unit_test_teardown(user_key_is_made_private, secret_file_teardown),
	    cmocka_unit_test(out_of_fds_backs_off),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
