/*
 * run_as_owner.c -- perpca_internal.run_as(): run one SQL command as a
 * model's owner, as REFRESH MATERIALIZED VIEW runs its query
 *
 * The caller must have the privileges of the given role (the model's owner:
 * the role itself or a member of it); otherwise insufficient_privilege
 * (42501).  The command then runs with that role as current user, inside a
 * security-restricted operation (no SET ROLE, no temporary objects, no
 * session-level changes that outlive it) and with search_path set to
 * "pg_catalog, pg_temp" at a new GUC nesting level, so that the caller's
 * search_path has no say either.  Everything is undone on return, and on
 * error by the (sub)transaction abort, as for matviews.
 *
 * Since the caller already has the role's privileges, the function grants
 * nothing that SET ROLE to it would not: it is safe for PUBLIC.
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

#include "run_as_owner.h"

PG_FUNCTION_INFO_V1(perpca_run_as);

/* Argument positions of run_as(role, command, VARIADIC args). */
#define ARG_ROLE 0
#define ARG_COMMAND 1
#define ARG_FIRST_PARAM 2

void
run_as_check_role(Oid role)
{
	if (!has_privs_of_role(GetUserId(), role))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be a member of role %s", GetUserNameFromId(role, false)),
				 errdetail("The model belongs to role %s.", GetUserNameFromId(role, false)),
				 errhint("Only the owner of a model, or a member of the owning role, may refresh or replace it.")));
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
			elog(ERROR, "run_as: the command must return one jsonb column");
		result = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, isnull);
		if (!*isnull)
			result = SPI_datumTransfer(result, false, -1);
	}
	SPI_finish();
	return result;
}

/*
 * perpca_internal.run_as(role regrole, command text, VARIADIC args "any")
 *   RETURNS jsonb
 */
Datum
perpca_run_as(PG_FUNCTION_ARGS)
{
	Oid			role;
	char	   *command;
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
	Datum		result;
	bool		isnull;

	if (PG_ARGISNULL(ARG_ROLE) || PG_ARGISNULL(ARG_COMMAND))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("role and command must not be NULL")));
	if (get_fn_expr_variadic(fcinfo->flinfo))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("run_as takes its parameters as separate arguments, not as a VARIADIC array")));
	role = PG_GETARG_OID(ARG_ROLE);
	command = text_to_cstring(PG_GETARG_TEXT_PP(ARG_COMMAND));
	run_as_check_role(role);

	/* As ExecRefreshMatView: become the owner, restricted, at a new GUC level. */
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(role, save_sec_context | SECURITY_RESTRICTED_OPERATION);
	save_nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);

	result = run_command(fcinfo, command, &isnull);

	AtEOXact_GUC(false, save_nestlevel);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(result);
}
