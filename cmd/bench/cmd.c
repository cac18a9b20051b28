/* SPDX-License-Identifier: MIT */
/* rdmatool bench <test>: perftest-like tests over core, striped against global lock in one run. */
#include "cmd/cmd.h"
#include "cmd/json.h"
#include "cmd/bench/bench.h"
#include "core/util/clock.h"
#include "core/stats/stats.h"
#include "core/oob/oob.h"

#include <errno.h>
#include <popt.h>
#include <stdlib.h>
#include <string.h>

static const char *const CMD = "bench";
static const char *const TESTS[] = {"send_lat", "write_lat", "read_lat",  "atomic_lat",
				    "send_bw",	"chan_rate", "agent_lat", "write_bw",
				    "read_bw",	"msg_rate",  "ring",	  NULL};

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
	if (global_opts.json)
		return;
	if (is_ring)
		printf("%-9s %7s %14s\n", "impl", "threads", "ops/s");
	else if (is_lat)
		printf("%-8s %7s %8s %11s %12s %12s %16s %12s %14s %20s %22s%s\n", "lock", "threads",
		       "#bytes", "#iterations", "t_min[usec]", "t_max[usec]", "t_typical[usec]",
		       "t_avg[usec]", "t_stdev[usec]", "99% percentile[usec]", "99.9% percentile[usec]",
		       baseline ? "  vs TCP" : "");
	else
		printf("%-8s %7s %8s %11s %17s %20s %14s%s\n", "lock", "threads", "#bytes", "#iterations",
		       "BW peak[MiB/sec]", "BW average[MiB/sec]", "MsgRate[Mpps]",
		       baseline ? "  vs memcpy  vs TCP" : "");
}

