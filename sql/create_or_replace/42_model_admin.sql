-- ==========================================================================
-- Model administration: locking a model's
-- tables (the lock itself is src/model_lock.c: one order for every function
-- that touches a model), dropping a model and personalizing a client.
--
-- Search path: every function here pins search_path = pg_catalog, pg_temp
-- or is C; a model name is resolved by the C code with the caller's
-- search_path before anything else runs.  Ownership: a model that belongs
-- to another role is written as that role, inside a security-restricted
-- operation (perpca_internal.run_as, see 50_refresh.sql).
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
-- display (default: model).
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
    'drops the tables of a model (after locking them in the order every perpca function uses, and checking that they are plain tables of one owner whose privileges the caller has, and that the info table is a perpca model''s); with if_exists => true a missing model is only a notice';

-- Local components of one client, computed and stored, and returned.  Run by
-- perpca_personalize (src/personalize.c) as the model's owner, inside a
-- security-restricted operation, after it locked the model and checked the
-- key, the statistics and n_local with the checked C reader; factors are
-- the model's scale_factors as that reader read them (NULL: unscaled).
-- Executable by PUBLIC (the owner runs it), so it checks for itself, with
-- model_lock, that the model is plain tables of one owner whose privileges
-- the current user has, before it reads anything.  n_local = 0: the client
-- keeps no local components (its old ones are deleted); its figures, scores
-- and errors then use the global components alone.
CREATE OR REPLACE FUNCTION perpca_internal.model_personalize(schema_name text, base text, client text,
                                                             stats perpca_stats, n_local int, factors float8[])
RETURNS TABLE (component int, pc float8[], variance float8)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    components text := format('%I.%I', schema_name, base || '_components');
    info text := format('%I.%I', schema_name, base || '_info');
    m record;
    u float8[];
    centre float8[];
    scaled @extschema@.perpca_stats;
BEGIN
    -- Executable by PUBLIC (95_privileges.sql): the model's owner's privileges, checked first.
    PERFORM FROM perpca_internal.model_lock(format('%I.%I', schema_name, base), 'write');
    EXECUTE format('SELECT d, n_local, center, global_mean FROM %s', info) INTO STRICT m;
    EXECUTE format('SELECT array_agg(pc ORDER BY component) FROM %s WHERE kind OPERATOR(pg_catalog.=) %L',
                   components, 'global')
        INTO u;
    -- The local components live where the model's components do: in the scaled features.
    scaled := perpca_internal.scale_stats(stats, factors);
    centre := CASE m.center WHEN 'client' THEN @extschema@.perpca_mean(scaled)
                            WHEN 'global' THEN perpca_internal.scale_vector(m.global_mean, factors)
                            ELSE array_fill(0::float8, ARRAY[m.d]) END;
    EXECUTE format('DELETE FROM %s WHERE kind OPERATOR(pg_catalog.=) %L AND client OPERATOR(pg_catalog.=) $1',
                   components, 'local') USING client;
    IF coalesce(n_local, m.n_local) OPERATOR(pg_catalog.<>) 0 THEN
        EXECUTE format('INSERT INTO %s (client, kind, component, pc, variance)
                        SELECT $1, %L, l.component, l.pc, l.variance
                          FROM @extschema@.perpca_local_pcs($2, $3, $4, $5) l',
                       components, 'local')
            USING client, scaled, u, coalesce(n_local, m.n_local), centre;
    END IF;
    PERFORM perpca_internal.model_fill_clients(schema_name, base, '(SELECT $4 AS client, $5 AS stats)',
                                                      m.center, m.global_mean, 'personalize', client, stats,
                                                      factors);
    -- nextval() first: Citus refuses it inside an UPDATE of a reference table.
    EXECUTE format('UPDATE %s SET version = $1', info) USING nextval('@extschema@.perpca_model_version');
    RETURN QUERY EXECUTE format('SELECT k.component, k.pc, k.variance FROM %s k
                                  WHERE k.kind OPERATOR(pg_catalog.=) %L AND k.client OPERATOR(pg_catalog.=) $1
                                  ORDER BY k.component', components, 'local')
        USING client;
END
$$;
COMMENT ON FUNCTION perpca_internal.model_personalize(text, text, text, perpca_stats, int, float8[]) IS
    'internal: computes, stores and returns the local components of one client with the global components frozen (none for n_local = 0); run as the model''s owner by perpca_personalize; refuses a model whose owner''s privileges the current user lacks (model_lock)';

-- Both forms are C (src/model_lock.c): the model is locked (its owner's
-- privileges checked), its key type, dimension and scale read with the
-- checked C reader, and model_personalize runs as the owner.
CREATE OR REPLACE FUNCTION perpca_personalize(model text, client text, stats perpca_stats, n_local int DEFAULT NULL)
RETURNS TABLE (component int, pc float8[], variance float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_personalize(text, text, perpca_stats, int) IS
    'computes local components for a (new) client from its statistics with the global components frozen and stores them in the model; n_local defaults to the model''s (0 to n_global''s complement; 0: no local components, the client is described by the global components alone); another role''s model is written as its owner (inside a security-restricted operation), and only the owner or a member of the owning role may personalize';

CREATE OR REPLACE FUNCTION perpca_personalize(model text, client anyelement, stats perpca_stats, n_local int DEFAULT NULL)
RETURNS TABLE (component int, pc float8[], variance float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_personalize(text, anyelement, perpca_stats, int) IS
    'perpca_personalize with the client key in its own type (int, bigint, uuid, date, ...), which must be the type of the model''s keys; matched as its text form (the type''s output function)';

-- The clients of a query of rows (any form of the row reader) or statistics,
-- read as the caller under missing, each personalized as above (0.4.0).
CREATE OR REPLACE FUNCTION perpca_personalize(model text, query text, n_local int DEFAULT NULL,
                                              missing text DEFAULT 'error')
RETURNS TABLE (client text, n bigint, skipped bigint, local_components int)
    AS 'MODULE_PATHNAME', 'perpca_personalize_query' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_personalize(text, text, int, text) IS
    'perpca_personalize for every client of a query of rows (any form of the row reader: a numeric array, a vector or halfvec, numeric feature columns) or statistics (client, perpca_stats), run as the caller: per client its rows n, the rows left out for missing values (skipped; missing => ''skip'', else a NULL, NaN or infinite element is an error; ''observed'' is refused) and the local components stored (a client with no rows left stores nothing: n 0, named in a NOTICE); n_local as in the statistics form';

-- 0.2.0's personalize helpers (the SQL-language perpca_personalize depended
-- on perpca_personalize_key, so they go once it is replaced; no-ops on a
-- fresh install).
DROP FUNCTION IF EXISTS perpca_internal.perpca_personalize_key(text, regtype, text, perpca_stats, int);
DROP FUNCTION IF EXISTS perpca_internal.perpca_model_key(text, regtype, text, text);
DROP FUNCTION IF EXISTS perpca_internal.perpca_model_personalize(text, text, text, perpca_stats, int);
