/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * core/chan/gateway + pidfile: backpressure as -EAGAIN, ticket order (also
 * while the agent serves concurrently), a
 * client killed mid-request reclaimed, a dead agent seen as -ENOTCONN, and a
 * second agent refused while the first holds the pid file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "core/chan/gateway.h"
#include "core/chan/pidfile.h"
#include "core/util/clock.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct fixture {
	char dir[64];
	int pid_fd;
	struct gateway *agent;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct gw_info self = {.pid = getpid(), .rank = 0, .nodes = 2};
	pid_t holder;

	snprintf(f->dir, sizeof(f->dir), "/tmp/rdmatool-gw.XXXXXX");
	if (!mkdtemp(f->dir) || pidfile_acquire(f->dir, 0, &f->pid_fd, &holder))
		return -1;
	strcpy(self.hosts[0], "a");
	strcpy(self.hosts[1], "b");
	if (gw_create(f->dir, &self, &f->agent))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	gw_destroy(f->agent, f->dir);
	if (f->pid_fd >= 0)
		pidfile_release(f->dir, 0, f->pid_fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	if (system(cmd))
		return -1;
	free(f);
	return 0;
}

struct served {
	int n;
	int defer; /* requests to answer GW_DEFER before serving any */
	uint32_t order[GW_SLOTS];
};

static int record(void *arg, uint32_t slot, const struct gw_request *req, const void *in, size_t inlen,
		  void *out, size_t *outlen)
{
	struct served *s = arg;
	uint32_t v = 0;

	(void)slot;
	if (s->defer > 0) {
		s->defer--;
		return GW_DEFER;
	}
	if (inlen >= sizeof(v))
		memcpy(&v, in, sizeof(v));
	if (s->n < GW_SLOTS)
		s->order[s->n++] = v;
	memcpy(out, "ok", 2);
	*outlen = 2;
	return req->node == 1 ? 0 : -EHOSTDOWN;
}

static void test_backpressure_and_order(void **state)
{
	struct fixture *f = *state;
	struct gw_request req = {.op = GW_OP_SEND, .node = 1, .timeout_ms = 1000, .name = "q"};
	struct served s = {0};
	struct gateway *cl;
	struct gw_info info;

	assert_int_equal(gw_open(f->dir, 0, &cl), 0);
	/* "immediately" requests queue without waiting: the gateway fills, and the next one is refused. */
	for (uint32_t i = 0; i < GW_SLOTS; i++)
		assert_int_equal(gw_call(cl, &req, &i, sizeof(i), NULL, 0, NULL, false), 0);
	uint32_t extra = 99;

	assert_int_equal(gw_call(cl, &req, &extra, sizeof(extra), NULL, 0, NULL, false), -EAGAIN);
	gw_info(cl, &info);
	assert_int_equal(info.depth, GW_SLOTS);
	assert_int_equal(info.eagain, 1);
	assert_int_equal(gw_serve(f->agent, record, &s), GW_SLOTS);
	/* Served in the order they were made, whatever slot each landed in. */
	assert_int_equal(s.n, GW_SLOTS);
	for (int i = 0; i < GW_SLOTS; i++)
		assert_int_equal(s.order[i], (uint32_t)i);
	gw_info(cl, &info);
	assert_int_equal(info.depth, 0);
	assert_int_equal(info.completed, GW_SLOTS);
	gw_close(cl);
}

/*
 * Large requests (more than GW_SMALL_INLINE bytes, or receives) take only
 * the first GW_LARGE_SLOTS slots, so the memory a full gateway holds stays
 * bounded; small sends still find the other slots once those are taken.
 */
