/*
 * evaluate.c -- held-out evaluation of a stored model from statistics
 *
 * perpca_evaluate() (sql/.../70_evaluate.sql) reads the model's tables and
 * the user's query in SQL; the per-client arithmetic is here.  For a client
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
 * perpca_internal.query_columns(query) tells the SQL side whether the
 * query returns rows (float8[]) or statistics (perpca_stats), without
 * running it.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "nodes/pg_list.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/plancache.h"

#include "evaluate.h"
#include "linalg.h"
#include "perpca.h"
#include "stats.h"

PG_FUNCTION_INFO_V1(perpca_evaluate_stats);
PG_FUNCTION_INFO_V1(perpca_query_columns);

/* Argument positions of perpca_internal.evaluate_stats. */
#define ARG_CLIENT 0
#define ARG_STATS 1
#define ARG_CENTRE 2
#define ARG_U 3
#define ARG_V 4

/* A k x d components argument (NULL or empty: k = 0), checked against d. */
static double *
components_arg(FunctionCallInfo fcinfo, int arg, int d, int *k, const char *what,
			   const char *client)
{
	ArrayType  *a;
	int			cols;
	double	   *x;

	*k = 0;
	if (PG_ARGISNULL(arg))
		return NULL;
	a = PG_GETARG_ARRAYTYPE_P(arg);
	if (ARR_NDIM(a) == 0)
		return NULL;
	x = perpca_matrix_arg(a, k, &cols, what);
	if (cols != d)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("client \"%s\" has dimension %d, the model's %s have %d", client, d, what, cols)));
	return x;
}

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
	double	   *centre;
	double	   *U;
	double	   *V;
	double	   *M;
	int			d;
	int			n;
	int			r1;
	int			r2;
	EvalFigures f;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "evaluate_stats must return a record");
	desc = BlessTupleDesc(desc);
	if (PG_ARGISNULL(ARG_CLIENT))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the client of an evaluated row must not be NULL")));
	client = text_to_cstring(PG_GETARG_TEXT_PP(ARG_CLIENT));
	if (PG_ARGISNULL(ARG_STATS) || PG_ARGISNULL(ARG_CENTRE))
		PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
	s = PG_GETARG_PERPCA_STATS(ARG_STATS);
	perpca_stats_validate(s);
	d = s->dim;
	if (s->n == 0)
		PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
	centre = perpca_vector_arg(PG_GETARG_ARRAYTYPE_P(ARG_CENTRE), &n, "centre");
	if (n != d)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("client \"%s\" has dimension %d, the model has %d", client, d, n),
				 errhint("Evaluate a model on rows of the dimension it was trained on.")));
	U = components_arg(fcinfo, ARG_U, d, &r1, "global components", client);
	V = components_arg(fcinfo, ARG_V, d, &r2, "local components", client);

	M = palloc(sizeof(double) * d * d);
	perpca_stats_moment(s, centre, M);
	f = evaluate_figures(M, d, stack_rows(U, r1, V, r2, d), r1, r2);

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
	char	   *query = text_to_cstring(PG_GETARG_TEXT_PP(0));
	SPIPlanPtr	plan;
	List	   *sources;
	CachedPlanSource *src;
	TupleDesc	desc;
	Datum	   *types;
	ArrayType  *result;
	MemoryContext caller = CurrentMemoryContext;
	int			natts;

	SPI_connect();
	plan = SPI_prepare(query, 0, NULL);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	sources = SPI_plan_get_plan_sources(plan);
	if (list_length(sources) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the query must be a single statement")));
	src = (CachedPlanSource *) linitial(sources);
	desc = src->resultDesc;
	if (desc == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the query must return rows"),
				 errhint("Pass a SELECT returning (client, x float8[]) or (client, perpca_stats).")));
	types = MemoryContextAlloc(caller, sizeof(Datum) * Max(desc->natts, 1));
	for (int i = 0; i < desc->natts; i++)
		types[i] = ObjectIdGetDatum(TupleDescAttr(desc, i)->atttypid);
	natts = desc->natts;
	SPI_finish();
	result = construct_array(types, natts, REGTYPEOID, sizeof(Oid), true, TYPALIGN_INT);
	PG_RETURN_ARRAYTYPE_P(result);
}
