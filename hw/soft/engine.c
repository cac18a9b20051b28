/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The scheduler: one engine thread per NIC that runs the rounds, each one
 * the doorbelled send queues (the requester, req.c, SOFT_BATCH requests per
 * QP per turn), the timers, the delay line and the wires (whose packets
 * enter through recv.c), and busy-polls RDMATOOL_SOFT_SPIN_US (default 50)
 * after its last work before it sleeps, so a steady stream of doorbells
 * costs no system call on either side; application threads run rounds too
 * (soft_app_round).  It holds obj_lock for reading while it works, so a QP,
 * MR or MW is never freed under it.
 */
#include "hw/soft/soft.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define SOFT_TIMER_TICK_NS  500000   /* timer scan period while work waits on a timer */
#define SOFT_SPIN_NS	    50000    /* busy-poll this long after the last work before sleeping */
#define SOFT_LISTEN_POLL_NS 100000   /* accept period while busy with no connection yet */
#define SOFT_APP_WINDOW_NS  200000   /* application threads drove a round this recently: the engine naps */
#define SOFT_APP_POLLER_NS  200000   /* ... and read the wire this recently: they take the packets */
#define SOFT_APP_LOOP_NS    20000    /* ... and twice within this: a polling loop, not one look */
#define SOFT_IDLE_TICK_NS   20000    /* the engine's longest look away from the wire's timers while idle */
#define SOFT_APP_BUSY_NS    10000000 /* application threads posted or polled over the wire this recently */
#define SOFT_APP_NAP_MAX_NS 1600000  /* the longest nap, reached while application threads keep driving */
#define SOFT_OWN_SLEEP_NS   5000     /* the engine's sleep while an application thread owns the round */

void soft_engine_wake(struct soft_nic *nic)
{
	uint64_t one = 1;

	if (atomic_load(&nic->sleeping)) {
		ssize_t n = write(nic->wake_fd, &one, sizeof(one));

		(void)n;
	}
}

static struct soft_qp *soft_runq_pop(struct soft_nic *nic)
{
	struct soft_qp *qp;

	pthread_mutex_lock(&nic->runq_lock);
	qp = nic->runq_head;
	if (qp) {
		nic->runq_head = qp->run_next;
		if (!nic->runq_head)
			nic->runq_tail = NULL;
		qp->queued = false;
	}
	atomic_store_explicit(&nic->runq_nonempty, nic->runq_head != NULL, memory_order_relaxed);
	pthread_mutex_unlock(&nic->runq_lock);
	return qp;
}

/*
 * Runs the doorbelled QPs; *waiting becomes true when one still waits on a
 * timer or an answer.  Returns whether there was any QP to run.
 */
static bool soft_run_queue(struct soft_nic *nic, bool *waiting)
{
	struct soft_qp *qp, *again[SOFT_MAX_QP];
	int n_again = 0;
	bool ran = false;
	uint64_t now;

	if (!atomic_load_explicit(&nic->runq_nonempty, memory_order_acquire))
		return false;
	/* One clock read per round: timers count in microseconds at the least. */
	now = soft_now_ns();
	pthread_rwlock_rdlock(&nic->obj_lock);
	while ((qp = soft_runq_pop(nic))) {
		bool more;

		ran = true;
		soft_lock(&qp->lock);
		more = soft_qp_progress(qp, now);
		*waiting |= soft_qp_waits(qp);
		soft_unlock(&qp->lock);
		/* Its budget is spent: back to the end of the queue, after this round. */
		if (more && n_again < SOFT_MAX_QP)
			again[n_again++] = qp;
	}
	for (int i = 0; i < n_again; i++)
		soft_ring_doorbell(again[i]);
	pthread_rwlock_unlock(&nic->obj_lock);
	return ran;
}

static bool soft_run_timers(struct soft_nic *nic)
{
	bool waiting = false;
	uint64_t now = soft_now_ns();

	pthread_rwlock_rdlock(&nic->obj_lock);
	for (int i = 0; i < SOFT_MAX_QP; i++) {
		struct soft_qp *qp = nic->qps[i];
		bool more = false;

		if (!qp)
			continue;
		pthread_mutex_lock(&qp->lock);
		if (soft_qp_waits(qp)) {
			more = soft_qp_progress(qp, now);
			waiting |= soft_qp_waits(qp);
		}
		pthread_mutex_unlock(&qp->lock);
		if (more)
			soft_ring_doorbell(qp);
	}
	pthread_rwlock_unlock(&nic->obj_lock);
	return waiting;
}

