/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* rdmatool bench <test>: perftest-like tests over core, striped against global lock in one run. */
#include "cmd/cmd.h"
#include "cmd/help.h"
#include "cmd/print.h"
#include "cmd/bench/agent_pair.h"
#include "cmd/bench/bench.h"
#include "cmd/bench/floor.h"
#include "core/util/clock.h"
#include "core/stats/stats.h"
#include "core/stats/stats_path.h"
#include "core/oob/oob.h"
#include "hw/hw.h"

#include <errno.h>
#include <popt.h>
#include <stdlib.h>
#include <string.h>

static const char *const CMD = "bench";
/* The tests, in the order --help lists them, each with the line it says. */
static const struct {
	const char *name, *what;
} TESTS[] = {
    {"send_lat", "SEND/RECV ping-pong latency (ib_send_lat)"},
    {"write_lat", "RDMA WRITE ping-pong latency (ib_write_lat)"},
    {"read_lat", "RDMA READ latency (ib_read_lat)"},
    {"atomic_lat", "FETCH_ADD latency (ib_atomic_lat)"},
    {"send_bw", "SEND/RECV bandwidth (ib_send_bw)"},
    {"write_bw", "RDMA WRITE bandwidth (ib_write_bw)"},
    {"read_bw", "RDMA READ bandwidth (ib_read_bw)"},
    {"msg_rate", "small messages from --threads producers, striped vs global lock"},
    {"ring", "the completion ring alone: lock-free MPSC against a mutex queue"},
    {"conn_rate", "connection setups: the CM against the out-of-band exchange"},
    {"chan_rate", "agent channel messages between two processes, against a pipe"},
    {"agent_lat", "a deposited send through two agents, against core send_lat"},
    {"agent_rate", "small messages through two agents, against the direct transport"},
    {"agent_bw", "large messages through two agents, against the direct transport"},
    {"shm_pingpong", "a cache line between two processes: the round trip floor"},
    {"cma_bw", "process_vm_readv of another process: the single-copy floor"},
};
#define NTESTS (sizeof(TESTS) / sizeof(TESTS[0]))

void bench_more_help(FILE *out)
{
	fputs("Tests:\n", out);
	for (size_t i = 0; i < NTESTS; i++)
		fprintf(out, "  %-14s%s\n", TESTS[i].name, TESTS[i].what);
}

void bench_complete_arg(int n, const char **args, const char *cur)
{
	(void)args;
	for (size_t i = 0; n == 0 && i < NTESTS; i++)
		complete_word(cur, "", TESTS[i].name);
}

#define MAX_SIZE   (8l << 20)
#define MAX_SWEEP  32
#define MAX_ROUNDS 99

struct baseline {
	double memcpy_mib_s, tcp_mib_s, tcp_lat_us;
};

static double memcpy_mib_s(size_t size)
{
	size_t len = size < 4096 ? 4096 : size;
	char *a = malloc(len), *b = malloc(len);
	uint64_t t0, bytes = 0;

	if (!a || !b) {
		free(a);
		free(b);
		return 0;
	}
	memset(a, 1, len);
	memset(b, 0, len);
	t0 = clock_ns();
	while (clock_ns() - t0 < 200000000ull) {
		memcpy(b, a, len);
		bytes += len;
		__asm__ volatile("" ::"r"(b) : "memory");
	}
	double secs = (double)(clock_ns() - t0) / 1e9;

	free(a);
	free(b);
	return (double)bytes / secs / (1024.0 * 1024.0);
}

