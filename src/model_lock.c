/*
 * model_lock.c -- the rule for model names, finding and locking a model's
 * three tables in one order (model_lock.h), and perpca_drop
 *
 * The name lock is a lock on an object (pg_namespace, schema, key) with a
 * non-zero sub-id: PostgreSQL takes such locks only with sub-id 0 and SQL
 * offers no way to take one, so no other role can hold it to make the
 * owner's refresh fail (as it could an advisory lock).
 */
#include "postgres.h"

#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/varlena.h"
#include "access/htup_details.h"

#include "error_kinds.h"
#include "model_lock.h"

PG_FUNCTION_INFO_V1(perpca_model_lock_sql);
PG_FUNCTION_INFO_V1(perpca_drop);

static const char *const model_rel_suffix[MODEL_NRELS] = {"info", "clients", "components"};

static const LOCKMODE rel_lockmode[] = {
	[MODEL_LOCK_READ] = AccessShareLock,
	[MODEL_LOCK_WRITE] = ShareRowExclusiveLock,
	[MODEL_LOCK_DROP] = AccessExclusiveLock
};

void
model_missing_error(const char *model, const char *schema, const char *base, const char *hint)
{
	ereport(ERROR,
			(errcode(PERPCA_ERRCODE_UNDEFINED),
			 errmsg("model \"%s\" does not exist", model),
			 schema ?
			 errdetail("No table %s was found.",
					   quote_qualified_identifier(schema, psprintf("%s_info", base))) :
			 errdetail("No table %s was found in the search_path.",
					   quote_identifier(psprintf("%s_info", base))),
			 errhint("%s %s", hint ? hint : "Create it with perpca_train().", MODEL_NAME_RULE)));
}

List *
model_name_parts(const char *model)
{
	List	   *parts;

	if (!SplitIdentifierString(pstrdup(model), '.', &parts) ||
		list_length(parts) < 1 || list_length(parts) > 2)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_MODEL_NAME),
				 errmsg("improper model name \"%s\"", model),
				 errdetail("A model name is a table name prefix, optionally qualified by a schema name."),
				 errhint("%s", MODEL_NAME_RULE)));
	/* (identifiers longer than NAMEDATALEN - 1 were truncated to it, so they fail here too) */
	if (strlen(llast(parts)) > MODEL_BASE_MAX)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_MODEL_NAME_LONG),
				 errmsg("model name \"%s\" is too long", (char *) llast(parts)),
				 errdetail("A model name has at most %d bytes, so that \"<model>_components\" is a valid table name.",
						   MODEL_BASE_MAX)));
	return parts;
}

static void
model_busy_error(const ModelLock *ml, const char *detail)
{
	ereport(ERROR,
			(errcode(PERPCA_ERRCODE_MODEL_BUSY),
			 errmsg("model \"%s\" is being refreshed or changed by another transaction", ml->model),
			 errdetail("%s", detail),
			 errhint("Try again when it has finished, or pass wait => true to wait for it.")));
}

char *
model_relid_name(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)), get_rel_name(relid));
}

Oid
model_rel_owner(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tup))
		return InvalidOid;
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

/* insufficient_privilege unless the current user has the privileges of owner. */
static void
check_owner_privs(const ModelLock *ml, Oid owner)
{
	if (OidIsValid(owner) && !has_privs_of_role(GetUserId(), owner))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NOT_OWNER),
				 errmsg("must be owner of model \"%s\"", ml->model),
				 errdetail("The model is owned by role %s.", GetUserNameFromId(owner, false)),
				 errhint("Only the owner of a model, or a member of the owning role, may refresh, replace or change it.")));
}

/*
 * The schema of the model (found through the search_path when the name is
 * not qualified), or InvalidOid when there is none: no such schema, or no
 * <base>_info in the search_path.  For a model to be written, the schema it
 * would be created in.
 */
static Oid
model_namespace(ModelLock *ml, const char *schema, bool creating)
{
	Oid			nsp;

	if (schema != NULL)
	{
		/* as CREATE TABLE and SELECT look a schema up (pg_temp is this session's);
		 * CREATE on it is checked later, only for a model that does not exist,
		 * so that the owner check of an existing one comes first (42501 "must be
		 * owner of model", not "permission denied for schema") */
		if (creating && strcmp(schema, "pg_temp") == 0)
			return LookupCreationNamespace(schema);
		return LookupExplicitNamespace(schema, !creating);
	}
	nsp = RelnameGetRelid(psprintf("%s_info", ml->base));
	if (OidIsValid(nsp))
		return get_rel_namespace(nsp);
	if (!creating)
		return InvalidOid;
	/* where CREATE TABLE would put it; invalid_schema_name when nowhere */
	return RangeVarGetCreationNamespace(makeRangeVar(NULL, psprintf("%s_info", ml->base), -1));
}

