/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Removing stats entries and reusing their slots: a full segment empties and
 * refills, a reused slot gets a new generation (seq) and only the new
 * entry's fields, a reader racing with add/remove never copies a mix of two
 * generations (run under build-tsan too), and endpoints opened and closed
 * hundreds of times leave the segment where it started.
 */
#include "core/transport/endpoint.h"
#include "tests/unit/stats_fixture.h"
#include "core/stats/stats.h"
#include "core/stats/stats_reader.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct stats_snapshot *snapshot_of_self(uint32_t *used_slots)
{
	struct stats_snapshot *s = malloc(sizeof(*s));
	struct stats_reader r;

	assert_non_null(s);
	assert_int_equal(stats_reader_open(&r, getpid()), STATS_READ_OK);
	assert_int_equal(stats_reader_snapshot(&r, s), STATS_READ_OK);
	if (used_slots)
		*used_slots = atomic_load(&((struct stats_header *)r.hdr)->nentries);
	stats_reader_close(&r);
	return s;
}

static void full_segment_empties_and_refills(void **state)
{
	(void)state;
	struct stats_entry *first[STATS_MAX_ENTRIES], *e;
	struct stats_snapshot *s;
	char name[STATS_NAME_LEN];
	uint32_t used;

	for (int i = 0; i < STATS_MAX_ENTRIES; i++) {
		snprintf(name, sizeof(name), "first%d", i);
		first[i] = stats_entry_add(name, STATS_KIND_STRIPE, i);
		assert_non_null(first[i]);
	}
	assert_null(stats_entry_add("one-too-many", STATS_KIND_OTHER, 0));
	for (int i = 0; i < STATS_MAX_ENTRIES; i++)
		stats_entry_remove(first[i]);
	s = snapshot_of_self(&used);
	assert_int_equal(s->nentries, 0);
	assert_int_equal(used, STATS_MAX_ENTRIES);
	free(s);

	for (int i = 0; i < STATS_MAX_ENTRIES; i++) {
		snprintf(name, sizeof(name), "second%d", i);
		e = stats_entry_add(name, STATS_KIND_CQ, -i);
		/* The lowest retired slot is reused first. */
		assert_ptr_equal(e, first[i]);
		stats_add(e, STATS_POSTED, (uint64_t)i);
	}
	assert_null(stats_entry_add("one-too-many", STATS_KIND_OTHER, 0));
	/* Every other one goes away: the reader shows exactly the rest. */
	for (int i = 1; i < STATS_MAX_ENTRIES; i += 2)
		stats_entry_remove(first[i]);
	s = snapshot_of_self(&used);
	assert_int_equal(used, STATS_MAX_ENTRIES);
	assert_int_equal(s->nentries, STATS_MAX_ENTRIES / 2);
	for (uint32_t k = 0; k < s->nentries; k++) {
		const struct stats_entry_snapshot *x = &s->entry[k];

		snprintf(name, sizeof(name), "second%u", 2 * k);
		assert_string_equal(x->name, name);
		assert_int_equal(x->slot, 2 * k);
		assert_int_equal(x->seq, 3); /* added, removed, added */
		assert_int_equal(x->kind, STATS_KIND_CQ);
		assert_int_equal(x->stripe, -(int)(2 * k));
		assert_int_equal(x->counter[STATS_POSTED], 2 * k);
	}
	free(s);
}

static void remove_is_harmless_when_repeated_or_foreign(void **state)
{
	(void)state;
	struct stats_entry *a = stats_entry_add("a", STATS_KIND_OTHER, 0), *b;
	struct stats_entry outside = {0};
	struct stats_snapshot *s;

	assert_non_null(a);
	stats_entry_remove(NULL);
	stats_entry_remove(&outside);
	stats_entry_remove(a);
	/* A second remove must not flip the retired slot back to live. */
	stats_entry_remove(a);
	s = snapshot_of_self(NULL);
	assert_int_equal(s->nentries, 0);
	free(s);
	b = stats_entry_add("b", STATS_KIND_OTHER, 0);
	assert_ptr_equal(b, a);
	s = snapshot_of_self(NULL);
	assert_int_equal(s->nentries, 1);
	assert_int_equal(s->entry[0].seq, 3);
	assert_string_equal(s->entry[0].name, "b");
	free(s);
}