/* Raw TCP between the same places as the test: this process alone, or this process and the server. */
static int measure_baseline(size_t size, bool is_lat, bool remote, struct baseline *b, char *err,
			    size_t errlen)
{
	int rc;

	memset(b, 0, sizeof(*b));
	if (!is_lat)
		b->memcpy_mib_s = memcpy_mib_s(size);
	if (remote)
		return is_lat ? bench_client_tcp_lat(size, 2000, &b->tcp_lat_us, err, errlen)
			      : bench_client_tcp_bw(size, 0.3, &b->tcp_mib_s, err, errlen);
	rc =
	    is_lat ? tcp_baseline_lat(size, 2000, &b->tcp_lat_us) : tcp_baseline_bw(size, 0.3, &b->tcp_mib_s);
	if (rc)
		snprintf(err, errlen, "the TCP loopback baseline failed: %s", strerror(-rc));
	return rc;
}

static int parse_threads(const char *text, int *out, int max)
{
	int n = 0;
	char *copy = strdup(text), *save, *tok;

	if (!copy)
		return -1;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		long v = strtol(tok, &end, 10);

		if (*end || v < 1 || v > 64 || n == max) {
			free(copy);
			return -1;
		}
		out[n++] = (int)v;
	}
	free(copy);
	return n;
}

struct row {
	const char *name;
	int threads;
	struct bench_result r;
	const struct baseline *base;
};

/* Numbers right-aligned under perftest's column names, so no line ends in spaces. */
static void print_header(bool is_ring, bool is_lat, bool baseline)
{
	if (is_ring)
		print_text("%-9s %7s %14s\n", "impl", "threads", "ops/s");
	else if (is_lat)
		print_text("%-8s %7s %8s %11s %12s %12s %16s %12s %14s %20s %22s%s\n", "lock", "threads",
			   "#bytes", "#iterations", "t_min[usec]", "t_max[usec]", "t_typical[usec]",
			   "t_avg[usec]", "t_stdev[usec]", "99% percentile[usec]", "99.9% percentile[usec]",
			   baseline ? "  vs TCP" : "");
	else
		print_text("%-8s %7s %8s %11s %17s %20s %14s%s\n", "lock", "threads", "#bytes", "#iterations",
			   "BW peak[MiB/sec]", "BW average[MiB/sec]", "MsgRate[Mpps]",
			   baseline ? "  vs memcpy  vs TCP" : "");
}

static void print_row(bool is_ring, bool is_lat, const struct row *w)
{
	const struct bench_result *r = &w->r;
	const struct baseline *b = w->base;

	print_open_object(NULL);
	if (is_ring) {
		print_string(PRINT_ANY, "impl", "%-9s", w->name);
		print_int(PRINT_ANY, "threads", " %7lld", w->threads);
		print_double(PRINT_ANY, "ops_per_s", " %14.0f\n", r->ops_per_s);
		print_close_object();
		return;
	}
	print_string(PRINT_ANY, "lock", "%-8s", w->name);
	print_int(PRINT_ANY, "threads", " %7lld", w->threads);
	print_uint(PRINT_ANY, "MsgSize", " %8llu", r->size);
	print_int(PRINT_ANY, "n_iterations", " %11lld", r->iters);
	if (is_lat) {
		print_double(PRINT_ANY, "t_min", " %12.2f", r->t_min);
		print_double(PRINT_ANY, "t_max", " %12.2f", r->t_max);
		print_double(PRINT_ANY, "t_typical", " %16.2f", r->t_typical);
		print_double(PRINT_ANY, "t_avg", " %12.2f", r->t_avg);
		print_double(PRINT_ANY, "t_stdev", " %14.2f", r->t_stdev);
		print_double(PRINT_ANY, "percentile_99", " %20.2f", r->p99);
		print_double(PRINT_ANY, "percentile_99.9", " %22.2f", r->p999); /* perftest's key */
		if (b) {
			print_double(PRINT_ANY, "ratio_to_tcp", "  %.2fx", r->t_typical / b->tcp_lat_us);
			print_double(PRINT_ANY, "tcp_t_typical", " (TCP %.2f us)", b->tcp_lat_us);
		}
	} else {
		print_double(PRINT_ANY, "BW_peak", " %17.2f", r->bw_peak);
		print_double(PRINT_ANY, "BW_average", " %20.2f", r->bw_avg);
		print_double(PRINT_ANY, "MsgRate", " %14.4f", r->msg_rate);
		if (b) {
			print_double(PRINT_JSON, "memcpy_MiB_s", NULL, b->memcpy_mib_s);
			print_double(PRINT_ANY, "ratio_to_memcpy", "  %.3fx", r->bw_avg / b->memcpy_mib_s);
			print_double(PRINT_JSON, "tcp_MiB_s", NULL, b->tcp_mib_s);
			print_double(PRINT_ANY, "ratio_to_tcp", "      %.3fx", r->bw_avg / b->tcp_mib_s);
		}
	}
	print_text("\n");
	print_close_object();
}

