/*
 * model_store.c -- perpca_internal.perpca_run_as_owner(): run one SQL command
 * as the owner of a model, as REFRESH MATERIALIZED VIEW runs its query
 *
 * The caller must be the owner of the given relation (a model's info table)
 * or have the privileges of the owning role; otherwise insufficient_privilege
 * (42501).  The command then runs with the owner as current user, inside a
 * security-restricted operation (no SET ROLE, no temporary objects, no
 * session-level changes that outlive it) and with search_path set to
 * "pg_catalog, <perpca's schema>, pg_temp" at a new GUC nesting level, so
 * that the caller's search_path has no say either.  Everything is undone on
 * return, and on error by the (sub)transaction abort, as for matviews.
 *
 * Since the caller already has the owner's privileges, the function grants
 * nothing that SET ROLE to the owner would not: it is safe for PUBLIC.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/inval.h"
#include "utils/syscache.h"

#include "model_store.h"

PG_FUNCTION_INFO_V1(perpca_run_as_owner);
PG_FUNCTION_INFO_V1(perpca_accept_invalidations);

/* Argument positions of perpca_run_as_owner(relation, schema, command, VARIADIC args). */
#define ARG_RELATION 0
#define ARG_SCHEMA 1
#define ARG_COMMAND 2
#define ARG_FIRST_PARAM 3

Oid
model_store_check_owner(Oid relid)
{
	HeapTuple	tuple;
	Oid			owner;

	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tuple))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	if (!has_privs_of_role(GetUserId(), owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of table %s", get_rel_name(relid)),
				 errdetail("The table belongs to a perpca model owned by role %s.", GetUserNameFromId(owner, false)),
				 errhint("Only the owner of a model, or a member of the owning role, may refresh or replace it.")));
	return owner;
}

/* "pg_catalog, <schema>, pg_temp" for the schema with OID nsp. */
static char *
safe_search_path(Oid nsp)
{
	char	   *name = get_namespace_name(nsp);

	if (name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_SCHEMA),
				 errmsg("schema with OID %u does not exist", nsp)));
	return psprintf("pg_catalog, %s, pg_temp", quote_identifier(name));
}

/* Run command with the variadic arguments as $1..$n; the first column of its
 * first row (jsonb), copied out of SPI, or NULL. */
static Datum
run_command(FunctionCallInfo fcinfo, const char *command, bool *isnull)
{
	int			nparams = PG_NARGS() - ARG_FIRST_PARAM;
	Oid		   *types = palloc0(sizeof(Oid) * Max(nparams, 1));
	Datum	   *values = palloc0(sizeof(Datum) * Max(nparams, 1));
	char	   *nulls = palloc0(Max(nparams, 1) + 1);
	Datum		result = (Datum) 0;
	int			rc;

	for (int i = 0; i < nparams; i++)
	{
		types[i] = get_fn_expr_argtype(fcinfo->flinfo, ARG_FIRST_PARAM + i);
		if (!OidIsValid(types[i]))
			elog(ERROR, "could not determine the type of argument %d", ARG_FIRST_PARAM + i + 1);
		values[i] = PG_GETARG_DATUM(ARG_FIRST_PARAM + i);
		nulls[i] = PG_ARGISNULL(ARG_FIRST_PARAM + i) ? 'n' : ' ';
	}
	*isnull = true;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	rc = SPI_execute_with_args(command, nparams, types, values, nulls, false, 0);
	if (rc < 0)
		elog(ERROR, "SPI_execute_with_args failed (%d): %s", rc, command);
	if (SPI_tuptable != NULL && SPI_processed > 0)
	{
		if (SPI_tuptable->tupdesc->natts < 1 ||
			SPI_gettypeid(SPI_tuptable->tupdesc, 1) != JSONBOID)
			elog(ERROR, "perpca_run_as_owner: the command must return one jsonb column");
		result = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, isnull);
		if (!*isnull)
			result = SPI_datumTransfer(result, false, -1);
	}
	SPI_finish();
	return result;
}

/*
 * perpca_run_as_owner(relation regclass, schema regnamespace, command text,
 *                     VARIADIC args "any") RETURNS jsonb
 */
Datum
perpca_run_as_owner(PG_FUNCTION_ARGS)
{
	Oid			relid;
	Oid			owner;
	char	   *command;
	char	   *path;
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
	Datum		result;
	bool		isnull;

	if (PG_ARGISNULL(ARG_RELATION) || PG_ARGISNULL(ARG_SCHEMA) || PG_ARGISNULL(ARG_COMMAND))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("relation, schema and command must not be NULL")));
	if (get_fn_expr_variadic(fcinfo->flinfo))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("perpca_run_as_owner takes its parameters as separate arguments, not as a VARIADIC array")));
	relid = PG_GETARG_OID(ARG_RELATION);
	command = text_to_cstring(PG_GETARG_TEXT_PP(ARG_COMMAND));
	path = safe_search_path(PG_GETARG_OID(ARG_SCHEMA));
	owner = model_store_check_owner(relid);

	/* As ExecRefreshMatView: become the owner, restricted, at a new GUC level. */
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(owner, save_sec_context | SECURITY_RESTRICTED_OPERATION);
	save_nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", path, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);

	result = run_command(fcinfo, command, &isnull);

	AtEOXact_GUC(false, save_nestlevel);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(result);
}

/*
 * perpca_accept_invalidations() RETURNS void: process pending catalog
 * invalidations, so that a model another session created while this one
 * waited for the model's (advisory) lock is seen by the lookups that follow.
 * Locking a relation does this; an advisory lock does not.
 */
Datum
perpca_accept_invalidations(PG_FUNCTION_ARGS)
{
	AcceptInvalidationMessages();
	PG_RETURN_VOID();
}
