/*
 * model_store.c -- the one module that writes a model's tables
 * (model_store.h)
 *
 * Train, refresh and personalize (model_write.c,
 * personalize.c) lock the model (model_lock.c), become its owner
 * (run_as_owner.c) and write it through the functions here, in this order
 * of tables: the view <model>_source (bound once), then info, clients and
 * components (swapped in one transaction), last the history.  The tables
 * come from the one declaration of their columns (model_schema.c).
 *
 * Every statement runs through SPI with search_path = pg_catalog, pg_temp
 * (run_as_enter sets it), names perpca's own functions schema-qualified
 * and calls no function of perpca_internal but the fit (which runs the
 * staged clients as the current user) and the pure scale_stats,
 * scale_vector and client_monitor_stats.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_database.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/varlena.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "calibrate_split.h"
#include "client_key.h"
#include "error_kinds.h"
#include "model_schema.h"
#include "model_store.h"
#include "perpca.h"
#include "row_reader.h"
#include "stats.h"

void
store_model_init(StoreModel *sm, const char *schema, const char *base)
{
	Oid			nsp = perpca_extension_schema();

	if (!OidIsValid(nsp))
		elog(ERROR, "extension perpca not found");
	sm->schema = schema;
	sm->base = base;
	sm->ext = quote_identifier(get_namespace_name(nsp));
	sm->calibration = 0.0;
}

char *
store_rel(const StoreModel *sm, const char *suffix)
{
	return quote_qualified_identifier(sm->schema, psprintf("%s_%s", sm->base, suffix));
}

/* The OID of <base>_suffix, or InvalidOid. */
static Oid
store_relid(const StoreModel *sm, const char *suffix)
{
	Oid			nsp = get_namespace_oid(sm->schema, true);

	return OidIsValid(nsp) ? get_relname_relid(psprintf("%s_%s", sm->base, suffix), nsp) : InvalidOid;
}

Datum
store_sql(const char *sql, int n, const Oid *types, const Datum *values, const char *nulls, bool *isnull)
{
	int			rc = SPI_execute_with_args(sql, n, (Oid *) types, (Datum *) values, nulls, false, 0);

	if (rc < 0)
		elog(ERROR, "SPI_execute_with_args failed (%s): %s", SPI_result_code_string(rc), sql);
	*isnull = true;
	if (SPI_tuptable == NULL || SPI_processed == 0 || SPI_tuptable->tupdesc->natts < 1)
		return (Datum) 0;
	return SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, isnull);
}

void
store_run(const char *sql, int n, const Oid *types, const Datum *values, const char *nulls)
{
	bool		isnull;

	(void) store_sql(sql, n, types, values, nulls, &isnull);
}

/* Whether relation relid is a view (or plain table: want) of the current user. */
static bool
own_relation(Oid relid, char relkind)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	bool		ok;

	if (!HeapTupleIsValid(tup))
		return false;
	ok = ((Form_pg_class) GETSTRUCT(tup))->relkind == relkind &&
		((Form_pg_class) GETSTRUCT(tup))->relowner == GetUserId();
	ReleaseSysCache(tup);
	return ok;
}

/* ------------------------------------------------------------------------
 * The query, bound once, and the stage read from it
 * ------------------------------------------------------------------------
 */

/* The names of a query's feature columns (a JSON array, or "null") as jsonb, or NULL. */
static Datum
names_jsonb(const char *names, bool *names_null)
{
	*names_null = strcmp(names, "null") == 0;
	return *names_null ? (Datum) 0 : DirectFunctionCall1(jsonb_in, CStringGetDatum(names));
}

Datum
store_source_bind(const StoreModel *sm, const char *query, const char *path, const char *missing,
				  bool *names_null)
{
	char	   *view = store_rel(sm, "source");
	Oid			rel = store_relid(sm, "source");
	char	   *select;
	char	   *names;
	int			nestlevel;

	if (OidIsValid(rel))
	{
		if (!own_relation(rel, RELKIND_VIEW))
			ereport(ERROR,
					(errcode(PERPCA_ERRCODE_MODEL_EXISTS),
					 errmsg("relation %s is in the way of the source view of model \"%s.%s\"", view, sm->schema, sm->base),
					 errdetail("It is not a view owned by role %s.", GetUserNameFromId(GetUserId(), false)),
					 errhint("Rename or drop it: perpca_train keeps a model's query in the view <model>_source.")));
		store_run(psprintf("DROP VIEW %s", view), 0, NULL, NULL, NULL);
	}
	if (object_aclcheck(NamespaceRelationId, get_namespace_oid(sm->schema, false), GetUserId(), ACL_CREATE) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NOT_OWNER),
				 errmsg("role %s may not create the view %s that binds the query of model \"%s.%s\"",
						GetUserNameFromId(GetUserId(), false), view, sm->schema, sm->base),
				 errhint("Grant CREATE on schema %s to role %s (a model stored before 0.4.0 binds its query at its first refresh).",
						 quote_identifier(sm->schema), GetUserNameFromId(GetUserId(), false))));
	/* The query and perpca's SQL around it are bound together, with the model's search_path. */
	select = sm->calibration > 0.0
		? calibrate_source_select(perpca_one_select(query, "the query of a model"), path,
								  row_missing_parse(missing), sm->calibration, &names)
		: row_source_select(perpca_one_select(query, "the query of a model"), path,
							row_missing_parse(missing), &names);
	nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", path, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	store_run(psprintf("CREATE VIEW %s AS %s", view, select), 0, NULL, NULL, NULL);
	AtEOXact_GUC(true, nestlevel);
	store_run(psprintf("COMMENT ON VIEW %s IS %s", view,
					   quote_literal_cstr(psprintf("perpca model %s: its query and the aggregation of its rows per client, bound when it was trained; read by every refresh (perpca_train(..., replace => true) changes it)",
												   sm->base))),
			  0, NULL, NULL, NULL);
	return names_jsonb(names, names_null);
}

