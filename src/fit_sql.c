/*
 * fit_sql.c -- perpca_fit() and the diagnostics of the last fit
 *
 * perpca_fit parses its options by name (fit_options.c), reads its query once
 * as a row source (row_reader.h), checks the clients (fit_input.c), reads
 * an optional warm start, runs the fit on one
 * node (fit.c or fit_baselines.c) and returns the components as rows.
 * Everything is allocated in a private memory context deleted at the end.
 * perpca_last_fit(), _starts(), _rounds() and _clients() show the diagnostics that
 * perpca_fit and perpca_fit_federated leave behind (fit_sql_remember).
 * fit_sql_model is the same fit for the write path (model_store.c), called
 * from C with the options as parsed: the rows and the diagnostics (starts,
 * divisors of a scaled fit, each client's share of a sketch's bound).
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "access/tupdesc.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "error_kinds.h"
#include "fit.h"
#include "fit_baselines.h"
#include "fit_input.h"
#include "fit_options.h"
#include "fit_span.h"
#include "fit_sql.h"
#include "fit_sums.h"
#include "linalg.h"
#include "perpca.h"
#include "row_reader.h"
#include "scale.h"

PG_FUNCTION_INFO_V1(perpca_fit);
PG_FUNCTION_INFO_V1(perpca_last_fit);
PG_FUNCTION_INFO_V1(perpca_last_fit_starts);
PG_FUNCTION_INFO_V1(perpca_last_fit_rounds);
PG_FUNCTION_INFO_V1(perpca_last_fit_clients);
/* Named by the SQL of 0.3.0 and 0.4.0 (sql/released), which runs until ALTER EXTENSION UPDATE. */
PG_FUNCTION_INFO_V1(perpca_internal_fit);
/* Named by the SQL of 0.2.0 (sql/released), which runs until ALTER EXTENSION UPDATE. */
PG_FUNCTION_INFO_V1(perpca_last_fit_scale_factors);

/* The last fit of each kind (local, federated) in this session, in their own memory context; the most recent is last_kind. */
static MemoryContext last_cxt[2];
static FitDiagnostics *last_diag[2];
static int	last_kind = 0;

/* ------------------------------------------------------------------------
 * Warm start: init => 'given', start => query of (client, kind, component, pc)
 * ------------------------------------------------------------------------
 */

/* Check the start query's columns: (client, text kind, integer component, float8[] pc). */
static void
check_start_shape(TupleDesc desc)
{
	if (desc->natts != 4 || TupleDescAttr(desc, 1)->atttypid != TEXTOID ||
		TupleDescAttr(desc, 2)->atttypid != INT4OID ||
		TupleDescAttr(desc, 3)->atttypid != FLOAT8ARRAYOID)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_WRONG_TYPE),
				 errmsg("start query must return columns (client, kind text, component integer, pc float8[])"),
				 errdetail("It returned %d column(s).", desc->natts),
				 errhint("A stored model's components table has this shape: SELECT client, kind, component, pc FROM model_components.")));
}

/* Column col (1-based) of a start row, or null_value_not_allowed naming it. */
static Datum
start_value(HeapTuple tup, TupleDesc desc, int col, const char *what)
{
	bool		isnull;
	Datum		v = SPI_getbinval(tup, desc, col, &isnull);

	if (isnull)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NULL),
				 errmsg("start query returned a NULL %s", what)));
	return v;
}

/* The index of the client named key, or -1. */
static int
find_client(const ClientInput *in, int n, const char *key)
{
	for (int i = 0; i < n; i++)
		if (strcmp(in[i].name, key) == 0)
			return i;
	return -1;
}

/* Put one start row into U0 (global) or the matching client's V0 (local); count what was set. */
static void
start_row(HeapTuple tup, TupleDesc desc, const ClientInput *in, FitNode *node, double *U0,
		  int *uset, int *vset)
{
	char	   *kind = TextDatumGetCString(start_value(tup, desc, 2, "kind"));
	int			comp = DatumGetInt32(start_value(tup, desc, 3, "component"));
	int			d = node->d,
				len,
				i;
	double	   *x = perpca_vector_arg(DatumGetArrayTypeP(start_value(tup, desc, 4, "pc")), &len,
									  "pc of the start");

	if (len != d)
		perpca_dim_mismatch(d, len, "pc of the start");
	if (strcmp(kind, "global") != 0 && strcmp(kind, "local") != 0)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("start query returned kind \"%s\"", kind),
				 errhint("kind must be 'global' or 'local'.")));
	if (comp < 1)
		return;					/* documented: rows with component < 1 are skipped */
	if (kind[0] == 'g')
	{
		if (comp <= node->r1)
		{
			linalg_copy(d, 1, x, 1, U0 + comp - 1, node->r1);
			(*uset)++;
		}
		return;
	}
	(void) start_value(tup, desc, 1, "client of a local component");
	i = find_client(in, node->n, SPI_getvalue(tup, desc, 1));
	if (i < 0 || comp > node->clients[i].r2)
		return;					/* a client no longer in the query, or a component it no longer has */
	linalg_copy(d, 1, x, 1, (double *) node->clients[i].V0 + comp - 1, Max(node->clients[i].r2, 1));
	vset[i]++;
}

