/*
 * model_store.c -- a model's tables made and kept to the declared schema
 * (model_schema.c): a new model's tables, the history of a model that has
 * none, the columns an older model lacks
 *
 *   perpca_internal.model_create(schema, base)
 *   perpca_internal.history_create(schema, base)
 *   perpca_internal.model_columns_add(schema, base, tbl)
 *
 * Each runs its DDL as the current user (the model's owner on the write
 * path, run_as_owner.c) with search_path = pg_catalog, pg_temp; PostgreSQL
 * checks CREATE on the schema and ownership of the table as for any DDL.
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#include "model_schema.h"

PG_FUNCTION_INFO_V1(perpca_model_create);
PG_FUNCTION_INFO_V1(perpca_history_create);
PG_FUNCTION_INFO_V1(perpca_model_columns_add);

/* The OID of table t of model schema.base, or InvalidOid. */
static Oid
model_table_oid(ModelTable t, const char *schema, const char *base)
{
	Oid			nsp = get_namespace_oid(schema, true);

	if (!OidIsValid(nsp))
		return InvalidOid;
	return get_relname_relid(psprintf("%s_%s", base, model_table_suffix(t)), nsp);
}

/* Connect to SPI with search_path = pg_catalog, pg_temp; the GUC nest level to close. */
static int
store_begin(void)
{
	int			nestlevel = NewGUCNestLevel();

	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	return nestlevel;
}

static void
store_end(int nestlevel)
{
	SPI_finish();
	AtEOXact_GUC(true, nestlevel);
}

/* The history table of schema.base, unless there is one: a model trained again continues its history. */
static void
history_create(const char *schema, const char *base)
{
	if (!OidIsValid(model_table_oid(MODEL_TABLE_HISTORY, schema, base)))
		model_schema_create(MODEL_TABLE_HISTORY, schema, base);
}

/* perpca_internal.model_create(schema_name text, base text): a new model's three tables and its history. */
Datum
perpca_model_create(PG_FUNCTION_ARGS)
{
	char	   *schema = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *base = text_to_cstring(PG_GETARG_TEXT_PP(1));
	int			nestlevel = store_begin();

	model_schema_create(MODEL_TABLE_COMPONENTS, schema, base);
	model_schema_create(MODEL_TABLE_CLIENTS, schema, base);
	model_schema_create(MODEL_TABLE_INFO, schema, base);
	history_create(schema, base);
	store_end(nestlevel);
	PG_RETURN_VOID();
}

/* perpca_internal.history_create(schema_name text, base text): the history table, unless it exists. */
Datum
perpca_history_create(PG_FUNCTION_ARGS)
{
	char	   *schema = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *base = text_to_cstring(PG_GETARG_TEXT_PP(1));
	int			nestlevel = store_begin();

	history_create(schema, base);
	store_end(nestlevel);
	PG_RETURN_VOID();
}

/*
 * perpca_internal.model_columns_add(schema_name text, base text, tbl text)
 * RETURNS boolean: adds to the model's table tbl ('info', 'clients',
 * 'components', 'history') the declared columns it lacks; whether it added
 * any (false too when the table does not exist).
 */
Datum
perpca_model_columns_add(PG_FUNCTION_ARGS)
{
	char	   *schema = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *base = text_to_cstring(PG_GETARG_TEXT_PP(1));
	ModelTable	t = model_table_by_suffix(text_to_cstring(PG_GETARG_TEXT_PP(2)));
	Oid			relid = model_table_oid(t, schema, base);
	int			nestlevel;
	bool		added;

	if (!OidIsValid(relid))
		PG_RETURN_BOOL(false);
	nestlevel = store_begin();
	added = model_schema_add_missing(t, relid);
	store_end(nestlevel);
	PG_RETURN_BOOL(added);
}
