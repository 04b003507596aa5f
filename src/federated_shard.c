/*
 * federated_shard.c -- the shard side of perpca_fit_federated: the node
 * functions of node.c behind SQL functions in schema perpca_internal
 *
 * shard_open reads the user's query here (a row source, row_reader.h) and keeps its clients in
 * a backend-local state (a memory context under TopMemoryContext, found by
 * the fit id); with scale 'standard', shard_scale sends the shard's sums for
 * the pooled standard deviations (scale.h); shard_init divides the
 * statistics by the coordinator's divisors, if any, and builds the node;
 * shard_basis, _apply, _start_local, _round, _evaluate and _finish are
 * node.c's operations, answering with the node's FitSums; shard_result emits the local components.  The state dies
 * with shard_close or with the backend.  The coordinator is federated.c.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "error_kinds.h"
#include "exact_sum.h"
#include "fit_input.h"
#include "fit_options.h"
#include "fit_sums.h"
#include "linalg.h"
#include "perpca.h"
#include "scale.h"

PG_FUNCTION_INFO_V1(perpca_shard_open);
PG_FUNCTION_INFO_V1(perpca_shard_init);
PG_FUNCTION_INFO_V1(perpca_shard_scale);
PG_FUNCTION_INFO_V1(perpca_shard_basis);
PG_FUNCTION_INFO_V1(perpca_shard_apply);
PG_FUNCTION_INFO_V1(perpca_shard_start_local);
PG_FUNCTION_INFO_V1(perpca_shard_round);
PG_FUNCTION_INFO_V1(perpca_shard_evaluate);
PG_FUNCTION_INFO_V1(perpca_shard_finish);
PG_FUNCTION_INFO_V1(perpca_shard_result);
PG_FUNCTION_INFO_V1(perpca_shard_close);

/* The state of one federated fit in this backend. */
typedef struct ShardFit
{
	struct ShardFit *next;
	char	   *id;
	MemoryContext cxt;			/* everything below lives here */
	int			n;				/* clients */
	int			d;
	FitOptions	opts;			/* n_global, n_local, weights, seed */
	ClientInput *in;			/* the clients, in query order */
	FitNode    *node;			/* NULL until shard_init */
	FitBackend *be;				/* the node's */
	bool		finished;
} ShardFit;

static ShardFit *shard_fits = NULL;

/* ------------------------------------------------------------------------
 * The open fits
 * ------------------------------------------------------------------------
 */

/* A composite result from values, for a function returning a row type. */
static Datum
shard_row(FunctionCallInfo fcinfo, Datum *values, bool *nulls)
{
	TupleDesc	desc;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	desc = BlessTupleDesc(desc);
	return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
}

static ShardFit *
shard_fit_find(const char *id)
{
	for (ShardFit *sf = shard_fits; sf != NULL; sf = sf->next)
		if (strcmp(sf->id, id) == 0)
			return sf;
	return NULL;
}

/* What a shard function needs of its fit: open, set up (not initialized, with clients), or ready. */
typedef enum ShardStage
{
	SHARD_OPEN,
	SHARD_SETUP,
	SHARD_READY
} ShardStage;

/* The open fit named by argument 0, at the given stage. */
static ShardFit *
shard_fit_get(FunctionCallInfo fcinfo, ShardStage stage)
{
	char	   *id = fit_text_arg(fcinfo, 0, "fit_id");
	ShardFit   *sf = shard_fit_find(id);

	if (sf == NULL)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_UNDEFINED),
				 errmsg("federated fit \"%s\" is not open in this session", id),
				 errhint("shard_open must run first, in the same session.")));
	if (stage == SHARD_SETUP && (sf->node != NULL || sf->n == 0))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NOT_READY),
				 errmsg("federated fit \"%s\" is already initialized or has no clients here", sf->id)));
	if (stage == SHARD_READY && sf->node == NULL)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NOT_READY),
				 errmsg("federated fit \"%s\" has not been initialized", sf->id),
				 errhint("Call shard_init first.")));
	if (stage == SHARD_READY && sf->finished)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NOT_READY),
				 errmsg("federated fit \"%s\" is already finished", sf->id)));
	return sf;
}

static void
shard_fit_unlink(ShardFit *sf)
{
	ShardFit  **link = &shard_fits;

	while (*link != sf)
		link = &(*link)->next;
	*link = sf->next;
}

