/*
 * write_floor.c -- the write floor of the thin vector benchmark
 *
 * A thin perpca_stats value of a vector group must hold the group's rows:
 * whatever else it does, the final function writes n x d float4 values (and
 * a mean of 2 d doubles) into a fresh value per group.  This times exactly
 * that: for each of `groups` groups of `per` rows of dimension d, allocate a
 * value of the size of a float4 thin value (24 + 16 d + 4 per d + 8 bytes),
 * copy the rows into it from a source that stays in cache (one group's rows,
 * so the reading is not counted twice: the SQL read floor reads them), write
 * the mean's 2 d doubles, touch it, and free it, as the executor frees a
 * group's result after emitting it.  Prints the best of five runs, in
 * seconds of process CPU time (with "cpu"; else the wall clock).
 *
 *   cc -O2 -o write_floor write_floor.c
 *   ./write_floor d groups per [cpu]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static clockid_t clock_id = CLOCK_MONOTONIC;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(clock_id, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int
main(int argc, char **argv)
{
	int			d, groups, per;
	size_t		rows_bytes, size;
	float	   *src;
	double		best = 1e300, t0;
	volatile double sink = 0;

	if (argc != 4 && !(argc == 5 && strcmp(argv[4], "cpu") == 0))
	{
		fprintf(stderr, "usage: %s d groups per [cpu]\n", argv[0]);
		return 2;
	}
	if (argc == 5)
		clock_id = CLOCK_PROCESS_CPUTIME_ID;
	d = atoi(argv[1]);
	groups = atoi(argv[2]);
	per = atoi(argv[3]);
	rows_bytes = sizeof(float) * (size_t) per * d;
	size = 24 + 16 * (size_t) d + rows_bytes + 8;
	src = malloc(rows_bytes);
	for (size_t i = 0; i < (size_t) per * d; i++)
		src[i] = rand() / (float) RAND_MAX;
	for (int rep = 0; rep < 5; rep++)
	{
		t0 = now();
		for (int g = 0; g < groups; g++)
		{
			char	   *value = malloc(size);
			double	   *mean = (double *) (value + 24);

			for (int j = 0; j < 2 * d; j++)
				mean[j] = j;
			memcpy(value + 24 + 16 * (size_t) d, src, rows_bytes);
			sink += value[size - 9] + mean[d];
			free(value);
		}
		t0 = now() - t0;
		if (t0 < best)
			best = t0;
	}
	printf("%.6f\n", best);
	return sink == -1.0;
}