static void test_large_requests_bounded(void **state)
{
	struct fixture *f = *state;
	struct gw_request req = {.op = GW_OP_SEND, .node = 1, .timeout_ms = 1000, .name = "q"};
	struct gw_request recv_req = {.op = GW_OP_RECV, .node = 1, .timeout_ms = 1000, .name = "q"};
	size_t big = GW_SMALL_INLINE + 1;
	char *payload = calloc(1, big);
	struct served s = {0};
	struct gw_posted p;
	struct gateway *cl;

	assert_non_null(payload);
	assert_int_equal(gw_open(f->dir, 0, &cl), 0);
	for (uint32_t i = 0; i < GW_LARGE_SLOTS; i++) {
		assert_int_equal(gw_post(cl, &req, payload, big, false, &p), 0);
		assert_true(p.slot < GW_LARGE_SLOTS);
	}
	assert_int_equal(gw_post(cl, &req, payload, big, false, &p), -EAGAIN);
	assert_int_equal(gw_post(cl, &recv_req, NULL, 0, false, &p), -EAGAIN);
	/* A small send still finds a slot, beyond the large ones. */
	assert_int_equal(gw_post(cl, &req, payload, GW_SMALL_INLINE, false, &p), 0);
	assert_true(p.slot >= GW_LARGE_SLOTS && p.slot < GW_SLOTS);
	assert_int_equal(gw_serve(f->agent, record, &s), GW_LARGE_SLOTS + 1);
	gw_close(cl);
	free(payload);
}

/*
 * The agent skips its scan of the slots while the doorbell count is what
 * its last scan started from: a request made after a serve is still
 * served by the next one, an idle serve finds nothing, and a request the
 * handler deferred is tried again without a new ring.
 */
static void test_doorbell_skip(void **state)
{
	struct fixture *f = *state;
	struct gw_request req = {.op = GW_OP_SEND, .node = 1, .timeout_ms = 1000, .name = "q"};
	struct served s = {0};
	struct gateway *cl;
	uint32_t v;

	assert_int_equal(gw_open(f->dir, 0, &cl), 0);
	assert_int_equal(gw_serve(f->agent, record, &s), 0);
	for (v = 0; v < 3; v++) {
		assert_int_equal(gw_call(cl, &req, &v, sizeof(v), NULL, 0, NULL, false), 0);
		assert_int_equal(gw_serve(f->agent, record, &s), 1);
		assert_int_equal(gw_serve(f->agent, record, &s), 0);
	}
	s.defer = 1;
	assert_int_equal(gw_call(cl, &req, &v, sizeof(v), NULL, 0, NULL, false), 0);
	assert_int_equal(gw_serve(f->agent, record, &s), 0); /* deferred: it stays queued */
	assert_int_equal(s.n, 3);
	assert_int_equal(gw_serve(f->agent, record, &s), 1); /* no new ring, served all the same */
	assert_int_equal(s.n, 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(s.order[i], (uint32_t)i);
	gw_close(cl);
}

/*
 * gw_post/gw_wait: several waiting requests in the agent's hands at once,
 * served in the order posted, each wait returning its own request's status
 * and reply, and every slot free again after its wait.
 */
static void test_post_then_wait(void **state)
{
	struct fixture *f = *state;
	struct gw_request req = {.op = GW_OP_SEND, .mode = 1, .timeout_ms = 1000, .name = "q"};
	struct gw_posted posted[6];
	struct served s = {0};
	struct gateway *cl;
	struct gw_info info;

	assert_int_equal(gw_open(f->dir, 0, &cl), 0);
	for (uint32_t i = 0; i < 6; i++) {
		req.node = i % 3 == 2 ? 0 : 1; /* record() fails the requests to node 0 */
		assert_int_equal(gw_post(cl, &req, &i, sizeof(i), true, &posted[i]), 0);
	}
	gw_info(cl, &info);
	assert_int_equal(info.depth, 6);
	assert_int_equal(gw_serve(f->agent, record, &s), 6);
	assert_int_equal(s.n, 6);
	for (uint32_t i = 0; i < 6; i++) {
		char out[8] = "";
		size_t outlen = 0;

		assert_int_equal(s.order[i], i);
		assert_int_equal(gw_wait(cl, &posted[i], out, sizeof(out), &outlen), i % 3 == 2 ? -EHOSTDOWN : 0);
		assert_int_equal(outlen, 2);
		assert_memory_equal(out, "ok", 2);
	}
	gw_info(cl, &info);
	assert_int_equal(info.depth, 0);
	/* All free: a full gateway's worth of posts fits again. */
	for (uint32_t i = 0; i < GW_SLOTS; i++)
		assert_int_equal(gw_post(cl, &req, &i, sizeof(i), false, &posted[0]), 0);
	assert_int_equal(gw_serve(f->agent, record, &s), GW_SLOTS);
	gw_close(cl);
}

/* A waiting client gets the agent's status and reply. */
static void test_call_and_reply(void **state)
{
	struct fixture *f = *state;
	struct gw_request req = {.op = GW_OP_RECV, .node = 0, .timeout_ms = 1000, .name = "q"};
	struct served s = {0};
	char out[8] = "";
	size_t outlen = 0;
	pid_t pid = fork();

	if (pid == 0) {
		/* The "agent": serves until it has answered one request. */
		uint64_t until = clock_ns() + 5000000000ull;

		while (s.n == 0 && clock_ns() < until)
			if (gw_serve(f->agent, record, &s) == 0)
				gw_wait_for_work(f->agent, 50000);
		_exit(s.n == 1 ? 0 : 1);
	}
	struct gateway *cl;
	int status;

	assert_int_equal(gw_open(f->dir, 0, &cl), 0);
	assert_int_equal(gw_call(cl, &req, NULL, 0, out, sizeof(out), &outlen, true), -EHOSTDOWN);
	assert_int_equal(outlen, 2);
	assert_memory_equal(out, "ok", 2);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);
	gw_close(cl);
}

