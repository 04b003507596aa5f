/*
 * linalg.c -- the only file that talks to CBLAS and LAPACKE
 */
#include <cblas.h>
#include <lapacke.h>

#include "linalg.h"

void
linalg_init(void)
{
	/* Backends are forked processes; parallelism comes from parallel workers. */
	openblas_set_num_threads(1);
}

const char *
linalg_config(void)
{
	return openblas_get_config();
}

void
linalg_syrk_upper(int d, int k, double alpha, const double *A, double *C)
{
	cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, d, k, alpha, A, d, 1.0, C, d);
}

void
linalg_syr_upper(int d, double alpha, const double *x, double *C)
{
	cblas_dsyr(CblasRowMajor, CblasUpper, d, alpha, x, 1, C, d);
}

void
linalg_axpy(int64_t n, double alpha, const double *x, double *y)
{
	/* BLAS takes int lengths; split very long vectors. */
	while (n > 0)
	{
		int			chunk = n > (1 << 30) ? (1 << 30) : (int) n;

		cblas_daxpy(chunk, alpha, x, 1, y, 1);
		x += chunk;
		y += chunk;
		n -= chunk;
	}
}

void
linalg_symmetrize_upper(int d, double *C)
{
	for (int i = 0; i < d; i++)
		for (int j = 0; j < i; j++)
			C[(int64_t) i * d + j] = C[(int64_t) j * d + i];
}