/* The name lock's tag: (pg_namespace, nsp, key), key a non-zero hash of the base name. */
static void
name_locktag(LOCKTAG *tag, Oid nsp, const char *base)
{
	uint32		h = hash_bytes((const unsigned char *) base, strlen(base));

	SET_LOCKTAG_OBJECT(*tag, MyDatabaseId, NamespaceRelationId, nsp, (uint16) (1 + h % 65535));
}

/*
 * Look up nsp.relname and lock it; InvalidOid when it does not exist (then
 * nothing stays locked).  The lookup is repeated after the lock is granted,
 * as RangeVarGetRelidExtended does, so a relation dropped or replaced while
 * this session waited is seen as such.
 */
static Oid
lock_relation(ModelLock *ml, const char *relname, ModelLockMode mode, bool wait)
{
	LOCKMODE	lockmode = rel_lockmode[mode];

	for (;;)
	{
		Oid			relid = get_relname_relid(relname, ml->nsp);

		if (!OidIsValid(relid))
			return InvalidOid;
		/* Nobody queues a strong lock on a relation of a role whose privileges he lacks. */
		if (mode != MODEL_LOCK_READ)
			check_owner_privs(ml, model_rel_owner(relid));
		if (wait)
			LockRelationOid(relid, lockmode);
		else if (!ConditionalLockRelationOid(relid, lockmode))
			model_busy_error(ml, "Another transaction holds a lock on the model's tables that excludes writers.");
		AcceptInvalidationMessages();
		if (get_relname_relid(relname, ml->nsp) == relid && OidIsValid(model_rel_owner(relid)))
			return relid;
		UnlockRelationOid(relid, lockmode);
	}
}

/* Plain tables of one owner; writers must have the owner's privileges. */
static void
check_relations(ModelLock *ml, ModelLockMode mode)
{
	ml->owner = model_rel_owner(ml->relid[MODEL_REL_INFO]);
	for (int i = 0; i < MODEL_NRELS; i++)
	{
		Oid			relid = ml->relid[i];
		char		kind = get_rel_relkind(relid);
		Oid			owner = model_rel_owner(relid);

		if (kind != RELKIND_RELATION)
			ereport(ERROR,
					(errcode(PERPCA_ERRCODE_WRONG_OBJECT),
					 errmsg("model \"%s\" is not stored in plain tables", ml->model),
					 errdetail("%s is not a table (relkind '%c').", model_relid_name(relid), kind),
					 errhint("perpca reads a model only from the tables perpca_train() creates; drop \"%s\" and train the model again.",
							 get_rel_name(relid))));
		if (owner != ml->owner)
			ereport(ERROR,
					(errcode(PERPCA_ERRCODE_NOT_OWNER),
					 errmsg("the tables of model \"%s\" have different owners", ml->model),
					 errdetail("%s is owned by role \"%s\", %s by role \"%s\".",
							   model_relid_name(ml->relid[MODEL_REL_INFO]), GetUserNameFromId(ml->owner, true),
							   model_relid_name(relid), GetUserNameFromId(owner, true)),
					 errhint("All three tables of a model must belong to one role.")));
	}
	if (mode != MODEL_LOCK_READ)
		check_owner_privs(ml, ml->owner);
}

/*
 * Writers and drop: take the model's name lock, then look its schema up
 * again, until the schema found is the one locked (the model may have been
 * created or dropped meanwhile).  The caller must have the privileges of the
 * owner of an existing model, or may create tables in the schema.
 */
static void
name_lock(ModelLock *ml, const char *schema, bool creating, bool wait)
{
	LOCKTAG		tag;

	for (;;)
	{
		Oid			nsp;
		Oid			info;

		if (!OidIsValid(ml->nsp))
			break;
		info = get_relname_relid(psprintf("%s_info", ml->base), ml->nsp);
		if (OidIsValid(info))
			check_owner_privs(ml, model_rel_owner(info));
		else if (creating &&
				 object_aclcheck(NamespaceRelationId, ml->nsp, GetUserId(), ACL_CREATE) != ACLCHECK_OK)
			aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_SCHEMA, get_namespace_name(ml->nsp));
		name_locktag(&tag, ml->nsp, ml->base);
		if (LockAcquire(&tag, ExclusiveLock, false, !wait) == LOCKACQUIRE_NOT_AVAIL)
			model_busy_error(ml, "Another transaction holds the model's lock.");
		AcceptInvalidationMessages();
		nsp = model_namespace(ml, schema, creating);
		if (nsp == ml->nsp)
			break;
		LockRelease(&tag, ExclusiveLock, false);
		ml->nsp = nsp;
	}
}

