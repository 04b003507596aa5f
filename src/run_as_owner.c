/*
 * run_as_owner.c -- a model's query and writes run as its owner, as
 * REFRESH MATERIALIZED VIEW runs its query (run_as_owner.h)
 *
 * run_as_caught_call() catches whatever the owner's code raises, a 57014
 * or 55P03 of its own included; only an interrupt of the caller's statement
 * is raised again: a cancel or statement timeout, which PostgreSQL raises
 * from ProcessInterrupts alone, one still pending, or a lock timeout while
 * the caller's own lock_timeout is the one in effect.  So the owner can
 * neither stop the caller's batch of refreshes nor swallow its cancel.
 *
 * A security-restricted operation does not stop the owner's code from
 * taking a session-level advisory lock, which would outlive the refresh in
 * the caller's session.  run_as_enter() notes the session's advisory locks
 * with their counts; run_as_leave(), or the abort of the (sub)transaction
 * it ran in, releases every hold taken since.  Releasing rather than
 * refusing keeps the owner's code working as it does in her own session.
 *
 * perpca_internal.run_as() (0.3.0) and perpca_run_as_owner() (0.2.0) stay
 * for the scripts of those versions, which call them until ALTER EXTENSION
 * perpca UPDATE.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/inval.h"
#include "utils/jsonb.h"
#include "utils/json.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "error_kinds.h"
#include "pg_compat.h"
#include "run_as_owner.h"

PG_FUNCTION_INFO_V1(perpca_run_as);
PG_FUNCTION_INFO_V1(perpca_run_as_owner);
PG_FUNCTION_INFO_V1(perpca_accept_invalidations);

/* Raise insufficient_privilege unless the current user has the privileges of role. */
static void
run_as_check_role(Oid role)
{
	if (!has_privs_of_role(GetUserId(), role))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NOT_OWNER),
				 errmsg("must be a member of role %s", GetUserNameFromId(role, false)),
				 errdetail("The model belongs to role %s.", GetUserNameFromId(role, false)),
				 errhint("Only the owner of a model, or a member of the owning role, may refresh or replace it.")));
}

/* Run command with the arguments from first_param on as $1..$n; the first column of its
 * first row (jsonb), copied out of SPI, or NULL. */
static Datum
run_command(FunctionCallInfo fcinfo, const char *command, int first_param, bool *isnull)
{
	int			nparams = PG_NARGS() - first_param;
	Oid		   *types = palloc0(sizeof(Oid) * Max(nparams, 1));
	Datum	   *values = palloc0(sizeof(Datum) * Max(nparams, 1));
	char	   *nulls = palloc0(Max(nparams, 1) + 1);
	Datum		result = (Datum) 0;
	int			rc;

	for (int i = 0; i < nparams; i++)
	{
		types[i] = get_fn_expr_argtype(fcinfo->flinfo, first_param + i);
		if (!OidIsValid(types[i]))
			elog(ERROR, "could not determine the type of argument %d", first_param + i + 1);
		values[i] = PG_GETARG_DATUM(first_param + i);
		nulls[i] = PG_ARGISNULL(first_param + i) ? 'n' : ' ';
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
 * Run the command of argument command_arg, with the arguments from
 * first_param on as $1.., as role (run_as_enter) with search_path = path;
 * the first column (jsonb) of its first row.
 */
static Datum
run_as_role(FunctionCallInfo fcinfo, Oid role, const char *path, int command_arg, int first_param)
{
	char	   *command = text_to_cstring(PG_GETARG_TEXT_PP(command_arg));
	RunAs		ra;
	Datum		result;
	bool		isnull;

	if (get_fn_expr_variadic(fcinfo->flinfo))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_UNSUPPORTED),
				 errmsg("run_as takes its parameters as separate arguments, not as a VARIADIC array")));
	run_as_enter(&ra, role);
	(void) set_config_option("search_path", path, PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	result = run_command(fcinfo, command, first_param, &isnull);
	run_as_leave(&ra);
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(result);
}

/*
 * Whether an error is an interrupt of the caller's statement (a cancel
 * request, a statement timeout, or a lock timeout of the caller's own
 * lock_timeout, caller_lock_timeout, still in effect: read before the
 * subtransaction's abort restores it), as opposed to an error of the
 * owner's code, even one with SQLSTATE 57014 or 55P03: PostgreSQL raises
 * those interrupts from ProcessInterrupts alone, which clears the pending
 * flag as it raises; one that arrived since is still pending.
 */
