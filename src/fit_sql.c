/*
 * fit_sql.c -- perpca_fit() and perpca_last_fit(): the SQL side of fit.c
 *
 * perpca_fit validates its options, runs the user's query with SPI to read
 * one (client, perpca_stats [, local rank]) row per client, turns each
 * perpca_stats into its second-moment matrix S_i, calls fit_run() and
 * returns the components as rows.  Everything is allocated in a private
 * memory context that is deleted before returning.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "tcop/tcopprot.h"
#include "portability/instr_time.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "fit.h"
#include "linalg.h"
#include "perpca.h"
#include "stats.h"

PG_FUNCTION_INFO_V1(perpca_fit);
PG_FUNCTION_INFO_V1(perpca_last_fit);

/* Arguments of perpca_fit, in SQL order. */
enum
{
	ARG_QUERY, ARG_N_GLOBAL, ARG_N_LOCAL, ARG_ROUNDS, ARG_TOLERANCE, ARG_STEP,
	ARG_UPDATE, ARG_RETRACTION, ARG_INIT, ARG_SEED, ARG_CENTER, ARG_WEIGHTS,
	ARG_METHOD, ARG_VERBOSE, ARG_ADAPTIVE, ARG_START
};

typedef enum FitCenter
{
	CENTER_CLIENT, CENTER_GLOBAL, CENTER_NONE
} FitCenter;

/* Everything perpca_fit needs besides fit.c's options. */
typedef struct FitRequest
{
	char	   *query;
	char	   *start;			/* query of the starting components (init 'given') */
	int			n_global;
	int			n_local;
	FitCenter	center;
	bool		sample_weights;
	FitOptions	opts;
} FitRequest;

/* One row of the user's query. */
typedef struct ClientInput
{
	char	   *name;
	PerpcaStats *stats;
	int			r2;
} ClientInput;

/* Diagnostics of the last perpca_fit in this backend. */
static FitDiagnostics last_fit;
static bool have_last_fit = false;

static const char *const method_names[] = {"perpca", "dispca", "cpca", "indiv"};
static const char *const update_names[] = {"stgd", "polar"};
static const char *const retraction_names[] = {"polar", "qr"};
static const char *const init_names[] = {"best", "dispca", "qu", "pooled", "random", "given"};
static const char *const center_names[] = {"client", "global", "none"};
static const char *const weights_names[] = {"equal", "samples"};

/* ------------------------------------------------------------------------
 * Options
 * ------------------------------------------------------------------------
 */

/* Raise the error for a NULL option. */
static void
null_option(const char *option)
{
	ereport(ERROR,
			(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
			 errmsg("option \"%s\" must not be NULL", option)));
}

/* Index of the text argument among names, or an error listing the valid values. */
static int
choice_arg(FunctionCallInfo fcinfo, int argno, const char *option,
		   const char *const *names, int nnames)
{
	char	   *value;
	StringInfoData valid;

	if (PG_ARGISNULL(argno))
		null_option(option);
	value = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	for (int i = 0; i < nnames; i++)
		if (strcmp(value, names[i]) == 0)
			return i;
	initStringInfo(&valid);
	for (int i = 0; i < nnames; i++)
		appendStringInfo(&valid, "%s\"%s\"", i == 0 ? "" : (i == nnames - 1 ? " or " : ", "),
						 names[i]);
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid value for option \"%s\": \"%s\"", option, value),
			 errhint("Valid values are %s.", valid.data)));
	return -1;					/* keep compiler quiet */
}

/* A non-NULL int4 argument that must be >= min. */
static int
int_arg(FunctionCallInfo fcinfo, int argno, const char *option, int min)
{
	int			value;

	if (PG_ARGISNULL(argno))
		null_option(option);
	value = PG_GETARG_INT32(argno);
	if (value < min)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"%s\" must be at least %d, got %d", option, min, value)));
	return value;
}

/* A non-NULL, finite, non-negative float8 argument. */
static double
nonnegative_arg(FunctionCallInfo fcinfo, int argno, const char *option)
{
	double		value;

	if (PG_ARGISNULL(argno))
		null_option(option);
	value = PG_GETARG_FLOAT8(argno);
	if (!isfinite(value) || value < 0.0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"%s\" must be a finite number >= 0", option)));
	return value;
}

