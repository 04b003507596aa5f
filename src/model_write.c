/*
 * model_write.c -- the entry points that write a model: perpca_train() and
 * perpca_refresh(), in C from the call to the last row
 *
 * The caller's side: the model name is resolved (an unqualified one through
 * the caller's search_path, as a table name would be), the fit options are
 * parsed and checked (fit_options.c), every query text is checked to be one
 * SELECT (query_check.c), the search_path in effect is recorded as a list of
 * schema names, and the model is locked first, through model_lock.c (the
 * one lock order of every function that touches a model: its three tables,
 * then its history), to the end of the transaction.  The caller's
 * temporary stage is made as the caller (a security-restricted operation
 * may not create one).
 *
 * The owner's side: the query of a model is bound once, at train: the
 * owner creates the view <model>_source holding it, with the recorded
 * search_path, as CREATE MATERIALIZED VIEW binds its query.  Train and
 * every refresh then read that view, fit, and write the model's tables and
 * history as the model's owner inside a security-restricted operation
 * (run_as_owner.c), through the one module that writes models
 * (model_store.c); no refresh parses the text again, so nothing planted
 * later in a schema of that search_path can bind into it.
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
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/plancache.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "calibrate.h"
#include "calibrate_split.h"
#include "error_kinds.h"
#include "fit_options.h"
#include "model_lock.h"
#include "model_read.h"
#include "model_store.h"
#include "perpca.h"
#include "row_reader.h"
#include "run_as_owner.h"

PG_FUNCTION_INFO_V1(perpca_train);
PG_FUNCTION_INFO_V1(perpca_refresh);
/* Named by the SQL of 0.3.0 (sql/released), which runs until ALTER EXTENSION UPDATE;
 * 0.4.0 has no SQL function for it (the stage reads the view <model>_source). */
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
				(errcode(PERPCA_ERRCODE_NULL),
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

/* ------------------------------------------------------------------------
 * What train and refresh share
 * ------------------------------------------------------------------------
 */

/* The write's SPI connection, with search_path = pg_catalog, pg_temp; the GUC level to close. */
static int
write_begin(void)
{
	int			nestlevel = NewGUCNestLevel();

	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	return nestlevel;
}

static void
write_end(int nestlevel)
{
	SPI_finish();
	AtEOXact_GUC(true, nestlevel);
}

/* insufficient_privilege unless the current user has the privileges of the model's owner. */
static void
check_owner(const char *model, Oid owner)
{
	if (!has_privs_of_role(GetUserId(), owner))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NOT_OWNER),
				 errmsg("must be owner of model \"%s\"", model),
				 errdetail("The model is owned by role %s.", quote_identifier(GetUserNameFromId(owner, false))),
				 errhint("Only the owner of a model, or a member of the owning role, may refresh, replace or change it.")));
}

/* The jsonb array of names (feature names) as a text[] datum. */
static Datum
names_array(Datum json)
{
	bool		isnull;

	return store_sql("SELECT ARRAY(SELECT t.e FROM jsonb_array_elements_text($1) WITH ORDINALITY AS t(e, i) ORDER BY t.i)",
					 1, (Oid[]) {JSONBOID}, &json, NULL, &isnull);
}

/* The text of key of a jsonb object (NULL when absent or null). */
static char *
jtext(Datum j, const char *key)
{
	Datum		args[2] = {j, CStringGetTextDatum(key)};
	bool		isnull;
	Datum		v = store_sql("SELECT $1 ->> $2", 2, (Oid[]) {JSONBOID, TEXTOID}, args, NULL, &isnull);

	return isnull ? NULL : TextDatumGetCString(v);
}

/* The rows of sql ($1: a jsonb) into the function's result. */
static void
result_rows(FunctionCallInfo fcinfo, const char *sql, Datum r)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	bool		isnull;

	(void) store_sql(sql, 1, (Oid[]) {JSONBOID}, &r, NULL, &isnull);
	for (uint64 i = 0; i < SPI_processed; i++)
		tuplestore_puttuple(rsinfo->setResult, SPI_tuptable->vals[i]);
}

