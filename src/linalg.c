/*
 * linalg.c -- the only file that talks to CBLAS and LAPACKE
 */
#include <cblas.h>
#include <lapacke.h>

#include "linalg.h"

/* OpenBLAS (pthread build) exports this to stop its worker-thread pool. */
extern int	blas_thread_shutdown_(void);

/*
 * Backends are forked processes and parallelism comes from parallel workers,
 * so BLAS runs single-threaded.  The pthread build of OpenBLAS starts its
 * thread pool when the library is loaded; limit it to one thread (so the
 * pool is never used again) and then stop the threads it already started.
 */
void
linalg_init(void)
{
	openblas_set_num_threads(1);
	blas_thread_shutdown_();
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
