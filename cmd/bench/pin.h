/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Pinning the processes of a two-process benchmark each to its own CPU
 * (cmd/bench/pin.c): the pair baselines and the agents of agent_lat; and the
 * sender threads of a bandwidth test with several (cmd/bench/transport.c).
 */
#ifndef RDMATOOL_CMD_BENCH_PIN_H
#define RDMATOOL_CMD_BENCH_PIN_H

#include <sched.h>
#include <stdbool.h>

/* The first two CPUs this process may run on: false when it may run on fewer. */
bool bench_two_cpus(int cpu[2]);
/* The calling process (and the threads it starts later) runs on cpu only. */
void bench_pin_to(int cpu);
/* What the calling thread may run on, and putting it back after a bench_pin_to (false: unknown). */
bool bench_pin_save(cpu_set_t *set);
void bench_pin_restore(const cpu_set_t *set);

#endif
