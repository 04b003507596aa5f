/*
 * model_write.c -- perpca_train() and perpca_refresh()
 *
 * As the caller: the model's name is resolved, the options and query
 * checked, the caller's search_path recorded, the model locked
 * (model_lock.c) and the temporary stage made.  As the model's owner
 * (run_as_owner.c): train binds the query once in the view <model>_source
 * with that search_path, as CREATE MATERIALIZED VIEW binds its query; train
 * and every refresh read that view, fit, and write the tables and the
 * history (model_store.c).  No refresh parses the text again.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_collation.h"
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
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/plancache.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/array.h"

#include "calibrate.h"
#include "calibrate_split.h"
#include "error_kinds.h"
#include "fit_options.h"
#include "fit_sql.h"
#include "model_lock.h"
#include "model_read.h"
#include "model_store.h"
#include "perpca.h"
#include "row_reader.h"
#include "run_as_owner.h"

PG_FUNCTION_INFO_V1(perpca_train);
PG_FUNCTION_INFO_V1(perpca_refresh);
/* Named by the SQL of 0.3.0, which runs until ALTER EXTENSION UPDATE. */
PG_FUNCTION_INFO_V1(perpca_query_shape);

/*
 * The caller's search_path as the names of its schemas that exist ("$user"
 * resolved), without the session's temporary schema: what a model's query
 * runs with, at train and at every refresh.
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

/* The argument named name, NULL (*isnull) when absent. */
static Datum
arg_named(FunctionCallInfo fcinfo, const char *name, bool *isnull)
{
	int			i = arg_position(fcinfo, name);

	*isnull = i < 0 || i >= PG_NARGS() || PG_ARGISNULL(i);
	return *isnull ? (Datum) 0 : PG_GETARG_DATUM(i);
}

/* A non-NULL text argument by name, or 22004. */
static char *
text_arg(FunctionCallInfo fcinfo, const char *name)
{
	bool		isnull;
	Datum		v = arg_named(fcinfo, name, &isnull);

	if (isnull)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NULL),
				 errmsg("argument \"%s\" must not be NULL", name)));
	return TextDatumGetCString(v);
}

/* A boolean argument by name; dflt when NULL. */
static bool
bool_arg(FunctionCallInfo fcinfo, const char *name, bool dflt)
{
	bool		isnull;
	Datum		v = arg_named(fcinfo, name, &isnull);

	return isnull ? dflt : DatumGetBool(v);
}

/* ------------------------------------------------------------------------
 * What train and refresh share
 * ------------------------------------------------------------------------
 */

/* The write's SPI connection, with search_path = path (a write's: pg_catalog, pg_temp); the GUC level to close. */
static int
write_begin(const char *path)
{
	int			nestlevel = NewGUCNestLevel();

	(void) set_config_option("search_path", path, PGC_USERSET, PGC_S_SESSION,
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

/* Whether two text arrays differ (dimensions, bounds, elements bytewise, NULLs: IS DISTINCT FROM). */
static bool
names_differ(Datum a, Datum b)
{
	FmgrInfo	eq;

	fmgr_info(F_ARRAY_EQ, &eq);
	return !DatumGetBool(FunctionCall2Coll(&eq, C_COLLATION_OID, a, b));
}

/* A text[] as text. */
static char *
names_text(Datum names)
{
	Oid			out;
	bool		varlena;

	getTypeOutputInfo(TEXTARRAYOID, &out, &varlena);
	return OidOutputFunctionCall(out, names);
}

/* ------------------------------------------------------------------------
 * The history row of a fit
 * ------------------------------------------------------------------------
 */

/* The row's kind, time (now), seconds since start and the role that called. */
static void
history_done(ModelRow *row, const char *kind, TimestampTz start, const char *role)
{
	TimestampTz now = GetCurrentTimestamp();

	model_row_set(row, "at", TimestampTzGetDatum(now), false);
	model_row_set(row, "kind", CStringGetTextDatum(kind), false);
	model_row_set(row, "seconds", Float8GetDatum((double) (now - start) / USECS_PER_SEC), false);
	model_row_set(row, "role", DirectFunctionCall1(namein, CStringGetDatum(role)), false);
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
	FitOptions	opts;
	bool		replace;
	const char *path;
	Datum		names;			/* text[] */
	bool		names_null;
	double		calibration;	/* share of rows held out (calibrate.c), 0: none */
} TrainCall;

/* The feature names: a query of feature columns names them, and feature_names, when given too, must agree. */
static void
train_names(const TrainCall *tc, Stage *st)
{
	if (st->names_null)
	{
		st->names = tc->names;
		st->names_null = tc->names_null;
		return;
	}
	if (!tc->names_null && names_differ(st->names, tc->names))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("feature_names differ from the names of the query's feature columns"),
				 errdetail("The query's feature columns are %s; feature_names are %s.",
						   names_text(st->names), names_text(tc->names)),
				 errhint("Name the columns in the query instead (SELECT client, a AS name, ...): every refresh reads the names from it.")));
}