/* The owner of the current database (whom pg_database_owner stands for). */
static Oid
database_owner(void)
{
	HeapTuple	tup = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(MyDatabaseId));
	Oid			owner;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for database %u", MyDatabaseId);
	owner = ((Form_pg_database) GETSTRUCT(tup))->datdba;
	ReleaseSysCache(tup);
	return owner;
}

/* Whether role is the model's owner (the current user) or a superuser; pg_database_owner is the database's owner. */
static bool
trusted_creator(Oid role)
{
	if (role == ROLE_PG_DATABASE_OWNER)
		role = database_owner();
	return role == GetUserId() || superuser_arg(role);
}

/* Whether only the current user (the model's owner) or superusers can create in schema nsp. */
static bool
trusted_schema(Oid nsp)
{
	HeapTuple	tup = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(nsp));
	bool		isnull;
	bool		trusted;
	Datum		acl;

	if (!HeapTupleIsValid(tup))
		return false;
	trusted = trusted_creator(((Form_pg_namespace) GETSTRUCT(tup))->nspowner);
	acl = SysCacheGetAttr(NAMESPACEOID, tup, Anum_pg_namespace_nspacl, &isnull);
	if (trusted && !isnull)
	{
		Acl		   *a = DatumGetAclP(acl);
		AclItem    *items = ACL_DAT(a);

		for (int i = 0; i < ACL_NUM(a) && trusted; i++)
			if ((items[i].ai_privs & ACL_CREATE) != 0)
				trusted = items[i].ai_grantee != ACL_ID_PUBLIC && trusted_creator(items[i].ai_grantee);
	}
	ReleaseSysCache(tup);
	return trusted || nsp == PG_CATALOG_NAMESPACE;
}

/*
 * The schemas of path (a search_path value) in which no role but the model's
 * owner or a superuser can create, as a search_path; *left_out lists the
 * others (empty when none).
 */
static char *
trusted_path(const char *path, StringInfo left_out)
{
	StringInfoData kept;
	List	   *names;
	ListCell   *lc;

	initStringInfo(&kept);
	appendStringInfoString(&kept, "pg_catalog");
	if (!SplitIdentifierString(pstrdup(path), ',', &names))
		names = NIL;
	foreach(lc, names)
	{
		const char *name = lfirst(lc);
		Oid			nsp = get_namespace_oid(name, true);

		if (!OidIsValid(nsp) || nsp == PG_CATALOG_NAMESPACE || isAnyTempNamespace(nsp))
			continue;
		if (trusted_schema(nsp))
			appendStringInfo(&kept, ", %s", quote_identifier(name));
		else
			appendStringInfo(left_out, "%s%s", left_out->len > 0 ? ", " : "", quote_identifier(name));
	}
	return kept.data;
}

Datum
store_source_bind_stored(const StoreModel *sm, const char *query, const char *path, const char *missing,
						 bool *names_null)
{
	StringInfoData left_out;
	char	   *trusted;
	MemoryContext here = CurrentMemoryContext;
	Datum		names = (Datum) 0;

	initStringInfo(&left_out);
	trusted = trusted_path(path, &left_out);
	PG_TRY();
	{
		names = store_source_bind(sm, query, trusted, missing, names_null);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(here);
		edata = CopyErrorData();
		FlushErrorState();
		if (left_out.len > 0)
		{
			edata->detail = psprintf("Model \"%s.%s\" was stored before 0.4.0; its query is bound with its search_path "
									 "without the schemas other roles can create in (%s).", sm->schema, sm->base, left_out.data);
			edata->hint = pstrdup("Train it again with perpca_train(..., replace => true), with every name in its query qualified.");
		}
		ReThrowError(edata);
	}
	PG_END_TRY();
	return names;
}

/* The INSERT of one staged client, its values as parameters of exactly the columns' types. */
static SPIPlanPtr
stage_insert_plan(void)
{
	Oid			types[4] = {REGTYPEOID, TEXTOID, stats_type_oid(), INT4OID};
	SPIPlanPtr	plan = SPI_prepare("INSERT INTO pg_temp.perpca_train_src (client_type, client, stats, n_local)"
								   " VALUES ($1, $2, $3, $4)", 4, types);

	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	return plan;
}

/* The optional n_local column of a staged row: an integer of any width, or NULL. */
static Datum
stage_n_local(HeapTuple tup, TupleDesc desc, bool *isnull)
{
	Datum		v;
	int64		r2;

	*isnull = true;
	if (desc->natts < 3)
		return (Datum) 0;
	v = SPI_getbinval(tup, desc, 3, isnull);
	if (*isnull)
		return (Datum) 0;
	r2 = perpca_integer_value(v, TupleDescAttr(desc, 2)->atttypid, "the third column of the query of a model");
	return Int32GetDatum((int32) Max(Min(r2, PG_INT32_MAX), -1));
}

