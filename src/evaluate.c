/*
 * evaluate.c -- held-out evaluation of a stored model from statistics
 *
 * perpca_evaluate() and perpca_evaluate_summary() read the model through the
 * checked C reader (model_read.c: plain tables of one owner, read from the
 * heap, so nothing of the owner's runs) and the user's query, as the caller,
 * wrapped in an aggregate per client whose every name is qualified (the
 * wrapper binds nothing from the caller's search_path).  For a client
 * with statistics s (n rows), the model's centre c for it, and the stacked
 * components W = [U; V_i] (k x d, rows), let M = S + (mean - c)(mean - c)^T
 * be the second moment of its rows about c.  The mean squared
 * reconstruction error over its rows is
 *
 *   (1/n) sum_j ||(I - Q)(x_j - c)||^2 = tr((I - Q) M (I - Q)),  Q = W^T W
 *                                      = tr M - 2 tr(C) + tr(G C),
 *
 * with C = W M W^T and G = W W^T (k x k).  This is exact also when the rows
 * of W are not quite orthonormal, so it matches the row-wise functions
 * (perpca_model_error) to rounding; the explained parts are tr(U M U^T) and
 * tr(V_i M V_i^T).
 *
 * perpca_internal.evaluate_stats, query_columns and stats_query have no SQL
 * function since 0.5.0; the SQL of 0.2.0 and older (sql/released) calls them
 * until ALTER EXTENSION UPDATE.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"
#include "fmgr.h"
#include "funcapi.h"
#include "nodes/pg_list.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/plancache.h"

#include "client_key.h"
#include "error_kinds.h"
#include "evaluate.h"
#include "fit_input.h"
#include "linalg.h"
#include "model_read.h"
#include "perpca.h"
#include "row_reader.h"
#include "scale.h"
#include "stats.h"

/* Named by the SQL of 0.2.0 (sql/released), which runs until ALTER EXTENSION UPDATE. */
PG_FUNCTION_INFO_V1(perpca_evaluate_stats);
PG_FUNCTION_INFO_V1(perpca_query_columns);
PG_FUNCTION_INFO_V1(perpca_stats_query);
PG_FUNCTION_INFO_V1(perpca_evaluate);
PG_FUNCTION_INFO_V1(perpca_evaluate_summary);

/* What to do instead of evaluating sketched statistics (they approximate the second moments). */
#define EVAL_SKETCH_HINT "Pass the held-out rows (their exact statistics are computed) or exact perpca_stats values."

/* Argument positions of perpca_internal.evaluate_stats. */
#define ARG_CLIENT 0
#define ARG_STATS 1
#define ARG_CENTRE 2
#define ARG_U 3
#define ARG_V 4

/* Stack U (r1 x d) and V (r2 x d) into W ((r1 + r2) x d). */
static double *
stack_rows(const double *U, int r1, const double *V, int r2, int d)
{
	double	   *W = palloc(sizeof(double) * d * Max(r1 + r2, 1));

	if (r1 > 0)
		memcpy(W, U, sizeof(double) * r1 * d);
	if (r2 > 0)
		memcpy(W + (size_t) r1 * d, V, sizeof(double) * r2 * d);
	return W;
}

EvalFigures
evaluate_figures(const double *M, int d, const double *W, int r1, int r2)
{
	int			k = r1 + r2;
	EvalFigures f = {0, 0, 0, 0};
	double		trC = 0;
	double		trGC = 0;

	for (int j = 0; j < d; j++)
		f.total += M[(size_t) j * d + j];
	if (k > 0)
	{
		double	   *B = palloc(sizeof(double) * k * d);
		double	   *C = palloc(sizeof(double) * k * k);
		double	   *G = palloc(sizeof(double) * k * k);

		linalg_gemm(false, false, k, d, d, 1.0, W, d, M, d, 0.0, B, d);	/* W M */
		linalg_gemm(false, true, k, k, d, 1.0, B, d, W, d, 0.0, C, k);	/* W M W^T */
		linalg_gemm(false, true, k, k, d, 1.0, W, d, W, d, 0.0, G, k);	/* W W^T */
		for (int a = 0; a < k; a++)
		{
			double		c = C[a * k + a];

			trC += c;
			if (a < r1)
				f.global += c;
			else
				f.local += c;
			for (int b = 0; b < k; b++)
				trGC += G[a * k + b] * C[b * k + a];
		}
	}
	/* Rounding can leave a tiny negative residual for an exact fit. */
	f.error = Max(f.total - 2 * trC + trGC, 0.0);
	return f;
}

