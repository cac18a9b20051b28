/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* rdmatool conform's results (report.h). */
#include "cmd/conform/report.h"

#include "cmd/print.h"

#include <stdio.h>
#include <string.h>

static const char *const verdict_name[] = {"pass", "fail", "skip"};

static void needs_text(unsigned needs, char *out, size_t len)
{
	snprintf(out, len, "%s%s%s", needs & CF_NEED_MW ? "mw " : "", needs & CF_NEED_MW2 ? "mw2 " : "",
		 needs & CF_NEED_ATOMIC ? "atomic " : "");
	if (*out)
		out[strlen(out) - 1] = '\0';
}

void cf_report_list(const struct cf_run *run)
{
	char needs[64];

	print_begin();
	print_open_array("cases");
	for (int i = 0; i < run->n; i++) {
		needs_text(run->cases[i]->needs, needs, sizeof(needs));
		print_open_object(NULL);
		print_string(PRINT_ANY, "name", "%-22s", run->cases[i]->name);
		print_string(PRINT_ANY, "summary", " %s", run->cases[i]->summary);
		print_string(PRINT_JSON, "needs", NULL, needs);
		if (*needs)
			print_text(" (needs %s)", needs);
		print_text("\n");
		print_close_object();
	}
	print_close_array();
	print_end();
}

/* XML text: the five characters XML reserves, and control characters as spaces. */
static void xml_text(const char *s)
{
	for (; *s; s++)
		switch (*s) {
		case '&':
			fputs("&amp;", stdout);
			break;
		case '<':
			fputs("&lt;", stdout);
			break;
		case '>':
			fputs("&gt;", stdout);
			break;
		case '"':
			fputs("&quot;", stdout);
			break;
		case '\'':
			fputs("&apos;", stdout);
			break;
		default:
			putchar((unsigned char)*s < 0x20 ? ' ' : *s);
		}
}

/* A TAP directive or YAML line must stay on one line and not open a new directive. */
static void tap_text(const char *s)
{
	for (; *s; s++)
		putchar(*s == '\n' || *s == '#' ? ' ' : *s);
}

void cf_report_begin(const struct cf_run *run)
{
	if (run->format == CF_TAP)
		printf("TAP version 13\n1..%d\n", run->n);
	else if (run->format == CF_TEXT)
		printf("conform: %d cases on %s port %d GID index %d, seed %llu, %u rounds each\n", run->n,
		       run->dev->name, run->dev->port, run->dev->gid_index, (unsigned long long)run->seed,
		       run->rounds);
	fflush(stdout);
}

void cf_report_case(const struct cf_run *run, int i)
{
	const struct cf_case *k = run->cases[i];
	const struct cf_result *r = &run->results[i];

	if (run->format == CF_TAP) {
		printf("%s %d - %s", r->verdict == CF_FAIL ? "not ok" : "ok", i + 1, k->name);
		if (r->verdict == CF_SKIP) {
			fputs(" # SKIP ", stdout);
			tap_text(r->why);
		}
		putchar('\n');
		if (r->verdict == CF_FAIL) {
			fputs("  ---\n  message: '", stdout);
			for (const char *s = r->why; *s; s++) {
				if (*s == '\'')
					putchar('\'');
				putchar(*s == '\n' ? ' ' : *s);
			}
			printf("'\n  failures: %d\n  ...\n", r->nfailures);
		}
	} else if (run->format == CF_TEXT) {
		printf("%-4s %-22s %2u rounds %6.2f s",
		       r->verdict == CF_PASS   ? "PASS"
		       : r->verdict == CF_FAIL ? "FAIL"
					       : "SKIP",
		       k->name, r->rounds_run, (double)r->ns / 1e9);
		if (r->verdict != CF_PASS)
			printf(": %s", r->why);
		putchar('\n');
	}
	fflush(stdout);
}

static void end_junit(const struct cf_run *run)
{
	double total = 0;

	for (int i = 0; i < run->n; i++)
		total += (double)run->results[i].ns / 1e9;
	printf(
	    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n"
	    "  <testsuite name=\"rdmatool conform\" tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\" "
	    "time=\"%.3f\">\n    <properties>\n      <property name=\"device\" value=\"",
	    run->n, run->failed, run->skipped, total);
	xml_text(run->dev->name);
	printf("\"/>\n      <property name=\"seed\" value=\"%llu\"/>\n    </properties>\n",
	       (unsigned long long)run->seed);
	for (int i = 0; i < run->n; i++) {
		const struct cf_result *r = &run->results[i];
		const char *dot = strchr(run->cases[i]->name, '.');
		int group = dot ? (int)(dot - run->cases[i]->name) : (int)strlen(run->cases[i]->name);

		printf("    <testcase classname=\"conform.%.*s\" name=\"%s\" time=\"%.3f\"", group,
		       run->cases[i]->name, run->cases[i]->name, (double)r->ns / 1e9);
		if (r->verdict == CF_PASS) {
			fputs("/>\n", stdout);
			continue;
		}
		printf(">\n      <%s message=\"", r->verdict == CF_FAIL ? "failure" : "skipped");
		xml_text(r->why);
		fputs("\"/>\n    </testcase>\n", stdout);
	}
	fputs("  </testsuite>\n</testsuites>\n", stdout);
}

void cf_report_end(const struct cf_run *run)
{
	if (run->format == CF_JUNIT) {
		end_junit(run);
		return;
	}
	if (run->format == CF_TAP) {
		printf("# %d passed, %d failed, %d skipped\n", run->passed, run->failed, run->skipped);
		return;
	}
	print_begin();
	if (run->format == CF_JSON) {
		print_string(PRINT_JSON, "device", NULL, run->dev->name);
		print_int(PRINT_JSON, "port", NULL, run->dev->port);
		print_int(PRINT_JSON, "gid_index", NULL, run->dev->gid_index);
		print_uint(PRINT_JSON, "seed", NULL, run->seed);
		print_uint(PRINT_JSON, "rounds", NULL, run->rounds);
		print_open_array("cases");
		for (int i = 0; i < run->n; i++) {
			const struct cf_result *r = &run->results[i];

			print_open_object(NULL);
			print_string(PRINT_JSON, "name", NULL, run->cases[i]->name);
			print_string(PRINT_JSON, "result", NULL, verdict_name[r->verdict]);
			print_uint(PRINT_JSON, "rounds_run", NULL, r->rounds_run);
			print_double(PRINT_JSON, "seconds", NULL, (double)r->ns / 1e9);
			print_int(PRINT_JSON, "failures", NULL, r->nfailures);
			if (r->verdict != CF_PASS)
				print_string(PRINT_JSON, "why", NULL, r->why);
			print_close_object();
		}
		print_close_array();
	}
	print_int(PRINT_ANY, "passed", "conform: %lld passed", run->passed);
	print_int(PRINT_ANY, "failed", ", %lld failed", run->failed);
	print_int(PRINT_ANY, "skipped", ", %lld skipped\n", run->skipped);
	print_end();
}
