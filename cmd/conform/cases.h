/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The conformance cases: one table {name, function, needs}, and how one case runs. */
#ifndef RDMATOOL_CMD_CONFORM_CASES_H
#define RDMATOOL_CMD_CONFORM_CASES_H

#include "cmd/conform/dev.h"

#include <stdint.h>

struct rcp;

/* What a case needs of the device; a device without it skips the case, saying which. */
enum cf_need {
	CF_NEED_MW = 1 << 0,	 /* memory windows (IBV_DEVICE_MEM_WINDOW) */
	CF_NEED_MW2 = 1 << 1,	 /* type-2 windows (IBV_DEVICE_MEM_WINDOW_TYPE_2B) */
	CF_NEED_ATOMIC = 1 << 2, /* atomics (atomic_cap not IBV_ATOMIC_NONE) */
};

struct cf_case {
	const char *name; /* group.what: qp_state.*, mr.*, mw.*, cq.*, data.*, rc.*, limits.* */
	void (*run)(struct rcp *p);
	unsigned needs;	     /* enum cf_need */
	const char *summary; /* one line for --list */
};

extern const struct cf_case cf_cases[];
extern const int cf_ncases;

enum cf_verdict { CF_PASS, CF_FAIL, CF_SKIP };

struct cf_result {
	enum cf_verdict verdict;
	unsigned rounds_run;	  /* rounds the device was judged on (not abandoned) */
	uint64_t ns;		  /* how long the case took */
	char why[CF_FAILURE_LEN]; /* skip: what the device lacks; fail: the first failure */
	int nfailures;
};

/*
 * Runs case k for `rounds` rounds on d, each on fresh objects with its own
 * random stream from seed and the case's name (so one case replays alone
 * as it ran among all).
 */
void cf_run_case(struct cf_dev *d, const struct cf_case *k, uint64_t seed, unsigned rounds,
		 struct cf_result *r);

#endif
