/*
 * fit.c -- PerPCA rounds (paper, Algorithm 2), client and server steps, diagnostics
 *
 * The problem, reading S_i, one round (client step, server step), the rounds
 * loop, and the feasible, ordered output with its diagnostics; fit_run picks
 * the method.  Starting points and the one-shot baselines are in fit_start.c.
 *
 * Pure C over double arrays: the only PostgreSQL facilities used are palloc,
 * ereport/elog and CHECK_FOR_INTERRUPTS.  See fit.h for the data layout.
 *
 * Steps are in the paper's convention: the gradient of f_i is S_i W.
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"

#include "utils/memutils.h"

#include "fit.h"
#include "fit_internal.h"
#include "linalg.h"

/* Default step (times 1/max_i lambda_max(S_i)) and bounds of the adaptive step. */
#define FIT_STEP_SCALE 0.5
#define FIT_STEP_MIN_SCALE 0.01
#define FIT_STEP_MAX_SCALE 16.0
/* Power iterations used to estimate lambda_max(S_i). */
#define FIT_POWER_ITERATIONS 200

/* ------------------------------------------------------------------------
 * Small helpers: random numbers, scratch space, retractions
 * ------------------------------------------------------------------------
 */

/* splitmix64: next 64 random bits of the state. */
static uint64
rng_next(uint64 *state)
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
	double		u1 = ((rng_next(state) >> 11) + 1.0) / 9007199254740992.0;
	double		u2 = ((rng_next(state) >> 11) + 1.0) / 9007199254740992.0;

	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* Fill an m x n block (stride ld) with standard normal draws. */
void
fit_fill_gaussian(uint64 *state, int m, int n, double *A, int ld)
{
	for (int i = 0; i < m; i++)
		for (int j = 0; j < n; j++)
			A[(int64) i * ld + j] = rng_gaussian(state);
}

/* Grow the problem's LAPACK workspace (kept where the problem lives) to at least n doubles. */
static double *
work_ensure(FitProblem *p, int64 n)
{
	if (n > p->worklen)
	{
		if (p->work)
			pfree(p->work);
		p->work = MemoryContextAllocHuge(GetMemoryChunkContext(p), sizeof(double) * n);
		p->worklen = n;
	}
	return p->work;
}

/* Orthonormalize the m x n block A (stride lda) with the chosen retraction (polar: Gram route, SVD when ill-conditioned). */
void
fit_retract(FitProblem *p, FitRetraction how, int m, int n, double *A, int lda)
{
	int			info;

	if (how == FIT_RETRACT_QR)
		info = linalg_qr_orth(m, n, A, lda, work_ensure(p, 2 * (int64) n));
	else if (linalg_polar_gram(m, n, A, lda, work_ensure(p, LINALG_POLAR_GRAM_WORK(m, n))) == 0)
		info = 0;
	else
		info = linalg_polar(m, n, A, lda, work_ensure(p, LINALG_POLAR_WORK(m, n)));
	if (info != 0)
		elog(ERROR, "retraction failed (LAPACK info %d)", info);
}

/* Top k eigenpairs of the symmetric d x d A (destroyed), vectors as columns of Z. */
void
fit_eigh_top(FitProblem *p, int d, double *A, int k, double *values, double *Z, int ldz)
{
	int			info = linalg_eigh_top(d, A, k, values, Z, ldz,
									   work_ensure(p, LINALG_EIGH_WORK(d, k)));

	if (info != 0)
		elog(ERROR, "symmetric eigensolver failed (LAPACK info %d)", info);
}

/* Top k left singular vectors of A (m x n, destroyed) into Z (stride ldz), singular values into sigma (or NULL). */
void
fit_left_singular(FitProblem *p, int m, int n, double *A, int k, double *Z, int ldz, double *sigma)
{
	int			info = linalg_left_singular(m, n, A, k, Z, ldz, sigma,
											work_ensure(p, LINALG_LSV_WORK(m, n)));

	if (info != 0)
		elog(ERROR, "singular value decomposition failed (LAPACK info %d)", info);
}

