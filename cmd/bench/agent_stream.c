/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * bench agent_rate and agent_bw: a stream of sends from node 0 to a channel
 * on node 1 through two agent processes, drained by a third process on node
 * 1; messages/s and MiB/s.  agent_rate: 4 processes send in mode
 * "immediately" (requests stay queued in the gateway, as a rate test keeps
 * sends posted); agent_bw: one process, mode "buffered", messages up to the
 * channel's 4 MiB (the client cuts them into chunks).
 * Baselines in the same run: the same stream with aggregation off
 * (RDMATOOL_AGENT_AGGREGATE=0, agent_rate), the same processes sending the
 * same messages directly with core sends, no agent (agent_rate,
 * cmd/bench/direct_rate.c), the core transport's send_bw on one device
 * (agent_rate), and core write_bw between two processes on their own devices
 * as the two agents are (agent_bw, cmd/bench/pair_transport.c).
 */
#include "cmd/bench/agent_copies.h"
#include "cmd/bench/agent_pair.h"
#include "cmd/bench/bench.h"
#include "cmd/bench/child.h"
#include "cmd/bench/direct_rate.h"
#include "cmd/bench/pair_transport.h"
#include "cmd/bench/pin.h"
#include "cmd/cmd.h"
#include "cmd/print.h"
#include "core/agent/agent.h"
#include "core/chan/channel.h"
#include "core/chan/gateway.h"
#include "core/util/clock.h"
#include "core/util/env.h"

#include <errno.h>
#include <stddef.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define STREAM_TIMEOUT_MS 5000
#define MIB		  1048576.0
#define STREAM_MAX_PROCS  16
#define STREAM_BACKOFF_US 50
#define RATE_PROCS	  4 /* agent_rate: client processes on node 0 */
#define BW_BASELINE_S	  2.0

struct stream_result {
	double msgs_per_s, mib_per_s; /* from the drainer's first message to its last */
	double wall_msgs_per_s;	      /* from forking the senders until every process has exited */
	double items_per_buffer;      /* node 0's aggregation factor toward node 1 */
	/* Bytes per payload byte on each node (agent_copies.h): the agent's CPU copies, its NIC's. */
	double agent_copies[AGENT_PAIR_NODES], nic_copies[AGENT_PAIR_NODES];
};

/*
 * Node 0's aggregation factor toward node 1, as its agent publishes it
 * (every 100 ms): read once the published counts take in the run's items,
 * or after 2 s (0 when nothing was published).
 */
static double aggregation_factor(const char *dir0, long items)
{
	uint64_t deadline = clock_ns() + 2000000000ull;
	struct gateway *g;
	struct gw_info info;

	if (gw_open(dir0, 0, &g))
		return 0;
	do {
		gw_info(g, &info);
		if (info.peer_stats[1].buffer_items_sent >= (uint64_t)items)
			break;
		usleep(10000);
	} while (clock_ns() < deadline);
	gw_close(g);
	return info.peer_stats[1].buffers_sent
		   ? (double)info.peer_stats[1].buffer_items_sent / (double)info.peer_stats[1].buffers_sent
		   : 0;
}

/* When the drainer took its first and its last message (shared with the parent). */
struct drain_times {
	uint64_t first_ns, last_ns;
};

/*
 * The drainer on node 1: receives iters messages of size bytes, checks their
 * length, and notes when the first and the last came (*times, shared).
 */
static pid_t start_drainer(const char *dir1, size_t size, long iters, int cpu, struct drain_times *times)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		bench_child_default_signals();
		struct chan *c = NULL;
		char *buf = malloc(size ? size : 1);
		size_t len;
		int rc = buf ? chan_open(dir1, "stream", &c) : -ENOMEM;

		if (cpu >= 0)
			bench_pin_to(cpu);

		for (long i = 0; i < iters && !rc; i++) {
			rc = chan_recv(c, buf, size ? size : 1, &len, STREAM_TIMEOUT_MS);
			if (!rc && len != size)
				rc = -EBADMSG;
			times->last_ns = clock_ns();
			if (!i)
				times->first_ns = times->last_ns;
		}
		chan_close(c);
		_exit(rc ? 1 : 0);
	}
	return pid;
}

