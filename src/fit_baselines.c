/*
 * fit_baselines.c -- the one-shot methods of perpca_fit: dispca, cpca, indiv
 *
 * Closed form, on one node: no rounds, so they always "converge".
 *   dispca  U from the stacked local PCs, V_i = top r2_i of the deflated S_i
 *   cpca    top r1 + n_local eigenvectors of sum_i w_i S_i / W, no local part
 *   indiv   each client's own top r1 + r2_i eigenvectors, all local
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/memutils.h"

#include "fit.h"
#include "fit_baselines.h"
#include "perpca.h"
#include "fit_sums.h"
#include "linalg.h"

/* disPCA: U from the exact stacked basis, V_i exact, both ordered by the node's finish. */
static void
baseline_dispca(FitNode *node, FitBackend *be, FitResult *res, FitDiagnostics *diag)
{
	int			d = node->d,
				r1 = node->r1,
				q;
	double	   *B = be->basis(be, false, true, &q);
	FitSums    *s = fit_sums_create(d, r1);

	res->U = palloc0(sizeof(double) * d * Max(r1, 1));
	if (r1 > 0)
		fit_left_singular(d, q, B, r1, res->U, r1, NULL);
	for (int i = 0; i < node->n; i++)
	{
		FitClient  *c = &node->clients[i];
		double	   *values = palloc(sizeof(double) * Max(c->r2, 1));

		CHECK_FOR_INTERRUPTS();
		client_top_eigen(c, res->U, c->r2, values, c->W + r1, c->k);
		pfree(values);
	}
	be->finish(be, res->U, false, s);
	fit_order_global(be, s->gram, res);
	diag->objective = s->objective / s->weight * node->n;
	diag->kkt_residual = linalg_dot((int64) d * r1, s->G, s->G) / (s->weight * s->weight) +
		s->gv / s->weight;
	diag->gradient_norm = sqrt(linalg_dot((int64) d * r1, s->G, s->G)) / s->weight;
	fit_sums_free(s);
}

/* CPCA: the pooled matrix's top r1 + n_local eigenvectors (dense, exact). */
static void
baseline_cpca(FitNode *node, FitBackend *be, int n_local, FitResult *res)
{
	int			d = node->d;
	double	   *A;

	perpca_check_dense_dim_limit(d, "method 'cpca'");
	A = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * d * d);
	memset(A, 0, sizeof(double) * d * d);
	for (int i = 0; i < node->n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		client_add_dense(&node->clients[i], node->clients[i].weight / be->weight, A);
	}
	res->rU = node->r1 + n_local;
	res->U = palloc0(sizeof(double) * d * Max(res->rU, 1));
	res->uvariance = palloc0(sizeof(double) * Max(res->rU, 1));
	fit_eigh_top(d, A, res->rU, res->uvariance, res->U, res->rU);
	linalg_fix_signs(d, res->rU, res->U, res->rU);
	pfree(A);
	for (int i = 0; i < node->n; i++)
		node->clients[i].lfirst = node->clients[i].k;
}

/* indivPCA: each client's exact top k_i eigenvectors, all local. */
static void
baseline_indiv(FitNode *node, FitResult *res)
{
	res->rU = 0;
	res->U = palloc0(sizeof(double));
	res->uvariance = palloc0(sizeof(double));
	for (int i = 0; i < node->n; i++)
	{
		FitClient  *c = &node->clients[i];

		CHECK_FOR_INTERRUPTS();
		c->lfirst = 0;
		client_top_eigen(c, NULL, c->k, c->variance, c->W, c->k);
		linalg_fix_signs(node->d, c->k, c->W, c->k);
	}
}

/* The objective of the output: 1/2 N (sum of global variances + sum_i w_i local variances / W). */
static double
output_objective(const FitNode *node, const FitResult *res, double W)
{
	double		f = 0.0;

	for (int j = 0; j < res->rU; j++)
		f += res->uvariance[j];
	for (int i = 0; i < node->n; i++)
	{
		const FitClient *c = &node->clients[i];

		for (int j = c->lfirst; j < c->k; j++)
			f += c->weight / W * c->variance[j];
	}
	return 0.5 * f * node->n;
}

void
fit_baseline(FitNode *node, FitBackend *be, const FitOptions *opts, FitResult *res,
			 FitDiagnostics *diag)
{
	diag->chosen = -1;
	diag->n_clients = node->n;
	diag->dim = node->d;
	diag->rounds = 0;
	diag->converged = true;
	diag->kkt_residual = NAN;
	diag->gradient_norm = NAN;
	diag->step = NAN;
	switch (opts->method)
	{
		case FIT_METHOD_DISPCA:
			baseline_dispca(node, be, res, diag);
			return;
		case FIT_METHOD_CPCA:
			baseline_cpca(node, be, opts->n_local, res);
			break;
		case FIT_METHOD_INDIV:
			baseline_indiv(node, res);
			break;
		case FIT_METHOD_PERPCA:
			elog(ERROR, "perpca is not a one-shot method");
	}
	diag->objective = output_objective(node, res, be->weight);
}
