/*
 * eigen.c -- eigensolvers and orthonormal blocks (see eigen.h)
 *
 * Sections: the exact solves (LAPACK); orthonormal blocks and random
 * starts; a symmetric operator, Rayleigh-Ritz and subspace iteration;
 * block LOBPCG; the top eigenvalue of an explicit matrix.
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/memutils.h"

#include "eigen.h"
#include "linalg.h"

/* LOBPCG iterations without halving the residual after which it stops (at rounding level) */
#define LOBPCG_STAGNATION 10
/* Block and iterations of fit_top_eigenvalue's LOBPCG */
#define TOP_EIGENVALUE_BLOCK 16
#define TOP_EIGENVALUE_MAX_ITER 200

/* ------------------------------------------------------------------------
 * The exact solves
 * ------------------------------------------------------------------------
 */

void
fit_eigh_top(int d, double *A, int k, double *values, double *Z, int ldz)
{
	double	   *work = eigen_work(LINALG_EIGH_WORK(d, k));
	int			info = linalg_eigh_top(d, A, k, values, Z, ldz, work);

	pfree(work);
	if (info != 0)
		elog(ERROR, "symmetric eigensolver failed (LAPACK info %d)", info);
}

/*
 * Top k left singular vectors through the smaller Gram matrix (A'A or AA')
 * and a partial eigensolver: 5-10x cheaper than a full SVD when k is a small
 * part of min(m, n) (the disPCA basis: d x sum k_i).  Returns false, A
 * untouched, when sigma_k < 1e-4 sigma_1 (the Gram would lose accuracy).
 */
static bool
left_singular_gram(int m, int n, const double *A, int k, double *Z, int ldz, double *sigma)
{
	int			g = Min(m, n);
	double	   *G = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * g * g),
			   *lam = palloc(sizeof(double) * k),
			   *V = n <= m ? palloc(sizeof(double) * n * k) : NULL;
	bool		ok;

	if (n <= m)
		linalg_gemm(true, false, n, n, m, 1.0, A, n, A, n, 0.0, G, n);
	else
		linalg_gemm(false, true, m, m, n, 1.0, A, n, A, n, 0.0, G, m);
	fit_eigh_top(g, G, k, lam, V != NULL ? V : Z, V != NULL ? k : ldz);
	ok = lam[0] > 0.0 && lam[k - 1] >= 1e-8 * lam[0];
	if (ok && V != NULL)
	{
		/* u_j = A v_j / sigma_j, then QR (order and signs kept) for orthonormality to rounding */
		linalg_gemm(false, false, m, k, n, 1.0, A, n, V, k, 0.0, Z, ldz);
		for (int j = 0; j < k; j++)
			linalg_scale_column(m, Z, ldz, j, 1.0 / sqrt(lam[j]));
		fit_retract(FIT_RETRACT_QR, m, k, Z, ldz);
	}
	if (ok && sigma != NULL)
		for (int j = 0; j < k; j++)
			sigma[j] = sqrt(lam[j]);
	pfree(G);
	pfree(lam);
	if (V != NULL)
		pfree(V);
	return ok;
}

void
fit_left_singular(int m, int n, double *A, int k, double *Z, int ldz, double *sigma)
{
	double	   *work;
	int			info;

	if (k > 0 && 4 * k <= Min(m, n) && Min(m, n) >= 32 &&
		left_singular_gram(m, n, A, k, Z, ldz, sigma))
		return;
	work = eigen_work(LINALG_LSV_WORK(m, n));
	info = linalg_left_singular(m, n, A, k, Z, ldz, sigma, work);
	pfree(work);
	if (info != 0)
		elog(ERROR, "singular value decomposition failed (LAPACK info %d)", info);
}

double *
eigen_work(int64 n)
{
	return MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * Max(n, 1));
}

/* ------------------------------------------------------------------------
 * Orthonormal blocks and random starts
 * ------------------------------------------------------------------------
 */