/* Read and check every argument of perpca_fit. */
static void
parse_request(FunctionCallInfo fcinfo, FitRequest *req)
{
	FitOptions *o = &req->opts;

	memset(req, 0, sizeof(FitRequest));
	if (PG_ARGISNULL(ARG_QUERY))
		null_option("query");
	req->query = text_to_cstring(PG_GETARG_TEXT_PP(ARG_QUERY));
	req->n_global = int_arg(fcinfo, ARG_N_GLOBAL, "n_global", 0);
	req->n_local = int_arg(fcinfo, ARG_N_LOCAL, "n_local", 0);
	o->n_local = req->n_local;
	o->rounds = int_arg(fcinfo, ARG_ROUNDS, "rounds", 0);
	o->tolerance = nonnegative_arg(fcinfo, ARG_TOLERANCE, "tolerance");
	o->step = 0.0;
	if (!PG_ARGISNULL(ARG_STEP))
	{
		o->step = PG_GETARG_FLOAT8(ARG_STEP);
		if (!isfinite(o->step) || o->step <= 0.0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("option \"step\" must be a finite number > 0"),
					 errhint("Pass NULL to derive the step from the spectrum.")));
	}
	o->update = (FitUpdate) choice_arg(fcinfo, ARG_UPDATE, "update", update_names,
									   lengthof(update_names));
	o->retraction = (FitRetraction) choice_arg(fcinfo, ARG_RETRACTION, "retraction",
											   retraction_names, lengthof(retraction_names));
	o->init = (FitInit) choice_arg(fcinfo, ARG_INIT, "init", init_names, lengthof(init_names));
	if (PG_ARGISNULL(ARG_SEED))
		null_option("seed");
	o->seed = (uint64) PG_GETARG_INT64(ARG_SEED);
	req->center = (FitCenter) choice_arg(fcinfo, ARG_CENTER, "center", center_names,
										 lengthof(center_names));
	req->sample_weights = choice_arg(fcinfo, ARG_WEIGHTS, "weights", weights_names,
									 lengthof(weights_names)) == 1;
	o->method = (FitMethod) choice_arg(fcinfo, ARG_METHOD, "method", method_names,
									   lengthof(method_names));
	if (PG_ARGISNULL(ARG_VERBOSE))
		null_option("verbose");
	o->verbose = PG_GETARG_BOOL(ARG_VERBOSE);
	/* adaptive NULL: adapt only the derived step, keep a step the user gave */
	o->adaptive = PG_ARGISNULL(ARG_ADAPTIVE) ? PG_ARGISNULL(ARG_STEP) : PG_GETARG_BOOL(ARG_ADAPTIVE);
	req->start = PG_NARGS() <= ARG_START || PG_ARGISNULL(ARG_START) ? NULL :
		text_to_cstring(PG_GETARG_TEXT_PP(ARG_START));
	if ((o->init == FIT_INIT_GIVEN) != (req->start != NULL))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"start\" goes with init => 'given', and only with it"),
				 errhint("Pass init => 'given', start => 'SELECT client, kind, component, pc FROM ...'.")));
}

/* ------------------------------------------------------------------------
 * Reading the clients
 * ------------------------------------------------------------------------
 */

/* OID of the perpca_stats type in the schema of the calling function. */
static Oid
stats_type_oid(FunctionCallInfo fcinfo)
{
	Oid			nsp = get_func_namespace(fcinfo->flinfo->fn_oid);
	Oid			typid = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
										CStringGetDatum("perpca_stats"),
										ObjectIdGetDatum(nsp));

	if (!OidIsValid(typid))
		elog(ERROR, "type perpca_stats not found next to perpca_fit");
	return typid;
}

/* Check the shape of the query result: (client, perpca_stats [, integer]). */
static void
check_result_shape(TupleDesc desc, Oid stats_type)
{
	if (desc->natts < 2 || desc->natts > 3 ||
		TupleDescAttr(desc, 1)->atttypid != stats_type ||
		(desc->natts == 3 && TupleDescAttr(desc, 2)->atttypid != INT4OID &&
		 TupleDescAttr(desc, 2)->atttypid != INT2OID &&
		 TupleDescAttr(desc, 2)->atttypid != INT8OID))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("query must return columns (client, perpca_stats) or (client, perpca_stats, integer)"),
				 errdetail("The query returned %d column(s)%s.", desc->natts,
						   desc->natts >= 2 && TupleDescAttr(desc, 1)->atttypid != stats_type
						   ? " and its second column is not of type perpca_stats" : ""),
				 errhint("Use a query like SELECT group_id, perpca_stats(x) FROM t GROUP BY group_id.")));
}