/* ||P_A - P_B||_F for orthonormal m x r blocks A and B: sqrt(2) ||B - A A'B||_F. */
double
fit_projector_distance(int m, int r, const double *A, int lda, const double *B, int ldb,
					   double *scratch)
{
	double	   *AtB = scratch;
	double	   *D = scratch + (int64) r * r;

	if (r == 0)
		return 0.0;
	linalg_gemm(true, false, r, r, m, 1.0, A, lda, B, ldb, 0.0, AtB, r);
	linalg_copy(m, r, B, ldb, D, r);
	linalg_gemm(false, false, m, r, r, -1.0, A, lda, AtB, r, 1.0, D, r);
	return sqrt(2.0 * linalg_dot((int64) m * r, D, D));
}

/* ------------------------------------------------------------------------
 * The problem
 * ------------------------------------------------------------------------
 */

/* Set up a problem: each client's iterate and scratch, and the server's U. */
FitProblem *
fit_problem_create(int d, int r1, int nclients, FitClient *clients)
{
	FitProblem *p = palloc0(sizeof(FitProblem));
	int			kmax = r1;

	p->d = d;
	p->r1 = r1;
	p->nclients = nclients;
	p->clients = clients;
	for (int i = 0; i < nclients; i++)
	{
		FitClient  *c = &clients[i];

		c->k = r1 + c->r2;
		c->W = palloc0(sizeof(double) * d * Max(c->k, 1));
		c->SW = palloc0(sizeof(double) * d * Max(c->k, 1));
		c->Ui = palloc0(sizeof(double) * d * Max(r1, 1));
		c->tmp = palloc0(sizeof(double) * d * Max(c->k, 1));
		c->M = palloc0(sizeof(double) * Max(c->k * c->k, 1));
		c->variance = palloc0(sizeof(double) * Max(c->k, 1));
		kmax = Max(kmax, c->k);
	}
	p->U = palloc0(sizeof(double) * d * Max(r1, 1));
	p->Ubar = palloc0(sizeof(double) * d * Max(r1, 1));
	p->Uprev = palloc0(sizeof(double) * d * Max(r1, 1));
	p->Mom = palloc0(sizeof(double) * d * Max(r1, 1));
	p->uvariance = palloc0(sizeof(double) * Max(r1, 1));
	p->scratch = palloc0(sizeof(double) * (d + kmax) * Max(kmax, 1));
	p->rU = r1;
	return p;
}

/*
 * out (d x k) = S_i W: one product with a dense S_i, or yscale Y'(Y W) +
 * delta (delta'W) with a thin one.  With fit_client_dense and client_factor
 * below, the only functions that read S_i.
 */
void
fit_client_apply(const FitProblem *p, const FitClient *c, const double *W, int k, double *out)
{
	int			d = p->d;
	double	   *YW;

	if (c->S != NULL)
	{
		/* S_i' W: S_i is symmetric, and OpenBLAS packs a transposed A faster */
		linalg_gemm(true, false, d, k, d, 1.0, c->S, d, W, k, 0.0, out, k);
		return;
	}
	YW = palloc(sizeof(double) * Max(c->nrows + 1, 1) * Max(k, 1));
	linalg_gemm(false, false, c->nrows, k, d, 1.0, c->Y, d, W, k, 0.0, YW, k);
	linalg_gemm(true, false, d, k, c->nrows, c->yscale, c->Y, d, YW, k, 0.0, out, k);
	if (c->delta != NULL)
	{
		linalg_gemm(false, false, 1, k, d, 1.0, c->delta, d, W, k, 0.0, YW, k);
		linalg_gemm(false, false, d, k, 1, 1.0, c->delta, 1, YW, k, 1.0, out, k);
	}
	pfree(YW);
}

/* A (d x d) += alpha S_i, forming S_i from a thin client once. */
void
fit_client_dense(const FitProblem *p, const FitClient *c, double alpha, double *A)
{
	int			d = p->d;
	double	   *T;

	if (c->S != NULL)
	{
		linalg_axpy((int64) d * d, alpha, c->S, A);
		return;
	}
	T = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * d * d);
	memset(T, 0, sizeof(double) * d * d);
	linalg_syrk_upper(d, c->nrows, c->yscale, c->Y, T);
	if (c->delta != NULL)
		linalg_syr_upper(d, 1.0, c->delta, T);
	linalg_symmetrize_upper(d, T);
	linalg_axpy((int64) d * d, alpha, T, A);
	pfree(T);
}