struct ratio {
	int threads;
	size_t size;
	double value;
};

/*
 * --server's listening address.  Without an ADDR the server listens on the
 * soft device's address (RDMATOOL_SOFT_ADDR's host, default 127.0.0.1), not
 * on every interface: it hands its buffer's address and rkey to whoever
 * connects.  --server=0.0.0.0:PORT serves other hosts.
 */
static int server_address(const char *option, char *addr, size_t addrlen)
{
	const char *soft = getenv("RDMATOOL_SOFT_ADDR"), *colon = soft ? strrchr(soft, ':') : NULL;
	struct sockaddr_storage ss;
	socklen_t sslen;
	char host[64] = "127.0.0.1";

	if (soft && *soft && (colon ? (size_t)(colon - soft) : strlen(soft)) < sizeof(host))
		snprintf(host, sizeof(host), "%.*s", colon ? (int)(colon - soft) : (int)strlen(soft), soft);
	if (!option)
		snprintf(addr, addrlen, "%s:18515", host);
	else if (strchr(option, ':'))
		snprintf(addr, addrlen, "%s", option);
	else
		snprintf(addr, addrlen, "%s:%s", host, option);
	if (oob_parse_address(addr, &ss, &sslen) == -EINVAL)
		return usage_error(
		    CMD,
		    "--server=%s is not [ADDR:]PORT; e.g. --server=18515, --server=0 (any free "
		    "port) or --server=0.0.0.0:18515 (every interface)",
		    option ? option : "");
	return 0;
}

volatile sig_atomic_t bench_interrupted;
static uint64_t interrupted_ns;

/*
 * The first SIGINT/SIGTERM ends the run early with its partial results; a second one kills.  Not a
 * second copy of the first: timeout(1), and kill(1) given a process group, send the signal to the
 * bench and to its group, microseconds apart.
 */
#define INTERRUPT_REPEAT_NS 100000000ull
static void on_interrupt(int sig)
{
	uint64_t now = clock_ns(); /* clock_gettime is async-signal-safe */

	if (bench_interrupted && now - interrupted_ns > INTERRUPT_REPEAT_NS)
		signal(sig, SIG_DFL), raise(sig);
	if (!bench_interrupted)
		interrupted_ns = now;
	bench_interrupted = sig;
}

/* The command line, parsed and then validated; the strings are popt's malloc'd copies. */
struct bench_cli {
	char *threads_text, *lock, *device, *server, *client;
	char test[32]; /* "" when none was given */
	bool extra_arg;
	long size, iters;
	double duration;
	int stripes, progress, baseline, all, is_server, rounds, iters_given, size_given, rounds_given,
	    rdma_cm;
	int port, gid_index, sl, mtu;
	int threads[16], nthreads;
	bool do_striped, do_global, is_ring, is_lat;
	size_t sizes[MAX_SWEEP];
	int nsizes;
	char addr[300];
	struct core_env env;
};

/* The sweep's output: rows are printed as they are measured, the ratios at the end. */
struct bench_report {
	bool header_due;
	struct ratio ratios[MAX_SWEEP * 16];
	int nratios;
};