static void reused_slot_is_a_new_generation(void **state)
{
	(void)state;
	struct stats_entry *keep = stats_entry_add("keep", STATS_KIND_STRIPE, 0);
	struct stats_entry *old = stats_entry_add("old-cq", STATS_KIND_CQ, -1), *fresh;
	struct stats_snapshot *before, *after;

	assert_non_null(keep);
	assert_non_null(old);
	stats_add(old, STATS_COMPLETED, 1000);
	stats_ring_depth(old, 9);
	stats_wc_error(old, IBV_WC_WR_FLUSH_ERR);
	before = snapshot_of_self(NULL);
	assert_int_equal(before->nentries, 2);
	assert_string_equal(before->entry[1].name, "old-cq");
	assert_int_equal(before->entry[1].counter[STATS_COMPLETED], 1000);
	assert_true(before->entry[1].seq & 1);

	stats_entry_remove(old);
	fresh = stats_entry_add("new-worker", STATS_KIND_MADSTRESS_WORKER, 7);
	assert_ptr_equal(fresh, old);
	stats_add(fresh, STATS_COMPLETED, 5);
	after = snapshot_of_self(NULL);
	assert_int_equal(after->nentries, 2);
	assert_int_equal(after->entry[1].slot, before->entry[1].slot);
	assert_int_equal(after->entry[1].seq, before->entry[1].seq + 2);
	assert_string_equal(after->entry[1].name, "new-worker");
	assert_int_equal(after->entry[1].kind, STATS_KIND_MADSTRESS_WORKER);
	assert_int_equal(after->entry[1].stripe, 7);
	assert_true(after->entry[1].created_realtime_ns >= before->entry[1].created_realtime_ns);
	for (int c = 0; c < STATS_NCOUNTERS; c++)
		assert_int_equal(after->entry[1].counter[c], c == STATS_COMPLETED ? 5 : 0);
	/* The entry that stayed keeps its slot and generation. */
	assert_int_equal(after->entry[0].seq, before->entry[0].seq);
	assert_string_equal(after->entry[0].name, "keep");
	free(before);
	free(after);
}

/* ---- a reader racing with add/remove ---- */

#define CHURN_WRITERS 2
#define CHURN_LIVE    8 /* entries each writer keeps live; older ones are removed */
#define CHURN_ROUNDS  20000

/* What a writer stores in counter c of the entry named gen<k>. */
static uint64_t churn_value(uint32_t k, int c)
{
	return (uint64_t)k * 64 + (uint64_t)c + 1;
}

struct churn {
	const struct stats_entry *slots; /* the writer's own mapping: TSan sees both sides */
	atomic_int writers_left;
	atomic_ulong accepted, with_counters, via_file;
	atomic_int bad;
	char bad_what[160];
};

struct churn_writer {
	struct churn *ch;
	int id;
};

static void *churn_writer_main(void *arg)
{
	struct churn_writer *w = arg;
	struct stats_entry *live[CHURN_LIVE] = {0};
	char name[STATS_NAME_LEN];

	for (uint32_t round = 0; round < CHURN_ROUNDS; round++) {
		uint32_t k = round * CHURN_WRITERS + (uint32_t)w->id;
		struct stats_entry **slot = &live[round % CHURN_LIVE];

		stats_entry_remove(*slot);
		snprintf(name, sizeof(name), "gen%u", k);
		*slot = stats_entry_add(name, (enum stats_kind)(k % STATS_NKINDS), (int)k);
		for (int c = 0; c < STATS_NCOUNTERS; c++)
			stats_set(*slot, c, churn_value(k, c));
	}
	for (int i = 0; i < CHURN_LIVE; i++)
		stats_entry_remove(live[i]);
	atomic_fetch_sub(&w->ch->writers_left, 1);
	return NULL;
}

static void churn_fail(struct churn *ch, const struct stats_entry_snapshot *x, const char *why)
{
	if (atomic_fetch_add(&ch->bad, 1) == 0)
		snprintf(ch->bad_what, sizeof(ch->bad_what), "%s: slot %u seq %u name '%s' stripe %d kind %d",
			 why, x->slot, x->seq, x->name, x->stripe, (int)x->kind);
}

/* One copied entry must be one generation: stripe, kind and counters all derive from the name. */
static void churn_check(struct churn *ch, const struct stats_entry_snapshot *x)
{
	unsigned k;
	int set = 0;

	if (!strcmp(x->name, "anchor"))
		return;
	if (sscanf(x->name, "gen%u", &k) != 1)
		return churn_fail(ch, x, "name");
	if (x->stripe != (int)k || x->kind != (enum stats_kind)(k % STATS_NKINDS) || !(x->seq & 1))
		return churn_fail(ch, x, "header fields of another generation");
	for (int c = 0; c < STATS_NCOUNTERS; c++) {
		if (x->counter[c] == churn_value(k, c))
			set++;
		else if (x->counter[c] != 0)
			return churn_fail(ch, x, "counter of another generation");
	}
	atomic_fetch_add(&ch->accepted, 1);
	if (set == STATS_NCOUNTERS)
		atomic_fetch_add(&ch->with_counters, 1);
}