/* After <model>_info: lock <model>_clients and <model>_components, which must exist. */
static void
lock_other_tables(ModelLock *ml, ModelLockMode mode, bool wait)
{
	for (int i = MODEL_REL_CLIENTS; i < MODEL_NRELS; i++)
	{
		ml->relid[i] = lock_relation(ml, psprintf("%s_%s", ml->base, model_rel_suffix[i]), mode, wait);
		if (!OidIsValid(ml->relid[i]))
			ereport(ERROR,
					(errcode(PERPCA_ERRCODE_MODEL_INCOMPLETE),
					 errmsg("model \"%s\" is incomplete", ml->model),
					 errdetail("Relation %s does not exist.",
							   quote_qualified_identifier(ml->schema,
														  psprintf("%s_%s", ml->base, model_rel_suffix[i])))));
	}
}

/* model_lock() with messages naming the model as display (when not NULL). */
static void
model_lock_as(ModelLock *ml, const char *name, const char *display, ModelLockMode mode, bool wait, bool missing_ok)
{
	List	   *parts = model_name_parts(name);
	const char *schema = list_length(parts) == 2 ? linitial(parts) : NULL;
	const char *model = display ? display : name;
	/* a model to be written that may not exist yet: it would be created */
	bool		creating = mode == MODEL_LOCK_WRITE && missing_ok;

	memset(ml, 0, sizeof(ModelLock));
	ml->model = pstrdup(model);
	ml->base = llast(parts);
	if (mode != MODEL_LOCK_READ && RecoveryInProgress())
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_READ_ONLY),
				 errmsg("cannot change model \"%s\" during recovery", model),
				 errdetail("This server is a hot standby; models are read-only here."),
				 errhint("Train, refresh, personalize and drop models on the primary; standbys receive them by replication.")));
	ml->nsp = model_namespace(ml, schema, creating);
	if (mode != MODEL_LOCK_READ)
		name_lock(ml, schema, creating, wait);
	if (OidIsValid(ml->nsp))
	{
		ml->schema = get_namespace_name(ml->nsp);
		ml->relid[MODEL_REL_INFO] = lock_relation(ml, psprintf("%s_info", ml->base), mode, wait);
	}
	if (!OidIsValid(ml->relid[MODEL_REL_INFO]))
	{
		if (missing_ok)
			return;
		model_missing_error(model, schema, ml->base,
							mode == MODEL_LOCK_DROP ? "Pass if_exists => true to skip a missing model." : NULL);
	}
	lock_other_tables(ml, mode, wait);
	check_relations(ml, mode);
	ml->present = true;
}

void
model_lock(ModelLock *ml, const char *model, ModelLockMode mode, bool wait, bool missing_ok)
{
	model_lock_as(ml, model, NULL, mode, wait, missing_ok);
}

Oid
model_lock_history(ModelLock *ml, ModelLockMode mode, bool wait)
{
	if (!OidIsValid(ml->nsp))
		return InvalidOid;
	return lock_relation(ml, psprintf("%s_history", ml->base), mode, wait);
}

/*
 * The purpose of perpca_internal.model_lock: write or drop, which check the
 * owner's privileges before any lock (a read lock checks none: it is for
 * the C readers, whose statement then checks SELECT).
 */
static ModelLockMode
sql_lock_mode(const char *purpose)
{
	if (strcmp(purpose, "write") == 0 || strcmp(purpose, "drop") == 0)
		return purpose[0] == 'w' ? MODEL_LOCK_WRITE : MODEL_LOCK_DROP;
	ereport(ERROR,
			(errcode(PERPCA_ERRCODE_ARGUMENT),
			 errmsg("perpca_internal.model_lock takes purpose write or drop, not \"%s\"", purpose),
			 errdetail("perpca's readers take a model's read locks in C.")));
	pg_unreachable();
}

/*
 * perpca_internal.model_lock(model text, purpose text, wait boolean, missing_ok boolean,
 *     display text, OUT present boolean, OUT schema_name text, OUT base text,
 *     OUT info oid, OUT clients oid, OUT components oid, OUT owner oid)
 */
