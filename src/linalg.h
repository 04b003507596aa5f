/*
 * linalg.h -- dense linear algebra for perpca, backed by CBLAS/LAPACKE
 *
 * All matrices are row-major double arrays.  linalg.c is the only file that
 * includes cblas.h or lapacke.h; everything else calls these wrappers.
 */
#ifndef PERPCA_LINALG_H
#define PERPCA_LINALG_H

#include <stdint.h>

/* Keep BLAS single-threaded inside a backend (called from _PG_init). */
extern void linalg_init(void);

/* Human-readable BLAS build configuration (for diagnostics). */
extern const char *linalg_config(void);

/* C (d x d, upper triangle) += alpha * A^T A, A is k x d. */
extern void linalg_syrk_upper(int d, int k, double alpha, const double *A, double *C);

/* C (d x d, upper triangle) += alpha * x x^T. */
extern void linalg_syr_upper(int d, double alpha, const double *x, double *C);

/* y += alpha * x over n entries. */
extern void linalg_axpy(int64_t n, double alpha, const double *x, double *y);

/* Copy the upper triangle of the d x d matrix C to its lower triangle. */
extern void linalg_symmetrize_upper(int d, double *C);

#endif							/* PERPCA_LINALG_H */