/* The figures of evaluate_stats' client from its statistics s (n > 0) and the centre and components arguments. */
static EvalFigures
evaluate_stats_figures(FunctionCallInfo fcinfo, const PerpcaStats *s, const char *client)
{
	int			d = s->dim,
				n,
				r1,
				r2;
	double	   *centre = perpca_vector_arg(PG_GETARG_ARRAYTYPE_P(ARG_CENTRE), &n, "centre");
	double	   *U,
			   *V,
			   *M;

	if (n != d)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_DIMENSION),
				 errmsg("client \"%s\" has dimension %d, the model has %d", client, d, n),
				 errhint("Evaluate a model on rows of the dimension it was trained on.")));
	U = perpca_components_arg(fcinfo, ARG_U, d, &r1, "global components");
	V = perpca_components_arg(fcinfo, ARG_V, d, &r2, "local components");
	M = palloc(sizeof(double) * d * d);
	perpca_stats_moment(s, centre, M);
	return evaluate_figures(M, d, stack_rows(U, r1, V, r2, d), r1, r2);
}

/*
 * perpca_internal.evaluate_stats(client text, s perpca_stats, centre float8[],
 *     u float8[], v float8[], OUT error, OUT total_variance, OUT global_variance,
 *     OUT local_variance)
 * NULL statistics (a client without non-NULL rows) give NULL figures.
 */
Datum
perpca_evaluate_stats(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[4];
	bool		nulls[4] = {true, true, true, true};
	const char *client;
	PerpcaStats *s;
	EvalFigures f;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "evaluate_stats must return a record");
	desc = BlessTupleDesc(desc);
	if (PG_ARGISNULL(ARG_CLIENT))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NULL),
				 errmsg("the client of an evaluated row must not be NULL")));
	client = text_to_cstring(PG_GETARG_TEXT_PP(ARG_CLIENT));
	if (PG_ARGISNULL(ARG_STATS) || PG_ARGISNULL(ARG_CENTRE))
		PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
	s = PG_GETARG_PERPCA_STATS(ARG_STATS);
	perpca_stats_validate(s);
	clients_refuse_sketch(s, client, "perpca_evaluate", EVAL_SKETCH_HINT);
	if (s->n == 0)
		PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
	f = evaluate_stats_figures(fcinfo, s, client);

	values[0] = Float8GetDatum(f.error);
	values[1] = Float8GetDatum(f.total);
	values[2] = Float8GetDatum(f.global);
	values[3] = Float8GetDatum(f.local);
	memset(nulls, 0, sizeof(nulls));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

/*
 * perpca_internal.query_columns(query text) RETURNS regtype[]: the types of
 * the columns the query returns, from its plan (the query is not run).
 */
Datum
perpca_query_columns(PG_FUNCTION_ARGS)
{
	RowSource	src;
	Datum	   *values;

	row_source_plan(&src, text_to_cstring(PG_GETARG_TEXT_PP(0)), "query", PERPCA_MISSING_ERROR);
	values = palloc(sizeof(Datum) * Max(src.natts, 1));
	for (int i = 0; i < src.natts; i++)
		values[i] = ObjectIdGetDatum(src.types[i]);
	PG_RETURN_ARRAYTYPE_P(construct_array(values, src.natts, REGTYPEOID, sizeof(Oid), true, TYPALIGN_INT));
}

