/*
 * fit_start.c -- starting points of the PerPCA rounds and the one-shot baselines
 *
 * Starts: the clients' local PCs, the stacked local PCs (personalized disPCA,
 * Qu et al.), the pooled matrix, seeded random, given (warm start), and
 * 'best', which probes a few rounds from each deterministic start.  The
 * baselines dispca, cpca and indiv are one-shot fits built from the same
 * pieces.  See fit.h for the data layout.
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"

#include "utils/memutils.h"

#include "fit.h"
#include "fit_internal.h"
#include "linalg.h"

/* Rounds of each candidate start that init 'best' runs before choosing. */
#define FIT_PROBE_ROUNDS 10

/* ------------------------------------------------------------------------
 * Starting points
 * ------------------------------------------------------------------------
 */

/* Top k_i = r1 + r2_i eigenpairs of one S_i. */
void
fit_client_local_pcs(FitProblem *p, FitClient *c, FitLocalPCs *pcs)
{
	CHECK_FOR_INTERRUPTS();
	pcs->L = palloc(sizeof(double) * p->d * Max(c->k, 1));
	pcs->lambda = palloc(sizeof(double) * Max(c->k, 1));
	fit_client_top_eigen(p, c, NULL, c->k, pcs->lambda, pcs->L, Max(c->k, 1));
}

/* Top k_i = r1 + r2_i eigenpairs of every S_i. */
FitLocalPCs *
fit_local_pcs(FitProblem *p)
{
	FitLocalPCs   *pcs = palloc(sizeof(FitLocalPCs) * p->nclients);

	for (int i = 0; i < p->nclients; i++)
		fit_client_local_pcs(p, &p->clients[i], &pcs[i]);
	return pcs;
}

/*
 * The stacked local PCs: the d x sum k_i matrix (returned, *ncols = sum k_i)
 * whose blocks are L_i scaled column-wise by sqrt(w_i lambda_ij) (qu: the
 * average of rank-k_i approximations, Qu et al.) or unscaled (the
 * personalized disPCA of the paper's section on statistical error).
 */
double *
fit_stacked_pcs(const FitProblem *p, const FitLocalPCs *pcs, bool qu, int *ncols)
{
	int			d = p->d;
	int			K = 0,
				off = 0;
	double	   *B;

	for (int i = 0; i < p->nclients; i++)
		K += p->clients[i].k;
	B = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * d * Max(K, 1));
	for (int i = 0; i < p->nclients; i++)
	{
		const FitClient *c = &p->clients[i];

		linalg_copy(d, c->k, pcs[i].L, c->k, B + off, K);
		if (qu)
			for (int j = 0; j < c->k; j++)
				linalg_scale_column(d, B, K, off + j,
									sqrt(c->weight * Max(pcs[i].lambda[j], 0.0)));
		off += c->k;
	}
	*ncols = K;
	return B;
}

/* U = top r1 left singular vectors of the stacked local PCs (fit_stacked_pcs). */
static void
init_stacked(FitProblem *p, FitLocalPCs *pcs, bool qu)
{
	int			K;
	double	   *B = fit_stacked_pcs(p, pcs, qu, &K);

	fit_left_singular(p, p->d, K, B, p->r1, p->U, p->r1, NULL);
	pfree(B);
}

/* U = top r1 eigenvectors of the pooled matrix sum_i w_i S_i. */
static void
init_pooled(FitProblem *p, double *U, int r)
{
	int			d = p->d;
	double	   *A = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * d * d);
	double	   *values = palloc(sizeof(double) * Max(r, 1));

	memset(A, 0, sizeof(double) * d * d);
	for (int i = 0; i < p->nclients; i++)
	{
		CHECK_FOR_INTERRUPTS();
		fit_client_dense(p, &p->clients[i], p->clients[i].weight, A);
	}
	fit_eigh_top(p, d, A, r, values, U, r);
	pfree(values);
	pfree(A);
}

/*
 * V_i from the client's own PCs, given U: top r2_i left singular vectors of
 * (I - P_U) L_i D_i, where D_i = sqrt(lambda_ij) plus a tiny floor so that no
 * column vanishes; (I - P_U) L_i has rank >= r2_i, so V_i is well defined.
 */
