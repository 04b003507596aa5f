/*
 * fd_shrink_bench.c -- one Frequent-Directions shrink of a 2 ell x d buffer
 * to ell rows, two ways (what src/sketch.c chose between):
 *   gram: G = Buf Buf^T (dsyrk), dsyevd of G, B = diag(sqrt(1 - dt/lambda)) V^T Buf (dgemm);
 *   svd:  dgesdd of Buf (thin), B = diag(sqrt(sigma^2 - dt)) V^T.
 * Prints the CPU time of each (best of REPS) and how far apart the two
 * results are: ||B_g^T B_g - B_s^T B_s||_F / ||Buf||_F^2 (from ell x ell
 * products, no d x d matrix), on a buffer with a decaying spectrum.
 *
 *   cc -O2 -o fd_shrink_bench fd_shrink_bench.c -lopenblas -llapacke
 *   OPENBLAS_NUM_THREADS=1 ./fd_shrink_bench ell d [reps]
 */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double
cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double
gaussian(void)
{
	double		u = (rand() + 1.0) / (RAND_MAX + 2.0),
				v = (rand() + 1.0) / (RAND_MAX + 2.0);

	return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

/* B (ell x d) from the Gram route. */
static void
shrink_gram(int m, int ell, int d, const double *buf, double *B, double *G, double *w, double *W)
{
	double		dt;

	cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, m, d, 1.0, buf, d, 0.0, G, m);
	LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'U', m, G, m, w);
	/* row-major: eigenvector j is column j of G */
	dt = w[m - ell - 1];
	for (int i = 0; i < ell; i++)
	{
		double		lambda = w[m - 1 - i],
					s = lambda > dt ? sqrt(1 - dt / lambda) : 0;

		for (int j = 0; j < m; j++)
			W[i * m + j] = s * G[j * m + (m - 1 - i)];
	}
	cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ell, d, m, 1.0, W, m, buf, d, 0.0, B, d);
}

/* B (ell x d) from the SVD route (buf destroyed). */
static void
shrink_svd(int m, int ell, int d, double *buf, double *B, double *U, double *s, double *VT)
{
	double		dt;

	LAPACKE_dgesdd(LAPACK_ROW_MAJOR, 'S', m, d, buf, d, s, U, m, VT, d);
	dt = s[ell] * s[ell];
	for (int i = 0; i < ell; i++)
	{
		double		f = s[i] * s[i] > dt ? sqrt(s[i] * s[i] - dt) : 0;

		for (int j = 0; j < d; j++)
			B[(long) i * d + j] = f * VT[(long) i * d + j];
	}
}

/* ||P^T P - Q^T Q||_F^2 = ||P P^T||^2 + ||Q Q^T||^2 - 2 ||P Q^T||^2 (ell x ell products). */
static double
gap(int ell, int d, const double *P, const double *Q)
{
	double	   *C = malloc(sizeof(double) * ell * ell);
	double		t = 0;
	const double *pairs[3][2] = {{P, P}, {Q, Q}, {P, Q}};
	double		sign[3] = {1, 1, -2};

	for (int k = 0; k < 3; k++)
	{
		double		f = 0;

		cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, ell, ell, d, 1.0,
					pairs[k][0], d, pairs[k][1], d, 0.0, C, ell);
		for (int i = 0; i < ell * ell; i++)
			f += C[i] * C[i];
		t += sign[k] * f;
	}
	free(C);
	return sqrt(fabs(t));
}

int
main(int argc, char **argv)
{
	int			ell = argc > 1 ? atoi(argv[1]) : 64,
				d = argc > 2 ? atoi(argv[2]) : 1536,
				reps = argc > 3 ? atoi(argv[3]) : 5,
				m = 2 * ell;
	double	   *buf = malloc(sizeof(double) * m * d),
			   *copy = malloc(sizeof(double) * m * d),
			   *Bg = malloc(sizeof(double) * ell * d),
			   *Bs = malloc(sizeof(double) * ell * d),
			   *G = malloc(sizeof(double) * m * m),
			   *w = malloc(sizeof(double) * m),
			   *W = malloc(sizeof(double) * ell * m),
			   *U = malloc(sizeof(double) * m * m),
			   *VT = malloc(sizeof(double) * m * d);
	double		best_g = 1e9,
				best_s = 1e9,
				norm2 = 0;

	srand(38);
	for (int i = 0; i < m; i++)
		for (int j = 0; j < d; j++)
			buf[(long) i * d + j] = gaussian() * (1.0 + 10.0 * pow(0.9, i)) * (1 + (j % 7));
	for (long i = 0; i < (long) m * d; i++)
		norm2 += buf[i] * buf[i];
	for (int r = 0; r < reps; r++)
	{
		double		t = cpu_seconds();

		shrink_gram(m, ell, d, buf, Bg, G, w, W);
		t = cpu_seconds() - t;
		best_g = t < best_g ? t : best_g;
		memcpy(copy, buf, sizeof(double) * m * d);
		t = cpu_seconds();
		shrink_svd(m, ell, d, copy, Bs, U, w, VT);
		t = cpu_seconds() - t;
		best_s = t < best_s ? t : best_s;
	}
	printf("ell=%d d=%d  gram (dsyrk+dsyevd+dgemm) %.2f ms  svd (dgesdd) %.2f ms  svd/gram %.1fx  "
		   "|B'B gram - B'B svd|_F / |Buf|_F^2 = %.1e\n",
		   ell, d, best_g * 1e3, best_s * 1e3, best_s / best_g, gap(ell, d, Bg, Bs) / norm2);
	return 0;
}
