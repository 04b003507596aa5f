/*
 * model_store.c -- the one module that writes a model's tables
 * (model_store.h)
 *
 * In this order: the view <model>_source (bound once), then components,
 * clients and info (swapped in one transaction), last the history.  SPI
 * reads the view into the stage, runs the DDL and each table's INSERT
 * (model_schema.c); the fit, each client's figures, the digest and the
 * history's row are C.  Every statement runs with search_path =
 * pg_catalog, pg_temp (run_as_enter) and calls no function of perpca.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_database.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "commands/sequence.h"
#include "common/cryptohash.h"
#include "common/sha2.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

#include "calibrate_split.h"
#include "client_key.h"
#include "client_math.h"
#include "error_kinds.h"
#include "exact_sum.h"
#include "fit_input.h"
#include "fit_options.h"
#include "fit_sql.h"
#include "linalg.h"
#include "model_lock.h"
#include "model_schema.h"
#include "model_store.h"
#include "monitor.h"
#include "perpca.h"
#include "row_reader.h"
#include "scale.h"
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

void
store_sql(const char *sql, int n, const Oid *types, const Datum *values, const char *nulls)
{
	if (SPI_execute_with_args(sql, n, (Oid *) types, (Datum *) values, nulls, false, 0) < 0)
		elog(ERROR, "SPI_execute_with_args failed: %s", sql);
}

/* The first column of the first row of sql (no parameters), or *isnull. */
static Datum
store_one(const char *sql, bool *isnull)
{
	store_sql(sql, 0, NULL, NULL, NULL);
	*isnull = true;
	if (SPI_tuptable == NULL || SPI_processed == 0)
		return (Datum) 0;
	return heap_getattr(SPI_tuptable->vals[0], 1, SPI_tuptable->tupdesc, isnull);
}

/* Whether relation relid is of relkind and the current user's. */
static bool
own_relation(Oid relid, char relkind)
{
	return get_rel_relkind(relid) == relkind && model_rel_owner(relid) == GetUserId();
}

void
store_view_drop(const StoreModel *sm, const char *suffix, bool strict)
{
	char	   *view = store_rel(sm, suffix);
	Oid			rel = store_relid(sm, suffix);

	if (OidIsValid(rel) && own_relation(rel, RELKIND_VIEW))
		store_sql(psprintf("DROP VIEW %s", view), 0, NULL, NULL, NULL);
	else if (OidIsValid(rel) && strict)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_MODEL_EXISTS),
				 errmsg("relation %s is in the way of the %s view of model \"%s.%s\"", view, suffix, sm->schema, sm->base),
				 errdetail("It is not a view owned by role %s.", GetUserNameFromId(GetUserId(), false)),
				 errhint("Rename or drop it: perpca_train keeps a model's %s in the view <model>_%s.",
						 strcmp(suffix, "source") == 0 ? "query" : "rows", suffix)));
}

void
store_view_create(const StoreModel *sm, const char *suffix, const char *select, const char *path,
				  const char *comment)
{
	char	   *view = store_rel(sm, suffix);
	char	   *user = GetUserNameFromId(GetUserId(), false);
	int			nestlevel;

	if (object_aclcheck(NamespaceRelationId, get_namespace_oid(sm->schema, false), GetUserId(), ACL_CREATE) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NOT_OWNER),
				 errmsg("role %s may not create the view %s that binds the query of model \"%s.%s\"",
						user, view, sm->schema, sm->base),
				 errhint("Grant CREATE on schema %s to role %s (a model stored before 0.4.0 binds its query at its first refresh).",
						 quote_identifier(sm->schema), user)));
	nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", path, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	store_sql(psprintf("CREATE VIEW %s AS %s", view, select), 0, NULL, NULL, NULL);
	AtEOXact_GUC(true, nestlevel);
	store_sql(psprintf("COMMENT ON VIEW %s IS %s", view, quote_literal_cstr(comment)), 0, NULL, NULL, NULL);
}

void
store_view_check(const StoreModel *sm, const char *suffix, const char *hint)
{
	char	   *view = store_rel(sm, suffix);
	Oid			rel = store_relid(sm, suffix);

	if (!OidIsValid(rel))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_MODEL_INCOMPLETE),
				 errmsg("the view %s, which holds the %s of model \"%s.%s\", does not exist", view,
						strcmp(suffix, "source") == 0 ? "query" : "rows", sm->schema, sm->base),
				 errhint("%s", hint)));
	if (!own_relation(rel, RELKIND_VIEW))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_WRONG_OBJECT),
				 errmsg("%s is not the %s view of model \"%s.%s\"", view, suffix, sm->schema, sm->base),
				 errdetail("It is not a view owned by role %s, the model's owner.", GetUserNameFromId(GetUserId(), false)),
				 errhint("Drop it and train the model again with perpca_train(..., replace => true).")));
}

/* ------------------------------------------------------------------------
 * The query, bound once, and the stage read from it
 * ------------------------------------------------------------------------
 */

/* The text[] of the names of a query's feature columns (a JSON array of strings) into st; "null" leaves st as it is. */
static void
stage_names(const char *json, Stage *st)
{
	Jsonb	   *j;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	ArrayBuildState *names = initArrayResult(TEXTOID, CurrentMemoryContext, false);

	if (strcmp(json, "null") == 0)
		return;
	j = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(json)));
	it = JsonbIteratorInit(&j->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		if (tok == WJB_ELEM && v.type == jbvString)
			accumArrayResult(names, PointerGetDatum(cstring_to_text_with_len(v.val.string.val, v.val.string.len)),
							 false, TEXTOID, CurrentMemoryContext);
	st->names = makeArrayResult(names, CurrentMemoryContext);
	st->names_null = false;
}

