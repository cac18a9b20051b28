/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The shared-memory wire's segment (shm.c): two single-producer,
 * single-consumer byte rings between the soft NICs of two processes of one
 * user on one host, ring i written by side i (0: the side that created the
 * segment, 1: the side that opened it).  The rings carry the same byte
 * stream as the TCP wire (wire.c frames it); what a side reads is copied
 * out to a private buffer before it is parsed, and every index the peer
 * publishes is checked before use: a peer that breaks the rings only makes
 * its own connection fail (-EPROTO).  Large payloads do not cross the ring:
 * the receiver pulls them with process_vm_readv (soft_cma_read), one CPU
 * copy per byte.
 */
#ifndef RDMATOOL_HW_SOFT_SHM_H
#define RDMATOOL_HW_SOFT_SHM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SOFT_SHM_RING_BYTES (256u << 10) /* each direction */
#define SOFT_SHM_NAME_MAX   48		 /* "/rdmatool-softwire-" and 24 hex digits, NUL */

struct soft_shm;

/* Creates a segment under a random name (O_EXCL, 0600, space reserved); NULL and errno on failure. */
struct soft_shm *soft_shm_create(char name[SOFT_SHM_NAME_MAX]);
/*
 * Opens the peer's segment: it must be a regular file of this user, mode
 * 0600, of the expected size, with a valid header; NULL and errno (EPERM
 * for a wrong owner or mode, EINVAL for a wrong size or header) otherwise.
 */
struct soft_shm *soft_shm_open(const char *name);
/* Removes the name (both sides mapped it, or the offer was refused); NULL is ignored. */
void soft_shm_unlink(struct soft_shm *shm);
void soft_shm_close(struct soft_shm *shm);
/* Whether name is one soft_shm_create could have made (the only names soft_shm_open accepts). */
bool soft_shm_name_ok(const char *name);

/* Copies up to len bytes into the ring to the peer; the count, or -EPROTO when the peer broke the ring. */
ssize_t soft_shm_write(struct soft_shm *shm, const void *buf, size_t len);
/* Copies up to cap bytes out of the ring from the peer; the count, or -EPROTO. */
ssize_t soft_shm_read(struct soft_shm *shm, void *buf, size_t cap);
/* Whether the peer has not read everything written to it yet. */
bool soft_shm_unread(const struct soft_shm *shm);
/* Whether the ring from the peer holds bytes. */
bool soft_shm_readable(const struct soft_shm *shm);
/*
 * This side's engine is about to sleep (true) or woke (false): a peer that
 * then writes to it, or makes room in its ring, kicks it (soft_shm_kick_due).
 * soft_shm_sleep(shm, true) returns false when bytes are already there.
 */
bool soft_shm_sleep(struct soft_shm *shm, bool sleeping);
/* After a write or a read: whether the peer sleeps and must be woken (once per sleep). */
bool soft_shm_kick_due(struct soft_shm *shm);

/* process_vm_readv of len bytes at addr in process pid into dst; the bytes read, or -errno. */
ssize_t soft_cma_read(pid_t pid, void *dst, uint64_t addr, size_t len);

/*
 * shm_link.c: the negotiation that moves one authenticated TCP connection
 * onto a segment, carried by CTL packets on that connection (wire.c sends
 * them and does the I/O; these functions only decide).  The side that
 * dialed offers a segment it created; the other opens it, checks it and
 * that it can read the offerer's memory (process_vm_readv of a random probe
 * at the address the offer names), and accepts; the offerer, having checked
 * the same of the acceptor, unlinks the name and switches on.  Each side
 * sends ON as its last TCP packet and writes the ring after it; each reads
 * the ring once the peer's ON came.  Either side may refuse (NO): the
 * connection then stays on TCP.  RDMATOOL_SOFT_SHM=0 refuses on both sides.
 */
enum soft_shm_op { SOFT_SHM_NONE, SOFT_SHM_OFFER, SOFT_SHM_ACCEPT, SOFT_SHM_ON, SOFT_SHM_NO };

enum soft_shm_state {
	SOFT_SHM_TCP,	   /* no segment: TCP only (never offered, or refused) */
	SOFT_SHM_OFFERED,  /* dialer: created and offered, waiting for ACCEPT */
	SOFT_SHM_ACCEPTED, /* acceptor: mapped and accepted, waiting for the dialer's ON */
	SOFT_SHM_WANT_ON,  /* ours to send ON once nothing is queued for TCP */
	SOFT_SHM_ON_SENT,  /* dialer: sent ON, waiting for the acceptor's */
	SOFT_SHM_UP,	   /* both directions on the rings */
};

/* The body of a CTL packet (little-endian). */
struct soft_shm_ctl {
	char name[SOFT_SHM_NAME_MAX];
	uint64_t probe_addr; /* where the sender's probe bytes are in its memory */
	uint32_t pid;	     /* the sender's process */
	uint32_t pad;
	uint8_t probe[16];
};

/* One connection's side of it. */
struct soft_shm_link {
	struct soft_shm *shm;
	enum soft_shm_state state;
	bool tx, rx;	  /* this side writes the ring (sent ON) / reads it (the peer's ON came) */
	int32_t peer_pid; /* the peer's process, which payloads are pulled from */
};

/* Whether RDMATOOL_SOFT_SHM allows the shared wire ("0": no; unset or "1": yes); -1 for another value. */
int soft_shm_wanted(const char *env);
/* The dialer, once authenticated: SOFT_SHM_OFFER with *out to send, or SOFT_SHM_NONE. */
enum soft_shm_op soft_shm_link_offer(struct soft_shm_link *l, const uint8_t probe[16],
				     struct soft_shm_ctl *out);
/*
 * A CTL packet op (body: NULL when it had none) came: what to send back
 * (SOFT_SHM_NONE: nothing), with *out; -1 when the peer broke the protocol.
 * allow: this side allows the shared wire.
 */
int soft_shm_link_take(struct soft_shm_link *l, bool dialer, bool allow, const uint8_t probe[16], int op,
		       const struct soft_shm_ctl *body, struct soft_shm_ctl *out);
/* ON left (the last TCP packet of this side): the ring is this side's now. */
void soft_shm_link_on_sent(struct soft_shm_link *l);
void soft_shm_link_close(struct soft_shm_link *l);

#endif