/*
 * Copy what select returns, (client, stats[, n_local]), into the stage: the
 * key written by client_key.c with its type, the statistics as they are.
 * Nothing is cast in SQL: a cast another role creates for the key's type
 * has no say.
 */
static void
stage_copy(const char *select)
{
	SPIPlanPtr	insert = stage_insert_plan();
	SPIPlanPtr	plan = SPI_prepare(select, 0, NULL);
	Portal		portal;
	ClientKeyOut key;

	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	portal = SPI_cursor_open(NULL, plan, NULL, NULL, true);
	client_key_prepare(&key, TupleDescAttr(portal->tupDesc, 0)->atttypid, CurrentMemoryContext);
	for (SPI_cursor_fetch(portal, true, 1000); SPI_processed > 0; SPI_cursor_fetch(portal, true, 1000))
	{
		SPITupleTable *tt = SPI_tuptable;

		for (uint64 i = 0; i < tt->numvals; i++)
		{
			Datum		values[4];
			char		nulls[4] = {' ', ' ', ' ', ' '};
			bool		isnull;

			CHECK_FOR_INTERRUPTS();
			values[1] = SPI_getbinval(tt->vals[i], tt->tupdesc, 1, &isnull);
			if (isnull)
				ereport(ERROR,
						(errcode(PERPCA_ERRCODE_NULL),
						 errmsg("client column of the query must not be NULL")));
			values[0] = ObjectIdGetDatum(TupleDescAttr(tt->tupdesc, 0)->atttypid);
			values[1] = CStringGetTextDatum(client_key_text(&key, values[1]));
			values[2] = SPI_getbinval(tt->vals[i], tt->tupdesc, 2, &isnull);
			nulls[2] = isnull ? 'n' : ' ';
			values[3] = stage_n_local(tt->vals[i], tt->tupdesc, &isnull);
			nulls[3] = isnull ? 'n' : ' ';
			if (SPI_execute_plan(insert, values, nulls, false, 0) != SPI_OK_INSERT)
				elog(ERROR, "could not stage a client");
		}
		SPI_freetuptable(tt);
	}
	SPI_cursor_close(portal);
}

Datum
store_stage_fill(const StoreModel *sm, const char *missing, bool *names_null)
{
	char	   *view = store_rel(sm, "source");
	Oid			rel = store_relid(sm, "source");
	char	   *names;
	char	   *select;

	if (!OidIsValid(rel))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_MODEL_INCOMPLETE),
				 errmsg("the view %s, which holds the query of model \"%s.%s\", does not exist", view, sm->schema, sm->base),
				 errhint("It was dropped (DROP ... CASCADE of a relation its query reads?). Train the model again with perpca_train(..., replace => true).")));
	if (!own_relation(rel, RELKIND_VIEW))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_WRONG_OBJECT),
				 errmsg("%s is not the source view of model \"%s.%s\"", view, sm->schema, sm->base),
				 errdetail("It is not a view owned by role %s, the model's owner.", GetUserNameFromId(GetUserId(), false)),
				 errhint("Drop it and train the model again with perpca_train(..., replace => true).")));
	/*
	 * The view binds the query and its aggregation (store_source_bind): it
	 * returns statistics, read as they are.  Only a view its owner rewrote
	 * to return rows is aggregated here.
	 */
	select = row_source_select(psprintf("SELECT * FROM %s", view), "pg_catalog, pg_temp",
							   row_missing_parse(missing), &names);
	stage_copy(select);
	return names_jsonb(names, names_null);
}

/* ------------------------------------------------------------------------
 * The tables: created, brought up to date, written
 * ------------------------------------------------------------------------
 */

void
store_columns_add(const StoreModel *sm, const char *suffix)
{
	ModelTable	t = model_table_by_suffix(suffix);
	Oid			relid = store_relid(sm, suffix);

	if (OidIsValid(relid))
		(void) model_schema_add_missing(t, relid);
}

/* A new model's three tables, and its history unless there is one (a model trained again continues it). */
static void
store_create(const StoreModel *sm)
{
	model_schema_create(MODEL_TABLE_COMPONENTS, sm->schema, sm->base);
	model_schema_create(MODEL_TABLE_CLIENTS, sm->schema, sm->base);
	model_schema_create(MODEL_TABLE_INFO, sm->schema, sm->base);
	if (!OidIsValid(store_relid(sm, "history")))
		model_schema_create(MODEL_TABLE_HISTORY, sm->schema, sm->base);
}

/*
 * The per-client figures of the clients rows, from statistics (client,
 * stats) of the FROM item src (which may use $4 and $5): means in the data's
 * units; variances, ratios and errors in the units the fit saw (divided by
 * $6, the scale factors, NULL = unscaled); the scores' covariance and
 * residual spectrum (client_monitor_stats) too.  A client without variance
 * (one row, or constant rows) has no ratios (the reader of the clients
 * names it in its NOTICE, row_reader.c).
 */
