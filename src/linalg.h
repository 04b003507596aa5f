/*
 * linalg.h -- dense linear algebra for perpca, backed by CBLAS/LAPACKE
 *
 * All matrices are row-major double arrays.  linalg.c is the only file that
 * includes cblas.h or lapacke.h; everything else calls these wrappers.
 */
#ifndef PERPCA_LINALG_H
#define PERPCA_LINALG_H

#include <stdbool.h>
#include <stdint.h>

/* Keep BLAS single-threaded inside a backend (called from _PG_init). */
extern void linalg_init(void);

/* C (d x d, upper triangle) += alpha * A^T A, A is k x d. */
extern void linalg_syrk_upper(int d, int k, double alpha, const double *A, double *C);

/* C (n x n, full, stride ldc) = alpha * Y Y^T for the row-major n x d Y (stride ldy). */
extern void linalg_syrk_rows(int n, int d, double alpha, const double *Y, int ldy, double *C, int ldc);

/* C (d x d, upper triangle) += alpha * x x^T. */
extern void linalg_syr_upper(int d, double alpha, const double *x, double *C);

/* y += alpha * x over n entries. */
extern void linalg_axpy(int64_t n, double alpha, const double *x, double *y);

/* Copy the upper triangle of the d x d matrix C to its lower triangle. */
extern void linalg_symmetrize_upper(int d, double *C);

/* ---- projection and models (project.c, model_functions.c) ---- */

/* y = alpha op(A) x + beta y, A is m x n; op(A) = A^T when trans. */
extern void linalg_matvec(bool trans, int m, int n, double alpha, const double *A,
						  const double *x, double beta, double *y);

/* ---- PerPCA engine (fit.c, fit_start.c): strided matrices, ld = row stride ---- */

/* C (m x n) = alpha op(A) op(B) + beta C, with explicit row strides. */
extern void linalg_gemm(bool transa, bool transb, int m, int n, int k, double alpha,
						const double *A, int lda, const double *B, int ldb,
						double beta, double *C, int ldc);

/* Y (d x k) = S X, S symmetric d x d stored whole, reading its upper panel x panel blocks only. */
extern void linalg_symm_half(int d, int k, const double *S, const double *X, double *Y, int panel);

/* Copy the m x n matrix A (stride lda) to B (stride ldb). */
extern void linalg_copy(int m, int n, const double *A, int lda, double *B, int ldb);

/* Sum of the products of two contiguous arrays of n values. */
extern double linalg_dot(int64_t n, const double *x, const double *y);

/* Multiply column j of the m-row matrix A (stride lda) by alpha. */
extern void linalg_scale_column(int m, double *A, int lda, int j, double alpha);

/* Flip the sign of each column of A (m x n) whose largest-|entry| (first on ties) is negative. */
extern void linalg_fix_signs(int m, int n, double *A, int lda);

/* Doubles of workspace that linalg_polar needs for an m x n matrix. */
#define LINALG_POLAR_WORK(m, n) ((int64_t) (m) * (n) + 2 * (int64_t) (n) * (n) + 2 * (int64_t) (n))

/* Replace A (m x n, m >= n) by its polar factor A (A^T A)^(-1/2); 0 on success. */
extern int	linalg_polar(int m, int n, double *A, int lda, double *work);

/* Doubles of workspace that linalg_polar_gram needs for an m x n matrix. */
#define LINALG_POLAR_GRAM_WORK(m, n) ((int64_t) (m) * (n) + 4 * (int64_t) (n) * (n) + 4 * (int64_t) (n) + 1)

/* Polar factor through the Gram matrix, A (A^T A)^(-1/2); 1 (A untouched) if A^T A is too ill-conditioned. */
extern int	linalg_polar_gram(int m, int n, double *A, int lda, double *work);

/* Replace A (m x n, m >= n) by the Q of its thin QR with diag(R) >= 0; work holds 2n doubles. */
extern int	linalg_qr_orth(int m, int n, double *A, int lda, double *work);