static void
shard_fit_free(ShardFit *sf)
{
	shard_fit_unlink(sf);
	MemoryContextDelete(sf->cxt);
}

/*
 * On an error inside a fit: the fit is forgotten at once, but its memory
 * lives until the (sub)transaction's abort, because the error in flight may
 * point into it (CopyErrorData copies the file and function names into the
 * current context, which is the fit's) and is reported after this returns.
 */
static void
shard_fit_free_on_error(ShardFit *sf)
{
	shard_fit_unlink(sf);
	MemoryContextSetParent(sf->cxt, CurTransactionContext);
}

static ShardFit *
shard_fit_new(const char *id)
{
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext, "perpca shard fit",
											  ALLOCSET_DEFAULT_SIZES);
	ShardFit   *sf = MemoryContextAllocZero(cxt, sizeof(ShardFit));

	sf->cxt = cxt;
	sf->id = MemoryContextStrdup(cxt, id);
	sf->next = shard_fits;
	shard_fits = sf;
	return sf;
}

/* Run f(sf, arg) in sf's memory context; on error the whole fit is freed (at the abort). */
static void
shard_in_fit(ShardFit *sf, void (*f) (ShardFit *, void *), void *arg)
{
	MemoryContext old = MemoryContextSwitchTo(sf->cxt);

	PG_TRY();
	{
		f(sf, arg);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(old);
		shard_fit_free_on_error(sf);
		PG_RE_THROW();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
}

/* A 2-D float8[] argument of d rows (cols: expected columns, -1 any); *cols set. */
static double *
shard_matrix_arg(FunctionCallInfo fcinfo, int argno, int d, int *cols, const char *what)
{
	int			rows,
				c;
	double	   *A;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NULL),
				 errmsg("argument \"%s\" must not be NULL", what)));
	A = perpca_matrix_arg(PG_GETARG_ARRAYTYPE_P(argno), &rows, &c, what);
	if (rows != d || (*cols >= 0 && c != *cols))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_DIMENSION),
				 errmsg("%s is %d x %d, expected %d x %d", what, rows, c, d, *cols >= 0 ? *cols : c)));
	*cols = c;
	return A;
}

/* U (d x n_global) from argument argno. */
static double *
shard_u_arg(FunctionCallInfo fcinfo, ShardFit *sf, int argno)
{
	int			r1 = sf->opts.n_global;

	if (r1 == 0)
		return palloc0(sizeof(double));
	return shard_matrix_arg(fcinfo, argno, sf->d, &r1, "U");
}

/*
 * A part of the sums as the layers of its exact expansion (exact_sum.h):
 * a (layers x rows) x cols float8[], layer k holding the k-th terms.
 */
static Datum
shard_expansion(FitSums *s, FitSumPart part, int rows, int cols)
{
	int			layers;
	double	   *terms = fit_sums_expansion(s, part, &layers);

	return PointerGetDatum(perpca_matrix_build(terms, layers * rows, cols));
}

/*
 * The sums row (sums, u_sum, g_sum, change, gram, exact) of a node
 * operation: sums is the expansion of (weight, objective, gradient_v), the
 * matrices the expansions of theirs, so that the coordinator adds every
 * shard's exact sums whatever their number, grouping or order.
 */
static Datum
shard_sums_row(FunctionCallInfo fcinfo, ShardFit *sf, FitSums *s, bool u, bool g, bool gram)
{
	int			d = sf->d,
				r1 = sf->opts.n_global;
	Datum		values[6];
	bool		nulls[6] = {0};

	values[0] = shard_expansion(s, FIT_SUM_SCALARS, 1, 3);
	nulls[1] = !u || r1 == 0;
	values[1] = nulls[1] ? (Datum) 0 : shard_expansion(s, FIT_SUM_U, d, r1);
	nulls[2] = !g || r1 == 0;
	values[2] = nulls[2] ? (Datum) 0 : shard_expansion(s, FIT_SUM_G, d, r1);
	values[3] = Float8GetDatum(s->change);
	nulls[4] = !gram || r1 == 0;
	values[4] = nulls[4] ? (Datum) 0 : shard_expansion(s, FIT_SUM_GRAM, r1, r1);
	values[5] = Int32GetDatum(s->exact);
	return shard_row(fcinfo, values, nulls);
}

/* ------------------------------------------------------------------------
 * Open and init
 * ------------------------------------------------------------------------
 */