static int bench_parse(int argc, const char **argv, struct bench_cli *c)
{
	struct poptOption opts[] = {
	    {"size", 's', POPT_ARG_LONG, &c->size, 's', "message size in bytes (default 8)", "BYTES"},
	    {"all", 'a', POPT_ARG_NONE, &c->all, 0, "sweep sizes 2 B .. 8 MiB (powers of two)", NULL},
	    {"iters", 'n', POPT_ARG_LONG, &c->iters, 'n', "iterations per thread", "N"},
	    {"duration", 'D', POPT_ARG_DOUBLE, &c->duration, 0, "run each measurement for this many seconds",
	     "SECONDS"},
	    {"threads", 0, POPT_ARG_STRING, &c->threads_text, 0, "thread counts to sweep, e.g. 1,2,4",
	     "LIST"},
	    {"stripes", 0, POPT_ARG_INT, &c->stripes, 0, "stripes per endpoint (0 = auto)", "N"},
	    {"lock", 0, POPT_ARG_STRING, &c->lock, 0, "which locking to measure (default both)",
	     "striped|global|both"},
	    {"progress-thread", 0, POPT_ARG_NONE, &c->progress, 0, "progress in a background thread", NULL},
	    {"ib-dev", 'd', POPT_ARG_STRING, &c->device, 0,
	     "device to use, as perftest's -d (default: first active, else soft0)", "NAME"},
	    {"device", 0, POPT_ARG_STRING, &c->device, 0, "the same as --ib-dev", "NAME"},
	    {"ib-port", 'i', POPT_ARG_INT, &c->port, 0, "the device's port (default 1)", "PORT"},
	    {"gid-index", 'x', POPT_ARG_INT, &c->gid_index, 0,
	     "source GID index, e.g. a RoCEv2 GID (default 0)", "INDEX"},
	    {"sl", 0, POPT_ARG_INT, &c->sl, 0, "service level (default 0)", "SL"},
	    {"mtu", 0, POPT_ARG_INT, &c->mtu, 0,
	     "path MTU: 256, 512, 1024, 2048 or 4096 (default: the port's)", "BYTES"},
	    {"server", 0, POPT_ARG_STRING | POPT_ARGFLAG_OPTIONAL, &c->server, 1,
	     "serve clients on [ADDR:]PORT until one completes a run (default 127.0.0.1:18515; port 0 = any, "
	     "printed)",
	     "[ADDR:]PORT"},
	    {"client", 0, POPT_ARG_STRING, &c->client, 0, "run against a bench server", "HOST[:PORT]"},
	    {"rounds", 0, POPT_ARG_INT, &c->rounds, 'r',
	     "alternate the test and its baseline this many times (striped and global for msg_rate); ratios "
	     "are medians of the rounds' ratios",
	     "N"},
	    {"baseline", 0, POPT_ARG_NONE, &c->baseline, 0,
	     "measure memcpy and raw TCP loopback in the same run", NULL},
	    {"rdma_cm", 'R', POPT_ARG_NONE, &c->rdma_cm, 0,
	     "connect the QPs through the connection manager (default: the out-of-band exchange)", NULL},
	    CMD_HELP(opts),
	    POPT_TABLEEND};
	poptContext pc = poptGetContext(argv[0], argc, argv, opts, 0);
	const char *test;
	int rc;

	poptSetOtherOptionHelp(pc, "[OPTIONS] <test> | --server");
	while ((rc = poptGetNextOpt(pc)) > 0) {
		c->is_server |= rc == 1;
		c->iters_given |= rc == 'n';
		c->size_given |= rc == 's';
		c->rounds_given |= rc == 'r';
	}
	if (rc < -1) {
		rc = popt_usage_error(CMD, pc, rc, argv);
	} else {
		rc = EXIT_OK;
		test = poptGetArg(pc);
		if (test && strlen(test) >= sizeof(c->test))
			rc = usage_error(CMD, "unknown test %.40s...; 'rdmatool bench --help' lists them",
					 test);
		else if (test)
			snprintf(c->test, sizeof(c->test), "%s", test);
		c->extra_arg = poptPeekArg(pc) != NULL;
	}
	poptFreeContext(pc);
	return rc;
}

