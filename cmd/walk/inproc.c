/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* In-process walk: one thread per client, updates through mailboxes. */
#include "cmd/walk/bus.h"
#include "cmd/walk/client.h"
#include "cmd/walk/run.h"

#include "cmd/cmd.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

atomic_bool walk_stop;
atomic_int walk_stop_signal;

/* Histories reachable from the crash handler. */
static struct walk_client *volatile crash_clients;
static volatile int crash_nclients;

static void on_stop(int sig)
{
	atomic_store(&walk_stop_signal, sig);
	atomic_store(&walk_stop, true);
}

static void on_crash(int sig)
{
	static const char msg[] = "rdmatool walk: crashed; action history follows\n";
	struct walk_client *c = crash_clients;

	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(128 + sig);
	for (int i = 0; c && i < crash_nclients; i++)
		walk_history_dump(&c[i].hist, STDERR_FILENO, c[i].id);
	signal(sig, SIG_DFL);
	raise(sig);
}

void walk_install_signals(void)
{
	struct sigaction sa;
	static const int crash[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_crash;
	sa.sa_flags = SA_RESETHAND | SA_NODEFER;
	for (size_t i = 0; i < sizeof(crash) / sizeof(crash[0]); i++)
		sigaction(crash[i], &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

void walk_register_crash_histories(struct walk_client *c, int n)
{
	crash_nclients = n;
	crash_clients = c;
}

static void thread_barrier(struct walk_client *c)
{
	pthread_barrier_wait(c->barrier_arg);
}

static atomic_int clients_finished;

static void *client_main(void *arg)
{
	walk_client_run(arg);
	atomic_fetch_add(&clients_finished, 1);
	return NULL;
}

static void show_progress(const struct walk_config *cfg, struct walk_client *c, int n, uint64_t start_ns)
{
	double elapsed = (double)(clock_ns() - start_ns) / 1e9;
	uint64_t steps = 0;
	double frac;
	char bar[41];

	for (int i = 0; i < n; i++)
		steps += atomic_load_explicit(&c[i].live_steps, memory_order_relaxed);
	frac = cfg->steps ? (double)steps / (double)(cfg->steps * (uint64_t)n) : elapsed / cfg->duration_s;
	frac = frac > 1 ? 1 : frac;
	for (int i = 0; i < 40; i++)
		bar[i] = i < (int)(frac * 40) ? '#' : '.';
	bar[40] = '\0';
	fprintf(stderr, "\r[%s] %5.1fs %llu steps", bar, elapsed, (unsigned long long)steps);
}

int walk_run_inproc(const struct walk_config *cfg, struct walk_result *res, const char *cmd)
{
	int n = cfg->clients, rc = 0, started = 0;
	struct walk_client *c = calloc((size_t)n, sizeof(*c));
	struct walk_peer_addr *peers = calloc((size_t)n, sizeof(*peers));
	pthread_t *tid = calloc((size_t)n, sizeof(*tid));
	struct walk_bus *bus = walk_bus_inproc(n);
	pthread_barrier_t barrier;
	uint64_t start;

	if (!c || !peers || !tid || !bus) {
		rc = run_error(cmd, "out of memory for %d clients; use fewer --clients", n);
		goto out;
	}
	pthread_barrier_init(&barrier, NULL, (unsigned)n);
	for (int i = 0; i < n; i++) {
		int err;

		c[i] = (struct walk_client){.id = i,
					    .clients = n,
					    .cfg = cfg,
					    .bus = bus,
					    .peers = peers,
					    .stop = &walk_stop,
					    .barrier = thread_barrier,
					    .barrier_arg = &barrier};
		if ((err = walk_client_open(&c[i]))) {
			rc = run_error(cmd, "client %d cannot open device %s: %s; check 'rdmatool devices'",
				       i, cfg->device ? cfg->device : "(default)", strerror(-err));
			n = i + 1;
			goto close;
		}
		peers[i] = (struct walk_peer_addr){.gid = c[i].gid, .lid = c[i].pattr.lid, .valid = true};
	}
	walk_register_crash_histories(c, n);
	atomic_store(&clients_finished, 0);
	start = clock_ns();
	for (int i = 0; i < n; i++, started++)
		pthread_create(&tid[i], NULL, client_main, &c[i]);
	if (progress_wanted()) {
		while (atomic_load(&clients_finished) < n) {
			show_progress(cfg, c, n, start);
			usleep(200000);
		}
		show_progress(cfg, c, n, start);
		fputc('\n', stderr);
	}
	for (int i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	res->wall_s = (double)(clock_ns() - start) / 1e9;
	for (int i = 0; i < n; i++) {
		res->per_client[i] = c[i].stats;
		walk_stats_merge(&res->total, &c[i].stats);
	}
	for (int i = 0; i < n; i++) {
		if (res->total.nfailures || atomic_load(&walk_stop_signal))
			walk_history_dump(&c[i].hist, STDERR_FILENO, i);
		if (cfg->history_file)
			walk_write_history_file(cfg->history_file, &c[i].hist, i);
	}
	walk_register_crash_histories(NULL, 0);
close:
	pthread_barrier_destroy(&barrier);
	for (int i = 0; i < n; i++) {
		walk_client_close(&c[i]);
		walk_history_free(&c[i].hist);
	}
out:
	walk_bus_free(bus);
	free(tid);
	free(peers);
	free(c);
	return rc;
}
