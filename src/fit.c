/*
 * fit.c -- one fit, whatever the backend: starts x solver, the best start,
 * the final U and its diagnostics (see fit.h for the layers)
 *
 * Starts: init 'best' runs several starts and keeps the best objective
 * (L-BFGS: each to convergence; the paper's solver: a short probe of each,
 * then the chosen one from the beginning, as 0.1.0 did).  The output is made
 * feasible by the backend (finish), and U is rotated to the eigenvectors of
 * U'(sum_i w_i S_i)U here.
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/memutils.h"

#include "fit.h"
#include "fit_options.h"
#include "fit_start.h"
#include "fit_sums.h"
#include "linalg.h"
#include "solver_lbfgs.h"
#include "solver_paper.h"

/* Rounds of each candidate start that the paper solver's init 'best' probes. */
#define PAPER_PROBE_ROUNDS 10
/* L-BFGS init 'best': starts and hops run to this gradient norm (/ lambda_max), the best then on to the tolerance. */
#define SCREEN_TOLERANCE 1e-6
/* Relative gain of the objective that counts as a better optimum (not rounding). */
#define HOP_GAIN 1e-10
/* Projector distance beyond which a hop's optimum is another basin. */
#define HOP_BASIN 1e-2
/* Projector distance to a known optimum within which a run is in its basin and stops. */
#define BASIN_ENTER 0.25
/* Hops in a row that come back into known basins before the search stops (the landscape is covered). */
#define HOP_KNOWN 3
/* Weakest global directions a hop replaces. */
#define HOP_COLUMNS 2
/* Fewest rounds a hop may run (its budget is otherwise the slowest start's rounds). */
#define HOP_MIN_ROUNDS 5

/* ------------------------------------------------------------------------
 * Starts
 * ------------------------------------------------------------------------
 */

/* The starts that init names, in the order they run; returns their number. */
static int
start_list(const FitOptions *opts, FitInit *list)
{
	int			n = 0;

	if (opts->init != FIT_INIT_BEST)
	{
		list[n++] = opts->init;
		return n;
	}
	if (opts->U0 != NULL)
		list[n++] = FIT_INIT_GIVEN;
	list[n++] = FIT_INIT_DISPCA;
	if (opts->solver == FIT_SOLVER_PAPER)
		list[n++] = FIT_INIT_QU;
	list[n++] = FIT_INIT_POOLED;
	return n;
}

/*
 * The optima the search has found (where its converged runs ended), and a
 * watch on the run under way: a run that comes within BASIN_ENTER of one of
 * them is in its basin and would only converge there again, so it stops.
 */
typedef struct Optima
{
	FitBackend *be;
	int			n;
	double	   *U[FIT_MAX_STARTS];
	int			run[FIT_MAX_STARTS];	/* the run (index into the starts) that found it */
	int			entered;		/* the optimum the watched run came near, or -1 */
} Optima;

/* The known optimum within radius of U, or -1. */
static int
optima_near(const Optima *o, const double *U, double radius)
{
	for (int k = 0; k < o->n; k++)
		if (fit_projector_distance(o->be->d, o->be->r1, o->U[k], o->be->r1, U, o->be->r1) < radius)
			return k;
	return -1;
}

/* Keep U, where run ended, as a new optimum. */
static void
optima_add(Optima *o, const double *U, int run)
{
	int64		size = (int64) o->be->d * o->be->r1;

	o->U[o->n] = palloc(sizeof(double) * Max(size, 1));
	memcpy(o->U[o->n], U, sizeof(double) * size);
	o->run[o->n++] = run;
}

/* LbfgsWatch check: stop a run that has come into a known optimum's basin. */
static bool
optima_watch(void *arg, const double *U)
{
	Optima	   *o = arg;

	o->entered = optima_near(o, U, BASIN_ENTER);
	return o->entered >= 0;
}

