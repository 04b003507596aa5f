/*
 * fit_input.c -- the clients of a fit
 *
 * perpca_fit and the federated shards take the same clients, read from a
 * row source (row_reader.h), with the same checks and errors (dimensions,
 * duplicate keys, ranks against d), and build the same clients from them:
 * each S_i about the fit's center, dense or thin (client_math.h).  The
 * component rows of a result are written here too.
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/builtins.h"

#include "exact_sum.h"
#include "fit_input.h"
#include "fit_span.h"
#include "error_kinds.h"
#include "linalg.h"
#include "perpca.h"
#include "scale.h"

int
clients_name_cmp(const void *a, const void *b)
{
	return strcmp((*(const ClientInput *const *) a)->name, (*(const ClientInput *const *) b)->name);
}

/* The n clients' addresses, sorted by key. */
static const ClientInput **
clients_by_name(const ClientInput *in, int n)
{
	const ClientInput **sorted = palloc(sizeof(ClientInput *) * Max(n, 1));

	for (int i = 0; i < n; i++)
		sorted[i] = &in[i];
	qsort(sorted, n, sizeof(ClientInput *), clients_name_cmp);
	return sorted;
}

/* The first key that occurs twice among clients sorted by key, or NULL. */
static const char *
duplicate_key(const ClientInput **sorted, int n)
{
	for (int i = 1; i < n; i++)
		if (strcmp(sorted[i - 1]->name, sorted[i]->name) == 0)
			return sorted[i]->name;
	return NULL;
}

/*
 * The checks of one client: the common dimension d, that of client first
 * (only_dimension: that alone), rows, room for its ranks.
 */
static void
client_check(const ClientInput *c, const ClientInput *first, int d, int n_global, bool only_dimension)
{
	if (c->stats->dim != d)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_DIMENSION),
				 errmsg("client \"%s\" has dimension %d, expected %d",
						c->name, c->stats->dim, d),
				 errdetail("All clients must have the same dimension (that of client \"%s\").",
						   first->name)));
	if (only_dimension)
		return;
	if (c->stats->n <= 0)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_BAD_VALUE),
				 errmsg("client \"%s\" has no rows", c->name),
				 perpca_stats_skipped(c->stats) > 0 ?
				 errdetail("Its statistics left out all its %lld rows for missing values (perpca_stats(x, 'skip')).",
						   (long long) perpca_stats_skipped(c->stats)) : 0,
				 perpca_stats_skipped(c->stats) > 0 ?
				 errhint("Leave the client out of the query, or fill its gaps first (perpca_model_impute).") : 0));
	if ((int64) n_global + c->r2 > d)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("n_global + local components (%d + %d) exceed the dimension %d for client \"%s\"",
						n_global, c->r2, d, c->name)));
}

/*
 * The checks every fit's input gets before any arithmetic: clients, one
 * common dimension within the limit (most clients' dimension; every
 * client's checked before anything else of any client, so a client of
 * another dimension is named as such), rows, unique keys, and room for
 * n_global + r2_i components (in 64-bit arithmetic: ranks cannot overflow).
 * Clients are checked in key order, so an error names the same client
 * whatever order the plan returned them in.
 */
void
clients_check(const ClientInput *in, int n, int n_global, bool need_clients)
{
	const ClientInput **sorted = clients_by_name(in, n);
	int			d = n > 0 ? sorted[0]->stats->dim : 0,
				votes = 0,
				ref = 0;
	const char *dup;

	/* the common dimension: most clients' (a majority vote), so the error names the odd one */
	for (int i = 0; i < n; i++)
	{
		if (votes == 0)
			d = sorted[i]->stats->dim;
		votes += sorted[i]->stats->dim == d ? 1 : -1;
	}
	while (ref < n && sorted[ref]->stats->dim != d)
		ref++;
	if (n == 0 && need_clients)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_BAD_VALUE),
				 errmsg("query returned no clients"),
				 errhint("A fit needs at least one (client, perpca_stats) row.")));
	if (n > 0)
		perpca_check_dim_limit(d);
	/* every dimension first: a client of another dimension is 2202E, whichever key sorts first */
	for (int i = 0; i < n; i++)
		client_check(sorted[i], sorted[ref], d, n_global, true);
	for (int i = 0; i < n; i++)
		client_check(sorted[i], sorted[ref], d, n_global, false);
	if ((dup = duplicate_key(sorted, n)) != NULL)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_DUPLICATE_CLIENT),
				 errmsg("client \"%s\" appears more than once in the query", dup),
				 errdetail("Each client must be one row: its statistics are one perpca_stats value."),
				 errhint("Group by the client key alone, or merge its rows with perpca_merge().")));
	pfree(sorted);
}