static const char fill_clients_sql[] =
"WITH r AS ("
"    SELECT s.client, s.stats AS raw, perpca_internal.scale_stats(s.stats, $6) AS stats FROM %s s"
"     WHERE %s.perpca_count(s.stats) > 0),"
" c AS ("
"    SELECT r.client, r.raw, r.stats,"
"           CASE $1 WHEN 'client' THEN %s.perpca_mean(r.stats)"
"                   WHEN 'global' THEN perpca_internal.scale_vector($2, $6)"
"                   ELSE array_fill(0::float8, ARRAY[%s.perpca_dim(r.stats)]) END AS centre"
"      FROM r),"
" u AS (SELECT array_agg(pc ORDER BY component) AS u FROM %s WHERE kind = 'global'),"
" v AS (SELECT client, array_agg(pc ORDER BY component) AS v, count(*)::int AS r2"
"        FROM %s WHERE kind = 'local' GROUP BY client),"
" f AS ("
"    SELECT c.client, %s.perpca_count(c.stats) AS n, %s.perpca_mean(c.raw) AS mean,"
"           coalesce(v.r2, 0) AS r2,"
"           %s.perpca_total_variance(c.stats, c.centre) AS tv,"
"           coalesce(%s.perpca_explained_variance(c.stats, u.u, c.centre), 0) AS gv,"
"           coalesce(%s.perpca_explained_variance(c.stats, v.v, c.centre), 0) AS lv,"
"           ms.score_covariance, ms.residual_moments, ($7 ->> c.client)::float8 AS sketch_bound"
"      FROM c CROSS JOIN u LEFT JOIN v ON v.client = c.client"
"     CROSS JOIN LATERAL perpca_internal.client_monitor_stats(c.stats, u.u, v.v) AS ms),"
" w AS ("
"    INSERT INTO %s (client, n, mean, n_local, total_variance, global_ratio, local_ratio,"
"                    residual_ratio, train_error, source, score_covariance, residual_moments, sketch_bound)"
"    SELECT client, n, mean, r2, tv, gv / nullif(tv, 0), lv / nullif(tv, 0),"
"           (tv - gv - lv) / nullif(tv, 0), tv - gv - lv, $3, score_covariance, residual_moments, sketch_bound"
"      FROM f"
"    ON CONFLICT (client) DO UPDATE"
"       SET n = excluded.n, mean = excluded.mean, n_local = excluded.n_local,"
"           total_variance = excluded.total_variance, global_ratio = excluded.global_ratio,"
"           local_ratio = excluded.local_ratio, residual_ratio = excluded.residual_ratio,"
"           train_error = excluded.train_error, source = excluded.source,"
"           score_covariance = excluded.score_covariance, residual_moments = excluded.residual_moments,"
"           sketch_bound = excluded.sketch_bound"
"    RETURNING client)"
" SELECT count(*) FROM w";

/*
 * Write the clients rows of the model from the statistics of src, as the
 * model's owner (its table brought up to date first: a model stored before
 * 0.3.0 gets the columns of perpca_model_monitor and
 * perpca_component_variance, one stored before 0.4.0 sketch_bound).  args:
 * center, global mean, source, one client, its stats, scale factors, each
 * client's share of the sketch's bound as jsonb {client: bound} ($1..$7).
 */
static void
store_fill_clients(const StoreModel *sm, const char *src, const Oid *types, const Datum *args, const char *nulls)
{
	const char *x = sm->ext;
	char	   *components = store_rel(sm, "components");
	store_columns_add(sm, "clients");
	store_run(psprintf(fill_clients_sql, src, x, x, x, components, components, x, x, x, x, x,
					   store_rel(sm, "clients")),
			  7, types, args, nulls);
}

Datum
store_digest(const StoreModel *sm, Datum options, Datum names, bool names_null)
{
	Oid			types[2] = {JSONBOID, TEXTARRAYOID};
	Datum		values[2] = {options, names};
	char		nulls[3] = {' ', names_null ? 'n' : ' ', '\0'};
	bool		isnull;
	Datum		d;

	d = store_sql(psprintf("SELECT encode(sha256(convert_to(concat_ws(E'\\n',"
						   " string_agg(concat_ws(' ', s.client_type::text, quote_literal(s.client),"
						   "   encode(sha256(%s.perpca_stats_send(s.stats)), 'hex'), s.n_local),"
						   "   E'\\n' ORDER BY s.client COLLATE \"C\"),"
						   " ($1 - ARRAY['init', 'start', 'verbose'])::text, $2::text), 'UTF8')), 'hex')"
						   " FROM pg_temp.perpca_train_src s", sm->ext),
				  2, types, values, nulls, &isnull);
	return isnull ? (Datum) 0 : d;
}

/* The fit of the staged clients (perpca_internal.fit, as the current user): its four results. */
typedef struct StoreFitResult
{
	Datum		components;
	Oid			components_type;
	Datum		diag;
	Datum		scale;			/* float8[] or NULL */
	Datum		constant;		/* int[] or NULL */
	char		nulls[5];		/* of scale and constant, at [2] and [3] */
} StoreFitResult;

