/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The secret agents prove to each other before a link carries anything, as
 * Erlang nodes do with ~/.erlang.cookie: $RDMATOOL_AGENT_KEY names the file,
 * else ~/.rdmatool-agent.key, created with 32 random bytes (mode 0600) on
 * first use, atomically (a complete temporary file linked to the name, which
 * never replaces one), so agents starting at once agree on one key.  The
 * link key is HKDF-SHA256 of the file's bytes (libcrypto's).  Agents of one user on machines that
 * share the home directory agree without setup; elsewhere, copy the file.  A key file that is a symlink, not
 * the user's, or readable by others is refused.
 */
#ifndef RDMATOOL_CORE_AGENT_KEY_H
#define RDMATOOL_CORE_AGENT_KEY_H

#include <stddef.h>

#define AGENT_KEY_ENV "RDMATOOL_AGENT_KEY"
#define AGENT_KEY_LEN 32

/* Loads (or creates) the key; 0, or a negative errno with why filled. */
int agent_key_load(unsigned char key[AGENT_KEY_LEN], char *why, size_t whylen);

#endif
