/*
 * fit_sums.c -- what every layer of a fit above the clients shares: the
 * weighted sums a node returns (FitSums), the per-round trace of the
 * diagnostics, the verbose schedule and theta_est.  Below the solvers and
 * fit.c, so that the fit's layers import one way (see fit.h).
 */
#include "postgres.h"

#include <math.h>

#include "exact_sum.h"
#include "fit_sums.h"
#include "linalg.h"

/* How a run ended, in words (FitEnd). */
static const char *const fit_end_names[] = {
	[FIT_END_CONVERGED] = "converged",
	[FIT_END_SCREENED] = "screened",
	[FIT_END_KNOWN_BASIN] = "known basin",
	[FIT_END_BUDGET] = "budget",
	[FIT_END_ROUND_LIMIT] = "round limit",
	[FIT_END_STALLED] = "stalled",
	[FIT_END_FLAT] = "objective converged",
	[FIT_END_NONE] = "not run"
};

/*
 * The name of how run r ended.  A run that stalled (no step changes the
 * objective above rounding) with its gradient within what the arithmetic
 * resolves counts as converged (solver_lbfgs.c), and says so: "stalled" is
 * kept for the runs that stopped short.
 */
const char *
fit_run_end_name(const FitStartReport *r)
{
	if (r->ended == FIT_END_STALLED && r->converged)
		return "converged to rounding";
	return fit_end_names[r->ended];
}

FitSums *
fit_sums_create(int d, int r1)
{
	FitSums    *s = palloc0(sizeof(FitSums));

	s->d = d;
	s->r1 = r1;
	s->U = palloc0(sizeof(double) * d * Max(r1, 1));
	s->G = palloc0(sizeof(double) * d * Max(r1, 1));
	s->gram = palloc0(sizeof(double) * Max(r1 * r1, 1));
	return s;
}

void
fit_sums_zero(FitSums *s, int d, int r1)
{
	s->weight = s->objective = s->gv = s->change = 0.0;
	s->exact = 0;
	s->products = s->iterations = 0;
	memset(s->U, 0, sizeof(double) * d * r1);
	memset(s->G, 0, sizeof(double) * d * r1);
	memset(s->gram, 0, sizeof(double) * r1 * r1);
	for (int p = 0; p < FIT_SUM_PARTS; p++)
		if (s->acc[p] != NULL)
			exact_sum_zero(s->acc[p]);
}

void
fit_sums_free(FitSums *s)
{
	for (int p = 0; p < FIT_SUM_PARTS; p++)
		if (s->acc[p] != NULL)
			exact_sum_free(s->acc[p]);
	pfree(s->U);
	pfree(s->G);
	pfree(s->gram);
	pfree(s);
}

/* The number of entries of part. */
static int64
fit_sums_part_size(const FitSums *s, FitSumPart part)
{
	switch (part)
	{
		case FIT_SUM_SCALARS:
			return 3;
		case FIT_SUM_U:
		case FIT_SUM_G:
			return (int64) s->d * s->r1;
		case FIT_SUM_GRAM:
			return (int64) s->r1 * s->r1;
		default:
			elog(ERROR, "no such part of the sums: %d", (int) part);
	}
}

/* The exact sum of part, created (zero) on first use. */
static ExactSum *
part_sum(FitSums *s, FitSumPart part)
{
	if (s->acc[part] == NULL)
		s->acc[part] = exact_sum_create(fit_sums_part_size(s, part));
	return s->acc[part];
}

void
fit_sums_add(FitSums *s, FitSumPart part, int64 i, double x)
{
	exact_sum_add(part_sum(s, part), i, x);
}

void
fit_sums_add_scaled(FitSums *s, FitSumPart part, double scale, const double *x)
{
	exact_sum_add_scaled(part_sum(s, part), 0, fit_sums_part_size(s, part), scale, x);
}

/* The double fields of part. */
static double *
part_values(FitSums *s, FitSumPart part)
{
	switch (part)
	{
		case FIT_SUM_U:
			return s->U;
		case FIT_SUM_G:
			return s->G;
		case FIT_SUM_GRAM:
			return s->gram;
		default:
			return NULL;
	}
}

void
fit_sums_round(FitSums *s)
{
	for (int p = 0; p < FIT_SUM_PARTS; p++)
	{
		ExactSum   *acc = s->acc[p];

		if (acc == NULL)
			continue;
		if (p == FIT_SUM_SCALARS)
		{
			s->weight = exact_sum_value(acc, FIT_SUM_WEIGHT);
			s->objective = exact_sum_value(acc, FIT_SUM_OBJECTIVE);
			s->gv = exact_sum_value(acc, FIT_SUM_GV);
		}
		else
			exact_sum_values(acc, 0, acc->n, part_values(s, (FitSumPart) p));
	}
}

double *
fit_sums_expansion(FitSums *s, FitSumPart part, int *layers)
{
	ExactSum   *acc = part_sum(s, part);
	double	   *terms = palloc(sizeof(double) * Max(acc->n, 1) * EXACT_MAX_LAYERS);

	*layers = exact_sum_expansion(acc, 0, acc->n, terms, EXACT_MAX_LAYERS);
	return terms;
}

void
fit_sums_add_expansion(FitSums *s, FitSumPart part, const double *terms, int layers)
{
	ExactSum   *acc = part_sum(s, part);

	exact_sum_add_expansion(acc, 0, acc->n, terms, layers);
}

void
fit_trace(FitDiagnostics *diag, int round, double objective, double gnorm, double kkt,
		  double step, const FitSums *sums)
{
	FitTraceRow *row;

	if (diag->ntrace == diag->tracecap)
	{
		if (diag->tracecap >= 1000000)
			return;				/* keep the trace bounded */
		diag->tracecap = Max(64, diag->tracecap * 2);
		diag->trace = diag->trace ? repalloc_huge(diag->trace, sizeof(FitTraceRow) * diag->tracecap)
			: palloc(sizeof(FitTraceRow) * diag->tracecap);
	}
	row = &diag->trace[diag->ntrace++];
	row->start = diag->current;
	row->round = round;
	row->objective = objective;
	row->gradient_norm = gnorm;
	row->kkt_residual = kkt;
	row->step = step;
	row->products = sums != NULL ? sums->products : 0;
	row->iterations = sums != NULL ? sums->iterations : 0;
}

bool
fit_report_round(int t)
{
	while (t >= 10 && t % 10 == 0)
		t /= 10;
	return t == 1 || t == 2 || t == 5;
}

/* theta_est = 1 - lambda_max(A / W) for A = sum_i w_i V_i V_i' (d x d, destroyed); NaN without locals. */
double
fit_theta(double *A, int d, double W, bool any)
{
	double		top = 0.0;
	double	   *Z;

	if (!any)
		return NAN;
	/* above FIT_THETA_EXACT_DIM, d^2 per LOBPCG product against d^3 for a tridiagonalization */
	if (d > FIT_THETA_EXACT_DIM)
		return 1.0 - fit_top_eigenvalue(d, A, 1e-9) / W;
	Z = palloc(sizeof(double) * d);
	fit_eigh_top(d, A, 1, &top, Z, 1);
	pfree(Z);
	return 1.0 - top / W;
}
