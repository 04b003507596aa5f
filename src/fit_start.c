/*
 * fit_start.c -- starting U of a fit, through the backend
 *
 * disPCA and Qu: the top r1 left singular vectors of the stacked local PCs
 * (each node sends a compressed basis); pooled: the top r1 eigenvectors of
 * sum_i w_i S_i by subspace iteration on the backend's products; random:
 * seeded Gaussian; given: the caller's U0.  Only U is set here; the paper
 * solver's V_i start is the backend's start_local.
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/memutils.h"

#include "fit_start.h"
#include "linalg.h"

/* Subspace iterations for the pooled start (each is one round trip): exact (paper solver), or a start for L-BFGS. */
#define POOLED_ITERATIONS 300
#define POOLED_ITERATIONS_APPROX 50
/* Residual (/ lambda_max) of the L-BFGS pooled start: a start, refined by the solver (1e-6 took 13-17 products on the corpora of bench/solver_bench.sh, this 4-7, same optima) */
#define POOLED_TOLERANCE_APPROX 1e-3
/* Subspace iterations and residual (/ lambda_max) of the directions a hop brings in. */
#define RESIDUAL_ITERATIONS 30
#define RESIDUAL_TOLERANCE 1e-3

/* U = top r1 left singular vectors of the backend's stacked-PC basis. */
static void
start_stacked(FitBackend *be, bool qu, bool exact, double *U)
{
	int			q;
	double	   *B = be->basis(be, qu, exact, &q);

	be->setup_rounds++;
	if (q < be->r1)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("the clients' local components span %d dimensions, fewer than n_global = %d",
						q, be->r1)));
	fit_left_singular(be->d, q, B, be->r1, U, be->r1, NULL);
	pfree(B);
}

/*
 * Top r eigenvectors of sum_i w_i S_i into U (d x r), values (r) if not
 * NULL: block subspace iteration with Rayleigh-Ritz on the backend's
 * products, to a residual of 1e-13 lambda_max when exact,
 * POOLED_TOLERANCE_APPROX otherwise.
 */
void
fit_pooled_top(FitBackend *be, int r, double *U, double *values, bool exact)
{
	int			d = be->d,
				b = Min(d, r + Max(2, Min(r, 10)));
	double	   *X = palloc(sizeof(double) * d * b),
			   *Y = palloc(sizeof(double) * d * b),
			   *theta = palloc(sizeof(double) * b);
	double		tol = (exact ? 1e-13 : POOLED_TOLERANCE_APPROX) * Max(be->lambda_max, 1e-300) * be->weight;
	uint64		state = UINT64CONST(0x243F6A8885A308D3);

	fit_fill_gaussian(&state, d, b, X, b);
	for (int it = 0, last = exact ? POOLED_ITERATIONS : POOLED_ITERATIONS_APPROX;; it++)
	{
		CHECK_FOR_INTERRUPTS();
		fit_retract(FIT_RETRACT_QR, d, b, X, b);
		be->apply(be, X, b, Y);
		be->setup_rounds++;
		/* X holds orthonormal Ritz vectors when the loop ends */
		if (fit_rayleigh_ritz(d, b, X, Y, theta, r) <= tol || it == last - 1)
			break;
		memcpy(X, Y, sizeof(double) * d * b);
	}
	linalg_copy(d, r, X, b, U, r);
	if (values != NULL)
		for (int j = 0; j < r; j++)
			values[j] = theta[j] / be->weight;
	pfree(X);
	pfree(Y);
	pfree(theta);
}

/* X <- X - U (U'X): X (d x b) orthogonal to the orthonormal U (d x r). */
static void
deflate(int d, int r, const double *U, int b, double *X)
{
	double	   *H = palloc(sizeof(double) * Max(r * b, 1));

	linalg_gemm(true, false, r, b, d, 1.0, U, r, X, b, 0.0, H, b);
	linalg_gemm(false, false, d, b, r, -1.0, U, r, H, b, 1.0, X, b);
	pfree(H);
}

/*
 * Top m eigenvectors of (I - UU')(sum_i w_i S_i)(I - UU') into Z (d x m),
 * U d x r1 orthonormal: the pooled variance that U leaves, by block
 * subspace iteration on the backend's products to a loose residual (a
 * start needs no more); values (m) if not NULL.
 */
void
fit_residual_top(FitBackend *be, const double *U, int m, double *Z, double *values)
{
	int			d = be->d,
				r1 = be->r1,
				b = Min(d - r1, m + Max(2, Min(m, 10)));
	double	   *X = palloc(sizeof(double) * d * b),
			   *Y = palloc(sizeof(double) * d * b),
			   *theta = palloc(sizeof(double) * b);
	double		tol = RESIDUAL_TOLERANCE * Max(be->lambda_max, 1e-300) * be->weight;
	uint64		state = UINT64CONST(0x13198A2E03707344);

	Assert(m <= b);
	fit_fill_gaussian(&state, d, b, X, b);
	for (int it = 0;; it++)
	{
		CHECK_FOR_INTERRUPTS();
		for (int pass = 0; pass < 2; pass++)
		{
			deflate(d, r1, U, b, X);
			fit_retract(FIT_RETRACT_QR, d, b, X, b);
		}
		be->apply(be, X, b, Y);
		be->setup_rounds++;
		deflate(d, r1, U, b, Y);
		if (fit_rayleigh_ritz(d, b, X, Y, theta, m) <= tol || it == RESIDUAL_ITERATIONS - 1)
			break;
		memcpy(X, Y, sizeof(double) * d * b);
	}
	linalg_copy(d, m, X, b, Z, m);
	if (values != NULL)
		for (int j = 0; j < m; j++)
			values[j] = theta[j] / be->weight;
	pfree(X);
	pfree(Y);
	pfree(theta);
}

/* Seeded Gaussian U, QR-orthonormalized. */
static void
start_random(FitBackend *be, uint64 seed, double *U)
{
	uint64		state = seed;

	fit_fill_gaussian(&state, be->d, be->r1, U, be->r1);
	fit_retract(FIT_RETRACT_QR, be->d, be->r1, U, be->r1);
}

void
fit_start_u(FitBackend *be, FitInit how, const FitOptions *opts, double *U)
{
	/* the paper's solver starts exactly as 0.1.0 did; L-BFGS refines any start */
	bool		exact = opts->solver == FIT_SOLVER_PAPER;

	if (be->r1 == 0)
		return;
	switch (how)
	{
		case FIT_INIT_DISPCA:
		case FIT_INIT_QU:
			start_stacked(be, how == FIT_INIT_QU, exact, U);
			break;
		case FIT_INIT_POOLED:
			fit_pooled_top(be, be->r1, U, NULL, exact);
			break;
		case FIT_INIT_RANDOM:
			start_random(be, opts->seed, U);
			break;
		case FIT_INIT_GIVEN:
			memcpy(U, opts->U0, sizeof(double) * be->d * be->r1);
			fit_retract(FIT_RETRACT_POLAR, be->d, be->r1, U, be->r1);
			break;
		case FIT_INIT_BEST:
			elog(ERROR, "init 'best' is not a single start");
	}
}
