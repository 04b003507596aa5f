/*
 * solver_lbfgs.c -- Riemannian L-BFGS over U on the Grassmannian (solver => 'lbfgs')
 *
 * For a fixed U the best V_i is closed form, the top r2_i eigenvectors of
 * (I - UU')S_i(I - UU'), so the problem is a maximization of
 *     f(U) = sum_i w_i 1/2 [tr(U'S_iU) + sum_{k <= r2_i} lambda_k(D_i)] / sum_i w_i
 * over span(U).  Its Euclidean gradient is sum_i w_i (I - V_iV_i')S_iU / W
 * (envelope theorem); the Riemannian one is that projected with (I - UU').
 * One round is one evaluation: the backend's clients compute their best
 * responses against the broadcast U and return w_i f_i and their d x r1
 * gradient terms -- the message sizes of the paper's rounds.  Here: the
 * two-loop recursion on the stored (s, y) pairs with a preconditioned
 * initial matrix (each direction of U in the eigenbasis of U'SU scaled by
 * 1 / its variance, from the same sums), vector transport by projection,
 * Armijo backtracking along a QR retraction.  Line-search
 * evaluations are rounds too.  Reference: shared/oracle/grassmann_lbfgs.py.
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "miscadmin.h"

#include "fit_sums.h"
#include "linalg.h"
#include "solver_lbfgs.h"

#define MEMORY LBFGS_MEMORY
#define ARMIJO 1e-4
#define MIN_STEP 1e-10			/* backtracking gives up below this */
#define STALL_ROUNDS 5			/* iterations without progress in f or in the gradient */
#define ROUNDING 1e-14			/* relative change of f treated as rounding */
#define RESPONSE_FACTOR 0.3		/* best-response residual / gradient norm */

/* The L-BFGS state: iterate, its objective and gradient, the pairs. */
typedef struct Lbfgs
{
	FitBackend *be;
	const FitOptions *opts;
	FitDiagnostics *diag;
	int			d;
	int			r1;
	int64		n;				/* d * r1 */
	double	   *U;
	double		f;
	double	   *G;				/* Riemannian gradient at U */
	double		gnorm;
	double	   *S[MEMORY];		/* s_j, transported to the current U */
	double	   *Y[MEMORY];		/* y_j (for minimizing -f) */
	double		rho[MEMORY];
	int			npairs;
	int			rounds;
	int			max_rounds;
	FitSums    *sums;
	double	   *M;				/* r1 x r1: U'(sum_i w_i S_i)U / W of the last evaluation */
	double	   *Mu;				/* r1 x r1: the same at U (the preconditioner's) */
	double	   *Q;				/* r1 x r1: the preconditioner's basis (eigenvectors of M at U) */
	double	   *pre;			/* r1: its scale per column of Q (1 / eigenvalue) */
	double	   *T;				/* d x r1 workspace */
	double	   *Py;				/* d x r1 workspace */
} Lbfgs;

/* X <- X - U (U'X): projection onto the horizontal space at U. */
static void
project(const Lbfgs *lb, const double *U, double *X)
{
	double	   *UtX = palloc(sizeof(double) * lb->r1 * lb->r1);

	linalg_gemm(true, false, lb->r1, lb->r1, lb->d, 1.0, U, lb->r1, X, lb->r1, 0.0, UtX, lb->r1);
	linalg_gemm(false, false, lb->d, lb->r1, lb->r1, -1.0, U, lb->r1, UtX, lb->r1, 1.0, X, lb->r1);
	pfree(UtX);
}

/*
 * Residual the clients' best responses must reach: tighter as the gradient
 * shrinks.  An inexact V_i is still feasible, so f stays the objective of
 * a real point; a residual of RESPONSE_FACTOR x the gradient norm halves
 * the clients' products against 1e-2 x (rounds unchanged on the real
 * corpora of bench/solver_bench.sh).
 */
static double
response_tolerance(const Lbfgs *lb)
{
	double		lmax = lb->be->lambda_max > 0.0 ? lb->be->lambda_max : 1.0;
	double		rel = isfinite(lb->gnorm) ? RESPONSE_FACTOR * lb->gnorm / lmax : 1e-4;

	return lmax * Max(Min(rel, 1e-3), 1e-13);
}

/* One round: f and the Riemannian gradient at U into *f, G; returns ||G||. */
static double
evaluate(Lbfgs *lb, const double *U, double *f, double *G)
{
	FitSums    *s = lb->sums;

	CHECK_FOR_INTERRUPTS();
	fit_sums_zero(s, lb->d, lb->r1);
	lb->be->evaluate(lb->be, U, response_tolerance(lb), s);
	lb->rounds++;
	*f = s->objective / s->weight;
	memcpy(G, s->U, sizeof(double) * lb->n);
	linalg_scale_column((int) lb->n, G, 1, 0, 1.0 / s->weight);
	/* U'G = U'(sum_i w_i S_i)U / W: the clients' V_i are orthogonal to U */
	linalg_gemm(true, false, lb->r1, lb->r1, lb->d, 1.0, U, lb->r1, G, lb->r1, 0.0, lb->M, lb->r1);
	project(lb, U, G);
	return sqrt(linalg_dot(lb->n, G, G));
}