enum soft_wire_mode {
	SOFT_WIRE_NONE, /* send queues only */
	SOFT_WIRE_POLL, /* poll every socket, listener included */
	SOFT_WIRE_READ, /* read the connections, poll now and then */
};

static bool soft_round_try_own(struct soft_nic *nic)
{
	return atomic_load_explicit(&nic->round_owner, memory_order_relaxed) == 0 &&
	       atomic_exchange_explicit(&nic->round_owner, 1, memory_order_acquire) == 0;
}

/*
 * The engine thread must own the round to sleep or serve what woke it:
 * application rounds are short.  But one may have been preempted mid-round by
 * this very thread (same CPU): the engine then sleeps a few microseconds rather
 * than yields.  A yield leaves it behind a thread that spins on memory after
 * its round for a whole time slice (perftest ib_write_lat -c UC: sched_yield
 * returned after 2-4 ms, each message waited that long); a sleeper, once its
 * timer fires, is woken ahead of it.
 */
static void soft_round_own(struct soft_nic *nic)
{
	for (unsigned i = 1; !soft_round_try_own(nic); i++) {
		if (i % 64) {
			soft_cpu_relax();
		} else {
			struct timespec ts = {.tv_nsec = SOFT_OWN_SLEEP_NS};

			nanosleep(&ts, NULL);
		}
	}
}

static void soft_round_release(struct soft_nic *nic)
{
	atomic_fetch_add_explicit(&nic->rounds, 1, memory_order_seq_cst);
	atomic_store_explicit(&nic->round_owner, 0, memory_order_release);
}

/*
 * One engine round, by the round owner: the doorbelled send queues, the
 * timers when due, the delay line, the wire (poll_wire) and the flush of
 * what the round queued for the wire, one call per connection; a
 * connection holding only ACKs of SENDs waits a little for a request to
 * carry them (soft_wire_flush).  Returns whether there was any work.
 */
static bool soft_round(struct soft_nic *nic, enum soft_wire_mode wire)
{
	bool worked = soft_run_queue(nic, &nic->timer_waiting);
	uint64_t now = soft_now_ns();

	if (nic->timer_waiting && now >= nic->next_tick) {
		nic->timer_waiting = soft_run_timers(nic);
		nic->next_tick = now + SOFT_TIMER_TICK_NS;
	}
	worked |= soft_delay_run(nic, now);
	/*
	 * Connected sockets are polled every round, a lone listener now and
	 * then; an application round reads the connections directly and
	 * polls everything (accepts, handshakes) only now and then.
	 */
	if (wire == SOFT_WIRE_READ && now < nic->next_wire) {
		worked |= soft_wire_read_now(nic);
	} else if (wire != SOFT_WIRE_NONE && (nic->conns || now >= nic->next_wire)) {
		worked |= soft_wire_service(nic);
		nic->next_wire = now + SOFT_LISTEN_POLL_NS;
	}
	soft_wire_flush(nic, false);
	return worked;
}

/* Whether a round left work that has to run later (held ACKs, timers, the delay line). */
static bool soft_round_left_work(const struct soft_nic *nic)
{
	return nic->timer_waiting || soft_wire_holding(nic) || soft_delay_next_ns(nic) ||
	       atomic_load_explicit(&nic->runq_nonempty, memory_order_relaxed);
}

/*
 * Application-driven progress.  Over the wire the engine thread is a hand-
 * off on each side of every message: the poster wakes the engine, which
 * sends; the peer's engine receives and completes, which its poller sees.
 * On a machine with fewer cores than busy threads each hand-off waits for
 * the scheduler.  So a thread that posts to a remote peer, or polls an
 * empty CQ of a NIC with connections, runs the round itself when nobody
 * else does, and the engine thread naps while application threads drive
 * (soft_engine_main).
 */
