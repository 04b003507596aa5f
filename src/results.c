/*
 * results.c -- a stored model read as a user reads it: each component's
 * variance and top features (perpca_component_info), named loadings
 * (perpca_loadings), what each component explains in each client
 * (perpca_component_variance) and clients clustered by their local
 * subspaces (perpca_clusters), read through model_bind.c
 *
 * Clustering follows the paper's application (its section on clustering
 * clients by local components): spectral clustering of the subspace
 * distances rho_ij (perpca_similarity).  The affinity is
 * A_ij = 1 - rho_ij / 2 = <P_i, P_j>_F / ((r_i + r_j) / 2), the mean squared
 * cosine of the principal angles between the two local subspaces (in
 * [0, 1]; a Gram matrix, so positive semidefinite), with A_ii = 0.  As
 * scikit-learn's SpectralClustering(affinity = 'precomputed') does, the
 * embedding is the top k eigenvectors u of D^-1/2 A D^-1/2, each row divided
 * by sqrt(D_ii), and k-means (k-means++ starts, Lloyd iterations, the best of
 * 10 runs) groups its rows; here with a fixed seed, so the clusters are the
 * same on every call.  Clusters are numbered by their first client
 * (bytewise).  With k NULL, k is the one with the largest gap
 * mu_k - mu_{k+1} among the top eigenvalues mu of D^-1/2 A D^-1/2, for
 * 2 <= k <= 20 (mu_1 = 1 always, and 1 - mu_2 is large whenever clusters are
 * not perfectly apart, so k = 1 would win too often); then one cluster, "no
 * cluster structure", unless that split's clients are more alike within
 * than across and the gap is large in the Laplacian's terms
 * (clusters_eigengap_k).
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "eigen.h"
#include "error_kinds.h"
#include "linalg.h"
#include "model_bind.h"
#include "perpca.h"

PG_FUNCTION_INFO_V1(perpca_component_info);
PG_FUNCTION_INFO_V1(perpca_loadings);
PG_FUNCTION_INFO_V1(perpca_component_variance);
PG_FUNCTION_INFO_V1(perpca_clusters);

/* The most clients perpca_clusters takes: rho and the eigenproblem are n x n. */
#define CLUSTERS_MAX_CLIENTS 5000
/* The largest k the eigengap rule considers. */
#define CLUSTERS_MAX_AUTO_K 20
/*
 * The least lambda_{k+1} / lambda_k (lambda = 1 - mu) that counts as cluster
 * structure, tuned on generated clients (test/fixtures/gen_clusters.py).
 */
#define CLUSTERS_MIN_RATIO 1.3
#define KMEANS_RUNS 10
#define KMEANS_ITER 300
/* Features listed by perpca_component_info's top_features. */
#define COMPONENT_TOP_FEATURES 3

/* The name of feature j: the stored name, or x<j+1>. */
static char *
feature_name(const ModelData *m, int j)
{
	return m->feature_names != NULL ? m->feature_names[j] : psprintf("x%d", j + 1);
}

/* "name +0.52, name -0.41, ..." for the top features of a component w (d) by |loading|. */
static char *
top_features(const ModelData *m, const double *w, int top)
{
	StringInfoData buf;
	bool	   *used = palloc0(sizeof(bool) * m->d);

	initStringInfo(&buf);
	for (int t = 0; t < Min(top, m->d); t++)
	{
		int			best = -1;

		for (int j = 0; j < m->d; j++)
			if (!used[j] && (best < 0 || fabs(w[j]) > fabs(w[best])))
				best = j;
		used[best] = true;
		appendStringInfo(&buf, "%s%s %+.2f", t > 0 ? ", " : "", feature_name(m, best), w[best]);
	}
	return buf.data;
}

/* a / b, or NULL when either is NULL or b is 0. */
static ModelFloat
ratio(ModelFloat a, ModelFloat b)
{
	ModelFloat	r = {0.0, a.isnull || b.isnull || b.value == 0.0};

	if (!r.isnull)
		r.value = a.value / b.value;
	return r;
}

