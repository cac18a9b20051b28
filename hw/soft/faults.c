/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Fault injection, RDMATOOL_SOFT_FAULTS="drop=P,corrupt=P,delay_us=N,error=P,seed=N":
 *   drop     probability that a request is lost before the responder sees it
 *            (RC: the requester retransmits after its timeout; UD: gone)
 *   corrupt  probability that delivered payload has one bit flipped, silently
 *   delay_us every request waits N microseconds before it is served (each
 *            on its own: the engine goes on meanwhile, see delay.c)
 *   error    probability that an RC request is refused with REM_OP_ERR
 *   seed     seed of the fault generator (default 1), for reproducible runs
 * Probabilities are in [0, 1].  Only the engine thread draws numbers.
 */
#include "hw/soft/soft.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int soft_parse_prob(const char *key, const char *val, double *out, char *err, size_t errlen)
{
	char *end;
	double p;

	errno = 0;
	p = strtod(val, &end);
	if (errno || end == val || *end || !(p >= 0.0 && p <= 1.0)) {
		snprintf(err, errlen,
			 "RDMATOOL_SOFT_FAULTS: %s=%s is not a probability; use a number from 0 to 1", key,
			 val);
		return EINVAL;
	}
	*out = p;
	return 0;
}

static int soft_parse_uint(const char *key, const char *val, unsigned long long max, unsigned long long *out,
			   char *err, size_t errlen)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(val, &end, 10);
	if (errno || end == val || *end || *val == '-' || v > max) {
		snprintf(err, errlen, "RDMATOOL_SOFT_FAULTS: %s=%s is not a whole number from 0 to %llu", key,
			 val, max);
		return EINVAL;
	}
	*out = v;
	return 0;
}

int soft_faults_parse(const char *spec, struct soft_faults *out, char *err, size_t errlen)
{
	char buf[256];
	unsigned long long v;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	out->rng = 1;
	if (strlen(spec) >= sizeof(buf)) {
		snprintf(err, errlen,
			 "RDMATOOL_SOFT_FAULTS is too long; use drop=P,corrupt=P,delay_us=N,error=P,seed=N");
		return EINVAL;
	}
	strcpy(buf, spec);
	/* Split by hand: strtok_r would skip empty items, and ",,," must be an error, not "no faults". */
	for (char *tok = buf, *next; tok && *spec && !rc; tok = next) {
		next = strchr(tok, ',');
		if (next)
			*next++ = '\0';
		if (!*tok) {
			snprintf(err, errlen,
				 "RDMATOOL_SOFT_FAULTS=%s has an empty item; use a comma-separated list like "
				 "drop=P,corrupt=P,delay_us=N,error=P,seed=N",
				 spec);
			return EINVAL;
		}
		char *eq = strchr(tok, '=');

		if (!eq) {
			snprintf(err, errlen,
				 "RDMATOOL_SOFT_FAULTS: '%s' is not key=value; use "
				 "drop=P,corrupt=P,delay_us=N,error=P,seed=N",
				 tok);
			return EINVAL;
		}
		*eq = '\0';
		if (!strcmp(tok, "drop"))
			rc = soft_parse_prob(tok, eq + 1, &out->drop, err, errlen);
		else if (!strcmp(tok, "corrupt"))
			rc = soft_parse_prob(tok, eq + 1, &out->corrupt, err, errlen);
		else if (!strcmp(tok, "error"))
			rc = soft_parse_prob(tok, eq + 1, &out->error, err, errlen);
		else if (!strcmp(tok, "delay_us")) {
			rc = soft_parse_uint(tok, eq + 1, 10000000, &v, err, errlen);
			out->delay_us = (unsigned)v;
		} else if (!strcmp(tok, "seed")) {
			rc = soft_parse_uint(tok, eq + 1, ~0ull, &v, err, errlen);
			out->rng = v ? v : 1;
		} else {
			snprintf(err, errlen,
				 "RDMATOOL_SOFT_FAULTS: unknown key '%s'; known: drop, corrupt, delay_us, "
				 "error, seed",
				 tok);
			return EINVAL;
		}
	}
	return rc;
}

/* xorshift64*: cheap, and reproducible from the seed. */
bool soft_fault_hit(struct soft_faults *f, double p)
{
	uint64_t x;

	if (p <= 0.0)
		return false;
	x = f->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	f->rng = x;
	return (double)((x * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0 < p;
}