/*
 * The preconditioner at the current U, from M of its evaluation: column j
 * of a tangent vector in the eigenbasis of M scaled by 1 / lambda_j (the
 * weak global directions move further per step than the strong ones).
 */
static void
precondition_set(Lbfgs *lb)
{
	double	   *A = palloc(sizeof(double) * lb->r1 * lb->r1);
	double		floor;

	memcpy(lb->Mu, lb->M, sizeof(double) * lb->r1 * lb->r1);
	for (int i = 0; i < lb->r1; i++)
		for (int j = 0; j < lb->r1; j++)
			A[i * lb->r1 + j] = 0.5 * (lb->M[i * lb->r1 + j] + lb->M[j * lb->r1 + i]);
	fit_eigh_top(lb->r1, A, lb->r1, lb->pre, lb->Q, lb->r1);
	floor = 1e-3 * Max(lb->pre[0], 1e-300);
	for (int j = 0; j < lb->r1; j++)
		lb->pre[j] = 1.0 / Max(lb->pre[j], floor);
	pfree(A);
}

/* q <- P q, P the preconditioner (q Q diag(pre) Q'). */
static void
precondition(const Lbfgs *lb, double *q)
{
	linalg_gemm(false, false, lb->d, lb->r1, lb->r1, 1.0, q, lb->r1, lb->Q, lb->r1, 0.0, lb->T, lb->r1);
	for (int j = 0; j < lb->r1; j++)
		linalg_scale_column(lb->d, lb->T, lb->r1, j, lb->pre[j]);
	linalg_gemm(false, true, lb->d, lb->r1, lb->r1, 1.0, lb->T, lb->r1, lb->Q, lb->r1, 0.0, q, lb->r1);
}

/* Ascent direction: the two-loop recursion on the pairs, projected at U. */
static void
direction(const Lbfgs *lb, double *q)
{
	double		alpha[MEMORY];
	double		lmax = lb->be->lambda_max > 0.0 ? lb->be->lambda_max : 1.0;

	memcpy(q, lb->G, sizeof(double) * lb->n);
	for (int j = lb->npairs - 1; j >= 0; j--)
	{
		alpha[j] = lb->rho[j] * linalg_dot(lb->n, lb->S[j], q);
		linalg_axpy(lb->n, -alpha[j], lb->Y[j], q);
	}
	if (lb->npairs > 0)
	{
		const double *s = lb->S[lb->npairs - 1],
				   *y = lb->Y[lb->npairs - 1];
		double		yPy;

		/* gamma = s'y / y'Py, H0 = gamma P */
		precondition(lb, q);
		memcpy(lb->Py, y, sizeof(double) * lb->n);
		precondition(lb, lb->Py);
		yPy = linalg_dot(lb->n, y, lb->Py);
		linalg_scale_column((int) lb->n, q, 1, 0, linalg_dot(lb->n, s, y) / yPy);
	}
	else
	{
		/* no pairs yet: P scaled to 1 / lambda_max on the strongest column, the others in proportion */
		precondition(lb, q);
		linalg_scale_column((int) lb->n, q, 1, 0, 1.0 / (lmax * lb->pre[0]));
	}
	for (int j = 0; j < lb->npairs; j++)
	{
		double		beta = lb->rho[j] * linalg_dot(lb->n, lb->Y[j], q);

		linalg_axpy(lb->n, alpha[j] - beta, lb->S[j], q);
	}
	project(lb, lb->U, q);
}

/* Store the pair (s, y) after a step, transported to the new U; drop the oldest. */
static void
remember(Lbfgs *lb, double *s, double *y)
{
	double		sy = linalg_dot(lb->n, s, y);

	for (int j = 0; j < lb->npairs; j++)
	{
		project(lb, lb->U, lb->S[j]);
		project(lb, lb->U, lb->Y[j]);
	}
	if (!(sy > 1e-16 * sqrt(linalg_dot(lb->n, s, s) * linalg_dot(lb->n, y, y))))
		return;
	if (lb->npairs == MEMORY)
	{
		double	   *s0 = lb->S[0],
				   *y0 = lb->Y[0];

		memmove(lb->S, lb->S + 1, sizeof(double *) * (MEMORY - 1));
		memmove(lb->Y, lb->Y + 1, sizeof(double *) * (MEMORY - 1));
		memmove(lb->rho, lb->rho + 1, sizeof(double) * (MEMORY - 1));
		lb->S[MEMORY - 1] = s0;
		lb->Y[MEMORY - 1] = y0;
		lb->npairs--;
	}
	if (lb->S[lb->npairs] == NULL)
	{
		lb->S[lb->npairs] = palloc(sizeof(double) * lb->n);
		lb->Y[lb->npairs] = palloc(sizeof(double) * lb->n);
	}
	memcpy(lb->S[lb->npairs], s, sizeof(double) * lb->n);
	memcpy(lb->Y[lb->npairs], y, sizeof(double) * lb->n);
	lb->rho[lb->npairs] = 1.0 / sy;
	lb->npairs++;
}

