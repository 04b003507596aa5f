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
 * two-loop recursion on the stored (s, y) pairs, vector transport by
 * projection, Armijo backtracking along a QR retraction.  Line-search
 * evaluations are rounds too.  Reference: shared/oracle/grassmann_lbfgs.py.
 * The recursion's initial inverse Hessian is preconditioned column by
 * column (precondition_at): without it the strongest global column sets
 * the step of all, and where the weak columns sit on a flat spectrum (a fit
 * past the data's rank) L-BFGS crawls at the rate of their eigengap.
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "miscadmin.h"

#include "eigen.h"
#include "fit_sums.h"
#include "linalg.h"
#include "solver_lbfgs.h"

/* The run hook of its row in the solver table (fit.c): aid is an LbfgsAid, or NULL. */
extern FIT_SOLVER_RUN(solver_lbfgs_run);

#define MEMORY LBFGS_MEMORY
#define ARMIJO 1e-4
#define MIN_STEP 1e-10			/* backtracking gives up below this */
#define STALL_ROUNDS 5			/* iterations without progress in f or in the gradient */
#define ROUNDING 1e-14			/* relative change of f treated as rounding */
#define RESPONSE_FACTOR 0.3		/* best-response residual / gradient norm */
/*
 * The objective converged where U cannot (a flat spectrum): the smallest
 * curvature the pairs saw, s'y / s's, is below FLAT_CURVATURE x
 * lambda_max (the eigengaps U must resolve are so small that the rest of
 * the gradient moves U among nearly equal directions and f only by
 * rounding), the gradient does not shrink, and either f gained at most
 * FLAT_GAIN of itself over the last FLAT_WINDOW iterations, or the gain
 * still to come, estimated from the last two windows' gains G0, G1 as a
 * linear rate q = G1 / G0 gives it (G1 q / (1 - q); within 30% of the
 * truth where the rate is steady, bench/flat_bench.sh), is at most
 * FLAT_REMAIN of f.  FLAT_REMAIN is 10x below the gain the search counts
 * as a better optimum (HOP_GAIN in fit_search.c), so two runs the rule
 * stopped in one basin still compare as one optimum.
 */
#define FLAT_WINDOW 10
#define FLAT_HISTORY LBFGS_FLAT_HISTORY
#define FLAT_GAIN 1e-12
#define FLAT_REMAIN 1e-11
#define FLAT_CURVATURE 1e-3
StaticAssertDecl(FLAT_HISTORY == 2 * FLAT_WINDOW + 1, "the flat rule keeps two windows and one");
/* The weakest column's variance the preconditioner scales for, / the strongest's. */
#define PRECOND_FLOOR 1e-3

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
	double	   *P;				/* the preconditioner at U (r1 x r1), from U'(sum_i w_i S_i)U */
	double	   *Pnew;			/* the same at the line search's trial point */
	double	   *S[MEMORY];		/* s_j, transported to the current U */
	double	   *Y[MEMORY];		/* y_j (for minimizing -f) */
	double		rho[MEMORY];
	int			npairs;
	int			rounds;
	int			max_rounds;
	FitSums    *sums;
	int			seen;			/* iterations of this run (and of the run it continues) */
	double		fh[FLAT_HISTORY];	/* f and the gradient norm at iteration t, slot t % */
	double		gh[FLAT_HISTORY];	/* FLAT_HISTORY (this iteration's: f, gnorm) */
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

/*
 * The preconditioner P (r1 x r1) at U from the gram H = U'(sum_i w_i S_i)U / W
 * (destroyed): P = Q diag(theta_max / max(theta_j, PRECOND_FLOOR theta_max)) Q'.
 * The Hessian of -f on column j of U (in the eigenbasis Q of H) is about
 * theta_j - (the variance U leaves out), so a direction scaled by 1/theta_j
 * column by column has the curvatures of all columns on one scale: the strong
 * columns no longer set the step of the weak ones.
 */
static void
precondition_at(const Lbfgs *lb, double *H, double *P)
{
	int			r = lb->r1;
	double	   *Q,
			   *theta,
			   *T;

	if (r == 0)
		return;
	Q = palloc(sizeof(double) * r * r);
	theta = palloc(sizeof(double) * r);
	T = palloc(sizeof(double) * r * r);
	for (int a = 0; a < r; a++)
		for (int b = 0; b < a; b++)
			H[a * r + b] = H[b * r + a] = 0.5 * (H[a * r + b] + H[b * r + a]);
	fit_eigh_top(r, H, r, theta, Q, r);
	for (int j = 0; j < r; j++)
	{
		double		t = theta[0] > 0.0 ? theta[0] / Max(theta[j], PRECOND_FLOOR * theta[0]) : 1.0;

		for (int a = 0; a < r; a++)
			T[a * r + j] = Q[a * r + j] * t;
	}
	linalg_gemm(false, true, r, r, r, 1.0, T, r, Q, r, 0.0, P, r);
	pfree(Q);
	pfree(theta);
	pfree(T);
}

/* One round: f, the Riemannian gradient and the preconditioner at U into *f, G, P; returns ||G||. */
static double
evaluate(Lbfgs *lb, const double *U, double *f, double *G, double *P)
{
	FitSums    *s = lb->sums;
	int			r = lb->r1;
	double	   *H = palloc(sizeof(double) * Max(r * r, 1));

	CHECK_FOR_INTERRUPTS();
	fit_sums_zero(s, lb->d, lb->r1);
#ifdef PERPCA_TRACE_READS
	/* client_math.c's read trace: which round the reads below belong to */
	elog(LOG, "perpca round %d", lb->rounds + 1);
#endif
	lb->be->evaluate(lb->be, U, response_tolerance(lb), s);
	lb->rounds++;
	*f = s->objective / s->weight;
	memcpy(G, s->U, sizeof(double) * lb->n);
	linalg_scale_column((int) lb->n, G, 1, 0, 1.0 / s->weight);
	/* U'E = U'(sum_i w_i S_i)U / W: the clients' V_i are orthogonal to U */
	linalg_gemm(true, false, r, r, lb->d, 1.0, U, r, G, r, 0.0, H, r);
	precondition_at(lb, H, P);
	pfree(H);
	project(lb, U, G);
	return sqrt(linalg_dot(lb->n, G, G));
}

/* X <- X P (d x r1): column-wise scaling in the eigenbasis of the gram; stays horizontal. */
static void
precondition(const Lbfgs *lb, double *X)
{
	double	   *T = palloc(sizeof(double) * lb->n);

	memcpy(T, X, sizeof(double) * lb->n);
	linalg_gemm(false, false, lb->d, lb->r1, lb->r1, 1.0, T, lb->r1, lb->P, lb->r1, 0.0, X, lb->r1);
	pfree(T);
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
		double	   *Py = palloc(sizeof(double) * lb->n);

		memcpy(Py, y, sizeof(double) * lb->n);
		precondition(lb, Py);
		precondition(lb, q);
		linalg_scale_column((int) lb->n, q, 1, 0, linalg_dot(lb->n, s, y) / linalg_dot(lb->n, y, Py));
		pfree(Py);
	}
	else
	{
		precondition(lb, q);
		linalg_scale_column((int) lb->n, q, 1, 0, 1.0 / lmax);
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
		*gnew = evaluate(lb, Unew, fnew, Gnew, lb->Pnew);
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
	memcpy(lb->P, lb->Pnew, sizeof(double) * lb->r1 * lb->r1);
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

/* The smallest curvature s'y / s's of the stored pairs (for -f), or +Inf without pairs. */
static double
smallest_curvature(const Lbfgs *lb)
{
	double		mu = INFINITY;

	for (int j = 0; j < lb->npairs; j++)
		mu = Min(mu, 1.0 / (lb->rho[j] * linalg_dot(lb->n, lb->S[j], lb->S[j])));
	return mu;
}

/* Slot of iteration t in the rings fh, gh. */
#define FLAT_SLOT(t) ((t) % FLAT_HISTORY)

/*
 * The gain still to come, from the gains G0, G1 of the last two windows of
 * FLAT_WINDOW iterations at the linear rate q = G1 / G0: G1 q / (1 - q)
 * (of f / N); NAN while the gains do not shrink (no rate yet).
 */
static double
remaining_gain(const Lbfgs *lb)
{
	double		f1,
				g0,
				g1,
				q;

	if (lb->seen < 2 * FLAT_WINDOW)
		return NAN;
	f1 = lb->fh[FLAT_SLOT(lb->seen - FLAT_WINDOW)];
	g0 = f1 - lb->fh[FLAT_SLOT(lb->seen - 2 * FLAT_WINDOW)];
	g1 = lb->f - f1;
	if (!(g0 > 0.0) || !(g1 >= 0.0) || g1 >= g0)
		return NAN;
	q = g1 / g0;
	return g1 * q / (1.0 - q);
}

/*
 * Whether the gradient did not halve over the last two windows, the least
 * norm of each compared: the norm jumps by 10x from one iteration to the
 * next on a flat spectrum (the best responses' residuals), the least of a
 * window does not.
 */
static bool
gradient_steady(const Lbfgs *lb)
{
	double		last = lb->gnorm,
				before = INFINITY;

	if (lb->seen < 2 * FLAT_WINDOW)
		return false;
	for (int t = lb->seen - FLAT_WINDOW + 1; t < lb->seen; t++)
		last = Min(last, lb->gh[FLAT_SLOT(t)]);
	for (int t = lb->seen - 2 * FLAT_WINDOW + 1; t <= lb->seen - FLAT_WINDOW; t++)
		before = Min(before, lb->gh[FLAT_SLOT(t)]);
	return last > 0.5 * before;
}

/*
 * Whether the objective has converged on a flat spectrum (FLAT_*): the
 * smallest curvature is below FLAT_CURVATURE x lambda_max, and either the
 * gradient did not halve over the last window while f gained at most
 * FLAT_GAIN of itself, or the gradient is steady (gradient_steady) and the
 * gain still to come (remaining_gain) is at most FLAT_REMAIN of f.
 */
static bool
flat_converged(const Lbfgs *lb)
{
	double		lmax = lb->be->lambda_max > 0.0 ? lb->be->lambda_max : 1.0;
	double		f0,
				g0;

	if (lb->seen < FLAT_WINDOW || smallest_curvature(lb) > FLAT_CURVATURE * lmax)
		return false;
	f0 = lb->fh[FLAT_SLOT(lb->seen - FLAT_WINDOW)];
	g0 = lb->gh[FLAT_SLOT(lb->seen - FLAT_WINDOW)];
	if (lb->f - f0 <= FLAT_GAIN * fabs(lb->f) && lb->gnorm > 0.5 * g0)
		return true;
	return gradient_steady(lb) && remaining_gain(lb) <= FLAT_REMAIN * fabs(lb->f);
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

/* Start from mem's pairs and, for a continued run, its evaluation of U; else evaluate U. */
static void
lbfgs_resume(Lbfgs *lb, const LbfgsMemory *mem, int rounds)
{
	if (mem != NULL)
	{
		lb->npairs = mem->npairs;
		memcpy(lb->S, mem->S, sizeof(lb->S));
		memcpy(lb->Y, mem->Y, sizeof(lb->Y));
		memcpy(lb->rho, mem->rho, sizeof(lb->rho));
	}
	if (rounds > 0 && mem != NULL && mem->evaluated)
	{
		/* a continued run: U was evaluated at the end of the last call */
		lb->f = mem->f;
		lb->gnorm = mem->gnorm;
		memcpy(lb->G, mem->G, sizeof(double) * lb->n);
		memcpy(lb->P, mem->P, sizeof(double) * lb->r1 * lb->r1);
		/* and the flat rule's history: the run goes on where it stood */
		lb->seen = mem->seen;
		memcpy(lb->fh, mem->fh, sizeof(lb->fh));
		memcpy(lb->gh, mem->gh, sizeof(lb->gh));
	}
	else if (rounds > 0)
	{
		lb->gnorm = evaluate(lb, lb->U, &lb->f, lb->G, lb->P);
		if (lb->diag != NULL)
			fit_trace(lb->diag, lb->rounds, lb->f * lb->be->nclients, lb->gnorm, NAN, 0.0,
					  lb->sums);
	}
}

/* Leave the run's pairs, objective and gradient in mem (evaluated: they hold U's evaluation). */
static void
lbfgs_keep(const Lbfgs *lb, LbfgsMemory *mem, bool evaluated)
{
	if (mem->G == NULL)
		mem->G = palloc(sizeof(double) * Max(lb->n, 1));
	if (mem->P == NULL)
		mem->P = palloc(sizeof(double) * Max(lb->r1 * lb->r1, 1));
	memcpy(mem->P, lb->P, sizeof(double) * lb->r1 * lb->r1);
	mem->evaluated = evaluated;
	mem->f = lb->f;
	mem->gnorm = lb->gnorm;
	memcpy(mem->G, lb->G, sizeof(double) * lb->n);
	mem->npairs = lb->npairs;
	memcpy(mem->S, lb->S, sizeof(lb->S));
	memcpy(mem->Y, lb->Y, sizeof(lb->Y));
	memcpy(mem->rho, lb->rho, sizeof(lb->rho));
	mem->seen = lb->seen;
	memcpy(mem->fh, lb->fh, sizeof(lb->fh));
	memcpy(mem->gh, lb->gh, sizeof(lb->gh));
}

/* The solver's state for a run of at most rounds rounds from U. */
static Lbfgs
lbfgs_start(FitBackend *be, const FitOptions *opts, FitDiagnostics *diag, double *U, int rounds)
{
	Lbfgs		lb = {0};

	lb.be = be;
	lb.opts = opts;
	lb.diag = diag;
	lb.d = be->d;
	lb.r1 = be->r1;
	lb.n = (int64) be->d * be->r1;
	lb.U = U;
	lb.G = palloc(sizeof(double) * Max(lb.n, 1));
	lb.P = palloc0(sizeof(double) * Max(be->r1 * be->r1, 1));
	lb.Pnew = palloc0(sizeof(double) * Max(be->r1 * be->r1, 1));
	lb.gnorm = NAN;
	lb.max_rounds = rounds;
	lb.sums = fit_sums_create(be->d, be->r1);
	return lb;
}

/*
 * After a step (from objective fprev and gradient norm gprev): why the run
 * stops here, or FIT_END_NONE.  It stops in a basin the watch knows, after
 * STALL_ROUNDS steps that gain nothing and do not halve the gradient
 * (stall counts them), or when the objective has converged on a flat
 * spectrum (flat_converged).
 */
static FitEnd
stop_after_step(Lbfgs *lb, const LbfgsWatch *watch, double fprev, double gprev, int *stall,
				bool *converged)
{
	double		lmax = lb->be->lambda_max > 0.0 ? lb->be->lambda_max : 1.0;

	if (watch != NULL && watch->check(watch->arg, lb->U, lb->f * lb->be->nclients))
		return FIT_END_KNOWN_BASIN;
	*stall = (lb->f - fprev <= ROUNDING * fabs(lb->f) && lb->gnorm > 0.5 * gprev) ? *stall + 1 : 0;
	if (*stall >= STALL_ROUNDS)
	{
		*converged = lb->gnorm <= stalled_tolerance(lb->opts, lmax);
		return FIT_END_STALLED;
	}
	if (flat_converged(lb))
	{
		*converged = true;
		return FIT_END_FLAT;
	}
	return FIT_END_NONE;
}

/* The iteration's scratch, n each: the direction, the trial U and gradient, the new pair. */
typedef struct Scratch
{
	double	   *p;
	double	   *Unew;
	double	   *Gnew;
	double	   *s;
	double	   *y;
} Scratch;

/*
 * One turn of the iteration from lb's U: converged there, or a step and
 * the stopping rules after it (iteration counts the steps taken).  Returns
 * how the run ends here, or FIT_END_NONE to go on.
 */
static FitEnd
turn(Lbfgs *lb, Scratch *w, const LbfgsWatch *watch, int *iteration, int *stall, bool *converged)
{
	double		lmax = lb->be->lambda_max > 0.0 ? lb->be->lambda_max : 1.0;
	double		fprev,
				gprev;

	report(lb, *iteration);
	if (lb->gnorm <= lb->opts->tolerance * lmax)
	{
		*converged = true;
		return FIT_END_CONVERGED;
	}
	fprev = lb->fh[FLAT_SLOT(lb->seen)] = lb->f;
	gprev = lb->gh[FLAT_SLOT(lb->seen)] = lb->gnorm;
	if (!iterate(lb, w->p, w->Unew, w->Gnew, w->s, w->y))
	{
		/* no step along the quasi-Newton direction: forget the pairs, try the gradient */
		if (lb->npairs > 0 && lb->rounds < lb->max_rounds)
		{
			lb->npairs = 0;
			return FIT_END_NONE;
		}
		/* no step improves f or the gradient: as far as the arithmetic goes */
		*converged = lb->gnorm <= stalled_tolerance(lb->opts, lmax);
		return lb->rounds < lb->max_rounds ? FIT_END_STALLED : FIT_END_BUDGET;
	}
	(*iteration)++;
	lb->seen++;
	return stop_after_step(lb, watch, fprev, gprev, stall, converged);
}

/*
 * L-BFGS from U (updated in place); returns rounds run, sets *converged,
 * *objective, *gnorm and how the run ended (*end: converged, stalled, the
 * watch, the rounds, or the objective converged on a flat spectrum).  With
 * mem, starts from its pairs and leaves the run's pairs in it.
 */
static int
solver_lbfgs(FitBackend *be, const FitOptions *opts, double *U, int rounds, bool *converged,
			 double *objective, double *gnorm, FitDiagnostics *diag, LbfgsMemory *mem,
			 const LbfgsWatch *watch, FitEnd *end)
{
	Lbfgs		lb = lbfgs_start(be, opts, diag, U, rounds);
	int64		n = lb.n;
	Scratch		w = {palloc(sizeof(double) * n), palloc(sizeof(double) * n),
					 palloc(sizeof(double) * n), palloc(sizeof(double) * n),
					 palloc(sizeof(double) * n)};
	int			stall = 0,
				iteration = 0;

	*converged = false;
	lbfgs_resume(&lb, mem, rounds);
	*end = FIT_END_BUDGET;
	while (rounds > 0 && n > 0 &&
		   (*end = turn(&lb, &w, watch, &iteration, &stall, converged)) == FIT_END_NONE)
		;
	if (n == 0 && lb.rounds > 0)
	{
		*converged = true;
		*end = FIT_END_CONVERGED;
	}
	*objective = lb.f * be->nclients;
	*gnorm = lb.gnorm;
	if (mem != NULL)
		lbfgs_keep(&lb, mem, rounds > 0);
	fit_sums_free(lb.sums);		/* its exact accumulators: 8 MB at d = 3,072, r1 = 5, per run */
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
	mem->seen = 0;
	if (mem->G != NULL)
		pfree(mem->G);
	mem->G = NULL;
	if (mem->P != NULL)
		pfree(mem->P);
	mem->P = NULL;
	mem->evaluated = false;
}

int
solver_lbfgs_run(FitBackend *be, const FitOptions *opts, double *U, int rounds,
				 FitDiagnostics *diag, FitStartReport *rep, void *aid)
{
	const LbfgsAid *a = aid;
	double		gnorm;

	return solver_lbfgs(be, opts, U, rounds, &rep->converged, &rep->objective, &gnorm, diag,
						a != NULL ? a->memory : NULL, a != NULL ? a->watch : NULL, &rep->ended);
}