/*
 * A query of rows (any form of row_reader.h, aggregated under mode) or of
 * statistics as one returning (client, stats perpca_stats), one row per
 * client, statistics merged; what names the query in errors.
 */
static char *
stats_query(const char *query, const char *what, PerpcaMissing mode)
{
	RowSource	src;

	row_source_open(&src, query, what, mode);
	return row_source_stats_sql(&src, true);
}

/* perpca_internal.stats_query(query text, what text DEFAULT 'query') RETURNS text */
Datum
perpca_stats_query(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(cstring_to_text(stats_query(text_to_cstring(PG_GETARG_TEXT_PP(0)),
												 text_to_cstring(PG_GETARG_TEXT_PP(1)),
												 PERPCA_MISSING_ERROR)));
}

/* ------------------------------------------------------------------------
 * perpca_evaluate and perpca_evaluate_summary
 * ------------------------------------------------------------------------
 */

/* One evaluated client: the figures are valid when n > 0. */
typedef struct EvalClient
{
	char	   *client;
	int			len;
	bool		known;
	int64		n;
	int64		skipped;		/* rows left out for missing values */
	EvalFigures f;
} EvalClient;

static int
eval_client_cmp(const void *a, const void *b)
{
	const EvalClient *x = a;
	const EvalClient *y = b;
	int			c = memcmp(x->client, y->client, Min(x->len, y->len));

	return c != 0 ? c : x->len - y->len;
}

/* The figures of one client's statistics s (n > 0) against model m. */
static void
eval_one(const ModelData *m, EvalClient *e, PerpcaStats *s)
{
	const ModelClient *c = model_find_client(m, e->client, e->len);
	const double *centre;
	double	   *y = palloc(sizeof(double) * m->d);
	double	   *M = palloc(sizeof(double) * m->d * m->d);
	int			r2 = c ? c->r2 : 0;

	if (s->dim != m->d)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_DIMENSION),
				 errmsg("client \"%s\" has dimension %d, the model has %d", e->client, s->dim, m->d),
				 errhint("Evaluate a model on rows of the dimension it was trained on.")));
	e->known = c != NULL;
	/* The model's centre for this client, in the features the model saw. */
	if (m->center == CENTER_CLIENT && c != NULL && c->mean != NULL)
		centre = c->mean;
	else if (m->center == CENTER_NONE)
		centre = NULL;
	else
		centre = m->global_mean;
	for (int j = 0; j < m->d; j++)
		y[j] = centre ? centre[j] / (m->scale ? m->scale[j] : 1.0) : 0.0;
	if (m->scale)
		scale_stats_inplace(s, m->scale);
	perpca_stats_moment(s, y, M);
	e->f = evaluate_figures(M, m->d, stack_rows(m->U, m->r1, r2 > 0 ? c->V : NULL, r2, m->d), m->r1, r2);
	pfree(y);
	pfree(M);
}

/* The client of one row of the wrapped query, its figures when it has rows (in caller). */
static void
eval_row(const ModelData *m, HeapTuple tup, TupleDesc desc, EvalClient *e, MemoryContext caller)
{
	bool		isnull;
	Datum		v = SPI_getbinval(tup, desc, 1, &isnull);
	MemoryContext old;

	if (isnull)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NULL),
				 errmsg("the client of an evaluated row must not be NULL")));
	memset(e, 0, sizeof(EvalClient));
	old = MemoryContextSwitchTo(caller);
	e->client = client_key_text_of(TupleDescAttr(desc, 0)->atttypid, v);
	e->len = strlen(e->client);
	e->known = model_find_client(m, e->client, e->len) != NULL;
	v = SPI_getbinval(tup, desc, 2, &isnull);
	if (!isnull)
	{
		PerpcaStats *s = perpca_stats_detoast_copy(v);

		perpca_stats_validate(s);
		clients_refuse_sketch(s, e->client, "perpca_evaluate", EVAL_SKETCH_HINT);
		e->n = s->n;
		e->skipped = perpca_stats_skipped(s);
		if (s->n > 0)
			eval_one(m, e, s);
		pfree(s);
	}
	MemoryContextSwitchTo(old);
}

