/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A core transport test between two processes, each with its own soft
 * device linked over the wire as two agents are: a bench server forked on a
 * free loopback port, and this process as its client.  In one process both
 * ends share one device: write_bw moves data with one memcpy and send_lat
 * never crosses the wire, which no path through agents can compare with.
 */
#include "cmd/bench/pair_transport.h"
#include "cmd/bench/child.h"
#include "cmd/bench/pin.h"
#include "core/stats/stats.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int free_loopback_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -errno;

	if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(fd, (struct sockaddr *)&a, &len))
		port = ntohs(a.sin_port);
	else if (fd >= 0)
		port = -errno;
	if (fd >= 0)
		close(fd);
	return port;
}

int pair_transport(const char *test, size_t size, double seconds, long iters, struct bench_result *r,
		   char *err, size_t errlen)
{
	struct bench_opts o = {.size = size,
			       .duration = seconds,
			       .iters = iters,
			       .threads = 1,
			       .stripes = 1,
			       .lock = CORE_LOCK_STRIPED};
	char addr[32];
	int port = free_loopback_port(), rc, status, cpu[2];
	bool pin = bench_two_cpus(cpu);
	cpu_set_t was;
	pid_t server;

	if (port < 0) {
		snprintf(err, errlen, "no free loopback port for the %s baseline: %s", test, strerror(-port));
		return port;
	}
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	core_env_defaults(&o.env);
	o.env.connect = CORE_CONNECT_OOB; /* as bench's own client and server (perftest's default) */
	fflush(NULL);
	server = fork();
	if (server < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot fork the %s baseline's server: %s", test, strerror(errno));
		return rc;
	}
	if (server == 0) {
		char why[256];
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, STDERR_FILENO); /* its "listening on" lines are not ours to print */
		if (pin)
			bench_pin_to(cpu[1]);
		rc = bench_server(addr, &o, why, sizeof(why));
		stats_segment_close(); /* _exit skips the atexit that would */
		_exit(rc ? 1 : 0);
	}
	if (pin && bench_pin_save(&was))
		bench_pin_to(cpu[0]);
	else
		pin = false;
	rc = bench_client_open(addr, err, errlen);
	if (!rc) {
		rc = bench_client(addr, test, &o, r, err, errlen);
		bench_client_close();
	}
	if (pin)
		bench_pin_restore(&was);
	if (rc)
		kill(server, SIGKILL);
	bench_wait_child(server, &status);
	return rc;
}
