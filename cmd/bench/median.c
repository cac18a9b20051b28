/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The median of a set of rounds' figures (bench.h). */
#include "cmd/bench/bench.h"

#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
	if (n < 1)
		return 0;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