Datum
perpca_model_lock_sql(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[7];
	bool		nulls[7] = {false};
	ModelLock	ml;
	ModelLockMode mode;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NULL),
				 errmsg("model must not be NULL")));
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "perpca_internal.model_lock must return a record");
	mode = sql_lock_mode(text_to_cstring(PG_GETARG_TEXT_PP(1)));
	model_lock_as(&ml, text_to_cstring(PG_GETARG_TEXT_PP(0)),
				  PG_ARGISNULL(4) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(4)),
				  mode, PG_ARGISNULL(2) || PG_GETARG_BOOL(2), !PG_ARGISNULL(3) && PG_GETARG_BOOL(3));
	values[0] = BoolGetDatum(ml.present);
	nulls[1] = ml.schema == NULL;
	values[1] = ml.schema ? CStringGetTextDatum(ml.schema) : (Datum) 0;
	values[2] = CStringGetTextDatum(ml.base);
	for (int i = 0; i < MODEL_NRELS; i++)
	{
		values[3 + i] = ObjectIdGetDatum(ml.relid[i]);
		nulls[3 + i] = !ml.present;
	}
	values[6] = ObjectIdGetDatum(ml.owner);
	nulls[6] = !ml.present;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}

/* The info table has the column "version" of type bigint that perpca_train gives it. */
static bool
is_model_info(Oid relid)
{
	AttrNumber	att = get_attnum(relid, "version");

	return att != InvalidAttrNumber && get_atttype(relid, att) == INT8OID;
}

/*
 * The view <base>_<suffix> of the model's query: "source" (model_store.c,
 * store_source_bind), "calibration" (its rows, calibrate.c), when it is a
 * view of the model's owner; else InvalidOid (a model stored before 0.4.0
 * and never refreshed has no source view; one without calibration has no
 * calibration view).
 */
static Oid
model_source_view(const ModelLock *ml, const char *suffix)
{
	Oid			nsp = get_rel_namespace(ml->relid[MODEL_REL_INFO]);
	Oid			view = get_relname_relid(psprintf("%s_%s", ml->base, suffix), nsp);

	if (!OidIsValid(view) || get_rel_relkind(view) != RELKIND_VIEW || model_rel_owner(view) != ml->owner)
		return InvalidOid;
	return view;
}

/* DROP VIEW of the model's view <base>_<suffix>, when it has one (under SPI). */
static void
drop_view(const ModelLock *ml, const char *suffix)
{
	Oid			view = model_source_view(ml, suffix);

	if (OidIsValid(view) &&
		SPI_execute(psprintf("DROP VIEW %s", model_relid_name(view)), false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "perpca_drop: DROP VIEW %s failed", model_relid_name(view));
}

/* DROP TABLE of the model's tables and its history, in lock order, every name qualified. */
static char *
drop_command(const ModelLock *ml, Oid history)
{
	StringInfoData cmd;

	initStringInfo(&cmd);
	appendStringInfoString(&cmd, "DROP TABLE ");
	for (int i = 0; i < MODEL_NRELS; i++)
		appendStringInfo(&cmd, "%s%s", i > 0 ? ", " : "", model_relid_name(ml->relid[i]));
	if (OidIsValid(history))
		appendStringInfo(&cmd, ", %s", model_relid_name(history));
	return cmd.data;
}

/* perpca_drop(model text, if_exists boolean DEFAULT false) RETURNS void */
Datum
perpca_drop(PG_FUNCTION_ARGS)
{
	char	   *model = text_to_cstring(PG_GETARG_TEXT_PP(0));
	bool		if_exists = PG_GETARG_BOOL(1);
	ModelLock	ml;
	char	   *cmd;

	model_lock(&ml, model, MODEL_LOCK_DROP, true, if_exists);
	if (!ml.present)
	{
		ereport(NOTICE,
				(errmsg("model \"%s\" does not exist, skipping", model)));
		PG_RETURN_VOID();
	}
	if (!is_model_info(ml.relid[MODEL_REL_INFO]))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_WRONG_OBJECT),
				 errmsg("table %s is not the info table of a perpca model", model_relid_name(ml.relid[MODEL_REL_INFO])),
				 errdetail("It has no column \"version\" of type bigint."),
				 errhint("perpca_drop drops only models stored by perpca_train(); drop other tables with DROP TABLE.")));
	cmd = drop_command(&ml, model_lock_history(&ml, MODEL_LOCK_DROP, true));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	drop_view(&ml, "source");
	drop_view(&ml, "calibration");
	if (SPI_execute(cmd, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "perpca_drop: %s failed", cmd);
	SPI_finish();
	PG_RETURN_VOID();
}
