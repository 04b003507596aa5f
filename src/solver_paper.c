/*
 * solver_paper.c -- the paper's Algorithm 2 (solver => 'paper')
 *
 * One round: the backend runs every client's step against U (St-GD, choice
 * 1, or polar, choice 2) and returns sum_i w_i U_i; the server step here
 * retracts the weighted average (with heavy-ball momentum when the step is
 * adaptive).  Stops when the largest projector change of a round falls below
 * the tolerance.  The same loop serves one node and many shards.
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"

#include "fit_sums.h"
#include "linalg.h"

/* The hooks of its row in the solver table (fit.c). */
extern FIT_SOLVER_START(solver_paper_start);
extern FIT_SOLVER_RUN(solver_paper_run);

/* Default step (times 1/max_i lambda_max(S_i)) and bounds of the adaptive step. */
#define STEP_SCALE 0.5
#define STEP_MIN_SCALE 0.01
#define STEP_MAX_SCALE 16.0
/* Heavy-ball momentum of the server step when the step is adaptive. */
#define MOMENTUM 0.5

/* The server's state between rounds. */
typedef struct PaperServer
{
	int			d;
	int			r1;
	double		lambda_max;
	double	   *Mom;			/* the server's last move */
	double	   *Uprev;
	double		step;
	double		objective;
	double		kkt;
} PaperServer;

/*
 * The server step: U = GR(U + D + momentum * M), D = sum_i w_i U_i / W - U
 * the clients' average step, M the previous move projected onto the tangent
 * space at U (momentum 0 is the paper's average-then-retract).
 */
static void
server_step(PaperServer *sv, double *U, const double *usum, double W,
			FitRetraction retraction, double momentum)
{
	int			d = sv->d,
				r1 = sv->r1;
	double	   *G = palloc(sizeof(double) * r1 * r1);

	if (momentum != 0.0)
	{
		linalg_gemm(true, false, r1, r1, d, 1.0, U, r1, sv->Mom, r1, 0.0, G, r1);
		for (int a = 0; a < r1; a++)
			for (int b = 0; b < a; b++)
				G[a * r1 + b] = G[b * r1 + a] = 0.5 * (G[a * r1 + b] + G[b * r1 + a]);
		linalg_gemm(false, false, d, r1, r1, -1.0, U, r1, G, r1, 1.0, sv->Mom, r1);
	}
	for (int64 x = 0; x < (int64) d * r1; x++)
		sv->Mom[x] = momentum * sv->Mom[x] + usum[x] / W - U[x];
	memcpy(sv->Uprev, U, sizeof(double) * d * r1);
	linalg_axpy((int64) d * r1, 1.0, sv->Mom, U);
	fit_retract(retraction, d, r1, U, r1);
	pfree(G);
}

/*
 * Adaptive step ("bold driver"): grow the step by 10% while the round
 * improved, halve it (and drop the momentum) when it did not.  A round
 * improved when the objective rose, or -- once objective changes are below
 * rounding -- when the KKT residual did not grow.
 */
static void
adapt_step(PaperServer *sv, double previous, double previous_kkt)
{
	double		lmax = sv->lambda_max > 0.0 ? sv->lambda_max : 1.0;
	double		noise = 1e-14 * fabs(previous);
	bool		worse = sv->objective < previous - noise ||
		(fabs(sv->objective - previous) <= noise && sv->kkt > previous_kkt);

	if (worse)
	{
		sv->step = Max(sv->step * 0.5, STEP_MIN_SCALE / lmax);
		memset(sv->Mom, 0, sizeof(double) * sv->d * sv->r1);
	}
	else
		sv->step = Min(sv->step * 1.1, STEP_MAX_SCALE / lmax);
}

/* The round's objective and (when wanted) KKT residual from its sums. */
static void
paper_figures(PaperServer *sv, const FitSums *s, int nclients, bool want_kkt)
{
	sv->objective = s->objective / s->weight * nclients;
	sv->kkt = want_kkt ? linalg_dot((int64) sv->d * sv->r1, s->G, s->G) / (s->weight * s->weight) +
		s->gv / s->weight : NAN;
}

