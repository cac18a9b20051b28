/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rdmatool cqstat: the per-stripe and per-CQ counters every running rdmatool
 * process publishes in its stats segment (core/stats/stats.h), read from outside
 * without a lock; one sample, or vmstat-like samples every -i seconds.
 */
#include "core/stats/stats_reader.h"
#include "cmd/cmd.h"
#include "cmd/help.h"
#include "cmd/print.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <popt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

static const char *const CMD = "cqstat";

#define MAX_INTERVAL_S (24 * 3600.0)
#define MIN_INTERVAL_S 0.01 /* shorter is a busy loop, not a sample rate */

struct cqstat_opts {
	const char *comm;
	double interval; /* 0: one sample unless -n asks for more */
	long count;	 /* 0: until interrupted (with -i) */
	int details;
	int clean;
	pid_t *pids; /* explicit PID arguments */
	size_t npids;
};

/* One sample: the live processes' snapshots, and what could not be shown. */
struct problem {
	pid_t pid;
	char comm[STATS_COMM_LEN + 1];
	const char *why;
};

struct sample {
	struct stats_snapshot **procs;
	size_t nprocs;
	struct problem *stale;
	size_t nstale;
	struct problem *unreadable;
	size_t nunreadable;
	double unix_time;
};

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
	(void)sig;
	interrupted = 1;
}

static const char *const kind_names[STATS_NKINDS] = {
    [STATS_KIND_STRIPE] = "stripe",
    [STATS_KIND_CQ] = "cq",
    [STATS_KIND_MADSTRESS_WORKER] = "madstress_worker",
    [STATS_KIND_WALK_CLIENT] = "walk_client",
    [STATS_KIND_AGENT] = "agent",
    [STATS_KIND_OTHER] = "other",
};

/* Names come from other processes' memory: keep them printable ASCII. */
static void sanitize(char *s)
{
	for (; *s; s++)
		if (!isprint((unsigned char)*s) || (unsigned char)*s >= 0x80)
			*s = '?';
}

static void proc_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(buf, len, "?");
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
	sanitize(buf);
}

