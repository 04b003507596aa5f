/*
 * linalg.c -- the only file that talks to CBLAS and LAPACKE
 */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <string.h>

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

void
linalg_syrk_upper(int d, int k, double alpha, const double *A, double *C)
{
	cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, d, k, alpha, A, d, 1.0, C, d);
}

void
linalg_syrk_rows(int n, int d, double alpha, const double *Y, int ldy, double *C, int ldc)
{
	if (n == 0)					/* nothing to write; BLAS rejects ldc = 0 */
		return;
	cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, n, d, alpha, Y, ldy, 0.0, C, ldc);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < i; j++)
			C[(int64_t) i * ldc + j] = C[(int64_t) j * ldc + i];
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

void
linalg_matvec(bool trans, int m, int n, double alpha, const double *A,
			  const double *x, double beta, double *y)
{
	cblas_dgemv(CblasRowMajor, trans ? CblasTrans : CblasNoTrans, m, n,
				alpha, A, n, x, 1, beta, y, 1);
}

void
linalg_gemm(bool transa, bool transb, int m, int n, int k, double alpha,
			const double *A, int lda, const double *B, int ldb,
			double beta, double *C, int ldc)
{
	if (m == 0 || n == 0)
		return;
	cblas_dgemm(CblasRowMajor, transa ? CblasTrans : CblasNoTrans,
				transb ? CblasTrans : CblasNoTrans, m, n, k, alpha,
				A, lda, B, ldb, beta, C, ldc);
}

/*
 * Y (d x k) = S X for a symmetric d x d S stored whole (row-major), reading
 * only its upper block triangle: the diagonal panel x panel blocks once,
 * each block S_IJ above them once for both Y_I += S_IJ X_J and Y_J +=
 * S_IJ' X_I while it is in cache.  A product with a few columns streams S
 * from memory (d = 4096: 134 MB); this reads half of it.  cblas_dsymm reads
 * one triangle too but was slower here than dgemm on the whole S
 * (bench/dense_read.c).  Equal to the dgemm to rounding; with d <= panel
 * it is that dgemm.
 */
void
linalg_symm_half(int d, int k, const double *S, const double *X, double *Y, int panel)
{
	if (d == 0 || k == 0)
		return;
	for (int i = 0; i < d; i += panel)
	{
		int			m = d - i < panel ? d - i : panel;

		linalg_gemm(false, false, m, k, m, 1.0, S + (int64_t) i * d + i, d,
					X + (int64_t) i * k, k, 0.0, Y + (int64_t) i * k, k);
	}
	for (int i = 0; i < d; i += panel)
	{
		int			m = d - i < panel ? d - i : panel;

		for (int j = i + panel; j < d; j += panel)
		{
			int			n = d - j < panel ? d - j : panel;
			const double *B = S + (int64_t) i * d + j;

			linalg_gemm(false, false, m, k, n, 1.0, B, d, X + (int64_t) j * k, k,
						1.0, Y + (int64_t) i * k, k);
			linalg_gemm(true, false, n, k, m, 1.0, B, d, X + (int64_t) i * k, k,
						1.0, Y + (int64_t) j * k, k);
		}
	}
}

/* B = A for an m x n block, row by row (LAPACKE_dlacpy would transpose twice). */
void
linalg_copy(int m, int n, const double *A, int lda, double *B, int ldb)
{
	if (n == 0)
		return;
	if (n == lda && n == ldb)
	{
		memcpy(B, A, sizeof(double) * m * n);
		return;
	}
	for (int i = 0; i < m; i++)
	{
		const double *a = A + (int64_t) i * lda;
		double	   *b = B + (int64_t) i * ldb;

		/* narrow blocks (U is often 1-3 columns): a loop beats a memcpy call per row */
		if (n <= 8)
			for (int j = 0; j < n; j++)
				b[j] = a[j];
		else
			memcpy(b, a, sizeof(double) * n);
	}
}

/* x . y over n entries (split for BLAS int lengths). */
double
linalg_dot(int64_t n, const double *x, const double *y)
{
	double		sum = 0.0;

	while (n > 0)
	{
		int			chunk = n > (1 << 30) ? (1 << 30) : (int) n;

		sum += cblas_ddot(chunk, x, 1, y, 1);
		x += chunk;
		y += chunk;
		n -= chunk;
	}
	return sum;
}

void
linalg_scale_column(int m, double *A, int lda, int j, double alpha)
{
	cblas_dscal(m, alpha, A + j, lda);
}