/* The train's rows as perpca_train returns them. */
static void
train_result(FunctionCallInfo fcinfo, const char *base, const FitDiagnostics *diag)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		values[7];
	bool		nulls[7] = {0};

	values[0] = CStringGetTextDatum(base);
	values[1] = Int32GetDatum(diag->dim);
	values[2] = Int32GetDatum(diag->n_clients);
	values[3] = Int32GetDatum(diag->rounds);
	values[4] = BoolGetDatum(diag->converged);
	values[5] = fit_sql_float(diag->objective, &nulls[5]);
	values[6] = fit_sql_float(diag->theta_est, &nulls[6]);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * The body of perpca_train (the model is locked, ml): stage the query as
 * the caller the way a refresh will run it, then bind, read, fit, store and
 * append to the history as the model's owner.
 */
static void
train_run(FunctionCallInfo fcinfo, const ModelLock *ml, TrainCall *tc)
{
	Oid			owner = ml->present ? ml->owner : GetUserId();
	TimestampTz start = GetCurrentTimestamp();
	StoreModel	sm;
	RunAs		ra;
	Stage		st = {.names_null = true};
	StoreFit	fit;

	/* (model_lock checked that the caller has the privileges of an existing model's owner) */
	if (ml->present && !tc->replace)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_MODEL_EXISTS),
				 errmsg("model \"%s\" already exists", tc->model),
				 errhint("Pass replace => true to replace it, or drop it with perpca_drop().")));
	store_model_init(&sm, ml->schema, ml->base);
	sm.calibration = tc->calibration;
	if (tc->opts.start != NULL)
	{
		store_stage_start(tc->opts.start, owner, tc->path);
		tc->opts.start = "SELECT * FROM pg_temp.perpca_train_start";
	}
	store_stage_create(&sm, owner);
	/* The query is bound once, by the owner, with the caller's search_path, and read as every refresh will read it. */
	run_as_enter(&ra, owner);
	store_source_bind(&sm, tc->query, tc->path, tc->opts.missing, &st);
	calibrate_bind_rows(&sm, perpca_one_select(tc->query, "the query of a model"), tc->path, tc->calibration);
	store_stage_fill(&sm, tc->opts.missing, &st);
	train_names(tc, &st);
	store_fit(&sm, tc->query, tc->path, &tc->opts, &st, &fit);
	calibrate_after_fit(&sm, tc->calibration);
	run_as_leave(&ra);
	history_done(&fit.history, "train", start, GetUserNameFromId(GetUserId(), false));
	run_as_enter(&ra, owner);
	store_history_append(&sm, &fit.history);
	run_as_leave(&ra);
	train_result(fcinfo, sm.base, &fit.diag);
	store_stage_drop();
}

/* The arguments of a train: every option is checked before anything runs or is locked. */
static void
train_call(FunctionCallInfo fcinfo, TrainCall *tc)
{
	bool		isnull;
	Datum		share = arg_named(fcinfo, "calibration", &isnull);

	tc->model = text_arg(fcinfo, "model");
	tc->query = text_arg(fcinfo, "query");
	fit_options_parse(fit_options_from_call(fcinfo), &tc->opts);
	(void) perpca_one_select(tc->query, "the query of a model");
	if (tc->opts.start != NULL)
		(void) perpca_one_select(tc->opts.start, "start query");
	tc->replace = bool_arg(fcinfo, "replace", false);
	tc->calibration = calibrate_share(isnull ? 0.0 : DatumGetFloat8(share));
	tc->path = caller_search_path();
	tc->names = arg_named(fcinfo, "feature_names", &tc->names_null);
}

