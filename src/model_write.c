/*
 * model_write.c -- the entry points that write a model: perpca_train() and
 * perpca_refresh(), and the resolution of a model name for writing
 *
 * The caller's side stays here, in C, where the caller's search_path can do
 * nothing by accident: the model name is resolved (an unqualified one
 * through the caller's search_path, as a table name would be), the fit
 * options are parsed and checked (fit_options.c), and the search_path in
 * effect is recorded as a list of schema names.  The rest runs in the
 * internal SQL functions of sql/create_or_replace/40_models.sql and
 * 50_refresh.sql, every one of them with search_path = pg_catalog, pg_temp,
 * called from here under that same search_path:
 *
 *   perpca_internal.train(schema, base, model, query, options, replace, path, feature_names)
 *   perpca_internal.refresh(schema, base, model, warm, on_error)
 *
 * The model is locked here first, through model_lock.c (the one lock order
 * of every function that touches a model: its three tables, then its
 * history), and stays locked to the end of the transaction.
 *
 * The query of a model is checked to be one SELECT (query_check.c) and
 * bound once, at train: the owner creates the view <model>_source holding
 * it, with the recorded search_path (perpca_internal.source_bind), as
 * CREATE MATERIALIZED VIEW binds its query.  Train and every refresh then
 * read that view as the model's owner inside a security-restricted
 * operation (run_as_owner.c); no refresh parses the text again, so nothing
 * planted later in a schema of that search_path can bind into it.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/plancache.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "fit_options.h"
#include "model_lock.h"
#include "model_read.h"
#include "perpca.h"
#include "row_reader.h"

PG_FUNCTION_INFO_V1(perpca_train);
PG_FUNCTION_INFO_V1(perpca_refresh);
/* Named by the SQL of 0.3.0 (sql/released), which runs until ALTER EXTENSION UPDATE;
 * 0.4.0 has no SQL function for it (stage_fill reads the view <model>_source). */
PG_FUNCTION_INFO_V1(perpca_query_shape);

/*
 * The caller's search_path as schema names: the schemas it names that exist
 * ("$user" resolved), in order, without the session's temporary schema (no
 * other session sees it).  What a model's query runs with, at train and at
 * every refresh.
 */
static char *
caller_search_path(void)
{
	List	   *path = fetch_search_path(false);
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, path)
	{
		Oid			nsp = lfirst_oid(lc);
		char	   *name;

		if (isAnyTempNamespace(nsp) || (name = get_namespace_name(nsp)) == NULL)
			continue;
		appendStringInfo(&buf, "%s%s", buf.len > 0 ? ", " : "", quote_identifier(name));
	}
	return buf.data;
}

/* The position of the argument named name in the called function, or -1. */
static int
arg_position(FunctionCallInfo fcinfo, const char *name)
{
	HeapTuple	proc = SearchSysCache1(PROCOID, ObjectIdGetDatum(fcinfo->flinfo->fn_oid));
	Oid		   *types;
	char	  **names;
	char	   *modes;
	int			nargs,
				found = -1;

	if (!HeapTupleIsValid(proc))
		elog(ERROR, "cache lookup failed for function %u", fcinfo->flinfo->fn_oid);
	nargs = get_func_arg_info(proc, &types, &names, &modes);
	ReleaseSysCache(proc);
	for (int i = 0; i < nargs && names != NULL; i++)
		if (names[i] != NULL && strcmp(names[i], name) == 0)
			found = i;
	return found;
}

/* A non-NULL text argument by name, or 22004. */
static char *
text_arg(FunctionCallInfo fcinfo, const char *name)
{
	int			i = arg_position(fcinfo, name);

	if (i < 0 || i >= PG_NARGS() || PG_ARGISNULL(i))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be NULL", name)));
	return text_to_cstring(PG_GETARG_TEXT_PP(i));
}