/* The optional third column: this client's number of local components (NULL = n_local). */
static int
client_local_rank(HeapTuple tup, TupleDesc desc, const char *name, int n_local)
{
	bool		isnull;
	Datum		v;
	int64		r2;

	if (desc->natts < 3)
		return n_local;
	v = SPI_getbinval(tup, desc, 3, &isnull);
	if (isnull)
		return n_local;
	switch (TupleDescAttr(desc, 2)->atttypid)
	{
		case INT2OID:
			r2 = DatumGetInt16(v);
			break;
		case INT4OID:
			r2 = DatumGetInt32(v);
			break;
		default:
			r2 = DatumGetInt64(v);
			break;
	}
	if (r2 < 0 || r2 > PERPCA_MAX_DIM)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("client \"%s\" asks for %lld local components", name, (long long) r2),
				 errhint("The third column must be between 0 and the dimension minus n_global.")));
	return (int) r2;
}

/* Copy one result row into cxt: client name, stats value, local rank. */
static void
read_client(HeapTuple tup, TupleDesc desc, int n_local, MemoryContext cxt, ClientInput *out)
{
	bool		isnull;
	Datum		v;
	Oid			outfunc;
	bool		isvarlena;
	MemoryContext old;

	v = SPI_getbinval(tup, desc, 1, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("client column of the query must not be NULL")));
	getTypeOutputInfo(TupleDescAttr(desc, 0)->atttypid, &outfunc, &isvarlena);
	old = MemoryContextSwitchTo(cxt);
	out->name = OidOutputFunctionCall(outfunc, v);
	MemoryContextSwitchTo(old);
	v = SPI_getbinval(tup, desc, 2, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("perpca_stats of client \"%s\" is NULL", out->name)));
	old = MemoryContextSwitchTo(cxt);
	out->stats = (PerpcaStats *) PG_DETOAST_DATUM_COPY(v);
	MemoryContextSwitchTo(old);
	perpca_stats_validate(out->stats);
	out->r2 = client_local_rank(tup, desc, out->name, n_local);
}

/* Rows fetched from the query at a time: only these are held twice. */
#define FETCH_ROWS 256

/*
 * Run the query through a cursor and copy its rows into cxt, a batch at a
 * time, so that the clients' statistics are in memory only once.
 */
static ClientInput *
read_clients(FunctionCallInfo fcinfo, const FitRequest *req, MemoryContext cxt, int *nclients)
{
	Oid			stats_type = stats_type_oid(fcinfo);
	ClientInput *clients = NULL;
	int			n = 0,
				cap = 0;
	SPIPlanPtr	plan;
	Portal		portal;

	SPI_connect();
	plan = SPI_prepare(req->query, 0, NULL);
	if (plan == NULL || !SPI_is_cursor_plan(plan))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("query must return rows (client, perpca_stats)"),
				 errdetail("The query must be a single SELECT, VALUES or TABLE statement.")));
	portal = SPI_cursor_open(NULL, plan, NULL, NULL, true);
	for (;;)
	{
		SPI_cursor_fetch(portal, true, FETCH_ROWS);
		check_result_shape(SPI_tuptable->tupdesc, stats_type);
		if (SPI_processed == 0)
			break;
		if (n + (int) SPI_processed > cap)
		{
			cap = Max(cap * 2, n + (int) SPI_processed);
			clients = clients ? repalloc(clients, sizeof(ClientInput) * cap)
				: MemoryContextAlloc(cxt, sizeof(ClientInput) * cap);
		}
		for (uint64 i = 0; i < SPI_processed; i++, n++)
		{
			CHECK_FOR_INTERRUPTS();
			read_client(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, req->n_local, cxt,
						&clients[n]);
		}
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	SPI_finish();
	*nclients = n;
	return clients ? clients : MemoryContextAllocZero(cxt, sizeof(ClientInput));
}