static bool is_known_test(const char *test)
{
	for (size_t i = 0; i < NTESTS; i++)
		if (!strcmp(test, TESTS[i].name))
			return true;
	return false;
}

/* The physical floors of two processes (cmd/bench/floor.h): none of the transport's options. */
static bool is_floor(const char *test)
{
	return !strcmp(test, "shm_pingpong") || !strcmp(test, "cma_bw");
}

/* Options that only the transport tests take: thread counts, lock modes, sizes, the far end. */
static int bench_validate_transport(struct bench_cli *c)
{
	int max_threads = 1;

	if (c->threads_text && (c->nthreads = parse_threads(c->threads_text, c->threads, 16)) <= 0)
		return usage_error(
		    CMD, "--threads='%s' is invalid; give up to 16 counts 1..64 separated by commas",
		    c->threads_text);
	if (c->lock) {
		c->do_striped = !strcmp(c->lock, "striped") || !strcmp(c->lock, "both");
		c->do_global = !strcmp(c->lock, "global") || !strcmp(c->lock, "both");
		if (!c->do_striped && !c->do_global)
			return usage_error(CMD, "--lock='%s' is invalid; use striped, global or both",
					   c->lock);
	}
	c->is_ring = !strcmp(c->test, "ring");
	c->is_lat = strstr(c->test, "_lat") != NULL;
	if (c->client && c->is_ring)
		return usage_error(CMD, "the ring test runs in one process; drop --client");
	for (int i = 0; i < c->nthreads; i++)
		max_threads = c->threads[i] > max_threads ? c->threads[i] : max_threads;
	if (c->is_lat && max_threads > 1)
		return usage_error(CMD, "latency tests run one thread; drop --threads or use a _bw test");
	if (c->iters < 0)
		c->iters = c->duration > 0 ? 0 : c->is_ring ? 1000000 : c->is_lat ? 2000 : 20000;
	if (c->all)
		for (long s = 2; s <= MAX_SIZE; s <<= 1)
			c->sizes[c->nsizes++] = (size_t)s;
	else
		c->sizes[c->nsizes++] = (size_t)c->size;
	if (c->client) {
		struct sockaddr_storage ss;
		socklen_t sslen;

		snprintf(c->addr, sizeof(c->addr), "%s%s", c->client, strchr(c->client, ':') ? "" : ":18515");
		if (oob_parse_address(c->addr, &ss, &sslen) == -EINVAL)
			return usage_error(CMD,
					   "--client=%s is not HOST[:PORT]; e.g. --client=10.0.0.2 or "
					   "--client=10.0.0.2:18515 (port 1..65535)",
					   c->client);
	}
	return EXIT_OK;
}

/* A device that is not there is a usage error before anything runs, worded as walk's. */
static bool device_exists(const char *name)
{
	struct hw_device devs[HW_MAX_DEVICES];
	int verbs_errno, n = hw_list_devices(devs, HW_MAX_DEVICES, &verbs_errno);

	for (int i = 0; i < n; i++)
		if (!strcmp(devs[i].name, name))
			return true;
	return false;
}