static double now_unix(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int add_problem(struct problem **list, size_t *n, pid_t pid, const char *comm, const char *why)
{
	struct problem *grown = realloc(*list, (*n + 1) * sizeof(**list));

	if (!grown)
		return -ENOMEM;
	*list = grown;
	grown[*n].pid = pid;
	snprintf(grown[*n].comm, sizeof(grown[*n].comm), "%s", comm);
	sanitize(grown[*n].comm);
	grown[*n].why = why;
	(*n)++;
	return 0;
}

static void sample_free(struct sample *s)
{
	for (size_t i = 0; i < s->nprocs; i++)
		free(s->procs[i]);
	free(s->procs);
	free(s->stale);
	free(s->unreadable);
	memset(s, 0, sizeof(*s));
}

/*
 * Reads one pid's segment into the sample: live ones into procs, dead or
 * reused pids into stale, bad files into unreadable.  A segment that
 * vanished since the directory was listed is simply skipped.
 */
static int read_one(pid_t pid, const struct cqstat_opts *o, struct sample *s)
{
	struct stats_snapshot *snap;
	struct stats_reader r;
	int status;

	status = stats_reader_open(&r, pid);
	if (status == STATS_READ_NOENT)
		return 0;
	if (status != STATS_READ_OK) {
		char comm[STATS_COMM_LEN + 1];

		if (stats_process_liveness(pid, 0) == STATS_DEAD)
			return add_problem(&s->stale, &s->nstale, pid, "?", "process is gone");
		proc_comm(pid, comm, sizeof(comm));
		return add_problem(&s->unreadable, &s->nunreadable, pid, comm, stats_read_strerror(status));
	}
	snap = malloc(sizeof(*snap));
	if (!snap) {
		stats_reader_close(&r);
		return -ENOMEM;
	}
	status = stats_reader_snapshot(&r, snap);
	stats_reader_close(&r);
	if (status != STATS_READ_OK) {
		free(snap);
		return add_problem(&s->unreadable, &s->nunreadable, pid, "?", stats_read_strerror(status));
	}
	sanitize(snap->comm);
	for (uint32_t i = 0; i < snap->nentries; i++)
		sanitize(snap->entry[i].name);
	switch (stats_process_liveness(pid, snap->proc_starttime)) {
	case STATS_DEAD:
		status = add_problem(&s->stale, &s->nstale, pid, snap->comm, "process is gone");
		free(snap);
		return status;
	case STATS_PID_REUSED:
		status = add_problem(&s->stale, &s->nstale, pid, snap->comm, "pid reused by another process");
		free(snap);
		return status;
	case STATS_LIVE:
		break;
	}
	if (o->comm && strcmp(o->comm, snap->comm)) {
		free(snap);
		return 0;
	}
	struct stats_snapshot **grown = realloc(s->procs, (s->nprocs + 1) * sizeof(*grown));

	if (!grown) {
		free(snap);
		return -ENOMEM;
	}
	s->procs = grown;
	s->procs[s->nprocs++] = snap;
	return 0;
}

static int take_sample(const struct cqstat_opts *o, struct sample *s)
{
	pid_t *pids = o->pids;
	size_t n = o->npids;
	int err = 0;

	memset(s, 0, sizeof(*s));
	s->unix_time = now_unix();
	if (!o->npids) {
		err = stats_list_pids(&pids, &n);
		if (err)
			return err;
	}
	for (size_t i = 0; i < n && !err; i++)
		err = read_one(pids[i], o, s);
	if (pids != o->pids)
		free(pids);
	return err;
}

/* The same process in the previous sample (same pid and start time), or NULL. */
static const struct stats_snapshot *find_prev(const struct sample *prev, const struct stats_snapshot *cur)
{
	for (size_t i = 0; prev && i < prev->nprocs; i++)
		if (prev->procs[i]->pid == cur->pid &&
		    prev->procs[i]->start_realtime_ns == cur->start_realtime_ns)
			return prev->procs[i];
	return NULL;
}

/*
 * The same entry in the previous sample: same slot and same generation (a
 * removed entry's slot is reused by the next one, with another seq), or NULL.
 * Both snapshots list entries in slot order.
 */
static const struct stats_entry_snapshot *find_prev_entry(const struct stats_snapshot *prev,
							  const struct stats_entry_snapshot *e)
{
	uint32_t lo = 0, hi = prev ? prev->nentries : 0;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (prev->entry[mid].slot < e->slot)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (prev && lo < prev->nentries && prev->entry[lo].slot == e->slot && prev->entry[lo].seq == e->seq)
		return &prev->entry[lo];
	return NULL;
}

/*
 * Per-second rate of counter c of entry i: since the previous sample when
 * that sample had the same entry, else since the entry was added (a new
 * entry, or the first sample).
 */
static double rate(const struct stats_snapshot *cur, const struct stats_snapshot *prev, uint32_t i, int c,
		   double unix_time)
{
	const struct stats_entry_snapshot *e = &cur->entry[i], *before = find_prev_entry(prev, e);
	double secs;
	uint64_t base = 0;

	if (before) {
		secs = (double)(cur->taken_ns - prev->taken_ns) / 1e9;
		base = before->counter[c];
	} else {
		secs = unix_time - (double)e->created_realtime_ns / 1e9;
	}
	if (secs <= 0 || e->counter[c] < base)
		return 0;
	return (double)(e->counter[c] - base) / secs;
}

/*
 * Every counter and rate, once: its JSON key, its column (title, width) and
 * whether the column shows only with -d.  Both outputs read this table, so
 * they cannot drift apart.
 */
struct field {
	const char *key, *title;
	int width;
	int counter; /* stats_counter, or -1 for a rate */
	int rate_of; /* with counter -1: the counter whose rate this is */
	bool detail;
};

static const struct field fields[] = {
    {"posted", "POSTED", 12, STATS_POSTED, 0, false},
    {"rate_posted_per_s", "POST/s", 11, -1, STATS_POSTED, true},
    {"completed", "COMPLETED", 12, STATS_COMPLETED, 0, false},
    {"rate_completed_per_s", "COMPL/s", 11, -1, STATS_COMPLETED, false},
    {"polls", "POLLS", 12, STATS_POLLS, 0, false},
    {"empty_polls", "EMPTY", 12, STATS_EMPTY_POLLS, 0, false},
    {"ring_depth", "DEPTH", 7, STATS_RING_DEPTH, 0, false},
    {"ring_hwm", "HWM", 7, STATS_RING_HWM, 0, false},
    {"eagain", "EAGAIN", 9, STATS_EAGAIN, 0, false},
    {"errors", "ERRORS", 8, STATS_ERRORS, 0, false},
    {"errors_local", "E_LOCAL", 8, STATS_ERRORS_LOCAL, 0, true},
    {"errors_remote", "E_REMOTE", 8, STATS_ERRORS_REMOTE, 0, true},
    {"errors_flush", "E_FLUSH", 8, STATS_ERRORS_FLUSH, 0, true},
    {"errors_timeout", "E_TMOUT", 8, STATS_ERRORS_TIMEOUT, 0, true},
    {"errors_other", "E_OTHER", 8, STATS_ERRORS_OTHER, 0, true},
    {"flow_control", "FLOWCTL", 8, STATS_FLOW_CONTROL, 0, true},
};

#define NFIELDS (sizeof(fields) / sizeof(fields[0]))
_Static_assert(NFIELDS == STATS_NCOUNTERS + 2, "every counter and the two rates have a field");

static int print_header(const struct cqstat_opts *o)
{
	printf("%7s %-12s %-20s %6s", "PID", "COMM", "NAME", "STRIPE");
	for (size_t f = 0; f < NFIELDS; f++)
		if (!fields[f].detail || o->details)
			printf(" %*s", fields[f].width, fields[f].title);
	putchar('\n');
	return 1;
}

static void print_entry(const struct cqstat_opts *o, const struct stats_snapshot *snap,
			const struct stats_snapshot *before, uint32_t i, double now)
{
	const struct stats_entry_snapshot *e = &snap->entry[i];
	char fmt[16];

	print_open_object(NULL);
	print_text("%7d %-12.12s ", (int)snap->pid, snap->comm);
	print_string(PRINT_ANY, "name", "%-20.20s", e->name);
	print_string(PRINT_JSON, "kind", NULL, kind_names[e->kind]);
	/* A CQ (or a walk client, an agent) belongs to no stripe: "-", and no "stripe" in JSON. */
	if (e->stripe >= 0)
		print_int(PRINT_ANY, "stripe", " %6lld", e->stripe);
	else
		print_text(" %6s", "-");
	for (size_t f = 0; f < NFIELDS; f++) {
		const struct field *fd = &fields[f];
		/* Every field in JSON; in the table, the detail columns only with -d. */
		enum print_kind kind = fd->detail && !o->details ? PRINT_JSON : PRINT_ANY;

		if (fd->counter >= 0) {
			snprintf(fmt, sizeof(fmt), " %%%dllu", fd->width);
			print_uint(kind, fd->key, fmt, e->counter[fd->counter]);
		} else {
			snprintf(fmt, sizeof(fmt), " %%%d.0f", fd->width);
			print_double(kind, fd->key, fmt, rate(snap, before, i, fd->rate_of, now));
		}
	}
	print_text("\n");
	print_close_object();
}

static void print_problems(const char *key, const struct problem *list, size_t n, bool with_comm)
{
	print_open_array(key);
	for (size_t i = 0; i < n; i++) {
		print_open_object(NULL);
		print_int(PRINT_JSON, "pid", NULL, list[i].pid);
		if (with_comm)
			print_string(PRINT_JSON, "comm", NULL, list[i].comm);
		print_string(PRINT_JSON, with_comm ? "reason" : "error", NULL, list[i].why);
		print_close_object();
	}
	print_close_array();
}

/*
 * One sample: a JSON document, or the table's rows (the stale and
 * unreadable ones are notices in text).  Returns how many lines it printed.
 */
static int print_sample(const struct cqstat_opts *o, const struct sample *s, const struct sample *prev)
{
	int lines = 0;

	print_begin();
	print_uint(PRINT_JSON, "time_ms", NULL, (unsigned long long)llround(s->unix_time * 1e3));
	print_open_array("processes");
	for (size_t p = 0; p < s->nprocs; p++) {
		const struct stats_snapshot *snap = s->procs[p];
		const struct stats_snapshot *before = find_prev(prev, snap);

		print_open_object(NULL);
		print_int(PRINT_JSON, "pid", NULL, snap->pid);
		print_string(PRINT_JSON, "comm", NULL, snap->comm);
		print_uint(PRINT_JSON, "start_time_ms", NULL, snap->start_realtime_ns / 1000000u);
		print_open_array("cqs");
		for (uint32_t i = 0; i < snap->nentries; i++, lines++)
			print_entry(o, snap, before, i, s->unix_time);
		print_close_array();
		print_close_object();
	}
	print_close_array();
	print_problems("stale", s->stale, s->nstale, true);
	print_problems("unreadable", s->unreadable, s->nunreadable, false);
	print_end();
	return lines;
}

static int screen_rows(void)
{
	struct winsize ws;

	if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 2)
		return ws.ws_row;
	return 24;
}