/* Run one start with the solver for at most `rounds` rounds; fills its report. */
static void
run_start(FitBackend *be, const FitOptions *opts, FitInit how, int rounds, double *U,
		  double *step, FitDiagnostics *diag, LbfgsMemory *mem, const LbfgsWatch *watch)
{
	FitStartReport *rep = &diag->starts[diag->nstarts];
	double		gnorm;

	diag->current = diag->nstarts++;
	rep->name = fit_init_names[how];
	fit_start_u(be, how, opts, U);
	if (opts->solver == FIT_SOLVER_PAPER)
	{
		be->start_local(be, U, how);
		rep->rounds = solver_paper(be, opts, U, rounds, step, &rep->converged,
								   &rep->objective, diag);
	}
	else
		rep->rounds = solver_lbfgs(be, opts, U, rounds, &rep->converged, &rep->objective,
								   &gnorm, diag, mem, watch);
	if (opts->verbose)
		ereport(NOTICE,
				(errmsg("start %s: objective %.12g after %d rounds%s", rep->name, rep->objective,
						rep->rounds, rep->converged ? " (converged)" : "")));
}

/* The start with the highest objective (the first on ties). */
static int
best_start(const FitDiagnostics *diag, int from)
{
	int			best = from;

	for (int j = from + 1; j < diag->nstarts; j++)
		if (diag->starts[j].objective > diag->starts[best].objective)
			best = j;
	return best;
}

/*
 * Hop: U <- Ubest with its HOP_COLUMNS weakest global directions (least
 * variance of sum_i w_i S_i) replaced by other directions orthogonal to
 * Ubest.  The optima of real data differ mostly in their weakest
 * directions, which the clients' local components compete for; a hop frees
 * them and lets the solver assign them anew.  With resid (d x m), the top
 * pooled variance that Ubest leaves, comes in: the directions that most
 * clients would gain from sharing; otherwise seeded random directions.
 */
static void
hop_start(FitBackend *be, const double *Ubest, double *U, uint64 *state, const double *resid)
{
	int			d = be->d,
				r1 = be->r1,
				m = Min(HOP_COLUMNS, Min(r1, d - r1));
	double	   *SU = palloc(sizeof(double) * d * r1),
			   *Z = palloc(sizeof(double) * d * Max(m, 1)),
			   *H = palloc(sizeof(double) * r1 * Max(r1, m)),
			   *Q = palloc(sizeof(double) * r1 * r1),
			   *var = palloc(sizeof(double) * r1);

	/* U = Ubest Q, columns in decreasing variance */
	be->apply(be, Ubest, r1, SU);
	be->setup_rounds++;
	linalg_gemm(true, false, r1, r1, d, 1.0, Ubest, r1, SU, r1, 0.0, H, r1);
	fit_eigh_top(r1, H, r1, var, Q, r1);
	linalg_gemm(false, false, d, r1, r1, 1.0, Ubest, r1, Q, r1, 0.0, U, r1);
	if (resid != NULL)
		memcpy(Z, resid, sizeof(double) * d * m);
	else
		fit_fill_gaussian(state, d, m, Z, Max(m, 1));
	/* Z: orthonormal and orthogonal to U (twice, for rounding) */
	for (int pass = 0; pass < 2 && m > 0; pass++)
	{
		linalg_gemm(true, false, r1, m, d, 1.0, U, r1, Z, m, 0.0, H, m);
		linalg_gemm(false, false, d, m, r1, -1.0, U, r1, H, m, 1.0, Z, m);
		fit_retract(FIT_RETRACT_QR, d, m, Z, m);
	}
	linalg_copy(d, m, Z, Max(m, 1), U + (r1 - m), r1);
	pfree(SU);
	pfree(Z);
	pfree(H);
	pfree(Q);
	pfree(var);
}

/* Whether objective a beats b by more than rounding. */
static bool
improves(double a, double b)
{
	return a > b + HOP_GAIN * fabs(b);
}

/*
 * Keep run j (its U and L-BFGS pairs) as the best when it is the first or
 * improves on the best; the pairs of the run that is not kept are freed.
 * Returns whether run j is now the best.
 */