/* sum + v, NULLs skipped as SQL's sum skips them, into sum. */
static ModelFloat
sum_add(ModelFloat *sum, ModelFloat v)
{
	if (!v.isnull)
	{
		sum->value += v.value;
		sum->isnull = false;
	}
	return *sum;
}

/* One block of a model's components: the global ones (client NULL), or one client's local ones. */
typedef struct Block
{
	const char *client;
	const double *A;			/* k x d */
	const int  *number;
	const ModelFloat *variance;
	int			k;
	ModelFloat	total;			/* the variance the block's shares are of */
	ModelFloat	base;			/* the share before the block's (the client's global share) */
} Block;

typedef void (*BlockRows) (ReturnSetInfo *rsinfo, const ModelData *m, const Block *b);

/* The model argument bound, for a function materializing its rows. */
static const ModelData *
materialized_model(FunctionCallInfo fcinfo)
{
	InitMaterializedSRF(fcinfo, 0);
	return model_bind(fcinfo, PG_GETARG_TEXT_PP(0))->data;
}

/* The rows of each block of the model, the global one first, then the clients' bytewise. */
static Datum
block_rows(FunctionCallInfo fcinfo, BlockRows rows)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const ModelData *m = materialized_model(fcinfo);
	Block		global = {NULL, m->U, m->global_number, m->global_variance, m->r1, m->total_variance, {0.0, false}};

	rows(rsinfo, m, &global);
	for (int i = 0; i < m->nclients; i++)
	{
		const ModelClient *c = &m->clients[i];
		Block		local = {c->name, c->V, c->number, c->variance, c->r2, c->total_variance, c->global_ratio};

		CHECK_FOR_INTERRUPTS();
		rows(rsinfo, m, &local);
	}
	return (Datum) 0;
}

/*
 * perpca_component_info's rows of a block: variance, its share of the
 * block's total and the cumulative share (on top of the base), the top
 * features.
 */
static void
component_info_rows(ReturnSetInfo *rsinfo, const ModelData *m, const Block *b)
{
	ModelFloat	sum = {0.0, true};

	for (int j = 0; j < b->k; j++)
	{
		ModelFloat	share = ratio(b->variance[j], b->total);
		ModelFloat	cumulative = ratio(sum_add(&sum, b->variance[j]), b->total);
		Datum		row[7] = {b->client ? CStringGetTextDatum(b->client) : (Datum) 0,
			CStringGetTextDatum(b->client ? "local" : "global"), Int32GetDatum(b->number[j]),
			Float8GetDatum(b->variance[j].value), Float8GetDatum(share.value),
			Float8GetDatum(cumulative.value + b->base.value),
		CStringGetTextDatum(top_features(m, b->A + (int64) j * m->d, COMPONENT_TOP_FEATURES))};
		bool		nulls[7] = {b->client == NULL, false, false, b->variance[j].isnull, share.isnull,
		cumulative.isnull || b->base.isnull, false};

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row, nulls);
	}
}

/*
 * Variance, explained-variance ratio and cumulative ratio of each component:
 * global components against the fit's weighted mean total variance, local
 * ones against their client's total variance, cumulated on top of the
 * client's global share (the running sum skips NULL variances, as SQL's sum
 * does).
 */
Datum
perpca_component_info(PG_FUNCTION_ARGS)
{
	return block_rows(fcinfo, component_info_rows);
}

/* perpca_loadings' rows of a block: one per feature of each component. */
static void
loadings_rows(ReturnSetInfo *rsinfo, const ModelData *m, const Block *b)
{
	for (int c = 0; c < b->k; c++)
		for (int j = 0; j < m->d; j++)
		{
			Datum		row[5] = {CStringGetTextDatum(b->client ? "local" : "global"),
				b->client ? CStringGetTextDatum(b->client) : (Datum) 0, Int32GetDatum(b->number[c]),
			CStringGetTextDatum(feature_name(m, j)), Float8GetDatum(b->A[(int64) c * m->d + j])};
			bool		nulls[5] = {false, b->client == NULL, false, false, false};

			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row, nulls);
		}
}