bool soft_app_round(struct soft_nic *nic, bool poll_wire)
{
	bool worked, left;
	uint64_t now;

	if (!atomic_load_explicit(&nic->n_conns, memory_order_relaxed))
		return false;
	/* Whether or not this thread gets the round, it keeps a CPU busy (soft_apps_busy). */
	now = soft_now_ns();
	if (now - atomic_load_explicit(&nic->app_busy_ns, memory_order_relaxed) > 1000000)
		atomic_store_explicit(&nic->app_busy_ns, now, memory_order_relaxed);
	/* A post ends a polling loop: reads on each side of it are one look each (soft_app_polls_until). */
	if (!poll_wire && atomic_load_explicit(&nic->app_read_ns, memory_order_relaxed))
		atomic_store_explicit(&nic->app_read_ns, 0, memory_order_relaxed);
	if (!soft_round_try_own(nic))
		return false;
	now = soft_now_ns();
	atomic_store_explicit(&nic->app_round_ns, now, memory_order_relaxed);
	if (poll_wire) {
		/* After a post (app_read_ns 0) the first read is one look, the second a loop. */
		atomic_store_explicit(&nic->app_read_prev_ns,
				      atomic_load_explicit(&nic->app_read_ns, memory_order_relaxed),
				      memory_order_relaxed);
		atomic_store_explicit(&nic->app_read_ns, now, memory_order_relaxed);
	}
	worked = soft_round(nic, poll_wire ? SOFT_WIRE_READ : SOFT_WIRE_NONE);
	left = soft_round_left_work(nic);
	soft_round_release(nic);
	/*
	 * Pairs with soft_engine_sleep: either the engine sees this round
	 * (rounds changed) and does not sleep long, or this sees it asleep
	 * and wakes it for what the round left.
	 */
	if (left && atomic_load_explicit(&nic->deep_sleep, memory_order_seq_cst))
		soft_engine_wake(nic);
	return worked;
}

/*
 * Runs the doorbelled send queues now.  It owns at least one round even when
 * the queue looks empty: a round in progress may have taken work off the
 * queue without finishing it, and owning the next round waits it out.
 */
void soft_run_queued(struct soft_nic *nic)
{
	for (unsigned attempt = 1; attempt < 10000; attempt++) {
		if (!soft_round_try_own(nic)) {
			soft_backoff(attempt);
			continue;
		}
		soft_round(nic, SOFT_WIRE_NONE);
		soft_round_release(nic);
		if (!atomic_load(&nic->runq_nonempty))
			break;
	}
}

void soft_apps_leave(struct soft_nic *nic)
{
	if (!atomic_load_explicit(&nic->app_round_ns, memory_order_relaxed))
		return;
	atomic_store_explicit(&nic->app_round_ns, 0, memory_order_relaxed);
	atomic_store_explicit(&nic->app_read_ns, 0, memory_order_relaxed); /* nor does it poll the wire */
	soft_engine_wake(nic);
}

static bool soft_apps_driving(struct soft_nic *nic, uint64_t now)
{
	uint64_t last = atomic_load_explicit(&nic->app_round_ns, memory_order_relaxed);

	return last && now - last < SOFT_APP_WINDOW_NS;
}

/* Application threads posted or polled over the wire lately: a yield would leave the engine behind them. */
static bool soft_apps_busy(struct soft_nic *nic, uint64_t now)
{
	uint64_t last = atomic_load_explicit(&nic->app_busy_ns, memory_order_relaxed);

	return atomic_load_explicit(&nic->n_conns, memory_order_relaxed) && last &&
	       now - last < SOFT_APP_BUSY_NS;
}

static void soft_wake_fd_drain(struct soft_nic *nic)
{
	uint64_t v;
	ssize_t r = read(nic->wake_fd, &v, sizeof(v));

	(void)r;
}

/*
 * Until when an application thread takes the wire's packets itself: one that
 * polls the wire (read it twice within SOFT_APP_LOOP_NS, a polling loop) and
 * did so lately (within SOFT_APP_POLLER_NS).  0 when none does.  A thread that
 * read the wire once and went on with something else (qperf's
 * rc_rdma_write_poll_lat posts, polls its CQ once, then spins on memory) is no
 * poller: the packet it waits for must not wait for it.
 */