/*
 * Run the start query: U0 from its 'global' rows (all n_global must be
 * there), each client's V0 from its 'local' rows; a client with fewer local
 * rows than it needs (a new client) gets the default start.
 */
static double *
read_start(const char *query, const ClientInput *in, FitNode *node)
{
	double	   *U0 = palloc0(sizeof(double) * node->d * Max(node->r1, 1));
	int		   *vset = palloc0(sizeof(int) * Max(node->n, 1));
	int			uset = 0;

	(void) perpca_one_select(query, "start query");
	for (int i = 0; i < node->n; i++)
		node->clients[i].V0 = palloc0(sizeof(double) * node->d * Max(node->clients[i].r2, 1));
	SPI_connect();
	if (SPI_execute(query, true, 0) != SPI_OK_SELECT)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NOT_ONE_SELECT),
				 errmsg("start query must be a SELECT")));
	check_start_shape(SPI_tuptable->tupdesc);
	for (uint64 row = 0; row < SPI_processed; row++)
		start_row(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, in, node, U0, &uset, vset);
	SPI_finish();
	if (uset < node->r1)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("start query has %d of the %d global components needed", uset, node->r1)));
	for (int i = 0; i < node->n; i++)
		if (vset[i] < node->clients[i].r2)
			node->clients[i].V0 = NULL;
	return U0;
}

/* The start option: required with init 'given', optional with 'best', else refused. */
static char *
start_arg(const FitOptions *opts)
{
	char	   *start = opts->start;

	if ((opts->init == FIT_INIT_GIVEN && start == NULL) ||
		(start != NULL && opts->init != FIT_INIT_GIVEN && opts->init != FIT_INIT_BEST))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_OPTION),
				 errmsg("option \"start\" goes with init => 'given' or init => 'best'"),
				 errhint("Pass init => 'given', start => 'SELECT client, kind, component, pc FROM ...'.")));
	if (start != NULL && opts->method != FIT_METHOD_PERPCA)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_OPTION),
				 errmsg("option \"start\" applies only to method 'perpca'")));
	return start;
}

/* ------------------------------------------------------------------------
 * perpca_fit
 * ------------------------------------------------------------------------
 */

/* Who reads the clients, in NOTICEs and hints: perpca_fit, else the train or refresh it runs in. */
static const char *fit_caller = NULL;

/*
 * The fit's clients (*in, *n) read from query, checked and scaled, and the
 * node that holds them about the fit's centre (the pooled mean into diag),
 * in the span of their rows when it applies (*span, else NULL).
 */
static FitNode *
fit_clients(const RowSource *src, MemoryContext fitcxt, FitDiagnostics *diag, ClientInput **in, int *n,
			FitSpan **span)
{
	FitOptions *opts = &diag->opts;
	const char *who = fit_caller ? fit_caller : row_statement_func ? row_statement_func : "the fit";
	double	   *mean_sum;
	double	   *center;
	double		rows;
	int			d;

	*in = clients_read(src, &(ClientsRead) {opts->n_local, false, who, false, fit_span_rows_stored(opts)},
					   fitcxt, n, &diag->rows_skipped);
	clients_check(*in, *n, opts->n_global, true);
	diag->scale_factors = clients_scale(*in, *n, opts->scale, &diag->constant);
	d = (*in)[0].stats->dim;
	perpca_report_phase("perpca_fit: preparing %d clients, d = %d", *n, d);
	mean_sum = palloc(sizeof(double) * d);
	rows = clients_mean_sum(*in, *n, mean_sum);
	diag->pooled_mean = clients_pooled_mean(*in, *n, mean_sum, rows);
	center = clients_center(opts->center, mean_sum, rows, d);
	return clients_node_span(*in, *n, opts->n_global, center, opts, span);
}