/* Columns of the thin factor F (d x m) with S_i = F F': sqrt(yscale) Y' and delta. */
static int
client_factor_width(const FitClient *c)
{
	return c->nrows + (c->delta != NULL ? 1 : 0);
}

/* F (d x m, m = client_factor_width) with S_i = F F', for a thin client. */
static double *
client_factor(const FitProblem *p, const FitClient *c)
{
	int			d = p->d,
				m = client_factor_width(c);
	double		scale = sqrt(c->yscale);
	double	   *F = palloc(sizeof(double) * d * m);

	for (int j = 0; j < d; j++)
	{
		for (int r = 0; r < c->nrows; r++)
			F[(int64) j * m + r] = scale * c->Y[(int64) r * d + j];
		if (c->delta != NULL)
			F[(int64) j * m + c->nrows] = c->delta[j];
	}
	return F;
}

/* client_top_eigen on the d x d matrix: D = S_i, deflated by U when given. */
static void
client_top_eigen_dense(FitProblem *p, FitClient *c, const double *U, int k,
					   double *values, double *Z, int ldz)
{
	int			d = p->d,
				r1 = p->r1;
	double	   *D = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * d * d);

	memset(D, 0, sizeof(double) * d * d);
	fit_client_dense(p, c, 1.0, D);
	if (U != NULL && r1 > 0)
	{
		/* D = S - U Y' - Y U' + U (U'Y) U'  with Y = S U, as D -= U Y2' + Y2 U', Y2 = Y - U (U'Y)/2 */
		double	   *Y = palloc(sizeof(double) * d * r1);
		double	   *G = palloc(sizeof(double) * r1 * r1);

		fit_client_apply(p, c, U, r1, Y);
		linalg_gemm(true, false, r1, r1, d, 1.0, U, r1, Y, r1, 0.0, G, r1);
		linalg_gemm(false, false, d, r1, r1, -0.5, U, r1, G, r1, 1.0, Y, r1);
		linalg_gemm(false, true, d, d, r1, -1.0, U, r1, Y, r1, 1.0, D, d);
		linalg_gemm(false, true, d, d, r1, -1.0, Y, r1, U, r1, 1.0, D, d);
		pfree(Y);
		pfree(G);
	}
	fit_eigh_top(p, d, D, k, values, Z, ldz);
	pfree(D);
}

/*
 * Top k eigenpairs of S_i, or of (I - P_U) S_i (I - P_U) when U (d x r1) is
 * given: vectors as columns of Z (stride ldz), values descending.  A thin
 * client takes the SVD of its d x m factor instead of a d x d eigensolve.
 */
void
fit_client_top_eigen(FitProblem *p, FitClient *c, const double *U, int k,
					 double *values, double *Z, int ldz)
{
	int			d = p->d,
				r1 = p->r1;

	if (k == 0)
		return;
	if (c->S == NULL && k <= Min(d, client_factor_width(c)))
	{
		int			m = client_factor_width(c);
		double	   *F = client_factor(p, c);

		if (U != NULL && r1 > 0)
		{
			double	   *UtF = palloc(sizeof(double) * r1 * m);

			linalg_gemm(true, false, r1, m, d, 1.0, U, r1, F, m, 0.0, UtF, m);
			linalg_gemm(false, false, d, m, r1, -1.0, U, r1, UtF, m, 1.0, F, m);
			pfree(UtF);
		}
		fit_left_singular(p, d, m, F, k, Z, ldz, values);
		for (int j = 0; j < k; j++)
			values[j] *= values[j];
		pfree(F);
		return;
	}
	client_top_eigen_dense(p, c, U, k, values, Z, ldz);
}

