-- ==========================================================================
-- Model administration: locking a model's
-- tables (the lock itself is src/model_lock.c: one order for every function
-- that touches a model), dropping a model and personalizing a client.
--
-- Every function here is C; a model name is resolved by the C code with the
-- caller's search_path before anything else runs.  Ownership: a model that
-- belongs to another role is written as that role, inside a
-- security-restricted operation (src/run_as_owner.c).
-- ==========================================================================

-- Find and lock a model's tables in the one order of src/model_lock.c: for
-- writers and drop first the model's name lock (which no SQL command can
-- take, so no other role can hold it; it also serializes the creation of a
-- new model), then <model>_info, _clients, _components.  purpose: 'write'
-- (SHARE ROW EXCLUSIVE: readers go on, writers wait; with missing_ok the
-- model may not exist yet and would be created) or 'drop' (ACCESS
-- EXCLUSIVE); readers lock in C (ACCESS SHARE), so 'read' is refused here
-- (it would check no privilege).  Checks that
-- the tables are plain tables of one owner and, for write and drop, that the
-- caller has the owner's privileges (before any lock is requested).
-- undefined_object for a missing model (unless missing_ok),
-- lock_not_available when busy and not wait, read_only_sql_transaction for
-- write and drop on a hot standby.  An unqualified name is resolved with the
-- search_path the function is called with.  Messages name the model as
-- display (default: model).  perpca's own paths lock in C; this SQL form is
-- not executable by PUBLIC (95_privileges.sql): for superusers and the tests.
CREATE OR REPLACE FUNCTION perpca_internal.model_lock(model text, purpose text, wait boolean DEFAULT true,
                                                      missing_ok boolean DEFAULT false, display text DEFAULT NULL,
                                                      OUT present boolean, OUT schema_name text, OUT base text,
                                                      OUT info oid, OUT clients oid, OUT components oid,
                                                      OUT owner oid)
RETURNS record
    AS 'MODULE_PATHNAME', 'perpca_model_lock_sql' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.model_lock(text, text, boolean, boolean, text) IS
    'internal: finds and locks a model''s tables for write or drop in the one order of every perpca function (name lock, then info, clients, components), after checking kind, owner and that the caller has the owner''s privileges; see src/model_lock.c';

CREATE OR REPLACE FUNCTION perpca_drop(model text, if_exists boolean DEFAULT false) RETURNS void
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_drop(text, boolean) IS
    'drops the tables of a model, after locking them as every perpca function does and checking that they are a perpca model''s plain tables of one owner whose privileges the caller has; if_exists => true: a missing model is only a notice (README: Reference, Models)';

-- Both forms are C (src/personalize.c): the model is locked (its owner's
-- privileges checked), its key type, dimension and scale read with the
-- checked C reader, and the client's rows are computed and written as the
-- owner, restricted, by the one module that writes models (src/model_store.c).
CREATE OR REPLACE FUNCTION perpca_personalize(model text, client text, stats perpca_stats, n_local int DEFAULT NULL)
RETURNS TABLE (component int, pc float8[], variance float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_personalize(text, text, perpca_stats, int) IS
    'computes a (new) client''s local components from its statistics with the global components frozen and stores them in the model (n_local: the model''s by default; 0: none); writes as the model''s owner, for its owner or a member of the owning role (README: Reference, Models)';

CREATE OR REPLACE FUNCTION perpca_personalize(model text, client anyelement, stats perpca_stats, n_local int DEFAULT NULL)
RETURNS TABLE (component int, pc float8[], variance float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_personalize(text, anyelement, perpca_stats, int) IS
    'perpca_personalize with the client key in its own type (int, bigint, uuid, date, ...), which must be the type of the model''s keys; matched as its text form (the type''s output function) (README: Reference, Models)';

-- The clients of a query of rows (any form of the row reader) or statistics,
-- read as the caller under missing, each personalized as above (0.4.0).  A
-- name of its own: an overload of perpca_personalize would make a call whose
-- statistics are an untyped literal, perpca_personalize('m', 'c', '...'),
-- ambiguous (perpca_stats or int), which 0.3.0 resolved.
CREATE OR REPLACE FUNCTION perpca_personalize_clients(model text, query text, n_local int DEFAULT NULL,
                                                      missing text DEFAULT 'error')
RETURNS TABLE (client text, n bigint, skipped bigint, local_components int)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_personalize_clients(text, text, int, text) IS
    'perpca_personalize for every client of a query of rows or statistics, run as the caller: per client its rows n, the rows skipped (missing => ''skip'') and the local components stored; a client with no rows left stores nothing (README: Reference, Models)';

-- 0.2.0's personalize helpers (the SQL-language perpca_personalize depended
-- on perpca_personalize_key, so they go once it is replaced; no-ops on a
-- fresh install).
DROP FUNCTION IF EXISTS perpca_internal.perpca_personalize_key(text, regtype, text, perpca_stats, int);
DROP FUNCTION IF EXISTS perpca_internal.perpca_model_key(text, regtype, text, text);
DROP FUNCTION IF EXISTS perpca_internal.perpca_model_personalize(text, text, text, perpca_stats, int);
