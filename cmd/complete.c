/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rdmatool __complete WORD...: the shell completions' one source (as git's
 * --git-completion-helper).  The words are the command line up to the
 * cursor, the program's name first and the word being completed last
 * (maybe empty); the answer is one candidate a line, whole words that
 * start with the last word.  A first line ":files", ":dirs" or ":commands"
 * asks the shell for its own kind of completion of the word's value (after
 * "--opt=" when it has one).  Candidates that end in '=' take no space
 * after them.
 *
 * The options come from the command's own popt table: the dispatcher runs
 * the command with --help, and its CMD_HELP entry (help.c) calls
 * complete_command with the table instead of printing the help.  The
 * values of an option come from its placeholder: "striped|global|both"
 * lists them, BOOL is true|false, FILE and PATH are files, DIR directories,
 * NAME of --device and --ib-dev the devices, ACTION=W walk's actions.
 */
#include "cmd/cmd.h"
#include "cmd/help.h"
#include "cmd/walk/walk.h"
#include "hw/hw.h"

#include <ctype.h>
#include <popt.h>
#include <stdio.h>
#include <string.h>

static const char **words; /* after the command's name; the last is the one completed */
static int nwords;
static bool active;

bool completing(void)
{
	return active;
}

void complete_word(const char *cur, const char *prefix, const char *word)
{
	size_t plen = strlen(prefix), clen = strlen(cur);

	/* prefix+word starts with cur */
	if (clen <= plen ? !strncmp(prefix, cur, clen)
			 : !strncmp(prefix, cur, plen) && !strncmp(word, cur + plen, clen - plen))
		printf("%s%s\n", prefix, word);
}

/* --device and --ib-dev: the devices there are now (the soft device always). */
static void complete_devices(const char *prefix, const char *cur)
{
	struct hw_device devs[HW_MAX_DEVICES];
	int verbs_errno, n = hw_list_devices(devs, HW_MAX_DEVICES, &verbs_errno);

	for (int i = 0; i < n; i++)
		complete_word(cur, prefix, devs[i].name);
}

static bool takes_value(const struct poptOption *o)
{
	return help_value_name(o) != NULL;
}

static void complete_value(const struct poptOption *o, const char *prefix, const char *cur)
{
	const char *name = help_value_name(o), *lname = o->longName ? o->longName : "";

	if (!strcmp(name, "FILE") || !strcmp(name, "PATH")) {
		puts(":files");
	} else if (!strcmp(name, "DIR")) {
		puts(":dirs");
	} else if (!strcmp(name, "BOOL")) {
		complete_word(cur, prefix, "true");
		complete_word(cur, prefix, "false");
	} else if (!strcmp(lname, "device") || !strcmp(lname, "ib-dev")) {
		complete_devices(prefix, cur);
	} else if (!strcmp(lname, "comm")) {
		for (const struct command *c = commands; c->name; c++)
			complete_word(cur, prefix, c->name);
	} else if (!strcmp(name, "ACTION=W")) {
		char word[64];

		for (int a = 0; a < ACT_COUNT; a++) {
			snprintf(word, sizeof(word), "%s=", walk_action_names[a]);
			complete_word(cur, prefix, word);
		}
	} else if (strchr(name, '|')) {
		/* "striped|global|both", "N|auto": the words, not the placeholders (upper case). */
		char word[64];

		for (const char *p = name; *p;) {
			size_t len = strcspn(p, "|");
			bool placeholder = false;

			for (size_t i = 0; i < len; i++)
				placeholder |= isupper((unsigned char)p[i]) != 0;
			if (!placeholder && len < sizeof(word)) {
				snprintf(word, sizeof(word), "%.*s", (int)len, p);
				complete_word(cur, prefix, word);
			}
			p += len + (p[len] == '|');
		}
	}
}

static const struct poptOption *find_option(const struct poptOption *table, const char *lname, size_t len,
					    char sname)
{
	for (const struct poptOption *o = table; o->longName || o->shortName || o->argInfo; o++) {
		if ((o->argInfo & POPT_ARG_MASK) == POPT_ARG_INCLUDE_TABLE && o->arg) {
			const struct poptOption *in = find_option(o->arg, lname, len, sname);

			if (in)
				return in;
		} else if (!help_option_shown(o)) {
			continue;
		} else if (lname ? o->longName && strlen(o->longName) == len &&
				       !strncmp(o->longName, lname, len)
				 : o->shortName == sname) {
			return o;
		}
	}
	return NULL;
}

