/*
 * model_lock.h -- the rule for model names; finding and locking a model's
 * three tables, in one order
 *
 * Every function that touches a model's tables takes its locks through
 * model_lock(), in one order, so no two of them can deadlock: (1) writers
 * and drop: the model's name lock, which no SQL command can take, and which
 * serializes the creation of a model; (2) <model>_info, _clients,
 * _components, each looked up again once locked (a drop committed meanwhile
 * shows as a missing model, never a half-read one); (3) <model>_history
 * (model_lock_history).  Readers take AccessShareLock, writers
 * ShareRowExclusiveLock, drop AccessExclusiveLock.  The tables must be
 * plain tables of one owner, whose privileges writers and drop must have
 * (checked before a lock is requested, and again after).
 */
#ifndef PERPCA_MODEL_LOCK_H
#define PERPCA_MODEL_LOCK_H

#include "postgres.h"

#include "nodes/pg_list.h"
#include "pg_compat.h"

typedef enum ModelLockMode
{
	MODEL_LOCK_READ,			/* AccessShareLock on the tables */
	MODEL_LOCK_WRITE,			/* name lock + ShareRowExclusiveLock; the model may be absent */
	MODEL_LOCK_DROP				/* name lock + AccessExclusiveLock */
} ModelLockMode;

/* The tables of a model, in lock order. */
enum
{
	MODEL_REL_INFO, MODEL_REL_CLIENTS, MODEL_REL_COMPONENTS, MODEL_NRELS
};

/* The longest base name of a model: "<base>_components" must fit NAMEDATALEN - 1. */
#define MODEL_BASE_MAX (NAMEDATALEN - 1 - 11)

/* The naming rule, for the hints of errors about model names. */
#define MODEL_NAME_RULE \
	"A model name follows SQL identifier rules and may be schema-qualified (schema.model): " \
	"unquoted names fold to lower case, so 'MyModel' is mymodel; write '\"MyModel\"' to keep the case."

/*
 * The parts of a model name, [schema,] base, read as SQL identifiers
 * (unquoted ones folded to lower case), or an improper-name error (42602)
 * with the naming rule.  The one reader of model names, for C and for SQL
 * (perpca_internal.model_name_parts).
 */
extern List *model_name_parts(const char *model);

typedef struct ModelLock
{
	const char *model;			/* the name as given, for messages */
	Oid			nsp;			/* the model's schema (or where it would be created) */
	char	   *schema;
	char	   *base;
	bool		present;		/* the three tables exist (locked, checked) */
	Oid			relid[MODEL_NRELS];	/* InvalidOid when not present */
	Oid			owner;			/* their owner, InvalidOid when not present */
} ModelLock;

/*
 * Find and lock the model named model (possibly schema-qualified, resolved
 * with the current search_path).  Without wait, a lock that is not free at
 * once is lock_not_available (55P03).  A model that does not exist is
 * undefined_object (42704) unless missing_ok (then present = false); WRITE
 * with missing_ok is a write that may create the model: then the schema is
 * the one it would be created in, and the caller must be allowed to create
 * tables there.  On a hot standby WRITE and DROP fail with 25006.
 */
extern void model_lock(ModelLock *ml, const char *model, ModelLockMode mode, bool wait, bool missing_ok);

/*
 * After model_lock(): look up and lock <model>_history in mode (third in the
 * lock order); InvalidOid when there is none.  Writers and drop must have
 * the privileges of its owner.
 */
extern Oid	model_lock_history(ModelLock *ml, ModelLockMode mode, bool wait);

/* The error for a model that does not exist (42704); hint NULL: "Create it with perpca_train()." */
pg_noreturn extern void model_missing_error(const char *model, const char *schema, const char *base,
											const char *hint);

/* Quoted qualified name of relation relid, for messages. */
extern char *model_relid_name(Oid relid);

/* Owner of relation relid (InvalidOid when it is gone). */
extern Oid	model_rel_owner(Oid relid);

#endif							/* PERPCA_MODEL_LOCK_H */