/*
 * perpca_train(model, query, n_global, n_local, <fit options>, replace)
 *   RETURNS TABLE (model_name, d, n_clients, rounds_run, converged, objective, theta_est)
 */
Datum
perpca_train(PG_FUNCTION_ARGS)
{
	TrainCall	tc;
	ModelLock	ml;
	MemoryContext here = CurrentMemoryContext;
	const char *outer = row_statement_func;
	char	   *hint = row_skip_hint("perpca_train");

	train_call(fcinfo, &tc);
	InitMaterializedSRF(fcinfo, 0);
	/* Lock first, then look: of sessions creating one model at once, one
	 * creates it and the others find it (and replace it, or fail cleanly). */
	model_lock(&ml, tc.model, MODEL_LOCK_WRITE, true, true);	/* may create it */
	(void) model_lock_history(&ml, MODEL_LOCK_WRITE, true);
	/* a read nested in it reports as perpca_train (row_reader.c) */
	row_statement_func = "perpca_train";
	PG_TRY();
	{
		int			nestlevel = write_begin("pg_catalog, pg_temp");

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

/* A refresh: the model, the warm flag, its start and caller, what happened (r) and the row appended. */
typedef struct RefreshCall
{
	StoreModel	sm;
	Oid			owner;
	bool		warm;
	TimestampTz start;
	const char *role;			/* the caller's name */
	ModelRow	r;				/* a history row without kind, at, seconds, role */
	ModelRow	row;			/* r as appended, with its entry */
} RefreshCall;

/* What the body of a refresh read from the stored model (its info row). */
typedef struct RefreshModel
{
	ModelRow	info;			/* a column the table lacks is NULL */
	FitOptions	opts;
	Jsonb	   *options;		/* as the fit reads them */
	char	   *path;
	char	   *query;
	bool		current;		/* of the current form: an unchanged refresh may skip the fit */
} RefreshModel;

/* Column name of the stored info row, NULL when absent (a model stored before it). */
static Datum
info_value(const RefreshModel *rm, const char *name, bool *isnull)
{
	Datum		v;

	(void) model_row_get(&rm->info, name, &v, isnull);
	return v;
}

/*
 * The options of a stored model as the fit reads them: its options (0.2.0
 * on), or its 0.1.0 option columns (rounds_max: rounds), with its ranks.
 */
static Jsonb *
refresh_options(const RefreshModel *rm)
{
	static const char *const cols[] = {"n_global", "n_local", "method", "rounds_max", "tolerance", "step",
	"adaptive", "update", "retraction", "init", "seed", "center", "weights"};
	StringInfoData buf;
	bool		isnull;
	Datum		options = info_value(rm, "options", &isnull);
	bool		stored = !isnull;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	for (int i = 0; i < (stored ? 2 : (int) lengthof(cols)); i++)
	{
		Oid			type = model_schema_column(MODEL_TABLE_INFO, cols[i]).type;
		Datum		v = info_value(rm, cols[i], &isnull);
		Oid			out;
		bool		varlena;

		if (isnull)
			continue;
		appendStringInfoString(&buf, buf.len > 1 ? ", " : "");
		escape_json(&buf, strcmp(cols[i], "rounds_max") == 0 ? "rounds" : cols[i]);
		appendStringInfoString(&buf, ": ");
		getTypeOutputInfo(type, &out, &varlena);
		if (type == TEXTOID)
			escape_json(&buf, TextDatumGetCString(v));
		else
			appendStringInfoString(&buf, type == BOOLOID ? (DatumGetBool(v) ? "true" : "false") : OidOutputFunctionCall(out, v));
	}
	appendStringInfoChar(&buf, '}');
	options = stored ? DirectFunctionCall2(jsonb_concat, options, DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data)))
		: DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data));
	return DatumGetJsonbP(options);
}

/* Whether table suffix of the model has column name. */
static bool
has_column(const RefreshCall *rc, const char *suffix, const char *name)
{
	Oid			rel = get_relname_relid(psprintf("%s_%s", rc->sm.base, suffix), get_namespace_oid(rc->sm.schema, false));

	return get_attnum(rel, name) != InvalidAttrNumber;
}