void
fit_retract(FitRetraction how, int m, int n, double *A, int lda)
{
	double	   *work;
	int			info;

	if (how == FIT_RETRACT_QR)
	{
		work = eigen_work(2 * (int64) n);
		info = linalg_qr_orth(m, n, A, lda, work);
	}
	else
	{
		work = eigen_work(Max(LINALG_POLAR_GRAM_WORK(m, n), LINALG_POLAR_WORK(m, n)));
		info = linalg_polar_gram(m, n, A, lda, work) == 0 ? 0 :
			linalg_polar(m, n, A, lda, work);
	}
	pfree(work);
	if (info != 0)
		elog(ERROR, "retraction failed (LAPACK info %d)", info);
}

void
eigen_orthonormalize(FitRetraction how, int m, int n, double *A, int lda, double *work)
{
	if (linalg_chol_orth(m, n, A, lda, NULL, 0, work) != 0)
		fit_retract(how, m, n, A, lda);
}

/* ||P_A - P_B||_F = sqrt(2) ||B - A A'B||_F for orthonormal A, B. */
double
fit_projector_distance(int m, int r, const double *A, int lda, const double *B, int ldb)
{
	double	   *AtB,
			   *D,
				norm;

	if (r == 0)
		return 0.0;
	AtB = palloc(sizeof(double) * r * r);
	D = palloc(sizeof(double) * m * r);
	linalg_gemm(true, false, r, r, m, 1.0, A, lda, B, ldb, 0.0, AtB, r);
	linalg_copy(m, r, B, ldb, D, r);
	linalg_gemm(false, false, m, r, r, -1.0, A, lda, AtB, r, 1.0, D, r);
	norm = sqrt(2.0 * linalg_dot((int64) m * r, D, D));
	pfree(AtB);
	pfree(D);
	return norm;
}

