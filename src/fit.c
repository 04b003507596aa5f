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

/* Run one start with the solver for at most `rounds` rounds; fills its report. */
static void
run_start(FitBackend *be, const FitOptions *opts, FitInit how, int rounds, double *U,
		  double *step, FitDiagnostics *diag)
{
	FitStartReport *rep = &diag->starts[diag->nstarts++];
	double		gnorm;

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
								   &gnorm, diag);
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

/* L-BFGS: every start to convergence within the rounds left; U <- the best. */
static void
run_lbfgs_starts(FitBackend *be, const FitOptions *opts, const FitInit *list, int n,
				 double *U, FitDiagnostics *diag)
{
	int64		size = (int64) be->d * be->r1;
	double	   *Ubest = palloc(sizeof(double) * Max(size, 1));
	double		step = NAN;

	for (int j = 0; j < n; j++)
	{
		int			left = opts->rounds - diag->rounds;

		if (j > 0 && left <= 0)
			break;
		run_start(be, opts, list[j], left, U, &step, diag);
		diag->rounds += diag->starts[j].rounds;
		if (best_start(diag, 0) == j)
			memcpy(Ubest, U, sizeof(double) * size);
	}
	diag->chosen = best_start(diag, 0);
	memcpy(U, Ubest, sizeof(double) * size);
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
					  &diag->step, diag);
		how = list[best_start(diag, 0)];
		if (opts->verbose)
			ereport(NOTICE, (errmsg("init best: chose %s", fit_init_names[how])));
	}
	run_start(be, opts, how, opts->rounds, U, &diag->step, diag);
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
