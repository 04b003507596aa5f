/*
 * linalg.h -- dense linear algebra for perpca, backed by CBLAS/LAPACKE
 *
 * All matrices are row-major double arrays, ld* their row strides.  linalg.c
 * is the only file that includes cblas.h or lapacke.h.  Functions that
 * return int give 0 on success; the *_WORK macros are their workspaces in
 * doubles.
 */
#ifndef PERPCA_LINALG_H
#define PERPCA_LINALG_H

#include <stdbool.h>
#include <stdint.h>

/* Keep BLAS single-threaded inside a backend (called from _PG_init). */
extern void linalg_init(void);

/* C (d x d, upper triangle) += alpha A^T A, A k x d. */
extern void linalg_syrk_upper(int d, int k, double alpha, const double *A, double *C);

/* C (n x n, full) = alpha Y Y^T for the n x d Y. */
extern void linalg_syrk_rows(int n, int d, double alpha, const double *Y, int ldy, double *C, int ldc);

/* C (d x d, upper triangle) += alpha x x^T. */
extern void linalg_syr_upper(int d, double alpha, const double *x, double *C);

/* y += alpha x over n entries. */
extern void linalg_axpy(int64_t n, double alpha, const double *x, double *y);

/* Copy the upper triangle of the d x d C to its lower triangle. */
extern void linalg_symmetrize_upper(int d, double *C);

/* y = alpha op(A) x + beta y, A m x n; op(A) = A^T when trans. */
extern void linalg_matvec(bool trans, int m, int n, double alpha, const double *A,
						  const double *x, double beta, double *y);

/* C (m x n) = alpha op(A) op(B) + beta C. */
extern void linalg_gemm(bool transa, bool transb, int m, int n, int k, double alpha,
						const double *A, int lda, const double *B, int ldb,
						double beta, double *C, int ldc);

/* Y (d x k) = S X, S symmetric d x d stored whole, reading its upper panel x panel blocks only. */
extern void linalg_symm_half(int d, int k, const double *S, const double *X, double *Y, int panel);

/* B = A (m x n). */
extern void linalg_copy(int m, int n, const double *A, int lda, double *B, int ldb);

/* x . y over n entries. */
extern double linalg_dot(int64_t n, const double *x, const double *y);

/* Column j of A (m rows) *= alpha. */
extern void linalg_scale_column(int m, double *A, int lda, int j, double alpha);

/* Flip the sign of each column of A (m x n) whose largest-|entry| (first on ties) is negative. */
extern void linalg_fix_signs(int m, int n, double *A, int lda);

/* A (m x n, m >= n) <- its polar factor A (A^T A)^(-1/2), by SVD. */
#define LINALG_POLAR_WORK(m, n) ((int64_t) (m) * (n) + 2 * (int64_t) (n) * (n) + 2 * (int64_t) (n))
extern int	linalg_polar(int m, int n, double *A, int lda, double *work);

/* The polar factor through the Gram matrix; 1 (A untouched) if A^T A is too ill-conditioned. */
#define LINALG_POLAR_GRAM_WORK(m, n) ((int64_t) (m) * (n) + 4 * (int64_t) (n) * (n) + 4 * (int64_t) (n) + 1)
extern int	linalg_polar_gram(int m, int n, double *A, int lda, double *work);

/* A (m x n, m >= n) <- the Q of its thin QR with diag(R) >= 0; work holds 2n doubles. */
extern int	linalg_qr_orth(int m, int n, double *A, int lda, double *work);

/* Top k eigenpairs of the symmetric d x d A (destroyed): values descending, vectors as columns of Z. */
#define LINALG_EIGH_LWORK(d) (38 * (int64_t) (d) + 64)	/* blocked dsytrd: (32 + 6) d */
#define LINALG_EIGH_LIWORK(d) (10 * (int64_t) (d) + 16)
#define LINALG_EIGH_WORK(d, k) (6 * (int64_t) (d) + (int64_t) (d) * (k) + LINALG_EIGH_LWORK(d) + \
								2 * (int64_t) (k) + LINALG_EIGH_LIWORK(d))
extern int	linalg_eigh_top(int d, double *A, int k, double *values, double *Z, int ldz,
							double *work);

/* All eigenpairs of a small symmetric n x n A (destroyed), as linalg_eigh_top. */
#define LINALG_EIGH_SMALL_LWORK(n) (3 * (n) + 64 * (n))
#define LINALG_EIGH_SMALL_WORK(n) ((int64_t) (n) + LINALG_EIGH_SMALL_LWORK(n))
extern int	linalg_eigh_small(int n, double *A, double *values, double *Z, int ldz, double *work);

/* All eigenpairs of a symmetric n x n A by dsyevd: values ascending into w, eigenvector j into row j of A. */
extern int	linalg_eigh_all(int n, double *A, double *w);

/* Top k <= min(m, n) left singular vectors of A (m x n, destroyed) as columns of Z, singular values into sigma (or NULL). */
#define LINALG_LSV_WORK(m, n) ((int64_t) (m) * ((m) < (n) ? (m) : (n)) + 2 * (int64_t) ((m) < (n) ? (m) : (n)))
extern int	linalg_left_singular(int m, int n, double *A, int k, double *Z, int ldz,
								 double *sigma, double *work);

/*
 * Cholesky QR: A (m x n) <- the Q of its QR (diag(R) > 0) through the
 * Cholesky factor of A^T A, and B <- B R^-1 unless B is NULL; 1 (both
 * untouched) if ill-conditioned.
 */
#define LINALG_CHOL_WORK(k) ((int64_t) (k) * (k))
extern int	linalg_chol_orth(int m, int n, double *A, int lda, double *B, int ldb, double *work);

/* Solve the symmetric positive definite n x n A x = b (A's lower triangle, overwritten), x into b; 1 if A is not numerically definite. */
extern int	linalg_spd_solve(int n, double *A, double *b);

/* W = [U, V] (m x (r1 + n)), U orthonormal: V <- orthonormal basis of (I - U U^T) V; 1 (W untouched) if ill-conditioned. */
extern int	linalg_deflate_orth(int m, int r1, int n, double *W, int ldw, double *work);

/* ||P_{V + s G} - P_V||_F for orthonormal V (m x n) and G with V^T G = 0; -1 on failure. */
#define LINALG_STEP_CHANGE_WORK(n) (2 * (int64_t) (n) * (n))
extern double linalg_step_change(int m, int n, double s, const double *G, int ldg, double *work);

#endif							/* PERPCA_LINALG_H */