/*
 * Armijo backtracking along the QR retraction from U in direction p (slope
 * = <p, G> > 0).  On success the new point is in Unew, fnew, Gnew; returns
 * the step length, or 0 when no step was accepted within the rounds.
 */
static double
line_search(Lbfgs *lb, const double *p, double slope, double *Unew, double *fnew, double *Gnew,
			double *gnew)
{
	for (double t = 1.0; t >= MIN_STEP && lb->rounds < lb->max_rounds; t *= 0.5)
	{
		memcpy(Unew, lb->U, sizeof(double) * lb->n);
		linalg_axpy(lb->n, t, p, Unew);
		fit_retract(FIT_RETRACT_QR, lb->d, lb->r1, Unew, lb->r1);
		*gnew = evaluate(lb, Unew, fnew, Gnew);
		if (lb->diag != NULL)
			fit_trace(lb->diag, lb->rounds, *fnew * lb->be->nclients, *gnew, NAN, t, lb->sums);
		if (*fnew >= lb->f + ARMIJO * t * slope)
			return t;
		/* near the optimum f changes below rounding: accept a step that shrinks the gradient */
		if (fabs(*fnew - lb->f) <= ROUNDING * fabs(lb->f) && *gnew < lb->gnorm)
			return t;
	}
	return 0.0;
}

/* One iteration; returns false when no step could be taken (stall or round cap). */
static bool
iterate(Lbfgs *lb, double *p, double *Unew, double *Gnew, double *s, double *y)
{
	double		slope,
				t,
				fnew,
				gnew;

	direction(lb, p);
	slope = linalg_dot(lb->n, p, lb->G);
	if (!(slope > 0.0))
	{
		/* not an ascent direction: forget the pairs, take the gradient */
		lb->npairs = 0;
		direction(lb, p);
		slope = linalg_dot(lb->n, p, lb->G);
	}
	t = line_search(lb, p, slope, Unew, &fnew, Gnew, &gnew);
	if (t == 0.0)
		return false;
	/* s = transport(t p), y = -(Gnew - transport(G)), both at Unew */
	for (int64 x = 0; x < lb->n; x++)
	{
		s[x] = t * p[x];
		y[x] = lb->G[x];
	}
	project(lb, Unew, s);
	project(lb, Unew, y);
	for (int64 x = 0; x < lb->n; x++)
		y[x] -= Gnew[x];
	memcpy(lb->U, Unew, sizeof(double) * lb->n);
	memcpy(lb->G, Gnew, sizeof(double) * lb->n);
	precondition_set(lb);
	lb->f = fnew;
	lb->gnorm = gnew;
	remember(lb, s, y);
	return true;
}

/*
 * The gradient norm below which a stalled iteration counts as converged:
 * when no step changes f above rounding, f cannot resolve a gradient much
 * below sqrt(eps) lambda_max, so that -- or 10 x the tolerance, if larger --
 * is as converged as the arithmetic allows.
 */
static double
stalled_tolerance(const FitOptions *opts, double lmax)
{
	return Max(10.0 * opts->tolerance, sqrt(DBL_EPSILON)) * lmax;
}

/* NOTICE of the current iterate (verbose). */
static void
report(const Lbfgs *lb, int iteration)
{
	if (lb->opts->verbose && (iteration == 0 || fit_report_round(iteration)))
		ereport(NOTICE,
				(errmsg("iteration %d (round %d): objective %.12g, gradient norm %.3e",
						iteration, lb->rounds, lb->f * lb->be->nclients, lb->gnorm)));
}

