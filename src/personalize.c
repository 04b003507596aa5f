/*
 * personalize.c -- perpca_personalize() and perpca_personalize_clients():
 * local components for clients of a stored model, stored in the model
 *
 * The model is locked for writing (model_lock.c; the caller must have the
 * privileges of its owner) and read by the checked reader (model_read.c);
 * the key (its type's output function, as the fit stored keys), the
 * statistics and n_local (0 .. d - n_global; 0 keeps no local components)
 * are checked against it; the rows are computed and written by
 * model_store.c as the model's owner, restricted, with search_path =
 * pg_catalog, pg_temp (run_as_owner.c), as REFRESH MATERIALIZED VIEW runs
 * its query.  So nothing of the owner runs as the caller, and the caller's
 * search_path has no say.
 *
 * perpca_personalize takes one client's statistics and returns its rows;
 * perpca_personalize_clients a query of rows of any form the row reader
 * takes (or of statistics), read as the caller under missing => 'error' |
 * 'skip', one row per client.  A client with no rows stores nothing; rows
 * left out and groups without rows or variance are said in row_report's
 * one NOTICE; an error shows none of perpca's internal SQL as CONTEXT.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "parser/parse_coerce.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"

#include "client_key.h"
#include "error_kinds.h"
#include "fit_input.h"
#include "model_lock.h"
#include "model_read.h"
#include "model_store.h"
#include "perpca.h"
#include "row_reader.h"
#include "run_as_owner.h"
#include "stats.h"

PG_FUNCTION_INFO_V1(perpca_personalize);
PG_FUNCTION_INFO_V1(perpca_personalize_clients);

/* perpca_personalize(model, client, stats, n_local) */
#define ARG_MODEL 0
#define ARG_CLIENT 1
#define ARG_STATS 2
#define ARG_NLOCAL 3
/* perpca_personalize_clients(model, query, n_local, missing) */
#define ARG_QUERY 1
#define ARG_Q_NLOCAL 2
#define ARG_MISSING 3

/* A key of this type can match the model's keys: its own type, or any string (keys are stored as text). */
static void
key_type_check(Oid type, const ModelData *m, const char *model)
{
	const char *model_type = m->client_type ? m->client_type : "text";

	if (TypeCategory(type) != TYPCATEGORY_STRING && strcmp(format_type_be(type), model_type) != 0)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_WRONG_TYPE),
				 errmsg("client key of type %s cannot match model \"%s\"", format_type_be(type), model),
				 errdetail("The model was trained on client keys of type %s.", model_type),
				 errhint("Pass the key as %s (or as text).", model_type)));
}

/* The key as the model stores it (client_key.c), checked against the model's key type. */
static char *
personalize_key(FunctionCallInfo fcinfo, const ModelData *m, const char *model)
{
	Oid			type = get_fn_expr_argtype(fcinfo->flinfo, ARG_CLIENT);

	if (!OidIsValid(type))
		elog(ERROR, "could not determine the type of the client key");
	key_type_check(type, m, model);
	return client_key_text_of(type, PG_GETARG_DATUM(ARG_CLIENT));
}

/*
 * Compute and store one client's local components (n_local < 0: the
 * model's) as the model's owner, restricted (run_as_owner.c), through the
 * one module that writes models (model_store.c); its rows go into out when
 * not NULL.  Returns the number of local components stored.
 */
static uint64
personalize_as_owner(const ModelLock *ml, const ModelData *m, const char *key, PerpcaStats *stats,
					 int n_local, Tuplestorestate *out)
{
	StoreModel	sm;
	RunAs		ra;
	int			nestlevel = NewGUCNestLevel();
	uint64		stored;

	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	store_model_init(&sm, ml->schema, ml->base);
	run_as_enter(&ra, ml->owner);
	stored = store_personalize(&sm, m, key, stats, n_local, out);
	run_as_leave(&ra);
	SPI_finish();
	AtEOXact_GUC(true, nestlevel);
	return stored;
}

/* Statistics checked against the model. */
static void
personalize_check(const PerpcaStats *s, const ModelData *m)
{
	perpca_stats_validate(s);
	if (s->dim != m->d)
		perpca_dim_mismatch(m->d, s->dim, "stats");
}

/* The n_local argument argno, checked against the model: -1 for NULL (the model's). */
static int
n_local_arg(FunctionCallInfo fcinfo, int argno, const ModelData *m)
{
	int			n_local = PG_ARGISNULL(argno) ? -1 : PG_GETARG_INT32(argno);

	if (!PG_ARGISNULL(argno) && (n_local < 0 || n_local > m->d - m->r1))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("n_local must be between 0 and %d, not %d", m->d - m->r1, n_local),
				 errdetail("The local components live in the %d-dimensional complement of the model's %d global components.",
						   m->d - m->r1, m->r1),
				 errhint("Pass n_local => 0 to keep no local components for this client.")));
	return n_local;
}

