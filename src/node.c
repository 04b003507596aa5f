/*
 * node.c -- the clients on this server, as weighted sums (see node.h)
 *
 * Every operation of the node's FitBackend loops over its clients, calls
 * client_math.c, and adds w_i times the client's answer into a FitSums.
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/memutils.h"

#include "exact_sum.h"
#include "fit_sums.h"
#include "linalg.h"
#include "node.h"
#include "perpca.h"

/* The index of the j-th client in the order of the sums (by key when known). */
static inline int
node_index(const FitNode *node, int j)
{
	return node->order != NULL ? node->order[j] : j;
}

FitNode *
node_create(int d, int r1, int n, FitClient *clients)
{
	FitNode    *node = palloc0(sizeof(FitNode));

	node->d = d;
	node->r1 = r1;
	node->n = n;
	node->clients = clients;
	for (int i = 0; i < n; i++)
		client_setup(&clients[i], d, r1);
	return node;
}

/* Each client's top k_i eigenpairs, computed once (exactly when asked to). */
static FitLocalPCs *
node_pcs(FitNode *node, bool exact)
{
	MemoryContext old;

	if (node->pcs != NULL && (node->pcs_exact || !exact))
		return node->pcs;
	/* kept with the node (a shard's node outlives the call that computes them) */
	old = MemoryContextSwitchTo(GetMemoryChunkContext(node));
	node->pcs = palloc(sizeof(FitLocalPCs) * Max(node->n, 1));
	for (int i = 0; i < node->n; i++)
		client_local_pcs(&node->clients[i], exact, &node->pcs[i]);
	node->pcs_exact = exact;
	MemoryContextSwitchTo(old);
	return node->pcs;
}

/* The d x sum k_i stacked local PCs, scaled by sqrt(w_i lambda_ij) for qu. */
static double *
stacked_pcs(FitNode *node, const FitLocalPCs *pcs, bool qu, int *ncols)
{
	int			d = node->d,
				K = 0,
				off = 0;
	double	   *B;

	for (int i = 0; i < node->n; i++)
		K += node->clients[i].k;
	B = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * d * Max(K, 1));
	for (int j = 0; j < node->n; j++)
	{
		int			i = node_index(node, j);
		const FitClient *c = &node->clients[i];

		linalg_copy(d, c->k, pcs[i].L, c->k, B + off, K);
		if (qu)
			for (int l = 0; l < c->k; l++)
				linalg_scale_column(d, B, K, off + l,
									sqrt(c->weight * Max(pcs[i].lambda[l], 0.0)));
		off += c->k;
	}
	*ncols = K;
	return B;
}

/*
 * Not compressed when there are more columns than d: B is the same matrix
 * on one node and, stacked again in the clients' key order, on a federated
 * coordinator, so both starts get the same bits whatever the shards hold.
 */
static double *
node_basis(FitBackend *be, bool qu, bool exact, int *q)
{
	FitNode    *node = be->state;

	return stacked_pcs(node, node_pcs(node, exact), qu, q);
}

ExactSum *
node_apply_exact(FitNode *node, const double *X, int q)
{
	int			d = node->d;
	double	   *T = palloc(sizeof(double) * d * Max(q, 1));
	ExactSum   *acc = exact_sum_create((int64) d * q);

	for (int j = 0; j < node->n; j++)
	{
		int			i = node_index(node, j);

		CHECK_FOR_INTERRUPTS();
		client_apply(&node->clients[i], X, q, T);
		exact_sum_add_scaled(acc, 0, (int64) d * q, node->clients[i].weight, T);
	}
	pfree(T);
	return acc;
}

/* out (d x q) = sum_i w_i S_i X, summed exactly and rounded once (exact_sum.h). */
static void
node_apply(FitBackend *be, const double *X, int q, double *out)
{
	ExactSum   *acc = node_apply_exact(be->state, X, q);

	exact_sum_values(acc, 0, acc->n, out);
	exact_sum_free(acc);
}

/* The V_i start of the paper solver, given U. */
static void
node_start_local(FitBackend *be, const double *U, FitInit how)
{
	FitNode    *node = be->state;
	FitLocalPCs *pcs = (how == FIT_INIT_RANDOM) ? NULL : node_pcs(node, true);

	for (int i = 0; i < node->n; i++)
	{
		FitClient  *c = &node->clients[i];

		CHECK_FOR_INTERRUPTS();
		if (how == FIT_INIT_RANDOM)
			client_init_random(c);
		else if (how == FIT_INIT_GIVEN && c->V0 != NULL)
			linalg_copy(node->d, c->r2, c->V0, Max(c->r2, 1), c->W + node->r1, c->k);
		else
			client_init_local(c, U, &pcs[i]);
	}
}