/* Round t into the diagnostics' trace, and a NOTICE when verbose. */
static void
paper_report(const PaperServer *sv, const FitOptions *opts, FitDiagnostics *diag,
			 const FitSums *s, int t, bool last, double change, double used)
{
	if (diag != NULL)
		fit_trace(diag, t, sv->objective, NAN, sv->kkt, used, s);
	if (opts->verbose && (fit_report_round(t) || last))
		ereport(NOTICE,
				(errmsg("round %d: objective %.10g, kkt residual %.3e, change %.3e, step %.3e",
						t, sv->objective, sv->kkt, change, used)));
}

/* The first round's step: the given one, or STEP_SCALE / lambda_max. */
static double
initial_step(const FitBackend *be, const FitOptions *opts)
{
	if (opts->step_given)
		return opts->step;
	return STEP_SCALE / (be->lambda_max > 0.0 ? be->lambda_max : 1.0);
}

/* One round: the clients' sums at U, its figures, the server's step on U; the round's change. */
static double
paper_round(FitBackend *be, const FitOptions *opts, PaperServer *sv, double *U, FitSums *s,
			bool want_kkt)
{
	int			d = sv->d,
				r1 = sv->r1;

	fit_sums_zero(s, d, r1);
	be->round(be, U, sv->step, opts->update, opts->retraction, want_kkt, s);
	paper_figures(sv, s, be->nclients, want_kkt);
	if (r1 > 0)
		server_step(sv, U, s->U, s->weight, opts->retraction,
					opts->adaptive ? MOMENTUM : 0.0);
	return Max(s->change, fit_projector_distance(d, r1, sv->Uprev, r1, U, r1));
}

/* Paper rounds from U (updated in place); returns rounds run, sets *converged, *step. */
static int
solver_paper(FitBackend *be, const FitOptions *opts, double *U, int rounds, double *step,
			 bool *converged, double *objective, FitDiagnostics *diag)
{
	int			d = be->d,
				r1 = be->r1,
				t;
	PaperServer sv = {d, r1, be->lambda_max, palloc0(sizeof(double) * d * Max(r1, 1)),
	palloc0(sizeof(double) * d * Max(r1, 1)), initial_step(be, opts), -INFINITY, NAN};
	FitSums    *s = fit_sums_create(d, r1);
	double		previous = -INFINITY,
				previous_kkt = INFINITY;
	bool		want_kkt = opts->adaptive || opts->verbose || diag != NULL;

	*converged = false;
	for (t = 1; t <= rounds; t++)
	{
		double		change,
					used = sv.step;

		CHECK_FOR_INTERRUPTS();
		change = paper_round(be, opts, &sv, U, s, want_kkt);
		paper_report(&sv, opts, diag, s, t, t == rounds, change, used);
		if (opts->tolerance > 0.0 && change < opts->tolerance)
		{
			*converged = true;
			break;
		}
		if (opts->adaptive)
			adapt_step(&sv, previous, previous_kkt);
		previous = sv.objective;
		previous_kkt = sv.kkt;
	}
	*step = sv.step;
	*objective = sv.objective;
	fit_sums_free(s);
	return Min(t, rounds);
}

/* V_i of a start given U. */
void
solver_paper_start(FitBackend *be, const double *U, FitInit how)
{
	be->start_local(be, U, how);
}

int
solver_paper_run(FitBackend *be, const FitOptions *opts, double *U, int rounds,
				 FitDiagnostics *diag, FitStartReport *rep, void *aid pg_attribute_unused())
{
	int			run = solver_paper(be, opts, U, rounds, &diag->step, &rep->converged,
								   &rep->objective, diag);

	rep->ended = rep->converged ? FIT_END_CONVERGED : FIT_END_BUDGET;
	return run;
}