static int bench_validate(struct bench_cli *c)
{
	char env_error[256];

	if (c->device && !device_exists(c->device))
		return unknown_device_error(CMD, c->device);

	core_env_defaults(&c->env);
	if (core_env_read(&c->env, env_error, sizeof(env_error)))
		return run_error(CMD, "%s", env_error);
	/* As perftest: the out-of-band exchange unless -R (or RDMATOOL_CONNECT=cm) asks for the CM. */
	if (c->rdma_cm)
		c->env.connect = CORE_CONNECT_CM;
	else if (c->env.connect == CORE_CONNECT_AUTO)
		c->env.connect = CORE_CONNECT_OOB;
	/* Options win over the environment. */
	if (!c->stripes)
		c->stripes = c->env.tx_stripes;
	c->progress = c->progress || c->env.progress_thread;
	if (c->port < 0 || c->port > 255 || c->gid_index < 0 || c->gid_index > 255 || c->sl < 0 || c->sl > 15)
		return usage_error(CMD, "--ib-port must be 1..255 (0: 1), --gid-index 0..255, --sl 0..15");
	if (c->mtu && c->mtu != 256 && c->mtu != 512 && c->mtu != 1024 && c->mtu != 2048 && c->mtu != 4096)
		return usage_error(CMD, "--mtu %d: give 256, 512, 1024, 2048 or 4096", c->mtu);
	if (c->all && c->size_given)
		return usage_error(CMD, "--all sweeps every size from 2 B to 8 MiB; drop --size (or --all)");
	if (c->iters_given && c->iters < 1)
		return usage_error(
		    CMD, "--iters %ld: give at least 1 iteration, or --duration to run for a time", c->iters);
	if (c->size < 1 || c->size > MAX_SIZE || c->stripes < 0 || c->stripes > CORE_MAX_STRIPES ||
	    c->duration < 0 || c->duration > 86400 || c->rounds < 1 || c->rounds > MAX_ROUNDS)
		return usage_error(
		    CMD, "--size must be 1..%ld, --stripes 0..%d, --duration 0..86400, --rounds 1..%d",
		    MAX_SIZE, CORE_MAX_STRIPES, MAX_ROUNDS);
	if (c->is_server) {
		if (*c->test || c->client)
			return usage_error(
			    CMD, "--server takes no test and no --client; the client chooses the test");
		return server_address(c->server, c->addr, sizeof(c->addr));
	}
	if (!*c->test || !is_known_test(c->test) || c->extra_arg)
		return usage_error(
		    CMD,
		    "%s%s%s; 'rdmatool bench --help' lists the tests (send_lat, write_bw, msg_rate, ...)",
		    !*c->test		      ? "missing test"
		    : !is_known_test(c->test) ? "unknown test "
					      : "one test only",
		    *c->test && !is_known_test(c->test) ? c->test : "", "");
	if (!strcmp(c->test, "shm_pingpong") && c->size_given)
		return usage_error(CMD, "shm_pingpong bounces one cache line; drop --size");
	if (is_floor(c->test)) {
		if (!c->rounds_given)
			c->rounds = FLOOR_DEFAULT_ROUNDS;
		return EXIT_OK;
	}
	/* chan_rate and agent_lat measure agent channels, not the transport: its options do not apply. */
	if (!strcmp(c->test, "agent_lat") || !strcmp(c->test, "chan_rate") ||
	    !strncmp(c->test, "agent_", 6) || !strcmp(c->test, "conn_rate"))
		return EXIT_OK;
	return bench_validate_transport(c);
}

static void report_begin(struct bench_report *rep, const struct bench_cli *c)
{
	rep->header_due = true;
	rep->nratios = 0;
	bench_device.in_report = true;
	print_begin();
	print_string(PRINT_JSON, "test", NULL, c->test);
	/* An enum: local (both ends here), client (against a --server), two_processes (chan_rate). */
	print_string(PRINT_JSON, "mode", NULL, c->client ? "client" : "local");
	print_open_array("results");
}

static void report_row(struct bench_report *rep, const struct bench_cli *c, const struct row *w)
{
	/* The header waits for the first row, so the device of the first measurement comes first. */
	if (rep->header_due && *bench_device.name)
		print_text("device %s (%s)\n", bench_device.name, bench_device.provider);
	if (rep->header_due)
		print_header(c->is_ring, c->is_lat, c->baseline && !c->is_ring);
	rep->header_due = false;
	print_row(c->is_ring, c->is_lat, w);
}