/* Stale and unreadable segments are reported once each on stderr, not per sample. */
struct reported {
	pid_t *pids;
	size_t n;
};

static bool first_report(struct reported *r, pid_t pid)
{
	pid_t *grown;

	for (size_t i = 0; i < r->n; i++)
		if (r->pids[i] == pid)
			return false;
	grown = realloc(r->pids, (r->n + 1) * sizeof(*grown));
	if (!grown)
		return true;
	r->pids = grown;
	r->pids[r->n++] = pid;
	return true;
}

static void report_problems(const struct sample *s, struct reported *done)
{
	for (size_t i = 0; i < s->nstale; i++)
		if (first_report(done, s->stale[i].pid))
			notice(CMD,
			       "pid %d (%s): stale segment skipped, %s; 'rdmatool cqstat --clean' removes it",
			       (int)s->stale[i].pid, s->stale[i].comm, s->stale[i].why);
	for (size_t i = 0; i < s->nunreadable; i++)
		if (first_report(done, s->unreadable[i].pid))
			notice(CMD, "pid %d (%s): segment skipped: %s", (int)s->unreadable[i].pid,
			       s->unreadable[i].comm, s->unreadable[i].why);
}

/* For explicit PIDs: every one must be a live process with a readable segment. */
static int check_targets(const struct cqstat_opts *o, const struct sample *s)
{
	for (size_t i = 0; i < o->npids; i++) {
		pid_t pid = o->pids[i];
		char path[512], comm[64];
		bool shown = false;

		for (size_t p = 0; p < s->nprocs; p++)
			shown |= s->procs[p]->pid == pid;
		if (shown)
			continue;
		for (size_t p = 0; p < s->nstale; p++)
			if (s->stale[p].pid == pid)
				return run_error(
				    CMD,
				    "pid %d: %s; its segment is stale ('rdmatool cqstat --clean' "
				    "removes it)",
				    (int)pid, s->stale[p].why);
		for (size_t p = 0; p < s->nunreadable; p++)
			if (s->unreadable[p].pid == pid)
				return run_error(CMD, "pid %d: %s; is it running another rdmatool version?",
						 (int)pid, s->unreadable[p].why);
		if (stats_process_liveness(pid, 0) == STATS_DEAD)
			return run_error(CMD,
					 "no process with pid %d; 'rdmatool cqstat' lists the processes "
					 "that publish stats",
					 (int)pid);
		if (o->comm)
			return run_error(CMD, "pid %d is not named '%s'; drop -c or the PID", (int)pid,
					 o->comm);
		proc_comm(pid, comm, sizeof(comm));
		stats_pid_path(pid, path, sizeof(path));
		return run_error(CMD,
				 "process %d (%s) publishes no stats segment (%s): only rdmatool commands "
				 "that use core do, and not with RDMATOOL_STATS=0",
				 (int)pid, comm, path);
	}
	return EXIT_OK;
}

