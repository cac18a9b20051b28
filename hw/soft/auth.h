/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Authentication of the soft wire, on by default.  Every connection between
 * two soft NICs opens with a mutual challenge-response; until both sides
 * have proved the same key, no packet is parsed, routed or sent on it, and
 * the peer a connection speaks for is the one its handshake proved, never a
 * source GID read from a packet.
 *
 *	each side sends   HELLO = "SWAU" | version 2 | 32-byte random nonce | its port GID
 *	then, having the peer's HELLO,
 *	each side sends   PROOF = HMAC-SHA256(key, "soft-wire/2" | role |
 *	                                      sender's nonce | receiver's nonce |
 *	                                      sender's GID | receiver's GID)
 *
 * role is 'C' from the side that connected and 'A' from the side that
 * accepted, so a proof cannot be reflected back to its sender; the nonces
 * make every proof fresh; the GIDs bind it to the two ports, so a proof
 * cannot be relayed to a third one, and the connecting side refuses an
 * acceptor that is not the port it dialed.
 *
 * The key: RDMATOOL_SOFT_SECRET (the secret itself), else
 * RDMATOOL_SOFT_SECRET_FILE (a file of the user's, mode 0600), else the
 * user's own key ~/.rdmatool/soft-wire.key, made with 32 random bytes on
 * first use: two processes of one user agree on it with no setup.
 *
 * The handshake is a byte protocol with no socket in it (soft_auth_step),
 * so any wire runs it on its own connections before its first packet.
 */
#ifndef RDMATOOL_HW_SOFT_AUTH_H
#define RDMATOOL_HW_SOFT_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SOFT_AUTH_MAGIC	     0x55415753u /* "SWAU" little-endian */
#define SOFT_AUTH_VERSION    2
#define SOFT_AUTH_NONCE	     32
#define SOFT_AUTH_GID	     16
#define SOFT_AUTH_HELLO_LEN  (8 + SOFT_AUTH_NONCE + SOFT_AUTH_GID)
#define SOFT_AUTH_PROOF_LEN  32
#define SOFT_AUTH_MAX_SECRET 4096
#define SOFT_AUTH_KEY_DIR    ".rdmatool"
#define SOFT_AUTH_KEY_NAME   "soft-wire.key"

struct soft_auth_key {
	size_t len;
	uint8_t secret[SOFT_AUTH_MAX_SECRET];
	char source[256]; /* where it came from, for messages: a variable's name or the file */
};

/* Loads (or, the first time, creates) the key; 0, or EINVAL with soft_config_fail() called. */
int soft_auth_load(struct soft_auth_key *key);

enum soft_auth_state {
	SOFT_AUTH_WAIT_HELLO, /* our HELLO is out, the peer's is awaited */
	SOFT_AUTH_WAIT_PROOF, /* our PROOF is out, the peer's is awaited */
	SOFT_AUTH_DONE,	      /* the peer proved the key: packets may flow */
	SOFT_AUTH_FAILED,
};

enum soft_auth_failure {
	SOFT_AUTH_NOT_HELLO = 1, /* not this protocol (or an older rdmatool) */
	SOFT_AUTH_WRONG_PORT,	 /* the acceptor is not the port that was dialed */
	SOFT_AUTH_WRONG_KEY,	 /* the proof does not match our key */
};

/* One side of one connection's handshake. */
struct soft_auth_session {
	enum soft_auth_state state;
	enum soft_auth_failure failure;
	bool connector;
	bool expect_set;
	uint8_t my_nonce[SOFT_AUTH_NONCE], peer_nonce[SOFT_AUTH_NONCE];
	uint8_t self[SOFT_AUTH_GID], peer[SOFT_AUTH_GID], expect[SOFT_AUTH_GID];
};

/*
 * Starts a handshake and fills the HELLO to send first.  expect (the
 * connector's) is the GID the acceptor must claim, or NULL.
 */
void soft_auth_start(struct soft_auth_session *s, bool connector, const uint8_t self[SOFT_AUTH_GID],
		     const uint8_t *expect, uint8_t hello[SOFT_AUTH_HELLO_LEN]);

/*
 * Consumes what it needs of the len bytes received; returns how many.  When
 * *send is set, the PROOF in proof must go out next.  s->state tells
 * whether more input is needed, the peer is proved (s->peer is then its
 * GID), or it failed (s->failure says why); bytes after a DONE are packets.
 */
size_t soft_auth_step(struct soft_auth_session *s, const struct soft_auth_key *key, const uint8_t *in,
		      size_t len, uint8_t proof[SOFT_AUTH_PROOF_LEN], bool *send);

/* A phrase for a failure, for messages. */
const char *soft_auth_failure_str(enum soft_auth_failure f);

#endif
