/*
 * personalize.c -- perpca_personalize(): local components for one client of
 * a stored model, stored in the model
 *
 * Everything the caller's side needs is done here in C, so nothing of the
 * model's owner runs as the caller and the caller's search_path has no say:
 *
 *   1. the model is locked for writing (model_lock.c: the one lock order;
 *      the caller must have the privileges of the model's owner);
 *   2. its dimension, key type and scale factors are read by the checked
 *      reader (model_read.c: plain tables of one owner, from the heap);
 *   3. the key (its type's output function, as the fit stored keys), the
 *      statistics and n_local (0 .. d - n_global; 0 keeps no local
 *      components for the client) are checked against them;
 *   4. the rows are computed and written as the model's owner, inside a
 *      security-restricted operation with search_path = pg_catalog, pg_temp
 *      (run_as_owner.c), as REFRESH MATERIALIZED VIEW runs its query, by
 *      the one module that writes models (model_store.c); they are returned.
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

#include "error_kinds.h"
#include "model_lock.h"
#include "model_read.h"
#include "model_store.h"
#include "perpca.h"
#include "row_reader.h"
#include "run_as_owner.h"
#include "stats.h"

PG_FUNCTION_INFO_V1(perpca_personalize);

#define ARG_MODEL 0
#define ARG_CLIENT 1
#define ARG_STATS 2
#define ARG_NLOCAL 3

/* The key as text: the type's output function (what the fit stored), checked against the model's key type. */
static char *
personalize_key(FunctionCallInfo fcinfo, const ModelData *m, const char *model)
{
	Oid			type = get_fn_expr_argtype(fcinfo->flinfo, ARG_CLIENT);
	const char *model_type = m->client_type ? m->client_type : "text";
	Oid			out;
	bool		varlena;

	if (!OidIsValid(type))
		elog(ERROR, "could not determine the type of the client key");
	/* A string key matches any model (keys are stored as text, as 0.1.0 required them). */
	if (TypeCategory(type) != TYPCATEGORY_STRING && strcmp(format_type_be(type), model_type) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("client key of type %s cannot match model \"%s\"", format_type_be(type), model),
				 errdetail("The model was trained on client keys of type %s.", model_type),
				 errhint("Pass the key as %s (or as text).", model_type)));
	getTypeOutputInfo(type, &out, &varlena);
	return OidOutputFunctionCall(out, PG_GETARG_DATUM(ARG_CLIENT));
}

/* The model's scale factors as a float8[] datum, or NULL (unscaled). */
static Datum
scale_datum(const ModelData *m, char *null)
{
	*null = m->scale ? ' ' : 'n';
	return m->scale ? PointerGetDatum(perpca_vector_build(m->scale, m->d)) : (Datum) 0;
}

/*
 * Compute and store the client's local components as the model's owner,
 * restricted (run_as_owner.c), through the one module that writes models
 * (model_store.c), and put them into the result.
 */
static void
personalize_as_owner(FunctionCallInfo fcinfo, const ModelLock *ml, const ModelData *m, const char *key)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	StoreModel	sm;
	RunAs		ra;
	char		scale_null;
	Datum		scale = scale_datum(m, &scale_null);
	int			nestlevel = NewGUCNestLevel();

	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	store_model_init(&sm, ml->schema, ml->base);
	run_as_enter(&ra, ml->owner);
	store_personalize(&sm, key, get_fn_expr_argtype(fcinfo->flinfo, ARG_STATS), PG_GETARG_DATUM(ARG_STATS),
					  PG_ARGISNULL(ARG_NLOCAL) ? (Datum) 0 : PG_GETARG_DATUM(ARG_NLOCAL), PG_ARGISNULL(ARG_NLOCAL),
					  scale, scale_null == 'n', rsinfo->setResult);
	run_as_leave(&ra);
	SPI_finish();
	AtEOXact_GUC(true, nestlevel);
}

/* The statistics and n_local of a call, checked against the model. */
static void
personalize_check(FunctionCallInfo fcinfo, const ModelData *m)
{
	PerpcaStats *s = PG_GETARG_PERPCA_STATS(ARG_STATS);

	perpca_stats_validate(s);
	if (s->dim != m->d)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_DIMENSION),
				 errmsg("stats has dimension %d, expected %d", s->dim, m->d)));
	if (!PG_ARGISNULL(ARG_NLOCAL) &&
		(PG_GETARG_INT32(ARG_NLOCAL) < 0 || PG_GETARG_INT32(ARG_NLOCAL) > m->d - m->r1))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("n_local must be between 0 and %d, not %d", m->d - m->r1, PG_GETARG_INT32(ARG_NLOCAL)),
				 errdetail("The local components live in the %d-dimensional complement of the model's %d global components.",
						   m->d - m->r1, m->r1),
				 errhint("Pass n_local => 0 to keep no local components for this client.")));
}

/*
 * perpca_personalize(model text, client text | anyelement, stats perpca_stats,
 *     n_local int DEFAULT NULL) RETURNS TABLE (component int, pc float8[], variance float8)
 */
Datum
perpca_personalize(PG_FUNCTION_ARGS)
{
	char	   *model;
	ModelLock	ml;
	ModelData  *m;

	if (PG_ARGISNULL(ARG_MODEL))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NULL),
				 errmsg("model must not be NULL")));
	model = text_to_cstring(PG_GETARG_TEXT_PP(ARG_MODEL));
	InitMaterializedSRF(fcinfo, 0);
	model_lock(&ml, model, MODEL_LOCK_WRITE, true, false);
	if (PG_ARGISNULL(ARG_CLIENT) || PG_ARGISNULL(ARG_STATS))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NULL),
				 errmsg("client and stats must not be NULL")));
	m = model_open(PG_GETARG_TEXT_PP(ARG_MODEL));
	m->refcount++;
	PG_TRY();
	{
		char	   *key = personalize_key(fcinfo, m, model);

		personalize_check(fcinfo, m);
		if (PG_GETARG_PERPCA_STATS(ARG_STATS)->n > 0)
			personalize_as_owner(fcinfo, &ml, m, key);
		else
			row_report_groups("perpca_personalize", (const char *const *) &key, 1, "has no rows",
							  perpca_stats_skipped(PG_GETARG_PERPCA_STATS(ARG_STATS)) > 0
							  ? "Its statistics left out every row for missing values: nothing is stored, and the model scores it as a client it does not know."
							  : "Its statistics hold no rows: nothing is stored, and the model scores it as a client it does not know.");
	}
	PG_FINALLY();
	{
		model_unref(m);
	}
	PG_END_TRY();
	return (Datum) 0;
}
