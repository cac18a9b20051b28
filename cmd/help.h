/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Help and completion from the commands' own popt tables (help.c, complete.c). */
#ifndef RDMATOOL_CMD_HELP_H
#define RDMATOOL_CMD_HELP_H

#include "cmd/cmd.h"

#include <popt.h>
#include <stdbool.h>
#include <stdio.h>

/* The command being run (set by the dispatcher): whose help -h prints. */
extern const struct command *current_command;

/* The options of a table (and the tables it includes) in the help's two columns. */
void help_print_options(FILE *out, const struct poptOption *table);
/* Text from column indent, wrapped; the caller has printed at columns of the line. */
void help_wrap(FILE *out, const char *text, int at, int indent);
/* Whether an entry is an option a user sees (not a callback, an include or hidden). */
bool help_option_shown(const struct poptOption *o);
/* The placeholder of an option's value ("BYTES"), NULL for a flag. */
const char *help_value_name(const struct poptOption *o);

/* rdmatool __complete WORD...: set up by the dispatcher, answered by the command's -h entry. */
bool completing(void);
/* Prints the candidates for the last word of the request, one a line; returns an exit status. */
int complete_command(const struct command *c, const struct poptOption *table);
/* The whole request: the dispatcher's part (commands, global options), or a command's through its table. */
int complete_main(int argc, const char **argv, const struct poptOption *global_table);

/* Prints prefix+word if it starts with cur: a candidate of the word being completed. */
void complete_word(const char *cur, const char *prefix, const char *word);

/* The dispatcher's lookups (main.c). */
const struct command *find_command(const char *name);
/* "rdmatool-walk" or "walk" -> walk; NULL for "rdmatool". */
const struct command *command_from_program_name(const char *argv0);

/* The command table's hooks (commands.c). */
void bench_more_help(FILE *out);
void bench_complete_arg(int n, const char **args, const char *cur);
void madstress_complete_arg(int n, const char **args, const char *cur);
void cqstat_complete_arg(int n, const char **args, const char *cur);
void agent_complete_arg(int n, const char **args, const char *cur);
void exec_complete_arg(int n, const char **args, const char *cur);

#endif
