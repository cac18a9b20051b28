/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Boards of large-message READs siblings steal; the contract is in steal.h. */
#include "core/chan/steal.h"
#include "core/chan/agent_dir.h"

#include "core/chan/sibling.h"
#include "core/util/process.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define STEAL_MAGIC   0x4c41455453544452ULL /* "RDTSTEAL" little-endian */
#define STEAL_VERSION 1

enum { SLOT_FREE, SLOT_OFFERED, SLOT_TAKEN, SLOT_DONE };

struct steal_slot {
	_Atomic uint32_t state;
	_Atomic int32_t thief; /* pid of the agent reading it; 0 until it says */
	int32_t status;
	uint32_t from, len, rkey;
	uint64_t addr;
	uint8_t data[STEAL_SLOT_MAX] __attribute__((aligned(64)));
};

struct steal_shared {
	uint64_t magic;
	uint32_t version, nslots, slot_size;
	int32_t owner;
	struct steal_slot slots[STEAL_SLOTS];
};

struct steal_board {
	struct steal_shared *s;
	dev_t dev;
	ino_t ino;
	uint32_t id;
	int bell_fd; /* to ring the board's agent (gateway.<id>.bell, core/chan/gateway.h) */
	struct sockaddr_un bell;
};

static void board_path(char *path, size_t len, const char *dir, uint32_t id)
{
	char name[32];

	agent_id_text(id, name, sizeof(name));
	snprintf(path, len, "%s/%s%s", dir, STEAL_FILE_PREFIX, name);
}

static struct steal_board *board_new(struct steal_shared *s, const char *dir, uint32_t id)
{
	struct steal_board *b = calloc(1, sizeof(*b));
	char name[32];
	int n;

	if (!b)
		return NULL;
	b->s = s;
	b->id = id;
	agent_id_text(id, name, sizeof(name));
	b->bell.sun_family = AF_UNIX;
	n = snprintf(b->bell.sun_path, sizeof(b->bell.sun_path), "%s/gateway.%s.bell", dir, name);
	b->bell_fd = n > 0 && (size_t)n < sizeof(b->bell.sun_path)
			 ? socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)
			 : -1;
	return b;
}

int steal_board_create(const char *dir, uint32_t id, struct steal_board **out)
{
	char path[PATH_MAX];
	struct steal_shared *s;
	struct stat st;
	int fd, rc;

	board_path(path, sizeof(path), dir, id);
	unlink(path); /* a dead agent's */
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	rc = agent_dir_reserve(fd, 0, sizeof(*s)); /* a full file system fails here, not with SIGBUS */
	if (!rc && fstat(fd, &st))
		rc = -errno;
	if (rc) {
		close(fd);
		unlink(path);
		return rc;
	}
	s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (s == MAP_FAILED) {
		unlink(path);
		return -ENOMEM;
	}
	s->version = STEAL_VERSION;
	s->nslots = STEAL_SLOTS;
	s->slot_size = STEAL_SLOT_MAX;
	s->owner = getpid();
	atomic_thread_fence(memory_order_release);
	s->magic = STEAL_MAGIC;
	*out = board_new(s, dir, id);
	if (!*out) {
		munmap(s, sizeof(*s));
		unlink(path);
		return -ENOMEM;
	}
	(*out)->dev = st.st_dev;
	(*out)->ino = st.st_ino;
	return 0;
}

void steal_board_close(struct steal_board *b)
{
	if (!b)
		return;
	if (b->bell_fd >= 0)
		close(b->bell_fd);
	munmap(b->s, sizeof(*b->s));
	free(b);
}

void steal_board_destroy(struct steal_board *b, const char *dir)
{
	char path[PATH_MAX];
	struct stat st;

	if (!b)
		return;
	board_path(path, sizeof(path), dir, b->id);
	/* Only our own file: a newer agent may have replaced it. */
	if (lstat(path, &st) == 0 && st.st_dev == b->dev && st.st_ino == b->ino)
		unlink(path);
	steal_board_close(b);
}

int steal_offer(struct steal_board *b, const struct steal_job *job)
{
	for (int i = 0; i < STEAL_SLOTS; i++) {
		struct steal_slot *sl = &b->s->slots[i];

		if (atomic_load_explicit(&sl->state, memory_order_relaxed) != SLOT_FREE)
			continue;
		sl->from = job->from;
		sl->len = job->len;
		sl->rkey = job->rkey;
		sl->addr = job->addr;
		sl->status = 0;
		atomic_store_explicit(&sl->thief, 0, memory_order_relaxed);
		atomic_store_explicit(&sl->state, SLOT_OFFERED, memory_order_release);
		return i;
	}
	return -1;
}