static bool
keep_best(FitDiagnostics *diag, int j, const double *U, double *Ubest, int64 size,
		  LbfgsMemory *mem, int *best, LbfgsMemory **memory)
{
	if (*memory != NULL && !improves(diag->starts[j].objective, diag->starts[*best].objective))
	{
		lbfgs_memory_free(mem);
		pfree(mem);
		return false;
	}
	if (*memory != NULL)
	{
		lbfgs_memory_free(*memory);
		pfree(*memory);
	}
	*memory = mem;
	*best = j;
	memcpy(Ubest, U, sizeof(double) * size);
	return true;
}

/*
 * After run j of the search ended at U: the known optimum whose basin it
 * is in (-1: a new one, now known if the run converged).  A run the watch
 * stopped is named for the basin it came into.
 */
static int
settle(Optima *o, FitDiagnostics *diag, int j, const double *U, bool verbose)
{
	FitStartReport *rep = &diag->starts[j];
	int			k = o->entered >= 0 ? o->entered : optima_near(o, U, HOP_BASIN);

	if (o->entered >= 0)
	{
		rep->name = psprintf("%s (basin of %s)", rep->name, diag->starts[o->run[k]].name);
		if (verbose)
			ereport(NOTICE,
					(errmsg("%s: stopped after %d rounds at objective %.12g", rep->name,
							rep->rounds, rep->objective)));
	}
	else if (k < 0 && rep->converged)
		optima_add(o, U, j);
	o->entered = -1;
	return k;
}

/*
 * L-BFGS, init 'best': every start to the screening tolerance, then hops
 * from the best optimum so far until opts->hops hops in a row fail to
 * improve it (one hop when the starts all ended in one basin, until a hop
 * finds another; that hop starts from the pooled variance the basin
 * leaves, a deterministic probe of its weakest directions, the others
 * from random directions, which explore a landscape of several basins
 * more widely), then the best to the tolerance (its rounds are the
 * winner's, continued from where its screening stopped).  A hop runs at
 * most as many rounds as the slowest start did (HOP_MIN_ROUNDS at least):
 * one that has not found a better optimum by then is given up.  Any run
 * after the first stops as soon as it comes within BASIN_ENTER of an
 * optimum found before (the watch): it would only converge there again.
 * A single start runs to the tolerance directly.
 */