static void
store_run_fit(Datum options, StoreFitResult *f)
{
	Oid			types[2] = {TEXTOID, JSONBOID};
	Datum		values[2];
	bool		isnull,
				n_local;
	HeapTuple	row;
	TupleDesc	desc;

	n_local = DatumGetBool(store_sql("SELECT EXISTS (SELECT FROM pg_temp.perpca_train_src s WHERE s.n_local IS NOT NULL)",
									 0, NULL, NULL, NULL, &isnull));
	values[0] = CStringGetTextDatum(psprintf("SELECT client, stats%s FROM pg_temp.perpca_train_src ORDER BY client COLLATE \"C\"",
											 n_local ? ", n_local" : ""));
	values[1] = options;
	(void) store_sql("SELECT f.components, f.diagnostics, f.scale_factors, f.constant_features"
					 "  FROM perpca_internal.fit($1, $2) AS f", 2, types, values, NULL, &isnull);
	if (SPI_processed != 1)
		elog(ERROR, "perpca_internal.fit returned %d rows", (int) SPI_processed);
	row = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	memset(f->nulls, ' ', 4);
	f->nulls[4] = '\0';
	f->components = SPI_getbinval(row, desc, 1, &isnull);
	f->components_type = SPI_gettypeid(desc, 1);
	f->diag = SPI_getbinval(row, desc, 2, &isnull);
	f->scale = SPI_getbinval(row, desc, 3, &isnull);
	f->nulls[2] = isnull ? 'n' : ' ';
	f->constant = SPI_getbinval(row, desc, 4, &isnull);
	f->nulls[3] = isnull ? 'n' : ' ';
}

/* feature_names must hold one name per feature, without NULLs (22023). */
static void
store_check_names(Datum names, Datum diag)
{
	Oid			types[2] = {TEXTARRAYOID, JSONBOID};
	Datum		values[2] = {names, diag};
	bool		isnull;

	if (!DatumGetBool(store_sql("SELECT array_ndims($1) IS DISTINCT FROM 1 OR cardinality($1) <> ($2 ->> 'd')::int"
								"       OR array_position($1, NULL) IS NOT NULL", 2, types, values, NULL, &isnull)))
		return;
	ereport(ERROR,
			(errcode(PERPCA_ERRCODE_ARGUMENT),
			 errmsg("feature_names must hold one name for each of the %s features, without NULLs",
					TextDatumGetCString(store_sql("SELECT $2 ->> 'd'", 2, types, values, NULL, &isnull))),
			 errdetail("It has %s names.",
					   TextDatumGetCString(store_sql("SELECT coalesce(cardinality($1), 0)::text", 2, types, values,
													 NULL, &isnull)))));
}

/* The info row of a fit (jsonb, by column name): the 0.1.0 option columns take the options of their name. */
static const char info_row_sql[] =
"SELECT ($1 - 'rounds') || jsonb_build_object("
"  'model', $15, 'd', $2 -> 'd', 'n_global', $3 -> 'n_global',"
"  'n_local', $3 -> 'n_local', 'n_clients', $2 -> 'n_clients',"
"  'rounds_max', $1 -> 'rounds', 'source_query', $4,"
"  'rounds', $2 -> 'rounds_run', 'converged', $2 -> 'converged',"
"  'objective', $2 -> 'objective', 'kkt_residual', $2 -> 'kkt_residual',"
"  'theta_est', $2 -> 'theta_est', 'step_used', $2 -> 'step',"
"  'fit_seconds', $2 -> 'seconds', 'global_mean', to_jsonb($5),"
"  'total_variance', $6, 'fitted_at', now(),"
"  'version', $7, 'client_type', $8,"
"  'options', $1, 'scale_factors', to_jsonb($9),"
"  'constant_features', to_jsonb($10), 'search_path', $11,"
"  'feature_names', to_jsonb($12), 'stats_digest', $13,"
"  'source_view', $14, 'sketch_bound', $2 -> 'sketch_bound')";

/* What store_fit has computed before it writes. */
typedef struct StoreFigures
{
	Datum		opts;
	Datum		gmean;
	Datum		nrows;
	Datum		digest;
	Datum		starts;
	Datum		version;
	Datum		key_type;
	char		nulls[4];		/* of digest, starts, key_type */
} StoreFigures;

static void
store_figures(const StoreModel *sm, const StoreFitResult *f, Datum names, bool names_null, StoreFigures *g)
{
	Oid			jtype = JSONBOID;
	bool		isnull;

	g->opts = store_sql("SELECT $1 -> 'options'", 1, &jtype, &f->diag, NULL, &isnull);
	g->key_type = store_sql("SELECT format_type(s.client_type, NULL) FROM pg_temp.perpca_train_src s LIMIT 1",
							0, NULL, NULL, NULL, &isnull);
	g->nulls[2] = isnull ? 'n' : ' ';
	/* with a sketched client, the fit's pooled mean: no merge of the statistics */
	if (DatumGetBool(store_sql("SELECT $1 ? 'pooled_mean'", 1, &jtype, &f->diag, NULL, &isnull)))
		(void) store_sql(psprintf("SELECT ARRAY(SELECT m::float8 FROM jsonb_array_elements_text($1 -> 'pooled_mean') WITH ORDINALITY AS e(m, j) ORDER BY j),"
								  "       (SELECT sum(%s.perpca_count(s.stats))::bigint FROM pg_temp.perpca_train_src s)", sm->ext),
						 1, &jtype, &f->diag, NULL, &isnull);
	else
		(void) store_sql(psprintf("SELECT %s.perpca_mean(x.m), %s.perpca_count(x.m)"
								  "  FROM (SELECT %s.perpca_merge(s.stats ORDER BY s.client COLLATE \"C\") AS m"
								  "          FROM pg_temp.perpca_train_src s) x", sm->ext, sm->ext, sm->ext),
						 0, NULL, NULL, NULL, &isnull);
	g->gmean = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	g->nrows = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
	g->digest = store_digest(sm, g->opts, names, names_null);
	g->nulls[0] = g->digest == (Datum) 0 ? 'n' : ' ';
	g->starts = store_sql(psprintf("SELECT jsonb_agg(jsonb_build_object('start', st.start, 'rounds_run', st.rounds_run,"
								   " 'objective', st.objective, 'converged', st.converged, 'chosen', st.chosen))"
								   "  FROM %s.perpca_last_fit_starts() AS st", sm->ext),
						  0, NULL, NULL, NULL, &isnull);
	g->nulls[1] = isnull ? 'n' : ' ';
	g->version = store_sql(psprintf("SELECT nextval(%s)", quote_literal_cstr(psprintf("%s.perpca_model_version", sm->ext))),
						   0, NULL, NULL, NULL, &isnull);
	g->nulls[3] = '\0';
}