/* A sender on node 0: its own client of agent 0, n sends in mode; exits 0 when all went. */
static pid_t start_sender(const char *dir0, size_t size, long n, enum agent_send_mode mode, int cpu)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		bench_child_default_signals();
		struct agent_client *cl = NULL;
		struct agent_chan *h = NULL;
		char *buf = calloc(1, size ? size : 1), why[512];
		int rc = buf ? 0 : -ENOMEM;

		if (cpu >= 0)
			bench_pin_to(cpu);
		setenv("RDMATOOL_AGENT_DIR", dir0, 1);
		if (!rc)
			rc = agent_attach(0, &cl, why, sizeof(why));
		if (!rc)
			rc = agent_chan_open(cl, "1/stream", &h);
		for (long i = 0; i < n && !rc; i++) {
			rc = agent_send(h, buf, size, mode, STREAM_TIMEOUT_MS);
			if (rc == -EAGAIN) { /* the agent's backlog is full: let it drain, off its CPU */
				usleep(STREAM_BACKOFF_US);
				i--;
				rc = 0;
			}
		}
		if (rc)
			fprintf(stderr, "rdmatool bench: a%s send through the agents failed: %s\n",
				mode == AGENT_SEND_BUFFERED ? " buffered" : "n immediately", strerror(-rc));
		agent_chan_close(h);
		agent_detach(cl);
		free(buf);
		_exit(rc ? 1 : 0);
	}
	return pid;
}

/*
 * Sends iters messages from procs processes through a fresh agent pair and times them until the drainer
 * has them all.  One sender (agent_bw): the agents run pinned, one per CPU, like the two processes of
 * its write_bw baseline (measured: 0.46-0.53x pinned, 0.33-0.49x not, 8 interleaved runs each), and
 * each node's client with its agent, the sender on node 0's CPU and the drainer on node 1's, as on two
 * machines (measured 1.03-1.05x left to the scheduler, which at times put the drainer on node 0's CPU,
 * the busier one: 0.86x when placed there always).  Four (agent_rate) are placed the same way, their
 * four senders with agent 0 (2026-11-27, 64 B, 3 interleaved runs: 305-333k msg/s against 220-264k
 * left to the scheduler, once the eager buffers went out full), and so are the processes of its direct
 * baseline (cmd/bench/direct_rate.c).
 */