/* Every client must have rows, one common dimension, and room for its components. */
static void
check_clients(const FitRequest *req, const ClientInput *in, int n)
{
	int			d;

	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("query returned no clients"),
				 errhint("perpca_fit needs at least one (client, perpca_stats) row.")));
	d = in[0].stats->dim;
	for (int i = 0; i < n; i++)
	{
		if (in[i].stats->dim != d)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("client \"%s\" has dimension %d, expected %d",
							in[i].name, in[i].stats->dim, d),
					 errdetail("All clients must have the same dimension (that of client \"%s\").",
							   in[0].name)));
		if (in[i].stats->n <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("client \"%s\" has no rows", in[i].name)));
		if (req->n_global + in[i].r2 > d)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("n_global + local components (%d + %d) exceed the dimension %d for client \"%s\"",
							req->n_global, in[i].r2, d, in[i].name)));
	}
}

/*
 * S_i about centre (NULL: the client's own mean): a thin value keeps its rows
 * (S_i = Y'Y/n + delta delta', never formed), a dense one becomes a d x d matrix.
 */
static void
client_matrix(FitClient *c, const PerpcaStats *stats, const double *centre)
{
	int			d = stats->dim;
	double	   *S;

	if (perpca_stats_thin_rows(stats) != NULL)
	{
		c->Y = perpca_stats_thin_rows(stats);
		c->nrows = (int) stats->n;
		c->yscale = 1.0 / (double) stats->n;
		if (centre != NULL)
		{
			double	   *delta = palloc(sizeof(double) * d);

			perpca_stats_offset(stats, centre, delta);
			c->delta = delta;
		}
		return;
	}
	S = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * d * d);
	perpca_stats_moment(stats, centre, S);
	c->S = S;
}

/* S_i about the centre the request asks for, and the client weights. */
static FitClient *
build_clients(const FitRequest *req, const ClientInput *in, int n)
{
	int			d = in[0].stats->dim;
	FitClient  *clients = palloc0(sizeof(FitClient) * n);
	double	   *pooled = palloc0(sizeof(double) * d);
	double		total = 0.0;

	for (int i = 0; i < n; i++)
	{
		total += (double) in[i].stats->n;
		linalg_axpy(d, (double) in[i].stats->n, PERPCA_STATS_MEAN(in[i].stats), pooled);
		linalg_axpy(d, (double) in[i].stats->n, PERPCA_STATS_MEAN_LO(in[i].stats), pooled);
	}
	for (int j = 0; j < d; j++)
		pooled[j] = req->center == CENTER_GLOBAL ? pooled[j] / total : 0.0;
	for (int i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		client_matrix(&clients[i], in[i].stats, req->center == CENTER_CLIENT ? NULL : pooled);
		clients[i].r2 = in[i].r2;
		clients[i].weight = req->sample_weights ? (double) in[i].stats->n / total : 1.0 / n;
	}
	return clients;
}

/* ------------------------------------------------------------------------
 * Warm start: init => 'given', start => query of (client, kind, component, pc)
 * ------------------------------------------------------------------------
 */

/* A client name and its position in the query, for bsearch. */
typedef struct NamedClient
{
	const char *name;
	int			index;
} NamedClient;

static int
named_client_cmp(const void *a, const void *b)
{
	return strcmp(((const NamedClient *) a)->name, ((const NamedClient *) b)->name);
}

/* Check the start query's columns: (client, text kind, integer component, float8[] pc). */
static void
check_start_shape(TupleDesc desc)
{
	if (desc->natts != 4 || TupleDescAttr(desc, 1)->atttypid != TEXTOID ||
		TupleDescAttr(desc, 2)->atttypid != INT4OID ||
		TupleDescAttr(desc, 3)->atttypid != FLOAT8ARRAYOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("start query must return columns (client, kind text, component integer, pc float8[])"),
				 errhint("A stored model's components table has this shape: SELECT client, kind, component, pc FROM model_components.")));
}

/* Column col of row tup as a validated vector of length d (NULL when the pc is NULL). */
static double *
start_vector(HeapTuple tup, TupleDesc desc, int d)
{
	bool		isnull;
	Datum		v = SPI_getbinval(tup, desc, 4, &isnull);
	int			len;
	double	   *x;

	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("start query returned a NULL pc")));
	x = perpca_vector_arg(DatumGetArrayTypeP(v), &len, "pc of the start");
	if (len != d)
		perpca_dim_mismatch(d, len, "pc of the start");
	return x;
}