/* Whether an unchanged refresh may skip the fit: a model of the current form (warm). */
static bool
refresh_current(const RefreshCall *rc, const RefreshModel *rm)
{
	static const char *const needed[] = {"options", "client_type", "scale_factors", "constant_features",
	"search_path", "feature_names", "stats_digest"};
	bool		isnull;

	if (!rc->warm || (info_value(rm, "options", &isnull), isnull))
		return false;
	for (int i = 0; i < (int) lengthof(needed); i++)
		if (!has_column(rc, "info", needed[i]))
			return false;
	return has_column(rc, "clients", "residual_moments");
}

/* The stored model: its info row, options, search_path and query. */
static void
refresh_read(RefreshCall *rc, RefreshModel *rm)
{
	bool		isnull;
	Datum		v;

	store_sql(psprintf("SELECT * FROM %s i", store_rel(&rc->sm, "info")), 0, NULL, NULL, NULL);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_MODEL_DAMAGED),
				 errmsg("query returned %s row", SPI_processed == 0 ? "no" : "more than one")));
	model_row_from_tuple(&rm->info, MODEL_TABLE_INFO, SPI_tuptable->vals[0], SPI_tuptable->tupdesc);
	rm->options = refresh_options(rm);
	fit_options_parse(rm->options, &rm->opts);
	v = info_value(rm, "search_path", &isnull);
	rm->path = isnull ? psprintf("pg_catalog, %s", rc->sm.ext) : TextDatumGetCString(v);
	rm->query = TextDatumGetCString(info_value(rm, "source_query", &isnull));
	/* (before a model stored before 0.4.0 gets the columns it lacks) */
	rm->current = refresh_current(rc, rm);
}

/* The row of an unchanged refresh into rc->r, or false when the staged statistics differ from the stored ones. */
static bool
refresh_unchanged(RefreshCall *rc, const RefreshModel *rm, const Stage *st)
{
	bool		isnull;
	Datum		stored = info_value(rm, "stats_digest", &isnull);
	char	   *digest;

	/* (personalized clients are not in the query: a refresh drops them, so it fits) */
	store_sql(psprintf("SELECT FROM %s c WHERE c.source = 'personalize' LIMIT 1", store_rel(&rc->sm, "clients")),
			  0, NULL, NULL, NULL);
	if (SPI_processed > 0 || isnull)
		return false;
	digest = store_digest(st, info_value(rm, "options", &isnull), st->names, st->names_null);
	if (strcmp(digest, TextDatumGetCString(stored)) != 0)
		return false;
	/* the stored figures (the digest is the same) */
	model_row_history_of(&rc->r, &rm->info);
	model_row_set(&rc->r, "outcome", CStringGetTextDatum("unchanged"), false);
	model_row_set(&rc->r, "rows", Int64GetDatum(store_stage_rows(st)), false);
	model_row_set(&rc->r, "rounds_run", Int32GetDatum(0), false);
	model_row_set(&rc->r, "clients_added", Int32GetDatum(0), false);
	model_row_set(&rc->r, "clients_dropped", Int32GetDatum(0), false);
	model_row_set(&rc->r, "warning", CStringGetTextDatum("unchanged: the statistics, options and feature names are those of the stored model; nothing was fitted"), false);
	return true;
}

/* The keys of the clients of the model, sorted bytewise (*n of them). */
static char **
refresh_clients(const RefreshCall *rc, int *n)
{
	char	  **keys;

	store_sql(psprintf("SELECT c.client FROM %s c ORDER BY c.client COLLATE \"C\"", store_rel(&rc->sm, "clients")),
			  0, NULL, NULL, NULL);
	*n = (int) SPI_processed;
	keys = palloc(sizeof(char *) * Max(*n, 1));
	for (int i = 0; i < *n; i++)
	{
		bool		isnull;

		keys[i] = TextDatumGetCString(heap_getattr(SPI_tuptable->vals[i], 1, SPI_tuptable->tupdesc, &isnull));
	}
	return keys;
}

/* How many of the n keys a (sorted) are not among the staged clients of at least one row (or, with added, the other way). */
static int
clients_moved(char **a, int n, const Stage *st, bool added)
{
	int			moved = 0,
				i = 0;

	for (int j = 0; j < st->n; j++)
	{
		const char *key = st->c[j].key;

		if (st->c[j].stats == NULL || st->c[j].stats->n == 0)
			continue;
		while (i < n && strcmp(a[i], key) < 0)
			moved += !added, i++;
		if (i < n && strcmp(a[i], key) == 0)
			i++;
		else
			moved += added;
	}
	return moved + (added ? 0 : n - i);
}