/* The fit itself, phase by phase, with the options parsed in diag->opts;
 * results go to rsinfo, diagnostics to diag. */
static void
run_fit(const RowSource *src, ReturnSetInfo *rsinfo, MemoryContext fitcxt, FitDiagnostics *diag)
{
	FitOptions *opts = &diag->opts;
	ClientInput *in;
	FitNode    *node;
	FitBackend *be;
	FitResult	res = {0};
	FitSpan    *span = NULL;
	int			n;

	node = fit_clients(src, fitcxt, diag, &in, &n, &span);
	if (opts->start != NULL)
		opts->U0 = read_start(opts->start, in, node);
	be = node_backend(node);
	perpca_report_phase("perpca_fit: fitting %d clients, d = %d, method %s",
						n, node->d, fit_method_names[opts->method]);
	if (opts->method == FIT_METHOD_PERPCA)
		fit_run(be, opts, &res, diag);
	else
		fit_baseline(node, be, opts, &res, diag);
	diag->theta_est = opts->method == FIT_METHOD_PERPCA || opts->method == FIT_METHOD_DISPCA
		? node_theta(node, be->weight) : NAN;
	opts->U0 = NULL;
	diag->sketch_bound = clients_sketch_bound(in, node, res.rU, fitcxt, &diag->client_bounds);
	diag->nbounds = n;
	if (span != NULL)
	{
		fit_span_lift(span, node, &res);
		diag->dim = node->d;
	}
	perpca_report_phase("perpca_fit: writing results");
	clients_put_global(rsinfo, &res, node->d);
	clients_put_local(rsinfo, node, in);
}

/* The fit of query's rows: its start option checked, then the query read once, as a row source. */
static void
fit_query(const char *query, ReturnSetInfo *rsinfo, MemoryContext fitcxt, FitDiagnostics *diag)
{
	RowSource	src;

	(void) start_arg(&diag->opts);
	perpca_report_phase("perpca_fit: reading clients");
	row_source_open(&src, query, "query", (PerpcaMissing) diag->opts.missing);
	run_fit(&src, rsinfo, fitcxt, diag);
}

/*
 * Fit query with the options in diag->opts (already parsed) into rsinfo's
 * tuplestore; the time and the diagnostics go to diag, which is also kept
 * as the session's last fit.  Returns the fit's memory context.
 */