static uint64_t soft_app_polls_until(struct soft_nic *nic)
{
	uint64_t last = atomic_load_explicit(&nic->app_read_ns, memory_order_relaxed);
	uint64_t prev = atomic_load_explicit(&nic->app_read_prev_ns, memory_order_relaxed);
	uint64_t gap = last > prev ? last - prev : prev - last; /* two threads may store out of order */

	if (!last || !prev || gap >= SOFT_APP_LOOP_NS)
		return 0;
	return last + SOFT_APP_POLLER_NS;
}

bool soft_engine_watches_wire(struct soft_nic *nic)
{
	return soft_app_polls_until(nic) <= soft_now_ns();
}

/*
 * The engine waits up to nap_ns for a doorbell or a packet, without running
 * rounds: while application threads drive them, the engine thread stays off
 * the CPUs they need; while idle, it sleeps rather than spins.  It watches the
 * wire unless an application thread polls it (soft_app_polls_until, or
 * app_takes_wire: it took the last packet that woke the engine and has read
 * the wire since its last post): a poller takes the packets itself, and
 * waking the engine for them too would only have it compete for the CPUs (on
 * 2 vCPUs, ib_send_lat 6 -> 48 us).  It looks again when that poller's window
 * ends, so a packet that nobody reads waits at most SOFT_APP_POLLER_NS after
 * the last read before a packet wakes the engine; one that arrives while
 * nobody polls wakes it at once.  That is what
 * a target that makes no verbs call while it waits needs (perftest's
 * ib_write_lat -c UC and qperf's rc_rdma_write_poll_lat spin on memory): a NIC
 * serves the WRITE without them.  Returns whether a packet ended the wait;
 * *early, whether a packet or a doorbell did, before nap_ns.
 */
static bool soft_engine_nap(struct soft_nic *nic, bool app_takes_wire, uint64_t nap_ns, bool *early)
{
	struct pollfd pfd[2] = {
	    {.fd = nic->wake_fd, .events = POLLIN},
	    {.fd = soft_wire_fd(nic), .events = POLLIN},
	};
	uint64_t now = soft_now_ns(), end = now + nap_ns;
	bool wire_woke = false;

	/*
	 * Pairs with soft_ring_doorbell (queue, then look at `sleeping`): a
	 * doorbell that missed `sleeping` left its QP queued, and with no
	 * round running the nap does not begin; one that saw it writes the
	 * eventfd.  Queued work while an application thread owns the round is
	 * that thread's, or the next application round's.
	 */
	atomic_store(&nic->sleeping, true);
	*early = atomic_load(&nic->runq_nonempty) &&
		 !atomic_load_explicit(&nic->round_owner, memory_order_relaxed);
	while (!*early && now < end) {
		/*
		 * Until when an application thread takes the packets: one that
		 * polls in a loop, or took a packet the engine woke for and has
		 * read the wire more than once since its last post.
		 */
		uint64_t blind = soft_app_polls_until(nic);
		uint64_t read = atomic_load_explicit(&nic->app_read_ns, memory_order_relaxed);
		bool watch;
		uint64_t until;

		if (app_takes_wire && read &&
		    atomic_load_explicit(&nic->app_read_prev_ns, memory_order_relaxed) &&
		    read + SOFT_APP_POLLER_NS > blind)
			blind = read + SOFT_APP_POLLER_NS;
		watch = blind <= now;
		until = watch || blind > end ? end : blind;
		struct timespec ts = {.tv_sec = (time_t)((until - now) / 1000000000),
				      .tv_nsec = (long)((until - now) % 1000000000)};

		/* Watching the wire: the shared rings must kick us too (owning the round to touch them). */
		bool flagged = watch && soft_round_try_own(nic);

		if (flagged && !soft_wire_sleep(nic, true)) {
			soft_wire_sleep(nic, false);
			atomic_store_explicit(&nic->round_owner, 0, memory_order_release);
			*early = wire_woke = true;
			break;
		}
		if (flagged)
			atomic_store_explicit(&nic->round_owner, 0, memory_order_release);
		*early = ppoll(pfd, watch ? 2 : 1, &ts, NULL) > 0;
		wire_woke = *early && watch && pfd[1].revents;
		if (flagged) {
			soft_round_own(nic);
			soft_wire_sleep(nic, false);
			atomic_store_explicit(&nic->round_owner, 0, memory_order_release);
		}
		now = soft_now_ns();
	}
	if (pfd[0].revents & POLLIN)
		soft_wake_fd_drain(nic);
	atomic_store(&nic->sleeping, false);
	return wire_woke;
}