/* A client killed after queuing a request it waits for: the agent answers into the void, then reclaims the
 * slot. */
static void test_dead_client_reclaimed(void **state)
{
	struct fixture *f = *state;
	struct served s = {0};
	struct gw_info info;
	int status;
	int ready[2];
	char byte;

	assert_int_equal(pipe(ready), 0);
	pid_t pid = fork();

	if (pid == 0) {
		struct gw_request req = {.op = GW_OP_POLL, .node = 1, .timeout_ms = -1, .name = "q"};
		struct gateway *cl;
		char out[8];

		if (gw_open(f->dir, 0, &cl) || write(ready[1], "r", 1) != 1)
			_exit(2);
		gw_call(cl, &req, NULL, 0, out, sizeof(out), NULL, true); /* waits: nobody serves yet */
		_exit(3);
	}
	assert_int_equal(read(ready[0], &byte, 1), 1);
	/* Wait until its request is queued, then kill it. */
	for (int i = 0; i < 500; i++) {
		gw_info(f->agent, &info);
		if (info.requests == 1)
			break;
		usleep(2000);
	}
	assert_int_equal(info.requests, 1);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(gw_serve(f->agent, record, &s), 1); /* answered: DONE, owner dead */
	/* Reclaimed by a later pass (the agent looks for dead clients every 20 ms). */
	for (int i = 0; i < 100; i++) {
		gw_serve(f->agent, record, &s);
		gw_info(f->agent, &info);
		if (info.reaped)
			break;
		usleep(5000);
	}
	assert_int_equal(info.depth, 0);
	assert_int_equal(info.reaped, 1);
	close(ready[0]);
	close(ready[1]);
}

/* The agent goes away while a client waits: -ENOTCONN within a deadline, not a hang. */
static void test_agent_gone(void **state)
{
	struct fixture *f = *state;
	struct gw_request req = {.op = GW_OP_RECV, .node = 1, .timeout_ms = -1, .name = "q"};
	struct gateway *cl;
	char out[8];
	uint64_t t0;

	assert_int_equal(gw_open(f->dir, 0, &cl), 0);
	/* The pid file lock is the agent's life: dropping it is the agent dying. */
	pidfile_release(f->dir, 0, f->pid_fd);
	f->pid_fd = -1;
	t0 = clock_ns();
	assert_int_equal(gw_call(cl, &req, NULL, 0, out, sizeof(out), NULL, true), -ENOTCONN);
	assert_true(clock_ns() - t0 < 2000000000ull);
	gw_close(cl);
	assert_int_equal(gw_open(f->dir, 0, &cl), -ENOTCONN);
}

