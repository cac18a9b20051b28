/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A peer process dies: sends to it come back as error completions (or a
 * post error), never a hang -- also a rendezvous send whose RTS completed
 * but whose FIN can no longer come.  The peer is a forked child connected
 * over core/oob; each test forks before it opens anything, and the child
 * execs this binary again (--child PORT): threads left by an earlier test
 * must not be inherited, and TSan refuses to start threads after a fork
 * of a multi-threaded process.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "core/util/clock.h"
#include "core/stats/stats.h"
#include "core/stats/stats_path.h"
#include "core/transport/endpoint.h"
#include "core/oob/oob.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define OOB_READY 0x5252

/* The child: connect, say ready, drive progress until killed (or, leaving, close and exit at once). */
static void child_main(int port, bool leave)
{
	char addr[64], err[256];
	struct core_ep_attr attr;
	struct core_ep *ep;
	struct oob_conn *c;
	uint32_t peer;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	core_ep_attr_defaults(&attr);
	core_env_read(&attr.env, err, sizeof(err)); /* RDMATOOL_CONNECT: cm or oob */
	attr.env.tx_stripes = 1;
	if (oob_connect(addr, 10000, &c) || core_ep_open(&attr, &ep, err, sizeof(err)) ||
	    core_ep_connect_oob(ep, c, &peer) || oob_send(c, OOB_READY, NULL, 0))
		_exit(1);
	if (leave) {
		core_ep_close(ep);
		oob_close(c);
		exit(0); /* its atexit removes its stats segment */
	}
	for (;;) {
		struct core_cqe e;

		core_cq_read(ep, &e, 1);
		usleep(100);
	}
}

struct pair {
	pid_t child;
	struct oob_conn *c;
	struct core_ep *ep;
	uint32_t peer;
};

/* Forks a child (--child, or --leave) that connects to ep; 0 or the connect's error. */
static int connect_child(struct pair *p, struct core_ep *ep, const char *mode)
{
	struct oob_listener *l;
	uint16_t type;
	uint32_t len;
	int rc;

	assert_int_equal(oob_listen(NULL, &l), 0);
	p->child = fork();
	assert_true(p->child >= 0);
	if (p->child == 0) {
		char port[16];

		snprintf(port, sizeof(port), "%d", oob_listener_port(l));
		execl("/proc/self/exe", "test_core_peerdeath", mode, port, (char *)NULL);
		_exit(127);
	}
	assert_int_equal(oob_accept(l, 10000, &p->c), 0);
	oob_listener_close(l);
	p->ep = ep;
	rc = core_ep_connect_oob(p->ep, p->c, &p->peer);
	if (rc)
		return rc;
	assert_int_equal(oob_recv(p->c, &type, NULL, 0, &len, 10000), 0);
	assert_int_equal(type, OOB_READY);
	return 0;
}

static struct core_ep *open_ep(void)
{
	struct core_ep_attr attr;
	struct core_ep *ep;
	char err[256];

	core_ep_attr_defaults(&attr);
	assert_int_equal(core_env_read(&attr.env, err, sizeof(err)), 0); /* RDMATOOL_CONNECT: cm or oob */
	attr.env.tx_stripes = 1;
	assert_int_equal(core_ep_open(&attr, &ep, err, sizeof(err)), 0);
	return ep;
}

static void start(struct pair *p)
{
	assert_int_equal(connect_child(p, open_ep(), "--child"), 0);
}

static void kill_child(struct pair *p)
{
	char path[PATH_MAX];

	kill(p->child, SIGKILL);
	waitpid(p->child, NULL, 0);
	/* A SIGKILLed process cannot remove its stats segment: its killer does. */
	snprintf(path, sizeof(path), "%s/%s%d", stats_segment_dir(), STATS_FILE_PREFIX, (int)p->child);
	unlink(path);
}

static void stop(struct pair *p)
{
	core_ep_close(p->ep);
	oob_close(p->c);
}