/* The statistics are private copies (read_client): scaled in place, before any S_i is built. */
double *
clients_scale(ClientInput *in, int n, FitScale how, bool **constant)
{
	int			d = n > 0 ? in[0].stats->dim : 0;
	PerpcaStats **stats;
	double	   *scale;
	bool	   *flat;

	*constant = NULL;
	if (how == FIT_SCALE_NONE || n == 0)
		return NULL;
	clients_refuse_sketches(in, n, "scale => 'standard'",
							"Fit sketched statistics unscaled (scale => 'none'), or sketch rows already divided by their standard deviations.");
	stats = clients_stats(in, n);
	scale = palloc(sizeof(double) * d);
	flat = palloc(sizeof(bool) * d);
	if (scale_factors(stats, n, d, scale, flat) > 0)
		scale_report_constant(flat, d);
	clients_scale_by(in, n, scale);
	pfree(stats);
	*constant = flat;
	return scale;
}

void
clients_scale_by(ClientInput *in, int n, const double *scale)
{
	for (int i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		scale_stats_inplace(in[i].stats, scale);
	}
}

PerpcaStats **
clients_stats(const ClientInput *in, int n)
{
	PerpcaStats **stats = palloc(sizeof(PerpcaStats *) * Max(n, 1));

	for (int i = 0; i < n; i++)
		stats[i] = in[i].stats;
	return stats;
}

/*
 * sum_i n_i mean_i (d entries), summed exactly (exact_sum.h), so that a
 * federated fit's shards add up to one node's sum bit for bit; *rows =
 * sum_i n_i.
 */
ExactSum *
clients_mean_sum_exact(const ClientInput *in, int n, double *rows)
{
	int			d = n > 0 ? in[0].stats->dim : 0;
	ExactSum   *acc = exact_sum_create(Max(d, 1));

	*rows = 0.0;
	for (int i = 0; i < n; i++)
	{
		double		w = (double) in[i].stats->n;

		*rows += w;
		exact_sum_add_scaled(acc, 0, d, w, PERPCA_STATS_MEAN(in[i].stats));
		exact_sum_add_scaled(acc, 0, d, w, PERPCA_STATS_MEAN_LO(in[i].stats));
	}
	return acc;
}

/* sum_i n_i mean_i into mean_sum (d), correctly rounded; returns sum_i n_i. */
double
clients_mean_sum(const ClientInput *in, int n, double *mean_sum)
{
	double		rows;
	ExactSum   *acc = clients_mean_sum_exact(in, n, &rows);

	exact_sum_values(acc, 0, n > 0 ? in[0].stats->dim : 0, mean_sum);
	exact_sum_free(acc);
	return rows;
}

double *
clients_pooled_mean(const ClientInput *in, int n, const double *mean_sum, double rows)
{
	int			d = n > 0 ? in[0].stats->dim : 0;
	bool		sketched = false;
	double	   *mean;

	for (int i = 0; i < n; i++)
		sketched |= in[i].stats->form == PERPCA_FORM_SKETCH;
	if (!sketched)
		return NULL;
	mean = palloc(sizeof(double) * d);
	for (int j = 0; j < d; j++)
		mean[j] = mean_sum[j] / rows;
	return mean;
}

/*
 * The center of the S_i for opts->center given sum_i n_i mean_i over all
 * clients (of every shard) and their rows: NULL (each client's own mean),
 * the pooled mean, or zero.
 */
double *
clients_center(FitCenter how, const double *mean_sum, double rows, int d)
{
	double	   *center;

	if (how == FIT_CENTER_CLIENT)
		return NULL;
	center = palloc0(sizeof(double) * Max(d, 1));
	if (how == FIT_CENTER_GLOBAL)
		for (int j = 0; j < d; j++)
			center[j] = mean_sum[j] / rows;
	return center;
}

/* A client's random stream: the fit's seed mixed with its key (the same on any shard). */
static uint64
client_seed(const char *name, uint64 seed)
{
	uint64		h = UINT64CONST(1469598103934665603) ^ seed;

	for (const unsigned char *p = (const unsigned char *) name; *p; p++)
		h = (h ^ *p) * UINT64CONST(1099511628211);
	return h;
}