/* perpca_loadings(model) RETURNS TABLE (kind, client, component, feature, loading) */
Datum
perpca_loadings(PG_FUNCTION_ARGS)
{
	return block_rows(fcinfo, loadings_rows);
}

/* ------------------------------------------------------------------------
 * perpca_component_variance
 * ------------------------------------------------------------------------
 */

/* The row of component a (global ones first) of client c: C_aa + (w'delta)^2 and its share. */
static void
component_variance_row(ReturnSetInfo *rsinfo, const ModelData *m, const ModelClient *c, int a,
					   const double *delta)
{
	int			k = m->r1 + c->r2;
	bool		global = a < m->r1;
	const double *w = global ? m->U + (int64) a * m->d : c->V + (int64) (a - m->r1) * m->d;
	double		shift = linalg_dot(m->d, w, delta);
	double		variance = c->score_cov[(int64) a * k + a] + shift * shift;
	bool		no_total = c->total_variance.isnull || !(c->total_variance.value > 0.0);
	Datum		row[5] = {CStringGetTextDatum(c->name), CStringGetTextDatum(global ? "global" : "local"),
		Int32GetDatum(global ? m->global_number[a] : c->number[a - m->r1]), Float8GetDatum(variance),
	Float8GetDatum(no_total ? 0.0 : variance / c->total_variance.value)};
	bool		nulls[5] = {false, false, false, false, no_total};

	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row, nulls);
}

/*
 * perpca_component_variance(model) RETURNS TABLE (client, kind, component,
 * variance, ratio): w' M_i w for each global and local component w of
 * client i, M_i the second moment of its training rows about the model's
 * centre for it (= C_ii + (w'(mean_i - centre))^2 with C the stored scores'
 * covariance), and its share of the client's total_variance.
 */
Datum
perpca_component_variance(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const ModelData *m = materialized_model(fcinfo);
	double	   *delta = palloc(sizeof(double) * m->d);

	for (int i = 0; i < m->nclients; i++)
	{
		const ModelClient *c = &m->clients[i];

		CHECK_FOR_INTERRUPTS();
		if (m->r1 + c->r2 == 0)
			continue;
		if (c->score_cov == NULL || c->mean == NULL)
			ereport(ERROR,
					(errcode(PERPCA_ERRCODE_NOT_READY),
					 errmsg("model \"%s\" has no per-component statistics for client \"%s\"",
							text_to_cstring(PG_GETARG_TEXT_PP(0)), c->name),
					 errdetail("Models stored before perpca 0.3.0 lack <model>_clients.score_covariance."),
					 errhint("Refresh the model (perpca_refresh) or train it again with replace => true.")));
		/* delta = (mean_i - centre) / scale: zero for center 'client' */
		for (int j = 0; j < m->d; j++)
		{
			double		off = m->center == CENTER_CLIENT ? 0.0 :
				c->mean[j] - (m->center == CENTER_GLOBAL ? m->global_mean[j] : 0.0);

			delta[j] = m->scale ? off / m->scale[j] : off;
		}
		for (int a = 0; a < m->r1 + c->r2; a++)
			component_variance_row(rsinfo, m, c, a, delta);
	}
	return (Datum) 0;
}

/* ------------------------------------------------------------------------
 * perpca_clusters
 * ------------------------------------------------------------------------
 */

/* A uniform double in [0, 1) of the k-means starts' stream (fixed seed: the same clusters on every call). */
static double
uniform(uint64 *state)
{
	return (fit_rng_next(state) >> 11) * (1.0 / 9007199254740992.0);
}

static double
sqdist(const double *a, const double *b, int k)
{
	double		s = 0.0;

	for (int j = 0; j < k; j++)
		s += (a[j] - b[j]) * (a[j] - b[j]);
	return s;
}

