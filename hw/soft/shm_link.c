/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The shared wire's negotiation, one connection at a time (shm.h): a state
 * machine that decides, and never does I/O of its own.  The bodies it reads
 * are the caller's private copies; every name, pid and address in them is
 * checked before use.
 */
#include "hw/soft/shm.h"

#include <endian.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int soft_shm_wanted(const char *env)
{
	if (!env || !strcmp(env, "1"))
		return 1;
	return !strcmp(env, "0") ? 0 : -1;
}

static void soft_shm_ctl_fill(struct soft_shm_ctl *out, const char *name, const uint8_t probe[16])
{
	memset(out, 0, sizeof(*out));
	if (name)
		snprintf(out->name, sizeof(out->name), "%s", name);
	out->probe_addr = htole64((uintptr_t)probe);
	out->pid = htole32((uint32_t)getpid());
	memcpy(out->probe, probe, sizeof(out->probe));
}

/* Whether the peer's process is the one that sent body: its probe bytes are where it says. */
static bool soft_shm_probe_ok(const struct soft_shm_ctl *body)
{
	uint8_t seen[16];
	uint32_t pid = le32toh(body->pid);

	if (!pid || pid > 0x7fffffffu)
		return false;
	return soft_cma_read((pid_t)pid, seen, le64toh(body->probe_addr), sizeof(seen)) ==
		   (ssize_t)sizeof(seen) &&
	       !memcmp(seen, body->probe, sizeof(seen));
}

enum soft_shm_op soft_shm_link_offer(struct soft_shm_link *l, const uint8_t probe[16],
				     struct soft_shm_ctl *out)
{
	char name[SOFT_SHM_NAME_MAX];

	if (l->state != SOFT_SHM_TCP || l->shm)
		return SOFT_SHM_NONE;
	l->shm = soft_shm_create(name);
	if (!l->shm)
		return SOFT_SHM_NONE; /* a planted file at the name, a full /dev/shm: TCP it is */
	soft_shm_ctl_fill(out, name, probe);
	l->state = SOFT_SHM_OFFERED;
	return SOFT_SHM_OFFER;
}

void soft_shm_link_close(struct soft_shm_link *l)
{
	soft_shm_close(l->shm);
	l->shm = NULL;
	l->tx = l->rx = false;
	l->state = SOFT_SHM_TCP;
}

/* A refusal: back to TCP, and the peer is told. */
static int soft_shm_refuse(struct soft_shm_link *l)
{
	soft_shm_link_close(l);
	return SOFT_SHM_NO;
}

int soft_shm_link_take(struct soft_shm_link *l, bool dialer, bool allow, const uint8_t probe[16], int op,
		       const struct soft_shm_ctl *body, struct soft_shm_ctl *out)
{
	char name[SOFT_SHM_NAME_MAX];

	switch (op) {
	case SOFT_SHM_OFFER:
		if (dialer || l->state != SOFT_SHM_TCP || !body)
			return -1;
		if (!allow)
			return SOFT_SHM_NO;
		memcpy(name, body->name, sizeof(name));
		name[sizeof(name) - 1] = '\0';
		l->shm = soft_shm_open(name); /* owner, mode, size and header checked */
		/* Both sides have it mapped now: the name goes at once, whatever happens to either next. */
		soft_shm_unlink(l->shm);
		if (!l->shm || !soft_shm_probe_ok(body))
			return soft_shm_refuse(l);
		l->peer_pid = (int32_t)le32toh(body->pid);
		soft_shm_ctl_fill(out, NULL, probe);
		l->state = SOFT_SHM_ACCEPTED;
		return SOFT_SHM_ACCEPT;
	case SOFT_SHM_ACCEPT:
		if (!dialer || l->state != SOFT_SHM_OFFERED || !body)
			return -1;
		soft_shm_unlink(l->shm); /* both sides mapped it: the name goes */
		if (!soft_shm_probe_ok(body))
			return soft_shm_refuse(l);
		l->peer_pid = (int32_t)le32toh(body->pid);
		l->state = SOFT_SHM_WANT_ON;
		return SOFT_SHM_NONE;
	case SOFT_SHM_ON:
		if (dialer ? l->state != SOFT_SHM_ON_SENT : l->state != SOFT_SHM_ACCEPTED)
			return -1;
		l->rx = true;
		l->state = dialer ? SOFT_SHM_UP : SOFT_SHM_WANT_ON;
		return SOFT_SHM_NONE;
	case SOFT_SHM_NO:
		/* Only before anything moved to the rings. */
		if (l->state != SOFT_SHM_OFFERED && l->state != SOFT_SHM_ACCEPTED)
			return -1;
		soft_shm_link_close(l);
		return SOFT_SHM_NONE;
	default:
		return -1;
	}
}

void soft_shm_link_on_sent(struct soft_shm_link *l)
{
	l->tx = true;
	l->state = l->rx ? SOFT_SHM_UP : SOFT_SHM_ON_SENT;
}
