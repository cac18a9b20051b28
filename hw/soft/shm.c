/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The shared-memory wire's segment and rings (shm.h).  Each ring is a
 * byte ring with free-running 64-bit indices: the writer publishes its tail
 * with a release store after copying, the reader its head after copying
 * out, so each side's copy happens-before the other's reuse of the bytes.
 * Each side keeps its own index privately and only publishes it: what the
 * peer may scribble on in the shared page is never read back as ours.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "hw/soft/shm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define SOFT_SHM_MAGIC	 0x57534d53u /* "SMSW" */
#define SOFT_SHM_VERSION 1
#define SOFT_SHM_PREFIX	 "/rdmatool-softwire-"

struct soft_shm_ring {
	_Alignas(64) _Atomic uint64_t tail; /* written by the ring's writer */
	_Alignas(64) _Atomic uint64_t head; /* written by the ring's reader */
};

struct soft_shm_seg {
	uint32_t magic, version;
	uint64_t ring_bytes;
	_Alignas(64) _Atomic uint32_t sleeping[2]; /* side i's engine sleeps: a peer that writes kicks it */
	struct soft_shm_ring ring[2];		   /* ring i: written by side i */
	_Alignas(64) uint8_t data[];		   /* ring 0's bytes, then ring 1's */
};

#define SOFT_SHM_SEG_BYTES (sizeof(struct soft_shm_seg) + 2 * (size_t)SOFT_SHM_RING_BYTES)

struct soft_shm {
	struct soft_shm_seg *seg;
	int side;
	uint64_t tail, head; /* ours: the tx ring's tail, the rx ring's head */
	uint8_t *tx, *rx;
	char name[SOFT_SHM_NAME_MAX];
	bool named; /* the name still exists and is ours to unlink */
};

static struct soft_shm *soft_shm_map(int fd, int side, const char *name)
{
	struct soft_shm *shm = calloc(1, sizeof(*shm));
	void *p;

	if (!shm)
		return NULL;
	p = mmap(NULL, SOFT_SHM_SEG_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		free(shm);
		return NULL;
	}
	shm->seg = p;
	shm->side = side;
	shm->tx = shm->seg->data + (size_t)side * SOFT_SHM_RING_BYTES;
	shm->rx = shm->seg->data + (size_t)(1 - side) * SOFT_SHM_RING_BYTES;
	snprintf(shm->name, sizeof(shm->name), "%s", name);
	return shm;
}