/* ------------------------------------------------------------------------
 * perpca_train
 * ------------------------------------------------------------------------
 */

/* A train's arguments, checked. */
typedef struct TrainCall
{
	const char *model;
	const char *query;
	Datum		options;		/* jsonb */
	bool		replace;
	const char *path;
	Datum		names;			/* text[] */
	bool		names_null;
	double		calibration;	/* share of rows held out (calibrate.c), 0: none */
} TrainCall;

/* The feature names: a query of feature columns names them, and feature_names, when given too, must agree. */
static void
train_names(TrainCall *tc, Datum staged, bool staged_null)
{
	Datum		names;
	Datum		args[2];
	bool		isnull;

	if (staged_null)
		return;
	names = names_array(staged);
	args[0] = names;
	args[1] = tc->names;
	if (!tc->names_null &&
		DatumGetBool(store_sql("SELECT $1 IS DISTINCT FROM $2", 2, (Oid[]) {TEXTARRAYOID, TEXTARRAYOID}, args, NULL,
							   &isnull)))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("feature_names differ from the names of the query's feature columns"),
				 errdetail("The query's feature columns are %s; feature_names are %s.",
						   TextDatumGetCString(store_sql("SELECT $1::text", 1, (Oid[]) {TEXTARRAYOID}, &args[0], NULL, &isnull)),
						   TextDatumGetCString(store_sql("SELECT $1::text", 1, (Oid[]) {TEXTARRAYOID}, &args[1], NULL, &isnull))),
				 errhint("Name the columns in the query instead (SELECT client, a AS name, ...): every refresh reads the names from it.")));
	tc->names = names;
	tc->names_null = false;
}

/* The history row of a train (as the caller: role is the caller). */
static const char train_history_sql[] =
"SELECT jsonb_build_object('version', $1 -> 'version', 'at', clock_timestamp(), 'kind', 'train',"
"  'clients', $1 -> 'n_clients', 'rows', $1 -> 'rows', 'rounds_run', $1 -> 'rounds_run',"
"  'converged', $1 -> 'converged', 'objective', $1 -> 'objective',"
"  'seconds', extract(epoch FROM clock_timestamp() - $2), 'role', current_user,"
"  'warning', CASE WHEN NOT ($1 ->> 'converged')::boolean THEN"
"                 format('did not converge in %s rounds', $1 ->> 'rounds_run') END,"
"  'outcome', 'fitted', 'starts', $1 -> 'starts', 'digest', $1 -> 'digest',"
"  'sketch_bound', $1 -> 'sketch_bound')";

/*
 * The body of perpca_train (the model is locked, ml): stage the query as
 * the caller the way a refresh will run it, then bind, read, fit, store and
 * append to the history as the model's owner.
 */
