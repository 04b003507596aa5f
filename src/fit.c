/*
 * fit.c -- one fit, whatever the backend: the solver table, the search's U
 * (fit_search.c), made feasible by the backend (finish), U rotated to the
 * eigenvectors of U'(sum_i w_i S_i)U, and the fit's diagnostics (see fit.h
 * for the layers)
 */
#include "postgres.h"

#include <math.h>

#include "fit.h"
#include "fit_search.h"
#include "fit_sums.h"
#include "linalg.h"

/* ------------------------------------------------------------------------
 * The solvers: one row each (FitSolverDef, fit_types.h); the first is the
 * default, and the option solver's values are their names in this order.
 * The tolerance is the L-BFGS gradient norm / lambda_max, or the paper's
 * largest projector change of a round.  Each solver is a file solver_*.c
 * that defines its hooks, declared here.
 * ------------------------------------------------------------------------
 */
extern FIT_SOLVER_RUN(solver_lbfgs_run);
extern FIT_SOLVER_START(solver_paper_start);
extern FIT_SOLVER_RUN(solver_paper_run);

const FitSolverDef fit_solvers[] = {
	/* name, tolerance, exact starts, Qu start, best responses, warm start given, start, run, search */
	{"lbfgs", 1e-11, false, false, true, false, NULL, solver_lbfgs_run, fit_search_lbfgs},
	{"paper", 1e-9, true, true, false, true, solver_paper_start, solver_paper_run, fit_search_probe},
};
const int	fit_nsolvers = lengthof(fit_solvers);

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

	be->finish(be, res->U, fit_solvers[opts->solver].best_response, s);
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
						 fit_solvers[(opts->solver + 1) % fit_nsolvers].name)));
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
	diag->chosen = -1;
	diag->lambda_max = be->lambda_max;
	diag->n_clients = be->nclients;
	diag->dim = be->d;
	res->U = palloc0(sizeof(double) * be->d * Max(be->r1, 1));
	fit_solvers[opts->solver].search(be, opts, &fit_solvers[opts->solver], res->U, diag);
	diag->converged = diag->starts[diag->chosen].converged;
	finish(be, opts, res, diag);
	if (!diag->converged && opts->tolerance > 0.0 && opts->rounds > 0)
		warn_not_converged(opts, diag);
}