/* k-means++ starts on the n rows of X (n x k). */
static void
kmeans_start(const double *X, int n, int k, double *centers, uint64 *state, double *dist)
{
	int			first = (int) (uniform(state) * n);

	memcpy(centers, X + (int64) first * k, sizeof(double) * k);
	for (int i = 0; i < n; i++)
		dist[i] = sqdist(X + (int64) i * k, centers, k);
	for (int c = 1; c < k; c++)
	{
		double		total = 0.0,
					pick;
		int			chosen = n - 1;

		for (int i = 0; i < n; i++)
			total += dist[i];
		pick = uniform(state) * total;
		for (int i = 0; i < n; i++)
		{
			pick -= dist[i];
			if (pick < 0.0)
			{
				chosen = i;
				break;
			}
		}
		if (total <= 0.0)
			chosen = c % n;		/* all rows on the centers already */
		memcpy(centers + (int64) c * k, X + (int64) chosen * k, sizeof(double) * k);
		for (int i = 0; i < n; i++)
			dist[i] = Min(dist[i], sqdist(X + (int64) i * k, centers + (int64) c * k, k));
	}
}

/* The nearest of the k centers to row x (k values), its squared distance in *dist. */
static int
kmeans_nearest(const double *x, int k, const double *centers, double *dist)
{
	int			best = 0;

	*dist = INFINITY;
	for (int c = 0; c < k; c++)
	{
		double		dd = sqdist(x, centers + (int64) c * k, k);

		if (dd < *dist)
		{
			*dist = dd;
			best = c;
		}
	}
	return best;
}

/*
 * Lloyd iterations on the rows of X (n x k) from the given centers: each row
 * to its nearest center (label), each center to the mean of its rows (a
 * center without rows stays), until no label changes; returns the inertia.
 */
static double
kmeans_lloyd(const double *X, int n, int k, double *centers, int *label)
{
	double	   *sum = palloc(sizeof(double) * k * k);
	int		   *count = palloc(sizeof(int) * k);
	double		inertia = 0.0;

	for (int it = 0; it < KMEANS_ITER; it++)
	{
		bool		changed = false;

		inertia = 0.0;
		for (int i = 0; i < n; i++)
		{
			double		dist;
			int			best = kmeans_nearest(X + (int64) i * k, k, centers, &dist);

			changed |= it == 0 || label[i] != best;
			label[i] = best;
			inertia += dist;
		}
		if (!changed)
			break;
		memset(sum, 0, sizeof(double) * k * k);
		memset(count, 0, sizeof(int) * k);
		for (int i = 0; i < n; i++)
		{
			count[label[i]]++;
			for (int j = 0; j < k; j++)
				sum[(int64) label[i] * k + j] += X[(int64) i * k + j];
		}
		for (int c = 0; c < k; c++)
			for (int j = 0; count[c] > 0 && j < k; j++)
				centers[(int64) c * k + j] = sum[(int64) c * k + j] / count[c];
	}
	pfree(sum);
	pfree(count);
	return inertia;
}

/* The best of KMEANS_RUNS k-means runs on the rows of X (n x k): labels and centers. */
static void
kmeans(const double *X, int n, int k, int *label, double *centers)
{
	uint64		state = 0;
	double		best = INFINITY;
	double	   *c = palloc(sizeof(double) * k * k);
	double	   *dist = palloc(sizeof(double) * n);
	int		   *l = palloc(sizeof(int) * n);

	for (int run = 0; run < KMEANS_RUNS; run++)
	{
		double		inertia;

		CHECK_FOR_INTERRUPTS();
		kmeans_start(X, n, k, c, &state, dist);
		inertia = kmeans_lloyd(X, n, k, c, l);
		if (inertia < best - 1e-12 * Max(best, 1.0) || run == 0)
		{
			best = inertia;
			memcpy(label, l, sizeof(int) * n);
			memcpy(centers, c, sizeof(double) * k * k);
		}
	}
}

