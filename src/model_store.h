/*
 * model_store.h -- running a stored model's maintenance as the model's owner
 *
 * perpca_refresh (and a replace of another role's model) executes query text
 * stored in the model and writes the model's tables.  Like REFRESH
 * MATERIALIZED VIEW, that work runs as the owner of the model's tables,
 * inside a security-restricted operation with a fixed search_path, so that a
 * caller with more privileges than the owner never lends them to the owner's
 * SQL (triggers, views, functions, operators in the owner's schemas).
 */
#ifndef PERPCA_MODEL_STORE_H
#define PERPCA_MODEL_STORE_H

#include "postgres.h"

/* Raise insufficient_privilege unless the current user has the privileges of
 * the owner of relation relid (the owner itself or a member of the owning role);
 * what names the model in the message.  Returns the owner. */
extern Oid	model_store_check_owner(Oid relid);

#endif							/* PERPCA_MODEL_STORE_H */