void
store_source_bind(const StoreModel *sm, const char *query, const char *path, PerpcaMissing missing, Stage *st)
{
	char	   *select;
	char	   *names;

	store_view_drop(sm, "source", true);
	/* The query and perpca's SQL around it are bound together, with the model's search_path. */
	select = sm->calibration > 0.0
		? calibrate_source_select(perpca_one_select(query, "the query of a model"), path, missing,
								  sm->calibration, &names)
		: row_source_select(perpca_one_select(query, "the query of a model"), path, missing, &names);
	store_view_create(sm, "source", select, path,
					  psprintf("perpca model %s: its query and the aggregation of its rows per client, bound when it was trained; read by every refresh (perpca_train(..., replace => true) changes it)",
							   sm->base));
	stage_names(names, st);
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

void
store_source_bind_stored(const StoreModel *sm, const char *query, const char *path, PerpcaMissing missing,
						 Stage *st)
{
	StringInfoData left_out;
	char	   *trusted;
	MemoryContext here = CurrentMemoryContext;

	initStringInfo(&left_out);
	trusted = trusted_path(path, &left_out);
	PG_TRY();
	{
		store_source_bind(sm, query, trusted, missing, st);
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
}

/* The INSERT of one staged client, its values as parameters of exactly the columns' types. */
static SPIPlanPtr
stage_insert_plan(void)
{
	Oid			types[4] = {REGTYPEOID, TEXTOID, stats_type_oid(), INT4OID};
	SPIPlanPtr	plan = SPI_prepare("INSERT INTO pg_temp.perpca_train_src (client_type, client, stats, n_local)"
								   " VALUES ($1, $2, $3, $4)", 4, types);

	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for the stage");
	return plan;
}

/* The optional n_local column of a staged row: an integer of any width, or NULL. */
static void
stage_n_local(HeapTuple tup, TupleDesc desc, StagedClient *c)
{
	Datum		v;

	c->n_local_null = true;
	c->n_local = -1;
	if (desc->natts < 3)
		return;
	v = heap_getattr(tup, 3, desc, &c->n_local_null);
	if (!c->n_local_null)
		c->n_local = (int32) Max(Min(perpca_integer_value(v, TupleDescAttr(desc, 2)->atttypid,
														  "the third column of the query of a model"),
									 PG_INT32_MAX), -1);
}

/* One row of the view (client, stats[, n_local]) as a staged client (kept), inserted into the stage. */
static void
stage_row(HeapTuple tup, TupleDesc desc, ClientKeyOut *key, SPIPlanPtr insert, StagedClient *c)
{
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	bool		isnull;

	CHECK_FOR_INTERRUPTS();
	values[1] = heap_getattr(tup, 1, desc, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NULL),
				 errmsg("client column of the query must not be NULL")));
	c->key = client_key_text(key, values[1]);
	values[0] = ObjectIdGetDatum(TupleDescAttr(desc, 0)->atttypid);
	values[1] = CStringGetTextDatum(c->key);
	values[2] = heap_getattr(tup, 2, desc, &isnull);
	nulls[2] = isnull ? 'n' : ' ';
	c->stats = isnull ? NULL : perpca_stats_detoast_copy(values[2]);
	stage_n_local(tup, desc, c);
	values[3] = Int32GetDatum(c->n_local);
	nulls[3] = c->n_local_null ? 'n' : ' ';
	if (SPI_execute_plan(insert, values, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not stage a client");
}

static int
staged_cmp(const void *a, const void *b)
{
	return strcmp(((const StagedClient *) a)->key, ((const StagedClient *) b)->key);
}

/*
 * Copy what select returns, (client, stats[, n_local]), into the stage and
 * st: the key written by client_key.c with its type, the statistics as
 * they are.  Nothing is cast in SQL: a cast another role creates for the
 * key's type has no say.
 */
static void
stage_copy(const char *select, Stage *st)
{
	SPIPlanPtr	insert = stage_insert_plan();
	SPIPlanPtr	plan = SPI_prepare(select, 0, NULL);
	Portal		portal;
	ClientKeyOut key;
	int			size = 64;

	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for the source view");
	portal = SPI_cursor_open(NULL, plan, NULL, NULL, true);
	st->key_type = TupleDescAttr(portal->tupDesc, 0)->atttypid;
	client_key_prepare(&key, st->key_type, CurrentMemoryContext);
	st->n = 0;
	st->c = palloc(sizeof(StagedClient) * size);
	while ((SPI_cursor_fetch(portal, true, 1000), SPI_processed > 0))
	{
		SPITupleTable *tt = SPI_tuptable;	/* each INSERT sets SPI_tuptable */

		for (uint64 i = 0; i < tt->numvals; i++)
		{
			if (st->n == size)
				st->c = repalloc_huge(st->c, sizeof(StagedClient) * (size *= 2));
			stage_row(tt->vals[i], tt->tupdesc, &key, insert, &st->c[st->n]);
			st->any_n_local |= !st->c[st->n++].n_local_null;
		}
		SPI_freetuptable(tt);
	}
	SPI_cursor_close(portal);
	qsort(st->c, st->n, sizeof(StagedClient), staged_cmp);
}

void
store_stage_fill(const StoreModel *sm, PerpcaMissing missing, Stage *st)
{
	char	   *names;

	store_view_check(sm, "source",
					 "It was dropped (DROP ... CASCADE of a relation its query reads?). Train the model again with perpca_train(..., replace => true).");
	/*
	 * The view binds the query and its aggregation (store_source_bind): it
	 * returns statistics, read as they are.  Only a view its owner rewrote
	 * to return rows is aggregated here.
	 */
	stage_copy(row_source_select(psprintf("SELECT * FROM %s", store_rel(sm, "source")), "pg_catalog, pg_temp",
								 missing, &names), st);
	stage_names(names, st);
}

int64
store_stage_rows(const Stage *st)
{
	int64		rows = 0;

	for (int i = 0; i < st->n; i++)
		rows += st->c[i].stats ? st->c[i].stats->n : 0;
	return rows;
}

/* ------------------------------------------------------------------------
 * The digest of what a fit reads
 * ------------------------------------------------------------------------
 */

/* Lower-case hex of SHA-256(data). */
static char *
sha256_hex(const char *data, size_t len)
{
	pg_cryptohash_ctx *ctx = pg_cryptohash_create(PG_SHA256);
	uint8		hash[PG_SHA256_DIGEST_LENGTH];
	char	   *hex = palloc(2 * PG_SHA256_DIGEST_LENGTH + 1);

	if (pg_cryptohash_init(ctx) < 0 || pg_cryptohash_update(ctx, (const uint8 *) data, len) < 0 ||
		pg_cryptohash_final(ctx, hash, sizeof(hash)) < 0)
		elog(ERROR, "could not compute a SHA-256 digest");
	pg_cryptohash_free(ctx);
	for (int i = 0; i < PG_SHA256_DIGEST_LENGTH; i++)
		sprintf(hex + 2 * i, "%02x", hash[i]);
	return hex;
}

/*
 * One staged client as the digest reads it: its key's type (type, as
 * regtypeout spells it), key, SHA-256 of its statistics' binary form (send:
 * the type's send function), n_local.
 */
static void
digest_line(StringInfo buf, const char *type, FmgrInfo *send, const StagedClient *c)
{
	appendStringInfo(buf, "%s %s", type, quote_literal_cstr(c->key));
	if (c->stats != NULL)
	{
		bytea	   *b = SendFunctionCall(send, PointerGetDatum(c->stats));

		appendStringInfo(buf, " %s", sha256_hex(VARDATA(b), VARSIZE(b) - VARHDRSZ));
	}
	if (!c->n_local_null)
		appendStringInfo(buf, " %d", c->n_local);
}

/* The digest of the staged clients, the options that change a fit, and the feature names (NULL: names_null). */
char *
store_digest(const Stage *st, Datum options, Datum names, bool names_null)
{
	StringInfoData buf;
	Datum		unset;
	Oid			out;
	bool		varlena;
	FmgrInfo	send;
	char	   *type = DatumGetCString(DirectFunctionCall1(regtypeout, ObjectIdGetDatum(st->key_type)));

	MemoryContext one = AllocSetContextCreate(CurrentMemoryContext, "perpca digest line", ALLOCSET_DEFAULT_SIZES),
				outer;

	/* the type and its send function are looked up once, not per client */
	getTypeBinaryOutputInfo(stats_type_oid(), &out, &varlena);
	fmgr_info(out, &send);
	initStringInfo(&buf);
	for (int i = 0; i < st->n; i++)
	{
		appendStringInfoString(&buf, i > 0 ? "\n" : "");
		/* each client's binary form and hash in memory used again for the next (buf grows where it was made) */
		outer = MemoryContextSwitchTo(one);
		digest_line(&buf, type, &send, &st->c[i]);
		MemoryContextSwitchTo(outer);
		MemoryContextReset(one);
	}
	MemoryContextDelete(one);
	/* what does not change what a fit reads: how it starts, and what it says */
	unset = PointerGetDatum(construct_array((Datum[]) {CStringGetTextDatum("init"), CStringGetTextDatum("start"),
									CStringGetTextDatum("verbose")}, 3, TEXTOID, -1, false, TYPALIGN_INT));
	options = DirectFunctionCall2(jsonb_delete_array, options, unset);
	appendStringInfo(&buf, "%s%s", st->n > 0 ? "\n" : "", JsonbToCString(NULL, &DatumGetJsonbP(options)->root, 0));
	if (!names_null)
	{
		getTypeOutputInfo(TEXTARRAYOID, &out, &varlena);
		appendStringInfo(&buf, "\n%s", OidOutputFunctionCall(out, names));
	}
	return sha256_hex(buf.data, buf.len);
}

/* ------------------------------------------------------------------------
 * The figures of each client's row
 * ------------------------------------------------------------------------
 */

/* What every client's row is computed from: the model's units, centre and global components. */
typedef struct ClientBasis
{
	int			d;
	const double *scale;		/* d divisors, or NULL */
	FitCenter	center;
	const double *gmean;		/* d: the pooled mean, in the data's units */
	const double *U;			/* r1 x d, rows */
	int			r1;
	const char *source;			/* 'fit' or 'personalize' */
} ClientBasis;

/* The mean of statistics s (d values, double-double summed). */
static double *
stats_mean(const PerpcaStats *s)
{
	double	   *mean = palloc(sizeof(double) * s->dim);

	for (int j = 0; j < s->dim; j++)
		mean[j] = PERPCA_STATS_MEAN(s)[j] + PERPCA_STATS_MEAN_LO(s)[j];
	return mean;
}

/* The statistics raw in the model's units (a copy: divided by the scale factors), or 22003. */
static PerpcaStats *
scaled_stats(const PerpcaStats *raw, const double *scale)
{
	PerpcaStats *s = perpca_stats_detoast_copy(PointerGetDatum(raw));

	if (scale == NULL)
		return s;
	scale_stats_inplace(s, scale);
	if (perpca_first_nonfinite(s->data, (int) Min(perpca_stats_value_count(s), INT_MAX)) >= 0)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_OUT_OF_RANGE),
				 errmsg("scaled statistics are out of the range of float8"),
				 errhint("Scale factors this small cannot scale these statistics.")));
	return s;
}