static bool
caller_interrupted(const ErrorData *edata, int caller_lock_timeout)
{
	if (QueryCancelPending || ProcDiePending)
		return true;
	if (edata->funcname == NULL || strcmp(edata->funcname, "ProcessInterrupts") != 0)
		return false;
	if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
		return true;
	return edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE && caller_lock_timeout > 0 &&
		LockTimeout == caller_lock_timeout;
}

/* ------------------------------------------------------------------------
 * Session-level advisory locks taken by the owner's code
 * ------------------------------------------------------------------------
 */

/* A session-level advisory lock of this backend: its tag, mode and number of holds. */
typedef struct SessionLock
{
	LOCKTAG		tag;
	LOCKMODE	mode;
	int			holds;
} SessionLock;

/* The session's advisory locks when run_as_enter() ran, and the subtransaction it ran in. */
typedef struct LockGuard
{
	SubTransactionId subid;
	int			nlocks;
	SessionLock *locks;
} LockGuard;

/* The guards of the run_as_enter() calls not yet left, innermost last (TopMemoryContext). */
static List *lock_guards = NIL;

/*
 * The number of session-level holds of a lock this backend holds in some
 * way: one more, taken without waiting (already held, it only counts), read
 * from the local lock table, and given back.
 */
static int
session_holds(const LOCKTAG *tag, LOCKMODE mode)
{
	LOCALLOCK  *local = NULL;
	LockAcquireResult res = perpca_lock_acquire(tag, mode, true, true, &local);
	int			holds = 0;

	if (res == LOCKACQUIRE_NOT_AVAIL)
		return 0;
	for (int i = 0; local != NULL && i < local->numLockOwners; i++)
		if (local->lockOwners[i].owner == NULL)
			holds = (int) local->lockOwners[i].nLocks - 1;
	(void) LockRelease(tag, mode, true);
	return holds;
}

/*
 * The session-level advisory locks of this backend (*nlocks), allocated in
 * cxt; the lock manager's report on every backend's locks is read in a
 * scratch context and freed.
 */