/* Sleeps until the absolute CLOCK_MONOTONIC deadline; false if interrupted by a signal. */
static bool sleep_until(const struct timespec *deadline)
{
	while (!interrupted) {
		int err = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, deadline, NULL);

		if (err == 0)
			return !interrupted;
		if (err != EINTR)
			return false;
	}
	return false;
}

static void advance(struct timespec *t, double secs)
{
	long long ns = t->tv_nsec + llround(secs * 1e9);

	t->tv_sec += ns / 1000000000ll;
	t->tv_nsec = ns % 1000000000ll;
}

static int run_samples(const struct cqstat_opts *o)
{
	struct sample prev = {0}, cur;
	struct reported reported = {0};
	struct timespec next;
	int status = EXIT_OK, rows = screen_rows(), since_header = 0;
	long taken = 0;
	bool have_prev = false;

	clock_gettime(CLOCK_MONOTONIC, &next);
	for (;;) {
		int err = take_sample(o, &cur);

		if (err) {
			status = run_error(CMD,
					   "cannot list stats segments in %s: %s; set RDMATOOL_STATS_DIR to "
					   "an existing directory",
					   stats_segment_dir(), strerror(-err));
			break;
		}
		if (taken == 0) {
			status = check_targets(o, &cur);
			if (status == EXIT_OK && o->comm && !cur.nprocs)
				status = run_error(CMD,
						   "no live process named '%s' publishes stats; "
						   "'rdmatool cqstat' lists them",
						   o->comm);
			if (status != EXIT_OK) {
				sample_free(&cur);
				break;
			}
			if (!cur.nprocs && !o->npids && !o->comm)
				notice(CMD, "no running rdmatool process publishes stats in %s",
				       stats_segment_dir());
		}
		report_problems(&cur, &reported);
		if (!global_opts.json && (taken == 0 || (o->interval > 0 && since_header >= rows - 1)))
			since_header = print_header(o);
		since_header += print_sample(o, &cur, have_prev ? &prev : NULL);
		fflush(stdout);
		if (stdout_closed())
			break; /* `cqstat -i 1 | head`: the reader has what it wanted */
		taken++;
		sample_free(&prev);
		prev = cur;
		have_prev = true;
		if (o->count ? taken >= o->count : o->interval == 0)
			break;
		/* Explicit targets that all exited end the run. */
		if (o->npids && !cur.nprocs) {
			notice(CMD, "the processes watched have exited");
			break;
		}
		advance(&next, o->interval);
		if (!sleep_until(&next))
			break;
	}
	sample_free(&prev);
	free(reported.pids);
	return status;
}