/* lambda_max(S_i) by power iteration from a fixed start (Rayleigh quotient). */
static double
client_lambda_max(FitProblem *p, FitClient *c)
{
	int			d = p->d;
	double	   *x = palloc(sizeof(double) * d);
	double	   *y = palloc(sizeof(double) * d);
	uint64		state = UINT64CONST(20240101);
	double		lambda = 0.0;

	fit_fill_gaussian(&state, d, 1, x, 1);
	for (int it = 0; it < FIT_POWER_ITERATIONS; it++)
	{
		double		norm = sqrt(linalg_dot(d, x, x));
		double		rq;

		if (norm == 0.0)
			break;
		linalg_scale_column(d, x, 1, 0, 1.0 / norm);
		fit_client_apply(p, c, x, 1, y);
		rq = linalg_dot(d, x, y);
		memcpy(x, y, sizeof(double) * d);
		if (it > 10 && fabs(rq - lambda) <= 1e-13 * fabs(rq))
		{
			lambda = rq;
			break;
		}
		lambda = rq;
	}
	pfree(x);
	pfree(y);
	return lambda;
}

/* max_i lambda_max(S_i). */
static double
problem_lambda_max(FitProblem *p)
{
	double		lmax = 0.0;

	for (int i = 0; i < p->nclients; i++)
	{
		CHECK_FOR_INTERRUPTS();
		lmax = Max(lmax, client_lambda_max(p, &p->clients[i]));
	}
	return lmax;
}

/* ------------------------------------------------------------------------
 * One round: client step and server step
 * ------------------------------------------------------------------------
 */

/* V_i <- GR(V_i - U U'V_i): make the client's V orthogonal to the current U. */
void
fit_client_deflate(FitProblem *p, FitClient *c, FitRetraction retraction)
{
	int			d = p->d,
				r1 = p->r1,
				r2 = c->r2,
				k = c->k;
	double	   *V = c->W + r1;
	double	   *UtV = c->M;

	if (r2 == 0)
		return;
	linalg_gemm(true, false, r1, r2, d, 1.0, c->W, k, V, k, 0.0, UtV, r2);
	linalg_gemm(false, false, d, r2, r1, -1.0, c->W, k, UtV, r2, 1.0, V, k);
	fit_retract(p, retraction, d, r2, V, k);
}

/*
 * client_deflate inside a round: one Cholesky QR of [U, V_i] (the same span
 * as any retraction, and the round only depends on the span of V_i), the
 * explicit route when that is ill-conditioned.
 */
static void
client_deflate_fast(FitProblem *p, FitClient *c, FitRetraction retraction)
{
	if (linalg_deflate_orth(p->d, p->r1, c->r2, c->W, c->k,
							work_ensure(p, LINALG_CHOL_WORK(c->k))) != 0)
		fit_client_deflate(p, c, retraction);
}

/* Orthonormalize the m x n block A: Cholesky QR, else the chosen retraction (for spans only). */
static void
orthonormalize(FitProblem *p, FitRetraction how, int m, int n, double *A, int lda)
{
	if (linalg_chol_orth(m, n, A, lda, work_ensure(p, LINALG_CHOL_WORK(n))) != 0)
		fit_retract(p, how, m, n, A, lda);
}

/* SW <- (I - W W') S W, the tangent gradient (W orthonormal); return 1/2 tr(W'SW). */
double
fit_client_gradient(FitProblem *p, FitClient *c)
{
	int			d = p->d,
				k = c->k;
	double	   *M = c->M;
	double		trace = 0.0;

	fit_client_apply(p, c, c->W, k, c->SW);
	linalg_gemm(true, false, k, k, d, 1.0, c->W, k, c->SW, k, 0.0, M, k);
	for (int j = 0; j < k; j++)
		trace += M[j * k + j];
	linalg_gemm(false, false, d, k, k, -1.0, c->W, k, M, k, 1.0, c->SW, k);
	return 0.5 * trace;
}

/*
 * Choice 1: U_i = U + step G_U (unretracted), V_i = GR(V_i + step G_V).
 * The change of P_V follows from G_V alone (V_i'G_V = 0).  With lazy_local
 * V_i + step G_V stays unretracted, as the next deflation retracts its span,
 * and W's first r1 columns hold U_i until the next step copies U back.
 */
