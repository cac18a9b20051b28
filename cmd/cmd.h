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
	unsigned flags;		      /* CMD_OWNS_SHORT_*, CMD_ARGS_END_OPTIONS */
	const char *usage;	      /* what follows "rdmatool NAME" on the help's usage line */
	void (*more_help)(FILE *out); /* sections after the options (bench: its tests), or NULL */
	/* The candidates for positional argument n (0 = first) after args[0..n), one a line; or NULL. */
	void (*complete_arg)(int n, const char **args, const char *cur);
};

extern const struct command commands[];

/*
 * -h/--help, the project's own: the last entry of every command's popt
 * table, CMD_HELP(table) with the table itself (help.c prints it).
 */
struct poptOption;
struct poptOption *cmd_help_table(void);
#define CMD_HELP(table)                                                                                      \
	{                                                                                                    \
		NULL, '\0', POPT_ARG_INCLUDE_TABLE, cmd_help_table(), 0, (const char *)(table), NULL         \
	}

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

/*
 * The one convention for Ctrl-C (and SIGTERM): what was measured is
 * printed, a notice says it is partial, and the exit status is the shell's
 * 128 + the signal (130 for SIGINT).  Prints the notice, returns the status.
 */
int interrupted_status(const char *cmd, int sig);

/* A device named (--device, --ib-dev, -d) that is not there: one wording and exit 2 for every command. */
int unknown_device_error(const char *cmd, const char *name);

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
int cmd_conform(int argc, const char **argv);

#endif
