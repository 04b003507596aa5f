/*
 * eigen.h -- eigensolvers and orthonormal blocks, over plain double arrays
 *
 * The exact solves (LAPACK through linalg.c), Rayleigh-Ritz and block
 * LOBPCG for the top eigenpairs of a symmetric positive semidefinite
 * operator known by its products, orthonormalization and seeded Gaussian
 * blocks.  Pure C: no SPI, no fmgr.  Row-major; ld* are row strides.
 */
#ifndef PERPCA_EIGEN_H
#define PERPCA_EIGEN_H

#include "postgres.h"

typedef enum FitRetraction
{
	FIT_RETRACT_POLAR,
	FIT_RETRACT_QR
} FitRetraction;

/*
 * A symmetric positive semidefinite operator A of dimension n: given by its
 * products (apply), or as A = G - L L' (apply NULL; G n x n, L n x r or
 * NULL).  deflate removes from a block the subspace the solution must stay
 * orthogonal to (applied twice where rounding matters).
 */
typedef struct EigenOp
{
	int			n;
	void		(*apply) (void *arg, const double *X, int b, double *Y);	/* Y (n x b) = A X */
	void		(*deflate) (void *arg, double *X, int b);	/* X (n x b) in place; or NULL */
	void	   *arg;
	const double *G;			/* apply == NULL: n x n */
	const double *L;			/* apply == NULL: n x r, or NULL */
	int			r;
	int64	   *products;		/* apply == NULL: products with G counted here (or NULL) */
	int64	   *iterations;		/* LOBPCG iterations counted here (or NULL) */
} EigenOp;

/* Y (n x b) = A X. */
extern void eigen_apply(const EigenOp *op, const double *X, int b, double *Y);

/* Make X (n x b) orthonormal (and deflated, when the operator deflates). */
extern void eigen_orthonormalize_block(const EigenOp *op, double *X, int b);

/*
 * Block LOBPCG for the top eigenpairs, warm-started from the orthonormal X
 * (n x b) with AX = A X given.  Stops when the first nres residuals are
 * <= tol, after maxit iterations, or when the residual stagnates at rounding
 * level; X, AX, theta end as Ritz vectors and values either way.  Returns
 * whether it converged.
 */
extern bool eigen_lobpcg(const EigenOp *op, double *X, double *AX, int b, double *theta, int nres,
						 double tol, int maxit);

/*
 * Rayleigh-Ritz on span [X, Y] (X orthonormal n x b with AX = A X; Y n x m,
 * m <= b, with AY = A Y known): X, AX, theta become its top b Ritz pairs.
 * Columns of Y within min_norm of span X are dropped; returns those used.
 */
extern int	eigen_ritz_extend(const EigenOp *op, double *X, double *AX, int b, const double *Y,
							  const double *AY, int m, double *theta, double min_norm);

/*
 * One Rayleigh-Ritz step: X (n x b) orthonormal, Y = A X for a symmetric A;
 * X <- X Q, Y <- Y Q with Q, theta (descending) the eigenpairs of X'Y.
 * Returns the largest residual ||Y_j - theta_j X_j|| over the first nres.
 */
extern double fit_rayleigh_ritz(int n, int b, double *X, double *Y, double *theta, int nres);

/*
 * Subspace iteration for the top eigenpairs from the orthonormal X (n x b)
 * with AX = A X given: Rayleigh-Ritz on span X, then X <- A X, until the
 * first nres residuals are <= tol (returns true) or, from the last step's
 * rate of convergence, maxit steps would not reach it (false).  X, AX and
 * theta end as Ritz vectors and values either way.
 */
extern bool eigen_subspace_iterate(const EigenOp *op, double *X, double *AX, int b, double *theta,
								   int nres, double tol, int maxit);

/*
 * The top nres eigenpairs by LOBPCG from a Gaussian block X (n x b, seeded)
 * to a residual of rtol x lambda_max, at most maxit iterations: X, theta (b).
 */
extern void eigen_top_pairs(const EigenOp *op, uint64 seed, double *X, int b, double *theta,
							int nres, double rtol, int maxit);

/* lambda_max of the symmetric positive semidefinite n x n A by block LOBPCG, to a residual of rtol lambda_max. */
extern double fit_top_eigenvalue(int n, const double *A, double rtol);

/* The same for an operator known by its products. */
extern double fit_top_eigenvalue_op(const EigenOp *op, double rtol);

/* Top k eigenpairs of the symmetric d x d A (destroyed), vectors as columns of Z (stride ldz). */
extern void fit_eigh_top(int d, double *A, int k, double *values, double *Z, int ldz);

/* Top k left singular vectors of A (m x n, destroyed) into Z, singular values into sigma (or NULL). */
extern void fit_left_singular(int m, int n, double *A, int k, double *Z, int ldz, double *sigma);

/* LAPACK workspace of at least n doubles in the current memory context (freed by the caller). */
extern double *eigen_work(int64 n);

/* Orthonormalize the m x n block A (stride lda): polar (SVD when ill-conditioned) or QR. */
extern void fit_retract(FitRetraction how, int m, int n, double *A, int lda);

/* Orthonormalize A (spans only): Cholesky QR in work (LINALG_CHOL_WORK(n)), else fit_retract(how). */
extern void eigen_orthonormalize(FitRetraction how, int m, int n, double *A, int lda, double *work);

/* ||P_A - P_B||_F for orthonormal m x r blocks. */
extern double fit_projector_distance(int m, int r, const double *A, int lda, const double *B, int ldb);

/* Fill an m x n block (stride ld) with standard normal draws (splitmix64 state). */
extern void fit_fill_gaussian(uint64 *state, int m, int n, double *A, int ld);

/* splitmix64: the next 64 random bits of a seeded stream. */
extern uint64 fit_rng_next(uint64 *state);

#endif							/* PERPCA_EIGEN_H */