/* The centre of a client's S (scaled statistics s) in the model's units. */
static double *
client_centre(const ClientBasis *b, const PerpcaStats *s)
{
	double	   *c;

	if (b->center == FIT_CENTER_CLIENT)
		return stats_mean(s);
	c = palloc0(sizeof(double) * b->d);
	for (int j = 0; b->center == FIT_CENTER_GLOBAL && j < b->d; j++)
		c[j] = b->scale ? b->gmean[j] / b->scale[j] : b->gmean[j];
	return c;
}

/* The k x d rows C as a d x k matrix of columns. */
static double *
columns_of(const double *C, int k, int d)
{
	double	   *T = palloc(sizeof(double) * d * Max(k, 1));

	for (int j = 0; j < k; j++)
		for (int i = 0; i < d; i++)
			T[(int64) i * k + j] = C[(int64) j * d + i];
	return T;
}

/* tr(C S C') of the k x d rows C (0 for none): the variance about S's centre the components capture. */
static double
explained(FitClient *c, const double *C, int k, int d)
{
	double	   *Ct,
			   *SCt;

	if (k == 0 || C == NULL)
		return 0.0;
	Ct = columns_of(C, k, d);
	SCt = palloc(sizeof(double) * d * k);
	client_apply(c, Ct, k, SCt);
	return linalg_dot((int64) d * k, Ct, SCt);
}