void
linalg_fix_signs(int m, int n, double *A, int lda)
{
	for (int j = 0; j < n; j++)
	{
		int			i = (int) cblas_idamax(m, A + j, lda);

		if (A[(int64_t) i * lda + j] < 0.0)
			cblas_dscal(m, -1.0, A + j, lda);
	}
}

/* Polar factor through the thin SVD A = Us diag(s) VT: A <- Us VT. */
int
linalg_polar(int m, int n, double *A, int lda, double *work)
{
	double	   *us = work;
	double	   *vt = us + (int64_t) m * n;
	double	   *s = vt + (int64_t) n * n;
	double	   *superb = s + n;
	int			info;

	if (n == 0)
		return 0;
	info = LAPACKE_dgesvd(LAPACK_ROW_MAJOR, 'S', 'S', m, n, A, lda, s, us, n, vt, n, superb);
	if (info != 0)
		return info;
	cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, n, 1.0,
				us, n, vt, n, 0.0, A, lda);
	return 0;
}

/*
 * Small symmetric eigenproblem G = A^T A (n x n, column-major call: G is
 * symmetric, so no transposition), then A <- A Z' diag(w^-1/2) Z.  Declines
 * (returns 1) when lambda_min / lambda_max < 1e-10, where squaring the
 * condition number would cost accuracy; callers then use linalg_polar.
 */
int
linalg_polar_gram(int m, int n, double *A, int lda, double *work)
{
	double	   *G = work;
	double	   *B = G + (int64_t) n * n;
	double	   *C = B + (int64_t) n * n;
	double	   *w = C + (int64_t) n * n;
	double	   *T = w + n;
	double	   *lw = T + (int64_t) m * n;
	int			lwork = (int) (n * n + 3 * n + 1);
	int			info;

	if (n == 0)
		return 0;
	cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, n, m, 1.0, A, lda, A, lda, 0.0, G, n);
	info = LAPACKE_dsyev_work(LAPACK_COL_MAJOR, 'V', 'U', n, G, n, w, lw, lwork);
	if (info != 0 || !(w[0] > 1e-10 * w[n - 1]))
		return 1;
	/* row j of G (row-major view) is the j-th eigenvector */
	for (int j = 0; j < n; j++)
		for (int i = 0; i < n; i++)
			B[j * n + i] = G[j * n + i] / sqrt(w[j]);
	cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, n, n, 1.0, G, n, B, n, 0.0, C, n);
	cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, n, 1.0, A, lda, C, n, 0.0, T, n);
	linalg_copy(m, n, T, n, A, lda);
	return 0;
}

/* Householder QR, then flip the columns whose R diagonal is negative. */
int
linalg_qr_orth(int m, int n, double *A, int lda, double *work)
{
	double	   *tau = work;
	double	   *sign = work + n;
	int			info;

	if (n == 0)
		return 0;
	info = LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, m, n, A, lda, tau);
	if (info != 0)
		return info;
	for (int j = 0; j < n; j++)
		sign[j] = A[(int64_t) j * lda + j] < 0.0 ? -1.0 : 1.0;
	info = LAPACKE_dorgqr(LAPACK_ROW_MAJOR, m, n, n, A, lda, tau);
	if (info != 0)
		return info;
	for (int j = 0; j < n; j++)
		if (sign[j] < 0.0)
			cblas_dscal(m, -1.0, A + j, lda);
	return 0;
}

/*
 * The top k eigenpairs (w ascending, z d x k column-major) of the symmetric
 * tridiagonal matrix of diagonal diag and subdiagonal off: dstemr on copies
 * (it overwrites its input), bisection and inverse iteration (dstevr) when
 * it fails.
 * w is followed by 2d doubles of room for the copies; lw is the workspace of
 * linalg_eigh_top after z, its integer part after LINALG_EIGH_LWORK(d).
 */
static int
tridiagonal_top(int d, int k, double *diag, double *off, double *w, double *z, double *lw)
{
	double	   *diag2 = w + d,
			   *off2 = diag2 + d;
	lapack_int *iw = (lapack_int *) (lw + LINALG_EIGH_LWORK(d));
	lapack_int	found = 0,
				tryrac = 1;
	int			info;

	off[d - 1] = 0.0;
	memcpy(diag2, diag, sizeof(double) * d);
	memcpy(off2, off, sizeof(double) * d);
	info = LAPACKE_dstemr_work(LAPACK_COL_MAJOR, 'V', 'I', d, diag2, off2, 0.0, 0.0,
							   d - k + 1, d, &found, w, z, d, k, iw, &tryrac,
							   lw, LINALG_EIGH_LWORK(d), iw + 2 * k, LINALG_EIGH_LIWORK(d));
	if (info == 0 && found == k)
		return 0;
	/* dstevr on part of a spectrum is bisection and inverse iteration (dstebz, dstein) */
	info = LAPACKE_dstevr_work(LAPACK_COL_MAJOR, 'V', 'I', d, diag, off, 0.0, 0.0, d - k + 1, d,
							   0.0, &found, w, z, d, iw, lw, LINALG_EIGH_LWORK(d),
							   iw + 2 * k, LINALG_EIGH_LIWORK(d));
	return info != 0 ? info : found == k ? 0 : -1;
}

