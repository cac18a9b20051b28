/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * core/chan/agent_key: agents that start at the same moment with no key
 * file yet agree on one key (the file is created atomically, never read half
 * written); it is mode 0600 and no temporary file is left behind; a key
 * readable by others is refused; the key is HKDF-SHA256 of the file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "core/chan/agent_key.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define RACERS 8
#define ROUNDS 20

static void test_racing_agents_agree(void **state)
{
	char dir[] = "/tmp/rdmatool-key-test.XXXXXX", path[128];

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/key", dir);
	setenv(AGENT_KEY_ENV, path, 1);
	for (int round = 0; round < ROUNDS; round++) {
		unsigned char keys[RACERS][AGENT_KEY_LEN];
		int go[2], out[2];
		pid_t pids[RACERS];
		struct stat st;
		DIR *d;
		struct dirent *de;
		int files = 0;

		unlink(path);
		assert_int_equal(pipe(go), 0);
		assert_int_equal(pipe(out), 0);
		for (int i = 0; i < RACERS; i++) {
			pids[i] = fork();
			assert_true(pids[i] >= 0);
			if (pids[i] == 0) {
				unsigned char key[AGENT_KEY_LEN + 1];
				char why[256], byte;

				close(go[1]);
				/* Everyone starts when the pipe closes: as close to "at once" as processes
				 * get. */
				if (read(go[0], &byte, 1) != 0)
					_exit(2);
				key[0] = (unsigned char)i;
				if (agent_key_load(key + 1, why, sizeof(why)))
					_exit(3);
				_exit(write(out[1], key, sizeof(key)) == (ssize_t)sizeof(key) ? 0 : 4);
			}
		}
		close(go[0]);
		close(go[1]);
		close(out[1]);
		for (int i = 0; i < RACERS; i++) {
			unsigned char rec[AGENT_KEY_LEN + 1];

			assert_int_equal(read(out[0], rec, sizeof(rec)), sizeof(rec));
			assert_true(rec[0] < RACERS);
			memcpy(keys[rec[0]], rec + 1, AGENT_KEY_LEN);
		}
		close(out[0]);
		for (int i = 0; i < RACERS; i++) {
			int status;

			assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
			assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		}
		for (int i = 1; i < RACERS; i++)
			assert_memory_equal(keys[0], keys[i], AGENT_KEY_LEN);
		assert_int_equal(stat(path, &st), 0);
		assert_int_equal(st.st_mode & 0777, 0600);
		assert_int_equal(st.st_nlink, 1);
		d = opendir(dir);
		assert_non_null(d);
		while ((de = readdir(d)))
			files += de->d_name[0] != '.';
		closedir(d);
		assert_int_equal(files, 1); /* the key, no temporary file */
	}
	unlink(path);
	rmdir(dir);
}

#define KEY_TEXT "0123456789abcdef0123456789abcdef\n"

/* A key file of KEY_TEXT with mode in a fresh directory dir, named by AGENT_KEY_ENV; its path. */
static void make_key(char *dir, char *path, size_t len, mode_t mode)
{
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(path, len, "%s/key", dir);
	setenv(AGENT_KEY_ENV, path, 1);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(KEY_TEXT, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

static void test_loose_key_refused(void **state)
{
	char dir[] = "/tmp/rdmatool-key-test.XXXXXX", path[128], why[256];
	unsigned char key[AGENT_KEY_LEN];

	(void)state;
	make_key(dir, path, sizeof(path), 0644);
	assert_int_equal(agent_key_load(key, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "0600"));
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(agent_key_load(key, why, sizeof(why)), 0);
	unlink(path);
	rmdir(dir);
}

/*
 * The link key is HKDF-SHA256 (RFC 5869) of the file's bytes, salt "rdmatool agent key", info
 * "rdmatool agent links": the value below is RFC 5869's extract and expand of KEY_TEXT done by hand
 * (Python's hmac), so it checks the derivation, not libcrypto against itself.
 */
static void test_key_is_hkdf(void **state)
{
	static const unsigned char want[AGENT_KEY_LEN] = {
	    0x04, 0x4c, 0x86, 0x3d, 0x59, 0x15, 0x2f, 0xef, 0xc6, 0x95, 0x29, 0xbb, 0x10, 0x7e, 0xb1, 0x5f,
	    0xe4, 0x16, 0x24, 0xfa, 0x3f, 0xa1, 0xa9, 0xb2, 0xbb, 0x47, 0x83, 0x5b, 0x53, 0xe8, 0xa6, 0x5b};
	char dir[] = "/tmp/rdmatool-key-test.XXXXXX", path[128], why[256];
	unsigned char key[AGENT_KEY_LEN];

	(void)state;
	make_key(dir, path, sizeof(path), 0600);
	assert_int_equal(agent_key_load(key, why, sizeof(why)), 0);
	assert_memory_equal(key, want, AGENT_KEY_LEN);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_racing_agents_agree),
	    cmocka_unit_test(test_loose_key_refused),
	    cmocka_unit_test(test_key_is_hkdf),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