/* The model argument (not NULL) locked for writing, and read; then the other arguments checked for NULL. */
static ModelData *
personalize_open(FunctionCallInfo fcinfo, bool query, ModelLock *ml, char **model)
{
	ModelData  *m;

	if (PG_ARGISNULL(ARG_MODEL))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NULL),
				 errmsg("model must not be NULL")));
	*model = text_to_cstring(PG_GETARG_TEXT_PP(ARG_MODEL));
	InitMaterializedSRF(fcinfo, 0);
	model_lock(ml, *model, MODEL_LOCK_WRITE, true, false);
	if (query ? PG_ARGISNULL(ARG_QUERY) : PG_ARGISNULL(ARG_CLIENT) || PG_ARGISNULL(ARG_STATS))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NULL),
				 errmsg(query ? "query must not be NULL" : "client and stats must not be NULL")));
	m = model_open(PG_GETARG_TEXT_PP(ARG_MODEL));
	m->refcount++;
	return m;
}

/* One client's statistics: checked, stored unless they hold no rows, reported. */
static void
personalize_stats(FunctionCallInfo fcinfo, const ModelLock *ml, const ModelData *m, const char *model)
{
	char	   *key = personalize_key(fcinfo, m, model);
	PerpcaStats *s = PG_GETARG_PERPCA_STATS(ARG_STATS);
	RowReport	report = {0};
	int			n_local;

	personalize_check(s, m);
	n_local = n_local_arg(fcinfo, ARG_NLOCAL, m);
	if (s->n > 0)
		(void) personalize_as_owner(ml, m, key, s, n_local, ((ReturnSetInfo *) fcinfo->resultinfo)->setResult);
	row_report_group(&report, key, s->n, perpca_stats_skipped(s), perpca_stats_flat(s));
	row_report("perpca_personalize", &report);
}

/* qsort: clients in the byte order of their keys (the order of perpca_evaluate's rows). */
static int
client_cmp(const void *a, const void *b)
{
	return strcmp(((const ClientInput *) a)->name, ((const ClientInput *) b)->name);
}

/*
 * The clients of a query, read as the caller (row_reader.c: any form, under
 * mode; row_report's NOTICE), each stored unless it has no rows: one row per
 * client (client, n, skipped, local_components).
 */
static void
personalize_clients(FunctionCallInfo fcinfo, const ModelLock *ml, const ModelData *m, const char *model)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *query = text_to_cstring(PG_GETARG_TEXT_PP(ARG_QUERY));
	int			n_local = n_local_arg(fcinfo, ARG_Q_NLOCAL, m);
	PerpcaMissing mode = row_missing_arg(fcinfo, ARG_MISSING, PERPCA_MISSING_ERROR);
	RowSource	src;
	ClientInput *in;
	int			n;
	int64		skipped;

	row_source_open(&src, query, "query", mode);
	key_type_check(src.types[0], m, model);
	in = clients_read(&src, &(ClientsRead) {n_local, true, "perpca_personalize_clients", true, false},
					  CurrentMemoryContext, &n, &skipped);
	if (n > 1)
		qsort(in, n, sizeof(ClientInput), client_cmp);
	for (int i = 0; i < n; i++)
	{
		Datum		values[4];
		bool		nulls[4] = {false, false, false, false};

		if (in[i].stats != NULL)
			personalize_check(in[i].stats, m);
		values[0] = CStringGetTextDatum(in[i].name);
		values[1] = Int64GetDatum(in[i].stats ? in[i].stats->n : 0);
		values[2] = Int64GetDatum(in[i].skipped);
		values[3] = Int32GetDatum(in[i].stats ? (int32) personalize_as_owner(ml, m, in[i].name, in[i].stats,
																			  n_local, NULL) : 0);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/* Either form, the model released and any error shown without perpca's internal SQL. */
static Datum
personalize_run(FunctionCallInfo fcinfo, bool query)
{
	char	   *model;
	ModelLock	ml;
	ModelData  *m;
	MemoryContext here = CurrentMemoryContext;

	if (query && row_missing_arg(fcinfo, ARG_MISSING, PERPCA_MISSING_ERROR) == PERPCA_MISSING_OBSERVED)
		row_missing_refuse(PERPCA_MISSING_OBSERVED, "perpca_personalize_clients",
						   "It computes a client's local components from the statistics of its complete rows.",
						   "Pass missing => 'skip' to leave out rows with gaps and count them.");
	m = personalize_open(fcinfo, query, &ml, &model);
	PG_TRY();
	{
		if (query)
			personalize_clients(fcinfo, &ml, m, model);
		else
			personalize_stats(fcinfo, &ml, m, model);
	}
	PG_CATCH();
	{
		model_unref(m);
		row_rethrow(NULL, here);
	}
	PG_END_TRY();
	model_unref(m);
	return (Datum) 0;
}

/*
 * perpca_personalize(model text, client text | anyelement, stats perpca_stats,
 *     n_local int DEFAULT NULL) RETURNS TABLE (component int, pc float8[], variance float8)
 */
Datum
perpca_personalize(PG_FUNCTION_ARGS)
{
	return personalize_run(fcinfo, false);
}

/*
 * perpca_personalize_clients(model text, query text, n_local int DEFAULT NULL,
 *     missing text DEFAULT 'error') RETURNS TABLE (client text, n bigint,
 *     skipped bigint, local_components int)
 */
Datum
perpca_personalize_clients(PG_FUNCTION_ARGS)
{
	return personalize_run(fcinfo, true);
}
