/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "core/agent/agent_log.h"

#include <stdarg.h>
#include <stdio.h>

void agent_logf(const struct agent_log *l, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!l->fn)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	l->fn(l->arg, line);
}