bool steal_reclaim(struct steal_board *b, int slot)
{
	uint32_t offered = SLOT_OFFERED;

	return atomic_compare_exchange_strong(&b->s->slots[slot].state, &offered, SLOT_FREE);
}

int steal_poll(struct steal_board *b, int slot, bool check_thief, int *status, const uint8_t **data)
{
	struct steal_slot *sl = &b->s->slots[slot];
	uint32_t state = atomic_load_explicit(&sl->state, memory_order_acquire);
	pid_t thief;

	if (state == SLOT_DONE) {
		*status = sl->status;
		*data = sl->data;
		return 1;
	}
	if (state != SLOT_TAKEN)
		return 0;
	thief = atomic_load_explicit(&sl->thief, memory_order_relaxed);
	if (!check_thief || thief <= 0 || !process_gone(thief))
		return 0;
	/* The thief died reading it; a late DONE from it cannot come any more. */
	atomic_store_explicit(&sl->state, SLOT_FREE, memory_order_relaxed);
	return -1;
}

void steal_release(struct steal_board *b, int slot)
{
	atomic_store_explicit(&b->s->slots[slot].state, SLOT_FREE, memory_order_relaxed);
}

int steal_board_open(const char *dir, uint32_t id, struct steal_board **out)
{
	char path[PATH_MAX];
	struct steal_shared hdr;
	struct stat st;
	void *map;
	int fd;

	board_path(path, sizeof(path), dir, id);
	fd = agent_dir_open_own(path, &st);
	if (fd < 0)
		return fd;
	if ((size_t)st.st_size != sizeof(struct steal_shared) ||
	    pread(fd, &hdr, offsetof(struct steal_shared, slots), 0) !=
		(ssize_t)offsetof(struct steal_shared, slots) ||
	    hdr.magic != STEAL_MAGIC || hdr.version != STEAL_VERSION || hdr.nslots != STEAL_SLOTS ||
	    hdr.slot_size != STEAL_SLOT_MAX) {
		close(fd);
		return -ENOENT; /* still being made, or not a board of ours */
	}
	map = mmap(NULL, sizeof(struct steal_shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -ENOMEM;
	*out = board_new(map, dir, id);
	if (!*out) {
		munmap(map, sizeof(struct steal_shared));
		return -ENOMEM;
	}
	(*out)->dev = st.st_dev;
	(*out)->ino = st.st_ino;
	return 0;
}

bool steal_board_current(struct steal_board *b, const char *dir, uint32_t id)
{
	char path[PATH_MAX];
	struct stat st;

	board_path(path, sizeof(path), dir, id);
	return lstat(path, &st) == 0 && st.st_dev == b->dev && st.st_ino == b->ino &&
	       !process_gone(b->s->owner);
}

int steal_take(struct steal_board *b, struct steal_job *job)
{
	for (int i = 0; i < STEAL_SLOTS; i++) {
		struct steal_slot *sl = &b->s->slots[i];
		uint32_t offered = SLOT_OFFERED;

		if (atomic_load_explicit(&sl->state, memory_order_relaxed) != SLOT_OFFERED ||
		    !atomic_compare_exchange_strong(&sl->state, &offered, SLOT_TAKEN))
			continue;
		atomic_store_explicit(&sl->thief, getpid(), memory_order_relaxed);
		*job =
		    (struct steal_job){.from = sl->from, .len = sl->len, .rkey = sl->rkey, .addr = sl->addr};
		return i;
	}
	return -1;
}

void steal_untake(struct steal_board *b, int slot)
{
	atomic_store_explicit(&b->s->slots[slot].state, SLOT_OFFERED, memory_order_release);
}

uint8_t *steal_slot_data(struct steal_board *b, int slot)
{
	return b->s->slots[slot].data;
}

void steal_finish(struct steal_board *b, int slot, int status)
{
	b->s->slots[slot].status = status;
	atomic_store_explicit(&b->s->slots[slot].state, SLOT_DONE, memory_order_release);
}

void steal_wake(struct steal_board *b)
{
	char byte = 0;
	ssize_t n;

	if (b->bell_fd < 0)
		return;
	n = sendto(b->bell_fd, &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&b->bell,
		   sizeof(b->bell));
	(void)n; /* full: it rings already; refused: that agent is gone */
}
