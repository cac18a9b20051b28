/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Action names, default weights, presets and --weight parsing. */
#include "cmd/walk/walk.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ACTION_NAME(e, name, weight) #name,
const char *const walk_action_names[ACT_COUNT] = {WALK_ACTIONS(ACTION_NAME)};

#define ACTION_WEIGHT(e, name, weight) weight,
static const uint32_t default_weight[ACT_COUNT] = {WALK_ACTIONS(ACTION_WEIGHT)};

static const enum walk_action data_path[] = {ACT_SEND,	ACT_SEND_WITH_INV, ACT_RECV,	  ACT_READ,
					     ACT_WRITE, ACT_FETCH_ADD,	   ACT_COMP_SWAP, ACT_POST_SRQ_RECV};

int walk_action_from_name(const char *name)
{
	for (int i = 0; i < ACT_COUNT; i++)
		if (strcmp(walk_action_names[i], name) == 0)
			return i;
	return -1;
}

int walk_preset(const char *name, uint32_t *weight)
{
	bool control = strcmp(name, "control") == 0;

	memcpy(weight, default_weight, sizeof(default_weight));
	if (strcmp(name, "default") == 0)
		return 0;
	if (!control && strcmp(name, "rdma"))
		return -1;
	/* control: no data path; rdma: enough control actions to keep objects churning, 5x the traffic. */
	for (size_t i = 0; i < sizeof(data_path) / sizeof(data_path[0]); i++)
		weight[data_path[i]] = control ? 0 : weight[data_path[i]] * 5;
	return 0;
}

int walk_apply_weight(const char *spec, uint32_t *weight, char *why, size_t why_len)
{
	const char *eq = strchr(spec, '=');
	char name[64];
	unsigned long w;
	char *end;
	int a;

	if (!eq || eq == spec || (size_t)(eq - spec) >= sizeof(name)) {
		snprintf(why, why_len, "--weight '%s' is not ACTION=W (e.g. --weight read=20)", spec);
		return -1;
	}
	memcpy(name, spec, (size_t)(eq - spec));
	name[eq - spec] = '\0';
	a = walk_action_from_name(name);
	if (a < 0) {
		snprintf(why, why_len,
			 "--weight: unknown action '%s'; see the ACTIONS section of rdmatool-walk(1)", name);
		return -1;
	}
	errno = 0;
	w = strtoul(eq + 1, &end, 10);
	if (errno || end == eq + 1 || *end || eq[1] == '-' || w > 1000000) {
		snprintf(why, why_len, "--weight %s: '%s' is not a weight; give an integer 0..1000000", name,
			 eq + 1);
		return -1;
	}
	weight[a] = (uint32_t)w;
	return 0;
}

bool walk_drop_type2(uint32_t *weight)
{
	bool any = weight[ACT_ALLOC_MW_TYPE2] || weight[ACT_DEALLOC_MW_TYPE2] || weight[ACT_BIND_MW_TYPE2];

	weight[ACT_ALLOC_MW_TYPE2] = weight[ACT_DEALLOC_MW_TYPE2] = weight[ACT_BIND_MW_TYPE2] = 0;
	return any;
}

bool walk_msg_valid(const struct walk_msg *m, int clients)
{
	return m->type >= MSG_ADD_RKEY && m->type < MSG_TYPE_MAX && m->src < clients && m->dst < clients &&
	       (m->kind <= 2 || (m->type != MSG_ADD_RKEY && m->type != MSG_REMOVE_RKEY));
}

/* Every field from issued[] to outbox_full is a uint64_t count (walk.h): they add up. */
void walk_stats_merge(struct walk_stats *into, const struct walk_stats *from)
{
	into->steps += from->steps;
	if (from->seconds > into->seconds)
		into->seconds = from->seconds;
	for (size_t off = offsetof(struct walk_stats, issued);
	     off <= offsetof(struct walk_stats, outbox_full); off += sizeof(uint64_t)) {
		uint64_t a, b;

		memcpy(&a, (char *)into + off, sizeof(a));
		memcpy(&b, (const char *)from + off, sizeof(b));
		a += b;
		memcpy((char *)into + off, &a, sizeof(a));
	}
	into->destroy_failures += from->destroy_failures;
	for (int i = 0; i < from->nfailures && i < WALK_MAX_FAILURES; i++)
		walk_stats_fail(into, "%s", walk_stats_failure(from, i));
}

#define CLASS_MIN_ISSUED 50

void walk_check_classes(const struct walk_config *cfg, struct walk_stats *total)
{
	static const enum walk_action classes[] = {ACT_SEND,  ACT_RECV,	     ACT_READ,
						   ACT_WRITE, ACT_FETCH_ADD, ACT_COMP_SWAP};
	const char *faults = getenv("RDMATOOL_SOFT_FAULTS");

	if (!cfg->verify || (faults && *faults))
		return;
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
		enum walk_action a = classes[i];

		if (total->issued[a] >= CLASS_MIN_ISSUED && !total->ok[a])
			walk_stats_fail(total,
					"no %s ever succeeded: %llu issued, %llu failed (the device loses or "
					"refuses a whole class of operation; no faults were asked for)",
					walk_action_names[a], (unsigned long long)total->issued[a],
					(unsigned long long)total->errors[a]);
	}
}

void walk_stats_fail(struct walk_stats *s, const char *fmt, ...)
{
	va_list ap;

	if (s->nfailures < WALK_MAX_FAILURES) { /* beyond: only counted */
		va_start(ap, fmt);
		vsnprintf(s->failures + WALK_FAILURE_LEN * s->nfailures, WALK_FAILURE_LEN, fmt, ap);
		va_end(ap);
	}
	s->nfailures++;
}

const char *walk_stats_failure(const struct walk_stats *s, int i)
{
	return s->failures + WALK_FAILURE_LEN * i;
}
