/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Optional authentication of the soft wire.  With RDMATOOL_SOFT_SECRET (or
 * RDMATOOL_SOFT_SECRET_FILE, a file only its owner may read) set, both ends
 * of every connection prove they hold the secret before a packet is served:
 *
 *	each side sends   HELLO = "SWAU" | version | 32-byte random nonce
 *	then, having the peer's nonce,
 *	each side sends   PROOF = HMAC-SHA256(secret, "soft-wire" | role |
 *	                                      sender's nonce | receiver's nonce)
 *
 * role is 'C' from the side that connected and 'A' from the side that
 * accepted, so a proof cannot be reflected back to its sender, and the
 * nonces make every proof fresh.  Without a secret the wire trusts every
 * local user, like an unauthenticated RoCE network.
 */
#ifndef RDMATOOL_HW_SOFT_AUTH_H
#define RDMATOOL_HW_SOFT_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SOFT_AUTH_MAGIC	     0x55415753u /* "SWAU" little-endian */
#define SOFT_AUTH_NONCE	     32
#define SOFT_AUTH_HELLO_LEN  (8 + SOFT_AUTH_NONCE)
#define SOFT_AUTH_PROOF_LEN  32
#define SOFT_AUTH_MAX_SECRET 4096

struct soft_auth_key {
	bool on;
	size_t len;
	uint8_t secret[SOFT_AUTH_MAX_SECRET];
};

/* Reads the secret from the environment; 0, or EINVAL with soft_config_fail() called. */
int soft_auth_load(struct soft_auth_key *key);
/* A fresh nonce and the HELLO that carries it. */
void soft_auth_hello(uint8_t nonce[SOFT_AUTH_NONCE], uint8_t hello[SOFT_AUTH_HELLO_LEN]);
/* The peer's nonce from its HELLO; false if it is not one. */
bool soft_auth_parse_hello(const uint8_t hello[SOFT_AUTH_HELLO_LEN], uint8_t nonce[SOFT_AUTH_NONCE]);
/* The proof the side with role ('C' or 'A') sends. */
void soft_auth_proof(const struct soft_auth_key *key, char role, const uint8_t sender_nonce[SOFT_AUTH_NONCE],
		     const uint8_t receiver_nonce[SOFT_AUTH_NONCE], uint8_t proof[SOFT_AUTH_PROOF_LEN]);
/* Whether a received proof is right, in constant time. */
bool soft_auth_check(const struct soft_auth_key *key, char sender_role,
		     const uint8_t sender_nonce[SOFT_AUTH_NONCE],
		     const uint8_t receiver_nonce[SOFT_AUTH_NONCE], const uint8_t proof[SOFT_AUTH_PROOF_LEN]);

#endif