/*
 * Nothing to do and nobody driving: sleep until a doorbell, a packet, a
 * timer or a held request is due.  Nothing may stay held meanwhile.
 */
static void soft_engine_sleep(struct soft_nic *nic)
{
	struct pollfd pfd[2];
	uint64_t now, rounds;
	int64_t timeout_ns;
	struct timespec ts;
	bool ready;

	soft_round_own(nic);
	soft_wire_flush(nic, true);
	/* The doorbell's eventfd and the wire's epoll set: one fd for every socket, however many. */
	pfd[0] = (struct pollfd){.fd = nic->wake_fd, .events = POLLIN};
	pfd[1] = (struct pollfd){.fd = soft_wire_fd(nic), .events = POLLIN};
	now = soft_now_ns();
	timeout_ns = nic->timer_waiting ? 1000000 : soft_wire_has_deadlines(nic) ? 50000000 : -1;
	if (soft_delay_next_ns(nic)) {
		uint64_t due = soft_delay_next_ns(nic), left = due > now ? due - now : 0;

		if (timeout_ns < 0 || left < (uint64_t)timeout_ns)
			timeout_ns = (int64_t)left;
	}
	if (soft_wire_holding(nic) && (timeout_ns < 0 || timeout_ns > 1000000))
		timeout_ns = 1000000; /* a full ring to a peer: its reader kicks us, this is the backstop */
	/* Peers on the shared rings kick the sleeping engine through its sockets when they write. */
	if (!soft_wire_sleep(nic, true))
		timeout_ns = 0;
	rounds = atomic_load_explicit(&nic->rounds, memory_order_relaxed);
	atomic_store_explicit(&nic->round_owner, 0, memory_order_release);
	atomic_store(&nic->sleeping, true);
	atomic_store_explicit(&nic->deep_sleep, true, memory_order_seq_cst);
	/* A round since we looked (our own release above did not count one), or a doorbell: do not sleep. */
	if (atomic_load(&nic->runq_nonempty) ||
	    atomic_load_explicit(&nic->rounds, memory_order_seq_cst) != rounds)
		timeout_ns = 0;
	ts.tv_sec = timeout_ns / 1000000000;
	ts.tv_nsec = timeout_ns % 1000000000;
	ready = ppoll(pfd, 2, timeout_ns < 0 ? NULL : &ts, NULL) > 0;
	atomic_store(&nic->deep_sleep, false);
	atomic_store(&nic->sleeping, false);
	if (ready && (pfd[0].revents & POLLIN))
		soft_wake_fd_drain(nic);
	soft_round_own(nic);
	soft_wire_sleep(nic, false);
	if (ready && pfd[1].revents)
		soft_wire_service(nic);
	soft_round_release(nic);
}

/*
 * The engine loop.  While work keeps coming it never sleeps: after its last
 * piece of work it busy-polls (yielding the CPU each round) for
 * SOFT_SPIN_NS, so a doorbell then costs no system call and no wake-up.
 * Only then does it announce it is sleeping (nic->sleeping) and block in
 * ppoll(); a doorbell writes the eventfd only on that sleeping edge.  While
 * application threads drive the rounds it naps instead (soft_engine_nap).
 */
