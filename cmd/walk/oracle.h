/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * --verify: the walker's oracle, its one comparison point.  Every completion the walk polls and every verb
 * return it judges is handed to walk_oracle(), which asks the reference model (model.h) what the device had
 * to do, given the walker's records, and reports what differs.
 */
#ifndef RDMATOOL_CMD_WALK_ORACLE_H
#define RDMATOOL_CMD_WALK_ORACLE_H

#include "cmd/walk/client.h"

enum walk_obs_kind {
	WALK_OBS_WC,   /* a completion of WR slot `slot` (still outstanding in the records) */
	WALK_OBS_VERB, /* verb `verb` on `what` returned `rc`; the model predicted `want` (-1: an error) */
	WALK_OBS_ATTR, /* attribute `verb` of `what` reads `rc`; the model holds `want` */
	WALK_OBS_PREDICTED, /* completion `wc` of `what`, outside the WR slots, the caller's model's */
};

struct model_wc;

struct walk_obs {
	enum walk_obs_kind kind;
	uint32_t slot;
	const struct ibv_wc *wc;
	const struct model_wc *predicted;
	const char *verb, *what;
	int rc, want;
};

/* Compares an observation with the model's prediction; a difference is a failure of the run (false). */
bool walk_oracle(struct walk_client *c, const struct walk_obs *o);
/* walk_oracle of verb `verb` on `what` returning rc, the model's want (0, an errno, or -1: any error); of
 * attribute `attr` of `what` reading got, the model's want.  True if as predicted. */
bool walk_judge_verb(struct walk_client *c, const char *verb, const char *what, int rc, int want);
bool walk_judge_attr(struct walk_client *c, const char *attr, const char *what, int got, int want);
/* Action a's verb, which the walker's records say must succeed, returned rc (0 or an errno): counted, and an
 * error (--verify) judged.  True if it succeeded. */
bool walk_verb_returned(struct walk_client *c, enum walk_action a, const char *verb, const char *what,
			int rc);

#endif