/* B = D^-1/2 A D^-1/2 of the affinities of the model's clients (n x n), sqrt(D) into dd. */
static double *
affinity(const ModelData *m, double *dd)
{
	int			n = m->nclients;
	double	   *B = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * n * n);
	double	   *G = palloc(sizeof(double) * Max(m->r2max * m->r2max, 1));

	for (int i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		B[(int64) i * n + i] = 0.0;
		for (int j = i + 1; j < n; j++)
		{
			double		rho = model_client_distance(m, &m->clients[i], &m->clients[j], G);
			double		a = Max(1.0 - rho / 2.0, 0.0);

			B[(int64) i * n + j] = B[(int64) j * n + i] = a;
		}
	}
	for (int i = 0; i < n; i++)
	{
		double		deg = 0.0;

		for (int j = 0; j < n; j++)
			deg += B[(int64) i * n + j];
		dd[i] = deg > 0.0 ? sqrt(deg) : 1.0;	/* an isolated client: as scipy's laplacian */
	}
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			B[(int64) i * n + j] /= dd[i] * dd[j];
	return B;
}

/* The checked arguments of perpca_clusters: the model's client count n, and k (0: chosen). */
static int
clusters_args(FunctionCallInfo fcinfo, const ModelData *m, bool chosen)
{
	int			n = m->nclients,
				k = chosen ? 0 : PG_GETARG_INT32(1);
	bool		any_local = false;

	for (int i = 0; i < n; i++)
		any_local |= m->clients[i].r2 > 0;
	if (!any_local)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("model \"%s\" has no local components to cluster its clients by",
						text_to_cstring(PG_GETARG_TEXT_PP(0))),
				 errhint("Train it with n_local >= 1.")));
	if (n > CLUSTERS_MAX_CLIENTS)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_CLIENT_LIMIT),
				 errmsg("perpca_clusters takes at most %d clients, model \"%s\" has %d",
						CLUSTERS_MAX_CLIENTS, text_to_cstring(PG_GETARG_TEXT_PP(0)), n)));
	if (!chosen && (k < 1 || k > n))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("k must be between 1 and the number of clients (%d), got %d", n, k),
				 errhint("Pass k => NULL to choose k by the largest eigengap.")));
	return k;
}

/* No cluster structure: one cluster, and a NOTICE with the figure that decided it. */
static int
clusters_no_structure(int k, double mu_k, double ratio)
{
	ereport(NOTICE,
			(mu_k <= 0.0 ?
			 errmsg("perpca_clusters: no cluster structure (the best split's mu_k = %.3g <= 0), one cluster",
					mu_k) :
			 errmsg("perpca_clusters: no cluster structure (the best split's (1 - mu_k+1) / (1 - mu_k) = %.3g < %.2g), one cluster",
					ratio, CLUSTERS_MIN_RATIO),
			 errdetail("The best split is k = %d, by the largest eigengap of the normalized affinity D^-1/2 A D^-1/2; "
					   "clusters need mu_k > 0 and (1 - mu_k+1) / (1 - mu_k) >= %.2g, it has mu_%d = %.3g and %.3g.",
					   k, CLUSTERS_MIN_RATIO, k, mu_k, ratio),
			 errhint("Pass k to split the clients anyway.")));
	return 1;
}

/*
 * k by the largest eigengap among the top eigenvalues (descending) of the
 * normalized affinity, or 1 when that gap is no cluster structure; a NOTICE
 * says which, with the figures that decided it.  In terms of the normalized
 * Laplacian's eigenvalues lambda = 1 - mu, k clusters apart from each other
 * make lambda_1 .. lambda_k small and lambda_{k+1} large (the structure
 * condition of Peng, Sun and Zanetti is lambda_{k+1} / lambda_k large), and
 * exchangeable clients give lambda_2 = ... = lambda_n = n / (n - 1), a
 * ratio of 1.  So the best split is kept only when mu_k > 0 (its clients
 * are more alike within than across the split) and lambda_{k+1} / lambda_k
 * >= CLUSTERS_MIN_RATIO.
 */