/*
 * warm: the stored U is one of the L-BFGS solver's starts (init 'best' keeps
 * the best); the paper's solver continues from it.  Otherwise a given start
 * is not given again.  Whether the stored U starts the fit.
 */
static bool
refresh_start(RefreshCall *rc, RefreshModel *rm)
{
	bool		use_start = rc->warm && rm->opts.method == FIT_METHOD_PERPCA;

	if (!use_start && rm->opts.init == FIT_INIT_GIVEN)
		fit_options_parse(DatumGetJsonbP(DirectFunctionCall2(jsonb_delete, JsonbPGetDatum(rm->options),
															 CStringGetTextDatum("init"))), &rm->opts);
	if (use_start)
		rm->opts.init = fit_solvers[rm->opts.solver].warm_given ? FIT_INIT_GIVEN : FIT_INIT_BEST;
	rm->opts.start = use_start ? psprintf("SELECT client, kind, component, pc FROM %s",
										  store_rel(&rc->sm, "components")) : NULL;
	rm->opts.verbose = false;
	return use_start;
}

/*
 * The refresh itself, as the model's owner (a model stored before 0.4.0
 * has its text bound first, once): unchanged statistics are not fitted
 * again (when warm).  rc->r: what happened.
 */
static void
refresh_body(void *arg)
{
	RefreshCall *rc = arg;
	RefreshModel rm;
	Stage		st = {.names_null = true},
				bound = {.names_null = true};
	StoreFit	fit;
	Datum		calibration;
	bool		isnull,
				use_start;
	char	  **before;
	int			nbefore;

	refresh_read(rc, &rm);
	(void) info_value(&rm, "source_view", &isnull);
	if (isnull)
	{
		store_source_bind_stored(&rc->sm, rm.query, rm.path, rm.opts.missing, &bound);
		store_columns_add(&rc->sm, MODEL_TABLE_INFO);
		store_sql(psprintf("UPDATE %s SET source_view = $1", store_rel(&rc->sm, "info")), 1, (Oid[]) {TEXTOID},
				  (Datum[]) {CStringGetTextDatum(store_rel(&rc->sm, "source"))}, NULL);
	}
	store_stage_fill(&rc->sm, rm.opts.missing, &st);
	/* A query of feature columns names the features at every refresh. */
	if (st.names_null)
		st.names = info_value(&rm, "feature_names", &st.names_null);
	if (rm.current && refresh_unchanged(rc, &rm, &st))
		return;
	before = refresh_clients(rc, &nbefore);
	use_start = refresh_start(rc, &rm);
	store_fit(&rc->sm, rm.query, rm.path, &rm.opts, &st, &fit);
	calibration = info_value(&rm, "calibration", &isnull);
	calibrate_after_fit(&rc->sm, isnull ? 0.0 : DatumGetFloat8(calibration));
	rc->r = fit.history;
	model_row_set(&rc->r, "clients_added", Int32GetDatum(clients_moved(before, nbefore, &st, true)), false);
	model_row_set(&rc->r, "clients_dropped", Int32GetDatum(clients_moved(before, nbefore, &st, false)), false);
	model_row_set(&rc->r, "warm_start", BoolGetDatum(use_start), false);
}