static void *soft_engine_main(void *arg)
{
	struct soft_nic *nic = arg;
	uint64_t now, idle_since = soft_now_ns(), nap_ns = SOFT_APP_WINDOW_NS;
	bool app_takes_wire = false, wire_woke = false;

	/* Its waits end on time to the microsecond, not the default 50 us later. */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	while (!atomic_load(&nic->stop)) {
		bool worked = false, holding = false, owned = soft_round_try_own(nic);

		if (owned) {
			worked = soft_round(nic, SOFT_WIRE_POLL);
			holding = soft_wire_holding(nic);
			soft_round_release(nic);
		}
		/*
		 * A packet that woke the engine but was gone when its round read
		 * the wire was taken by an application thread that reads the
		 * wire: while that thread keeps reading, the naps leave the wire
		 * to it (each such wake-up is a context switch on a CPU it needs:
		 * ib_send_lat 10 -> 37 us).  Its next post, or a round of ours
		 * that finds work, ends that.
		 */
		if (worked)
			app_takes_wire = false;
		else if (wire_woke && owned)
			app_takes_wire = true;
		wire_woke = false;
		now = soft_now_ns();
		if (worked) {
			idle_since = now;
		} else if (soft_apps_driving(nic, now)) {
			uint64_t drove = atomic_load_explicit(&nic->app_round_ns, memory_order_relaxed);
			bool early;

			/* An ACK held back for a request to ride with leaves on time. */
			wire_woke = soft_engine_nap(
			    nic, app_takes_wire,
			    holding && nap_ns > SOFT_IDLE_TICK_NS ? SOFT_IDLE_TICK_NS : nap_ns, &early);
			/*
			 * Application threads that drove rounds through a whole nap
			 * did not need the engine: the next nap is twice as long, up
			 * to SOFT_APP_NAP_MAX_NS.  Each nap's end is a wake-up and a
			 * context switch on a CPU they use (measured 2026-11-27, 2
			 * vCPUs where a switch costs ~7 us: bench send_bw 64 KiB from
			 * 2100-2270 to 2950-3150 MiB/s, ib_send_bw +8%).
			 */
			if (!early && atomic_load_explicit(&nic->app_round_ns, memory_order_relaxed) != drove)
				nap_ns = nap_ns * 2 < SOFT_APP_NAP_MAX_NS ? nap_ns * 2 : SOFT_APP_NAP_MAX_NS;
			else
				nap_ns = SOFT_APP_WINDOW_NS;
			idle_since = soft_now_ns();
		} else if (now - idle_since < nic->spin_ns) {
			nap_ns = SOFT_APP_WINDOW_NS;
			if (!soft_apps_busy(nic, now) &&
			    !atomic_load_explicit(&nic->n_conns, memory_order_relaxed)) {
				/* Free when the CPU is ours alone; lets a poster sharing it run. */
				sched_yield();
			} else {
				/*
				 * Application threads that post keep CPUs busy, and may
				 * spin on memory for what the wire brings: a thread that
				 * yields waits behind them, milliseconds on a busy machine,
				 * while the packets wait for it (perftest ib_write_lat -c UC:
				 * 2 ms a message).  A thread asleep on the wire is woken
				 * when a packet arrives.  Short waits: held ACKs and timers
				 * fall due within the spin window.
				 */
				uint64_t left = nic->spin_ns - (now - idle_since);
				bool early;

				wire_woke = soft_engine_nap(
				    nic, app_takes_wire, left < SOFT_IDLE_TICK_NS ? left : SOFT_IDLE_TICK_NS,
				    &early);
			}
		} else {
			soft_engine_sleep(nic);
			idle_since = soft_now_ns();
			nap_ns = SOFT_APP_WINDOW_NS;
		}
	}
	return NULL;
}

/* RDMATOOL_SOFT_SPIN_US: the busy-poll window in microseconds (0 = sleep at once). */
static int soft_spin_parse(const char *spec, uint64_t *ns)
{
	char *end;
	unsigned long long us;

	*ns = SOFT_SPIN_NS;
	if (!spec)
		return 0;
	errno = 0;
	us = strtoull(spec, &end, 10);
	if (errno || end == spec || *end || *spec == '-' || us > 1000000) {
		soft_config_fail(
		    "RDMATOOL_SOFT_SPIN_US=%s is not a whole number of microseconds from 0 to 1000000", spec);
		return EINVAL;
	}
	*ns = us * 1000;
	return 0;
}

int soft_engine_start(struct soft_nic *nic)
{
	if (soft_spin_parse(getenv("RDMATOOL_SOFT_SPIN_US"), &nic->spin_ns))
		return EINVAL;
	nic->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (nic->wake_fd < 0)
		return errno;
	if (pthread_create(&nic->thread, NULL, soft_engine_main, nic)) {
		close(nic->wake_fd);
		nic->wake_fd = -1;
		return EAGAIN;
	}
	return 0;
}

void soft_engine_stop(struct soft_nic *nic)
{
	uint64_t one = 1;
	ssize_t n;

	atomic_store(&nic->stop, true);
	n = write(nic->wake_fd, &one, sizeof(one));
	(void)n;
	pthread_join(nic->thread, NULL);
	close(nic->wake_fd);
	soft_delay_clear(nic);
}
