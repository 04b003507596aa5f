/*
 * dense_read.c -- what one product S X costs with a dense symmetric d x d S
 * (bench/flat_bench.sh, the flat-spectrum fit: its rounds are such products at
 * d = 4096, where S is 134 MB and each product is bound by reading it)
 *
 * Times, for each block width k, the product S X (X d x k, row-major as in
 * src/linalg.c) by
 *   gemm     cblas_dgemm on the full S, untransposed (what client_apply does)
 *   gemm_t   cblas_dgemm on the full S, transposed (the same values: S = S')
 *   symm     cblas_dsymm on S's upper triangle (reads half of S, in theory)
 *   blocked  cblas_dgemm over row panels of S of `panel` rows (each panel
 *            meets all k columns of X while it is in cache)
 *   half     src/linalg.c's linalg_symm_half: dgemm over the upper
 *            triangle's panel x panel blocks only, each used twice while in
 *            cache (S_IJ X_J into Y_I, S_IJ' X_I into Y_J): half of S is read
 * and prints the best of nine runs in ms, and ms per column.  The point:
 * whether two products of k1 and k2 columns cost more than one of k1 + k2
 * (a product that only streams S costs about the same for 5 or 26 columns).
 *
 *   cc -O2 -Isrc -o dense_read bench/dense_read.c src/linalg.c -lopenblas -llapacke -lm
 *   OPENBLAS_NUM_THREADS=1 ./dense_read [d] [panel]
 */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "linalg.h"

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void
product(int how, int d, int k, int panel, const double *S, const double *X, double *Y)
{
	switch (how)
	{
		case 0:
			cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, k, d, 1.0, S, d, X, k,
						0.0, Y, k);
			break;
		case 1:
			cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d, k, d, 1.0, S, d, X, k,
						0.0, Y, k);
			break;
		case 2:
			cblas_dsymm(CblasRowMajor, CblasLeft, CblasUpper, d, k, 1.0, S, d, X, k, 0.0, Y, k);
			break;
		case 4:
			/* the product client_apply uses from HALF_READ_DIM (src/linalg.c) */
			linalg_symm_half(d, k, S, X, Y, panel);
			break;
		default:
			for (int i = 0; i < d; i += panel)
			{
				int			m = d - i < panel ? d - i : panel;

				cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, k, d, 1.0,
							S + (long) i * d, d, X, k, 0.0, Y + (long) i * k, k);
			}
			break;
	}
}

int
main(int argc, char **argv)
{
	int			d = argc > 1 ? atoi(argv[1]) : 4096;
	int			panel = argc > 2 ? atoi(argv[2]) : 256;
	int			widths[] = {1, 5, 8, 13, 18, 26, 39};
	const char *names[] = {"gemm", "gemm_t", "symm", "blocked", "half"};
	double	   *S = malloc(sizeof(double) * d * d),
			   *X = malloc(sizeof(double) * d * 39),
			   *Y = malloc(sizeof(double) * d * 39);

	srand(34);
	for (long i = 0; i < (long) d * d; i++)
		S[i] = 0.0;
	for (int i = 0; i < d; i++)
		for (int j = 0; j <= i; j++)
			S[(long) i * d + j] = S[(long) j * d + i] = rand() / (double) RAND_MAX - 0.5;
	for (long i = 0; i < (long) d * 39; i++)
		X[i] = rand() / (double) RAND_MAX - 0.5;
	printf("d = %d (S %.0f MB), panel %d rows; best of 9, ms (ms per column)\n", d,
		   8.0 * d * d / 1e6, panel);
	printf("%4s", "k");
	for (int h = 0; h < 5; h++)
		printf(" %18s", names[h]);
	printf("\n");
	for (int w = 0; w < (int) (sizeof(widths) / sizeof(widths[0])); w++)
	{
		int			k = widths[w];

		printf("%4d", k);
		for (int h = 0; h < 5; h++)
		{
			double		best = 1e30;

			for (int rep = 0; rep < 9; rep++)
			{
				double		t0 = now();

				product(h, d, k, panel, S, X, Y);
				if (now() - t0 < best)
					best = now() - t0;
			}
			printf("      %6.1f (%5.2f)", 1e3 * best, 1e3 * best / k);
		}
		printf("\n");
	}
	{
		/* the half-read product equals the full one to rounding */
		double	   *Z = malloc(sizeof(double) * d * 39),
					diff = 0.0;

		product(0, d, 39, panel, S, X, Y);
		product(4, d, 39, panel, S, X, Z);
		for (long i = 0; i < (long) d * 39; i++)
			diff = fabs(Y[i] - Z[i]) > diff ? fabs(Y[i] - Z[i]) : diff;
		printf("half vs gemm: largest difference %.3g\n", diff);
		free(Z);
	}
	free(S);
	free(X);
	free(Y);
	return 0;
}
