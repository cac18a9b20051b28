/* SPDX-License-Identifier: MIT */
/*
 * Core write_bw between two processes, each with its own soft device linked
 * over the wire as two agents are: a bench server forked on a free loopback
 * port, and this process as its client.  The in-process write_bw shares one
 * device and moves data with one memcpy, which no path through agents can
 * compare with.
 */
#include "cmd/bench/pair_write_bw.h"
#include "core/stats/stats.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
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

int pair_write_bw(size_t size, double seconds, struct bench_result *r, char *err, size_t errlen)
{
	struct bench_opts o = {
	    .size = size, .duration = seconds, .threads = 1, .stripes = 1, .lock = CORE_LOCK_STRIPED};
	char addr[32];
	int port = free_loopback_port(), rc, status;
	pid_t server;

	if (port < 0) {
		snprintf(err, errlen, "no free loopback port for the write_bw baseline: %s", strerror(-port));
		return port;
	}
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	core_env_defaults(&o.env);
	o.env.connect = CORE_CONNECT_OOB; /* as bench's own client and server (perftest's default) */
	fflush(NULL);
	server = fork();
	if (server < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot fork the write_bw baseline's server: %s", strerror(errno));
		return rc;
	}
	if (server == 0) {
		char why[256];
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, STDERR_FILENO); /* its "listening on" lines are not ours to print */
		rc = bench_server(addr, &o, why, sizeof(why));
		stats_segment_close(); /* _exit skips the atexit that would */
		_exit(rc ? 1 : 0);
	}
	rc = bench_client_open(addr, err, errlen);
	if (!rc) {
		rc = bench_client(addr, "write_bw", &o, r, err, errlen);
		bench_client_close();
	}
	if (rc)
		kill(server, SIGKILL);
	waitpid(server, &status, 0);
	return rc;
}