static void
train_run(FunctionCallInfo fcinfo, const ModelLock *ml, TrainCall *tc)
{
	Oid			owner = ml->present ? ml->owner : GetUserId();
	StoreModel	sm;
	RunAs		ra;
	Datum		staged,
				r,
				args[2];
	bool		isnull,
				staged_null,
				bound_null;
	char	   *start,
			   *missing;

	if (ml->present && !tc->replace)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_MODEL_EXISTS),
				 errmsg("model \"%s\" already exists", tc->model),
				 errhint("Pass replace => true to replace it, or drop it with perpca_drop().")));
	check_owner(tc->model, owner);
	store_model_init(&sm, ml->schema, ml->base);
	sm.calibration = tc->calibration;
	args[1] = store_sql("SELECT clock_timestamp()", 0, NULL, NULL, NULL, &isnull);
	if ((start = jtext(tc->options, "start")) != NULL)
	{
		store_stage_start(start, owner, tc->path);
		tc->options = store_sql("SELECT $1 || jsonb_build_object('start', 'SELECT * FROM pg_temp.perpca_train_start')",
								1, (Oid[]) {JSONBOID}, &tc->options, NULL, &isnull);
	}
	missing = jtext(tc->options, "missing");
	store_stage_create(&sm, owner);
	/* The query is bound once, by the owner, with the caller's search_path, and read as every refresh will read it. */
	run_as_enter(&ra, owner);
	staged = store_source_bind(&sm, tc->query, tc->path, missing ? missing : "error", &staged_null);
	calibrate_bind_rows(&sm, perpca_one_select(tc->query, "the query of a model"), tc->path, tc->calibration);
	(void) store_stage_fill(&sm, missing ? missing : "error", &bound_null);
	run_as_leave(&ra);
	train_names(tc, staged, staged_null);
	run_as_enter(&ra, owner);
	r = store_fit(&sm, tc->query, tc->options, tc->path, tc->names, tc->names_null);
	calibrate_after_fit(&sm, tc->calibration);
	run_as_leave(&ra);
	args[0] = r;
	args[0] = store_sql(train_history_sql, 2, (Oid[]) {JSONBOID, TIMESTAMPTZOID}, args, NULL, &isnull);
	run_as_enter(&ra, owner);
	(void) store_history_append(&sm, args[0]);
	run_as_leave(&ra);
	result_rows(fcinfo, "SELECT $1 ->> 'model_name', ($1 ->> 'd')::int, ($1 ->> 'n_clients')::int,"
				" ($1 ->> 'rounds_run')::int, ($1 ->> 'converged')::boolean,"
				" ($1 ->> 'objective')::float8, ($1 ->> 'theta_est')::float8", r);
	store_stage_drop();
}

/*
 * perpca_train(model, query, n_global, n_local, <fit options>, replace)
 *   RETURNS TABLE (model_name, d, n_clients, rounds_run, converged, objective, theta_est)
 */
Datum
perpca_train(PG_FUNCTION_ARGS)
{
	TrainCall	tc;
	FitOptions	opts;
	Jsonb	   *options;
	ModelLock	ml;
	int			names = arg_position(fcinfo, "feature_names");
	MemoryContext here = CurrentMemoryContext;
	const char *outer = row_statement_func;
	char	   *hint = row_skip_hint("perpca_train");

	tc.model = text_arg(fcinfo, "model");
	tc.query = text_arg(fcinfo, "query");
	/* Every option is checked before anything runs or is locked. */
	options = fit_options_from_call(fcinfo);
	fit_options_parse(options, &opts);
	(void) perpca_one_select(tc.query, "the query of a model");
	if (opts.start != NULL)
		(void) perpca_one_select(opts.start, "start query");
	tc.options = JsonbPGetDatum(options);
	tc.replace = bool_arg(fcinfo, "replace", false);
	tc.calibration = calibrate_share_arg(fcinfo);
	tc.path = caller_search_path();
	tc.names_null = names < 0 || names >= PG_NARGS() || PG_ARGISNULL(names);
	tc.names = tc.names_null ? (Datum) 0 : PG_GETARG_DATUM(names);
	InitMaterializedSRF(fcinfo, 0);
	/* Lock first, then look: of sessions creating one model at once, one
	 * creates it and the others find it (and replace it, or fail cleanly). */
	model_lock(&ml, tc.model, MODEL_LOCK_WRITE, true, true);	/* may create it */
	(void) model_lock_history(&ml, MODEL_LOCK_WRITE, true);
	/* a read nested in it reports as perpca_train (row_reader.c) */
	row_statement_func = "perpca_train";
	PG_TRY();
	{
		int			nestlevel = write_begin();

		train_run(fcinfo, &ml, &tc);
		write_end(nestlevel);
	}
	PG_CATCH();
	{
		row_statement_func = outer;
		row_rethrow(hint, here);
	}
	PG_END_TRY();
	row_statement_func = outer;
	return (Datum) 0;
}

/* ------------------------------------------------------------------------
 * perpca_refresh
 * ------------------------------------------------------------------------
 */

/* A refresh: the model, the warm flag, what its body found (a history row without kind, at, seconds, role), and the row appended. */
typedef struct RefreshCall
{
	StoreModel	sm;
	Oid			owner;
	bool		warm;
	Datum		start;			/* clock_timestamp() at the call */
	Datum		role;			/* the caller's name (text) */
	Datum		r;
	Datum		row;			/* r as a history row: appended, with its entry */
} RefreshCall;