static MemoryContext
fit_timed(const char *query, ReturnSetInfo *rsinfo, FitDiagnostics *diag)
{
	MemoryContext fitcxt,
				old;
	instr_time	start,
				elapsed;

	INSTR_TIME_SET_CURRENT(start);
	fitcxt = AllocSetContextCreate(CurrentMemoryContext, "perpca_fit", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(fitcxt);
	PG_TRY();
	{
		fit_query(query, rsinfo, fitcxt, diag);
	}
	PG_FINALLY();
	{
		perpca_restore_activity();
	}
	PG_END_TRY();
	INSTR_TIME_SET_CURRENT(elapsed);
	INSTR_TIME_SUBTRACT(elapsed, start);
	diag->seconds = INSTR_TIME_GET_DOUBLE(elapsed);
	fit_sql_remember(diag, false);
	MemoryContextSwitchTo(old);
	/* diag points into it (starts, scale factors): the caller deletes it when done */
	return fitcxt;
}

MemoryContext
fit_sql_model(const char *query, FitDiagnostics *diag, Tuplestorestate **rows, TupleDesc *desc)
{
	ReturnSetInfo rs = {.type = T_ReturnSetInfo};
	TupleDesc	d = CreateTemplateTupleDesc(5);
	MemoryContext fitcxt;

	TupleDescInitEntry(d, 1, "client", TEXTOID, -1, 0);
	TupleDescInitEntry(d, 2, "kind", TEXTOID, -1, 0);
	TupleDescInitEntry(d, 3, "component", INT4OID, -1, 0);
	TupleDescInitEntry(d, 4, "pc", FLOAT8ARRAYOID, -1, 0);
	TupleDescInitEntry(d, 5, "variance", FLOAT8OID, -1, 0);
	rs.setDesc = d;
	rs.setResult = tuplestore_begin_heap(false, false, work_mem);
	fitcxt = fit_timed(query, &rs, diag);
	*rows = rs.setResult;
	*desc = d;
	return fitcxt;
}

/* perpca_fit(query, n_global, n_local, ...) RETURNS TABLE (client, kind, component, pc, variance) */
Datum
perpca_fit(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	FitDiagnostics diag = {0};
	char	   *query = fit_text_arg(fcinfo, 0, "query");

	fit_options_parse_call(fcinfo, &diag.opts);
	InitMaterializedSRF(fcinfo, 0);
	fit_caller = "perpca_fit";
	PG_TRY();
	{
		MemoryContextDelete(fit_timed(query, rsinfo, &diag));
	}
	PG_FINALLY();
	{
		fit_caller = NULL;
	}
	PG_END_TRY();
	return (Datum) 0;
}

/* ------------------------------------------------------------------------
 * Diagnostics of the last fit
 * ------------------------------------------------------------------------
 */

void
fit_sql_remember(const FitDiagnostics *diag, bool federated)
{
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext, "perpca last fit",
											  ALLOCSET_SMALL_SIZES);
	FitDiagnostics *copy = MemoryContextAlloc(cxt, sizeof(FitDiagnostics));

	*copy = *diag;
	copy->opts.U0 = NULL;
	copy->trace = NULL;
	if (diag->ntrace > 0)
	{
		copy->trace = MemoryContextAllocHuge(cxt, sizeof(FitTraceRow) * diag->ntrace);
		memcpy(copy->trace, diag->trace, sizeof(FitTraceRow) * diag->ntrace);
	}
	for (int j = 0; j < diag->nstarts; j++)
		copy->starts[j].name = MemoryContextStrdup(cxt, diag->starts[j].name);
	if (diag->scale_factors != NULL)
	{
		copy->scale_factors = MemoryContextAlloc(cxt, sizeof(double) * diag->dim);
		memcpy(copy->scale_factors, diag->scale_factors, sizeof(double) * diag->dim);
		copy->constant = MemoryContextAlloc(cxt, sizeof(bool) * diag->dim);
		memcpy(copy->constant, diag->constant, sizeof(bool) * diag->dim);
	}
	copy->pooled_mean = NULL;
	copy->client_bounds = NULL;
	if (diag->nbounds > 0)
	{
		copy->client_bounds = MemoryContextAllocHuge(cxt, sizeof(FitClientBound) * diag->nbounds);
		memcpy(copy->client_bounds, diag->client_bounds, sizeof(FitClientBound) * diag->nbounds);
		for (int i = 0; i < diag->nbounds; i++)
			copy->client_bounds[i].client = MemoryContextStrdup(cxt, diag->client_bounds[i].client);
	}
	if (last_cxt[federated])
		MemoryContextDelete(last_cxt[federated]);
	last_cxt[federated] = cxt;
	last_diag[federated] = copy;
	last_kind = federated ? 1 : 0;
}

const FitDiagnostics *
fit_sql_last(bool federated)
{
	return last_diag[federated];
}

/* A float8 datum, NULL for NaN (a diagnostic that does not apply). */
Datum
fit_sql_float(double x, bool *isnull)
{
	*isnull = !isfinite(x);
	return Float8GetDatum(x);
}

/* perpca_last_fit(): the diagnostics of the last perpca_fit in this session (no row before one). */
Datum
perpca_last_fit(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const FitDiagnostics *l = last_diag[0];
	Datum		values[17];
	bool		nulls[17] = {0};

	InitMaterializedSRF(fcinfo, 0);
	if (l == NULL)
		return (Datum) 0;
	values[0] = CStringGetTextDatum(fit_method_names[l->opts.method]);
	values[1] = Int32GetDatum(l->rounds);
	values[2] = BoolGetDatum(l->converged);
	values[3] = fit_sql_float(l->objective, &nulls[3]);
	values[4] = fit_sql_float(l->kkt_residual, &nulls[4]);
	values[5] = fit_sql_float(l->theta_est, &nulls[5]);
	values[6] = fit_sql_float(l->step, &nulls[6]);
	values[7] = Int32GetDatum(l->n_clients);
	values[8] = Int32GetDatum(l->dim);
	values[9] = Float8GetDatum(l->seconds);
	values[10] = CStringGetTextDatum(fit_solvers[l->opts.solver].name);
	nulls[10] = l->opts.method != FIT_METHOD_PERPCA;
	nulls[11] = l->chosen < 0;
	values[11] = nulls[11] ? (Datum) 0 : CStringGetTextDatum(l->starts[l->chosen].name);
	values[12] = fit_sql_float(l->gradient_norm, &nulls[12]);
	values[13] = JsonbPGetDatum(fit_options_jsonb(&l->opts, false));
	values[14] = Int64GetDatum(l->rows_skipped);
	nulls[15] = l->stop[0] == '\0';
	values[15] = nulls[15] ? (Datum) 0 : CStringGetTextDatum(l->stop);
	values[16] = Float8GetDatum(l->sketch_bound);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}

