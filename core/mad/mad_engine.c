/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* MAD window engine: per-worker send/receive loop over shared lock-free windows. */
#include "core/mad/mad_engine.h"
#include "core/util/clock.h"
#include "core/stats/stats.h"
#include "core/mad/mad_slots.h"
#include "core/mad/mad_window.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* Longest poll() while waiting, so a stop request is seen promptly. */
#define MAX_WAIT_MS 50

struct worker {
	struct mad_engine *e;
	int index;
	pthread_t thread;
	bool started;
	struct hw_umad umad;
	struct mad_slots slots;
	struct mad_stats stats;
	struct mad_stats *dest_stats; /* [ndests] */
	uint8_t (*replies)[SMP_DATA_SIZE];
	bool *have_reply;
	int cursor;
	_Atomic uint64_t finished;
	uint64_t end_ns;
	struct stats_entry *counters; /* NULL unless publish_stats */
};

struct mad_engine {
	struct mad_engine_config cfg;
	const struct mad_dest *dests;
	int ndests;
	struct worker *workers;
	struct mad_window local;
	struct mad_window *dest_window;	 /* [ndests] in flight per destination */
	struct mad_window *dest_quota;	 /* [ndests] issued per destination */
	struct mad_window count;
	_Atomic bool stop;
	_Atomic int running;
	pthread_mutex_t done_lock; /* only for mad_engine_wait's sleep, never on the MAD path */
	pthread_cond_t done_cond;
	uint64_t start_ns, end_ns;
	bool started;
};