static void print_row(struct json *j, bool is_ring, bool is_lat, const struct row *w)
{
	const struct bench_result *r = &w->r;
	const struct baseline *b = w->base;

	if (global_opts.json) {
		json_begin_object(j, NULL);
		if (is_ring) {
			json_string(j, "impl", w->name);
			json_int(j, "threads", w->threads);
			json_double(j, "ops_per_s", r->ops_per_s);
			json_end_object(j);
			return;
		}
		json_string(j, "lock", w->name);
		json_int(j, "threads", w->threads);
		json_uint(j, "MsgSize", r->size);
		json_int(j, "n_iterations", r->iters);
		if (is_lat) {
			json_double(j, "t_min", r->t_min);
			json_double(j, "t_max", r->t_max);
			json_double(j, "t_typical", r->t_typical);
			json_double(j, "t_avg", r->t_avg);
			json_double(j, "t_stdev", r->t_stdev);
			json_double(j, "percentile_99", r->p99);
			json_double(j, "percentile_99.9", r->p999); /* perftest's key */
			if (b) {
				json_double(j, "tcp_t_typical", b->tcp_lat_us);
				json_double(j, "ratio_to_tcp", r->t_typical / b->tcp_lat_us);
			}
		} else {
			json_double(j, "BW_peak", r->bw_peak);
			json_double(j, "BW_average", r->bw_avg);
			json_double(j, "MsgRate", r->msg_rate);
			if (b) {
				json_double(j, "memcpy_MiB_s", b->memcpy_mib_s);
				json_double(j, "ratio_to_memcpy", r->bw_avg / b->memcpy_mib_s);
				json_double(j, "tcp_MiB_s", b->tcp_mib_s);
				json_double(j, "ratio_to_tcp", r->bw_avg / b->tcp_mib_s);
			}
		}
		json_end_object(j);
	} else if (is_ring) {
		printf("%-9s %7d %14.0f\n", w->name, w->threads, r->ops_per_s);
	} else if (is_lat) {
		printf("%-8s %7d %8zu %11ld %12.2f %12.2f %16.2f %12.2f %14.2f %20.2f %22.2f", w->name,
		       w->threads, r->size, r->iters, r->t_min, r->t_max, r->t_typical, r->t_avg, r->t_stdev,
		       r->p99, r->p999);
		if (b)
			printf("  %.2fx (TCP %.2f us)", r->t_typical / b->tcp_lat_us, b->tcp_lat_us);
		printf("\n");
	} else {
		printf("%-8s %7d %8zu %11ld %17.2f %20.2f %14.4f", w->name, w->threads, r->size, r->iters,
		       r->bw_peak, r->bw_avg, r->msg_rate);
		if (b)
			printf("  %.3fx      %.3fx", r->bw_avg / b->memcpy_mib_s, r->bw_avg / b->tcp_mib_s);
		printf("\n");
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Of the rounds' ratios: a slow spell of a shared machine moves one round, not the median. */
static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
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

/* The first SIGINT/SIGTERM ends the run early with its partial results; a second one kills. */
static void on_interrupt(int sig)
{
	if (bench_interrupted)
		signal(sig, SIG_DFL), raise(sig);
	bench_interrupted = 1;
}

static void catch_interrupts(void)
{
	struct sigaction sa = {.sa_handler = on_interrupt};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* The string options, owned by cmd_bench. */
struct bench_args {
	char *threads, *lock, *device, *server, *client;
};

static int bench_main(int argc, const char **argv, struct bench_args *a)
{
	long size = 8, iters = -1;
	double duration = 0;
	int stripes = 0, progress = 0, baseline = 0, all = 0, is_server = 0, rounds = 1, iters_given = 0;
	struct poptOption opts[] = {
	    {"size", 's', POPT_ARG_LONG, &size, 0, "message size in bytes (default 8)", "BYTES"},
	    {"all", 'a', POPT_ARG_NONE, &all, 0, "sweep sizes 2 B .. 8 MiB (powers of two)", NULL},
	    {"iters", 'n', POPT_ARG_LONG, &iters, 'n', "iterations per thread", "N"},
	    {"duration", 'D', POPT_ARG_DOUBLE, &duration, 0, "run each measurement for this many seconds",
	     "SECONDS"},
	    {"threads", 0, POPT_ARG_STRING, &a->threads, 0, "thread counts to sweep, e.g. 1,2,4", "LIST"},
	    {"stripes", 0, POPT_ARG_INT, &stripes, 0, "stripes per endpoint (0 = auto)", "N"},
	    {"lock", 0, POPT_ARG_STRING, &a->lock, 0, "striped, global or both (default both)", "MODE"},
	    {"progress-thread", 0, POPT_ARG_NONE, &progress, 0, "progress in a background thread", NULL},
	    {"device", 0, POPT_ARG_STRING, &a->device, 0, "device to use (default: first active, else soft0)",
	     "NAME"},
	    {"server", 0, POPT_ARG_STRING | POPT_ARGFLAG_OPTIONAL, &a->server, 1,
	     "serve clients on [ADDR:]PORT until one completes a run (default 127.0.0.1:18515; port 0 = any, "
	     "printed)",
	     "[ADDR:]PORT"},
	    {"client", 0, POPT_ARG_STRING, &a->client, 0, "run against a bench server", "HOST[:PORT]"},
	    {"rounds", 0, POPT_ARG_INT, &rounds, 0,
	     "alternate striped and global this many times; the ratio is the median of the rounds' ratios",
	     "N"},
	    {"baseline", 0, POPT_ARG_NONE, &baseline, 0,
	     "measure memcpy and raw TCP loopback in the same run", NULL},
	    POPT_AUTOHELP POPT_TABLEEND};
	poptContext pc = poptGetContext(argv[0], argc, argv, opts, 0);
	int rc, threads[16] = {1}, nthreads = 1, do_striped = 1, do_global = 1, nsizes = 0;
	size_t sizes[MAX_SWEEP];
	const char *test = NULL;
	char err[512], addr[300];

	poptSetOtherOptionHelp(pc, "[OPTIONS] <test> | --server");
	while ((rc = poptGetNextOpt(pc)) > 0) {
		is_server |= rc == 1;
		iters_given |= rc == 'n';
	}
	if (rc < -1) {
		rc = popt_usage_error(CMD, pc, rc, argv);
		poptFreeContext(pc);
		return rc;
	}
	struct core_env env;
	char env_error[256];

	core_env_defaults(&env);
	if (core_env_read(&env, env_error, sizeof(env_error))) {
		poptFreeContext(pc);
		return run_error(CMD, "%s", env_error);
	}
	/* Options win over the environment. */
	if (!stripes)
		stripes = env.tx_stripes;
	progress = progress || env.progress_thread;
	stats_segment_open("bench"); /* cqstat -c bench; without a segment bench still runs */
	test = poptGetArg(pc);
	if (iters_given && iters < 1) {
		poptFreeContext(pc);
		return usage_error(
		    CMD, "--iters %ld: give at least 1 iteration, or --duration to run for a time", iters);
	}
	if (size < 1 || size > MAX_SIZE || stripes < 0 || stripes > CORE_MAX_STRIPES || duration < 0 ||
	    duration > 86400 || rounds < 1 || rounds > MAX_ROUNDS) {
		poptFreeContext(pc);
		return usage_error(CMD,
				   "--size must be 1..%ld, --stripes 0..%d, --duration "
				   "0..86400, --rounds 1..%d",
				   MAX_SIZE, CORE_MAX_STRIPES, MAX_ROUNDS);
	}
	if (is_server) {
		struct bench_opts d = {.device = a->device, .env = env};

		if (test || a->client) {
			poptFreeContext(pc);
			return usage_error(
			    CMD, "--server takes no test and no --client; the client chooses the test");
		}
		if ((rc = server_address(a->server, addr, sizeof(addr)))) {
			poptFreeContext(pc);
			return rc;
		}
		rc = bench_server(addr, &d, err, sizeof(err));
		poptFreeContext(pc);
		return rc ? run_error(CMD, "%s", err) : EXIT_OK;
	}
	int known = 0;

	for (int i = 0; test && TESTS[i]; i++)
		known |= !strcmp(test, TESTS[i]);
	if (!known || poptPeekArg(pc)) {
		/* test points into popt's context: report before freeing it. */
		rc = usage_error(CMD,
				 "%s test%s%s; use one of send_lat write_lat read_lat atomic_lat send_bw "
				 "write_bw read_bw msg_rate ring chan_rate agent_lat",
				 !test	 ? "missing"
				 : known ? "one"
					 : "unknown",
				 test && !known ? " " : "",
				 test && !known ? test
				 : test		? " only"
						: "");
		poptFreeContext(pc);
		return rc;
	}
	if (!strcmp(test, "agent_lat")) {
		rc = bench_agent_lat((size_t)size, iters, baseline);
		poptFreeContext(pc);
		return rc;
	}
	if (!strcmp(test, "chan_rate")) {
		/* Not the transport: an agent channel between two processes, so none of the transport options
		 * apply. */
		rc = bench_chan_rate((size_t)size, iters, baseline, rounds);
		poptFreeContext(pc);
		return rc;
	}
	if (a->threads && (nthreads = parse_threads(a->threads, threads, 16)) <= 0) {
		poptFreeContext(pc);
		return usage_error(
		    CMD, "--threads='%s' is invalid; give up to 16 counts 1..64 separated by commas",
		    a->threads);
	}
	if (a->lock) {
		do_striped = !strcmp(a->lock, "striped") || !strcmp(a->lock, "both");
		do_global = !strcmp(a->lock, "global") || !strcmp(a->lock, "both");
		if (!do_striped && !do_global) {
			poptFreeContext(pc);
			return usage_error(CMD, "--lock='%s' is invalid; use striped, global or both",
					   a->lock);
		}
	}
	bool is_ring = !strcmp(test, "ring"), is_lat = strstr(test, "_lat") != NULL;

	if (a->client && is_ring) {
		poptFreeContext(pc);
		return usage_error(CMD, "the ring test runs in one process; drop --client");
	}
	int max_threads = 1;

	for (int i = 0; i < nthreads; i++)
		max_threads = threads[i] > max_threads ? threads[i] : max_threads;
	if (is_lat && max_threads > 1) {
		poptFreeContext(pc);
		return usage_error(CMD, "latency tests run one thread; drop --threads or use a _bw test");
	}
	if (iters < 0)
		iters = duration > 0 ? 0 : is_ring ? 1000000 : is_lat ? 2000 : 20000;
	if (all) {
		for (long s = 2; s <= MAX_SIZE; s <<= 1)
			sizes[nsizes++] = (size_t)s;
	} else {
		sizes[nsizes++] = (size_t)size;
	}
	if (a->client) {
		struct sockaddr_storage ss;
		socklen_t sslen;

		snprintf(addr, sizeof(addr), "%s%s", a->client, strchr(a->client, ':') ? "" : ":18515");
		if (oob_parse_address(addr, &ss, &sslen) == -EINVAL) {
			poptFreeContext(pc);
			return usage_error(CMD,
					   "--client=%s is not HOST[:PORT]; e.g. --client=10.0.0.2 or "
					   "--client=10.0.0.2:18515 (port 1..65535)",
					   a->client);
		}
		if (bench_client_open(addr, err, sizeof(err))) {
			poptFreeContext(pc);
			return run_error(CMD, "%s", err);
		}
	}
	struct bench_opts o = {.iters = iters,
			       .duration = duration,
			       .stripes = stripes,
			       .progress_thread = progress,
			       .device = a->device,
			       .env = env};
	struct json j;
	struct ratio ratios[MAX_SWEEP * 16];
	int nratios = 0, status = EXIT_OK;

	if (global_opts.json) {
		json_init(&j, stdout, global_opts.pretty);
		json_begin_object(&j, NULL);
		json_string(&j, "test", test);
		json_string(&j, "mode", a->client ? "two processes" : "one process");
		json_begin_array(&j, "results");
	}
	/* The header waits for the first row, so the device notice of the first measurement comes first. */
	bool header_due = true;

	catch_interrupts();
	for (int si = 0; si < nsizes; si++) {
		struct baseline base;

		o.size = sizes[si];
		if (baseline && !is_ring &&
		    measure_baseline(o.size, is_lat, a->client != NULL, &base, err, sizeof(err))) {
			status = run_error(CMD, "%s", err);
			goto done;
		}
		for (int ti = 0; ti < nthreads; ti++) {
			double round_ratio[MAX_ROUNDS];
			int nround = 0;

			o.threads = threads[ti];
			for (int round = 0; round < rounds; round++) {
				double val[2] = {0, 0};

				/* ABBA order: neither lock always runs first (warm caches, a fresh engine).
				 */
				for (int mi = 0; mi < 2; mi++) {
					int m = round % 2 ? 1 - mi : mi;
					struct row w = {.threads = o.threads,
							.base = baseline && !is_ring ? &base : NULL};

					if ((m == 0 && !do_striped) || (m == 1 && !do_global))
						continue;
					o.lock = m == 0 ? CORE_LOCK_STRIPED : CORE_LOCK_GLOBAL;
					w.name = is_ring ? (m == 0 ? "lockfree" : "mutex")
							 : (m == 0 ? "striped" : "global");
					if (progress_wanted())
						fprintf(stderr, "\r%s %s threads=%d size=%zu ...", test,
							w.name, o.threads, o.size);
					rc = is_ring ? bench_ring(&o, m == 0, &w.r, err, sizeof(err))
					     : a->client
						 ? bench_client(addr, test, &o, &w.r, err, sizeof(err))
						 : bench_transport(test, &o, &w.r, err, sizeof(err));
					if (progress_wanted())
						fprintf(stderr, "\r\033[K");
					if (rc) {
						status = run_error(CMD, "%s", err);
						goto done;
					}
					val[m] = is_ring ? w.r.ops_per_s : is_lat ? w.r.t_avg : w.r.msg_rate;
					if (header_due)
						print_header(is_ring, is_lat, baseline && !is_ring);
					header_due = false;
					print_row(&j, is_ring, is_lat, &w);
					if (bench_interrupted)
						goto done;
				}
				if (do_striped && do_global && val[0] > 0 && val[1] > 0)
					round_ratio[nround++] = is_lat ? val[1] / val[0] : val[0] / val[1];
			}
			if (nround)
				ratios[nratios++] =
				    (struct ratio){o.threads, o.size, median(round_ratio, nround)};
		}
	}
done:
	if (a->client)
		bench_client_close();
	if (global_opts.json) {
		json_end_array(&j);
		json_begin_array(&j, "ratios");
		for (int i = 0; i < nratios; i++) {
			json_begin_object(&j, NULL);
			json_int(&j, "threads", ratios[i].threads);
			json_int(&j, "rounds", rounds);
			if (!is_ring)
				json_uint(&j, "MsgSize", ratios[i].size);
			json_double(&j,
				    is_ring  ? "lockfree_over_mutex"
				    : is_lat ? "global_over_striped_latency"
					     : "striped_over_global",
				    ratios[i].value);
			json_end_object(&j);
		}
		json_end_array(&j);
		json_bool(&j, "interrupted", bench_interrupted);
		json_end_object(&j);
		json_finish(&j);
	} else {
		for (int i = 0; i < nratios; i++)
			printf("threads=%d size=%zu %s: %.3fx\n", ratios[i].threads, ratios[i].size,
			       is_ring	? "lockfree/mutex"
			       : is_lat ? "global/striped latency"
					: "striped/global rate",
			       ratios[i].value);
	}
	if (bench_interrupted && status == EXIT_OK)
		status = run_error(CMD, "interrupted: the results above are partial");
	poptFreeContext(pc);
	return status;
}

/* popt hands string options over in malloc'd copies: they are freed here, whatever bench_main returns. */
int cmd_bench(int argc, const char **argv)
{
	struct bench_args a = {NULL};
	int rc = bench_main(argc, argv, &a);

	free(a.threads);
	free(a.lock);
	free(a.device);
	free(a.server);
	free(a.client);
	return rc;
}