static int
clusters_eigengap_k(const double *values, int top, int n)
{
	double		gap = -1.0,
				ratio;
	int			k;

	/* k >= 2: mu_1 = 1 always, and 1 - mu_2 is large whenever clusters are not perfectly apart */
	k = Min(n, 2);
	for (int j = 1; j + 1 < top; j++)
		if (values[j] - values[j + 1] > gap)
		{
			gap = values[j] - values[j + 1];
			k = j + 1;
		}
	if (n < 3)
	{
		ereport(NOTICE,
				(errmsg("perpca_clusters: no cluster structure, one cluster"),
				 errdetail("Clusters are chosen among 3 or more clients; the model has %d.", n),
				 errhint("Pass k to split the clients anyway.")));
		return 1;
	}
	ratio = (1.0 - values[k]) / Max(1.0 - values[k - 1], 1e-12);
	if (values[k - 1] <= 0.0 || ratio < CLUSTERS_MIN_RATIO)
		return clusters_no_structure(k, values[k - 1], ratio);
	ereport(NOTICE,
			(errmsg("perpca_clusters: k = %d, chosen by the largest eigengap (mu_%d - mu_%d = %.3g)",
					k, k, k + 1, gap),
			 errdetail("The eigenvalues mu of the normalized affinity D^-1/2 A D^-1/2 were compared for k = 2 .. %d; "
					   "mu_%d = %.3g, (1 - mu_%d) / (1 - mu_%d) = %.3g >= %.2g.",
					   Max(top - 1, 2), k, values[k - 1], k + 1, k, ratio, CLUSTERS_MIN_RATIO)));
	return k;
}

/*
 * The spectral embedding of the clients (n x *k, returned): row i of the top
 * k eigenvectors of D^-1/2 A D^-1/2, divided by sqrt(D_ii); *k chosen by
 * the eigengap when it is 0.
 */
static double *
clusters_embedding(const ModelData *m, int *k)
{
	int			n = m->nclients,
				top = *k == 0 ? Min(n, CLUSTERS_MAX_AUTO_K + 1) : *k;
	double	   *dd = palloc(sizeof(double) * n),
			   *B = affinity(m, dd),
			   *values = palloc(sizeof(double) * top),
			   *Z = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * n * top),
			   *X;

	if (linalg_eigh_top(n, B, top, values, Z, top,
						MemoryContextAllocHuge(CurrentMemoryContext,
											   sizeof(double) * LINALG_EIGH_WORK(n, top))) != 0)
		elog(ERROR, "eigendecomposition of the clients' affinities failed");
	if (*k == 0)
		*k = clusters_eigengap_k(values, top, n);
	X = palloc(sizeof(double) * n * *k);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < *k; j++)
			X[(int64) i * *k + j] = Z[(int64) i * top + j] / dd[i];
	return X;
}

/* One row per client: its cluster, numbered by the cluster's first client (bytewise), and its distance to the centre. */
static void
clusters_rows(ReturnSetInfo *rsinfo, const ModelData *m, const double *X, int k, const int *label,
			  const double *centers)
{
	int		   *number = palloc0(sizeof(int) * k);
	int			next = 0;

	for (int i = 0; i < m->nclients; i++)
		if (number[label[i]] == 0)
			number[label[i]] = ++next;
	for (int i = 0; i < m->nclients; i++)
	{
		Datum		row[3] = {CStringGetTextDatum(m->clients[i].name), Int32GetDatum(number[label[i]]),
		Float8GetDatum(sqrt(sqdist(X + (int64) i * k, centers + (int64) label[i] * k, k)))};
		bool		nulls[3] = {false, false, false};

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row, nulls);
	}
}

/* perpca_clusters(model, k DEFAULT NULL) RETURNS TABLE (client, cluster, distance_to_center) */
Datum
perpca_clusters(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const ModelData *m;
	int			k;
	double	   *X,
			   *centers;
	int		   *label;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NULL),
				 errmsg("model must not be NULL")));
	m = materialized_model(fcinfo);
	k = clusters_args(fcinfo, m, PG_ARGISNULL(1));
	X = clusters_embedding(m, &k);
	label = palloc(sizeof(int) * m->nclients);
	centers = palloc(sizeof(double) * k * k);
	kmeans(X, m->nclients, k, label, centers);
	clusters_rows(rsinfo, m, X, k, label, centers);
	return (Datum) 0;
}