/*
 * The range of the clients' second moments about the centre, trace(S_i), in
 * which the fit's arithmetic and what a model keeps of it stay accurate to
 * rounding.  The fit forms squares of its figures (gradient norms, squared
 * residuals) and a model keeps cubes (tr R^3 of a client's residual
 * covariance, model_store.c), which must stay normal floats with room for
 * sums over coordinates, ranks and clients: at most 2^320 and, for the
 * largest client, at least 2^-320 (cubes within 2^-960..2^960 of float8's
 * 2^-1022..2^1024).  Measured on four features of three clients (rows
 * scaled by 10^k): both solvers match the unscaled fit to 1e-13 for k = -70
 * and 70, but a model trained at k = 70 stored an infinite tr R^3 (XX001 on
 * reading it; at k = -45 and 45 its functions read it); from k = 100 the L-BFGS fit stops early (an infinite
 * gradient norm at k = 150), at k = -100 its components are off by 0.04, at
 * k = -160 the paper's retraction meets NaNs (XX000), and rows of 1e308
 * gave the eigensolvers NaNs.  Statistics outside are an error of their
 * kind (22003), before the fit.
 */
#define FIT_TRACE_MIN ldexp(1.0, -320)
#define FIT_TRACE_MAX ldexp(1.0, 320)

static pg_noreturn void
magnitude_error(const char *client, double trace, bool large)
{
	ereport(ERROR,
			(errcode(PERPCA_ERRCODE_OUT_OF_RANGE),
			 errmsg("statistics are too %s in magnitude for the fit", large ? "large" : "small"),
			 client != NULL ?
			 errdetail("The second moment of client \"%s\" about the centre has trace %g; the fit needs its clients' between %g and %g.",
					   client, trace, FIT_TRACE_MIN, FIT_TRACE_MAX) :
			 errdetail("The largest second moment of the clients about the centre has trace %g; the fit needs it between %g and %g.",
					   trace, FIT_TRACE_MIN, FIT_TRACE_MAX),
			 errhint("Multiply or divide the rows by a constant (their scale) before aggregating, or fit with scale => 'standard'.")));
}

/* The largest trace(S_i) of the clients so far, and their sum (weighted as the fit weighs them). */
typedef struct Magnitude
{
	double		largest;
	double		sum;
} Magnitude;

/*
 * Stop a fit whose figures would leave the range of float8: a client's
 * trace(S_i) above FIT_TRACE_MAX here, their sum above it, or the largest,
 * if not zero, below FIT_TRACE_MIN, once all are in (magnitude_end; a
 * client of little variance beside others is fine).
 */
static void
magnitude_add(Magnitude *m, const char *client, double t, double weight)
{
	if (!(t <= FIT_TRACE_MAX))
		magnitude_error(client, t, true);
	m->largest = Max(m->largest, t);
	m->sum += weight * t;
}

static void
magnitude_end(const Magnitude *m)
{
	if (!(m->sum <= FIT_TRACE_MAX))
		magnitude_error(NULL, m->sum, true);
	if (m->largest > 0.0 && m->largest < FIT_TRACE_MIN)
		magnitude_error(NULL, m->largest, false);
}

/*
 * S_i about center (NULL: the client's own mean), its trace checked first
 * (magnitude_add): thin rows and a sketch's rows kept as they are (S_i =
 * Y'Y / n + delta delta', delta the centre's offset; for a sketch, Y = B,
 * its ell rows, and n the exact row count), else d x d (dense statistics,
 * at most PERPCA_MAX_DENSE_DIM).  A client whose rows were left in storage
 * (in->stored) has Y NULL and its nrows set (fit_span.c reads them), and
 * the figures of its rows (in->sumsq) are those they would give.
 */