/* A ratio to the total variance tv, NULL when tv is 0. */
static void
row_ratio(ModelRow *row, const char *name, double x, double tv)
{
	model_row_set(row, name, Float8GetDatum(x / tv), tv == 0);
}

/*
 * The clients row of one client (raw statistics of at least one row, its
 * r2 local components V): mean in the data's units; variances, ratios and
 * error in the model's units; the scores' covariance and residual
 * spectrum; its share of a sketch's bound (NULL: bound_null).  A client
 * without variance has no ratios.  Its total variance into *tv.
 */
static void
client_row(ModelRow *row, const ClientBasis *b, const StagedClient *sc, const double *V, int r2,
		   double bound, bool bound_null, double *tv)
{
	PerpcaStats *s = scaled_stats(sc->stats, b->scale);
	FitClient	c;
	double		gv,
				lv;
	Datum		cov,
				moments;
	bool		monitored;

	clients_one(s, client_centre(b, s), 0, 0, &c);
	*tv = client_trace(&c);
	gv = explained(&c, b->U, b->r1, b->d);
	lv = explained(&c, V, r2, b->d);
	monitored = monitor_client_stats(s, b->U, b->r1, V, r2, &cov, &moments);
	model_row_init(row, MODEL_TABLE_CLIENTS);
	model_row_set(row, "client", CStringGetTextDatum(sc->key), false);
	model_row_set(row, "n", Int64GetDatum(s->n), false);
	model_row_set(row, "mean", PointerGetDatum(perpca_vector_build(stats_mean(sc->stats), b->d)), false);
	model_row_set(row, "n_local", Int32GetDatum(r2), false);
	model_row_set(row, "total_variance", Float8GetDatum(*tv), false);
	row_ratio(row, "global_ratio", gv, *tv);
	row_ratio(row, "local_ratio", lv, *tv);
	row_ratio(row, "residual_ratio", *tv - gv - lv, *tv);
	model_row_set(row, "train_error", Float8GetDatum(*tv - gv - lv), false);
	model_row_set(row, "source", CStringGetTextDatum(b->source), false);
	model_row_set(row, "score_covariance", cov, !monitored);
	model_row_set(row, "residual_moments", moments, !monitored);
	model_row_set(row, "sketch_bound", Float8GetDatum(bound), bound_null);
}

/* ------------------------------------------------------------------------
 * A fit, stored
 * ------------------------------------------------------------------------
 */

/* The components of a fit as they are stored: U (r1 x d rows) and each staged client's local rows. */
typedef struct FitRows
{
	double	   *U;
	int			r1;
	double	  **V;				/* per staged client: r2 x d rows, or NULL */
	int		   *r2;
} FitRows;

/* The staged client of key, or -1. */
static int
staged_find(const Stage *st, const char *key)
{
	StagedClient probe = {.key = (char *) key};
	StagedClient *c = bsearch(&probe, st->c, st->n, sizeof(StagedClient), staged_cmp);

	return c ? (int) (c - st->c) : -1;
}

/* Append the row pc (d values) as row number component (1-based) of *rows. */
static void
rows_put(double **rows, int *n, int component, Datum pc, int d)
{
	int			k = Max(*n, component);

	*rows = *rows ? repalloc(*rows, sizeof(double) * d * k) : palloc(sizeof(double) * d * k);
	memcpy(*rows + (int64) (component - 1) * d, ARR_DATA_PTR(DatumGetArrayTypeP(pc)), sizeof(double) * d);
	*n = k;
}