/* The clients evaluated so far against m, in the caller's memory. */
typedef struct EvalSoFar
{
	const ModelData *m;
	EvalClient *out;
	int			n;
	int			cap;
	MemoryContext caller;
} EvalSoFar;

static void
eval_each(HeapTuple tup, TupleDesc desc, void *arg)
{
	EvalSoFar  *e = arg;

	if (e->n == e->cap)
	{
		e->cap *= 2;
		e->out = repalloc(e->out, sizeof(EvalClient) * e->cap);
	}
	eval_row(e->m, tup, desc, &e->out[e->n++], e->caller);
}

/* Run the wrapped query sql and evaluate each of its clients against m: *n of them. */
static EvalClient *
eval_query(const ModelData *m, const char *sql, int *nclients)
{
	EvalSoFar	e = {m, palloc(sizeof(EvalClient) * 16), 0, 16, CurrentMemoryContext};

	row_source_run(sql, eval_each, &e);
	*nclients = e.n;
	return e.out;
}

/* The one NOTICE: rows skipped, clients without rows, clients whose figures are NULL (no variance). */
static void
eval_report(const char *func, const EvalClient *e, int n)
{
	RowReport	r = {0};

	for (int i = 0; i < n; i++)
		row_report_group(&r, e[i].client, e[i].n, e[i].skipped, e[i].f.total == 0);
	row_report(func, &r);
}

/*
 * Evaluate model on query: the clients in byte order of their names, in
 * *nclients.  The model is read once by model_read.c (its tables locked in
 * the one order of model_lock.c); the query runs as the caller, wrapped
 * (row_reader.c: any form of rows, under mode, or statistics).
 */
static EvalClient *
evaluate_all(text *model, text *query, PerpcaMissing mode, const char *func, int *nclients)
{
	ModelData  *m;
	EvalClient *out = NULL;
	int			n = 0;
	MemoryContext caller = CurrentMemoryContext;
	char	   *hint = row_skip_hint(func);

	if (mode == PERPCA_MISSING_OBSERVED)
		row_missing_refuse(mode, func, "It evaluates each client from the statistics of its complete rows.",
						   "Pass missing => 'skip' to leave out rows with gaps and count them; "
						   "perpca_evaluate_imputation() measures how the model fills gaps.");
	m = model_open(model);
	m->refcount++;
	PG_TRY();
	{
		out = eval_query(m, stats_query(text_to_cstring(query), "query", mode), &n);
	}
	PG_CATCH();
	{
		model_unref(m);
		row_rethrow(hint, caller);
	}
	PG_END_TRY();
	model_unref(m);
	if (n > 1)
		qsort(out, n, sizeof(EvalClient), eval_client_cmp);
	eval_report(func, out, n);
	*nclients = n;
	return out;
}

/* A ratio part / total, NULL when the total is 0 (a client without variance). */
static Datum
ratio(double part, double total, bool *isnull)
{
	*isnull = !(total != 0.0);
	return Float8GetDatum(*isnull ? 0.0 : part / total);
}

/*
 * perpca_evaluate(model text, query text) RETURNS TABLE (client text, known
 * boolean, n bigint, error float8, total_variance float8, global_ratio float8,
 * local_ratio float8, explained_ratio float8)
 */