typedef struct OpenArgs
{
	const char *query;
	int64		skipped;		/* rows left out for missing values */
} OpenArgs;

static void
shard_read(ShardFit *sf, void *arg)
{
	OpenArgs   *a = arg;
	RowSource	src;

	row_source_open(&src, a->query, "query", (PerpcaMissing) sf->opts.missing);
	sf->in = clients_read(&src, &(ClientsRead) {sf->opts.n_local, false, "perpca_fit_federated", false, false},
						  sf->cxt, &sf->n, &a->skipped);
	clients_check(sf->in, sf->n, sf->opts.n_global, false);
	/* a federated fit reports no sketch's bound: its shards take exact statistics only */
	clients_refuse_sketches(sf->in, sf->n, "perpca_fit_federated",
							"Fit sketched statistics with perpca_fit, on one server (a query may read the shards' sketches through postgres_fdw).");
	sf->d = sf->n > 0 ? sf->in[0].stats->dim : 0;
}

/* The keys of the shard's clients as text[]. */
static Datum
shard_keys(const ShardFit *sf)
{
	Datum	   *keys = palloc(sizeof(Datum) * Max(sf->n, 1));

	for (int i = 0; i < sf->n; i++)
		keys[i] = CStringGetTextDatum(sf->in[i].name);
	return PointerGetDatum(construct_array(keys, sf->n, TEXTOID, -1, false, TYPALIGN_INT));
}

/*
 * A new fit named id in this session, with the options of shard_open's
 * call (n_global, n_local, weights, seed); an id already open is an error.
 */
static ShardFit *
shard_fit_open(const char *id, FunctionCallInfo fcinfo)
{
	ShardFit   *sf;

	if (shard_fit_find(id) != NULL)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_FIT_OPEN),
				 errmsg("federated fit \"%s\" is already open in this session", id)));
	sf = shard_fit_new(id);
	PG_TRY();
	{
		fit_options_parse_call(fcinfo, &sf->opts);
	}
	PG_CATCH();
	{
		shard_fit_free_on_error(sf);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return sf;
}

/*
 * shard_open(fit_id, query, n_global, n_local, weights, seed, missing)
 *   RETURNS (n_clients, dim, n_rows, mean_sum, stats_bytes, keys, rows_skipped)
 */
Datum
perpca_shard_open(PG_FUNCTION_ARGS)
{
	char	   *id = fit_text_arg(fcinfo, 0, "fit_id");
	OpenArgs	a = {fit_text_arg(fcinfo, 1, "query"), 0};
	ShardFit   *sf;
	double	   *mean_sum;
	ExactSum   *acc;
	int			layers;
	double		rows;
	int64		bytes = 0;
	Datum		values[7];
	bool		nulls[7] = {0};

	sf = shard_fit_open(id, fcinfo);
	shard_in_fit(sf, shard_read, &a);
	acc = clients_mean_sum_exact(sf->in, sf->n, &rows);
	mean_sum = palloc0(sizeof(double) * Max(sf->d, 1) * EXACT_MAX_LAYERS);
	layers = sf->d > 0 ? exact_sum_expansion(acc, 0, sf->d, mean_sum, EXACT_MAX_LAYERS) : 1;
	for (int i = 0; i < sf->n; i++)
		bytes += VARSIZE(sf->in[i].stats);
	values[0] = Int32GetDatum(sf->n);
	values[1] = Int32GetDatum(sf->d);
	values[2] = Int64GetDatum((int64) rows);
	/* the exact sum's expansion, layers x d */
	values[3] = PointerGetDatum(perpca_matrix_build(mean_sum, layers, Max(sf->d, 1)));
	values[4] = Int64GetDatum(bytes);
	values[5] = shard_keys(sf);
	values[6] = Int64GetDatum(a.skipped);
	PG_RETURN_DATUM(shard_row(fcinfo, values, nulls));
}

static void
shard_build(ShardFit *sf, void *arg)
{
	sf->node = clients_node(sf->in, sf->n, sf->opts.n_global, (const double *) arg, &sf->opts);
	sf->be = node_backend(sf->node);
}

/*
 * shard_scale(fit_id, mean) RETURNS float8[]: 1 x d, for scale 'standard',
 * sum_i [M2_i,jj + n_i (mean_i,j - mean_j)^2] of this shard's clients about
 * the pooled mean of all shards (scale.h).
 */