static SessionLock *
session_locks(MemoryContext cxt, int *nlocks)
{
	MemoryContext scratch = AllocSetContextCreate(TopMemoryContext, "perpca session locks", ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(scratch);
	LockData   *data = GetLockStatusData();
	SessionLock *locks = NULL;
	int			max = 0;

	*nlocks = 0;
	for (int i = 0; i < data->nelements; i++)
	{
		LockInstanceData *li = &data->locks[i];

		if (li->pid != MyProcPid || li->locktag.locktag_type != LOCKTAG_ADVISORY)
			continue;
		for (LOCKMODE m = 1; m < MAX_LOCKMODES; m++)
		{
			int			holds = (li->holdMask & LOCKBIT_ON(m)) ? session_holds(&li->locktag, m) : 0;

			if (holds == 0)
				continue;
			if (*nlocks == max)
			{
				max = Max(8, 2 * max);
				locks = locks ? repalloc(locks, sizeof(SessionLock) * max)
					: MemoryContextAlloc(cxt, sizeof(SessionLock) * max);
			}
			locks[(*nlocks)++] = (SessionLock) {li->locktag, m, holds};
		}
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(scratch);
	return locks;
}

/* Release every session-level hold of an advisory lock taken since guard was made. */
static void
guard_release(const LockGuard *guard)
{
	int			nlocks;
	SessionLock *now = session_locks(CurrentMemoryContext, &nlocks);

	for (int i = 0; i < nlocks; i++)
	{
		int			before = 0;

		for (int j = 0; j < guard->nlocks; j++)
			if (now[i].mode == guard->locks[j].mode &&
				memcmp(&now[i].tag, &guard->locks[j].tag, sizeof(LOCKTAG)) == 0)
				before = guard->locks[j].holds;
		for (int k = before; k < now[i].holds; k++)
			(void) LockRelease(&now[i].tag, now[i].mode, true);
	}
	if (now != NULL)
		pfree(now);
}

static void
guard_free(LockGuard *guard)
{
	lock_guards = list_delete_last(lock_guards);
	if (guard->locks != NULL)
		pfree(guard->locks);
	pfree(guard);
}

/*
 * A (sub)transaction that aborts ends the run_as_enter() calls made in it:
 * what their owners' code locked for the session is released (the
 * outermost guard's notes are the oldest).
 */
static void
guard_abort(SubTransactionId subid)
{
	LockGuard  *outermost = NULL;
	ListCell   *lc;

	foreach(lc, lock_guards)
	{
		LockGuard  *guard = lfirst(lc);

		if (guard->subid >= subid)
		{
			outermost = guard;
			break;
		}
	}
	if (outermost == NULL)
		return;
	guard_release(outermost);
	while (llast(lock_guards) != outermost)
		guard_free(llast(lock_guards));
	guard_free(outermost);
}

static void
guard_subxact_callback(SubXactEvent event, SubTransactionId mySubid, SubTransactionId parentSubid, void *arg)
{
	(void) parentSubid;
	(void) arg;
	if (event == SUBXACT_EVENT_ABORT_SUB)
		guard_abort(mySubid);
}

static void
guard_xact_callback(XactEvent event, void *arg)
{
	(void) arg;
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		guard_abort(InvalidSubTransactionId);
	else if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PREPARE)
		while (lock_guards != NIL)
			guard_free(llast(lock_guards));
}

/* Note the session's advisory locks before the owner's code runs. */
static void
guard_push(void)
{
	static bool registered = false;
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
	LockGuard  *guard = palloc(sizeof(LockGuard));

	if (!registered)
	{
		RegisterXactCallback(guard_xact_callback, NULL);
		RegisterSubXactCallback(guard_subxact_callback, NULL);
		registered = true;
	}
	guard->subid = GetCurrentSubTransactionId();
	guard->locks = session_locks(TopMemoryContext, &guard->nlocks);
	lock_guards = lappend(lock_guards, guard);
	MemoryContextSwitchTo(old);
}

/* After the owner's code: its session-level advisory locks released. */
static void
guard_pop(void)
{
	LockGuard  *guard = llast(lock_guards);

	guard_release(guard);
	guard_free(guard);
}

void
run_as_enter(RunAs *ra, Oid role)
{
	run_as_check_role(role);
	guard_push();
	GetUserIdAndSecContext(&ra->save_userid, &ra->save_sec_context);
	SetUserIdAndSecContext(role, ra->save_sec_context | SECURITY_RESTRICTED_OPERATION);
	ra->save_nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
}

void
run_as_leave(RunAs *ra)
{
	AtEOXact_GUC(false, ra->save_nestlevel);
	SetUserIdAndSecContext(ra->save_userid, ra->save_sec_context);
	guard_pop();
}

bool
run_as_caught_call(Oid role, void (*fn) (void *arg), void *arg, ErrorData **edata)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile bool ok = true;
	int			caller_lock_timeout = LockTimeout;

	run_as_check_role(role);
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		RunAs		ra;

		run_as_enter(&ra, role);
		fn(arg);
		run_as_leave(&ra);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		bool		callers;

		MemoryContextSwitchTo(cxt);
		*edata = CopyErrorData();
		FlushErrorState();
		callers = caller_interrupted(*edata, caller_lock_timeout);
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		if (callers)
			ReThrowError(*edata);
		ok = false;
	}
	PG_END_TRY();
	return ok;
}

/*
 * 0.3.0's perpca_internal.run_as(role regrole, command text, VARIADIC args "any")
 *   RETURNS jsonb
 */
Datum
perpca_run_as(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NULL),
				 errmsg("role and command must not be NULL")));
	return run_as_role(fcinfo, PG_GETARG_OID(0), "pg_catalog, pg_temp", 1, 2);
}

/*
 * perpca_internal.perpca_run_as_owner(relation regclass, schema regnamespace,
 *   command text, VARIADIC args "any") RETURNS jsonb: 0.2.0's form, which
 * the SQL of 0.2.0 calls until ALTER EXTENSION perpca UPDATE: as the owner
 * of relation, with search_path = pg_catalog, schema, pg_temp.
 */
Datum
perpca_run_as_owner(PG_FUNCTION_ARGS)
{
	HeapTuple	tuple;
	Oid			owner;
	char	   *schema;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NULL),
				 errmsg("relation, schema and command must not be NULL")));
	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(PG_GETARG_OID(0)));
	if (!HeapTupleIsValid(tuple))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_MODEL_INCOMPLETE),
				 errmsg("relation with OID %u does not exist", PG_GETARG_OID(0))));
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	schema = get_namespace_name(PG_GETARG_OID(1));
	if (schema == NULL)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NO_SCHEMA),
				 errmsg("schema with OID %u does not exist", PG_GETARG_OID(1))));
	return run_as_role(fcinfo, owner, psprintf("pg_catalog, %s, pg_temp", quote_identifier(schema)), 2, 3);
}

/*
 * perpca_internal.perpca_accept_invalidations() RETURNS void: 0.2.0's SQL
 * calls it after its advisory lock (0.3.0 locks models in model_lock.c).
 */
Datum
perpca_accept_invalidations(PG_FUNCTION_ARGS)
{
	AcceptInvalidationMessages();
	PG_RETURN_VOID();
}
