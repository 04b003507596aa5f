/*
 * dsyrk_floor.c -- the BLAS floor for the statistics benchmark
 *
 * Times a plain single-threaded blocked rank-k update (cblas_dsyrk) over
 * `rows` random rows of dimension d split into `groups` groups, one d x d
 * accumulator per group, in blocks of `block` rows: the arithmetic that
 * perpca_stats cannot avoid.  Prints the best of five runs, in seconds.  With block = 1 it
 * times per-row rank-1 updates (cblas_dsyr) instead, for comparison.
 *
 *   cc -O2 -o dsyrk_floor dsyrk_floor.c -lopenblas
 *   OPENBLAS_NUM_THREADS=1 ./dsyrk_floor d rows groups block [cpu]
 *
 * With "cpu" it times the process's CPU time instead of the wall clock.
 */
#include <cblas.h>
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
	int			d, groups, block;
	long		rows, per_group;
	double	   *x, *c, t0, best;

	if (argc != 5 && !(argc == 6 && strcmp(argv[5], "cpu") == 0))
	{
		fprintf(stderr, "usage: %s d rows groups block [cpu]\n", argv[0]);
		return 2;
	}
	if (argc == 6)
		clock_id = CLOCK_PROCESS_CPUTIME_ID;
	d = atoi(argv[1]);
	rows = atol(argv[2]);
	groups = atoi(argv[3]);
	block = atoi(argv[4]);
	per_group = rows / groups;
	openblas_set_num_threads(1);
	x = malloc(sizeof(double) * block * d);
	c = calloc((size_t) groups * d * d, sizeof(double));
	for (long i = 0; i < (long) block * d; i++)
		x[i] = rand() / (double) RAND_MAX;
	best = 1e300;
	for (int rep = 0; rep < 5; rep++)	/* best of five, like the SQL timings */
	{
		t0 = now();
		for (int g = 0; g < groups; g++)
			for (long done = 0; done < per_group; done += block)
			{
				int			k = per_group - done < block ? (int) (per_group - done) : block;

				if (block == 1)
					cblas_dsyr(CblasRowMajor, CblasUpper, d, 1.0, x, 1, c + (size_t) g * d * d, d);
				else
					cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, d, k, 1.0, x, d, 1.0,
								c + (size_t) g * d * d, d);
			}
		if (now() - t0 < best)
			best = now() - t0;
	}
	printf("%.4f\n", best);
	free(x);
	free(c);
	return 0;
}