/* The options, search_path and flags of a stored model m (jsonb of its info row), as 0.1.0 to 0.4.0 stored them. */
static const char refresh_model_sql[] =
"SELECT coalesce($1 -> 'options', ($1 - 'rounds') || jsonb_build_object('rounds', $1 -> 'rounds_max'))"
"         || jsonb_build_object('n_global', $1 -> 'n_global', 'n_local', $1 -> 'n_local'),"
"       coalesce($1 ->> 'search_path', $2),"
"       $1 ->> 'source_view' IS NULL,"
"       $3 AND $1 -> 'options' IS NOT NULL"
"         AND $1 ?& ARRAY['client_type', 'scale_factors', 'constant_features', 'search_path', 'feature_names',"
"                         'stats_digest']";

/* What the body of a refresh read from the stored model. */
typedef struct RefreshModel
{
	Datum		m;				/* the info row (jsonb) */
	Datum		options;
	char	   *path;
	bool		unbound;		/* stored before 0.4.0: no source view yet */
	bool		current;		/* of the current form: an unchanged refresh may skip the fit */
} RefreshModel;

static void
refresh_read(RefreshCall *rc, RefreshModel *rm)
{
	Datum		args[3];
	bool		isnull;
	HeapTuple	row;
	TupleDesc	desc;

	(void) store_sql(psprintf("SELECT to_jsonb(i) FROM %s i", store_rel(&rc->sm, "info")), 0, NULL, NULL, NULL, &isnull);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_MODEL_DAMAGED),
				 errmsg("query returned %s row", SPI_processed == 0 ? "no" : "more than one")));
	rm->m = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	args[0] = rm->m;
	args[1] = CStringGetTextDatum(psprintf("pg_catalog, %s", rc->sm.ext));
	args[2] = BoolGetDatum(rc->warm);
	(void) store_sql(refresh_model_sql, 3, (Oid[]) {JSONBOID, TEXTOID, BOOLOID}, args, NULL, &isnull);
	row = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	rm->options = SPI_getbinval(row, desc, 1, &isnull);
	rm->path = TextDatumGetCString(SPI_getbinval(row, desc, 2, &isnull));
	rm->unbound = DatumGetBool(SPI_getbinval(row, desc, 3, &isnull));
	rm->current = DatumGetBool(SPI_getbinval(row, desc, 4, &isnull)) && !isnull &&
		get_attnum(get_relname_relid(psprintf("%s_clients", rc->sm.base), get_namespace_oid(rc->sm.schema, false)),
				   "residual_moments") != InvalidAttrNumber;
}

/* The row of an unchanged refresh, or NULL when the staged statistics differ from the stored ones. */
static bool
refresh_unchanged(RefreshCall *rc, RefreshModel *rm, Datum names, bool names_null)
{
	Datum		args[2];
	bool		isnull;

	/* (personalized clients are not in the query: a refresh drops them, so it fits) */
	if (DatumGetBool(store_sql(psprintf("SELECT EXISTS (SELECT FROM %s c WHERE c.source = 'personalize')",
										store_rel(&rc->sm, "clients")), 0, NULL, NULL, NULL, &isnull)))
		return false;
	args[0] = rm->m;
	args[1] = store_digest(&rc->sm, store_sql("SELECT $1 -> 'options'", 1, (Oid[]) {JSONBOID}, &rm->m, NULL, &isnull),
						   names, names_null);
	if (args[1] == (Datum) 0 ||
		!DatumGetBool(store_sql("SELECT $2 = $1 ->> 'stats_digest'", 2, (Oid[]) {JSONBOID, TEXTOID}, args, NULL, &isnull))
		|| isnull)
		return false;
	rc->r = store_sql(psprintf("SELECT jsonb_build_object("
							   "'outcome', 'unchanged', 'version', $1 -> 'version', 'clients', $1 -> 'n_clients',"
							   "'rows', (SELECT sum(%s.perpca_count(s.stats)) FROM pg_temp.perpca_train_src s),"
							   "'rounds_run', 0, 'converged', $1 -> 'converged', 'objective', $1 -> 'objective',"
							   "'sketch_bound', $1 -> 'sketch_bound',"
							   "'clients_added', 0, 'clients_dropped', 0, 'digest', $2,"
							   "'warning', 'unchanged: the statistics, options and feature names are those of the stored model; nothing was fitted')",
							   rc->sm.ext),
					  2, (Oid[]) {JSONBOID, TEXTOID}, args, NULL, &isnull);
	return true;
}