void
fit_init_local(FitProblem *p, FitClient *c, const FitLocalPCs *pcs)
{
	int			d = p->d,
				r1 = p->r1;
	double	   *T = c->tmp;
	double		floor = 1e-8 * sqrt(Max(pcs->lambda[0], 0.0)) + 1e-300;

	if (c->r2 == 0)
		return;
	linalg_copy(d, c->k, pcs->L, c->k, T, c->k);
	for (int j = 0; j < c->k; j++)
		linalg_scale_column(d, T, c->k, j, sqrt(Max(pcs->lambda[j], 0.0)) + floor);
	linalg_gemm(true, false, r1, c->k, d, 1.0, p->U, r1, T, c->k, 0.0, c->M, c->k);
	linalg_gemm(false, false, d, c->k, r1, -1.0, p->U, r1, c->M, c->k, 1.0, T, c->k);
	fit_left_singular(p, d, c->k, T, c->r2, c->W + r1, c->k, NULL);
}

/* Every V_i from its client's own PCs, given U. */
static void
init_local_from_pcs(FitProblem *p, FitLocalPCs *pcs)
{
	for (int i = 0; i < p->nclients; i++)
		fit_init_local(p, &p->clients[i], &pcs[i]);
}

/* Seeded Gaussian U (QR-orthonormalized) and Gaussian V_i, as in the paper. */
static void
init_random(FitProblem *p, uint64 seed)
{
	uint64		state = seed;

	fit_fill_gaussian(&state, p->d, p->r1, p->U, p->r1);
	fit_retract(p, FIT_RETRACT_QR, p->d, p->r1, p->U, p->r1);
	for (int i = 0; i < p->nclients; i++)
	{
		FitClient  *c = &p->clients[i];

		fit_fill_gaussian(&state, p->d, c->r2, c->W + p->r1, c->k);
	}
}

/* U0 and V0 given by the caller (warm start). */
static void
init_given(FitProblem *p, const double *U0)
{
	memcpy(p->U, U0, sizeof(double) * p->d * p->r1);
	fit_retract(p, FIT_RETRACT_POLAR, p->d, p->r1, p->U, p->r1);
	for (int i = 0; i < p->nclients; i++)
	{
		FitClient  *c = &p->clients[i];

		if (c->V0 != NULL)
			linalg_copy(p->d, c->r2, c->V0, Max(c->r2, 1), c->W + p->r1, c->k);
		else
		{
			/* a client new to the start: V_i from its own PCs, as in a cold start */
			FitLocalPCs	pcs;

			fit_client_local_pcs(p, c, &pcs);
			fit_init_local(p, c, &pcs);
		}
	}
}

/* Set U and every V_i to the start named by how (not FIT_INIT_BEST). */
static void
init_start(FitProblem *p, FitInit how, const FitOptions *opts, FitLocalPCs **pcs)
{
	if ((how == FIT_INIT_DISPCA || how == FIT_INIT_QU || how == FIT_INIT_POOLED) &&
		*pcs == NULL)
		*pcs = fit_local_pcs(p);
	switch (how)
	{
		case FIT_INIT_DISPCA:
		case FIT_INIT_QU:
			init_stacked(p, *pcs, how == FIT_INIT_QU);
			break;
		case FIT_INIT_POOLED:
			init_pooled(p, p->U, p->r1);
			break;
		case FIT_INIT_RANDOM:
			init_random(p, opts->seed);
			return;
		case FIT_INIT_GIVEN:
			init_given(p, opts->U0);
			return;
		case FIT_INIT_BEST:
			elog(ERROR, "init 'best' is not a single start");
	}
	init_local_from_pcs(p, *pcs);
}

/* ------------------------------------------------------------------------
 * The 'best' start: a short probe of each deterministic start
 * ------------------------------------------------------------------------
 */

/* A copy of the iterate (U and every V_i) and the step that goes with it. */
typedef struct FitSnapshot
{
	double	   *U;
	double	  **W;
	double		step;
	double		objective;
	int			rounds;
	bool		converged;
} FitSnapshot;

/* Save (save = true) or restore the iterate. */
static void
snapshot(FitProblem *p, FitSnapshot *s, bool save)
{
	int			d = p->d;

	if (save && s->U == NULL)
	{
		s->U = palloc(sizeof(double) * d * Max(p->r1, 1));
		s->W = palloc(sizeof(double *) * p->nclients);
		for (int i = 0; i < p->nclients; i++)
			s->W[i] = palloc(sizeof(double) * d * Max(p->clients[i].k, 1));
	}
	if (save)
		memcpy(s->U, p->U, sizeof(double) * d * p->r1);
	else
		memcpy(p->U, s->U, sizeof(double) * d * p->r1);
	for (int i = 0; i < p->nclients; i++)
	{
		FitClient  *c = &p->clients[i];

		if (save)
			memcpy(s->W[i], c->W, sizeof(double) * d * c->k);
		else
			memcpy(c->W, s->W[i], sizeof(double) * d * c->k);
	}
	if (save)
		s->step = p->step;
	else
		p->step = s->step;
}