static void
client_matrix(FitClient *c, const ClientInput *in, const PerpcaStats *stats, const double *center,
			  Magnitude *m, double weight)
{
	int			d = stats->dim;
	int			rows = (int) stats->n;
	bool		stored = in != NULL && in->stored != NULL;
	const double *Y = stored ? NULL : perpca_stats_thin_rows(stats);
	double	   *delta = center != NULL ? palloc(sizeof(double) * d) : NULL;
	double	   *S;

	if (center != NULL)
		perpca_stats_offset(stats, center, delta);
	magnitude_add(m, in != NULL ? in->name : NULL,
				  (stored && stats->form == PERPCA_FORM_THIN ? in->sumsq : perpca_stats_trace(stats)) /
				  (double) stats->n + (delta != NULL ? linalg_dot(d, delta, delta) : 0.0), weight);
	if (stats->form == PERPCA_FORM_SKETCH)
	{
		Y = stored ? NULL : perpca_stats_sketch_rows(stats, &rows);
		rows = stats->rows;
		c->trace_extra = Max(perpca_stats_trace(stats) -
							 (stored ? in->sumsq : linalg_dot((int64) rows * d, Y, Y)), 0.0) /
			(double) stats->n;
	}
	c->delta = delta;
	if (stats->form != PERPCA_FORM_DENSE)
	{
		c->Y = Y;
		c->nrows = Y != NULL || stored ? rows : 0;
		c->yscale = 1.0 / (double) stats->n;
		return;
	}
	c->delta = NULL;
	perpca_check_dense_dim_limit(d, "dense statistics");
	S = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * d * d);
	perpca_stats_moment(stats, center, S);
	c->S = S;
}

void
clients_one(const PerpcaStats *stats, const double *center, int r1, int r2, FitClient *c)
{
	Magnitude	m = {0};

	memset(c, 0, sizeof(FitClient));
	client_matrix(c, NULL, stats, center, &m, 1.0);
	magnitude_end(&m);
	c->r2 = r2;
	c->weight = 1.0;
	client_setup(c, stats->dim, r1);
}

/* qsort comparison of client indexes by the byte order of their keys in key_order_input. */
static const ClientInput *key_order_input;

static int
key_order_cmp(const void *a, const void *b)
{
	return strcmp(key_order_input[*(const int *) a].name, key_order_input[*(const int *) b].name);
}

/* The fit's clients: S_i about center, rank, weight (1 or n_i), seed. */
static void
clients_matrices(FitClient *clients, const ClientInput *in, int n, const double *center,
				 const FitOptions *opts)
{
	Magnitude	m = {0};

	memset(clients, 0, sizeof(FitClient) * n);
	for (int i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		clients[i].weight = opts->weights ? (double) in[i].stats->n : 1.0;
		client_matrix(&clients[i], &in[i], in[i].stats, center, &m, clients[i].weight);
		clients[i].r2 = in[i].r2;
		clients[i].seed = client_seed(in[i].name, opts->seed);
	}
	magnitude_end(&m);
}

/*
 * The fit's clients and their node, in the span when span and it applies;
 * rows left in storage are read when it does not (then the clients are
 * built again, from the whole values, as without the span).
 */
static FitNode *
clients_build(ClientInput *in, int n, int n_global, const double *center,
			  const FitOptions *opts, FitSpan **span)
{
	FitClient  *clients = palloc0(sizeof(FitClient) * Max(n, 1));
	int			d = n > 0 ? in[0].stats->dim : 0;
	FitNode    *node;

	clients_matrices(clients, in, n, center, opts);
	if (span != NULL)
		*span = fit_span_enter(clients, in, n, d, n_global, opts, &d);
	if ((span == NULL || *span == NULL) && clients_load(in, n))
		clients_matrices(clients, in, n, center, opts);
	node = node_create(d, n_global, n, clients);
	/* the sums over clients run in the byte order of their keys, whatever the query's row order */
	node->order = palloc(sizeof(int) * Max(n, 1));
	for (int i = 0; i < n; i++)
		node->order[i] = i;
	key_order_input = in;
	qsort(node->order, n, sizeof(int), key_order_cmp);
	return node;
}

FitNode *
clients_node(ClientInput *in, int n, int n_global, const double *center,
			 const FitOptions *opts)
{
	return clients_build(in, n, n_global, center, opts, NULL);
}

FitNode *
clients_node_span(ClientInput *in, int n, int n_global, const double *center,
				  const FitOptions *opts, FitSpan **span)
{
	return clients_build(in, n, n_global, center, opts, span);
}