static uint64_t now_ns(void)
{
	return clock_ns();
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void mad_stats_init(struct mad_stats *s)
{
	memset(s, 0, sizeof(*s));
	hist_init(&s->lat);
}

void mad_stats_count_status(struct mad_stats *s, uint32_t status, uint64_t n)
{
	for (int i = 0; i < MAD_STATUS_KINDS; i++) {
		if (s->by_status[i].count && s->by_status[i].status == status) {
			s->by_status[i].count += n;
			return;
		}
		if (!s->by_status[i].count) {
			s->by_status[i].status = status;
			s->by_status[i].count = n;
			return;
		}
	}
	s->other_status += n;
}

void mad_stats_merge(struct mad_stats *into, const struct mad_stats *from)
{
	into->sent += from->sent;
	into->ok += from->ok;
	into->timeouts += from->timeouts;
	into->errors += from->errors;
	into->retries += from->retries;
	into->late += from->late;
	into->cpu_ns += from->cpu_ns;
	into->other_status += from->other_status;
	for (int i = 0; i < MAD_STATUS_KINDS && from->by_status[i].count; i++)
		mad_stats_count_status(into, from->by_status[i].status, from->by_status[i].count);
	hist_merge(&into->lat, &from->lat);
}

static bool stopping(struct worker *w, uint64_t now)
{
	struct mad_engine *e = w->e;

	if (atomic_load_explicit(&e->stop, memory_order_relaxed))
		return true;
	if (w->end_ns && now >= w->end_ns)
		return true;
	return mad_window_full(&e->count);
}

static int send_slot(struct worker *w, int idx)
{
	struct mad_engine *e = w->e;
	const struct mad_dest *d = &e->dests[w->slots.slot[idx].dest];
	struct smp_request req = {
		.method = e->cfg.method,
		.attr = e->cfg.attr,
		.mod = e->cfg.mod,
		.tid = mad_slots_tid(&w->slots, idx),
		.data = e->cfg.method == SMP_METHOD_SET ? d->set_data : NULL,
	};
	uint8_t mad[SMP_SIZE];

	smp_encode(mad, &d->route, &req);
	return hw_umad_send(&w->umad, d->route.lid, d->route.directed, mad, SMP_SIZE, e->cfg.timeout_ms);
}

/* Gives back the windows a finished MAD held. */
static void finish(struct worker *w, int idx)
{
	struct mad_engine *e = w->e;
	int dest = w->slots.slot[idx].dest;

	mad_slots_release(&w->slots, idx);
	mad_window_release(&e->dest_window[dest]);
	mad_window_release(&e->local);
	atomic_fetch_add_explicit(&w->finished, 1, memory_order_relaxed);
	stats_inc(w->counters, STATS_COMPLETED);
	stats_ring_depth(w->counters, w->slots.nbusy);
}

static void count_error(struct worker *w, int dest, uint32_t status)
{
	w->stats.errors++;
	w->dest_stats[dest].errors++;
	mad_stats_count_status(&w->stats, status, 1);
	mad_stats_count_status(&w->dest_stats[dest], status, 1);
	stats_error(w->counters, (status & MAD_STATUS_UMAD) ? STATS_ERR_LOCAL : STATS_ERR_REMOTE);
}

/* No answer in time (or ETIMEDOUT from below): retransmit while tries are left. */
static void expire(struct worker *w, int idx, uint64_t now)
{
	struct mad_slot *m = &w->slots.slot[idx];
	int dest = m->dest;

	if (m->tries_left > 0 && !stopping(w, now)) {
		m->tries_left--;
		mad_slots_rearm(&w->slots, idx, now, now + (uint64_t)w->e->cfg.timeout_ms * 1000000ull);
		w->stats.retries++;
		w->dest_stats[dest].retries++;
		if (send_slot(w, idx) == 0)
			return;
		count_error(w, dest, MAD_STATUS_UMAD | EIO);
		finish(w, idx);
		return;
	}
	w->stats.timeouts++;
	w->dest_stats[dest].timeouts++;
	stats_error(w->counters, STATS_ERR_TIMEOUT);
	finish(w, idx);
}

/* Finds a destination with room in its window (and quota), round robin. */
static int pick_dest(struct worker *w)
{
	struct mad_engine *e = w->e;

	for (int tried = 0; tried < e->ndests; tried++) {
		int d = w->cursor;

		w->cursor = w->cursor + 1 == e->ndests ? 0 : w->cursor + 1;
		if (!mad_window_acquire(&e->dest_window[d]))
			continue;
		if (e->cfg.per_dest_limit && !mad_window_acquire(&e->dest_quota[d])) {
			mad_window_release(&e->dest_window[d]);
			continue;
		}
		return d;
	}
	return -1;
}

static void fill(struct worker *w, uint64_t now)
{
	struct mad_engine *e = w->e;
	uint64_t deadline = now + (uint64_t)e->cfg.timeout_ms * 1000000ull;

	while (w->slots.nfree && !stopping(w, now)) {
		int d, idx;

		if (!mad_window_acquire(&e->local))
			return;
		if (!mad_window_acquire(&e->count)) {
			mad_window_release(&e->local);
			return;
		}
		d = pick_dest(w);
		if (d < 0) {
			mad_window_release(&e->count);
			mad_window_release(&e->local);
			return;
		}
		idx = mad_slots_take(&w->slots, d, e->cfg.retries, now, deadline);
		w->stats.sent++;
		w->dest_stats[d].sent++;
		stats_inc(w->counters, STATS_POSTED);
		stats_ring_depth(w->counters, w->slots.nbusy);
		if (send_slot(w, idx) != 0) {
			count_error(w, d, MAD_STATUS_UMAD | EIO);
			finish(w, idx);
			return;
		}
	}
}

static void on_reply(struct worker *w, const uint8_t *mad, size_t len, int umad_status, uint64_t now)
{
	struct smp_response r;
	struct mad_slot *m;
	int idx, dest;

	if (smp_decode(mad, len, &r) < 0 || (idx = mad_slots_lookup(&w->slots, r.tid)) < 0) {
		w->stats.late++;
		return;
	}
	m = &w->slots.slot[idx];
	dest = m->dest;
	if (umad_status == ETIMEDOUT) {
		expire(w, idx, now);
		return;
	}
	if (umad_status) {
		count_error(w, dest, MAD_STATUS_UMAD | (uint32_t)umad_status);
	} else if (r.method != SMP_METHOD_GET_RESP) {
		w->stats.late++; /* not a response to anything we sent */
		return;
	} else if (r.status) {
		count_error(w, dest, r.status);
	} else {
		uint64_t lat = now - m->sent_ns;

		w->stats.ok++;
		w->dest_stats[dest].ok++;
		hist_record(&w->stats.lat, lat);
		hist_record(&w->dest_stats[dest].lat, lat);
		if (w->replies) {
			memcpy(w->replies[dest], r.data, SMP_DATA_SIZE);
			w->have_reply[dest] = true;
		}
	}
	finish(w, idx);
}

static int wait_ms(struct worker *w, uint64_t now)
{
	int oldest = mad_slots_oldest(&w->slots);
	uint64_t until = now + MAX_WAIT_MS * 1000000ull;

	if (oldest >= 0 && w->slots.slot[oldest].deadline_ns < until)
		until = w->slots.slot[oldest].deadline_ns;
	if (!w->slots.nbusy && w->end_ns && w->end_ns < until)
		until = w->end_ns;
	if (until <= now)
		return 0;
	return (int)((until - now + 999999) / 1000000);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct mad_engine *e = w->e;
	uint64_t cpu0 = thread_cpu_ns();

	for (;;) {
		uint64_t now = now_ns();
		const uint8_t *mad;
		size_t len;
		int status, oldest;

		fill(w, now);
		if (!w->slots.nbusy && stopping(w, now))
			break;
		if (hw_umad_wait(&w->umad, wait_ms(w, now)) < 0)
			break;
		now = now_ns();
		int received = 0;

		while (hw_umad_recv(&w->umad, &mad, &len, &status) == 0) {
			on_reply(w, mad, len, status, now);
			received++;
		}
		stats_inc(w->counters, STATS_POLLS);
		if (!received)
			stats_inc(w->counters, STATS_EMPTY_POLLS);
		while ((oldest = mad_slots_oldest(&w->slots)) >= 0 && w->slots.slot[oldest].deadline_ns <= now)
			expire(w, oldest, now);
	}
	/* Anything still in flight after an error counts as timed out. */
	while (mad_slots_oldest(&w->slots) >= 0) {
		int idx = mad_slots_oldest(&w->slots);

		w->stats.timeouts++;
		w->dest_stats[w->slots.slot[idx].dest].timeouts++;
		finish(w, idx);
	}
	w->stats.cpu_ns = thread_cpu_ns() - cpu0;
	w->end_ns = now_ns();
	pthread_mutex_lock(&e->done_lock);
	atomic_fetch_sub(&e->running, 1);
	pthread_cond_broadcast(&e->done_cond);
	pthread_mutex_unlock(&e->done_lock);
	return NULL;
}

static void destroy_worker(struct worker *w)
{
	hw_umad_close(&w->umad);
	mad_slots_destroy(&w->slots);
	free(w->dest_stats);
	free(w->replies);
	free(w->have_reply);
	stats_entry_remove(w->counters);
	w->counters = NULL;
}

int mad_engine_create(struct mad_engine **out, const struct mad_engine_config *cfg, const struct mad_dest *dests,
		      int ndests)
{
	struct mad_engine *e;
	int rc = 0;

	*out = NULL;
	if (cfg->workers < 1 || ndests < 1 || cfg->local_window < cfg->workers || cfg->dest_window < 1 ||
	    cfg->timeout_ms < 1 || cfg->retries < 0)
		return -EINVAL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->cfg = *cfg;
	e->dests = dests;
	e->ndests = ndests;
	mad_window_init(&e->local, (uint64_t)cfg->local_window);
	mad_window_init(&e->count, cfg->count);
	atomic_init(&e->stop, false);
	atomic_init(&e->running, 0);
	pthread_mutex_init(&e->done_lock, NULL);
	pthread_cond_init(&e->done_cond, NULL);
	e->dest_window = calloc((size_t)ndests, sizeof(*e->dest_window));
	e->dest_quota = calloc((size_t)ndests, sizeof(*e->dest_quota));
	e->workers = calloc((size_t)cfg->workers, sizeof(*e->workers));
	if (!e->dest_window || !e->dest_quota || !e->workers) {
		mad_engine_destroy(e);
		return -ENOMEM;
	}
	for (int d = 0; d < ndests; d++) {
		mad_window_init(&e->dest_window[d], (uint64_t)cfg->dest_window);
		mad_window_init(&e->dest_quota[d], cfg->per_dest_limit);
	}
	for (int i = 0; i < cfg->workers; i++) {
		struct worker *w = &e->workers[i];
		/* A worker never holds more than its share of -N plus what others leave free. */
		uint32_t cap = (uint32_t)cfg->local_window;

		w->e = e;
		w->index = i;
		w->umad.portid = -1;
		w->cursor = (int)((long)i * ndests / cfg->workers);
		atomic_init(&w->finished, 0);
		mad_stats_init(&w->stats);
		w->dest_stats = malloc((size_t)ndests * sizeof(*w->dest_stats));
		if (cfg->keep_replies) {
			w->replies = calloc((size_t)ndests, SMP_DATA_SIZE);
			w->have_reply = calloc((size_t)ndests, sizeof(bool));
		}
		if (!w->dest_stats || (cfg->keep_replies && (!w->replies || !w->have_reply))) {
			rc = -ENOMEM;
			break;
		}
		for (int d = 0; d < ndests; d++)
			mad_stats_init(&w->dest_stats[d]);
		if (cfg->publish_stats) {
			char name[STATS_NAME_LEN];

			snprintf(name, sizeof(name), "mad worker %d", i);
			w->counters = stats_entry_add(name, STATS_KIND_MADSTRESS_WORKER, i);
		}
		rc = mad_slots_init(&w->slots, cap);
		if (rc)
			break;
		rc = hw_umad_open(&w->umad, &cfg->port);
		if (rc)
			break;
	}
	if (rc) {
		mad_engine_destroy(e);
		return rc;
	}
	*out = e;
	return 0;
}

int mad_engine_start(struct mad_engine *e)
{
	e->start_ns = now_ns();
	e->started = true;
	atomic_store(&e->running, e->cfg.workers);
	for (int i = 0; i < e->cfg.workers; i++) {
		struct worker *w = &e->workers[i];
		int rc;

		w->end_ns = e->cfg.duration_ns ? e->start_ns + e->cfg.duration_ns : 0;
		rc = pthread_create(&w->thread, NULL, worker_main, w);
		if (rc) {
			atomic_store(&e->stop, true);
			atomic_fetch_sub(&e->running, e->cfg.workers - i);
			return -rc;
		}
		w->started = true;
	}
	return 0;
}

bool mad_engine_wait(struct mad_engine *e, int timeout_ms)
{
	struct timespec until;
	bool done;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&e->done_lock);
	while (atomic_load(&e->running) > 0)
		if (pthread_cond_timedwait(&e->done_cond, &e->done_lock, &until) == ETIMEDOUT)
			break;
	done = atomic_load(&e->running) == 0;
	pthread_mutex_unlock(&e->done_lock);
	if (!done)
		return false;
	for (int i = 0; i < e->cfg.workers; i++) {
		struct worker *w = &e->workers[i];

		if (w->started) {
			pthread_join(w->thread, NULL);
			w->started = false;
			if (w->end_ns > e->end_ns)
				e->end_ns = w->end_ns;
		}
	}
	return true;
}