/* Swap: the old rows out (an existing model is locked by its writer), or a new model's tables. */
static void
store_swap_out(const StoreModel *sm)
{
	if (OidIsValid(store_relid(sm, "info")))
	{
		store_run(psprintf("DELETE FROM %s", store_rel(sm, "components")), 0, NULL, NULL, NULL);
		store_run(psprintf("DELETE FROM %s", store_rel(sm, "clients")), 0, NULL, NULL, NULL);
		store_run(psprintf("DELETE FROM %s", store_rel(sm, "info")), 0, NULL, NULL, NULL);
		/* A model stored by an earlier version gets the columns added since, once. */
		store_columns_add(sm, "info");
	}
	else
		store_create(sm);
}

/* Write the rows of the fit f with its figures g. */
static void
store_write(const StoreModel *sm, const char *source_query, Datum options, const char *path, Datum names,
			bool names_null, const StoreFitResult *f, const StoreFigures *g)
{
	Oid			ctypes[7] = {TEXTOID, FLOAT8ARRAYOID, TEXTOID, TEXTOID, TEXTOID, FLOAT8ARRAYOID, JSONBOID};
	Datum		cargs[7];
	char		cnulls[8] = "   nn  ";
	Oid			itypes[15] = {JSONBOID, JSONBOID, JSONBOID, TEXTOID, FLOAT8ARRAYOID, FLOAT8OID, INT8OID, TEXTOID,
	FLOAT8ARRAYOID, INT4ARRAYOID, TEXTOID, TEXTARRAYOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		iargs[15];
	char		inulls[16] = "               ";
	bool		isnull;
	char	   *clients = store_rel(sm, "clients");
	char	   *info = store_rel(sm, "info");

	store_run(psprintf("INSERT INTO %s (client, kind, component, pc, variance)"
					   " SELECT u.client, u.kind, u.component, u.pc, u.variance FROM unnest($1) AS u",
					   store_rel(sm, "components")), 1, &f->components_type, &f->components, NULL);
	cargs[0] = store_sql("SELECT $1 ->> 'center'", 1, &itypes[0], &g->opts, NULL, &isnull);
	cargs[1] = g->gmean;
	cargs[2] = CStringGetTextDatum("fit");
	cargs[3] = cargs[4] = (Datum) 0;	/* no one client: NULLs */
	cargs[5] = f->scale;
	cnulls[5] = f->nulls[2];
	cargs[6] = store_sql("SELECT $1 -> 'client_bounds'", 1, &itypes[0], &f->diag, NULL, &isnull);
	cnulls[6] = isnull ? 'n' : ' ';
	store_fill_clients(sm, "pg_temp.perpca_train_src", ctypes, cargs, cnulls);

	iargs[0] = g->opts;
	iargs[1] = f->diag;
	iargs[2] = options;
	iargs[3] = CStringGetTextDatum(source_query);
	iargs[4] = g->gmean;
	iargs[5] = store_sql(psprintf("SELECT CASE WHEN $1 ->> 'weights' = 'equal' THEN avg(total_variance)"
								  " ELSE sum(n::float8 * total_variance) / sum(n::float8) END FROM %s", clients),
						 1, &itypes[0], &g->opts, NULL, &isnull);
	inulls[5] = isnull ? 'n' : ' ';
	iargs[6] = g->version;
	iargs[7] = g->key_type;
	inulls[7] = g->nulls[2];
	iargs[8] = f->scale;
	inulls[8] = f->nulls[2];
	iargs[9] = f->constant;
	inulls[9] = f->nulls[3];
	iargs[10] = CStringGetTextDatum(path);
	iargs[11] = names;
	inulls[11] = names_null ? 'n' : ' ';
	iargs[12] = g->digest;
	inulls[12] = g->nulls[0];
	iargs[13] = CStringGetTextDatum(store_rel(sm, "source"));
	iargs[14] = CStringGetTextDatum(sm->base);
	iargs[0] = store_sql(info_row_sql, 15, itypes, iargs, inulls, &isnull);
	store_run(psprintf("INSERT INTO %s SELECT * FROM jsonb_populate_record(NULL::%s, $1)", info, info),
			  1, itypes, iargs, NULL);
}

Datum
store_fit(const StoreModel *sm, const char *source_query, Datum options, const char *path, Datum names,
		  bool names_null)
{
	StoreFitResult f;
	StoreFigures g;
	Oid			types[6] = {TEXTOID, JSONBOID, INT8OID, INT8OID, JSONBOID, TEXTOID};
	Datum		values[6];
	char		nulls[7] = "      ";
	bool		isnull;
	int			nestlevel = NewGUCNestLevel();

	(void) set_config_option("extra_float_digits", "3", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	store_run_fit(options, &f);
	if (!names_null)
		store_check_names(names, f.diag);
	store_figures(sm, &f, names, names_null, &g);
	store_swap_out(sm);
	store_write(sm, source_query, options, path, names, names_null, &f, &g);
	values[0] = CStringGetTextDatum(sm->base);
	values[1] = f.diag;
	values[2] = g.version;
	values[3] = g.nrows;
	values[4] = g.starts;
	nulls[4] = g.nulls[1];
	values[5] = g.digest;
	nulls[5] = g.nulls[0];
	values[0] = store_sql("SELECT jsonb_build_object('model_name', $1, 'd', $2 -> 'd', 'n_clients', $2 -> 'n_clients',"
						  " 'rounds_run', $2 -> 'rounds_run', 'converged', $2 -> 'converged',"
						  " 'objective', $2 -> 'objective', 'theta_est', $2 -> 'theta_est',"
						  " 'version', $3, 'rows', $4, 'starts', $5, 'digest', $6,"
						  " 'sketch_bound', $2 -> 'sketch_bound')",
						  6, types, values, nulls, &isnull);
	AtEOXact_GUC(true, nestlevel);
	return values[0];
}

/* ------------------------------------------------------------------------
 * The history, and one client personalized
 * ------------------------------------------------------------------------
 */

/*
 * A model stored before 0.3.0 gets its history table at its first refresh;
 * when its owner may not create tables in the model's schema, the row is
 * returned but not kept (NOTICE).  Whether the table is there.
 */
static bool
store_history_table(const StoreModel *sm)
{
	Oid			rel = store_relid(sm, "history");
	char	   *user = GetUserNameFromId(GetUserId(), false);

	if (OidIsValid(rel))
	{
		if (!own_relation(rel, RELKIND_RELATION))
			ereport(ERROR,
					(errcode(PERPCA_ERRCODE_WRONG_OBJECT),
					 errmsg("the history of model \"%s.%s\" is not a table of its owner", sm->schema, sm->base),
					 errdetail("%s is not a plain table owned by role %s.", store_rel(sm, "history"), user),
					 errhint("Drop it: the next train or refresh starts a new history.")));
		return true;
	}
	if (object_aclcheck(NamespaceRelationId, get_namespace_oid(sm->schema, false), GetUserId(), ACL_CREATE) != ACLCHECK_OK)
	{
		ereport(NOTICE,
				(errmsg("model \"%s.%s\" keeps no history: role %s may not create tables in schema %s",
						sm->schema, sm->base, user, quote_identifier(sm->schema)),
				 errhint("Grant CREATE on the schema to the model's owner; the next refresh creates the table.")));
		return false;
	}
	model_schema_create(MODEL_TABLE_HISTORY, sm->schema, sm->base);
	return true;
}

Datum
store_history_append(const StoreModel *sm, Datum r)
{
	Oid			types[2] = {JSONBOID, TEXTOID};
	Datum		values[2] = {r, (Datum) 0};
	char	   *history = store_rel(sm, "history");
	bool		isnull;

	values[0] = store_sql(psprintf("SELECT CASE WHEN $1 ? 'version' THEN $1"
								   " ELSE $1 || jsonb_build_object('version', (SELECT i.version FROM %s i)) END",
								   store_rel(sm, "info")), 1, types, values, NULL, &isnull);
	if (!store_history_table(sm))
		return values[0];
	/* a history started before 0.4.0 gets the columns added since (sketch_bound), once */
	store_columns_add(sm, "history");
	values[0] = store_sql(psprintf("SELECT $1 || jsonb_build_object('entry', (SELECT coalesce(max(h.entry), 0) + 1 FROM %s h))",
								   history), 1, types, values, NULL, &isnull);
	store_run(psprintf("INSERT INTO %s SELECT * FROM jsonb_populate_record(NULL::%s, $1)", history, history),
			  1, types, values, NULL);
	return values[0];
}

/* The local components of one client ($1 client, $2 scaled stats, $3 r2, $4 centre kind, $5 factors). */
static const char personalize_sql[] =
"INSERT INTO %s (client, kind, component, pc, variance)"
" SELECT $1, 'local', l.component, l.pc, l.variance"
"   FROM %s.perpca_local_pcs($2,"
"          (SELECT array_agg(k.pc ORDER BY k.component) FROM %s k WHERE k.kind = 'global'), $3,"
"          (SELECT CASE $4 WHEN 'client' THEN %s.perpca_mean($2)"
"                          WHEN 'global' THEN perpca_internal.scale_vector(i.global_mean, $5)"
"                          ELSE array_fill(0::float8, ARRAY[i.d]) END FROM %s i)) AS l";

/*
 * {client: bound} (jsonb) of one personalized client with k components:
 * its share of a sketch's bound, k delta / (2 n), as the fit's
 * (fit_input.c, clients_sketch_bound); 0 for exact statistics.
 */
static Datum
store_client_bound(const char *client, const PerpcaStats *s, int k)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	escape_json(&buf, client);
	appendStringInfo(&buf, ": %.17g}", s->n > 0 ? 0.5 * k * perpca_stats_sketch_delta(s) / (double) s->n : 0.0);
	return DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data));
}