static int stream(size_t size, long iters, int procs, enum agent_send_mode mode, struct stream_result *r,
		  char *err, size_t errlen)
{
	char dir0[128], dir1[128];
	struct agent_pair pair;
	pid_t drainer = -1, senders[STREAM_MAX_PROCS];
	struct drain_times *times =
	    mmap(NULL, sizeof(*times), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	uint64_t t0, t1;
	int status = 0, started = 0, rc;

	if (times == MAP_FAILED) {
		rc = -errno;
		snprintf(err, errlen, "mmap: %s", strerror(-rc));
		return rc;
	}
	rc = agent_pair_start(&pair, true, err, errlen);
	if (rc) {
		munmap(times, sizeof(*times));
		return rc;
	}
	agent_pair_dir(&pair, 0, dir0, sizeof(dir0));
	agent_pair_dir(&pair, 1, dir1, sizeof(dir1));
	rc = chan_create(dir1, "stream", NULL);
	if (!rc && (drainer = start_drainer(dir1, size, iters, pair.cpus[1], times)) < 0)
		rc = -errno;
	t0 = clock_ns();
	for (int i = 0; i < procs && !rc; i++) {
		long n = iters / procs + (i < iters % procs);

		if ((senders[i] = start_sender(dir0, size, n, mode, pair.cpus[0])) < 0)
			rc = -errno;
		else
			started++;
	}
	for (int i = 0; i < started; i++) {
		bench_wait_child(senders[i], &status);
		if (!rc && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
			rc = -EIO;
	}
	if (drainer > 0) {
		if (rc)
			kill(drainer, SIGKILL);
		bench_wait_child(drainer, &status);
		if (!rc && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
			rc = -EPROTO;
	}
	t1 = clock_ns();
	if (bench_interrupted)
		snprintf(err, errlen, "interrupted"), rc = -EINTR;
	else if (rc)
		snprintf(err, errlen, "%s through the agents failed: %s",
			 rc == -EPROTO ? "receiving the stream" : "a send", strerror(-rc));
	else {
		/*
		 * The rate is timed as the direct baseline times its own (cmd/bench/direct_rate.c): from
		 * the first message the receiver took to its last, iters - 1 intervals, so forking and
		 * attaching the senders and their exits count against neither.  The wall time from the
		 * first fork to the last exit is reported beside it.
		 */
		bool windowed = iters > 1 && times->last_ns > times->first_ns;
		double wall = (double)(t1 - t0) / 1e9;
		double s = windowed ? (double)(times->last_ns - times->first_ns) / 1e9 : wall;
		double n = windowed ? (double)(iters - 1) : (double)iters;

		r->msgs_per_s = n / s;
		r->mib_per_s = n * (double)size / MIB / s;
		r->wall_msgs_per_s = (double)iters / wall;
		r->items_per_buffer = aggregation_factor(dir0, iters);
		/* Both agents copy every payload byte at least once: wait for counts that take it in. */
		double payload = (double)iters * (double)size;

		for (int k = 0; k < AGENT_PAIR_NODES && payload > 0; k++) {
			struct agent_copies c =
			    copies_of_agent(k ? dir1 : dir0, (uint32_t)k, (uint64_t)payload);

			r->agent_copies[k] = (double)c.copied / payload;
			r->nic_copies[k] = (double)c.nic_bytes / payload;
		}
	}
	agent_pair_stop(&pair);
	munmap(times, sizeof(*times));
	return rc;
}

static int core_send_bw(size_t size, long iters, struct bench_result *core, char *err, size_t errlen)
{
	struct bench_opts o = {.size = size ? size : 8, .iters = iters, .threads = 1, .stripes = 1};

	core_env_defaults(&o.env);
	return bench_transport("send_bw", &o, core, err, errlen);
}

/* One round: the agents' stream and, with --baseline, each baseline once. */
struct round {
	struct stream_result on, off;
	double direct_msgs;	   /* agent_rate: direct core sends, msg/s */
	double core_bw, core_msgs; /* agent_bw: core write_bw MiB/s; agent_rate: core send_bw msg/s */
};

/* The median of the rounds' values of one field (by offset into struct round). */
static double median_field(const struct round *r, int n, size_t offset)
{
	double v[BENCH_AGENT_MAX_ROUNDS];

	for (int i = 0; i < n; i++)
		memcpy(&v[i], (const char *)&r[i] + offset, sizeof(double));
	return bench_median(v, n);
}

/* The median over rounds of a ratio computed per round (a slow spell moves one round, not the median). */
static double median_ratio(const struct round *r, int n, size_t num, size_t den)
{
	double v[BENCH_AGENT_MAX_ROUNDS];
	int k = 0;

	for (int i = 0; i < n; i++) {
		double a, b;

		memcpy(&a, (const char *)&r[i] + num, sizeof(a));
		memcpy(&b, (const char *)&r[i] + den, sizeof(b));
		if (b > 0)
			v[k++] = a / b;
	}
	return bench_median(v, k);
}

#define AT(field) offsetof(struct round, field)

static void report_round(const char *test, int i, const struct round *r, bool baseline)
{
	bool bw = !strcmp(test, "agent_bw");

	print_open_object(NULL);
	print_int(PRINT_ANY, "round", "  round %lld:", i + 1);
	print_double(PRINT_ANY, "agent_msgs_per_s", " agents %.0f msg/s", r->on.msgs_per_s);
	print_double(PRINT_ANY, "agent_MiB_s", " %.2f MiB/s", r->on.mib_per_s);
	print_double(PRINT_ANY, "items_per_buffer", ", %.1f items/buffer", r->on.items_per_buffer);
	if (baseline && !bw) {
		print_double(PRINT_ANY, "no_aggregation_msgs_per_s", "; aggregation off %.0f msg/s",
			     r->off.msgs_per_s);
		print_double(PRINT_ANY, "ratio_to_no_aggregation", " (%.2fx)",
			     r->on.msgs_per_s / r->off.msgs_per_s);
		print_double(PRINT_ANY, "direct_msgs_per_s", "; direct %.0f msg/s", r->direct_msgs);
		print_double(PRINT_ANY, "ratio_to_direct", " (%.2fx)", r->on.msgs_per_s / r->direct_msgs);
	} else if (baseline) {
		print_double(PRINT_ANY, "core_write_bw_MiB_s", "; core write_bw %.2f MiB/s", r->core_bw);
		print_double(PRINT_ANY, "ratio_to_core_write_bw", " (%.2fx)", r->on.mib_per_s / r->core_bw);
	}
	print_text("\n");
	print_close_object();
}

/*
 * Bytes per payload byte (agent_copies.h), medians of the rounds: per node
 * the client's CPU copy (1 by construction), the agent's CPU copies and the
 * bytes its NIC moved (a real NIC's DMA, the soft NIC's CPU copies); the
 * agents' copies end to end against the bar of 2.  Core write_bw, beside
 * them, copies nothing with the CPU: its NIC moves each byte once.
 */
static void report_copies(const struct round *r, int rounds, bool baseline)
{
	double agent0 = median_field(r, rounds, AT(on.agent_copies[0]));
	double agent1 = median_field(r, rounds, AT(on.agent_copies[1]));

	print_open_object("copies_per_byte");
	print_text("  bytes copied per payload byte:\n");
	for (int k = 0; k < AGENT_PAIR_NODES; k++) {
		print_open_object(k ? "node1" : "node0");
		print_int(PRINT_TEXT, NULL, "    node %lld:", k);
		print_double(PRINT_ANY, "client", " client %.2f", 1.0);
		print_text(k ? " (the drainer, out of the channel)" : " (the sender, into its gateway slot)");
		print_double(PRINT_ANY, "agent", ", agent %.2f", k ? agent1 : agent0);
		print_double(PRINT_ANY, "nic", ", NIC %.2f (a real NIC: DMA; the soft NIC: CPU)\n",
			     median_field(r, rounds, k ? AT(on.nic_copies[1]) : AT(on.nic_copies[0])));
		print_close_object();
	}
	print_double(PRINT_ANY, "agent_end_to_end", "    agents' copies end to end: %.2f (bar: <= 2)",
		     agent0 + agent1);
	if (baseline)
		print_double(PRINT_ANY, "core_write_bw_nic",
			     "; core write_bw: no client or agent copies, NIC %.2f", 1.0);
	print_text("\n");
	print_close_object();
}

static void report(const char *test, size_t size, long iters, int procs, enum agent_send_mode mode,
		   const struct round *r, int rounds, bool baseline)
{
	bool bw = !strcmp(test, "agent_bw");
	double on_msgs = median_field(r, rounds, AT(on.msgs_per_s));

	print_begin();
	print_string(PRINT_JSON, "test", NULL, test);
	print_text("%s: ", test);
	print_int(PRINT_ANY, "n_iterations", "%lld", iters);
	print_string(PRINT_ANY, "mode", " %s sends", agent_send_mode_name(mode));
	print_int(PRINT_ANY, "procs", " by %lld process(es)", procs);
	print_uint(PRINT_ANY, "MsgSize",
		   " of %llu bytes from node 0 to a channel on node 1 (two agent processes)", size);
	print_int(PRINT_ANY, "rounds", ", %lld round(s)\n", rounds);
	print_open_array("results");
	for (int i = 0; rounds > 1 && i < rounds; i++)
		report_round(test, i, &r[i], baseline);
	print_close_array();
	if (rounds > 1)
		print_text("  medians of the rounds:\n");
	print_double(PRINT_ANY, "agent_msgs_per_s", "  through the agents:  %.0f msg/s", on_msgs);
	print_double(PRINT_ANY, "agent_MiB_s", ", %.2f MiB/s", median_field(r, rounds, AT(on.mib_per_s)));
	print_double(PRINT_ANY, "items_per_buffer", ", %.1f items per eager buffer",
		     median_field(r, rounds, AT(on.items_per_buffer)));
	print_double(PRINT_ANY, "agent_wall_msgs_per_s", " (%.0f msg/s counting process start-up)\n",
		     median_field(r, rounds, AT(on.wall_msgs_per_s)));
	if (!baseline) {
		print_end();
		return;
	}
	if (!bw) {
		print_double(PRINT_ANY, "no_aggregation_msgs_per_s", "  aggregation off:     %.0f msg/s",
			     median_field(r, rounds, AT(off.msgs_per_s)));
		print_double(PRINT_JSON, "no_aggregation_items_per_buffer", NULL,
			     median_field(r, rounds, AT(off.items_per_buffer)));
		print_double(PRINT_ANY, "ratio_to_no_aggregation", "  (ratio %.2fx)\n",
			     median_ratio(r, rounds, AT(on.msgs_per_s), AT(off.msgs_per_s)));
		print_double(PRINT_ANY, "direct_msgs_per_s", "  direct core sends:   %.0f msg/s",
			     median_field(r, rounds, AT(direct_msgs)));
		print_int(PRINT_TEXT, NULL, " (%lld processes, no agent)", procs);
		print_double(PRINT_ANY, "ratio_to_direct", "  (ratio %.2fx)\n",
			     median_ratio(r, rounds, AT(on.msgs_per_s), AT(direct_msgs)));
		print_double(PRINT_ANY, "core_send_bw_msgs_per_s", "  core send_bw:        %.0f msg/s",
			     r[0].core_msgs);
		print_text(" (one process, measured once)");
		print_double(PRINT_ANY, "ratio_to_core_send_bw", "  (ratio %.2fx)\n",
			     on_msgs / r[0].core_msgs);
	} else {
		print_double(PRINT_ANY, "core_write_bw_MiB_s", "  core write_bw:       %.2f MiB/s",
			     median_field(r, rounds, AT(core_bw)));
		print_text(" (two processes, their own devices)");
		print_double(PRINT_ANY, "ratio_to_core_write_bw", "  (ratio %.2fx)\n",
			     median_ratio(r, rounds, AT(on.mib_per_s), AT(core_bw)));
	}
	if (bw)
		report_copies(r, rounds, baseline);
	print_end();
}

/* The stream without aggregation: the same agents started with RDMATOOL_AGENT_AGGREGATE=0. */
static int stream_no_aggregation(size_t size, long iters, int procs, enum agent_send_mode mode,
				 struct stream_result *off, char *err, size_t errlen)
{
	const char *saved = getenv("RDMATOOL_AGENT_AGGREGATE");
	char *keep = saved ? strdup(saved) : NULL;
	int rc;

	if (saved && !keep)
		return -ENOMEM;
	setenv("RDMATOOL_AGENT_AGGREGATE", "0", 1); /* inherited by the agents of this pair */
	rc = stream(size, iters, procs, mode, off, err, errlen);
	if (keep)
		setenv("RDMATOOL_AGENT_AGGREGATE", keep, 1);
	else
		unsetenv("RDMATOOL_AGENT_AGGREGATE");
	free(keep);
	return rc;
}

/* The baselines of one round; their failures are reported as such. */
static int round_baselines(const char *test, size_t size, long iters, int procs, enum agent_send_mode mode,
			   struct round *r, char *err, size_t errlen)
{
	char why[512] = "";
	struct bench_result core = {0};

	if (!strcmp(test, "agent_bw")) {
		if (pair_transport("write_bw", size ? size : 8, BW_BASELINE_S, 0, &core, why, sizeof(why))) {
			snprintf(err, errlen, "the core write_bw baseline failed: %s", why);
			return -EIO;
		}
		r->core_bw = core.bw_avg;
		return 0;
	}
	int rc = stream_no_aggregation(size, iters, procs, mode, &r->off, err, errlen);

	if (rc)
		return rc;
	int cpus[2] = {-1, -1};

	if (!bench_two_cpus(cpus))
		cpus[0] = cpus[1] = -1;
	if (direct_rate(size, iters, procs, cpus, &r->direct_msgs, why, sizeof(why))) {
		snprintf(err, errlen, "the direct core sends baseline failed: %s", why);
		return -EIO;
	}
	return 0;
}

static int run(const char *test, size_t size, long iters, int procs, enum agent_send_mode mode, bool baseline,
	       int rounds)
{
	char err[512] = "";
	struct round r[BENCH_AGENT_MAX_ROUNDS] = {0};
	bool with_no_aggregation = !strcmp(test, "agent_rate");
	size_t max = with_no_aggregation ? GW_INLINE : CHAN_DEFAULT_MAX_MSG;
	int rc = 0;

	if (size > max)
		return usage_error("bench", "%s takes --size up to %zu bytes (%s)", test, max,
				   with_no_aggregation ? "what one SENDMSG carries"
						       : "the largest message of a channel");
	if (agent_client_env_check(err, sizeof(err)))
		return usage_error("bench", "%s", err);
	for (int i = 0; i < rounds && !rc; i++) {
		/* ABBA order: neither the agents nor the baselines always run first. */
		if (baseline && i % 2)
			rc = round_baselines(test, size, iters, procs, mode, &r[i], err, sizeof(err));
		if (!rc)
			rc = stream(size, iters, procs, mode, &r[i].on, err, sizeof(err));
		if (!rc && baseline && i % 2 == 0)
			rc = round_baselines(test, size, iters, procs, mode, &r[i], err, sizeof(err));
		if (bench_interrupted && !rc)
			snprintf(err, sizeof(err), "interrupted"), rc = -EINTR;
	}
	if (!rc && baseline && with_no_aggregation) {
		struct bench_result core = {0};
		char why[512] = "";

		if (core_send_bw(size, iters, &core, why, sizeof(why)))
			return run_error("bench", "the core send_bw baseline failed: %s", why);
		r[0].core_msgs = core.msg_rate * 1e6;
	}
	if (rc && bench_interrupted)
		return interrupted_status("bench", bench_interrupted); /* Ctrl-C: 130, as every bench */
	if (rc)
		return run_error("bench", "%s", err[0] ? err : strerror(-rc));
	report(test, size, iters, procs, mode, r, rounds, baseline);
	return EXIT_OK;
}

int bench_agent_rate(size_t size, long iters, bool baseline, int rounds)
{
	/* A message rate: each sender keeps requests queued (up to the gateway's slots), as a verbs
	 * send_bw keeps sends posted, instead of waiting for its agent after each one. */
	return run("agent_rate", size, iters > 0 ? iters : 50000, RATE_PROCS, AGENT_SEND_IMMEDIATELY,
		   baseline, rounds);
}

int bench_agent_bw(size_t size, long iters, bool baseline, int rounds)
{
	return run("agent_bw", size, iters > 0 ? iters : 2000, 1, AGENT_SEND_BUFFERED, baseline, rounds);
}