static void
client_stgd(FitProblem *p, FitClient *c, FitRetraction retraction, double step)
{
	int			d = p->d,
				r1 = p->r1,
				k = c->k;

	c->change = 0.0;
	if (!p->skip_change)
		c->change = linalg_step_change(d, c->r2, step, c->SW + r1, k,
									   work_ensure(p, LINALG_STEP_CHANGE_WORK(c->r2)));
	if (c->change < 0.0)
		elog(ERROR, "projector change failed (I + step^2 G'G not positive definite)");
	/* W <- W + step G: [U_i, V_i + step G_V]; the next round copies U back in */
	linalg_axpy((int64) d * k, step, c->SW, c->W);
	linalg_copy(d, r1, c->W, k, c->Ui, r1);
	if (!p->lazy_local)
	{
		orthonormalize(p, retraction, d, c->r2, c->W + r1, k);
		linalg_copy(d, r1, p->U, r1, c->W, k);
	}
}

/* Choice 2: [U_i, V_i] = polar(W + step S W), with S W = G + W M. */
static void
client_polar_step(FitProblem *p, FitClient *c, double step)
{
	int			d = p->d,
				r1 = p->r1,
				r2 = c->r2,
				k = c->k;
	double	   *T = c->tmp;

	linalg_copy(d, k, c->W, k, T, k);
	linalg_axpy((int64) d * k, step, c->SW, T);
	linalg_gemm(false, false, d, k, k, step, c->W, k, c->M, k, 1.0, T, k);
	fit_retract(p, FIT_RETRACT_POLAR, d, k, T, k);
	linalg_copy(d, r1, T, k, c->Ui, r1);
	c->change = p->skip_change ? 0.0 :
		fit_projector_distance(d, r2, c->W + r1, k, T + r1, k, p->scratch);
	linalg_copy(d, r2, T + r1, k, c->W + r1, k);
}

/*
 * The CLIENT STEP of one round for one client, given the broadcast U:
 * deflate and retract V_i, then take an St-GD step (choice 1) or a polar
 * step (choice 2).  Leaves U_i in c->Ui, the new V_i in c->W, the tangent
 * gradient at the round's start in c->SW and its objective in c->objective.
 */
void
fit_client_step(FitProblem *p, FitClient *c, FitUpdate update,
				FitRetraction retraction, double step)
{
	linalg_copy(p->d, p->r1, p->U, p->r1, c->W, c->k);
	client_deflate_fast(p, c, retraction);
	c->objective = fit_client_gradient(p, c);
	if (update == FIT_UPDATE_STGD)
		client_stgd(p, c, retraction, step);
	else
		client_polar_step(p, c, step);
}

/*
 * The SERVER STEP: U = GR(U + D + momentum * M), where D = sum_i w_i U_i - U
 * is the clients' weighted average step and M the previous server move
 * projected onto the tangent space at U (heavy ball; momentum 0 is the
 * paper's average-then-retract).  Keeps the previous U in p->Uprev.
 */
void
fit_server_step(FitProblem *p, FitRetraction retraction, double momentum)
{
	int			d = p->d,
				r1 = p->r1;
	double	   *G = p->scratch;

	if (r1 == 0)
		return;
	memset(p->Ubar, 0, sizeof(double) * d * r1);
	for (int i = 0; i < p->nclients; i++)
		linalg_axpy((int64) d * r1, p->clients[i].weight, p->clients[i].Ui, p->Ubar);
	/* M <- momentum * (M - U sym(U'M)) + (Ubar - U) */
	if (momentum != 0.0)
	{
		linalg_gemm(true, false, r1, r1, d, 1.0, p->U, r1, p->Mom, r1, 0.0, G, r1);
		for (int a = 0; a < r1; a++)
			for (int b = 0; b < a; b++)
				G[a * r1 + b] = G[b * r1 + a] = 0.5 * (G[a * r1 + b] + G[b * r1 + a]);
		linalg_gemm(false, false, d, r1, r1, -1.0, p->U, r1, G, r1, 1.0, p->Mom, r1);
	}
	for (int64 x = 0; x < (int64) d * r1; x++)
		p->Mom[x] = momentum * p->Mom[x] + p->Ubar[x] - p->U[x];
	memcpy(p->Uprev, p->U, sizeof(double) * d * r1);
	linalg_axpy((int64) d * r1, 1.0, p->Mom, p->U);
	fit_retract(p, retraction, d, r1, p->U, r1);
}