uint64
store_personalize(const StoreModel *sm, const char *client, Oid stats_type, Datum stats, int n_local,
				  Datum factors, bool factors_null, Tuplestorestate *out)
{
	char	   *components = store_rel(sm, "components");
	char	   *info = store_rel(sm, "info");
	Oid			types[7] = {TEXTOID, FLOAT8ARRAYOID, TEXTOID, TEXTOID, stats_type, FLOAT8ARRAYOID, JSONBOID};
	Datum		args[7] = {0, 0, CStringGetTextDatum("personalize"), CStringGetTextDatum(client), stats, factors, 0};
	char		nulls[8] = "       ";
	bool		isnull;
	int32		r1,
				r2;

	nulls[5] = factors_null ? 'n' : ' ';
	(void) store_sql(psprintf("SELECT i.center, i.global_mean, i.n_local, i.n_global FROM %s i", info), 0, NULL, NULL, NULL, &isnull);
	if (SPI_processed != 1)
		elog(ERROR, "model \"%s\" has %d info rows", sm->base, (int) SPI_processed);
	args[0] = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	args[1] = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
	r1 = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 4, &isnull));
	isnull = false;
	r2 = n_local < 0 ? DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull))
		: n_local;
	args[6] = store_client_bound(client, DatumGetPerpcaStats(stats), r1 + (isnull ? 0 : r2));
	store_run(psprintf("DELETE FROM %s WHERE kind = 'local' AND client = $4", components), 6, types, args, nulls);
	if (!isnull && r2 != 0)
	{
		/* The local components live where the model's components do: in the scaled features. */
		Oid			ptypes[5] = {TEXTOID, stats_type, INT4OID, TEXTOID, FLOAT8ARRAYOID};
		Datum		pargs[5] = {args[3], 0, Int32GetDatum(r2), args[0], factors};
		char		pnulls[6] = "     ";

		pnulls[4] = nulls[5];
		pargs[1] = store_sql("SELECT perpca_internal.scale_stats($1, $2)", 2, (Oid[]) {stats_type, FLOAT8ARRAYOID},
							 (Datum[]) {stats, factors}, (char[]) {' ', nulls[5], '\0'}, &isnull);
		store_run(psprintf(personalize_sql, components, sm->ext, components, sm->ext, info),
				  5, ptypes, pargs, pnulls);
	}
	store_fill_clients(sm, "(SELECT $4 AS client, $5 AS stats)", types, args, nulls);
	/* nextval() first: Citus refuses it inside an UPDATE of a reference table. */
	args[1] = store_sql(psprintf("SELECT nextval(%s)", quote_literal_cstr(psprintf("%s.perpca_model_version", sm->ext))),
						0, NULL, NULL, NULL, &isnull);
	store_run(psprintf("UPDATE %s SET version = $1", info), 1, (Oid[]) {INT8OID}, &args[1], NULL);
	(void) store_sql(psprintf("SELECT k.component, k.pc, k.variance FROM %s k"
							  " WHERE k.kind = 'local' AND k.client = $1 ORDER BY k.component", components),
					 1, (Oid[]) {TEXTOID}, &args[3], NULL, &isnull);
	for (uint64 i = 0; out != NULL && i < SPI_processed; i++)
		tuplestore_puttuple(out, SPI_tuptable->vals[i]);
	return SPI_processed;
}