static void
run_lbfgs_starts(FitBackend *be, const FitOptions *opts, const FitInit *list, int n,
				 double *U, FitDiagnostics *diag)
{
	int64		size = (int64) be->d * be->r1;
	double	   *Ubest = palloc(sizeof(double) * Max(size, 1));
	double		step = NAN,
				gnorm;
	bool		search = opts->init == FIT_INIT_BEST && (n > 1 || opts->hops > 0) && be->r1 > 0;
	FitOptions	screen = *opts;
	uint64		state = UINT64CONST(0xA0761D6478BD642F) ^ opts->seed;
	int			best = 0,
				patience;
	bool		agree = true;
	LbfgsMemory *memory = NULL,
			   *mem;
	int			m = Min(HOP_COLUMNS, Min(be->r1, be->d - be->r1)),
				budget = HOP_MIN_ROUNDS;
	double	   *resid = palloc(sizeof(double) * be->d * Max(m, 1));
	Optima		optima = {.be = be, .entered = -1};
	LbfgsWatch	watch = {optima_watch, &optima};

	if (search)
		screen.tolerance = Max(opts->tolerance, SCREEN_TOLERANCE);
	for (int j = 0; j < n; j++)
	{
		int			basin;

		if (j > 0 && opts->rounds - diag->rounds <= 0)
			break;
		mem = palloc0(sizeof(LbfgsMemory));
		run_start(be, &screen, list[j], opts->rounds - diag->rounds, U, &step, diag, mem,
				  search ? &watch : NULL);
		diag->rounds += diag->starts[j].rounds;
		budget = Max(budget, diag->starts[j].rounds);
		basin = settle(&optima, diag, j, U, opts->verbose);
		if (j > 0 && (basin < 0 || optima.run[basin] != best))
			agree = false;
		keep_best(diag, j, U, Ubest, size, mem, &best, &memory);
	}
	/* starts that all end in one basin get one hop to test it; any new basin, the full patience */
	patience = agree ? Min(opts->hops, 1) : opts->hops;
	for (int failed = 0, known = 0, h = 1; search && failed < patience && known < HOP_KNOWN &&
		 diag->nstarts < FIT_MAX_STARTS && opts->rounds - diag->rounds > 0; h++)
	{
		FitStartReport *rep = &diag->starts[diag->nstarts];
		int			basin;
		bool		kept;

		/* starts in one basin: the first hop brings in the pooled variance it leaves */
		bool		first = agree && h == 1 && m > 0;

		if (first)
			fit_residual_top(be, Ubest, m, resid, NULL);
		hop_start(be, Ubest, U, &state, first ? resid : NULL);
		diag->current = diag->nstarts++;
		rep->name = psprintf("hop %d", h);
		mem = palloc0(sizeof(LbfgsMemory));
		rep->rounds = solver_lbfgs(be, &screen, U, Min(budget, opts->rounds - diag->rounds),
								   &rep->converged, &rep->objective, &gnorm, diag, mem, &watch);
		diag->rounds += rep->rounds;
		if (opts->verbose)
			ereport(NOTICE,
					(errmsg("hop %d: objective %.12g after %d rounds", h, rep->objective,
							rep->rounds)));
		basin = settle(&optima, diag, diag->current, U, opts->verbose);
		/* a better optimum in a new basin resets the count; a known basin does not */
		kept = keep_best(diag, diag->current, U, Ubest, size, mem, &best, &memory);
		failed = kept && basin < 0 ? 0 : failed + 1;
		known = basin >= 0 ? known + 1 : 0;
		if (failed == 0)
			patience = opts->hops;
	}
	memcpy(U, Ubest, sizeof(double) * size);
	diag->chosen = best;
	if (search && screen.tolerance > opts->tolerance && opts->rounds - diag->rounds > 0)
	{
		/* the best optimum to the tolerance: the winner's rounds continue */
		FitStartReport *rep = &diag->starts[best];
		int			more;

		diag->current = best;
		more = solver_lbfgs(be, opts, U, opts->rounds - diag->rounds, &rep->converged,
							&rep->objective, &gnorm, diag, memory, NULL);
		rep->rounds += more;
		diag->rounds += more;
	}
	else if (search)
		diag->starts[best].converged = diag->starts[best].converged &&
			screen.tolerance <= opts->tolerance;
	diag->step = NAN;
}

/* The paper solver: probe each start briefly, then run the chosen one from its beginning. */
static void
run_paper_starts(FitBackend *be, const FitOptions *opts, const FitInit *list, int n,
				 double *U, FitDiagnostics *diag)
{
	FitInit		how = list[0];

	if (n > 1)
	{
		FitOptions	probe = *opts;

		probe.verbose = false;
		for (int j = 0; j < n; j++)
			run_start(be, &probe, list[j], Min(opts->rounds, PAPER_PROBE_ROUNDS), U,
					  &diag->step, diag, NULL, NULL);
		how = list[best_start(diag, 0)];
		if (opts->verbose)
			ereport(NOTICE, (errmsg("init best: chose %s", fit_init_names[how])));
	}
	run_start(be, opts, how, opts->rounds, U, &diag->step, diag, NULL, NULL);
	diag->chosen = diag->nstarts - 1;
	diag->rounds = diag->starts[diag->chosen].rounds;
	if (n > 1)
		diag->starts[diag->chosen].name = psprintf("%s (chosen by the probe)",
												   fit_init_names[how]);
}

/* ------------------------------------------------------------------------
 * Output
 * ------------------------------------------------------------------------
 */

