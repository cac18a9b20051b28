/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Prints how long one cache line takes to go from the first CPU this process
 * may use to the second and back (nanoseconds, the median of 9 batches).
 * make bench prints it next to msg_rate: on this virtual machine the host
 * sometimes places the two virtual CPUs close (about 110 ns) and sometimes
 * far apart (about 400 ns), and every line the sending threads, the device's
 * engine and the receiver share costs that much more.  The striped/global
 * ratio follows (measured on 2026-11-26: 1.6-1.9 close, 1.0-1.2 far; 1.45-1.6
 * far once posting threads drained mostly their own stripes).
 */
#include "cmd/bench/pin.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ROUND_TRIPS 20000
#define BATCHES	    9

static _Alignas(64) _Atomic int ball; /* 1: the far CPU's turn, 0: ours */
static int cpus[2];

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void *far_side(void *arg)
{
	(void)arg;
	bench_pin_to(cpus[1]);
	for (int i = 0; i < ROUND_TRIPS * BATCHES; i++) {
		while (atomic_load_explicit(&ball, memory_order_acquire) != 1)
			;
		atomic_store_explicit(&ball, 0, memory_order_release);
	}
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(void)
{
	double batch[BATCHES];
	pthread_t t;

	if (!bench_two_cpus(cpus)) {
		fprintf(stderr, "cpu_line_rtt: needs two CPUs\n");
		return 1;
	}
	bench_pin_to(cpus[0]);
	if (pthread_create(&t, NULL, far_side, NULL))
		return 1;
	for (int b = 0; b < BATCHES; b++) {
		double t0 = now_ns();

		for (int i = 0; i < ROUND_TRIPS; i++) {
			atomic_store_explicit(&ball, 1, memory_order_release);
			while (atomic_load_explicit(&ball, memory_order_acquire) != 0)
				;
		}
		batch[b] = (now_ns() - t0) / ROUND_TRIPS;
	}
	pthread_join(t, NULL);
	qsort(batch, BATCHES, sizeof(batch[0]), cmp_double);
	printf("%.0f\n", batch[BATCHES / 2]);
	return 0;
}