/* warm: the stored U is one of the L-BFGS solver's starts (init 'best' keeps the best); the paper's solver continues from it. */
static const char refresh_options_sql[] =
"SELECT $1 || jsonb_build_object("
"  'init', CASE WHEN $2 AND $1 ->> 'solver' = 'paper' THEN 'given'"
"               WHEN $2 THEN 'best'"
"               WHEN $1 ->> 'init' = 'given' THEN NULL"
"               ELSE $1 ->> 'init' END,"
"  'start', CASE WHEN $2 THEN format('SELECT client, kind, component, pc FROM %s', $3) END,"
"  'verbose', false)";

static const char refresh_fitted_sql[] =
"SELECT jsonb_build_object("
"  'outcome', 'fitted', 'version', $1 -> 'version', 'clients', $1 -> 'n_clients', 'rows', $1 -> 'rows',"
"  'rounds_run', $1 -> 'rounds_run', 'converged', $1 -> 'converged', 'objective', $1 -> 'objective',"
"  'clients_added', (SELECT count(*) FROM unnest($3) AS a(c) WHERE a.c <> ALL (coalesce($2, '{}'))),"
"  'clients_dropped', (SELECT count(*) FROM unnest($2) AS b(c) WHERE b.c <> ALL (coalesce($3, '{}'))),"
"  'warm_start', $4, 'starts', $1 -> 'starts', 'digest', $1 -> 'digest', 'sketch_bound', $1 -> 'sketch_bound',"
"  'warning', CASE WHEN NOT ($1 ->> 'converged')::boolean THEN"
"                 format('did not converge in %s rounds', $1 ->> 'rounds_run') END)";

/*
 * The refresh itself, as the model's owner: the view into the stage (a
 * model stored before 0.4.0 has its text bound first, once); unchanged
 * statistics are not fitted again (when warm); otherwise the fit and the
 * store.  rc->r: what happened.
 */
static void
refresh_body(void *arg)
{
	RefreshCall *rc = arg;
	RefreshModel rm;
	Datum		staged,
				names = (Datum) 0,
				args[4];
	bool		staged_null,
				names_null = true,
				isnull,
				use_start;
	char	   *missing,
			   *clients = store_rel(&rc->sm, "clients");
	char		nulls[5] = "    ";

	refresh_read(rc, &rm);
	missing = jtext(rm.options, "missing");
	if (rm.unbound)
	{
		(void) store_source_bind_stored(&rc->sm, jtext(rm.m, "source_query"), rm.path, missing ? missing : "error",
										&staged_null);
		store_columns_add(&rc->sm, "info");
		args[0] = CStringGetTextDatum(store_rel(&rc->sm, "source"));
		store_run(psprintf("UPDATE %s SET source_view = $1", store_rel(&rc->sm, "info")), 1, (Oid[]) {TEXTOID}, args, NULL);
	}
	staged = store_stage_fill(&rc->sm, missing ? missing : "error", &staged_null);
	/* A query of feature columns names the features at every refresh. */
	if (!staged_null)
		names = names_array(staged), names_null = false;
	else if (DatumGetBool(store_sql("SELECT jsonb_typeof($1 -> 'feature_names') = 'array'", 1, (Oid[]) {JSONBOID},
									&rm.m, NULL, &isnull)) && !isnull)
		names = names_array(store_sql("SELECT $1 -> 'feature_names'", 1, (Oid[]) {JSONBOID}, &rm.m, NULL, &isnull)),
			names_null = false;
	if (rm.current && refresh_unchanged(rc, &rm, names, names_null))
		return;
	args[1] = store_sql(psprintf("SELECT array_agg(client) FROM %s", clients), 0, NULL, NULL, NULL, &isnull);
	nulls[1] = isnull ? 'n' : ' ';
	use_start = rc->warm && strcmp(jtext(rm.options, "method") ? jtext(rm.options, "method") : "", "perpca") == 0;
	rm.options = store_sql(refresh_options_sql, 3, (Oid[]) {JSONBOID, BOOLOID, TEXTOID},
						   (Datum[]) {rm.options, BoolGetDatum(use_start),
						   CStringGetTextDatum(store_rel(&rc->sm, "components"))}, NULL, &isnull);
	args[0] = store_fit(&rc->sm, jtext(rm.m, "source_query"), rm.options, rm.path, names, names_null);
	calibrate_after_fit(&rc->sm, jtext(rm.m, "calibration") ? strtod(jtext(rm.m, "calibration"), NULL) : 0.0);
	args[2] = store_sql(psprintf("SELECT array_agg(client) FROM %s", clients), 0, NULL, NULL, NULL, &isnull);
	nulls[2] = isnull ? 'n' : ' ';
	args[3] = BoolGetDatum(use_start);
	rc->r = store_sql(refresh_fitted_sql, 4, (Oid[]) {JSONBOID, TEXTARRAYOID, TEXTARRAYOID, BOOLOID}, args, nulls,
					  &isnull);
}