int
solver_lbfgs(FitBackend *be, const FitOptions *opts, double *U, int rounds, bool *converged,
			 double *objective, double *gnorm, FitDiagnostics *diag, LbfgsMemory *mem,
			 const LbfgsWatch *watch)
{
	Lbfgs		lb = {0};
	double		lmax = be->lambda_max > 0.0 ? be->lambda_max : 1.0;
	int64		n = (int64) be->d * be->r1;
	double	   *p = palloc(sizeof(double) * n),
			   *Unew = palloc(sizeof(double) * n),
			   *Gnew = palloc(sizeof(double) * n),
			   *s = palloc(sizeof(double) * n),
			   *y = palloc(sizeof(double) * n);
	int			stall = 0,
				iteration = 0;
	double		fprev,
				gprev;

	lb.be = be;
	lb.opts = opts;
	lb.diag = diag;
	lb.d = be->d;
	lb.r1 = be->r1;
	lb.n = n;
	lb.U = U;
	lb.G = palloc(sizeof(double) * Max(n, 1));
	lb.gnorm = NAN;
	lb.max_rounds = rounds;
	lb.sums = fit_sums_create(be->d, be->r1);
	lb.M = palloc0(sizeof(double) * Max(be->r1 * be->r1, 1));
	lb.Mu = palloc0(sizeof(double) * Max(be->r1 * be->r1, 1));
	lb.Q = palloc0(sizeof(double) * Max(be->r1 * be->r1, 1));
	lb.pre = palloc0(sizeof(double) * Max(be->r1, 1));
	lb.T = palloc(sizeof(double) * Max(n, 1));
	lb.Py = palloc(sizeof(double) * Max(n, 1));
	if (mem != NULL)
	{
		lb.npairs = mem->npairs;
		memcpy(lb.S, mem->S, sizeof(lb.S));
		memcpy(lb.Y, mem->Y, sizeof(lb.Y));
		memcpy(lb.rho, mem->rho, sizeof(lb.rho));
	}
	*converged = false;
	if (rounds > 0 && mem != NULL && mem->evaluated)
	{
		/* a continued run: U was evaluated at the end of the last call */
		lb.f = mem->f;
		lb.gnorm = mem->gnorm;
		memcpy(lb.G, mem->G, sizeof(double) * n);
		memcpy(lb.M, mem->M, sizeof(double) * be->r1 * be->r1);
		precondition_set(&lb);
	}
	else if (rounds > 0)
	{
		lb.gnorm = evaluate(&lb, U, &lb.f, lb.G);
		if (n > 0)
			precondition_set(&lb);
		if (diag != NULL)
			fit_trace(diag, lb.rounds, lb.f * be->nclients, lb.gnorm, NAN, 0.0, lb.sums);
	}
	while (rounds > 0 && n > 0)
	{
		report(&lb, iteration);
		if (lb.gnorm <= opts->tolerance * lmax)
		{
			*converged = true;
			break;
		}
		fprev = lb.f;
		gprev = lb.gnorm;
		if (!iterate(&lb, p, Unew, Gnew, s, y))
		{
			/* no step along the quasi-Newton direction: forget the pairs, try the gradient */
			if (lb.npairs > 0 && lb.rounds < rounds)
			{
				lb.npairs = 0;
				continue;
			}
			/* no step improves f or the gradient: as far as the arithmetic goes */
			*converged = lb.gnorm <= stalled_tolerance(opts, lmax);
			break;
		}
		iteration++;
		if (watch != NULL && watch->check(watch->arg, lb.U))
			break;
		stall = (lb.f - fprev <= ROUNDING * fabs(lb.f) && lb.gnorm > 0.5 * gprev) ? stall + 1 : 0;
		if (stall >= STALL_ROUNDS)
		{
			*converged = lb.gnorm <= stalled_tolerance(opts, lmax);
			break;
		}
	}
	if (n == 0 && lb.rounds > 0)
		*converged = true;
	*objective = lb.f * be->nclients;
	*gnorm = lb.gnorm;
	if (mem != NULL)
	{
		if (mem->G == NULL)
		{
			mem->G = palloc(sizeof(double) * Max(n, 1));
			mem->M = palloc(sizeof(double) * Max(be->r1 * be->r1, 1));
		}
		mem->evaluated = rounds > 0;
		mem->f = lb.f;
		mem->gnorm = lb.gnorm;
		memcpy(mem->G, lb.G, sizeof(double) * n);
		memcpy(mem->M, lb.Mu, sizeof(double) * be->r1 * be->r1);
		mem->npairs = lb.npairs;
		memcpy(mem->S, lb.S, sizeof(lb.S));
		memcpy(mem->Y, lb.Y, sizeof(lb.Y));
		memcpy(mem->rho, lb.rho, sizeof(lb.rho));
	}
	return lb.rounds;
}

void
lbfgs_memory_free(LbfgsMemory *mem)
{
	for (int j = 0; j < MEMORY; j++)
	{
		if (mem->S[j] != NULL)
			pfree(mem->S[j]);
		if (mem->Y[j] != NULL)
			pfree(mem->Y[j]);
		mem->S[j] = mem->Y[j] = NULL;
	}
	mem->npairs = 0;
	if (mem->G != NULL)
	{
		pfree(mem->G);
		pfree(mem->M);
	}
	mem->G = mem->M = NULL;
	mem->evaluated = false;
}
