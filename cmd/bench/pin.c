/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Both ends of a two-process benchmark poll without yielding, as perftest
 * does; left to the scheduler on a busy machine they sometimes share a CPU
 * and each hop waits for the other's time slice (send_lat measured 4.7 us
 * apart, 40-50 us together), which would flatter whatever is compared with
 * the baseline.  So each gets one of the first two CPUs the benchmark may use.
 */
#include "cmd/bench/pin.h"

#include <sched.h>

bool bench_two_cpus(int cpu[2])
{
	cpu_set_t set;
	int found = 0;

	if (sched_getaffinity(0, sizeof(set), &set))
		return false;
	for (int c = 0; c < CPU_SETSIZE && found < 2; c++)
		if (CPU_ISSET(c, &set))
			cpu[found++] = c;
	return found == 2;
}

void bench_pin_to(int cpu)
{
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	sched_setaffinity(0, sizeof(one), &one);
}

bool bench_pin_save(cpu_set_t *set)
{
	return !sched_getaffinity(0, sizeof(*set), set);
}

void bench_pin_restore(const cpu_set_t *set)
{
	sched_setaffinity(0, sizeof(*set), set);
}