/*
 * perpca_last_fit_clients(): one row per client of the last perpca_fit (in
 * the query's order): its rows, its sketch's rows of B and delta (0 for exact
 * statistics), the components its objective counts and its share of the
 * sketch's bound, 1/2 components delta / n (fit_types.h, FitClientBound).
 */
Datum
perpca_last_fit_clients(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const FitDiagnostics *l = last_diag[0];

	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; l != NULL && i < l->nbounds; i++)
	{
		const FitClientBound *b = &l->client_bounds[i];
		Datum		values[6];
		bool		nulls[6] = {0};

		values[0] = CStringGetTextDatum(b->client);
		values[1] = Int64GetDatum(b->n);
		values[2] = Int32GetDatum(b->rows);
		values[3] = Float8GetDatum(b->delta);
		values[4] = Int32GetDatum(b->components);
		values[5] = Float8GetDatum(b->bound);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* perpca_last_fit_starts(): one row per start of the last fit (either kind). */
Datum
perpca_last_fit_starts(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const FitDiagnostics *l = last_diag[last_kind];

	InitMaterializedSRF(fcinfo, 0);
	for (int j = 0; l != NULL && j < l->nstarts; j++)
	{
		Datum		values[7];
		bool		nulls[7] = {0};

		values[0] = CStringGetTextDatum(l->starts[j].name);
		values[1] = fit_sql_float(l->starts[j].objective, &nulls[1]);
		values[2] = Int32GetDatum(l->starts[j].rounds);
		values[3] = BoolGetDatum(l->starts[j].converged);
		values[4] = BoolGetDatum(j == l->chosen);
		nulls[5] = l->starts[j].basin < 0;
		values[5] = Int32GetDatum(l->starts[j].basin + 1);
		values[6] = CStringGetTextDatum(fit_run_end_name(&l->starts[j]));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* perpca_last_fit_rounds(): one row per round of the last fit (either kind). */
Datum
perpca_last_fit_rounds(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const FitDiagnostics *l = last_diag[last_kind];

	InitMaterializedSRF(fcinfo, 0);
	for (int j = 0; l != NULL && j < l->ntrace; j++)
	{
		const FitTraceRow *r = &l->trace[j];
		Datum		values[8];
		bool		nulls[8] = {0};

		values[0] = CStringGetTextDatum(l->starts[r->start].name);
		values[1] = Int32GetDatum(r->round);
		values[2] = fit_sql_float(r->objective, &nulls[2]);
		values[3] = fit_sql_float(r->gradient_norm, &nulls[3]);
		values[4] = fit_sql_float(r->kkt_residual, &nulls[4]);
		values[5] = fit_sql_float(r->step, &nulls[5]);
		values[6] = Int64GetDatum(r->products);
		values[7] = Int64GetDatum(r->iterations);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * perpca_internal.fit(): 0.3.0 and 0.4.0's write path ran its fit back
 * through SQL with it; the write path now calls fit_sql_model, and 0.5.0
 * drops the SQL function.
 */
Datum
perpca_internal_fit(PG_FUNCTION_ARGS)
{
	ereport(ERROR,
			(errcode(PERPCA_ERRCODE_UNSUPPORTED),
			 errmsg("perpca_internal.fit is no longer available"),
			 errhint("Run ALTER EXTENSION perpca UPDATE.")));
	PG_RETURN_NULL();
}

/*
 * perpca_internal.last_fit_scale_factors(): 0.2.0's perpca_train read the
 * divisors of its fit back from the session with it; kept for the SQL of
 * 0.2.0 until the update.
 */
Datum
perpca_last_fit_scale_factors(PG_FUNCTION_ARGS)
{
	const FitDiagnostics *l = fit_sql_last(false);

	if (l == NULL)
		PG_RETURN_DATUM(scale_record(fcinfo, NULL, NULL, 0));
	PG_RETURN_DATUM(scale_record(fcinfo, l->scale_factors, l->constant, l->dim));
}