/* ------------------------------------------------------------------------
 * Diagnostics
 * ------------------------------------------------------------------------
 */

/*
 * KKT residual from the clients' tangent gradients (c->SW after a client
 * step or client_gradient):  ||sum_i w_i G_U,i||^2 + sum_i w_i ||G_V,i||^2.
 */
static double
kkt_from_gradients(FitProblem *p)
{
	int			d = p->d,
				r1 = p->r1;
	double	   *gU = p->scratch;
	double		kkt = 0.0;

	/* elementwise block sums: one pass over each client's d x k gradient */
	memset(gU, 0, sizeof(double) * d * r1);
	for (int i = 0; i < p->nclients; i++)
	{
		FitClient  *c = &p->clients[i];
		double		vv = 0.0;

		for (int row = 0; row < d; row++)
		{
			const double *g = c->SW + (int64) row * c->k;

			for (int j = 0; j < r1; j++)
				gU[row * r1 + j] += c->weight * g[j];
			for (int j = r1; j < c->k; j++)
				vv += g[j] * g[j];
		}
		kkt += c->weight * vv;
	}
	return kkt + linalg_dot((int64) d * r1, gU, gU);
}

/* sum_i N w_i of the clients' objectives (the paper's f for equal weights). */
static double
total_objective(FitProblem *p)
{
	double		f = 0.0;

	for (int i = 0; i < p->nclients; i++)
		f += p->clients[i].weight * p->clients[i].objective;
	return f * p->nclients;
}

/* theta_est = 1 - lambda_max(sum_i w_i V_i V_i'); NaN without local components. */
static double
theta_estimate(FitProblem *p)
{
	int			d = p->d,
				r1 = p->r1;
	double	   *A = palloc0(sizeof(double) * d * d);
	double		top = 0.0;
	bool		any = false;

	for (int i = 0; i < p->nclients; i++)
	{
		FitClient  *c = &p->clients[i];

		if (c->r2 == 0)
			continue;
		any = true;
		linalg_gemm(false, true, d, d, c->r2, c->weight, c->W + r1, c->k,
					c->W + r1, c->k, 1.0, A, d);
	}
	if (!any)
	{
		pfree(A);
		return NAN;
	}
	fit_eigh_top(p, d, A, 1, &top, p->scratch, 1);
	pfree(A);
	return 1.0 - top;
}

/* ------------------------------------------------------------------------
 * Rounds
 * ------------------------------------------------------------------------
 */

/* The step of round 1: the given one, or FIT_STEP_SCALE / lambda_max. */
void
fit_initial_step(FitProblem *p, double step)
{
	p->step = step > 0.0 ? step : FIT_STEP_SCALE / (p->lambda_max > 0.0 ? p->lambda_max : 1.0);
}

/* Rounds 1, 2, 5, 10, 20, 50, 100, ... get a verbose NOTICE. */
bool
fit_report_round(int t)
{
	while (t >= 10 && t % 10 == 0)
		t /= 10;
	return t == 1 || t == 2 || t == 5;
}

/*
 * Adaptive step ("bold driver"): grow the step by 10% while the round
 * improved, halve it (and drop the server's momentum) when it did not.  A
 * round improved when the objective rose, or -- once objective changes are
 * below rounding, near the optimum -- when the KKT residual did not grow;
 * without the second test a too-long step can oscillate unseen.
 */
void
fit_adapt_step(FitProblem *p, double previous, double previous_kkt)
{
	double		lmax = p->lambda_max > 0.0 ? p->lambda_max : 1.0;
	double		noise = 1e-14 * fabs(previous);
	bool		worse = p->objective < previous - noise ||
		(fabs(p->objective - previous) <= noise && p->kkt_residual > previous_kkt);

	if (worse)
	{
		p->step = Max(p->step * 0.5, FIT_STEP_MIN_SCALE / lmax);
		memset(p->Mom, 0, sizeof(double) * p->d * p->r1);
	}
	else
		p->step = Min(p->step * 1.1, FIT_STEP_MAX_SCALE / lmax);
}

