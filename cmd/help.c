/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Every command's -h/--help in one voice: the usage line and the summary
 * from the command table, the options from the command's own popt table (so
 * help, completion and parser cannot disagree), then the command's own
 * sections.  A command puts CMD_HELP(its_table) at the end of its option
 * table; the entry's callback prints and exits, its output checked for
 * write errors.  The same entry answers `rdmatool __complete` (complete.c).
 */
#include "cmd/cmd.h"
#include "cmd/help.h"

#include <popt.h>
#include <stdlib.h>
#include <string.h>

#define HELP_WIDTH 80
#define COLUMN_MAX 30

const struct command *current_command;

/* The placeholder of an option's value, or NULL for a flag. */
static const char *value_name(const struct poptOption *o)
{
	switch (o->argInfo & POPT_ARG_MASK) {
	case POPT_ARG_NONE:
	case POPT_ARG_VAL:
		return NULL;
	case POPT_ARG_INT:
	case POPT_ARG_LONG:
	case POPT_ARG_LONGLONG:
	case POPT_ARG_SHORT:
		return o->argDescrip ? o->argDescrip : "N";
	default:
		return o->argDescrip ? o->argDescrip : "VALUE";
	}
}

const char *help_value_name(const struct poptOption *o)
{
	return value_name(o);
}

bool help_option_shown(const struct poptOption *o)
{
	unsigned type = o->argInfo & POPT_ARG_MASK;

	return type != POPT_ARG_CALLBACK && type != POPT_ARG_INCLUDE_TABLE &&
	       !(o->argInfo & POPT_ARGFLAG_DOC_HIDDEN) && (o->longName || o->shortName);
}

/* "  -s, --size=BYTES", "      --server[=[ADDR:]PORT]", "  -h". */
static int option_column(const struct poptOption *o, char *buf, size_t len)
{
	const char *value = value_name(o);
	bool optional = o->argInfo & POPT_ARGFLAG_OPTIONAL;
	int n;

	if (o->shortName)
		n = snprintf(buf, len, "  -%c%s", o->shortName, o->longName ? ", " : "");
	else
		n = snprintf(buf, len, "      ");
	if (o->longName)
		n += snprintf(buf + n, len - (size_t)n, "--%s", o->longName);
	if (value)
		n += snprintf(buf + n, len - (size_t)n, o->longName ? (optional ? "[=%s]" : "=%s") : " %s",
			      value);
	return n;
}

static void column_width(const struct poptOption *table, int *width)
{
	char buf[256];

	for (const struct poptOption *o = table; o->longName || o->shortName || o->argInfo; o++) {
		if ((o->argInfo & POPT_ARG_MASK) == POPT_ARG_INCLUDE_TABLE && o->arg)
			column_width(o->arg, width);
		else if (help_option_shown(o)) {
			int n = option_column(o, buf, sizeof(buf));

			if (n <= COLUMN_MAX && n > *width)
				*width = n;
		}
	}
}

/*
 * Prints text from column indent on, wrapped at HELP_WIDTH; the caller has
 * printed at columns of this line (on a line of its own when they reach
 * into the text's column).
 */
void help_wrap(FILE *out, const char *text, int at, int indent)
{
	int col = at;
	bool first = true;

	if (at > 0 && at + 2 > indent) {
		fputc('\n', out);
		col = 0;
	}
	fprintf(out, "%*s", indent - col, "");
	col = indent;
	while (*text) {
		int len = (int)strcspn(text, " ");

		if (!first && col + 1 + len > HELP_WIDTH) {
			fprintf(out, "\n%*s", indent, "");
			col = indent;
			first = true;
		}
		if (!first) {
			fputc(' ', out);
			col++;
		}
		fprintf(out, "%.*s", len, text);
		col += len;
		first = false;
		text += len;
		while (*text == ' ')
			text++;
	}
	fputc('\n', out);
}

static void print_table(FILE *out, const struct poptOption *table, int width)
{
	char buf[256];

	for (const struct poptOption *o = table; o->longName || o->shortName || o->argInfo; o++) {
		if ((o->argInfo & POPT_ARG_MASK) == POPT_ARG_INCLUDE_TABLE && o->arg) {
			print_table(out, o->arg, width);
			continue;
		}
		if (!help_option_shown(o))
			continue;
		int n = option_column(o, buf, sizeof(buf));

		fputs(buf, out);
		help_wrap(out, o->descrip ? o->descrip : "", n, width + 2);
	}
}

void help_print_options(FILE *out, const struct poptOption *table)
{
	int width = 0;

	column_width(table, &width);
	print_table(out, table, width);
}

static void print_command_help(const struct command *c, const struct poptOption *table)
{
	/* One usage line per line of c->usage, the later ones under the first. */
	for (const char *u = c->usage, *first = u; *u;) {
		int len = (int)strcspn(u, "\n");

		printf("%s rdmatool %s %.*s\n", u == first ? "Usage:" : "      ", c->name, len, u);
		u += len + (u[len] == '\n');
	}
	help_wrap(stdout, c->summary, 0, 0);
	fputs("\nOptions:\n", stdout);
	help_print_options(stdout, table);
	if (c->more_help) {
		fputc('\n', stdout);
		c->more_help(stdout);
	}
	printf("\nThe global options -j, -p, -v, -q may follow the command ('rdmatool --help').\n"
	       "Exit status: 0 success, 1 failures or the work failed, 2 usage error,\n"
	       "130 interrupted (Ctrl-C).  Manual: rdmatool-%s(1).\n",
	       c->name);
}

static void help_callback(poptContext pc, enum poptCallbackReason reason, const struct poptOption *opt,
			  const char *arg, const void *data)
{
	(void)pc, (void)opt, (void)arg;
	if (reason != POPT_CALLBACK_REASON_OPTION || !current_command)
		return;
	if (completing())
		exit(finish_stdout(complete_command(current_command, data)));
	print_command_help(current_command, data);
	exit(finish_stdout(EXIT_OK));
}

static struct poptOption help_options[] = {
    {NULL, '\0', POPT_ARG_CALLBACK | POPT_CBFLAG_INC_DATA, (void *)help_callback, 0, NULL, NULL},
    {"help", 'h', POPT_ARG_NONE, NULL, 0, "print this help and exit", NULL},
    POPT_TABLEEND,
};

struct poptOption *cmd_help_table(void)
{
	return help_options;
}