/* k ascending eigenpairs (w, the rows of z, n long) as descending values and columns of Z (stride ldz). */
static void
copy_descending(int n, int k, const double *w, const double *z, double *values, double *Z, int ldz)
{
	for (int j = 0; j < k; j++)
	{
		values[j] = w[k - 1 - j];
		cblas_dcopy(n, z + (int64_t) (k - 1 - j) * n, 1, Z + j, ldz);
	}
}

/*
 * The top k eigenpairs of the symmetric d x d A: dsytrd, then the MRRR
 * solver dstemr on the tridiagonal for the index range [d-k+1, d], dormtr
 * back; reversed to descending order.  This is what dsyevr does for the
 * whole spectrum: for a part of it dsyevr falls back to bisection and
 * inverse iteration (dstebz, dstein), 2x slower at d = 64, k = 8; they
 * remain the fallback when dstemr fails.  The row-major A is symmetric, so
 * LAPACK reads it column-major as is (its lower triangle is A's upper
 * one), in the workspace given: no transposed copy, no allocation.
 */
int
linalg_eigh_top(int d, double *A, int k, double *values, double *Z, int ldz,
				double *work)
{
	double	   *diag = work,
			   *off = diag + d,
			   *tau = off + d,
			   *w = tau + d,
			   *z = w + 3 * d,
			   *lw = z + (int64_t) d * k;
	int			info;

	if (k == 0)
		return 0;
	if (d == 0)
	{
		/* an empty matrix (a thin client without rows): LAPACK wants lda >= 1 */
		memset(values, 0, sizeof(double) * k);
		return 0;
	}
	info = LAPACKE_dsytrd_work(LAPACK_COL_MAJOR, 'L', d, A, d, diag, off, tau,
							   lw, LINALG_EIGH_LWORK(d));
	if (info != 0)
		return info;
	info = tridiagonal_top(d, k, diag, off, w, z, lw);
	if (info != 0)
		return info;
	info = LAPACKE_dormtr_work(LAPACK_COL_MAJOR, 'L', 'L', 'N', d, k, A, d, tau, z, d,
							   lw, LINALG_EIGH_LWORK(d));
	if (info == 0)
		copy_descending(d, k, w, z, values, Z, ldz);
	return info;
}

/*
 * Every eigenpair of a small symmetric n x n matrix (dsyev, QR iteration:
 * cheaper than dsyevr's setup for the tiny Rayleigh-Ritz problems).  The
 * row-major A is symmetric, so LAPACK reads it column-major as is; its
 * eigenvectors come back as the columns of the column-major result, i.e.
 * the rows of A, which are copied out descending.
 */
int
linalg_eigh_small(int n, double *A, double *values, double *Z, int ldz, double *work)
{
	double	   *w = work;
	double	   *lw = work + n;
	int			info;

	if (n == 0)
		return 0;
	info = LAPACKE_dsyev_work(LAPACK_COL_MAJOR, 'V', 'U', n, A, n, w, lw, LINALG_EIGH_SMALL_LWORK(n));
	if (info == 0)
		copy_descending(n, n, w, A, values, Z, ldz);
	return info;
}

/* Column-major A's column j is row-major row j: the eigenvectors as rows. */
int
linalg_eigh_all(int n, double *A, double *w)
{
	if (n == 0)
		return 0;
	return LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'V', 'U', n, A, n, w);
}

int
linalg_left_singular(int m, int n, double *A, int k, double *Z, int ldz, double *sigma,
					 double *work)
{
	int			mn = m < n ? m : n;
	double	   *u = work;
	double	   *s = u + (int64_t) m * mn;
	double	   *superb = s + mn;
	int			info;

	if (k == 0)
		return 0;
	info = LAPACKE_dgesvd(LAPACK_ROW_MAJOR, 'S', 'N', m, n, A, n, s, u, mn, NULL, 1, superb);
	if (info != 0)
		return info;
	LAPACKE_dlacpy(LAPACK_ROW_MAJOR, 'A', m, k, u, mn, Z, ldz);
	if (sigma != NULL)
		memcpy(sigma, s, sizeof(double) * k);
	return 0;
}