/* The sums' G += w G_U and gv += w ||G_V||^2 from the client's tangent gradient c->SW. */
static void
add_gradient(const FitClient *c, int d, int r1, FitSums *out)
{
	for (int row = 0; row < d; row++)
	{
		const double *g = c->SW + (int64) row * c->k;

		for (int j = 0; j < r1; j++)
			fit_sums_add(out, FIT_SUM_G, (int64) row * r1 + j, c->weight * g[j]);
		for (int j = r1; j < c->k; j++)
			fit_sums_add(out, FIT_SUM_SCALARS, FIT_SUM_GV, c->weight * g[j] * g[j]);
	}
}

/*
 * Free the client's LAPACK workspace (client_math.c grows it on demand and
 * keeps it): the best response of a small dense client leaves one of
 * about d^2 + 40 d doubles, which the allocator rounds up to a power of
 * two -- 8 kB at d = 8, 160 MB over 20,000 clients, twice the paper
 * solver's whole peak.  Freed after each client, the next one reuses the
 * same chunk, so the node holds one workspace instead of one per client.
 */
static void
release_work(FitClient *c)
{
	if (c->work != NULL)
		pfree(c->work);
	c->work = NULL;
	c->worklen = 0;
}

/* The sums' weight += w and objective += w f. */
static void
add_objective(const FitClient *c, double f, FitSums *out)
{
	fit_sums_add(out, FIT_SUM_SCALARS, FIT_SUM_WEIGHT, c->weight);
	fit_sums_add(out, FIT_SUM_SCALARS, FIT_SUM_OBJECTIVE, c->weight * f);
}

/* One paper round's client steps. */
static void
node_round(FitBackend *be, const double *U, double step, FitUpdate update,
		   FitRetraction retraction, bool want_kkt, FitSums *out)
{
	FitNode    *node = be->state;
	int			d = node->d,
				r1 = node->r1;

	for (int j = 0; j < node->n; j++)
	{
		int			i = node_index(node, j);
		FitClient  *c = &node->clients[i];
		int64		products = c->products;

		CHECK_FOR_INTERRUPTS();
		c->lazy_local = true;
		c->skip_change = false;
		client_paper_step(c, U, update, retraction, step);
		out->products += c->products - products;
		fit_sums_add_scaled(out, FIT_SUM_U, c->weight, c->Ui);
		add_objective(c, c->objective, out);
		out->change = Max(out->change, c->change);
		if (want_kkt)
			add_gradient(c, d, r1, out);
	}
	fit_sums_round(out);
}

/* One L-BFGS evaluation: the best responses. */
static void
node_evaluate(FitBackend *be, const double *U, double tol, FitSums *out)
{
	FitNode    *node = be->state;
	FitLocalPCs *pcs = node_pcs(node, false);
	int64		size = (int64) node->d * node->r1;
	double	   *T = palloc(sizeof(double) * Max(size, 1));

	for (int j = 0; j < node->n; j++)
	{
		int			i = node_index(node, j);
		FitClient  *c = &node->clients[i];
		bool		exact;
		int64		products = c->products,
					iterations = c->iterations;

		CHECK_FOR_INTERRUPTS();
		client_seed_response(c, &pcs[i]);
		/* T = w_i (I - V_iV_i')S_iU, each product rounded once, then summed exactly */
		memset(T, 0, sizeof(double) * size);
		add_objective(c, client_best_response(c, U, tol, c->weight, T, &exact), out);
		fit_sums_add_scaled(out, FIT_SUM_U, 1.0, T);
		release_work(c);
		out->exact += exact ? 1 : 0;
		out->products += c->products - products;
		out->iterations += c->iterations - iterations;
	}
	pfree(T);
	fit_sums_round(out);
}