/* Insert the fit's rows into <base>_components, and keep them as fr. */
static void
store_components(const StoreModel *sm, Tuplestorestate *rows, TupleDesc desc, const Stage *st, int d, FitRows *fr)
{
	TupleTableSlot *slot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
	ModelRows	rs;
	ModelRow	row;

	model_rows_begin(&rs, MODEL_TABLE_COMPONENTS, sm->schema, sm->base);
	fr->V = palloc0(sizeof(double *) * Max(st->n, 1));
	fr->r2 = palloc0(sizeof(int) * Max(st->n, 1));
	tuplestore_rescan(rows);
	while (tuplestore_gettupleslot(rows, true, false, slot))
	{
		slot_getallattrs(slot);
		model_row_init(&row, MODEL_TABLE_COMPONENTS);
		for (int a = 0; a < desc->natts; a++)
			model_row_set(&row, NameStr(TupleDescAttr(desc, a)->attname), slot->tts_values[a], slot->tts_isnull[a]);
		model_rows_add(&rs, &row);
		if (slot->tts_isnull[0])
			rows_put(&fr->U, &fr->r1, DatumGetInt32(slot->tts_values[2]), slot->tts_values[3], d);
		else
		{
			int			i = staged_find(st, TextDatumGetCString(slot->tts_values[0]));

			if (i >= 0)
				rows_put(&fr->V[i], &fr->r2[i], DatumGetInt32(slot->tts_values[2]), slot->tts_values[3], d);
		}
	}
	ExecDropSingleTupleTableSlot(slot);
	model_rows_insert(&rs);
}

/* The pooled mean of the staged clients' rows (d), correctly rounded. */
static double *
staged_mean(const Stage *st, int d)
{
	ExactSum   *acc = exact_sum_create(Max(d, 1));
	double	   *mean = palloc(sizeof(double) * Max(d, 1));
	double		rows = (double) store_stage_rows(st);

	for (int i = 0; i < st->n; i++)
		if (st->c[i].stats != NULL && st->c[i].stats->dim == d)
		{
			exact_sum_add_scaled(acc, 0, d, (double) st->c[i].stats->n, PERPCA_STATS_MEAN(st->c[i].stats));
			exact_sum_add_scaled(acc, 0, d, (double) st->c[i].stats->n, PERPCA_STATS_MEAN_LO(st->c[i].stats));
		}
	exact_sum_values(acc, 0, d, mean);
	exact_sum_free(acc);
	for (int j = 0; j < d; j++)
		mean[j] /= rows;
	return mean;
}

/*
 * Each staged client's share of the sketch's bound (fit_types.h,
 * FitClientBound), or *isnull.  The fit lists the clients in the stage's
 * order, so the one after the last found (*next) is tried first.
 */
static double
client_bound(const FitDiagnostics *diag, const char *key, int *next, bool *isnull)
{
	for (int j = 0; j < diag->nbounds; j++)
	{
		int			i = (*next + j) % diag->nbounds;

		if (strcmp(diag->client_bounds[i].client, key) == 0)
		{
			*next = i + 1;
			*isnull = false;
			return diag->client_bounds[i].bound;
		}
	}
	*isnull = true;
	return 0.0;
}

/* The clients rows of a fit (the table brought up to date first); the fit's weighted mean of their total variances. */
static double
store_clients(const StoreModel *sm, const Stage *st, const ClientBasis *b, const FitRows *fr,
			  const FitDiagnostics *diag)
{
	ModelRows	rs;
	double		sum = 0,
				weight = 0;
	int			next = 0;
	/* a client's figures are worked in memory used again for the next: a row is a copy */
	MemoryContext one = AllocSetContextCreate(CurrentMemoryContext, "perpca client row", ALLOCSET_DEFAULT_SIZES),
				outer;

	store_columns_add(sm, MODEL_TABLE_CLIENTS);
	model_rows_begin(&rs, MODEL_TABLE_CLIENTS, sm->schema, sm->base);
	for (int i = 0; i < st->n; i++)
	{
		ModelRow	row;
		double		tv,
					w,
					bound;
		bool		bound_null;

		if (st->c[i].stats == NULL || st->c[i].stats->n == 0)
			continue;
		bound = client_bound(diag, st->c[i].key, &next, &bound_null);
		outer = MemoryContextSwitchTo(one);
		client_row(&row, b, &st->c[i], fr->V[i], fr->r2[i], bound, bound_null, &tv);
		MemoryContextSwitchTo(outer);
		model_rows_add(&rs, &row);
		MemoryContextReset(one);
		w = diag->opts.weights ? (double) st->c[i].stats->n : 1.0;
		sum += w * tv;
		weight += w;
	}
	MemoryContextDelete(one);
	model_rows_insert(&rs);
	return sum / weight;
}

/* Insert row into its table of the model. */
static void
store_one_row(const StoreModel *sm, const ModelRow *row)
{
	ModelRows	rs;

	model_rows_begin(&rs, row->table, sm->schema, sm->base);
	model_rows_add(&rs, row);
	model_rows_insert(&rs);
}

/* A float8 of a diagnostic into row: NULL for NaN or infinity (a figure that does not apply). */
static void
row_float(ModelRow *row, const char *name, double x)
{
	bool		isnull;
	Datum		v = fit_sql_float(x, &isnull);

	model_row_set(row, name, v, isnull);
}

/* The info columns of 0.1.0 that hold options (rounds: rounds_max), from the options' jsonb as each column's type reads it. */
static void
info_options(ModelRow *row, Jsonb *options)
{
	JsonbIterator *it = JsonbIteratorInit(&options->root);
	JsonbValue	v;
	JsonbIteratorToken tok;
	char	   *key = NULL;
	Datum		old;
	bool		isnull;

	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		Oid			in,
					ioparam;
		char	   *text;

		if (tok == WJB_KEY)
			key = pnstrdup(v.val.string.val, v.val.string.len);
		if (tok != WJB_VALUE)
			continue;
		if (strcmp(key, "rounds") == 0)
			key = "rounds_max";
		if (!model_row_get(row, key, &old, &isnull) || v.type == jbvNull)
			continue;
		text = v.type == jbvString ? pnstrdup(v.val.string.val, v.val.string.len) :
			v.type == jbvBool ? (v.val.boolean ? "true" : "false") :
			DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v.val.numeric)));
		getTypeInputInfo(model_schema_column(MODEL_TABLE_INFO, key).type, &in, &ioparam);
		model_row_set(row, key, OidInputFunctionCall(in, text, ioparam, -1), false);
	}
}