uint64
fit_rng_next(uint64 *state)
{
	uint64		z = (*state += UINT64CONST(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64CONST(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64CONST(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* Standard normal draw (Box-Muller on two uniforms in (0, 1]). */
static double
rng_gaussian(uint64 *state)
{
	double		u1 = ((fit_rng_next(state) >> 11) + 1.0) / 9007199254740992.0;
	double		u2 = ((fit_rng_next(state) >> 11) + 1.0) / 9007199254740992.0;

	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

void
fit_fill_gaussian(uint64 *state, int m, int n, double *A, int ld)
{
	for (int i = 0; i < m; i++)
		for (int j = 0; j < n; j++)
			A[(int64) i * ld + j] = rng_gaussian(state);
}

/* ------------------------------------------------------------------------
 * A symmetric operator; Rayleigh-Ritz and subspace iteration
 * ------------------------------------------------------------------------
 */

void
eigen_apply(const EigenOp *op, const double *X, int b, double *Y)
{
	if (op->apply != NULL)
	{
		op->apply(op->arg, X, b, Y);
		return;
	}
	if (op->products != NULL)
		(*op->products)++;
	linalg_gemm(false, false, op->n, b, op->n, 1.0, op->G, op->n, X, b, 0.0, Y, b);
	if (op->L != NULL && op->r > 0)
	{
		double	   *LtX = palloc(sizeof(double) * op->r * b);

		linalg_gemm(true, false, op->r, b, op->n, 1.0, op->L, op->r, X, b, 0.0, LtX, b);
		linalg_gemm(false, false, op->n, b, op->r, -1.0, op->L, op->r, LtX, b, 1.0, Y, b);
		pfree(LtX);
	}
}

void
eigen_orthonormalize_block(const EigenOp *op, double *X, int b)
{
	double	   *work = palloc(sizeof(double) * Max(LINALG_CHOL_WORK(b), 1));

	for (int pass = 0; pass < (op->deflate != NULL ? 2 : 1); pass++)
	{
		if (op->deflate != NULL)
			op->deflate(op->arg, X, b);
		eigen_orthonormalize(FIT_RETRACT_QR, op->n, b, X, b, work);
	}
	pfree(work);
}

/* R = Y - X diag(theta) (n x b); returns the largest norm of its first nres columns. */
static double
residuals(int n, int b, const double *X, const double *Y, const double *theta, int nres, double *R)
{
	double		worst = 0.0;

	for (int i = 0; i < n; i++)
		for (int j = 0; j < b; j++)
			R[(int64) i * b + j] = Y[(int64) i * b + j] - theta[j] * X[(int64) i * b + j];
	for (int j = 0; j < nres; j++)
	{
		double		r = 0.0;

		for (int i = 0; i < n; i++)
			r += R[(int64) i * b + j] * R[(int64) i * b + j];
		worst = Max(worst, sqrt(r));
	}
	return worst;
}

/* H = X'Y (b x b), symmetrized. */
static void
ritz_matrix(int n, int b, const double *X, const double *Y, double *H)
{
	linalg_gemm(true, false, b, b, n, 1.0, X, b, Y, b, 0.0, H, b);
	for (int i = 0; i < b; i++)
		for (int j = 0; j < i; j++)
			H[i * b + j] = H[j * b + i] = 0.5 * (H[i * b + j] + H[j * b + i]);
}

/* X <- X Q, Y <- Y Q (n x b, Q b x b); returns the largest residual norm of the first nres. */
static double
ritz_rotate(int n, int b, double *X, double *Y, const double *Q, const double *theta, int nres)
{
	double	   *T = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * n * b),
				worst;

	memcpy(T, X, sizeof(double) * n * b);
	linalg_gemm(false, false, n, b, b, 1.0, T, b, Q, b, 0.0, X, b);
	memcpy(T, Y, sizeof(double) * n * b);
	linalg_gemm(false, false, n, b, b, 1.0, T, b, Q, b, 0.0, Y, b);
	worst = residuals(n, b, X, Y, theta, nres, T);
	pfree(T);
	return worst;
}

/*
 * H = X'Y (symmetrized) and its eigenpairs (theta, Q) by dsyev; then X Q,
 * Y Q and their residuals.
 */
double
fit_rayleigh_ritz(int n, int b, double *X, double *Y, double *theta, int nres)
{
	double	   *H = palloc(sizeof(double) * b * b),
			   *Q = palloc(sizeof(double) * b * b),
			   *work = eigen_work(LINALG_EIGH_SMALL_WORK(b)),
				worst;

	ritz_matrix(n, b, X, Y, H);
	if (linalg_eigh_small(b, H, theta, Q, b, work) != 0)
		elog(ERROR, "symmetric eigensolver failed on a %d x %d Rayleigh-Ritz problem", b, b);
	worst = ritz_rotate(n, b, X, Y, Q, theta, nres);
	pfree(H);
	pfree(Q);
	pfree(work);
	return worst;
}

/*
 * Each step: Rayleigh-Ritz on span X, its b x b problem by the tridiagonal
 * solver (fit_eigh_top: at b = 288, 9 ms against dsyev's 41), then X <- A X
 * orthonormalized, one product.  The error of pair j falls by about
 * theta_{b+1} / theta_j a step, so this pays only from a start near the
 * answer; the last step's rate says when maxit steps would not reach tol.
 */
bool
eigen_subspace_iterate(const EigenOp *op, double *X, double *AX, int b, double *theta, int nres,
					   double tol, int maxit)
{
	int			n = op->n;
	double	   *H = palloc(sizeof(double) * b * b),
			   *Q = palloc(sizeof(double) * b * b),
				prev = INFINITY;
	bool		done;

	for (int it = 0;; it++)
	{
		double		worst;

		ritz_matrix(n, b, X, AX, H);
		fit_eigh_top(b, H, b, theta, Q, b);
		worst = ritz_rotate(n, b, X, AX, Q, theta, nres);
		if ((done = worst <= tol) || it >= maxit || !(worst < prev) ||
			worst * pow(worst / prev, maxit - it) > tol)
			break;
		prev = worst;
		CHECK_FOR_INTERRUPTS();
		if (op->iterations != NULL)
			(*op->iterations)++;
		memcpy(X, AX, sizeof(double) * n * b);
		eigen_orthonormalize_block(op, X, b);
		eigen_apply(op, X, b, AX);
	}
	pfree(H);
	pfree(Q);
	return done;
}

/* ------------------------------------------------------------------------
 * Block LOBPCG
 * ------------------------------------------------------------------------
 */

/*
 * Orthonormal basis Q (n x q) of the columns of M (n x mb), and AQ from AM
 * by the same transformation (A linear), by SVQB: the eigenvectors of the
 * column-scaled Gram matrix, dropping directions below rounding, so a block
 * that has lost rank gives fewer columns instead of failing.  M, AM are
 * replaced by Q, AQ (stride mb); returns q.
 */
static int
svqb(int n, int mb, double *M, double *AM, double *work)
{
	double	   *G = work,
			   *V = G + mb * mb,
			   *lam = V + mb * mb,
			   *dinv = lam + mb,
			   *T = dinv + mb,
			   *eigwork = T + mb * mb,
			   *C = palloc(sizeof(double) * n * mb);
	int			q = 0;
	double		top = 0.0;


	linalg_gemm(true, false, mb, mb, n, 1.0, M, mb, M, mb, 0.0, G, mb);
	for (int j = 0; j < mb; j++)
		top = Max(top, G[j * mb + j]);
	/* columns at rounding level of the largest are dropped (scaled to zero), as are NaNs */
	for (int j = 0; j < mb; j++)
		dinv[j] = G[j * mb + j] > 1e-28 * top ? 1.0 / sqrt(G[j * mb + j]) : 0.0;
	for (int i = 0; i < mb; i++)
		for (int j = 0; j < mb; j++)
			G[i * mb + j] *= dinv[i] * dinv[j];
	if (linalg_eigh_small(mb, G, lam, V, mb, eigwork) != 0)
		elog(ERROR, "symmetric eigensolver failed on a %d x %d Gram matrix", mb, mb);
	while (q < mb && lam[q] > 1e-12 * Max(lam[0], 1e-300))
		q++;
	/* T = D^-1 V_q Lambda_q^-1/2 (mb x q, stride mb) */
	for (int i = 0; i < mb; i++)
		for (int j = 0; j < q; j++)
			T[i * mb + j] = dinv[i] * V[i * mb + j] / sqrt(lam[j]);
	if (q > 0)
	{
		linalg_copy(n, mb, M, mb, C, mb);
		linalg_gemm(false, false, n, q, mb, 1.0, C, mb, T, mb, 0.0, M, mb);
		linalg_copy(n, mb, AM, mb, C, mb);
		linalg_gemm(false, false, n, q, mb, 1.0, C, mb, T, mb, 0.0, AM, mb);
	}
	pfree(C);
	return q;
}

/*
 * One LOBPCG run: the operator, the block X (n x b) with AX = A X and its
 * Ritz values theta; the residuals R, the last step P (p columns in use) and
 * their images; the search block M = [R, P] (n x mb) with AM; the
 * Rayleigh-Ritz problem H, Q, ev of [X, M] (up to 3b x 3b); scratch.
 */
typedef struct Lobpcg
{
	const EigenOp *op;
	int			n;
	int			b;
	int			p;
	double	   *X;
	double	   *AX;
	double	   *theta;
	double	   *R;
	double	   *AR;
	double	   *P;
	double	   *AP;
	double	   *M;
	double	   *AM;
	double	   *H;
	double	   *Q;
	double	   *ev;
	double	   *Cx;
	double	   *work;
} Lobpcg;

/*
 * The search block M (n x mb) deflated and made orthogonal to X, twice for
 * rounding: M -= X (X'M), and the same combination of AX from AM's last np
 * columns.
 */
static void
project_out(Lobpcg *s, int mb, int np)
{
	int			n = s->n,
				b = s->b;

	for (int pass = 0; pass < 2; pass++)
	{
		if (s->op->deflate != NULL)
			s->op->deflate(s->op->arg, s->M, mb);
		linalg_gemm(true, false, b, mb, n, 1.0, s->X, b, s->M, mb, 0.0, s->Cx, mb);
		linalg_gemm(false, false, n, mb, b, -1.0, s->X, b, s->Cx, mb, 1.0, s->M, mb);
		if (np > 0)
			linalg_gemm(false, false, n, np, b, -1.0, s->AX, b, s->Cx + (mb - np), mb, 1.0,
						s->AM + (mb - np), mb);
	}
}

static void
lobpcg_begin(Lobpcg *s, const EigenOp *op, double *X, double *AX, int b, double *theta)
{
	int64		nb = (int64) op->n * b,
				m3 = 3 * b;

	s->op = op;
	s->n = op->n;
	s->b = b;
	s->p = 0;
	s->X = X;
	s->AX = AX;
	s->theta = theta;
	s->R = MemoryContextAllocHuge(CurrentMemoryContext,
								  sizeof(double) * (8 * nb + 2 * m3 * m3 + m3 + 2 * b * b +
													12 * b * b + 4 * b + LINALG_EIGH_SMALL_WORK(m3)));
	s->AR = s->R + nb;
	s->P = s->AR + nb;
	s->AP = s->P + nb;
	s->M = s->AP + nb;
	s->AM = s->M + 2 * nb;
	s->H = s->AM + 2 * nb;
	s->Q = s->H + m3 * m3;
	s->ev = s->Q + m3 * m3;
	s->Cx = s->ev + m3;
	s->work = s->Cx + 2 * b * b;
}

/*
 * The search block M = [R, P] (n x *mb) orthogonal to X (twice, for
 * rounding), A R by one product, then M orthonormal with AM alongside:
 * Cholesky QR twice (orthonormal to rounding), SVQB when the block has lost
 * rank.  Returns the columns kept, q (0: none).
 */
static int
lobpcg_search_block(Lobpcg *s, int *mb)
{
	int			n = s->n,
				b = s->b,
				p;

	if (3 * b > n)
		s->p = 0;				/* no room for P beside X and R */
	p = s->p;
	*mb = b + p;
	linalg_copy(n, b, s->R, b, s->M, *mb);
	if (p > 0)
	{
		linalg_copy(n, p, s->P, b, s->M + b, *mb);
		linalg_copy(n, p, s->AP, b, s->AM + b, *mb);
	}
	project_out(s, *mb, p);
	linalg_copy(n, b, s->M, *mb, s->R, b);
	eigen_apply(s->op, s->R, b, s->AR);
	linalg_copy(n, b, s->AR, b, s->AM, *mb);
	if (linalg_chol_orth(n, *mb, s->M, *mb, s->AM, *mb, s->work) == 0 &&
		linalg_chol_orth(n, *mb, s->M, *mb, s->AM, *mb, s->work) == 0)
		return *mb;
	return svqb(n, *mb, s->M, s->AM, s->work);
}

/*
 * Rayleigh-Ritz on S = [X, Q] (Q the q orthonormal columns of M, stride mb):
 * theta from H = S'AS, then P = Q C_bottom, X = X C_top + P (and the same
 * for the images under A).
 */
static void
lobpcg_ritz_step(Lobpcg *s, int mb, int q)
{
	int			n = s->n,
				b = s->b,
				k = b + q;
	double	   *H = s->H,
			   *Q = s->Q;

	linalg_gemm(true, false, b, b, n, 1.0, s->X, b, s->AX, b, 0.0, H, k);
	linalg_gemm(true, false, b, q, n, 1.0, s->X, b, s->AM, mb, 0.0, H + b, k);
	linalg_gemm(true, false, q, q, n, 1.0, s->M, mb, s->AM, mb, 0.0, H + b * k + b, k);
	/* the lower left block is the upper right's transpose; the diagonal blocks are averaged */
	for (int i = 0; i < k; i++)
		for (int j = 0; j < i; j++)
			H[i * k + j] = H[j * k + i] = (i >= b && j < b) ? H[j * k + i] :
				0.5 * (H[j * k + i] + H[i * k + j]);
	if (linalg_eigh_small(k, H, s->ev, Q, k, s->work) != 0)
		elog(ERROR, "symmetric eigensolver failed on a %d x %d Rayleigh-Ritz problem", k, k);
	memcpy(s->theta, s->ev, sizeof(double) * b);
	linalg_gemm(false, false, n, b, q, 1.0, s->M, mb, Q + b * k, k, 0.0, s->P, b);
	linalg_gemm(false, false, n, b, q, 1.0, s->AM, mb, Q + b * k, k, 0.0, s->AP, b);
	linalg_copy(n, b, s->X, b, s->R, b);
	linalg_copy(n, b, s->AX, b, s->AR, b);
	linalg_gemm(false, false, n, b, b, 1.0, s->R, b, Q, k, 0.0, s->X, b);
	linalg_axpy((int64) n * b, 1.0, s->P, s->X);
	linalg_gemm(false, false, n, b, b, 1.0, s->AR, b, Q, k, 0.0, s->AX, b);
	linalg_axpy((int64) n * b, 1.0, s->AP, s->AX);
	s->p = b;
}

/*
 * The iterate with the smallest residual so far.  Near the rounding floor,
 * [X, R, P] can lose orthogonality faster than the Cholesky QR of the
 * search block detects, and one Rayleigh-Ritz step then throws X far off
 * (the LSA corpus's devel at d = 1536, to a tolerance of 1e-13 lambda_max:
 * a residual of 2e-6, then 2e-3 on a restart, then 3.5e3, with a Ritz value
 * 5e4 times the operator's top eigenvalue); a run that did not converge
 * ends at its best iterate instead of its last.
 */
typedef struct LobpcgBest
{
	double		worst;			/* its largest residual norm (INFINITY: none yet) */
	double	   *X,
			   *AX,
			   *theta;
} LobpcgBest;

static void
lobpcg_keep_best(const Lobpcg *s, LobpcgBest *best, double worst)
{
	int64		nb = (int64) s->n * s->b;

	if (!(worst < best->worst))
		return;
	if (best->X == NULL)
	{
		best->X = palloc(sizeof(double) * (2 * nb + s->b));
		best->AX = best->X + nb;
		best->theta = best->AX + nb;
	}
	best->worst = worst;
	memcpy(best->X, s->X, sizeof(double) * nb);
	memcpy(best->AX, s->AX, sizeof(double) * nb);
	memcpy(best->theta, s->theta, sizeof(double) * s->b);
}

/*
 * When restore, X, AX and theta back to the best iterate (every iterate of
 * a run that did not converge was offered to lobpcg_keep_best, the last one
 * included); the copy freed.
 */
static void
lobpcg_end_best(Lobpcg *s, LobpcgBest *best, bool restore)
{
	int64		nb = (int64) s->n * s->b;

	if (best->X == NULL)
		return;
	if (restore)
	{
		memcpy(s->X, best->X, sizeof(double) * nb);
		memcpy(s->AX, best->AX, sizeof(double) * nb);
		memcpy(s->theta, best->theta, sizeof(double) * s->b);
	}
	pfree(best->X);
}

/*
 * Each iteration applies A once, to the b residual columns, and takes
 * Rayleigh-Ritz over [X, R, P] (P the last step).
 */
bool
eigen_lobpcg(const EigenOp *op, double *X, double *AX, int b, double *theta, int nres, double tol,
			 int maxit)
{
	Lobpcg		s;
	bool		done = false;
	double		anchor = INFINITY;
	int			anchor_it = 0;
	LobpcgBest	best = {INFINITY, NULL, NULL, NULL};

	lobpcg_begin(&s, op, X, AX, b, theta);
	fit_rayleigh_ritz(s.n, b, X, AX, theta, 0);
	for (int it = 0;; it++)
	{
		double		worst = residuals(s.n, b, X, AX, theta, nres, s.R);
		int			mb,
					q;

		if ((done = worst <= tol))
			break;
		lobpcg_keep_best(&s, &best, worst);
		/* stop at maxit, or when the residual has not halved in STAGNATION iterations (rounding) */
		if (it == 0 || worst < 0.5 * anchor)
		{
			anchor = worst;
			anchor_it = it;
		}
		if (it >= maxit || it - anchor_it >= LOBPCG_STAGNATION)
			break;
		CHECK_FOR_INTERRUPTS();
		if (op->iterations != NULL)
			(*op->iterations)++;
		q = lobpcg_search_block(&s, &mb);
		if (q == 0)
			break;
		lobpcg_ritz_step(&s, mb, q);
	}
	lobpcg_end_best(&s, &best, !done);
	pfree(s.R);
	return done;
}

/*
 * Rayleigh-Ritz on span [X, Y], the start of a warm LOBPCG: X (n x b)
 * orthonormal with AX = A X, Y (n x m, m <= b) with AY = A Y known without a
 * product (from an earlier one).  Y is made orthogonal to X (twice); a column
 * left shorter than min_norm is dropped, since its image, a difference of
 * nearly equal images, would carry too little of its own; X, AX and theta
 * become the top b Ritz pairs of the span.  Returns the columns of Y used
 * (0: X, AX unchanged).
 */
int
eigen_ritz_extend(const EigenOp *op, double *X, double *AX, int b, const double *Y, const double *AY,
				  int m, double *theta, double min_norm)
{
	Lobpcg		s;
	int			n = op->n,
				q = 0;

	Assert(m <= b);
	lobpcg_begin(&s, op, X, AX, b, theta);
	linalg_copy(n, m, Y, m, s.M, m);
	linalg_copy(n, m, AY, m, s.AM, m);
	project_out(&s, m, m);
	for (int j = 0; j < m; j++)
	{
		double		r = 0.0;

		for (int i = 0; i < n; i++)
			r += s.M[(int64) i * m + j] * s.M[(int64) i * m + j];
		if (sqrt(r) >= min_norm)
		{
			q++;
			continue;
		}
		for (int i = 0; i < n; i++)
			s.M[(int64) i * m + j] = s.AM[(int64) i * m + j] = 0.0;
	}
	if (q > 0)
		q = svqb(n, m, s.M, s.AM, s.work);
	if (q > 0)
		lobpcg_ritz_step(&s, m, q);
	pfree(s.R);
	return q;
}

/* ------------------------------------------------------------------------
 * The top eigenvalue of an explicit matrix
 * ------------------------------------------------------------------------
 */

void
eigen_top_pairs(const EigenOp *op, uint64 seed, double *X, int b, double *theta, int nres,
				double rtol, int maxit)
{
	double	   *AX = palloc(sizeof(double) * op->n * b);

	fit_fill_gaussian(&seed, op->n, b, X, b);
	eigen_orthonormalize_block(op, X, b);
	eigen_apply(op, X, b, AX);
	/* the first Rayleigh-Ritz step gives the scale of the tolerance */
	eigen_lobpcg(op, X, AX, b, theta, nres, 0.0, 0);
	eigen_lobpcg(op, X, AX, b, theta, nres, rtol * Max(theta[0], 1e-300), maxit);
	pfree(AX);
}

double
fit_top_eigenvalue_op(const EigenOp *op, double rtol)
{
	int			b = Min(op->n, TOP_EIGENVALUE_BLOCK);
	double	   *X = palloc(sizeof(double) * op->n * b),
			   *theta = palloc(sizeof(double) * b),
				top;

	eigen_top_pairs(op, UINT64CONST(0x9E3779B97F4A7C15), X, b, theta, 1, rtol,
					TOP_EIGENVALUE_MAX_ITER);
	top = theta[0];
	pfree(X);
	pfree(theta);
	return top;
}

double
fit_top_eigenvalue(int n, const double *A, double rtol)
{
	EigenOp		op = {n, NULL, NULL, NULL, A, NULL, 0, NULL, NULL};

	return fit_top_eigenvalue_op(&op, rtol);
}
