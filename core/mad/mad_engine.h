/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The MAD window engine behind `rdmatool madstress` (after the
 * smp_mad_stress tool): workers, each with its own umad fd and SMI agents, keep
 * up to local_window SMPs in flight from the port (all workers together)
 * and up to dest_window per destination, round robin over the
 * destinations; each worker sends and receives from its own thread with
 * poll().  Timeouts and retries are tracked here with CLOCK_MONOTONIC; a
 * response with umad status ETIMEDOUT (the kernel's, or ibsim's for a
 * dropped MAD) counts as a timeout; late and duplicate responses are
 * counted and ignored.  Nothing here prints.
 */
#ifndef RDMATOOL_CORE_MAD_ENGINE_H
#define RDMATOOL_CORE_MAD_ENGINE_H

#include "hw/umad.h"
#include "core/util/histogram.h"
#include "core/mad/mad_smp.h"

#include <stdbool.h>
#include <stdint.h>

#define MAD_STATUS_KINDS 8
/* Keys of mad_stats.by_status at or above this are umad (transport) errnos. */
#define MAD_STATUS_UMAD 0x10000u

struct mad_dest {
	struct smp_route route;
	uint8_t set_data[SMP_DATA_SIZE]; /* what a SET writes */
};

struct mad_status_count {
	uint32_t status;
	uint64_t count;
};

/*
 * sent counts MADs issued (a retransmission is not a new MAD: retries
 * counts those); every sent MAD ends as exactly one of ok, timeouts or
 * errors, so after a run sent == ok + timeouts + errors.
 */
struct mad_stats {
	uint64_t sent, ok, timeouts, errors, retries, late;
	struct mad_status_count by_status[MAD_STATUS_KINDS];
	uint64_t other_status; /* errors whose status did not fit by_status */
	struct histogram lat;  /* ns, successful MADs only */
	uint64_t cpu_ns;       /* worker threads only */
};

struct mad_engine_config {
	struct hw_umad_port_info port;
	int workers;
	int local_window; /* -N */
	int dest_window;  /* -n */
	int timeout_ms;
	int retries;
	uint8_t method;
	uint16_t attr;
	uint32_t mod;
	uint64_t duration_ns;	 /* 0 = no time limit */
	uint64_t count;		 /* MADs to send in all; 0 = no limit */
	uint32_t per_dest_limit; /* MADs per destination; 0 = no limit */
	bool keep_replies;	 /* remember each destination's last good reply */
	bool publish_stats;	 /* one stats-segment row per worker, for cqstat */
};

struct mad_engine;

/*
 * Opens one umad handle per worker.  Returns 0 or -errno (from libibumad;
 * -EINVAL for a bad configuration).  dests must outlive the engine.
 */
int mad_engine_create(struct mad_engine **out, const struct mad_engine_config *cfg, const struct mad_dest *dests,
		      int ndests);
int mad_engine_start(struct mad_engine *e);
/* Waits up to timeout_ms for every worker to finish; true when they have. */
bool mad_engine_wait(struct mad_engine *e, int timeout_ms);
/* Asks the workers to stop sending and drain (async-signal-safe). */
void mad_engine_request_stop(struct mad_engine *e);
/* MADs finished so far, all workers together (for progress). */
uint64_t mad_engine_finished(struct mad_engine *e);
/* Unregisters the agents, closes the ports, frees everything. */
void mad_engine_destroy(struct mad_engine *e);

/* After mad_engine_wait returned true: */
double mad_engine_elapsed(const struct mad_engine *e); /* seconds from start to the last worker's end */
const struct mad_stats *mad_engine_worker(const struct mad_engine *e, int worker);
/* Per destination, merged over workers into *out. */
void mad_engine_dest(const struct mad_engine *e, int dest, struct mad_stats *out);
/* Everything merged. */
void mad_engine_total(const struct mad_engine *e, struct mad_stats *out);
/* The last good reply's data for dest, or NULL (keep_replies only). */
const uint8_t *mad_engine_reply(const struct mad_engine *e, int dest);

void mad_stats_init(struct mad_stats *s);
void mad_stats_merge(struct mad_stats *into, const struct mad_stats *from);
void mad_stats_count_status(struct mad_stats *s, uint32_t status, uint64_t n);

#endif