bool soft_shm_name_ok(const char *name)
{
	size_t n = strlen(SOFT_SHM_PREFIX);

	if (strncmp(name, SOFT_SHM_PREFIX, n) || strlen(name) != n + 24)
		return false;
	for (const char *p = name + n; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

struct soft_shm *soft_shm_create(char name[SOFT_SHM_NAME_MAX])
{
	uint8_t rnd[12];
	struct soft_shm *shm;
	int fd, err;

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return NULL;
	int len = snprintf(name, SOFT_SHM_NAME_MAX, "%s", SOFT_SHM_PREFIX);

	for (size_t i = 0; i < sizeof(rnd); i++)
		len += snprintf(name + len, SOFT_SHM_NAME_MAX - (size_t)len, "%02x", rnd[i]);
	fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	/* Reserve the space now: a full /dev/shm is ENOSPC here, never SIGBUS later. */
	err = posix_fallocate(fd, 0, (off_t)SOFT_SHM_SEG_BYTES);
	if (err || !(shm = soft_shm_map(fd, 0, name))) {
		close(fd);
		shm_unlink(name);
		errno = err ? err : errno;
		return NULL;
	}
	close(fd);
	shm->named = true;
	shm->seg->ring_bytes = SOFT_SHM_RING_BYTES;
	shm->seg->version = SOFT_SHM_VERSION;
	atomic_store_explicit((_Atomic uint32_t *)&shm->seg->magic, SOFT_SHM_MAGIC, memory_order_release);
	return shm;
}

struct soft_shm *soft_shm_open(const char *name)
{
	struct soft_shm *shm;
	struct stat st;
	int fd;

	if (!soft_shm_name_ok(name)) {
		errno = EINVAL;
		return NULL;
	}
	fd = shm_open(name, O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 0777) != 0600) {
		close(fd);
		errno = EPERM;
		return NULL;
	}
	if (st.st_size != (off_t)SOFT_SHM_SEG_BYTES) {
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	shm = soft_shm_map(fd, 1, name);
	close(fd);
	if (!shm)
		return NULL;
	shm->named = true; /* checked as the user's own: the opener may remove the name too */
	if (atomic_load_explicit((_Atomic uint32_t *)&shm->seg->magic, memory_order_acquire) !=
		SOFT_SHM_MAGIC ||
	    shm->seg->version != SOFT_SHM_VERSION || shm->seg->ring_bytes != SOFT_SHM_RING_BYTES) {
		soft_shm_close(shm);
		errno = EINVAL;
		return NULL;
	}
	return shm;
}

void soft_shm_unlink(struct soft_shm *shm)
{
	if (shm && shm->named) {
		shm_unlink(shm->name);
		shm->named = false;
	}
}

void soft_shm_close(struct soft_shm *shm)
{
	if (!shm)
		return;
	soft_shm_unlink(shm);
	munmap(shm->seg, SOFT_SHM_SEG_BYTES);
	free(shm);
}

ssize_t soft_shm_write(struct soft_shm *shm, const void *buf, size_t len)
{
	struct soft_shm_ring *r = &shm->seg->ring[shm->side];
	uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
	uint64_t used = shm->tail - head, room, at, first;

	if (used > SOFT_SHM_RING_BYTES)
		return -EPROTO; /* the peer's head is not one it can have */
	room = SOFT_SHM_RING_BYTES - used;
	if (len > room)
		len = room;
	if (!len)
		return 0;
	at = shm->tail % SOFT_SHM_RING_BYTES;
	first = SOFT_SHM_RING_BYTES - at < len ? SOFT_SHM_RING_BYTES - at : len;
	memcpy(shm->tx + at, buf, first);
	memcpy(shm->tx, (const uint8_t *)buf + first, len - first);
	shm->tail += len;
	atomic_store_explicit(&r->tail, shm->tail, memory_order_release);
	return (ssize_t)len;
}

ssize_t soft_shm_read(struct soft_shm *shm, void *buf, size_t cap)
{
	struct soft_shm_ring *r = &shm->seg->ring[1 - shm->side];
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	uint64_t avail = tail - shm->head, at, first;

	if (avail > SOFT_SHM_RING_BYTES)
		return -EPROTO;
	if (avail < cap)
		cap = avail;
	if (!cap)
		return 0;
	at = shm->head % SOFT_SHM_RING_BYTES;
	first = SOFT_SHM_RING_BYTES - at < cap ? SOFT_SHM_RING_BYTES - at : cap;
	memcpy(buf, shm->rx + at, first);
	memcpy((uint8_t *)buf + first, shm->rx, cap - first);
	shm->head += cap;
	atomic_store_explicit(&r->head, shm->head, memory_order_release);
	return (ssize_t)cap;
}

bool soft_shm_readable(const struct soft_shm *shm)
{
	return atomic_load_explicit(&shm->seg->ring[1 - shm->side].tail, memory_order_relaxed) != shm->head;
}

bool soft_shm_sleep(struct soft_shm *shm, bool sleeping)
{
	atomic_store_explicit(&shm->seg->sleeping[shm->side], sleeping, memory_order_seq_cst);
	/* Pairs with soft_shm_kick_due: either the peer sees the flag, or this sees its bytes. */
	return !sleeping || !soft_shm_readable(shm);
}

bool soft_shm_kick_due(struct soft_shm *shm)
{
	_Atomic uint32_t *peer = &shm->seg->sleeping[1 - shm->side];

	atomic_thread_fence(memory_order_seq_cst);
	return atomic_load_explicit(peer, memory_order_relaxed) &&
	       atomic_exchange_explicit(peer, 0, memory_order_relaxed);
}

ssize_t soft_cma_read(pid_t pid, void *dst, uint64_t addr, size_t len)
{
	struct iovec local = {.iov_base = dst, .iov_len = len};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};
	size_t done = 0;

	/* The kernel may stop short (a page boundary it could not fault in): go on from there. */
	while (done < len) {
		ssize_t n;

		local.iov_base = (uint8_t *)dst + done;
		local.iov_len = len - done;
		remote.iov_base = (void *)(uintptr_t)(addr + done);
		remote.iov_len = len - done;
		n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EFAULT;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

bool soft_shm_unread(const struct soft_shm *shm)
{
	return atomic_load_explicit(&shm->seg->ring[shm->side].head, memory_order_relaxed) != shm->tail;
}