/*
 * A client's requests are served in the order it made them even while the
 * agent serves concurrently: a scan that passed a slot just before its
 * request became ready must not serve the client's next request first.
 */
/* A sanitizer build runs 5-20x slower: fewer requests, the same race each time. */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define RACE_REQUESTS 20000
#else
#define RACE_REQUESTS 100000
#endif
/* The client gives up when no call went through for this long: a hang, not a slow machine. */
#define RACE_STALL_NS 30000000000ull

struct race_server {
	struct gateway *agent;
	_Atomic int stop;
	uint32_t next, disorder;
};

static int in_order(void *arg, uint32_t slot, const struct gw_request *req, const void *in, size_t inlen,
		    void *out, size_t *outlen)
{
	struct race_server *r = arg;
	uint32_t v;

	(void)slot, (void)req, (void)out, (void)outlen;
	assert_true(inlen == sizeof(v));
	memcpy(&v, in, sizeof(v));
	if (v != r->next)
		r->disorder++;
	r->next = v + 1;
	return 0;
}

/*
 * Serves until every request arrived.  The client sets stop right after its
 * last call returned, which may be before that request is visible here: an
 * empty serve after stop is no reason to quit, only 5 s of them are.
 */
static void *race_serve(void *arg)
{
	struct race_server *r = arg;
	uint64_t give_up = 0;

	while (r->next < RACE_REQUESTS) {
		if (gw_serve(r->agent, in_order, r) > 0 || !atomic_load(&r->stop))
			continue;
		if (!give_up)
			give_up = clock_ns() + 5000000000ull;
		else if (clock_ns() > give_up)
			break;
	}
	return NULL;
}

static void test_order_while_serving(void **state)
{
	struct fixture *f = *state;
	struct gw_request req = {.op = GW_OP_SEND, .node = 1, .timeout_ms = 1000, .name = "q"};
	struct race_server r = {.agent = f->agent};
	uint64_t stall = clock_ns() + RACE_STALL_NS;
	struct gateway *cl;
	uint32_t i = 0;
	pthread_t t;

	assert_int_equal(gw_open(f->dir, 0, &cl), 0);
	assert_int_equal(pthread_create(&t, NULL, race_serve, &r), 0);
	/* All of them, however long a loaded machine takes; only a stall ends it early. */
	while (i < RACE_REQUESTS && clock_ns() < stall) {
		int rc = gw_call(cl, &req, &i, sizeof(i), NULL, 0, NULL, false);

		if (rc == 0) {
			i++;
			stall = clock_ns() + RACE_STALL_NS;
		} else {
			assert_int_equal(rc, -EAGAIN);
		}
	}
	atomic_store(&r.stop, 1);
	pthread_join(t, NULL);
	gw_close(cl);
	if (i < RACE_REQUESTS)
		fail_msg("no call went through for %llu s after %u of %u", RACE_STALL_NS / 1000000000ull, i,
			 RACE_REQUESTS);
	assert_int_equal(r.disorder, 0);
	assert_int_equal(r.next, RACE_REQUESTS);
}

static void test_pidfile_single_agent(void **state)
{
	struct fixture *f = *state;
	pid_t holder = 0;
	int fd;

	assert_int_equal(pidfile_holder(f->dir, 0), getpid());
	/* Checking does not drop the lock (an OFD lock, unlike a POSIX record lock). */
	assert_int_equal(pidfile_holder(f->dir, 0), getpid());
	assert_int_equal(pidfile_acquire(f->dir, 0, &fd, &holder), -EEXIST);
	assert_int_equal(holder, getpid());
	assert_int_equal(pidfile_holder(f->dir, 1), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_backpressure_and_order, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_doorbell_skip, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_large_requests_bounded, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_post_then_wait, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_call_and_reply, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dead_client_reclaimed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_agent_gone, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_order_while_serving, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_pidfile_single_agent, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
