/*
 * eigh_floor.c -- the LAPACK floor of the wide-rank benchmark
 *
 * Times one exact top-k eigendecomposition of a d x d sample covariance
 * (`rows` seeded Gaussian rows, `k` leading directions of larger variance)
 * the way linalg_eigh_top does it: dsytrd, dstemr for the top k, dormtr.
 * Prints the best of three runs, in CPU seconds of this process.
 *
 *   cc -O2 -o eigh_floor eigh_floor.c -llapacke -lopenblas -lm
 *   OPENBLAS_NUM_THREADS=1 ./eigh_floor d rows k
 */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double
cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double
gaussian(unsigned long long *s)
{
	double		u,
				v;

	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	u = ((*s >> 11) + 1.0) / 9007199254740994.0;
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	v = (*s >> 11) / 9007199254740992.0;
	return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

/* One top-k solve of S (destroyed): dsytrd, dstemr, dormtr. */
static double
one_solve(int d, int k, double *S)
{
	double	   *diag = malloc(sizeof(double) * d),
			   *off = malloc(sizeof(double) * d),
			   *tau = malloc(sizeof(double) * d),
			   *w = malloc(sizeof(double) * d),
			   *z = malloc(sizeof(double) * d * k),
				t0 = cpu_now();
	lapack_int	found = 0,
			   *supp = malloc(sizeof(lapack_int) * 2 * k),
				tryrac = 1;

	LAPACKE_dsytrd(LAPACK_COL_MAJOR, 'L', d, S, d, diag, off, tau);
	off[d - 1] = 0.0;
	LAPACKE_dstemr(LAPACK_COL_MAJOR, 'V', 'I', d, diag, off, 0.0, 0.0, d - k + 1, d,
				   &found, w, z, d, k, supp, &tryrac);
	LAPACKE_dormtr(LAPACK_COL_MAJOR, 'L', 'L', 'N', d, k, S, d, tau, z, d);
	t0 = cpu_now() - t0;
	free(diag), free(off), free(tau), free(w), free(z), free(supp);
	return t0;
}

int
main(int argc, char **argv)
{
	int			d = argc > 3 ? atoi(argv[1]) : 1536,
				n = argc > 3 ? atoi(argv[2]) : 2000,
				k = argc > 3 ? atoi(argv[3]) : 256;
	double	   *Y = malloc(sizeof(double) * n * d),
			   *S = malloc(sizeof(double) * d * d),
			   *A = malloc(sizeof(double) * d * d),
				best = 1e30;
	unsigned long long s = 42;

	for (int i = 0; i < n; i++)
		for (int j = 0; j < d; j++)
			Y[(size_t) i * d + j] = gaussian(&s) * (j < k ? 3.0 - 2.0 * j / k : 1.0);
	cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, d, n, 1.0 / n, Y, d, 0.0, S, d);
	for (int run = 0; run < 3; run++)
	{
		double		t;

		memcpy(A, S, sizeof(double) * d * d);
		t = one_solve(d, k, A);
		best = t < best ? t : best;
	}
	printf("%.3f\n", best);
	return 0;
}