/* --clean: removes every segment whose process is gone (or whose pid was reused). */
static int clean_stale(const struct cqstat_opts *o)
{
	struct sample s;
	struct cqstat_opts all = *o;
	int err, status = EXIT_OK;

	all.comm = NULL;
	err = take_sample(&all, &s);
	if (err)
		return run_error(CMD, "cannot list stats segments in %s: %s", stats_segment_dir(),
				 strerror(-err));
	print_begin();
	print_open_array("removed");
	for (size_t i = 0; i < s.nstale; i++) {
		const struct problem *p = &s.stale[i];

		if (o->comm && strcmp(o->comm, p->comm))
			continue;
		err = stats_segment_remove(p->pid);
		if (err == -EPERM || err == -EINVAL || err == -EAGAIN) {
			/* Not provably a segment of ours: another user's file, a symlink, a FIFO or junk. */
			notice(CMD, "left %s/%s%d alone: %s", stats_segment_dir(), STATS_FILE_PREFIX,
			       (int)p->pid,
			       err == -EPERM	? "not a regular file of yours"
			       : err == -EINVAL ? "not an rdmatool stats segment"
						: "it changed while being checked");
			continue;
		}
		if (err && err != -ENOENT) {
			status = run_error(CMD, "cannot remove the segment of pid %d: %s", (int)p->pid,
					   strerror(-err));
			continue;
		}
		print_open_object(NULL);
		print_int(PRINT_ANY, "pid", "removed stale segment of pid %lld", p->pid);
		print_string(PRINT_ANY, "comm", " (%s)", p->comm);
		print_string(PRINT_ANY, "reason", ": %s\n", p->why);
		print_close_object();
	}
	print_close_array();
	print_end();
	if (!global_opts.json && !s.nstale)
		notice(CMD, "no stale segments in %s", stats_segment_dir());
	sample_free(&s);
	return status;
}

static bool parse_interval(const char *arg, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !isfinite(v) || v < MIN_INTERVAL_S || v > MAX_INTERVAL_S)
		return false;
	*out = v;
	return true;
}

static bool parse_positive(const char *arg, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v <= 0 || v > max)
		return false;
	*out = v;
	return true;
}