static void *churn_reader_main(void *arg)
{
	struct churn *ch = arg;
	struct stats_snapshot *s = malloc(sizeof(*s));
	struct stats_reader r;
	unsigned pass = 0;

	if (!s || stats_reader_open(&r, getpid()) != STATS_READ_OK) {
		atomic_fetch_add(&ch->bad, 1);
		free(s);
		return NULL;
	}
	while (atomic_load(&ch->writers_left) > 0) {
		struct stats_entry_snapshot x;

		for (uint32_t i = 0; i < STATS_MAX_ENTRIES; i++)
			if (stats_entry_copy(&ch->slots[i], &x)) {
				x.slot = i;
				churn_check(ch, &x);
			}
		/* Now and then through the file, as cqstat reads it. */
		if (++pass % 8 == 0 && stats_reader_snapshot(&r, s) == STATS_READ_OK)
			for (uint32_t i = 0; i < s->nentries; i++) {
				churn_check(ch, &s->entry[i]);
				atomic_fetch_add(&ch->via_file, 1);
			}
	}
	stats_reader_close(&r);
	free(s);
	return NULL;
}

static void reader_never_mixes_generations(void **state)
{
	(void)state;
	struct churn ch = {0};
	struct churn_writer w[CHURN_WRITERS];
	pthread_t wt[CHURN_WRITERS], rt;
	struct stats_entry *anchor;
	struct stats_snapshot *s;
	uint32_t used;

	/* The first entry of a fresh segment is slot 0: the base of the writer's mapping. */
	anchor = stats_entry_add("anchor", STATS_KIND_OTHER, -1);
	assert_non_null(anchor);
	ch.slots = anchor;
	atomic_init(&ch.writers_left, CHURN_WRITERS);
	assert_int_equal(pthread_create(&rt, NULL, churn_reader_main, &ch), 0);
	for (int i = 0; i < CHURN_WRITERS; i++) {
		w[i] = (struct churn_writer){.ch = &ch, .id = i};
		assert_int_equal(pthread_create(&wt[i], NULL, churn_writer_main, &w[i]), 0);
	}
	for (int i = 0; i < CHURN_WRITERS; i++)
		pthread_join(wt[i], NULL);
	pthread_join(rt, NULL);
	if (atomic_load(&ch.bad))
		fail_msg("%d inconsistent copies, first: %s", atomic_load(&ch.bad), ch.bad_what);
	/* The reader did look at live, filled entries. */
	assert_true(atomic_load(&ch.accepted) > 0);
	assert_true(atomic_load(&ch.with_counters) > 0);
	print_message("accepted %lu copies (%lu with counters set, %lu through the file)\n",
		      atomic_load(&ch.accepted), atomic_load(&ch.with_counters), atomic_load(&ch.via_file));
	/* 2 * 20000 adds fit in the anchor plus each writer's live window. */
	s = snapshot_of_self(&used);
	assert_int_equal(s->nentries, 1);
	assert_string_equal(s->entry[0].name, "anchor");
	assert_true(used <= 1 + CHURN_WRITERS * (CHURN_LIVE + 1));
	free(s);
}

/* ---- endpoints ---- */

static void open_soft0(struct core_ep **ep)
{
	struct core_ep_attr attr;
	char err[256];

	core_ep_attr_defaults(&attr);
	attr.device = "soft0";
	attr.env.tx_stripes = 2;
	assert_int_equal(core_ep_open(&attr, ep, err, sizeof(err)), 0);
}

static void endpoint_cycles_leave_no_entries(void **state)
{
	(void)state;
	struct stats_snapshot *s;
	struct core_ep *ep;
	uint32_t baseline, per_ep, used_after_first, used, cycles;

	assert_non_null(stats_entry_add("baseline", STATS_KIND_OTHER, -1));
	s = snapshot_of_self(NULL);
	baseline = s->nentries;
	free(s);

	open_soft0(&ep);
	s = snapshot_of_self(&used_after_first);
	per_ep = s->nentries - baseline;
	free(s);
	/* Two TX stripes and the CQ at least. */
	assert_true(per_ep >= 3);
	/*
	 * Enough endpoints, one after another, to need more entries than the
	 * segment has, and no more: each one is slow under TSan (600 s did not
	 * do the 100 this was).
	 */
	cycles = STATS_MAX_ENTRIES / per_ep + 2;
	core_ep_close(ep);

	for (uint32_t i = 1; i < cycles; i++) {
		open_soft0(&ep);
		s = snapshot_of_self(NULL);
		/* Each endpoint still gets all its entries: none ran out. */
		assert_int_equal(s->nentries, baseline + per_ep);
		free(s);
		core_ep_close(ep);
	}
	s = snapshot_of_self(&used);
	assert_int_equal(s->nentries, baseline);
	assert_string_equal(s->entry[0].name, "baseline");
	assert_int_equal(used, used_after_first);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(full_segment_empties_and_refills, stats_test_setup, stats_test_teardown),
	    cmocka_unit_test_setup_teardown(remove_is_harmless_when_repeated_or_foreign, stats_test_setup, stats_test_teardown),
	    cmocka_unit_test_setup_teardown(reused_slot_is_a_new_generation, stats_test_setup, stats_test_teardown),
	    cmocka_unit_test_setup_teardown(reader_never_mixes_generations, stats_test_setup, stats_test_teardown),
	    cmocka_unit_test_setup_teardown(endpoint_cycles_leave_no_entries, stats_test_setup, stats_test_teardown),
	};

	return stats_run_tests(tests);
}
