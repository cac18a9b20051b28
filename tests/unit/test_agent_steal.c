/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * core/chan/steal: a READ offered on a board is taken by one thief only,
 * its data and status reach the owner, an offer nobody took is taken back,
 * a slot whose thief died is the owner's again, and a file that is not a
 * board (or open to others) is refused.  Plus the agent id naming of
 * core/chan/sibling.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "core/chan/sibling.h"
#include "core/chan/steal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct fixture {
	char dir[64];
	struct steal_board *owner, *thief;
};

static const uint32_t ID = 3u | 1u << AGENT_SIBLING_SHIFT; /* rank 3, sibling 1: "steal.3.1" */

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	snprintf(f->dir, sizeof(f->dir), "/tmp/rdmatool-steal.XXXXXX");
	if (!mkdtemp(f->dir) || steal_board_create(f->dir, ID, &f->owner) ||
	    steal_board_open(f->dir, ID, &f->thief))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	steal_board_close(f->thief);
	steal_board_destroy(f->owner, f->dir);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	if (system(cmd))
		return -1;
	free(f);
	return 0;
}

static void test_ids(void **state)
{
	char text[32];

	(void)state;
	agent_id_text(agent_id(5, 0), text, sizeof(text));
	assert_string_equal(text, "5");
	agent_id_text(agent_id(5, 2), text, sizeof(text));
	assert_string_equal(text, "5.2");
	assert_int_equal(agent_id_rank(agent_id(255, 15)), 255);
	assert_int_equal(agent_id_sibling(agent_id(255, 15)), 15);
}

static void test_offer_take_done(void **state)
{
	struct fixture *f = *state;
	struct steal_job job = {.from = 7, .len = 1000, .rkey = 0x1234, .addr = 0xabcdef00}, got;
	const uint8_t *data;
	int slot, status, taken;

	slot = steal_offer(f->owner, &job);
	assert_true(slot >= 0);
	assert_int_equal(steal_poll(f->owner, slot, true, &status, &data), 0);
	taken = steal_take(f->thief, &got);
	assert_int_equal(taken, slot);
	assert_int_equal(got.from, 7);
	assert_int_equal(got.len, 1000);
	assert_int_equal(got.rkey, 0x1234);
	assert_int_equal(got.addr, 0xabcdef00);
	assert_int_equal(steal_take(f->thief, &got), -1); /* nobody takes it twice */
	assert_false(steal_reclaim(f->owner, slot));	  /* taken: no longer the owner's to take back */
	assert_int_equal(steal_poll(f->owner, slot, true, &status, &data), 0); /* the thief (us) lives */
	memset(steal_slot_data(f->thief, taken), 0x5a, 1000);
	steal_finish(f->thief, taken, 0);
	assert_int_equal(steal_poll(f->owner, slot, true, &status, &data), 1);
	assert_int_equal(status, 0);
	assert_int_equal(data[0], 0x5a);
	assert_int_equal(data[999], 0x5a);
	steal_release(f->owner, slot);
	assert_int_equal(steal_offer(f->owner, &job), slot); /* free again */
}

static void test_failed_read_reaches_owner(void **state)
{
	struct fixture *f = *state;
	struct steal_job job = {.from = 1, .len = 64, .rkey = 1, .addr = 64}, got;
	const uint8_t *data;
	int slot = steal_offer(f->owner, &job), status = 0;

	assert_int_equal(steal_take(f->thief, &got), slot);
	steal_finish(f->thief, slot, -EIO);
	assert_int_equal(steal_poll(f->owner, slot, true, &status, &data), 1);
	assert_int_equal(status, -EIO);
}

static void test_reclaim_and_untake(void **state)
{
	struct fixture *f = *state;
	struct steal_job job = {.from = 1, .len = 64, .rkey = 1, .addr = 64}, got;
	int slot = steal_offer(f->owner, &job);

	assert_true(steal_reclaim(f->owner, slot));
	assert_int_equal(steal_take(f->thief, &got), -1); /* taken back: nothing on offer */
	slot = steal_offer(f->owner, &job);
	assert_int_equal(steal_take(f->thief, &got), slot);
	steal_untake(f->thief, slot); /* the thief cannot serve it: offered again */
	assert_true(steal_reclaim(f->owner, slot));
}

static void test_full_board(void **state)
{
	struct fixture *f = *state;
	struct steal_job job = {.from = 1, .len = 64, .rkey = 1, .addr = 64};

	for (int i = 0; i < STEAL_SLOTS; i++)
		assert_true(steal_offer(f->owner, &job) >= 0);
	assert_int_equal(steal_offer(f->owner, &job), -1);
}

/* A thief that takes a slot and dies: the owner gets it back, not a hang. */
static void test_dead_thief(void **state)
{
	struct fixture *f = *state;
	struct steal_job job = {.from = 1, .len = 64, .rkey = 1, .addr = 64}, got;
	int slot = steal_offer(f->owner, &job), status;
	const uint8_t *data;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct steal_board *b;

		_exit(steal_board_open(f->dir, ID, &b) == 0 && steal_take(b, &got) == slot ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(steal_poll(f->owner, slot, true, &status, &data), -1);
	assert_int_equal(steal_offer(f->owner, &job), slot); /* the owner's again */
}

static void test_refuses_strangers(void **state)
{
	struct fixture *f = *state;
	struct steal_board *b;
	char path[128];
	int fd;

	assert_int_equal(steal_board_open(f->dir, agent_id(9, 0), &b), -ENOENT);
	snprintf(path, sizeof(path), "%s/steal.8", f->dir);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "not a board", 11), 11);
	close(fd);
	assert_int_equal(steal_board_open(f->dir, agent_id(8, 0), &b), -ENOENT);
	chmod(path, 0644);
	assert_int_equal(steal_board_open(f->dir, agent_id(8, 0), &b), -EPERM);
	assert_true(steal_board_current(f->thief, f->dir, ID));
	assert_false(steal_board_current(f->thief, f->dir, agent_id(8, 0)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ids),
	    cmocka_unit_test_setup_teardown(test_offer_take_done, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_failed_read_reaches_owner, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_reclaim_and_untake, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_full_board, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dead_thief, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_refuses_strangers, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
