/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The clients' side of the gateway (gateway_impl.h): posting requests, waiting for answers. */
#include "core/chan/gateway_impl.h"

static void bell_ring(struct gateway *g)
{
	char b = 0;
	ssize_t n;

	if (g->bell_fd < 0)
		return;
	n = sendto(g->bell_fd, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&g->bell, g->bell_len);
	(void)n; /* full: it rings already; refused: the agent is gone, which gw_call notices */
}

/* getpid() is a system call per request otherwise; a forked child forgets the parent's. */
static _Atomic pid_t cached_pid;

static void forget_pid(void)
{
	atomic_store_explicit(&cached_pid, 0, memory_order_relaxed);
}

static void watch_forks(void)
{
	pthread_atfork(NULL, NULL, forget_pid);
}

static pid_t my_pid(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pid_t pid;

	pthread_once(&once, watch_forks);
	pid = atomic_load_explicit(&cached_pid, memory_order_relaxed);
	if (!pid) {
		pid = getpid();
		atomic_store_explicit(&cached_pid, pid, memory_order_relaxed);
	}
	return pid;
}

static bool agent_alive(struct gateway *g)
{
	return atomic_load(&g->s->running) && pidfile_holder(g->dir, g->rank) == g->s->id.pid;
}

bool gw_alive(struct gateway *g)
{
	uint64_t now;

	if (!atomic_load(&g->s->running))
		return false;
	now = clock_ns();
	if (now < g->alive_until_ns)
		return true;
	if (!agent_alive(g))
		return false;
	g->alive_until_ns = now + GW_ALIVE_NS;
	return true;
}

/*
 * How long a client polls for an answer from another node: twice the usual
 * wait, when that is short enough to be worth a CPU; else nothing.  Spinning
 * skips the wake-up, which on a busy machine costs more than the answer
 * (measured: the woken client waited 50-90 us for a CPU).
 */
static uint64_t remote_spin_ns(struct gateway *g)
{
	uint64_t usual = atomic_load_explicit(&g->answer_ns, memory_order_relaxed);

	if (usual > GW_REMOTE_SPIN_MAX_NS)
		return 0;
	return usual * 2 < GW_REMOTE_SPIN_MAX_NS ? usual * 2 : GW_REMOTE_SPIN_MAX_NS;
}

/* One answer's wait into the running average (weight 1/4; one long wait counts as a few short ones). */
static void remote_answer_took(struct gateway *g, uint64_t ns)
{
	uint64_t usual = atomic_load_explicit(&g->answer_ns, memory_order_relaxed);

	if (ns > 4 * GW_REMOTE_SPIN_MAX_NS)
		ns = 4 * GW_REMOTE_SPIN_MAX_NS;
	atomic_store_explicit(&g->answer_ns, usual - usual / 4 + ns / 4, memory_order_relaxed);
}

int gw_post(struct gateway *g, const struct gw_request *req, const void *in, size_t inlen, bool wait,
	    struct gw_posted *p)
{
	struct gw_shared *s = g->s;
	struct gw_slot *sl = NULL;
	pid_t me = my_pid();
	uint64_t start = (uint64_t)me * 2654435761u;

	if (inlen > GW_INLINE)
		return -EMSGSIZE;
	if (!atomic_load(&s->running))
		return -ENOTCONN;
	/*
	 * A slot's data takes memory (pages of the shared file) only where it is
	 * written.  Requests that may carry or be answered with much data use the
	 * first GW_LARGE_SLOTS slots only, so what they can fill stays what those
	 * slots hold; small sends and polls try the others first.
	 */
	bool small = (req->op == GW_OP_SEND && inlen <= GW_SMALL_INLINE) || req->op == GW_OP_POLL;
	uint32_t first = small ? GW_LARGE_SLOTS : 0, n = small ? GW_SLOTS - GW_LARGE_SLOTS : GW_LARGE_SLOTS;
	uint32_t at = (uint32_t)(start % n); /* one division: the scan runs on a busy gateway */

	for (uint32_t i = 0; i < (small ? GW_SLOTS : GW_LARGE_SLOTS) && !sl; i++) {
		uint32_t k = i < n ? first + at : i - n; /* a small request falls back to the large slots */
		struct gw_slot *cand = &s->slots[k];

		if (i < n && ++at == n)
			at = 0;
		uint32_t free_state = SLOT_FREE;

		/* A plain look first: a compare-and-swap on each busy slot takes its line from the agent. */
		if (atomic_load_explicit(&cand->state, memory_order_relaxed) == SLOT_FREE &&
		    atomic_compare_exchange_strong(&cand->state, &free_state, SLOT_CLAIMED))
			sl = cand;
	}
	if (!sl) {
		atomic_fetch_add(&s->eagain, 1);
		return -EAGAIN;
	}
	sl->pid = me;
	sl->req = *req;
	sl->detached = !wait;
	atomic_store(&sl->sleeping, 0);
	sl->status = 0;
	sl->inlen = (uint32_t)inlen;
	sl->outlen = 0;
	sl->spilled = 0;
	if (inlen)
		memcpy(sl->data, in, inlen);
	sl->ticket = atomic_fetch_add(&s->next_ticket, 1);
	atomic_fetch_add(&s->requests, 1);
	atomic_store_explicit(&sl->state, SLOT_READY, memory_order_release);
	atomic_fetch_add(&s->doorbell, 1);
	if (atomic_load(&s->agent_sleeping))
		bell_ring(g);
	p->slot = (uint32_t)(sl - s->slots);
	p->op = req->op;
	p->mode = req->mode;
	p->timeout_ms = req->timeout_ms;
	return 0;
}

