/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* rdmatool conform's results as text, JSON (-j), TAP or JUnit XML. */
#ifndef RDMATOOL_CMD_CONFORM_REPORT_H
#define RDMATOOL_CMD_CONFORM_REPORT_H

#include "cmd/conform/cases.h"

enum cf_format { CF_TEXT, CF_JSON, CF_TAP, CF_JUNIT };

struct cf_run {
	enum cf_format format;
	const struct cf_dev *dev;
	uint64_t seed;
	unsigned rounds;
	int n; /* the cases selected */
	const struct cf_case **cases;
	struct cf_result *results;
	int passed, failed, skipped;
};

/* Before the first case (TAP: its plan) and after each (text and TAP stream; JSON and JUnit wait). */
void cf_report_begin(const struct cf_run *run);
void cf_report_case(const struct cf_run *run, int i);
void cf_report_end(const struct cf_run *run);
/* --list: the selected cases, their needs and what each judges. */
void cf_report_list(const struct cf_run *run);

#endif