Datum
perpca_shard_scale(PG_FUNCTION_ARGS)
{
	ShardFit   *sf = shard_fit_get(fcinfo, SHARD_SETUP);
	int			d = sf->d;
	double	   *mean;
	double	   *sums = palloc0(sizeof(double) * Max(d, 1));
	PerpcaStats **stats = clients_stats(sf->in, sf->n);

	mean = shard_matrix_arg(fcinfo, 1, 1, &d, "mean");
	scale_pooled_sums(stats, sf->n, sf->d, mean, sums);
	PG_RETURN_ARRAYTYPE_P(perpca_matrix_build(sums, 1, sf->d));
}

/*
 * shard_init(fit_id, center, scale_factors) RETURNS (weight, lambda_max):
 * the clients' statistics divided by scale_factors (1 x d; NULL: unscaled),
 * then their S_i about center.
 */
Datum
perpca_shard_init(PG_FUNCTION_ARGS)
{
	ShardFit   *sf = shard_fit_get(fcinfo, SHARD_SETUP);
	double	   *center = NULL;
	Datum		values[2];
	bool		nulls[2] = {0};

	if (!PG_ARGISNULL(1))
	{
		int			one = sf->d;

		center = shard_matrix_arg(fcinfo, 1, 1, &one, "center");
	}
	if (PG_NARGS() > 2 && !PG_ARGISNULL(2))
	{
		int			one = sf->d;
		double	   *scale = shard_matrix_arg(fcinfo, 2, 1, &one, "scale_factors");

		for (int j = 0; j < sf->d; j++)
			if (!(scale[j] > 0.0 && isfinite(scale[j])))
				ereport(ERROR,
						(errcode(PERPCA_ERRCODE_ARGUMENT),
						 errmsg("scale_factors must hold positive divisors")));
		clients_scale_by(sf->in, sf->n, scale);
	}
	shard_in_fit(sf, shard_build, center);
	values[0] = Float8GetDatum(sf->be->weight);
	values[1] = Float8GetDatum(sf->be->lambda_max);
	PG_RETURN_DATUM(shard_row(fcinfo, values, nulls));
}

/* ------------------------------------------------------------------------
 * The node's operations
 * ------------------------------------------------------------------------
 */

/*
 * shard_basis(fit_id, qu, exact) RETURNS (basis, keys, columns): the
 * stacked local PCs (d x q, not compressed), each client's block of
 * columns in the byte order of the keys, with the keys and the blocks'
 * widths in that order: the coordinator stacks all shards' blocks in one
 * key order, as a single node does.
 */
Datum
perpca_shard_basis(PG_FUNCTION_ARGS)
{
	ShardFit   *sf = shard_fit_get(fcinfo, SHARD_READY);
	int			q;
	MemoryContext old = MemoryContextSwitchTo(sf->cxt);
	double	   *B = sf->be->basis(sf->be, PG_GETARG_BOOL(1), PG_GETARG_BOOL(2), &q);
	Datum	   *keys = palloc(sizeof(Datum) * Max(sf->n, 1));
	Datum	   *columns = palloc(sizeof(Datum) * Max(sf->n, 1));
	Datum		values[3];
	bool		nulls[3] = {0};

	MemoryContextSwitchTo(old);
	for (int j = 0; j < sf->n; j++)
	{
		int			i = sf->node->order != NULL ? sf->node->order[j] : j;

		keys[j] = CStringGetTextDatum(sf->in[i].name);
		columns[j] = Int32GetDatum(sf->node->clients[i].k);
	}
	values[0] = PointerGetDatum(perpca_matrix_build(B, sf->d, q));
	values[1] = PointerGetDatum(construct_array(keys, sf->n, TEXTOID, -1, false, TYPALIGN_INT));
	values[2] = PointerGetDatum(construct_array(columns, sf->n, INT4OID, 4, true, TYPALIGN_INT));
	PG_RETURN_DATUM(shard_row(fcinfo, values, nulls));
}