/* Final: V_i feasible (or best response) against U, and ordered. */
static void
node_finish(FitBackend *be, const double *U, bool best_response, FitSums *out)
{
	FitNode    *node = be->state;
	int			d = node->d,
				r1 = node->r1;

	for (int j = 0; j < node->n; j++)
	{
		int			i = node_index(node, j);
		FitClient  *c = &node->clients[i];

		CHECK_FOR_INTERRUPTS();
		c->lazy_local = false;
		if (best_response)
		{
			bool		exact;
			double	   *G = palloc0(sizeof(double) * d * Max(r1, 1));

			/* a tight best response: the output V_i is the exact maximizer to rounding */
			c->final_response = true;
			client_best_response(c, U, 1e-13 * client_lambda_max(c), 0.0, G, &exact);
			c->final_response = false;
			pfree(G);
		}
		client_feasible(c, U);
		add_objective(c, client_gradient(c), out);
		for (int a = 0; a < r1; a++)
			for (int b = 0; b < r1; b++)
				fit_sums_add(out, FIT_SUM_GRAM, a * r1 + b, c->weight * c->M[a * c->k + b]);
		add_gradient(c, d, r1, out);
		client_order_local(c);
		release_work(c);
	}
	fit_sums_round(out);
}

/* sum_i w_i V_i V_i' (d x d) added into A. */
static void
node_local_projectors(const FitNode *node, double *A)
{
	for (int j = 0; j < node->n; j++)
	{
		int			i = node_index(node, j);
		const FitClient *c = &node->clients[i];
		int			m = c->k - c->lfirst;

		if (m > 0)
			linalg_gemm(false, true, node->d, node->d, m, c->weight, c->W + c->lfirst, c->k,
						c->W + c->lfirst, c->k, 1.0, A, node->d);
	}
}

/* Y (d x b) = sum_i w_i V_i V_i' X, client by client (the operator of node_theta without a d x d matrix). */
static void
node_projectors_apply(void *arg, const double *X, int b, double *Y)
{
	const FitNode *node = (const FitNode *) arg;
	int			d = node->d;

	memset(Y, 0, sizeof(double) * d * b);
	for (int j = 0; j < node->n; j++)
	{
		const FitClient *c = &node->clients[node_index(node, j)];
		int			m = c->k - c->lfirst;
		double	   *T;

		if (m == 0)
			continue;
		T = palloc(sizeof(double) * m * b);
		linalg_gemm(true, false, m, b, d, 1.0, c->W + c->lfirst, c->k, X, b, 0.0, T, b);
		linalg_gemm(false, false, d, b, m, c->weight, c->W + c->lfirst, c->k, T, b, 1.0, Y, b);
		pfree(T);
	}
}

/*
 * theta_est.  A fit whose clients are all thin or sketched forms no d x d
 * matrix above FIT_THETA_EXACT_DIM (where the dense route iterates too, to
 * the same tolerance, so the two agree to rounding): it would be the fit's
 * largest allocation (75 MB at d = 3,072).  A fit with a dense client keeps
 * the dense route, bit for bit.
 */
double
node_theta(const FitNode *node, double W)
{
	double	   *A,
				theta;
	bool		any = false,
				dense = false;

	for (int i = 0; i < node->n; i++)
	{
		any |= node->clients[i].k > node->clients[i].lfirst;
		dense |= node->clients[i].S != NULL;
	}
	if (node->d > PERPCA_MAX_DENSE_DIM || (!dense && node->d > FIT_THETA_EXACT_DIM))
	{
		EigenOp		op = {node->d, node_projectors_apply, NULL, (void *) node, NULL, NULL, 0, NULL, NULL};

		return any ? 1.0 - fit_top_eigenvalue_op(&op, 1e-9) / W : NAN;
	}
	A = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * node->d * node->d);
	memset(A, 0, sizeof(double) * node->d * node->d);
	node_local_projectors(node, A);
	theta = fit_theta(A, node->d, W, any);
	pfree(A);
	return theta;
}

FitBackend *
node_backend(FitNode *node)
{
	FitBackend *be = palloc0(sizeof(FitBackend));

	*be = (FitBackend) {.state = node, .d = node->d, .r1 = node->r1, .nclients = node->n,
		.basis = node_basis, .apply = node_apply, .start_local = node_start_local,
	.round = node_round, .evaluate = node_evaluate, .finish = node_finish};
	for (int i = 0; i < node->n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		be->weight += node->clients[i].weight;
		be->lambda_max = Max(be->lambda_max, client_lambda_max(&node->clients[i]));
	}
	return be;
}