void mad_engine_request_stop(struct mad_engine *e)
{
	atomic_store_explicit(&e->stop, true, memory_order_relaxed);
}

uint64_t mad_engine_finished(struct mad_engine *e)
{
	uint64_t n = 0;

	for (int i = 0; i < e->cfg.workers; i++)
		n += atomic_load_explicit(&e->workers[i].finished, memory_order_relaxed);
	return n;
}

void mad_engine_destroy(struct mad_engine *e)
{
	if (!e)
		return;
	if (e->started) {
		mad_engine_request_stop(e);
		while (!mad_engine_wait(e, 1000))
			;
	}
	for (int i = 0; e->workers && i < e->cfg.workers; i++)
		destroy_worker(&e->workers[i]);
	pthread_mutex_destroy(&e->done_lock);
	pthread_cond_destroy(&e->done_cond);
	free(e->workers);
	free(e->dest_window);
	free(e->dest_quota);
	free(e);
}

double mad_engine_elapsed(const struct mad_engine *e)
{
	return e->end_ns > e->start_ns ? (double)(e->end_ns - e->start_ns) / 1e9 : 0;
}

const struct mad_stats *mad_engine_worker(const struct mad_engine *e, int worker)
{
	return &e->workers[worker].stats;
}

void mad_engine_dest(const struct mad_engine *e, int dest, struct mad_stats *out)
{
	mad_stats_init(out);
	for (int i = 0; i < e->cfg.workers; i++)
		mad_stats_merge(out, &e->workers[i].dest_stats[dest]);
}

void mad_engine_total(const struct mad_engine *e, struct mad_stats *out)
{
	mad_stats_init(out);
	for (int i = 0; i < e->cfg.workers; i++)
		mad_stats_merge(out, &e->workers[i].stats);
}

const uint8_t *mad_engine_reply(const struct mad_engine *e, int dest)
{
	for (int i = 0; i < e->cfg.workers; i++)
		if (e->workers[i].have_reply && e->workers[i].have_reply[dest])
			return e->workers[i].replies[dest];
	return NULL;
}