static void list_options(const struct poptOption *table, const char *cur)
{
	char word[128];

	for (const struct poptOption *o = table; o->longName || o->shortName || o->argInfo; o++) {
		if ((o->argInfo & POPT_ARG_MASK) == POPT_ARG_INCLUDE_TABLE && o->arg)
			list_options(o->arg, cur);
		if (!help_option_shown(o))
			continue;
		if (o->longName)
			snprintf(word, sizeof(word), "--%s%s", o->longName,
				 takes_value(o) && !(o->argInfo & POPT_ARGFLAG_OPTIONAL) ? "=" : "");
		else
			snprintf(word, sizeof(word), "-%c", o->shortName);
		complete_word(cur, "", word);
	}
}

/* exec and agent have no table of their words to give; the others' are in their own files. */
void exec_complete_arg(int n, const char **args, const char *cur)
{
	(void)args, (void)cur;
	puts(n == 0 ? ":commands" : ":files");
}

void agent_complete_arg(int n, const char **args, const char *cur)
{
	static const char *const actions[] = {"foreground", "start", "stop", "status",
					      "send",	    "recv",  "poll", "chan"};
	static const char *const chan[] = {"create", "destroy", "list"};

	if (n == 0)
		for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++)
			complete_word(cur, "", actions[i]);
	else if (n == 1 && !strcmp(args[0], "chan"))
		for (size_t i = 0; i < sizeof(chan) / sizeof(chan[0]); i++)
			complete_word(cur, "", chan[i]);
	else if (n == 2 && !strcmp(args[0], "send"))
		puts(":files");
}

int complete_command(const struct command *c, const struct poptOption *table)
{
	const char *cur = words[nwords - 1], *positional[64];
	const struct poptOption *value_of = NULL;
	bool options_end = false;
	int npos = 0;

	for (int i = 0; i < nwords - 1; i++) {
		const char *w = words[i];

		if (options_end || w[0] != '-' || !w[1]) {
			if (npos < 64)
				positional[npos++] = w;
			options_end |= (c->flags & CMD_ARGS_END_OPTIONS) != 0;
			continue;
		}
		if (!strcmp(w, "--")) {
			options_end = true;
			continue;
		}
		const struct poptOption *o = w[1] == '-' ? find_option(table, w + 2, strcspn(w + 2, "="), 0)
							 : find_option(table, NULL, 0, w[strlen(w) - 1]);

		/* A value in the next word: "--lock striped", "-s 64" (not "--lock=s", "-s64"). */
		if (o && takes_value(o) && !(o->argInfo & POPT_ARGFLAG_OPTIONAL) && !strchr(w, '=') &&
		    (w[1] == '-' || strlen(w) == 2)) {
			if (i + 1 == nwords - 1)
				value_of = o;
			i++;
		}
	}
	if (value_of) {
		complete_value(value_of, "", cur);
	} else if (!options_end && !strncmp(cur, "--", 2) && strchr(cur, '=')) {
		const struct poptOption *o = find_option(table, cur + 2, strcspn(cur + 2, "="), 0);
		char prefix[128];

		snprintf(prefix, sizeof(prefix), "%.*s", (int)(strchr(cur, '=') - cur + 1), cur);
		if (o && takes_value(o))
			complete_value(o, prefix, cur);
	} else if (!options_end && cur[0] == '-') {
		list_options(table, cur);
	} else if (c->complete_arg) {
		c->complete_arg(npos, positional, cur);
	}
	return EXIT_OK;
}

int complete_main(int argc, const char **argv, const struct poptOption *global_table)
{
	const struct command *c = command_from_program_name(argc > 0 ? argv[0] : "");
	int i = 1;

	if (argc < 2)
		return EXIT_OK; /* nothing to complete */
	if (!c) {
		while (i < argc - 1 && argv[i][0] == '-')
			i++;
		if (i == argc - 1) {
			const char *cur = argv[i];

			if (cur[0] == '-') {
				list_options(global_table, cur);
			} else {
				for (c = commands; c->name; c++)
					complete_word(cur, "", c->name);
				complete_word(cur, "", "help");
			}
			return EXIT_OK;
		}
		if (!strcmp(argv[i], "help")) {
			for (c = commands; i + 1 == argc - 1 && c->name; c++)
				complete_word(argv[argc - 1], "", c->name);
			return EXIT_OK;
		}
		c = find_command(argv[i]);
		if (!c)
			return EXIT_OK;
		i++;
	}
	words = argv + i;
	nwords = argc - i;
	if (nwords < 1)
		return EXIT_OK;
	active = true;
	current_command = c;

	char name[64];
	const char *args[] = {name, "--help", NULL};

	/* The command's --help entry answers with its table and exits. */
	snprintf(name, sizeof(name), "rdmatool %s", c->name);
	return c->run(2, args);
}