/* A boolean argument by name; dflt when NULL. */
static bool
bool_arg(FunctionCallInfo fcinfo, const char *name, bool dflt)
{
	int			i = arg_position(fcinfo, name);

	return i < 0 || i >= PG_NARGS() || PG_ARGISNULL(i) ? dflt : PG_GETARG_BOOL(i);
}

static void run_internal_sql(FunctionCallInfo fcinfo, const char *sql, int nargs, Oid *types,
							 Datum *values, const char *nulls);

/*
 * Run sql (an internal function's call) with search_path = pg_catalog,
 * pg_temp and return its rows as the calling function's result set.  An
 * error shows none of the internal SQL (row_reader.c), and a row's missing
 * element gets missing_hint; a read nested in it reports as func.
 */
static Datum
run_internal(FunctionCallInfo fcinfo, const char *func, const char *sql, int nargs, Oid *types,
			 Datum *values, const char *nulls, const char *missing_hint)
{
	MemoryContext here = CurrentMemoryContext;
	const char *outer = row_statement_func;

	row_statement_func = func;
	PG_TRY();
	{
		run_internal_sql(fcinfo, sql, nargs, types, values, nulls);
	}
	PG_CATCH();
	{
		row_statement_func = outer;
		row_rethrow(missing_hint, here);
	}
	PG_END_TRY();
	row_statement_func = outer;
	return (Datum) 0;
}

static void
run_internal_sql(FunctionCallInfo fcinfo, const char *sql, int nargs, Oid *types, Datum *values,
				 const char *nulls)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			nestlevel;

	InitMaterializedSRF(fcinfo, 0);
	nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args(sql, nargs, types, values, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed: %s", sql);
	for (uint64 i = 0; i < SPI_processed; i++)
		tuplestore_puttuple(rsinfo->setResult, SPI_tuptable->vals[i]);
	SPI_finish();
	AtEOXact_GUC(true, nestlevel);
}

/*
 * perpca_train(model, query, n_global, n_local, <fit options>, replace)
 *   RETURNS TABLE (model_name, d, n_clients, rounds_run, converged, objective, theta_est)
 */
Datum
perpca_train(PG_FUNCTION_ARGS)
{
	char	   *model = text_arg(fcinfo, "model");
	char	   *query = text_arg(fcinfo, "query");
	FitOptions	opts;
	Jsonb	   *options;
	ModelLock	ml;
	Oid			types[8] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, JSONBOID, BOOLOID, TEXTOID, TEXTARRAYOID};
	Datum		values[8];
	char		nulls[8] = "       ";
	int			names = arg_position(fcinfo, "feature_names");

	/* Every option is checked before anything runs or is locked. */
	options = fit_options_from_call(fcinfo);
	fit_options_parse(options, &opts);
	(void) perpca_one_select(query, "the query of a model");
	if (opts.start != NULL)
		(void) perpca_one_select(opts.start, "start query");
	/* Lock first, then look: of sessions creating one model at once, one
	 * creates it and the others find it (and replace it, or fail cleanly). */
	model_lock(&ml, model, MODEL_LOCK_WRITE, true, true);	/* may create it */
	(void) model_lock_history(&ml, MODEL_LOCK_WRITE, true);
	values[0] = CStringGetTextDatum(ml.schema);
	values[1] = CStringGetTextDatum(ml.base);
	values[2] = CStringGetTextDatum(model);
	values[3] = CStringGetTextDatum(query);
	values[4] = JsonbPGetDatum(options);
	values[5] = BoolGetDatum(bool_arg(fcinfo, "replace", false));
	values[6] = CStringGetTextDatum(caller_search_path());
	if (names >= 0 && names < PG_NARGS() && !PG_ARGISNULL(names))
		values[7] = PG_GETARG_DATUM(names);
	else
		nulls[7] = 'n';
	return run_internal(fcinfo, "perpca_train", "SELECT * FROM perpca_internal.train($1, $2, $3, $4, $5, $6, $7, $8)",
						8, types, values, nulls, row_skip_hint("perpca_train"));
}

