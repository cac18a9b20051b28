/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* rdmatool bench: shared pieces of the tests. */
#ifndef RDMATOOL_CMD_BENCH_H
#define RDMATOOL_CMD_BENCH_H

#include "core/transport/endpoint.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include "core/util/env.h"

#include <stddef.h>
#include <stdint.h>

struct bench_opts {
	size_t size;
	long iters;	 /* per thread; 0 with a duration: until it ends */
	double duration; /* seconds, 0 = run iters */
	int threads;
	int stripes;
	enum core_lock_mode lock;
	int progress_thread;
	const char *device;
	struct core_env env; /* RDMATOOL_* variables: progress CPU, ring size */
	/* perftest's -i, -x, --sl, --mtu: 0 is core's default for each */
	uint8_t port, gid_index, sl;
	enum ibv_mtu mtu;
};

/* The device's path options of o into an endpoint's attributes. */
void bench_ep_path(struct core_ep_attr *attr, const struct bench_opts *o);

struct core_ep;
/* The device of the first measurement, for the report (in_report), else said on stderr. */
struct bench_device {
	char name[64], provider[32];
	bool in_report;
};
extern struct bench_device bench_device;
void bench_announce_device(const struct core_ep *ep);

struct bench_result {
	size_t size;
	long iters;
	double bw_peak, bw_avg, msg_rate;			   /* MiB/s, MiB/s, Mpps */
	double t_min, t_max, t_typical, t_avg, t_stdev, p99, p999; /* usec */
	double ops_per_s;					   /* ring */
	int is_lat;
};

/* The far end of a transport test: in this process (b != NULL) or a server. */
struct bench_link {
	struct core_ep *a, *b;
	uint32_t pa, pb; /* a's id for b, b's id for a */
	char *src, *dst; /* a's buffer; b's buffer (in-process only) */
	uint64_t raddr;	 /* b's registered buffer, as a sees it */
	uint32_t rkey;
	struct oob_conn *oob; /* two processes: the control connection */
};

/* Each returns 0 or a negative errno with err filled. */
int bench_ring(const struct bench_opts *o, int lockfree, struct bench_result *r, char *err, size_t errlen);
/* Both ends in this process. */
int bench_transport(const char *test, const struct bench_opts *o, struct bench_result *r, char *err,
		    size_t errlen);
/* The measuring side over an established link (in-process or to a server). */
/* Set by SIGINT/SIGTERM (to the signal's number): the measurement under way ends early and the sweep stops,
 * with what was measured printed. */
extern volatile sig_atomic_t bench_interrupted;

int bench_measure(const char *test, const struct bench_opts *o, struct bench_link *l, struct bench_result *r,
		  char *err, size_t errlen);
/* Receives on ep until *stop (or, with oob, until the client says it is done). */
int bench_serve_receives(struct core_ep *ep, char *buf, size_t len, _Atomic int *stop, struct oob_conn *oob);
/* Whether test moves data with SEND/RECV (the target posts receives), not with one-sided operations. */
bool bench_two_sided(const char *test);
/* Target of one-sided tests: waits, without touching ep, until the client says it is done. */
int bench_serve_passive(struct oob_conn *oob);
/* Echo side of send_lat: answers each message until one carries the last-message mark. */
int bench_serve_pong(struct core_ep *ep, uint32_t peer, char *buf, size_t len);

/* Two processes: the client measures, the server mirrors what the client asks for. */
int bench_client(const char *addr, const char *test, const struct bench_opts *o, struct bench_result *r,
		 char *err, size_t errlen);
int bench_client_open(const char *addr, char *err, size_t errlen);
void bench_client_close(void);
/*
 * CPU bytes copied per payload byte by both processes' soft devices over the
 * client's measurements so far (0: no soft wire, or nothing carried).
 */
double bench_client_copies_per_byte(void);
int bench_server(const char *addr, const struct bench_opts *defaults, char *err, size_t errlen);

/* Raw TCP on loopback: the baselines of --baseline, far end on a thread of this process. */
int tcp_baseline_bw(size_t size, double seconds, double *mib_s);
int tcp_baseline_lat(size_t size, long iters, double *half_rtt_us);
/* The same over a connected socket whose far end runs tcp_serve (echo for ping-pong, else sink). */
int tcp_ping_pong(int fd, size_t size, long iters, double *half_rtt_us);
int tcp_stream(int fd, size_t size, double seconds, double *mib_s);
int tcp_serve(int fd, size_t size, bool echo);
int tcp_full_io(int fd, char *buf, size_t len, bool rd);
void tcp_set_nodelay(int fd);
/* Two processes: the same baselines, the bench server as the far end. */
int bench_client_tcp_lat(size_t size, long iters, double *half_rtt_us, char *err, size_t errlen);
int bench_client_tcp_bw(size_t size, double seconds, double *mib_s, char *err, size_t errlen);

/* Agent channel vs pipe between two processes (cmd/bench/chan_rate.c); prints its own report. */
int bench_chan_rate(size_t size, long iters, bool baseline, int rounds);
/* A deposited send through two agent processes vs core send_lat (cmd/bench/agent_lat.c). */
int bench_agent_lat(size_t size, long iters, bool baseline);

/*
 * The physical floors of two processes on this host (cmd/bench/shm_pingpong.c, cma_bw.c); each
 * prints its own report.  iters < 0: the test's default; 0 with a duration: until it ends.
 */
int bench_shm_pingpong(long iters, double duration, int rounds);
int bench_cma_bw(size_t size, long iters, double duration, int rounds);

/* Connection setup, cm against oob, in this process (cmd/bench/conn_rate.c); prints its own report. */
int bench_conn_rate(const struct bench_opts *o, long iters, char *err, size_t errlen);

/* Shared by the runners. */
void bench_stats_latency(double *samples, long n, struct bench_result *r);
/*
 * The median of v[0..n), which it sorts (the mean of the middle two for an
 * even n, 0 for none): how the tests with --rounds report a ratio, so that
 * a slow spell of a shared machine moves one round and not the result.
 */
double bench_median(double *v, int n);

#endif