/* Waits up to 15 s for the completion of context; returns its status (or -1 on timeout). */
static int wait_for(struct core_ep *ep, void *context)
{
	uint64_t deadline = clock_ns() + 15000000000ull;

	while (clock_ns() < deadline) {
		struct core_cqe e;
		int n = core_cq_sread(ep, &e, 1, 100);

		if (n == 1 && e.context == context)
			return (int)e.status;
	}
	return -1;
}

static void test_eager_after_death(void **state)
{
	struct pair p;
	static char buf[64];
	int ctx, rc, status;

	(void)state;
	start(&p);
	/* While the child lives, a send completes successfully. */
	assert_int_equal(core_send(p.ep, p.peer, buf, sizeof(buf), &ctx), 0);
	assert_int_equal(wait_for(p.ep, &ctx), IBV_WC_SUCCESS);
	kill_child(&p);
	/* After: the post fails, or its completion carries an error. */
	rc = core_send(p.ep, p.peer, buf, sizeof(buf), &ctx);
	if (rc == 0) {
		status = wait_for(p.ep, &ctx);
		assert_int_not_equal(status, -1);
		assert_int_not_equal(status, IBV_WC_SUCCESS);
		/* The connection is now known dead: the next post fails at once. */
		assert_int_equal(core_send(p.ep, p.peer, buf, sizeof(buf), &ctx), -ECONNRESET);
	} else {
		assert_int_equal(rc, -ECONNRESET);
	}
	stop(&p);
}

static void test_rendezvous_waiting_for_fin(void **state)
{
	struct pair p;
	size_t len = 256 * 1024; /* over eager_max: an RTS, then a FIN after the peer's READ */
	char *buf = calloc(1, len);
	int ctx;
	struct core_cqe e;

	(void)state;
	start(&p);
	/* The child posts no receive: the RTS completes, the FIN never comes. */
	assert_int_equal(core_send(p.ep, p.peer, buf, len, &ctx), 0);
	uint64_t until = clock_ns() + 300000000ull;

	while (clock_ns() < until)
		assert_int_equal(core_cq_read(p.ep, &e, 1), 0);
	kill_child(&p);
	int status = wait_for(p.ep, &ctx);

	assert_int_not_equal(status, -1); /* no hang */
	assert_int_not_equal(status, IBV_WC_SUCCESS);
	stop(&p);
	free(buf);
}

/*
 * One endpoint, peers one after the other: the first closes its endpoint and
 * exits before the second connects.  Its connection's disconnect events (on
 * the CM, the endpoint's event channel) must not fail the next connect
 * (bench agent_rate's direct baseline, whose receiver connects 4 senders in
 * turn, failed with EPROTO when the first sender finished early).
 */
static void test_connect_after_a_peer_left(void **state)
{
	struct core_ep *ep = open_ep();
	struct pair first, second;
	static char buf[64];
	int status, ctx;

	(void)state;
	assert_int_equal(connect_child(&first, ep, "--leave"), 0);
	assert_int_equal(waitpid(first.child, &status, 0), first.child);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	oob_close(first.c);
	/* The first peer's disconnect has time to arrive before the next connect. */
	usleep(200000);
	assert_int_equal(connect_child(&second, ep, "--child"), 0);
	assert_int_equal(core_send(ep, second.peer, buf, sizeof(buf), &ctx), 0);
	assert_int_equal(wait_for(ep, &ctx), IBV_WC_SUCCESS);
	kill_child(&second);
	stop(&second);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_eager_after_death),
	    cmocka_unit_test(test_rendezvous_waiting_for_fin),
	    cmocka_unit_test(test_connect_after_a_peer_left),
	};

	signal(SIGPIPE, SIG_IGN);
	if (argc == 3 && (!strcmp(argv[1], "--child") || !strcmp(argv[1], "--leave")))
		child_main(atoi(argv[2]), !strcmp(argv[1], "--leave"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
