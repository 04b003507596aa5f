/*
 * run_as_owner.h -- running a model's SQL as the model's owner (run_as_owner.c)
 *
 * perpca_refresh (and a train that replaces another role's model) executes
 * query text stored in the model and writes the model's tables.  Like
 * REFRESH MATERIALIZED VIEW, that work runs as the owner of the model's
 * tables, inside a security-restricted operation with a fixed search_path,
 * so that a caller with more privileges than the owner never lends them to
 * the owner's SQL (triggers, views, functions, operators in the owner's
 * schemas).
 */
#ifndef PERPCA_RUN_AS_OWNER_H
#define PERPCA_RUN_AS_OWNER_H

#include "postgres.h"

/* What run_as_enter() changed, for run_as_leave(). */
typedef struct RunAs
{
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
} RunAs;

/*
 * Become role (the caller must have its privileges: 42501 otherwise) inside
 * a security-restricted operation, with search_path = pg_catalog, pg_temp
 * at a new GUC level, as ExecRefreshMatView does; an error undoes it with
 * the (sub)transaction.  The session-level advisory locks the session holds
 * are noted: run_as_leave(), or the abort of the (sub)transaction, releases
 * every hold taken since.
 */
extern void run_as_enter(RunAs *ra, Oid role);

/* Back to the caller, without the session-level advisory locks the role's code took. */
extern void run_as_leave(RunAs *ra);

/*
 * fn(arg) as role (run_as_enter) in a subtransaction: true when it
 * returned; false when it raised, with the error in *edata (rolled back),
 * unless the error is an interrupt of the caller's statement (a cancel, a
 * statement timeout, a lock timeout of the caller's own lock_timeout),
 * which is raised again.
 */
extern bool run_as_caught_call(Oid role, void (*fn) (void *arg), void *arg, ErrorData **edata);

#endif							/* PERPCA_RUN_AS_OWNER_H */