/* shard_apply(fit_id, x) RETURNS float8[]: sum_i w_i S_i X as its exact expansion ((layers x d) x q). */
Datum
perpca_shard_apply(PG_FUNCTION_ARGS)
{
	ShardFit   *sf = shard_fit_get(fcinfo, SHARD_READY);
	int			q = -1;
	double	   *X = shard_matrix_arg(fcinfo, 1, sf->d, &q, "X");
	ExactSum   *acc = node_apply_exact(sf->node, X, q);
	double	   *terms = palloc(sizeof(double) * acc->n * EXACT_MAX_LAYERS);
	int			layers = exact_sum_expansion(acc, 0, acc->n, terms, EXACT_MAX_LAYERS);

	PG_RETURN_ARRAYTYPE_P(perpca_matrix_build(terms, layers * sf->d, q));
}

/* shard_start_local(fit_id, u, init) RETURNS boolean: V_i start of the paper solver. */
Datum
perpca_shard_start_local(PG_FUNCTION_ARGS)
{
	ShardFit   *sf = shard_fit_get(fcinfo, SHARD_READY);
	double	   *U = shard_u_arg(fcinfo, sf, 1);
	FitInit		how = fit_choice(fit_text_arg(fcinfo, 2, "init"), "init", fit_init_names, 6);
	MemoryContext old = MemoryContextSwitchTo(sf->cxt);

	sf->be->start_local(sf->be, U, how);
	MemoryContextSwitchTo(old);
	PG_RETURN_BOOL(true);
}

/* shard_round(fit_id, u, step, update, retraction, want_kkt) RETURNS sums: the paper's client steps. */
Datum
perpca_shard_round(PG_FUNCTION_ARGS)
{
	ShardFit   *sf = shard_fit_get(fcinfo, SHARD_READY);
	double	   *U = shard_u_arg(fcinfo, sf, 1);
	double		step = PG_GETARG_FLOAT8(2);
	FitUpdate	update = fit_choice(fit_text_arg(fcinfo, 3, "update"), "update", fit_update_names, 2);
	FitRetraction retraction = fit_choice(fit_text_arg(fcinfo, 4, "retraction"), "retraction",
										  fit_retraction_names, 2);
	bool		want_kkt = PG_GETARG_BOOL(5);
	FitSums    *s = fit_sums_create(sf->d, sf->opts.n_global);

	if (!isfinite(step) || step <= 0.0)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("step must be a finite number > 0")));
	sf->be->round(sf->be, U, step, update, retraction, want_kkt, s);
	return shard_sums_row(fcinfo, sf, s, true, want_kkt, false);
}

/*
 * shard_evaluate(fit_id, u, tol) RETURNS sums: best responses and gradient
 * terms; shard_finish(fit_id, u, best_response) RETURNS sums: feasible,
 * ordered local components.
 */
static Datum
shard_sums_call(FunctionCallInfo fcinfo, bool finish)
{
	ShardFit   *sf = shard_fit_get(fcinfo, SHARD_READY);
	double	   *U = shard_u_arg(fcinfo, sf, 1);
	FitSums    *s = fit_sums_create(sf->d, sf->opts.n_global);

	if (finish)
		sf->be->finish(sf->be, U, PG_GETARG_BOOL(2), s);
	else
		sf->be->evaluate(sf->be, U, PG_GETARG_FLOAT8(2), s);
	sf->finished = finish;
	return shard_sums_row(fcinfo, sf, s, !finish, finish, finish);
}

Datum
perpca_shard_evaluate(PG_FUNCTION_ARGS)
{
	return shard_sums_call(fcinfo, false);
}

Datum
perpca_shard_finish(PG_FUNCTION_ARGS)
{
	return shard_sums_call(fcinfo, true);
}

/* shard_result(fit_id) RETURNS TABLE (client, kind, component, pc, variance, weight). */
Datum
perpca_shard_result(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ShardFit   *sf = shard_fit_get(fcinfo, SHARD_OPEN);

	if (!sf->finished)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NOT_READY),
				 errmsg("federated fit \"%s\" is not finished", sf->id),
				 errhint("Call shard_finish first.")));
	InitMaterializedSRF(fcinfo, 0);
	clients_put_local(rsinfo, sf->node, sf->in);
	return (Datum) 0;
}

/* shard_close(fit_id) RETURNS boolean: free the fit's state; false if it was not open. */
Datum
perpca_shard_close(PG_FUNCTION_ARGS)
{
	ShardFit   *sf = shard_fit_find(fit_text_arg(fcinfo, 0, "fit_id"));

	if (sf == NULL)
		PG_RETURN_BOOL(false);
	shard_fit_free(sf);
	PG_RETURN_BOOL(true);
}
