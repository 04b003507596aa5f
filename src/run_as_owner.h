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

/* Raise insufficient_privilege unless the current user has the privileges of role. */
extern void run_as_check_role(Oid role);

#endif							/* PERPCA_RUN_AS_OWNER_H */
