/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "core/transport/stripe.h"
#include "hw/hw.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t p = 2;

	while (p < n)
		p <<= 1;
	return p;
}

int stripe_init(struct stripe *s, const char *label, uint32_t index, struct ibv_pd *pd, struct ibv_cq *cq,
		uint32_t nreqs, uint32_t bounce_size)
{
	char name[32];
	int rc;

	memset(s, 0, sizeof(*s));
	s->index = index;
	s->cq = cq;
	s->nreqs = nreqs;
	s->bounce_size = (bounce_size + 63) & ~63u;
	s->reqs = calloc(nreqs, sizeof(*s->reqs));
	if (!s->reqs)
		return -ENOMEM;
	rc = ring_create(pow2_at_least(nreqs), sizeof(uint32_t), &s->free);
	if (rc)
		return rc;
	if (posix_memalign((void **)&s->bounce, 4096, (size_t)s->bounce_size * nreqs))
		return -ENOMEM;
	memset(s->bounce, 0, (size_t)s->bounce_size * nreqs);
	s->bounce_mr = hw_reg_mr(pd, s->bounce, (size_t)s->bounce_size * nreqs,
				 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	if (!s->bounce_mr)
		return errno ? -errno : -ENOMEM;
	for (uint32_t i = 0; i < nreqs; i++) {
		s->reqs[i].bounce = s->bounce + (size_t)i * s->bounce_size;
		ring_push(s->free, &i, NULL);
	}
	atomic_init(&s->draining, 0);
	if (cq)
		snprintf(name, sizeof(name), "%.15s.stripe%u", label, index);
	else
		snprintf(name, sizeof(name), "%.15s.rx-engine", label);
	s->stats = stats_entry_add(name, STATS_KIND_STRIPE, (int)index);
	return 0;
}

void stripe_fini(struct stripe *s)
{
	if (s->bounce_mr)
		hw_dereg_mr(s->bounce_mr);
	free(s->bounce);
	ring_destroy(s->free);
	free(s->reqs);
	stats_entry_remove(s->stats);
	memset(s, 0, sizeof(*s));
}

struct core_req *stripe_req_alloc(struct stripe *s)
{
	uint32_t i;

	if (ring_pop(s->free, &i))
		return NULL;
	s->reqs[i].mod = MOD_NONE;
	return &s->reqs[i];
}

void stripe_req_free(struct stripe *s, struct core_req *r)
{
	uint32_t i = stripe_req_index(s, r);

	/* The ring holds every index, so it can never be full here. */
	ring_push(s->free, &i, NULL);
}