/* Put one start row into U0 (global) or the matching client's V0 (local); count what was set. */
static void
start_row(HeapTuple tup, TupleDesc desc, int d, int r1, double *U0, int *uset,
		  NamedClient *names, int n, FitClient *clients, int *vset)
{
	bool		isnull;
	char	   *kind;
	int			comp;
	double	   *x;
	NamedClient key,
			   *hit;
	FitClient  *c;

	kind = TextDatumGetCString(SPI_getbinval(tup, desc, 2, &isnull));
	comp = isnull ? 0 : DatumGetInt32(SPI_getbinval(tup, desc, 3, &isnull));
	if (isnull || comp < 1)
		return;					/* not a component row we can use */
	x = start_vector(tup, desc, d);
	if (strcmp(kind, "global") == 0)
	{
		if (comp <= r1)
		{
			linalg_copy(d, 1, x, 1, U0 + comp - 1, r1);
			(*uset)++;
		}
		return;
	}
	key.name = SPI_getvalue(tup, desc, 1);
	hit = key.name ? bsearch(&key, names, n, sizeof(NamedClient), named_client_cmp) : NULL;
	if (strcmp(kind, "local") != 0 || hit == NULL)
		return;					/* a client that is no longer in the query */
	c = &clients[hit->index];
	if (comp > c->r2)
		return;
	linalg_copy(d, 1, x, 1, (double *) c->V0 + comp - 1, Max(c->r2, 1));
	vset[hit->index]++;
}

/*
 * Run the start query: U0 from its 'global' rows (all n_global components
 * must be there), each client's V0 from its 'local' rows; a client with
 * fewer local rows than it needs (a new client) gets the default start.
 */
static void
read_start(FitRequest *req, const ClientInput *in, int n, FitClient *clients)
{
	int			d = in[0].stats->dim,
				r1 = req->n_global;
	double	   *U0 = palloc0(sizeof(double) * d * Max(r1, 1));
	NamedClient *names = palloc(sizeof(NamedClient) * n);
	int		   *vset = palloc0(sizeof(int) * n);
	int			uset = 0;

	for (int i = 0; i < n; i++)
	{
		names[i].name = in[i].name;
		names[i].index = i;
		clients[i].V0 = palloc0(sizeof(double) * d * Max(clients[i].r2, 1));
	}
	qsort(names, n, sizeof(NamedClient), named_client_cmp);
	SPI_connect();
	if (SPI_execute(req->start, true, 0) != SPI_OK_SELECT)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("start query must be a SELECT")));
	check_start_shape(SPI_tuptable->tupdesc);
	for (uint64 row = 0; row < SPI_processed; row++)
		start_row(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, d, r1, U0, &uset,
				  names, n, clients, vset);
	SPI_finish();
	if (uset < r1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("start query has %d of the %d global components needed", uset, r1)));
	for (int i = 0; i < n; i++)
		if (vset[i] < clients[i].r2)
			clients[i].V0 = NULL;
	req->opts.U0 = U0;
}

/* ------------------------------------------------------------------------
 * Result rows
 * ------------------------------------------------------------------------
 */