/* What the info row of a fit holds beside the fit's diagnostics. */
typedef struct InfoFacts
{
	const char *query;
	const char *path;
	const double *gmean;
	double		total_variance;
	int64		version;
	const char *digest;
} InfoFacts;

/* Insert the info row of the fit diag, kept in *row. */
static void
store_info(const StoreModel *sm, const Stage *st, const FitDiagnostics *diag, Jsonb *options, const InfoFacts *f,
		   ModelRow *row)
{
	Datum		factors,
				constant;

	model_row_init(row, MODEL_TABLE_INFO);
	info_options(row, options);
	model_row_set(row, "model", CStringGetTextDatum(sm->base), false);
	model_row_set(row, "d", Int32GetDatum(diag->dim), false);
	model_row_set(row, "n_global", Int32GetDatum(diag->opts.n_global), false);
	model_row_set(row, "n_local", Int32GetDatum(diag->opts.n_local), false);
	model_row_set(row, "n_clients", Int32GetDatum(diag->n_clients), false);
	model_row_set(row, "source_query", CStringGetTextDatum(f->query), false);
	model_row_set(row, "rounds", Int32GetDatum(diag->rounds), false);
	model_row_set(row, "converged", BoolGetDatum(diag->converged), false);
	row_float(row, "objective", diag->objective);
	row_float(row, "kkt_residual", diag->kkt_residual);
	row_float(row, "theta_est", diag->theta_est);
	row_float(row, "step_used", diag->step);
	row_float(row, "fit_seconds", diag->seconds);
	model_row_set(row, "global_mean", PointerGetDatum(perpca_vector_build(f->gmean, diag->dim)), false);
	row_float(row, "total_variance", f->total_variance);
	model_row_set(row, "fitted_at", TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()), false);
	model_row_set(row, "version", Int64GetDatum(f->version), false);
	model_row_set(row, "client_type", CStringGetTextDatum(format_type_be(st->key_type)), st->n == 0);
	model_row_set(row, "options", JsonbPGetDatum(options), false);
	if (diag->scale_factors != NULL)
	{
		scale_arrays(diag->scale_factors, diag->constant, diag->dim, &factors, &constant);
		model_row_set(row, "scale_factors", factors, false);
		model_row_set(row, "constant_features", constant, false);
	}
	model_row_set(row, "search_path", CStringGetTextDatum(f->path), false);
	model_row_set(row, "feature_names", st->names, st->names_null);
	model_row_set(row, "stats_digest", CStringGetTextDatum(f->digest), false);
	model_row_set(row, "source_view", CStringGetTextDatum(store_rel(sm, "source")), false);
	row_float(row, "sketch_bound", diag->sketch_bound);
	store_one_row(sm, row);
}

/* feature_names must hold one name per feature, without NULLs (22023). */
static void
check_names(const Stage *st, int d)
{
	ArrayType  *a;
	int			n;

	if (st->names_null)
		return;
	a = DatumGetArrayTypeP(st->names);
	n = ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a));
	if (ARR_NDIM(a) == 1 && n == d && !array_contains_nulls(a))
		return;
	ereport(ERROR,
			(errcode(PERPCA_ERRCODE_ARGUMENT),
			 errmsg("feature_names must hold one name for each of the %d features, without NULLs", d),
			 errdetail("It has %d names.", n)));
}

/* The starts of a fit as the history keeps them: [{start, rounds_run, objective, converged, chosen}], or NULL. */
static Datum
starts_jsonb(const FitDiagnostics *diag, bool *isnull)
{
	StringInfoData buf;

	*isnull = diag->nstarts == 0;
	if (*isnull)
		return (Datum) 0;
	initStringInfo(&buf);
	appendStringInfoChar(&buf, '[');
	for (int j = 0; j < diag->nstarts; j++)
	{
		const FitStartReport *s = &diag->starts[j];

		appendStringInfoString(&buf, j > 0 ? ", {\"start\": " : "{\"start\": ");
		escape_json(&buf, s->name);
		appendStringInfo(&buf, ", \"rounds_run\": %d, \"objective\": %s, \"converged\": %s, \"chosen\": %s}",
						 s->rounds, isfinite(s->objective) ? float8out_internal(s->objective) : "null",
						 s->converged ? "true" : "false", j == diag->chosen ? "true" : "false");
	}
	appendStringInfoChar(&buf, ']');
	return DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data));
}

/* Swap: the old rows out (an existing model is locked by its writer), or a new model's tables. */
static void
store_swap_out(const StoreModel *sm)
{
	if (OidIsValid(store_relid(sm, "info")))
	{
		store_sql(psprintf("DELETE FROM %s; DELETE FROM %s; DELETE FROM %s", store_rel(sm, "components"),
						   store_rel(sm, "clients"), store_rel(sm, "info")), 0, NULL, NULL, NULL);
		/* A model stored by an earlier version gets the columns added since, once. */
		store_columns_add(sm, MODEL_TABLE_INFO);
		return;
	}
	model_schema_create(MODEL_TABLE_COMPONENTS, sm->schema, sm->base);
	model_schema_create(MODEL_TABLE_CLIENTS, sm->schema, sm->base);
	model_schema_create(MODEL_TABLE_INFO, sm->schema, sm->base);
	/* a model trained again continues its history */
	if (!OidIsValid(store_relid(sm, "history")))
		model_schema_create(MODEL_TABLE_HISTORY, sm->schema, sm->base);
}