/* Top k eigenpairs of symmetric A (d x d, destroyed): values descending, vectors as columns of Z (d x k, stride ldz). */
extern int	linalg_eigh_top(int d, double *A, int k, double *values, double *Z, int ldz,
							double *work);

/* linalg_eigh_top's LAPACK workspace for order d: doubles (blocked dsytrd: (32 + 6) d), and integers. */
#define LINALG_EIGH_LWORK(d) (38 * (int64_t) (d) + 64)
#define LINALG_EIGH_LIWORK(d) (10 * (int64_t) (d) + 16)

/* Doubles of workspace that linalg_eigh_top needs (a double's room for each LAPACK integer). */
#define LINALG_EIGH_WORK(d, k) (6 * (int64_t) (d) + (int64_t) (d) * (k) + LINALG_EIGH_LWORK(d) + \
								2 * (int64_t) (k) + LINALG_EIGH_LIWORK(d))

/* LAPACK workspace of linalg_eigh_small beyond the n eigenvalues. */
#define LINALG_EIGH_SMALL_LWORK(n) (3 * (n) + 64 * (n))

/* Doubles of workspace that linalg_eigh_small needs. */
#define LINALG_EIGH_SMALL_WORK(n) ((int64_t) (n) + LINALG_EIGH_SMALL_LWORK(n))

/* All eigenpairs of a small symmetric A (n x n, destroyed): values descending, vectors as columns of Z (stride ldz). */
extern int	linalg_eigh_small(int n, double *A, double *values, double *Z, int ldz, double *work);

/*
 * All eigenpairs of a symmetric A (n x n, either triangle; replaced by the
 * eigenvectors, eigenvector j in row j) by divide and conquer (dsyevd):
 * values ascending into w; 0 on success.
 */
extern int	linalg_eigh_all(int n, double *A, double *w);

/* Top k left singular vectors of A (m x n, destroyed) as columns of Z (m x k, stride ldz), and their singular values into sigma (if not NULL); k <= min(m, n). */
extern int	linalg_left_singular(int m, int n, double *A, int k, double *Z, int ldz,
								 double *sigma, double *work);

/* Doubles of workspace that linalg_left_singular needs. */
#define LINALG_LSV_WORK(m, n) ((int64_t) (m) * ((m) < (n) ? (m) : (n)) + 2 * (int64_t) ((m) < (n) ? (m) : (n)))

/* ---- PerPCA rounds, fast paths (fit.c) ---- */

/* Doubles of workspace that linalg_chol_orth and linalg_deflate_orth need for k columns. */
#define LINALG_CHOL_WORK(k) ((int64_t) (k) * (k))

/* Replace A (m x n) by the Q of its QR (diag(R) > 0) through Cholesky of A^T A; 1 (A untouched) if ill-conditioned. */
extern int	linalg_chol_orth(int m, int n, double *A, int lda, double *work);

/* Cholesky QR of A (m x n) with the same transformation applied to B (m x n, stride ldb); 1 (both untouched) if ill-conditioned. */
extern int	linalg_chol_orth_pair(int m, int n, double *A, int lda, double *B, int ldb, double *work);

/* W = [U, V] (m x (r1 + n)), U orthonormal: V <- orthonormal basis of (I - U U^T) V, U unchanged; 1 (W untouched) if ill-conditioned. */
extern int	linalg_deflate_orth(int m, int r1, int n, double *W, int ldw, double *work);

/* Doubles of workspace that linalg_step_change needs for n columns. */
#define LINALG_STEP_CHANGE_WORK(n) (2 * (int64_t) (n) * (n))

/* ||P_{V + s G} - P_V||_F for orthonormal V (m x n) and G (stride ldg) with V^T G = 0; -1 on failure. */
extern double linalg_step_change(int m, int n, double s, const double *G, int ldg, double *work);

#endif							/* PERPCA_LINALG_H */