/* ------------------------------------------------------------------------
 * The stage: the caller's temporary tables of a train or refresh
 * ------------------------------------------------------------------------
 */

/* Drop pg_temp.name if it exists. */
static void
stage_drop_one(const char *name)
{
	bool		isnull;
	Datum		v = CStringGetTextDatum(psprintf("pg_temp.%s", name));

	if (DatumGetBool(store_sql("SELECT to_regclass($1) IS NOT NULL", 1, (Oid[]) {TEXTOID}, &v, NULL, &isnull)))
		store_run(psprintf("DROP TABLE pg_temp.%s", name), 0, NULL, NULL, NULL);
}

/* GRANT privileges on pg_temp.name to reader, unless reader is the current user. */
static void
stage_grant(const char *name, const char *privileges, Oid reader)
{
	if (reader != GetUserId())
		store_run(psprintf("GRANT %s ON pg_temp.%s TO %s", privileges, name,
						   quote_identifier(GetUserNameFromId(reader, false))), 0, NULL, NULL, NULL);
}

void
store_stage_create(const StoreModel *sm, Oid reader)
{
	stage_drop_one("perpca_train_src");
	store_run(psprintf("CREATE TEMPORARY TABLE perpca_train_src (client_type regtype, client text,"
					   " stats %s.perpca_stats, n_local int)", sm->ext), 0, NULL, NULL, NULL);
	stage_grant("perpca_train_src", "SELECT, INSERT", reader);
}

void
store_stage_start(const char *query, Oid reader, const char *path)
{
	/* Named columns: the query's own may be unnamed ("?column?" twice). */
	char	   *command = psprintf("CREATE TEMPORARY TABLE perpca_train_start (client, kind, component, pc) AS %s",
								   perpca_one_select(query, "start query"));
	int			nestlevel;

	stage_drop_one("perpca_train_start");
	/* Only the query runs with the model's search_path. */
	nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", path, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	store_run(command, 0, NULL, NULL, NULL);
	AtEOXact_GUC(true, nestlevel);
	stage_grant("perpca_train_start", "SELECT", reader);
}

void
store_stage_drop(void)
{
	stage_drop_one("perpca_train_src");
	stage_drop_one("perpca_train_start");
}
