/*
 * fit_sql.c -- perpca_fit() and perpca_last_fit(): the SQL side of fit.c
 *
 * perpca_fit validates its options, reads one (client, perpca_stats
 * [, local rank]) row per client and turns each perpca_stats into its
 * second-moment matrix S_i (both with clients.c), reads an optional warm
 * start, calls fit_run() and returns the components as rows.  Everything
 * is allocated in a private memory context that is deleted before returning.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "clients.h"
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

/* Diagnostics of the last perpca_fit in this backend. */
static FitDiagnostics last_fit;
static bool have_last_fit = false;

static const char *const method_names[] = {"perpca", "dispca", "cpca", "indiv"};
static const char *const init_names[] = {"best", "dispca", "qu", "pooled", "random", "given"};

/* ------------------------------------------------------------------------
 * Options
 * ------------------------------------------------------------------------
 */

/* Read and check every argument of perpca_fit. */
static void
parse_request(FunctionCallInfo fcinfo, FitRequest *req)
{
	FitOptions *o = &req->opts;

	memset(req, 0, sizeof(FitRequest));
	if (PG_ARGISNULL(ARG_QUERY))
		clients_null_option("query");
	req->query = text_to_cstring(PG_GETARG_TEXT_PP(ARG_QUERY));
	req->n_global = clients_int_arg(fcinfo, ARG_N_GLOBAL, "n_global", 0);
	req->n_local = clients_int_arg(fcinfo, ARG_N_LOCAL, "n_local", 0);
	o->n_local = req->n_local;
	o->rounds = clients_int_arg(fcinfo, ARG_ROUNDS, "rounds", 0);
	o->tolerance = clients_nonnegative_arg(fcinfo, ARG_TOLERANCE, "tolerance");
	o->step = clients_step_arg(fcinfo, ARG_STEP);
	o->update = (FitUpdate) clients_choice_arg(fcinfo, ARG_UPDATE, "update", clients_update_names,
									   lengthof(clients_update_names));
	o->retraction = (FitRetraction) clients_choice_arg(fcinfo, ARG_RETRACTION, "retraction",
											   clients_retraction_names, lengthof(clients_retraction_names));
	o->init = (FitInit) clients_choice_arg(fcinfo, ARG_INIT, "init", init_names, lengthof(init_names));
	if (PG_ARGISNULL(ARG_SEED))
		clients_null_option("seed");
	o->seed = (uint64) PG_GETARG_INT64(ARG_SEED);
	req->center = (FitCenter) clients_choice_arg(fcinfo, ARG_CENTER, "center", clients_center_names,
										 lengthof(clients_center_names));
	req->sample_weights = clients_choice_arg(fcinfo, ARG_WEIGHTS, "weights", clients_weights_names,
									 lengthof(clients_weights_names)) == 1;
	o->method = (FitMethod) clients_choice_arg(fcinfo, ARG_METHOD, "method", method_names,
									   lengthof(method_names));
	if (PG_ARGISNULL(ARG_VERBOSE))
		clients_null_option("verbose");
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

/* Every client must have rows, one common dimension, and room for its components. */
static void
check_clients(const FitRequest *req, const ClientInput *in, int n)
{
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("query returned no clients"),
				 errhint("perpca_fit needs at least one (client, perpca_stats) row.")));
	clients_check(in, n, req->n_global);
}

/* S_i about the centre the request asks for, and the client weights (sum 1). */
static FitClient *
build_clients(const FitRequest *req, const ClientInput *in, int n)
{
	int			d = in[0].stats->dim;
	double	   *pooled = palloc(sizeof(double) * d);
	double		total = clients_mean_sum(in, n, pooled);
	FitClient  *clients;

	for (int j = 0; j < d; j++)
		pooled[j] = req->center == CENTER_GLOBAL ? pooled[j] / total : 0.0;
	clients = clients_build(in, n, req->center == CENTER_CLIENT ? NULL : pooled,
							req->sample_weights);
	for (int i = 0; i < n; i++)
		clients[i].weight /= req->sample_weights ? total : (double) n;
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

/* The pc column of a start row as a validated vector of length d; a NULL pc is an error. */
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

/* Global rows first, then each client's local rows in query order. */
static void
put_results(ReturnSetInfo *rsinfo, const FitProblem *p, const ClientInput *in)
{
	for (int j = 0; j < p->rU; j++)
		clients_put_component(rsinfo, NULL, "global", j + 1, p->U, p->d, p->rU, j,
							  p->uvariance[j]);
	clients_put_local(rsinfo, p, in);
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
	perpca_report_phase("perpca_fit: reading clients");
	in = clients_read(fcinfo, req.query, req.n_local, fitcxt, &n);
	check_clients(&req, in, n);
	perpca_check_dim_limit(in[0].stats->dim);
	perpca_report_phase("perpca_fit: preparing %d clients, d = %d", n, in[0].stats->dim);
	clients = build_clients(&req, in, n);
	if (req.start != NULL)
		read_start(&req, in, n, clients);
	p = fit_problem_create(in[0].stats->dim, req.n_global, n, clients);
	perpca_report_phase("perpca_fit: fitting %d clients, d = %d, method %s",
				 n, in[0].stats->dim, method_names[req.opts.method]);
	fit_run(p, &req.opts, diag);
	perpca_report_phase("perpca_fit: writing results");
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
		perpca_restore_activity();
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
