/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Where the agent's parts send their log lines: core never prints, the command decides. */
#ifndef RDMATOOL_CORE_AGENT_LOG_H
#define RDMATOOL_CORE_AGENT_LOG_H

struct agent_log {
	void (*fn)(void *arg, const char *line); /* NULL: lines are dropped */
	void *arg;
};

/* Formats one line (at most 511 bytes) and hands it to l->fn. */
void agent_logf(const struct agent_log *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