/*
 * init 'best': run a few rounds from each deterministic start (dispca, qu,
 * pooled) and keep the one with the highest objective; the first wins ties.
 * Returns the rounds already run on the kept start.
 */
static int
start_best(FitProblem *p, const FitOptions *opts, FitLocalPCs **pcs, bool *converged)
{
	static const FitInit candidates[] = {FIT_INIT_DISPCA, FIT_INIT_QU, FIT_INIT_POOLED};
	static const char *const names[] = {"dispca", "qu", "pooled"};
	int			ncand = p->r1 > 0 ? lengthof(candidates) : 1;
	int			probe = Min(opts->rounds, FIT_PROBE_ROUNDS);
	double		step0 = p->step;
	FitSnapshot best = {0};
	int			chosen = 0;

	for (int j = 0; j < ncand; j++)
	{
		bool		conv;
		int			ran;

		init_start(p, candidates[j], opts, pcs);
		p->step = step0;
		ran = fit_run_rounds(p, opts, probe, false, &conv);
		if (opts->verbose)
			ereport(NOTICE,
					(errmsg("init %s: objective %.10g after %d rounds", names[j], p->objective, ran)));
		if (j == 0 || p->objective > best.objective)
		{
			snapshot(p, &best, true);
			best.objective = p->objective;
			best.rounds = ran;
			best.converged = conv;
			chosen = j;
		}
	}
	snapshot(p, &best, false);
	if (opts->verbose)
		ereport(NOTICE, (errmsg("init best: chose %s", names[chosen])));
	*converged = best.converged;
	return best.rounds;
}

/* Set U and every V_i to the start of opts->init; return the rounds already run (init 'best'). */
int
fit_start(FitProblem *p, const FitOptions *opts, bool *converged)
{
	FitLocalPCs   *pcs = NULL;

	*converged = false;
	if (opts->init == FIT_INIT_BEST)
		return start_best(p, opts, &pcs, converged);
	init_start(p, opts->init, opts, &pcs);
	return 0;
}

/* ------------------------------------------------------------------------
 * One-shot baselines
 * ------------------------------------------------------------------------
 */

/* V_i = top r2_i eigenvectors of (I - P_U) S_i (I - P_U). */
static void
deflated_local_pcs(FitProblem *p, FitClient *c)
{
	double	   *values = palloc(sizeof(double) * Max(c->r2, 1));

	fit_client_top_eigen(p, c, p->U, c->r2, values, c->W + p->r1, c->k);
	pfree(values);
}

/* disPCA (personalized): U from the stacked local PCs, V_i from the deflated S_i. */
void
fit_dispca(FitProblem *p)
{
	FitLocalPCs   *pcs = fit_local_pcs(p);

	init_stacked(p, pcs, false);
	for (int i = 0; i < p->nclients; i++)
	{
		CHECK_FOR_INTERRUPTS();
		deflated_local_pcs(p, &p->clients[i]);
	}
	fit_make_feasible(p);
}

/* CPCA: top r1 + n_local eigenvectors of sum_i w_i S_i, no local components. */
void
fit_cpca(FitProblem *p, int n_local)
{
	p->rU = p->r1 + n_local;
	p->U = palloc0(sizeof(double) * p->d * Max(p->rU, 1));
	p->uvariance = palloc0(sizeof(double) * Max(p->rU, 1));
	init_pooled(p, p->U, p->rU);
	for (int i = 0; i < p->nclients; i++)
		p->clients[i].lfirst = p->clients[i].k;
}

/* indivPCA: each client's own top r1 + r2_i eigenvectors, all local. */
void
fit_indiv(FitProblem *p)
{
	FitLocalPCs   *pcs = fit_local_pcs(p);

	p->rU = 0;
	for (int i = 0; i < p->nclients; i++)
	{
		FitClient  *c = &p->clients[i];

		c->lfirst = 0;
		memcpy(c->W, pcs[i].L, sizeof(double) * p->d * c->k);
	}
}