static const char refresh_history_sql[] =
"SELECT $1 || jsonb_build_object('at', clock_timestamp(), 'kind', 'refresh',"
"  'seconds', extract(epoch FROM clock_timestamp() - $2), 'role', $3)";

/* rc->r as a history row (rc->row), not appended. */
static void
refresh_row(RefreshCall *rc)
{
	bool		isnull;

	rc->row = store_sql(refresh_history_sql, 3, (Oid[]) {JSONBOID, TIMESTAMPTZOID, TEXTOID},
						(Datum[]) {rc->r, rc->start, rc->role}, NULL, &isnull);
}

/* rc->r appended to the history, as the owner: rc->row. */
static void
refresh_append(void *arg)
{
	RefreshCall *rc = arg;

	refresh_row(rc);
	rc->row = store_history_append(&rc->sm, rc->row);
}

/* The refresh and its row in the history, as the owner, at once: a history that refuses the row fails the refresh. */
static void
refresh_whole(void *arg)
{
	refresh_body(arg);
	refresh_append(arg);
}

/*
 * A refresh that failed with edata, under on_error => 'record': its row
 * appended to the history as the owner, with a WARNING; when the owner's
 * history refuses that row too (her trigger), the WARNING says so beside
 * the refresh's outcome, which the caller gets as the row not appended.
 */
static void
refresh_failed(RefreshCall *rc, const char *model, ErrorData *edata)
{
	const char *state = unpack_sql_state(edata->sqlerrcode);
	const char *message = edata->message ? edata->message : "";
	Datum		args[2] = {BoolGetDatum(rc->warm), CStringGetTextDatum(psprintf("failed: %s: %s", state, message))};
	ErrorData  *hist;
	bool		isnull;

	rc->r = store_sql("SELECT jsonb_build_object('outcome', 'failed', 'rounds_run', 0, 'converged', false,"
					  " 'warm_start', $1, 'warning', $2)", 2, (Oid[]) {BOOLOID, TEXTOID}, args, NULL, &isnull);
	if (run_as_caught_call(rc->owner, refresh_append, rc, &hist))
	{
		ereport(WARNING,
				(errmsg("refresh of model \"%s\" failed: %s", model, message),
				 errdetail("SQLSTATE %s. The model is unchanged; the failure is in its history.", state),
				 errhint("SELECT * FROM perpca_model_history(%s) shows it.", quote_literal_cstr(model))));
		return;
	}
	refresh_row(rc);
	ereport(WARNING,
			(errmsg("refresh of model \"%s\" failed: %s", model, message),
			 errdetail("SQLSTATE %s. The model is unchanged; its history could not be written either: %s (SQLSTATE %s).",
					   state, hist->message ? hist->message : "", unpack_sql_state(hist->sqlerrcode)),
			 errhint("The row perpca_refresh returns is the refresh's outcome; the owner's triggers on %s refused it.",
					 store_rel(&rc->sm, "history"))));
}