static void report_end(struct bench_report *rep, const struct bench_cli *c)
{
	const char *key = c->is_ring  ? "lockfree_over_mutex"
			  : c->is_lat ? "global_over_striped_latency"
				      : "striped_over_global";
	const char *label = c->is_ring	? "lockfree/mutex"
			    : c->is_lat ? "global/striped latency"
					: "striped/global rate";

	print_close_array();
	print_open_array("ratios");
	for (int i = 0; i < rep->nratios; i++) {
		print_open_object(NULL);
		print_int(PRINT_ANY, "threads", "threads=%lld", rep->ratios[i].threads);
		print_int(PRINT_JSON, "rounds", NULL, c->rounds);
		if (c->is_ring)
			print_text(" size=%zu", rep->ratios[i].size);
		else
			print_uint(PRINT_ANY, "MsgSize", " size=%llu", rep->ratios[i].size);
		print_text(" %s: ", label);
		print_double(PRINT_ANY, key, "%.3fx\n", rep->ratios[i].value);
		print_close_object();
	}
	print_close_array();
	if (c->client && bench_client_copies_per_byte() > 0)
		print_double(PRINT_ANY, "copies_per_payload_byte",
			     "soft wire: %.2f CPU copies per payload byte (both processes)\n",
			     bench_client_copies_per_byte());
	if (*bench_device.name) {
		print_string(PRINT_JSON, "device", NULL, bench_device.name);
		print_string(PRINT_JSON, "provider", NULL, bench_device.provider);
	}
	print_bool(PRINT_JSON, "interrupted", NULL, bench_interrupted);
	print_end();
}

/* -i, -x, --sl, --mtu (validated) into the options of the runs. */
static void bench_cli_path(const struct bench_cli *c, struct bench_opts *o)
{
	o->port = (uint8_t)c->port;
	o->gid_index = (uint8_t)c->gid_index;
	o->sl = (uint8_t)c->sl;
	o->mtu = c->mtu ? (enum ibv_mtu)(__builtin_ctz((unsigned)c->mtu) - 7) : 0;
}

/* One measurement of one lock mode (m: 0 striped, 1 global); prints its row. */
static int measure_one(const struct bench_cli *c, struct bench_opts *o, int m, const struct baseline *base,
		       struct bench_report *rep, double *value)
{
	struct row w = {.threads = o->threads, .base = c->baseline && !c->is_ring ? base : NULL};
	char err[512];
	int rc;

	o->lock = m == 0 ? CORE_LOCK_STRIPED : CORE_LOCK_GLOBAL;
	w.name = c->is_ring ? (m == 0 ? "lockfree" : "mutex") : (m == 0 ? "striped" : "global");
	if (progress_wanted())
		fprintf(stderr, "\r%s %s threads=%d size=%zu ...", c->test, w.name, o->threads, o->size);
	rc = c->is_ring	 ? bench_ring(o, m == 0, &w.r, err, sizeof(err))
	     : c->client ? bench_client(c->addr, c->test, o, &w.r, err, sizeof(err))
			 : bench_transport(c->test, o, &w.r, err, sizeof(err));
	if (progress_wanted())
		fprintf(stderr, "\r\033[K");
	if (rc)
		return run_error(CMD, "%s", err);
	*value = c->is_ring ? w.r.ops_per_s : c->is_lat ? w.r.t_avg : w.r.msg_rate;
	report_row(rep, c, &w);
	return EXIT_OK;
}

