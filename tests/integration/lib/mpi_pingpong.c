// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * mpi_pingpong: two ranks, a ping-pong from 8 B to 4 MiB (each size twice the
 * last) whose data is checked on every message (a pattern of size,
 * iteration and sender).  Rank 0 prints "SIZE LAT_US BW_MBPS" per size:
 * the half round trip, and the bandwidth of a window of non-blocking sends
 * (exec_mpi.sh compares transports with it).  Exit 1 on a wrong byte.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZE (4u << 20)
#define WINDOW	 16
#define WARMUP	 5

static void fill(uint8_t *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed * 31u + i * 7u + (i >> 8));
}

static int check(const uint8_t *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != (uint8_t)(seed * 31u + i * 7u + (i >> 8)))
			return -1;
	return 0;
}

int main(int argc, char **argv)
{
	int rank, size, bad = 0, iters_small = argc > 1 ? atoi(argv[1]) : 200;
	uint8_t *sbuf, *rbuf;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2) {
		if (!rank)
			fprintf(stderr, "mpi_pingpong: run it with 2 ranks\n");
		MPI_Finalize();
		return 2;
	}
	sbuf = malloc(MAX_SIZE * WINDOW);
	rbuf = malloc(MAX_SIZE * WINDOW);
	if (!sbuf || !rbuf)
		MPI_Abort(MPI_COMM_WORLD, 2);
	if (!rank)
		printf("%10s %12s %12s\n", "bytes", "lat_us", "bw_MB/s");
	for (size_t len = 8; len <= MAX_SIZE; len *= 2) {
		int iters = len >= (1u << 20) ? 5 : len >= 32768 ? 20 : iters_small;
		int peer = 1 - rank;
		double t0 = 0, lat, bw;

		/* Ping-pong, every message checked; the first WARMUP round trips are not timed. */
		MPI_Barrier(MPI_COMM_WORLD);
		for (int i = -WARMUP; i < iters; i++) {
			unsigned seed = (unsigned)(len + (size_t)(i + WARMUP) * 2);

			if (!rank) {
				fill(sbuf, len, seed);
				MPI_Send(sbuf, (int)len, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
				MPI_Recv(rbuf, (int)len, MPI_BYTE, peer, 2, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				bad |= check(rbuf, len, seed + 1);
			} else {
				MPI_Recv(rbuf, (int)len, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				bad |= check(rbuf, len, seed);
				fill(sbuf, len, seed + 1);
				MPI_Send(sbuf, (int)len, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
			}
			if (i == -1)
				t0 = MPI_Wtime();
		}
		lat = (MPI_Wtime() - t0) / iters / 2 * 1e6;
		/* Bandwidth: windows of WINDOW messages, acknowledged by one byte. */
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (int i = 0; i < iters; i++) {
			MPI_Request req[WINDOW];

			for (int w = 0; w < WINDOW; w++) {
				if (!rank) {
					fill(sbuf + w * len, len < 64 ? len : 64, (unsigned)(i * WINDOW + w));
					MPI_Isend(sbuf + w * len, (int)len, MPI_BYTE, peer, 3, MPI_COMM_WORLD,
						  &req[w]);
				} else {
					MPI_Irecv(rbuf + w * len, (int)len, MPI_BYTE, peer, 3, MPI_COMM_WORLD,
						  &req[w]);
				}
			}
			MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
			if (rank)
				for (int w = 0; w < WINDOW; w++)
					bad |= check(rbuf + w * len, len < 64 ? len : 64,
						     (unsigned)(i * WINDOW + w));
			if (!rank)
				MPI_Recv(rbuf, 1, MPI_BYTE, peer, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			else
				MPI_Send(sbuf, 1, MPI_BYTE, peer, 4, MPI_COMM_WORLD);
		}
		bw = (double)len * WINDOW * iters / (MPI_Wtime() - t0) / 1e6;
		if (!rank)
			printf("%10zu %12.2f %12.1f\n", len, lat, bw);
	}
	MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD);
	if (!rank)
		printf("data %s\n", bad ? "CORRUPT" : "ok");
	free(sbuf);
	free(rbuf);
	MPI_Finalize();
	return bad ? 1 : 0;
}