/*
 * The Gram G = A^T A of a row-major m x n block is a symmetric n x n matrix
 * (dgemm: faster than dsyrk at these sizes); its row-major upper triangle is
 * the lower triangle of the same array read column-major, so LAPACK works on
 * it without transposing.
 * dpotrf('L') on that view gives G = L L^T with R = L^T the row-major upper
 * factor (G = R^T R), used directly by the row-major dtrsm below.
 */

/* Cholesky factor R (n x n, row-major upper) of the Gram in R; 0 unless R_jj spreads more than 1e3 over the columns from j0 on. */
static int
chol_gram_factor(int n, int j0, double *R)
{
	double		lo = INFINITY,
				hi = 0.0;

	if (LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', n, R, n) != 0)
		return 1;
	for (int j = j0; j < n; j++)
	{
		lo = fmin(lo, R[j * n + j]);
		hi = fmax(hi, R[j * n + j]);
	}
	return (lo > 1e-3 * hi) ? 0 : 1;
}

int
linalg_chol_orth(int m, int n, double *A, int lda, double *B, int ldb, double *work)
{
	double	   *R = work;

	if (n == 0)
		return 0;
	cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, n, m, 1.0, A, lda, A, lda, 0.0, R, n);
	if (chol_gram_factor(n, 0, R) != 0)
		return 1;
	cblas_dtrsm(CblasRowMajor, CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit,
				m, n, 1.0, R, n, A, lda);
	if (B != NULL)
		cblas_dtrsm(CblasRowMajor, CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit,
					m, n, 1.0, R, n, B, ldb);
	return 0;
}

/*
 * A x = b for the symmetric positive definite n x n A by dposv.  A's
 * row-major lower triangle is the column-major upper one: no transposition.
 * A NaN pivot passes OpenBLAS's dpotrf, so the factor's diagonal is checked.
 */
int
linalg_spd_solve(int n, double *A, double *b)
{
	if (n == 0)
		return 0;
	if (LAPACKE_dposv_work(LAPACK_COL_MAJOR, 'U', n, 1, A, n, b, n) != 0)
		return 1;
	for (int j = 0; j < n; j++)
		if (!(A[j * n + j] > 0.0))
			return 1;
	return 0;
}

/*
 * W = [U, V] (m x (r1 + n)), U orthonormal: V <- orthonormal basis of
 * (I - U U^T) V by Cholesky QR of W with U^T U taken as I, so R = [I, U^T V;
 * 0, R22] and W R^-1 leaves U bit for bit.  1 (W untouched) if ill-conditioned.
 */
int
linalg_deflate_orth(int m, int r1, int n, double *W, int ldw, double *work)
{
	int			k = r1 + n;
	double	   *R = work;

	if (n == 0)
		return 0;
	cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, k, k, m, 1.0, W, ldw, W, ldw, 0.0, R, k);
	for (int i = 0; i < r1; i++)
		for (int j = i; j < r1; j++)
			R[i * k + j] = (i == j) ? 1.0 : 0.0;
	if (chol_gram_factor(k, r1, R) != 0)
		return 1;
	cblas_dtrsm(CblasRowMajor, CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit,
				m, k, 1.0, R, k, W, ldw);
	return 0;
}

/*
 * ||P_{V + s G} - P_V||_F for orthonormal V (m x n) and G with V^T G = 0:
 * sqrt(2 tr((I + E)^-1 E)) with E = s^2 G^T G, free of the cancellation of
 * a difference of projectors (one Gram, one n x n dposv).  -1 on failure.
 */
double
linalg_step_change(int m, int n, double s, const double *G, int ldg, double *work)
{
	double	   *E = work;
	double	   *A = E + (int64_t) n * n;
	double		trace = 0.0;

	if (n == 0)
		return 0.0;
	cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, n, m, s * s, G, ldg, G, ldg, 0.0, E, n);
	for (int i = 0; i < n * n; i++)
		A[i] = E[i] + ((i % (n + 1)) == 0 ? 1.0 : 0.0);
	/* E and I + E are symmetric: the column-major call needs no transposition */
	if (LAPACKE_dposv_work(LAPACK_COL_MAJOR, 'L', n, n, A, n, E, n) != 0)
		return -1.0;
	for (int j = 0; j < n; j++)
		trace += E[j * n + j];
	return sqrt(2.0 * fmax(trace, 0.0));
}
