/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* What every subcommand shares: global options, the command table, exit codes. */
#ifndef RDMATOOL_CMD_H
#define RDMATOOL_CMD_H

#include <stdbool.h>
#include <stdio.h>

enum {
	EXIT_OK = 0,
	EXIT_FAILURES = 1, /* the run found failures, or the work failed */
	EXIT_USAGE = 2,
};

struct global_options {
	int json;
	int pretty;
	int verbose;
	int quiet;
};

extern struct global_options global_opts;

/* Global short options a command uses for options of its own (madstress: -p workers, -v decode). */
enum {
	CMD_OWNS_SHORT_P = 1 << 0,
	CMD_OWNS_SHORT_V = 1 << 1,
	CMD_ARGS_END_OPTIONS =
	    1 << 2, /* options end at the first argument (exec: the program's own follow) */
};

struct command {
	const char *name;
	int (*run)(int argc, const char **argv);
	const char *summary;
	unsigned flags; /* CMD_OWNS_SHORT_*, CMD_ARGS_END_OPTIONS */
};

extern const struct command commands[];

/* Prints "rdmatool <cmd>: <message>" on stderr; returns EXIT_USAGE. */
int usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "rdmatool <cmd>: <message>" on stderr; returns EXIT_FAILURES. */
int run_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "rdmatool <cmd>: " notice on stderr unless -q. */
void notice(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* For a negative poptGetNextOpt result: names the bad option and its value (argv is the one popt parses),
 * points at --help. */
struct poptContext_s;
int popt_usage_error(const char *cmd, struct poptContext_s *pc, int rc, const char **argv);

/*
 * Runs handler on SIGINT and SIGTERM, without SA_RESTART, so a blocking wait
 * ends with EINTR: a command stops cleanly and reports what it has.
 */
void catch_interrupts(void (*handler)(int));

/* Progress on stderr only when it is a terminal and -q is not given. */
bool progress_wanted(void);

/*
 * Whether a write to stdout failed because its reader went away (`| head`):
 * a normal end, not an error; commands that print for long stop there.
 */
bool stdout_closed(void);
/*
 * Flushes and closes stdout: a write error (a full disk) turns an EXIT_OK
 * status into EXIT_FAILURES with a message; a closed pipe keeps the status.
 */
int finish_stdout(int status);

int cmd_devices(int argc, const char **argv);
int cmd_cqstat(int argc, const char **argv);
int cmd_madstress(int argc, const char **argv);
int cmd_bench(int argc, const char **argv);
int cmd_walk(int argc, const char **argv);
int cmd_agent(int argc, const char **argv);
int cmd_exec(int argc, const char **argv);

#endif