void
clients_refuse_sketch(const PerpcaStats *s, const char *client, const char *func, const char *hint)
{
	if (s == NULL || s->form != PERPCA_FORM_SKETCH)
		return;
	ereport(ERROR,
			(errcode(PERPCA_ERRCODE_UNSUPPORTED),
			 client ? errmsg("%s does not take sketched statistics (client \"%s\")", func, client)
			 : errmsg("%s does not take sketched statistics", func),
			 errdetail("It needs the exact second moments, which a sketch (perpca_sketch) approximates."),
			 errhint("%s", hint)));
}

/* In key order, as clients_check: the error names the same client whatever the plan. */
void
clients_refuse_sketches(const ClientInput *in, int n, const char *func, const char *hint)
{
	const ClientInput **sorted = clients_by_name(in, n);

	for (int i = 0; i < n; i++)
		clients_refuse_sketch(sorted[i]->stats, sorted[i]->name, func, hint);
	pfree(sorted);
}

/*
 * The sketch's bound, derived in the units of the fit's objective
 * (perpca_last_fit: N / sum w_i * sum_i w_i f_i, f_i = 1/2 tr(W_i'S_iW_i),
 * W_i = [U, V_i] of k_i orthonormal columns).  A sketched client has S^_i =
 * B'B / n_i + o o' where the exact S_i = M2 / n_i + o o' (the same exact
 * mean, so the same centre offset o), and 0 <= M2 - B'B <= delta_i I; so
 * for any such W_i
 *   0 <= f_i - f^_i = 1/2 tr(W_i'(M2 - B'B)W_i) / n_i <= 1/2 k_i delta_i / n_i,
 * and the objective's difference lies in [0, N / sum w_i * sum_i w_i
 * 1/2 k_i delta_i / n_i]: with equal weights, 1/2 sum_i k_i delta_i / n_i
 * (half of the bound sum_i (n_global + n_local_i) delta_i / n_i, the 1/2 of
 * f_i).  The sum runs in the node's key order, as the objective's.
 */
double
clients_sketch_bound(const ClientInput *in, const FitNode *node, int rU, MemoryContext cxt,
					 FitClientBound **bounds)
{
	FitClientBound *b = MemoryContextAllocZero(cxt, sizeof(FitClientBound) * Max(node->n, 1));
	double		total = 0.0,
				weight = 0.0;

	for (int j = 0; j < node->n; j++)
	{
		int			i = node->order ? node->order[j] : j;
		const FitClient *c = &node->clients[i];

		b[i].client = in[i].name;
		b[i].n = in[i].stats->n;
		b[i].rows = in[i].sketch_rows;
		b[i].delta = in[i].delta;
		b[i].components = rU + c->k - c->lfirst;
		b[i].bound = 0.5 * b[i].components * in[i].delta / (double) in[i].stats->n;
		total += c->weight * b[i].bound;
		weight += c->weight;
	}
	*bounds = b;
	return weight > 0.0 ? total / weight * node->n : 0.0;
}

/* ------------------------------------------------------------------------
 * Result rows
 * ------------------------------------------------------------------------
 */

void
clients_put_component(ReturnSetInfo *rsinfo, const char *client, const char *kind,
					  int component, const double *A, int d, int lda, int j, double variance,
					  double weight)
{
	Datum		values[6];
	bool		nulls[6] = {client == NULL, false, false, false, false, false};
	double	   *buf = palloc(sizeof(double) * Max(d, 1));

	linalg_copy(d, 1, A + j, lda, buf, 1);
	values[0] = client ? CStringGetTextDatum(client) : (Datum) 0;
	values[1] = CStringGetTextDatum(kind);
	values[2] = Int32GetDatum(component);
	values[3] = PointerGetDatum(perpca_vector_build(buf, d));
	values[4] = Float8GetDatum(variance);
	values[5] = Float8GetDatum(weight);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	pfree(buf);
}

void
clients_put_global(ReturnSetInfo *rsinfo, const FitResult *res, int d)
{
	for (int j = 0; j < res->rU; j++)
		clients_put_component(rsinfo, NULL, "global", j + 1, res->U, d, res->rU, j,
							  res->uvariance[j], 0.0);
}

void
clients_put_local(ReturnSetInfo *rsinfo, const FitNode *node, const ClientInput *in)
{
	for (int i = 0; i < node->n; i++)
	{
		const FitClient *c = &node->clients[i];

		for (int j = c->lfirst; j < c->k; j++)
			clients_put_component(rsinfo, in[i].name, "local", j - c->lfirst + 1, c->W, node->d,
								  c->k, j, c->variance[j], c->weight);
	}
}