/* Append one (client, kind, component, pc, variance) row; column j of A (d rows, stride lda). */
static void
put_component(ReturnSetInfo *rsinfo, const char *client, const char *kind, int component,
			  const double *A, int d, int lda, int j, double variance, double *buf)
{
	Datum		values[5];
	bool		nulls[5] = {client == NULL, false, false, false, false};

	linalg_copy(d, 1, A + j, lda, buf, 1);
	values[0] = client ? CStringGetTextDatum(client) : (Datum) 0;
	values[1] = CStringGetTextDatum(kind);
	values[2] = Int32GetDatum(component);
	values[3] = PointerGetDatum(perpca_vector_build(buf, d));
	values[4] = Float8GetDatum(variance);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* Global rows first, then each client's local rows in query order. */
static void
put_results(ReturnSetInfo *rsinfo, const FitProblem *p, const ClientInput *in)
{
	double	   *buf = palloc(sizeof(double) * p->d);

	for (int j = 0; j < p->rU; j++)
		put_component(rsinfo, NULL, "global", j + 1, p->U, p->d, p->rU, j,
					  p->uvariance[j], buf);
	for (int i = 0; i < p->nclients; i++)
	{
		const FitClient *c = &p->clients[i];

		for (int j = c->lfirst; j < c->k; j++)
			put_component(rsinfo, in[i].name, "local", j - c->lfirst + 1, c->W, p->d, c->k, j,
						  c->variance[j], buf);
	}
}

/* Show the fit's phase in pg_stat_activity.query ("perpca_fit: ..."). */
static void
report_phase(const char *fmt,...)
{
	char		buf[256];
	va_list		args;

	va_start(args, fmt);
	vsnprintf(buf, sizeof(buf), fmt, args);
	va_end(args);
	pgstat_report_activity(STATE_RUNNING, buf);
}

/* The fit itself, phase by phase; results go to rsinfo, diagnostics to diag. */
static void
run_fit(FunctionCallInfo fcinfo, ReturnSetInfo *rsinfo, MemoryContext fitcxt,
		FitDiagnostics *diag)
{
	FitRequest	req;
	ClientInput *in;
	FitClient  *clients;
	FitProblem *p;
	int			n;

	parse_request(fcinfo, &req);
	report_phase("perpca_fit: reading clients");
	in = read_clients(fcinfo, &req, fitcxt, &n);
	check_clients(&req, in, n);
	perpca_check_dim_limit(in[0].stats->dim);
	report_phase("perpca_fit: preparing %d clients, d = %d", n, in[0].stats->dim);
	clients = build_clients(&req, in, n);
	if (req.start != NULL)
		read_start(&req, in, n, clients);
	p = fit_problem_create(in[0].stats->dim, req.n_global, n, clients);
	report_phase("perpca_fit: fitting %d clients, d = %d, method %s",
				 n, in[0].stats->dim, method_names[req.opts.method]);
	fit_run(p, &req.opts, diag);
	report_phase("perpca_fit: writing results");
	put_results(rsinfo, p, in);
}

/* perpca_fit(query, n_global, n_local, ...) RETURNS TABLE (client, kind, component, pc, variance) */
Datum
perpca_fit(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext fitcxt,
				old;
	FitDiagnostics diag;
	instr_time	start,
				elapsed;

	INSTR_TIME_SET_CURRENT(start);
	InitMaterializedSRF(fcinfo, 0);
	fitcxt = AllocSetContextCreate(CurrentMemoryContext, "perpca_fit", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(fitcxt);
	PG_TRY();
	{
		run_fit(fcinfo, rsinfo, fitcxt, &diag);
	}
	PG_FINALLY();
	{
		/* pg_stat_activity shows the statement again, whatever happened */
		pgstat_report_activity(STATE_RUNNING, debug_query_string);
	}
	PG_END_TRY();
	INSTR_TIME_SET_CURRENT(elapsed);
	INSTR_TIME_SUBTRACT(elapsed, start);
	diag.seconds = INSTR_TIME_GET_DOUBLE(elapsed);
	last_fit = diag;
	have_last_fit = true;
	MemoryContextSwitchTo(old);
	MemoryContextDelete(fitcxt);
	return (Datum) 0;
}

/* A float8 datum, NULL for NaN (a diagnostic that does not apply). */
static Datum
float_or_null(double x, bool *isnull)
{
	*isnull = isnan(x);
	return Float8GetDatum(x);
}

/* perpca_last_fit(): diagnostics of the last perpca_fit in this session (no row before one). */
Datum
perpca_last_fit(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		values[10];
	bool		nulls[10] = {0};

	InitMaterializedSRF(fcinfo, 0);
	if (!have_last_fit)
		return (Datum) 0;
	values[0] = CStringGetTextDatum(method_names[last_fit.method]);
	values[1] = Int32GetDatum(last_fit.rounds);
	values[2] = BoolGetDatum(last_fit.converged);
	values[3] = float_or_null(last_fit.objective, &nulls[3]);
	values[4] = float_or_null(last_fit.kkt_residual, &nulls[4]);
	values[5] = float_or_null(last_fit.theta_est, &nulls[5]);
	values[6] = float_or_null(last_fit.step, &nulls[6]);
	values[7] = Int32GetDatum(last_fit.n_clients);
	values[8] = Int32GetDatum(last_fit.dim);
	values[9] = Float8GetDatum(last_fit.seconds);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}