/* rc->r appended to the history, as the owner: rc->row. */
static void
refresh_append(void *arg)
{
	RefreshCall *rc = arg;

	rc->row = rc->r;
	history_done(&rc->row, "refresh", rc->start, rc->role);
	store_history_append(&rc->sm, &rc->row);
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
 * appended to the history as the owner, with a WARNING, which also says
 * when the owner's history refused that row too.
 */
static void
refresh_failed(RefreshCall *rc, const char *model, ErrorData *edata)
{
	const char *state = unpack_sql_state(edata->sqlerrcode);
	const char *message = edata->message ? edata->message : "";
	ErrorData  *hist;

	model_row_init(&rc->r, MODEL_TABLE_HISTORY);
	model_row_set(&rc->r, "outcome", CStringGetTextDatum("failed"), false);
	model_row_set(&rc->r, "rounds_run", Int32GetDatum(0), false);
	model_row_set(&rc->r, "converged", BoolGetDatum(false), false);
	model_row_set(&rc->r, "warm_start", BoolGetDatum(rc->warm), false);
	model_row_set(&rc->r, "warning", CStringGetTextDatum(psprintf("failed: %s: %s", state, message)), false);
	if (run_as_caught_call(rc->owner, refresh_append, rc, &hist))
	{
		ereport(WARNING,
				(errmsg("refresh of model \"%s\" failed: %s", model, message),
				 errdetail("SQLSTATE %s. The model is unchanged; the failure is in its history.", state),
				 errhint("SELECT * FROM perpca_model_history(%s) shows it.", quote_literal_cstr(model))));
		return;
	}
	rc->row = rc->r;
	history_done(&rc->row, "refresh", rc->start, rc->role);
	ereport(WARNING,
			(errmsg("refresh of model \"%s\" failed: %s", model, message),
			 errdetail("SQLSTATE %s. The model is unchanged; its history could not be written either: %s (SQLSTATE %s).",
					   state, hist->message ? hist->message : "", unpack_sql_state(hist->sqlerrcode)),
			 errhint("The row perpca_refresh returns is the refresh's outcome; the owner's triggers on %s refused it.",
					 store_rel(&rc->sm, "history"))));
}

/* The history row as perpca_refresh returns it: its columns, by name, from the history's (model_schema.c). */
static void
refresh_result(FunctionCallInfo fcinfo, const ModelRow *row)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TupleDesc	desc = rsinfo->setDesc;
	Datum	   *values = palloc(sizeof(Datum) * desc->natts);
	bool	   *nulls = palloc(sizeof(bool) * desc->natts);

	for (int i = 0; i < desc->natts; i++)
		if (!model_row_get(row, NameStr(TupleDescAttr(desc, i)->attname), &values[i], &nulls[i]))
			elog(ERROR, "the history declares no column \"%s\"", NameStr(TupleDescAttr(desc, i)->attname));
	tuplestore_putvalues(rsinfo->setResult, desc, values, nulls);
}

/*
 * The body of perpca_refresh (the model is locked): refit and append the
 * history row as the owner, in one subtransaction, and return the row.
 * With record, a failure (not an interrupt of the caller's statement:
 * run_as_caught_call) leaves the model as it was and is the history's row.
 */
static void
refresh_run(FunctionCallInfo fcinfo, const ModelLock *ml, const char *model, bool warm, bool record)
{
	RefreshCall rc = {.owner = ml->owner, .warm = warm, .start = GetCurrentTimestamp()};
	ErrorData  *edata;
	Datum		outcome;
	bool		isnull;

	store_model_init(&rc.sm, ml->schema, ml->base);
	rc.role = GetUserNameFromId(GetUserId(), false);
	store_stage_create(&rc.sm, ml->owner);
	if (!run_as_caught_call(ml->owner, refresh_whole, &rc, &edata))
	{
		if (!record)
			ReThrowError(edata);
		refresh_failed(&rc, model, edata);
	}
	store_stage_drop();
	(void) model_row_get(&rc.row, "outcome", &outcome, &isnull);
	if (strcmp(TextDatumGetCString(outcome), "unchanged") == 0)
		/* DEBUG1, not NOTICE: the history row is the record, and a nightly
		 * pg_cron refresh of unchanged data should not write to the server log */
		ereport(DEBUG1,
				(errmsg("model \"%s\" is unchanged: nothing was fitted", model),
				 errhint("perpca_refresh(..., warm => false) refits it anyway.")));
	refresh_result(fcinfo, &rc.row);
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
		int			nestlevel = write_begin("pg_catalog, pg_temp");

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
 * 0.3.0's perpca_internal.query_shape(query text, search_path text) RETURNS
 * jsonb: the result columns of query planned with search_path,
 * [{"name": .., "type": oid, "base": oid}] (base: the type under any domain).
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
	nestlevel = write_begin(path);
	/* As stage_fill runs it: the one query, as a subquery. */
	plan = SPI_prepare(psprintf("SELECT * FROM (%s\n) AS q", query), 0, NULL);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for the query of a model");
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
	write_end(nestlevel);
	result = DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data));
	PG_RETURN_DATUM(result);
}