/* Every size, thread count and round; stops early on an error or an interrupt. */
static int bench_sweep(const struct bench_cli *c, struct bench_report *rep)
{
	struct bench_opts o = {.iters = c->iters,
			       .duration = c->duration,
			       .stripes = c->stripes,
			       .progress_thread = c->progress,
			       .device = c->device,
			       .env = c->env};

	bench_cli_path(c, &o);
	char err[512];

	for (int si = 0; si < c->nsizes; si++) {
		struct baseline base;

		o.size = c->sizes[si];
		if (c->baseline && !c->is_ring &&
		    measure_baseline(o.size, c->is_lat, c->client != NULL, &base, err, sizeof(err)))
			return run_error(CMD, "%s", err);
		for (int ti = 0; ti < c->nthreads; ti++) {
			double round_ratio[MAX_ROUNDS];
			int nround = 0;

			o.threads = c->threads[ti];
			for (int round = 0; round < c->rounds; round++) {
				double val[2] = {0, 0};

				/* ABBA order: neither lock always runs first (warm caches, a fresh engine).
				 */
				for (int mi = 0; mi < 2; mi++) {
					int m = round % 2 ? 1 - mi : mi, rc;

					if ((m == 0 && !c->do_striped) || (m == 1 && !c->do_global))
						continue;
					if ((rc = measure_one(c, &o, m, &base, rep, &val[m])))
						return rc;
					/* `bench -a | head`: no one reads the rest */
					if (bench_interrupted || stdout_closed())
						return EXIT_OK;
				}
				if (c->do_striped && c->do_global && val[0] > 0 && val[1] > 0)
					round_ratio[nround++] = c->is_lat ? val[1] / val[0] : val[0] / val[1];
			}
			if (nround)
				rep->ratios[rep->nratios++] =
				    (struct ratio){o.threads, o.size, bench_median(round_ratio, nround)};
		}
	}
	return EXIT_OK;
}

static int bench_run(const struct bench_cli *c)
{
	struct bench_report rep;
	char err[512];
	int status;

	stats_segment_open("bench"); /* cqstat -c bench; without a segment bench still runs */
	const char *why = stats_segment_problem();

	if (why)
		notice(CMD, "%s", why);
	catch_interrupts(on_interrupt);
	if (c->is_server) {
		struct bench_opts d = {.device = c->device, .env = c->env};

		bench_cli_path(c, &d);
		return bench_server(c->addr, &d, err, sizeof(err)) ? run_error(CMD, "%s", err) : EXIT_OK;
	}
	if (!strcmp(c->test, "agent_lat"))
		return bench_agent_lat((size_t)c->size, c->iters, c->baseline);
	if (!strcmp(c->test, "agent_rate") || !strcmp(c->test, "agent_bw"))
		return (c->test[6] == 'r' ? bench_agent_rate : bench_agent_bw)((size_t)c->size, c->iters,
									       c->baseline, c->rounds);
	if (!strcmp(c->test, "shm_pingpong"))
		return bench_shm_pingpong(c->iters, c->duration, c->rounds);
	if (!strcmp(c->test, "cma_bw"))
		return bench_cma_bw(c->size_given ? (size_t)c->size : 0, c->iters, c->duration, c->rounds);
	if (!strcmp(c->test, "chan_rate"))
		return bench_chan_rate((size_t)c->size, c->iters, c->baseline, c->rounds);
	if (!strcmp(c->test, "conn_rate")) {
		struct bench_opts o = {.device = c->device, .env = c->env};

		bench_cli_path(c, &o);
		return bench_conn_rate(&o, c->iters_given ? c->iters : 100, err, sizeof(err))
			   ? run_error(CMD, "%s", err)
			   : EXIT_OK;
	}
	if (c->client && bench_client_open(c->addr, err, sizeof(err)))
		return run_error(CMD, "%s", err);
	report_begin(&rep, c);
	status = bench_sweep(c, &rep);
	if (c->client)
		bench_client_close();
	report_end(&rep, c);
	if (bench_interrupted && status == EXIT_OK)
		status = interrupted_status(CMD, bench_interrupted);
	return status;
}

int cmd_bench(int argc, const char **argv)
{
	struct bench_cli c = {.size = 8,
			      .iters = -1,
			      .rounds = 1,
			      .threads = {1},
			      .nthreads = 1,
			      .do_striped = true,
			      .do_global = true};
	int rc = bench_parse(argc, argv, &c);

	if (rc == EXIT_OK)
		rc = bench_validate(&c);
	if (rc == EXIT_OK)
		rc = bench_run(&c);
	free(c.threads_text);
	free(c.lock);
	free(c.device);
	free(c.server);
	free(c.client);
	return rc;
}