int gw_wait(struct gateway *g, const struct gw_posted *p, void *out, size_t cap, size_t *outlen)
{
	struct gw_shared *s = g->s;
	struct gw_slot *sl = &s->slots[p->slot % GW_SLOTS];
	uint64_t deadline;

	deadline = p->timeout_ms < 0 ? 0 : clock_ns() + ((uint64_t)p->timeout_ms + 1000) * 1000000ull;
	/* Checking the agent costs system calls: only once a wait of 100 ms passed without an answer. */
	bool check = false;
	bool remote_answer = p->op != GW_OP_SEND || p->mode > AGENT_SEND_BUFFERED;
	int spins = 0;
	uint64_t wait_start = clock_ns(), spin_ns = remote_spin_ns(g);

	for (;;) {
		uint32_t st = atomic_load_explicit(&sl->state, memory_order_acquire);

		if (st == SLOT_DONE) {
			int rc = sl->status;
			size_t n = sl->outlen > cap ? cap : sl->outlen;

			if (sl->spilled) {
				char path[SPILL_PATH_MAX];
				uint64_t len = sl->spill_len;

				gw_spill_path(path, sizeof(path), g->dir, g->rank, (uint32_t)(sl - s->slots),
					      sl->ticket);
				rc = gw_spill_read(path, out, cap, len);
				if (!rc && len > cap)
					rc = -EMSGSIZE;
				n = 0;
				if (outlen)
					*outlen = (size_t)len;
			} else if (outlen) {
				*outlen = sl->outlen;
			}
			if (n)
				memcpy(out, sl->data, n);
			atomic_store_explicit(&sl->state, SLOT_FREE, memory_order_release);
			if (remote_answer)
				remote_answer_took(g, clock_ns() - wait_start);
			return rc;
		}
		uint64_t now = clock_ns();
		/* Wake every 100 ms to check the agent is still there. */
		uint64_t until = now + 100000000ull;
		bool dead = check && !agent_alive(g), late = deadline && now >= deadline;

		if (dead || late) {
			uint32_t ready = SLOT_READY, busy = SLOT_BUSY;

			if (atomic_compare_exchange_strong(&sl->state, &ready, SLOT_FREE))
				return dead ? -ENOTCONN : -ETIMEDOUT;
			/*
			 * A receive the agent took on stays: its answer may carry a message already taken
			 * from the channel, which giving up would lose.  The agent answers by the request's
			 * own timeout, or fails it when the link goes down.
			 */
			if (!dead && p->op == GW_OP_RECV) {
				deadline = 0;
				continue;
			}
			if (atomic_compare_exchange_strong(&sl->state, &busy, SLOT_ABANDONED))
				return dead ? -ECONNABORTED : -ETIMEDOUT;
			continue; /* it just became DONE */
		}
		if (deadline && deadline < until)
			until = deadline;
		/*
		 * The local agent alone usually answers within a few of its passes, another node
		 * within the usual wait: yield meanwhile, and sleep only when that is over.  A
		 * yield that gave the CPU to another thread says this CPU is shared: polling on it
		 * only takes turns with the threads that make the answer, so sleep instead.
		 */
		if (remote_answer ? now - wait_start < spin_ns : spins++ < GW_CALL_SPINS) {
			sched_yield();
			if (remote_answer && clock_ns() - now > GW_YIELD_SHARED_NS)
				spin_ns = 0;
			continue;
		}
		atomic_store(&sl->sleeping, 1);
		if (atomic_load(&sl->state) != st)
			continue;
		check = futex_wait_until(&sl->state, st, until) == -ETIMEDOUT || !atomic_load(&s->running);
	}
}

int gw_call(struct gateway *g, const struct gw_request *req, const void *in, size_t inlen, void *out,
	    size_t cap, size_t *outlen, bool wait)
{
	struct gw_posted p;
	int rc = gw_post(g, req, in, inlen, wait, &p);

	return rc || !wait ? rc : gw_wait(g, &p, out, cap, outlen);
}