/* Leave the rounds' fast mode: every V_i orthonormal again, client steps as documented. */
static void
end_rounds(FitProblem *p, FitRetraction retraction)
{
	for (int i = 0; i < p->nclients; i++)
	{
		FitClient  *c = &p->clients[i];

		if (p->lazy_local)
		{
			orthonormalize(p, retraction, p->d, c->r2, c->W + p->r1, c->k);
			linalg_copy(p->d, p->r1, p->U, p->r1, c->W, c->k);
		}
	}
	p->lazy_local = false;
	p->skip_change = false;
}

/*
 * Run up to `rounds` communication rounds from the current state; return how
 * many ran.  Sets *converged when the largest projector change of a round
 * (global or local, Frobenius norm) falls below the tolerance.
 */
int
fit_run_rounds(FitProblem *p, const FitOptions *opts, int rounds, bool report, bool *converged)
{
	double		previous = -INFINITY;
	double		previous_kkt = INFINITY;
	int			t;

	*converged = false;
	memset(p->Mom, 0, sizeof(double) * p->d * p->r1);
	p->lazy_local = true;
	p->skip_change = !(opts->tolerance > 0.0);
	for (t = 1; t <= rounds; t++)
	{
		double		step = p->step;

		CHECK_FOR_INTERRUPTS();
		p->change = 0.0;
		for (int i = 0; i < p->nclients; i++)
		{
			CHECK_FOR_INTERRUPTS();
			fit_client_step(p, &p->clients[i], opts->update, opts->retraction, step);
			p->change = Max(p->change, p->clients[i].change);
		}
		p->objective = total_objective(p);
		p->kkt_residual = (opts->adaptive || report) ? kkt_from_gradients(p) : NAN;
		fit_server_step(p, opts->retraction, opts->adaptive ? FIT_MOMENTUM : 0.0);
		if (!p->skip_change)
			p->change = Max(p->change, fit_projector_distance(p->d, p->r1, p->Uprev, p->r1,
														  p->U, p->r1, p->scratch));
		if (report && (fit_report_round(t) || t == rounds))
			ereport(NOTICE,
					(errmsg("round %d: objective %.10g, kkt residual %.3e, step %.3e",
							t, p->objective, p->kkt_residual, step)));
		if (opts->tolerance > 0.0 && p->change < opts->tolerance)
		{
			*converged = true;
			break;
		}
		if (opts->adaptive)
			fit_adapt_step(p, previous, previous_kkt);
		previous = p->objective;
		previous_kkt = p->kkt_residual;
	}
	end_rounds(p, opts->retraction);
	return Min(t, rounds);
}

/* ------------------------------------------------------------------------
 * Output: feasibility, order, signs, diagnostics
 * ------------------------------------------------------------------------
 */

/* Copy U into the client and deflate + retract V_i twice (feasible to rounding). */
void
fit_client_feasible(FitProblem *p, FitClient *c)
{
	linalg_copy(p->d, p->r1, p->U, p->r1, c->W, c->k);
	fit_client_deflate(p, c, FIT_RETRACT_POLAR);
	fit_client_deflate(p, c, FIT_RETRACT_POLAR);
}

/* fit_client_feasible for every client. */
void
fit_make_feasible(FitProblem *p)
{
	for (int i = 0; i < p->nclients; i++)
		fit_client_feasible(p, &p->clients[i]);
}

/* Rotate the m columns of A (stride lda) to the eigenvectors of B = A'(sum_i w_i S_i)A, or of A'S_cA for one client. */
static void
rotate_to_eigen(FitProblem *p, FitClient *only, double *A, int lda, int m, double *values)
{
	int			d = p->d;
	double	   *X = palloc(sizeof(double) * d * m);
	double	   *Y = palloc(sizeof(double) * d * m);
	double	   *B = palloc0(sizeof(double) * m * m);
	double	   *Q = palloc(sizeof(double) * m * m);

	linalg_copy(d, m, A, lda, X, m);
	for (int i = 0; i < p->nclients; i++)
	{
		FitClient  *c = &p->clients[i];

		if (only != NULL && c != only)
			continue;
		fit_client_apply(p, c, X, m, Y);
		linalg_gemm(true, false, m, m, d, only ? 1.0 : c->weight, X, m, Y, m, 1.0, B, m);
	}
	fit_eigh_top(p, m, B, m, values, Q, m);
	linalg_gemm(false, false, d, m, m, 1.0, X, m, Q, m, 0.0, A, lda);
	linalg_fix_signs(d, m, A, lda);
	pfree(X);
	pfree(Y);
	pfree(B);
	pfree(Q);
}