/*
 * perpca_refresh(model, warm, wait, on_error) RETURNS TABLE (version, at,
 *   kind, clients, rows, rounds_run, converged, objective, seconds, role,
 *   warning, entry, outcome, starts, clients_added, clients_dropped,
 *   warm_start): the row appended to the model's history
 */
Datum
perpca_refresh(PG_FUNCTION_ARGS)
{
	char	   *model = text_arg(fcinfo, "model");
	char	   *on_error = text_arg(fcinfo, "on_error");
	bool		wait = bool_arg(fcinfo, "wait", false);
	ModelLock	ml;
	Oid			types[5] = {TEXTOID, TEXTOID, TEXTOID, BOOLOID, TEXTOID};
	Datum		values[5];

	if (strcmp(on_error, "raise") != 0 && strcmp(on_error, "record") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid on_error \"%s\"", on_error),
				 errhint("Use 'raise' (a failed refresh is an error) or 'record' (it is recorded in the model's history, with a WARNING).")));
	/* Lock first, then read: a refresh that waited starts from the model the other one stored. */
	model_lock(&ml, model, MODEL_LOCK_WRITE, wait, false);
	if (!ml.present)
		model_missing_error(model, ml.schema, ml.base, NULL);
	(void) model_lock_history(&ml, MODEL_LOCK_WRITE, wait);
	values[0] = CStringGetTextDatum(ml.schema);
	values[1] = CStringGetTextDatum(ml.base);
	values[2] = CStringGetTextDatum(model);
	values[3] = BoolGetDatum(bool_arg(fcinfo, "warm", true));
	values[4] = CStringGetTextDatum(on_error);
	return run_internal(fcinfo, "perpca_refresh", "SELECT * FROM perpca_internal.refresh($1, $2, $3, $4, $5)",
						5, types, values, NULL,
						"The model reads its query with missing => 'error' (its options); train it again "
						"with missing => 'skip' and replace => true to leave out rows with gaps.");
}

/*
 * 0.3.0's perpca_internal.query_shape(query text, search_path text) RETURNS jsonb:
 * the result columns of query, [{"name": .., "type": oid, "base": oid}]
 * (base: the type under any domain), from planning it (not running it) as
 * the current user with search_path set to the given one.  0.3.0's
 * stage_fill called it, inside run_as; 0.4.0 drops the SQL function.
 */
Datum
perpca_query_shape(PG_FUNCTION_ARGS)
{
	char	   *query = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *path = text_to_cstring(PG_GETARG_TEXT_PP(1));
	int			nestlevel;
	SPIPlanPtr	plan;
	List	   *sources;
	TupleDesc	desc;
	StringInfoData buf;
	Datum		result;

	/* In the caller's context: SPI_finish frees what SPI's context holds. */
	initStringInfo(&buf);
	nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", path, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/* As stage_fill runs it: the one query, as a subquery. */
	plan = SPI_prepare(psprintf("SELECT * FROM (%s\n) AS q", query), 0, NULL);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	sources = SPI_plan_get_plan_sources(plan);
	if (list_length(sources) != 1 || ((CachedPlanSource *) linitial(sources))->resultDesc == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("the query of a model must be one SELECT")));
	desc = ((CachedPlanSource *) linitial(sources))->resultDesc;
	appendStringInfoChar(&buf, '[');
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		appendStringInfoString(&buf, i > 0 ? ", {\"name\": " : "{\"name\": ");
		escape_json(&buf, NameStr(att->attname));
		appendStringInfo(&buf, ", \"type\": %u, \"base\": %u}", att->atttypid, getBaseType(att->atttypid));
	}
	appendStringInfoChar(&buf, ']');
	SPI_finish();
	AtEOXact_GUC(true, nestlevel);
	result = DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data));
	PG_RETURN_DATUM(result);
}