static int parse_args(int argc, const char **argv, struct cqstat_opts *o)
{
	char *interval = NULL, *count = NULL, *comm = NULL;
	struct poptOption options[] = {
	    {"comm", 'c', POPT_ARG_STRING, NULL, 'c', "only processes running this command (e.g. bench)",
	     "NAME"},
	    {"interval", 'i', POPT_ARG_STRING, NULL, 'i',
	     "sample every SECONDS (fractions allowed), rates per second since the last sample", "SECONDS"},
	    {"count", 'n', POPT_ARG_STRING, NULL, 'n', "stop after COUNT samples", "COUNT"},
	    {"details", 'd', POPT_ARG_NONE, &o->details, 0, "show every counter", NULL},
	    {"clean", 0, POPT_ARG_NONE, &o->clean, 0, "remove stale segments of processes that are gone",
	     NULL},
	    CMD_HELP(options),
	    POPT_TABLEEND,
	};
	poptContext pc = poptGetContext(argv[0], argc, argv, options, 0);
	const char *arg;
	long pid;
	int rc;

	poptSetOtherOptionHelp(pc, "[OPTION...] [PID...]");
	/* String options are collected here so that a repeated one replaces (and frees) the last. */
	while ((rc = poptGetNextOpt(pc)) > 0) {
		char **slot = rc == 'c' ? &comm : rc == 'i' ? &interval : &count;

		free(*slot);
		*slot = poptGetOptArg(pc);
	}
	if (rc < -1) {
		rc = popt_usage_error(CMD, pc, rc, argv);
		goto out;
	}
	rc = EXIT_OK;
	if (interval && !parse_interval(interval, &o->interval)) {
		rc = usage_error(CMD, "bad interval '%s'; give %g to %.0f seconds, e.g. -i 1 or -i 0.5",
				 interval, MIN_INTERVAL_S, MAX_INTERVAL_S);
		goto out;
	}
	if (count && !parse_positive(count, 1000000000L, &o->count)) {
		rc = usage_error(CMD, "bad count '%s'; give a number of samples >= 1, e.g. -n 5", count);
		goto out;
	}
	if (o->count > 1 && o->interval == 0)
		o->interval = 1; /* like vmstat: several samples, one second apart */
	if (comm) {
		if (!*comm || strlen(comm) > STATS_COMM_LEN) {
			rc = usage_error(CMD, "bad command name '%s'; give 1 to %d characters, e.g. -c bench",
					 comm, STATS_COMM_LEN);
			goto out;
		}
		o->comm = strdup(comm);
	}
	while ((arg = poptGetArg(pc))) {
		pid_t *grown;

		if (!parse_positive(arg, INT32_MAX, &pid)) {
			rc = usage_error(CMD, "bad PID '%s'; give a process id, e.g. 'rdmatool cqstat 1234'",
					 arg);
			goto out;
		}
		grown = realloc(o->pids, (o->npids + 1) * sizeof(*grown));
		if (!grown) {
			rc = run_error(CMD, "out of memory");
			goto out;
		}
		o->pids = grown;
		o->pids[o->npids++] = (pid_t)pid;
	}
	if (o->clean && (o->interval > 0 || o->count)) {
		rc = usage_error(CMD, "--clean removes stale segments once; drop -i and -n");
		goto out;
	}
out:
	free(interval);
	free(count);
	free(comm);
	poptFreeContext(pc);
	return rc;
}

/* The PIDs of the processes that publish stats now. */
void cqstat_complete_arg(int n, const char **args, const char *cur)
{
	pid_t *pids = NULL;
	size_t npids = 0;
	char word[16];

	(void)n, (void)args;
	if (stats_list_pids(&pids, &npids))
		return;
	for (size_t i = 0; i < npids; i++) {
		snprintf(word, sizeof(word), "%d", (int)pids[i]);
		complete_word(cur, "", word);
	}
	free(pids);
}

int cmd_cqstat(int argc, const char **argv)
{
	struct cqstat_opts o = {0};
	int rc = parse_args(argc, argv, &o);

	if (rc == EXIT_OK && o.clean) {
		rc = clean_stale(&o);
	} else if (rc == EXIT_OK) {
		/* Ctrl-C ends an -i run cleanly, after the last complete sample. */
		catch_interrupts(on_interrupt);
		rc = run_samples(&o);
	}
	free((char *)o.comm);
	free(o.pids);
	return rc;
}