static const char refresh_result_sql[] =
"SELECT * FROM jsonb_to_record($1) AS h("
"  version bigint, at timestamptz, kind text, clients int, \"rows\" bigint, rounds_run int,"
"  converged boolean, objective float8, seconds float8, role name, warning text,"
"  entry int, outcome text, starts jsonb, clients_added int, clients_dropped int, warm_start boolean,"
"  sketch_bound float8)";

/*
 * The body of perpca_refresh (the model is locked, ml): stage, refit and
 * append the history row as the owner, in one subtransaction, and return
 * the row.  With on_error 'record', whatever that raises is caught (a 57014
 * or 55P03 of the owner's code too, her history's trigger too; not a
 * cancel or timeout of the caller's statement), the model stays as it was,
 * and the failure is the history's row; otherwise it is raised.
 */
static void
refresh_run(FunctionCallInfo fcinfo, const ModelLock *ml, const char *model, bool warm, bool record)
{
	RefreshCall rc = {.owner = ml->owner, .warm = warm};
	ErrorData  *edata;
	bool		isnull;

	store_model_init(&rc.sm, ml->schema, ml->base);
	rc.start = store_sql("SELECT clock_timestamp()", 0, NULL, NULL, NULL, &isnull);
	rc.role = CStringGetTextDatum(GetUserNameFromId(GetUserId(), false));
	check_owner(model, ml->owner);
	store_stage_create(&rc.sm, ml->owner);
	if (!run_as_caught_call(ml->owner, refresh_whole, &rc, &edata))
	{
		if (!record)
			ReThrowError(edata);
		refresh_failed(&rc, model, edata);
	}
	store_stage_drop();
	if (strcmp(jtext(rc.r, "outcome"), "unchanged") == 0)
		/* DEBUG1, not NOTICE: the history row is the record, and a nightly
		 * pg_cron refresh of unchanged data should not write to the server log */
		ereport(DEBUG1,
				(errmsg("model \"%s\" is unchanged: nothing was fitted", model),
				 errhint("perpca_refresh(..., warm => false) refits it anyway.")));
	result_rows(fcinfo, refresh_result_sql, rc.row);
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
	bool		warm = bool_arg(fcinfo, "warm", true);
	ModelLock	ml;
	MemoryContext here = CurrentMemoryContext;
	const char *outer = row_statement_func;

	if (strcmp(on_error, "raise") != 0 && strcmp(on_error, "record") != 0)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("invalid on_error \"%s\"", on_error),
				 errhint("Use 'raise' (a failed refresh is an error) or 'record' (it is recorded in the model's history, with a WARNING).")));
	InitMaterializedSRF(fcinfo, 0);
	/* Lock first, then read: a refresh that waited starts from the model the other one stored. */
	model_lock(&ml, model, MODEL_LOCK_WRITE, wait, false);
	if (!ml.present)
		model_missing_error(model, ml.schema, ml.base, NULL);
	(void) model_lock_history(&ml, MODEL_LOCK_WRITE, wait);
	/* a read nested in it reports as perpca_refresh (row_reader.c) */
	row_statement_func = "perpca_refresh";
	PG_TRY();
	{
		int			nestlevel = write_begin();

		refresh_run(fcinfo, &ml, model, warm, strcmp(on_error, "record") == 0);
		write_end(nestlevel);
	}
	PG_CATCH();
	{
		row_statement_func = outer;
		row_rethrow("The model reads its query with missing => 'error' (its options); train it again "
					"with missing => 'skip' and replace => true to leave out rows with gaps.", here);
	}
	PG_END_TRY();
	row_statement_func = outer;
	return (Datum) 0;
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
				(errcode(PERPCA_ERRCODE_NOT_ONE_SELECT),
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