/* Order global and local components by decreasing variance and fix their signs. */
static void
order_components(FitProblem *p)
{
	if (p->rU > 0)
		rotate_to_eigen(p, NULL, p->U, p->rU, p->rU, p->uvariance);
	for (int i = 0; i < p->nclients; i++)
	{
		FitClient  *c = &p->clients[i];

		CHECK_FOR_INTERRUPTS();
		if (p->rU > 0 && c->lfirst > 0)
			linalg_copy(p->d, p->r1, p->U, p->r1, c->W, c->k);
		fit_order_local(p, c);
	}
}

/* Order one client's local components (W[:, lfirst:k]) by decreasing variance and fix their signs. */
void
fit_order_local(FitProblem *p, FitClient *c)
{
	int			m = c->k - c->lfirst;

	if (m > 0)
		rotate_to_eigen(p, c, c->W + c->lfirst, c->k, m, c->variance + c->lfirst);
}

/* Objective, KKT residual and theta_est of the final (feasible) U, V_i. */
static void
final_diagnostics(FitProblem *p, FitMethod method, FitDiagnostics *diag)
{
	double		f = 0.0;

	diag->kkt_residual = NAN;
	diag->theta_est = NAN;
	if (method == FIT_METHOD_PERPCA || method == FIT_METHOD_DISPCA)
	{
		for (int i = 0; i < p->nclients; i++)
		{
			CHECK_FOR_INTERRUPTS();
			p->clients[i].objective = fit_client_gradient(p, &p->clients[i]);
		}
		diag->objective = total_objective(p);
		diag->kkt_residual = kkt_from_gradients(p);
		diag->theta_est = theta_estimate(p);
		return;
	}
	for (int j = 0; j < p->rU; j++)
		f += p->uvariance[j];
	for (int i = 0; i < p->nclients; i++)
	{
		FitClient  *c = &p->clients[i];

		for (int j = c->lfirst; j < c->k; j++)
			f += c->weight * c->variance[j];
	}
	diag->objective = 0.5 * f * p->nclients;
}

/* ------------------------------------------------------------------------
 * Methods
 * ------------------------------------------------------------------------
 */

/* PerPCA: start, rounds, feasible output. */
static void
fit_perpca(FitProblem *p, const FitOptions *opts, FitDiagnostics *diag)
{
	bool		converged;
	int			ran = fit_start(p, opts, &converged);

	if (!converged && ran < opts->rounds)
		ran += fit_run_rounds(p, opts, opts->rounds - ran, opts->verbose, &converged);
	fit_make_feasible(p);
	diag->rounds = ran;
	diag->converged = converged;
}

/* Run opts->method: start and rounds or a baseline, then ordered output and diagnostics. */
void
fit_run(FitProblem *p, const FitOptions *opts, FitDiagnostics *diag)
{
	memset(diag, 0, sizeof(FitDiagnostics));
	diag->method = opts->method;
	diag->n_clients = p->nclients;
	diag->dim = p->d;
	for (int i = 0; i < p->nclients; i++)
		p->clients[i].lfirst = p->r1;
	p->lambda_max = problem_lambda_max(p);
	fit_initial_step(p, opts->step);
	switch (opts->method)
	{
		case FIT_METHOD_PERPCA:
			fit_perpca(p, opts, diag);
			break;
		case FIT_METHOD_DISPCA:
			fit_dispca(p);
			break;
		case FIT_METHOD_CPCA:
			fit_cpca(p, opts->n_local);
			break;
		case FIT_METHOD_INDIV:
			fit_indiv(p);
			break;
	}
	order_components(p);
	final_diagnostics(p, opts->method, diag);
	diag->step = opts->method == FIT_METHOD_PERPCA ? p->step : NAN;
}