Datum
perpca_evaluate(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			n;
	EvalClient *e;

	InitMaterializedSRF(fcinfo, 0);
	e = evaluate_all(PG_GETARG_TEXT_PP(0), PG_GETARG_TEXT_PP(1),
					 row_missing_arg(fcinfo, 2, PERPCA_MISSING_ERROR), "perpca_evaluate", &n);
	for (int i = 0; i < n; i++)
	{
		Datum		values[9];
		bool		nulls[9] = {false};
		bool		has = e[i].n > 0;

		values[0] = CStringGetTextDatum(e[i].client);
		values[1] = BoolGetDatum(e[i].known);
		values[2] = Int64GetDatum(e[i].n);
		values[3] = Float8GetDatum(e[i].f.error);
		values[4] = Float8GetDatum(e[i].f.total);
		values[5] = ratio(e[i].f.global, e[i].f.total, &nulls[5]);
		values[6] = ratio(e[i].f.local, e[i].f.total, &nulls[6]);
		values[7] = ratio(e[i].f.global + e[i].f.local, e[i].f.total, &nulls[7]);
		for (int c = 3; c < 8; c++)
			nulls[c] = nulls[c] || !has;
		values[8] = Int64GetDatum(e[i].skipped);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* Sums over the clients with rows: per client (err, tot, g, l) and weighted by rows (_n). */
typedef struct EvalTotals
{
	int			clients;
	int			unseen;
	int64		rows;
	int64		skipped;		/* rows left out for missing values */
	double		err,
				err_n,
				tot,
				tot_n,
				g,
				g_n,
				l,
				l_n;
} EvalTotals;

static void
evaluate_totals(const EvalClient *e, int n, EvalTotals *t)
{
	memset(t, 0, sizeof(EvalTotals));
	for (int i = 0; i < n; i++)
	{
		double		w;

		t->skipped += e[i].skipped;
		if (e[i].n <= 0)
			continue;
		w = (double) e[i].n;
		t->clients++;
		t->unseen += !e[i].known;
		t->rows += e[i].n;
		t->err += e[i].f.error;
		t->err_n += w * e[i].f.error;
		t->tot += e[i].f.total;
		t->tot_n += w * e[i].f.total;
		t->g += e[i].f.global;
		t->g_n += w * e[i].f.global;
		t->l += e[i].f.local;
		t->l_n += w * e[i].f.local;
	}
}

/*
 * perpca_evaluate_summary(model text, query text, OUT clients int, OUT
 * unseen_clients int, OUT n bigint, OUT error, OUT error_samples, OUT
 * global_ratio, OUT global_ratio_samples, OUT local_ratio, OUT
 * local_ratio_samples, OUT explained_ratio, OUT explained_ratio_samples)
 * over the clients with rows: error the mean of the clients' errors, _samples
 * weighted by rows; ratios explained over total second moment summed over
 * clients (NULL when that sum is 0).
 */
Datum
perpca_evaluate_summary(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[12];
	bool		nulls[12] = {false};
	int			n;
	EvalClient *e;
	EvalTotals	t;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "perpca_evaluate_summary must return a record");
	e = evaluate_all(PG_GETARG_TEXT_PP(0), PG_GETARG_TEXT_PP(1),
					 row_missing_arg(fcinfo, 2, PERPCA_MISSING_ERROR), "perpca_evaluate_summary", &n);
	evaluate_totals(e, n, &t);
	values[0] = Int32GetDatum(t.clients);
	values[1] = Int32GetDatum(t.unseen);
	values[2] = Int64GetDatum(t.rows);
	nulls[2] = t.clients == 0;
	values[3] = Float8GetDatum(t.clients > 0 ? t.err / t.clients : 0);
	nulls[3] = t.clients == 0;
	values[4] = Float8GetDatum(t.rows > 0 ? t.err_n / (double) t.rows : 0);
	nulls[4] = t.rows == 0;
	values[5] = ratio(t.g, t.tot, &nulls[5]);
	values[6] = ratio(t.g_n, t.tot_n, &nulls[6]);
	values[7] = ratio(t.l, t.tot, &nulls[7]);
	values[8] = ratio(t.l_n, t.tot_n, &nulls[8]);
	values[9] = ratio(t.g + t.l, t.tot, &nulls[9]);
	values[10] = ratio(t.g_n + t.l_n, t.tot_n, &nulls[10]);
	values[11] = Int64GetDatum(t.skipped);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}