/* The next version of a model (the sequence of perpca's schema, as the current user). */
static int64
store_next_version(const StoreModel *sm)
{
	Oid			seq = get_relname_relid("perpca_model_version", perpca_extension_schema());

	if (!OidIsValid(seq))
		elog(ERROR, "sequence %s.perpca_model_version not found", sm->ext);
	return nextval_internal(seq, true);
}

/* Store the fit diag of rows (of desc) and its figures; what the history keeps into out->history. */
static void
store_write(const StoreModel *sm, const char *query, const char *path, const Stage *st, Tuplestorestate *rows,
			TupleDesc desc, const FitDiagnostics *diag, StoreFit *out)
{
	Jsonb	   *options = fit_options_jsonb(&diag->opts, false);
	FitRows		fr = {0};
	InfoFacts	f = {.query = query, .path = path};
	ClientBasis b = {diag->dim, diag->scale_factors, diag->opts.center, NULL, NULL, 0, "fit"};
	ModelRow	info;

	f.version = store_next_version(sm);
	f.digest = store_digest(st, JsonbPGetDatum(options), st->names, st->names_null);
	store_swap_out(sm);
	store_components(sm, rows, desc, st, diag->dim, &fr);
	/* with a sketched client, the fit's pooled mean */
	b.gmean = f.gmean = diag->pooled_mean ? diag->pooled_mean : staged_mean(st, diag->dim);
	b.U = fr.U;
	b.r1 = fr.r1;
	f.total_variance = store_clients(sm, st, &b, &fr, diag);
	store_info(sm, st, diag, options, &f, &info);
	model_row_history_of(&out->history, &info);
}

void
store_fit(const StoreModel *sm, const char *query, const char *path, const FitOptions *opts, const Stage *st,
		  StoreFit *out)
{
	FitDiagnostics *diag = &out->diag;
	Tuplestorestate *rows;
	TupleDesc	desc;
	MemoryContext fitcxt;
	Datum		starts;
	bool		isnull;

	memset(diag, 0, sizeof(FitDiagnostics));
	diag->opts = *opts;
	/* the fit reads the stage (and the warm start) as they are now */
	CommandCounterIncrement();
	PushCopiedSnapshot(GetActiveSnapshot());
	UpdateActiveSnapshotCommandId();
	fitcxt = fit_sql_model(psprintf("SELECT client, stats%s FROM pg_temp.perpca_train_src ORDER BY client COLLATE \"C\"",
									st->any_n_local ? ", n_local" : ""), diag, &rows, &desc);
	PopActiveSnapshot();
	check_names(st, diag->dim);
	store_write(sm, query, path, st, rows, desc, diag, out);
	model_row_set(&out->history, "rows", Int64GetDatum(store_stage_rows(st)), false);
	model_row_set(&out->history, "outcome", CStringGetTextDatum("fitted"), false);
	starts = starts_jsonb(diag, &isnull);
	model_row_set(&out->history, "starts", starts, isnull);
	if (!diag->converged)
		model_row_set(&out->history, "warning",
					  CStringGetTextDatum(psprintf("did not converge in %d rounds", diag->rounds)), false);
	tuplestore_end(rows);
	MemoryContextDelete(fitcxt);
	/* what pointed into the fit's memory is gone */
	diag->pooled_mean = diag->scale_factors = NULL;
	diag->constant = NULL;
	diag->client_bounds = NULL;
	diag->nbounds = 0;
	diag->trace = NULL;
}

/* Whether the history table is there: a model stored before 0.3.0 gets it at its first refresh, if its owner may create it. */
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

/* ------------------------------------------------------------------------
 * The history, and one client personalized
 * ------------------------------------------------------------------------
 */

void
store_history_append(const StoreModel *sm, ModelRow *row)
{
	Datum		v;
	bool		isnull;

	(void) model_row_get(row, "version", &v, &isnull);
	if (isnull)
	{
		v = store_one(psprintf("SELECT i.version FROM %s i", store_rel(sm, "info")), &isnull);
		model_row_set(row, "version", v, isnull);
	}
	if (!store_history_table(sm))
		return;
	/* a history started before 0.4.0 gets the columns added since (sketch_bound), once */
	store_columns_add(sm, MODEL_TABLE_HISTORY);
	v = store_one(psprintf("SELECT coalesce(max(h.entry), 0) + 1 FROM %s h", store_rel(sm, "history")), &isnull);
	model_row_set(row, "entry", v, false);
	store_one_row(sm, row);
}

/*
 * The k local components (rows) of scaled statistics s about centre with
 * the r1 global components U frozen, and their variances: the top k
 * eigenvectors of (I - U'U) S (I - U'U).
 */
static double *
local_pcs(const PerpcaStats *s, const double *centre, const double *U, int r1, int k, double *values)
{
	int			d = s->dim;
	double	   *Z = palloc(sizeof(double) * d * k);
	FitClient	c;

	clients_one(s, centre, r1, k, &c);
	client_top_eigen(&c, r1 > 0 ? columns_of(U, r1, d) : NULL, k, values, Z, k);
	linalg_fix_signs(d, k, Z, k);
	return columns_of(Z, d, k);
}