/* U <- U Q with Q the eigenvectors of gram = U'(sum_i w_i S_i)U / W; variances into res. */
void
fit_order_global(FitBackend *be, double *gram, FitResult *res)
{
	int			d = be->d,
				r1 = be->r1;
	double	   *Q = palloc(sizeof(double) * Max(r1 * r1, 1));
	double	   *T = palloc(sizeof(double) * d * Max(r1, 1));

	res->rU = r1;
	res->uvariance = palloc0(sizeof(double) * Max(r1, 1));
	if (r1 == 0)
		return;
	linalg_scale_column(r1 * r1, gram, 1, 0, 1.0 / be->weight);
	fit_eigh_top(r1, gram, r1, res->uvariance, Q, r1);
	memcpy(T, res->U, sizeof(double) * d * r1);
	linalg_gemm(false, false, d, r1, r1, 1.0, T, r1, Q, r1, 0.0, res->U, r1);
	linalg_fix_signs(d, r1, res->U, r1);
}

/* Final feasibility on the backend, U ordered, objective, KKT residual and gradient norm. */
static void
finish(FitBackend *be, const FitOptions *opts, FitResult *res, FitDiagnostics *diag)
{
	int			d = be->d,
				r1 = be->r1;
	FitSums    *s = fit_sums_create(d, r1);
	double		gg;

	be->finish(be, res->U, opts->solver == FIT_SOLVER_LBFGS, s);
	fit_order_global(be, s->gram, res);
	gg = linalg_dot((int64) d * r1, s->G, s->G) / (s->weight * s->weight);
	diag->objective = s->objective / s->weight * be->nclients;
	diag->kkt_residual = gg + s->gv / s->weight;
	diag->gradient_norm = sqrt(gg);
}

/* The WARNING of a fit that did not converge: at the round cap, or stalled. */
static void
warn_not_converged(const FitOptions *opts, const FitDiagnostics *diag)
{
	const FitStartReport *won = &diag->starts[diag->chosen];

	if (diag->rounds >= opts->rounds)
		ereport(WARNING,
				(errmsg("perpca fit stopped at the round limit (%d rounds) before converging",
						opts->rounds),
				 errdetail("KKT residual %.3e, gradient norm %.3e, objective %.12g.",
						   diag->kkt_residual, diag->gradient_norm, diag->objective),
				 errhint("Scale the features if their variances differ widely, try solver => '%s', or allow more rounds.",
						 opts->solver == FIT_SOLVER_LBFGS ? "paper" : "lbfgs")));
	else
		ereport(WARNING,
				(errmsg("perpca fit stopped before converging: no step improves the objective of start %s after %d rounds",
						won->name, won->rounds),
				 errdetail("Gradient norm %.3e, KKT residual %.3e, objective %.12g; the tolerance asks for a gradient norm of %.3e.",
						   diag->gradient_norm, diag->kkt_residual, diag->objective,
						   opts->tolerance * diag->lambda_max),
				 errhint("The arithmetic cannot resolve the optimum further: pass a larger tolerance, or scale the features.")));
}

void
fit_run(FitBackend *be, const FitOptions *opts, FitResult *res, FitDiagnostics *diag)
{
	FitInit		list[8];
	int			n = start_list(opts, list);

	diag->chosen = -1;
	diag->lambda_max = be->lambda_max;
	diag->n_clients = be->nclients;
	diag->dim = be->d;
	res->U = palloc0(sizeof(double) * be->d * Max(be->r1, 1));
	if (opts->solver == FIT_SOLVER_LBFGS)
		run_lbfgs_starts(be, opts, list, n, res->U, diag);
	else
		run_paper_starts(be, opts, list, n, res->U, diag);
	diag->converged = diag->starts[diag->chosen].converged;
	finish(be, opts, res, diag);
	if (!diag->converged && opts->tolerance > 0.0 && opts->rounds > 0)
		warn_not_converged(opts, diag);
}