/* Store the k local components V of client (and their variances) as rows of <base>_components, and into out. */
static void
personalize_components(const StoreModel *sm, const char *client, const double *V, const double *values, int k,
					   int d, Tuplestorestate *out)
{
	TupleDesc	desc = CreateTemplateTupleDesc(3);
	ModelRows	rs;
	ModelRow	row;

	TupleDescInitEntry(desc, 1, "component", INT4OID, -1, 0);
	TupleDescInitEntry(desc, 2, "pc", FLOAT8ARRAYOID, -1, 0);
	TupleDescInitEntry(desc, 3, "variance", FLOAT8OID, -1, 0);
	model_rows_begin(&rs, MODEL_TABLE_COMPONENTS, sm->schema, sm->base);
	for (int j = 0; j < k; j++)
	{
		Datum		v[3] = {Int32GetDatum(j + 1), PointerGetDatum(perpca_vector_build(V + (int64) j * d, d)),
		Float8GetDatum(values[j])};

		model_row_init(&row, MODEL_TABLE_COMPONENTS);
		model_row_set(&row, "client", CStringGetTextDatum(client), false);
		model_row_set(&row, "kind", CStringGetTextDatum("local"), false);
		model_row_set(&row, "component", v[0], false);
		model_row_set(&row, "pc", v[1], false);
		model_row_set(&row, "variance", v[2], false);
		model_rows_add(&rs, &row);
		if (out != NULL)
			tuplestore_puttuple(out, heap_form_tuple(desc, v, (bool[3]) {false, false, false}));
	}
	model_rows_insert(&rs);
}

/* The fit's centre of a stored model. */
static FitCenter
model_center(const ModelData *m)
{
	return m->center == CENTER_CLIENT ? FIT_CENTER_CLIENT : m->center == CENTER_GLOBAL ? FIT_CENTER_GLOBAL
		: FIT_CENTER_NONE;
}

uint64
store_personalize(const StoreModel *sm, const ModelData *m, const char *client, const PerpcaStats *stats,
				  int n_local, Tuplestorestate *out)
{
	ClientBasis b = {m->d, m->scale, model_center(m), m->global_mean, m->U, m->r1, "personalize"};
	StagedClient sc = {.key = (char *) client, .stats = (PerpcaStats *) stats};
	Datum		key = CStringGetTextDatum(client);
	double	   *V = NULL,
				tv;
	ModelRow	row;
	bool		isnull;

	if (n_local < 0)
	{
		Datum		v = store_one(psprintf("SELECT i.n_local FROM %s i", store_rel(sm, "info")), &isnull);

		n_local = isnull ? 0 : DatumGetInt32(v);
	}
	store_sql(psprintf("DELETE FROM %s WHERE kind = 'local' AND client = $1; DELETE FROM %s WHERE client = $1",
					   store_rel(sm, "components"), store_rel(sm, "clients")), 1, (Oid[]) {TEXTOID}, &key, NULL);
	if (n_local > 0)
	{
		/* The local components live where the model's components do: in the scaled features. */
		PerpcaStats *s = scaled_stats(stats, m->scale);
		double	   *values = palloc(sizeof(double) * n_local);

		V = local_pcs(s, client_centre(&b, s), m->U, m->r1, n_local, values);
		personalize_components(sm, client, V, values, n_local, m->d, out);
	}
	/* its share of a sketch's bound, k delta / (2 n), as the fit's (fit_input.c, clients_sketch_bound) */
	client_row(&row, &b, &sc, V, n_local,
			   0.5 * (m->r1 + n_local) * perpca_stats_sketch_delta(stats) / (double) stats->n, false, &tv);
	store_columns_add(sm, MODEL_TABLE_CLIENTS);
	store_one_row(sm, &row);
	/* the version first: Citus refuses nextval() inside an UPDATE of a reference table */
	key = Int64GetDatum(store_next_version(sm));
	store_sql(psprintf("UPDATE %s SET version = $1", store_rel(sm, "info")), 1, (Oid[]) {INT8OID}, &key, NULL);
	return n_local;
}

/* Add to the model's table t the declared columns it lacks. */
void
store_columns_add(const StoreModel *sm, ModelTable t)
{
	Oid			relid = store_relid(sm, model_table_suffix(t));

	if (OidIsValid(relid))
		(void) model_schema_add_missing(t, relid);
}

/* ------------------------------------------------------------------------
 * The stage: the caller's temporary tables of a train or refresh
 * ------------------------------------------------------------------------
 */

/* Drop pg_temp.name if it exists. */
static void
stage_drop_one(const char *name)
{
	Oid			temp = LookupExplicitNamespace("pg_temp", true);

	if (OidIsValid(temp) && OidIsValid(get_relname_relid(name, temp)))
		store_sql(psprintf("DROP TABLE pg_temp.%s", name), 0, NULL, NULL, NULL);
}

/* GRANT privileges on pg_temp.name to reader, unless reader is the current user. */
static void
stage_grant(const char *name, const char *privileges, Oid reader)
{
	if (reader != GetUserId())
		store_sql(psprintf("GRANT %s ON pg_temp.%s TO %s", privileges, name,
						   quote_identifier(GetUserNameFromId(reader, false))), 0, NULL, NULL, NULL);
}

void
store_stage_create(const StoreModel *sm, Oid reader)
{
	stage_drop_one("perpca_train_src");
	store_sql(psprintf("CREATE TEMPORARY TABLE perpca_train_src (client_type regtype, client text,"
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
	store_sql(command, 0, NULL, NULL, NULL);
	AtEOXact_GUC(true, nestlevel);
	stage_grant("perpca_train_start", "SELECT", reader);
}

void
store_stage_drop(void)
{
	stage_drop_one("perpca_train_src");
	stage_drop_one("perpca_train_start");
}
