-- ==========================================================================
-- Models: a fit stored as plain tables <model>_components, <model>_clients,
-- <model>_info and <model>_history, and the view <model>_source holding its
-- query, bound once.
--
-- Everything that writes a model is C: perpca_train and perpca_refresh
-- (src/model_write.c), perpca_personalize (src/personalize.c) and
-- perpca_drop (src/model_lock.c) lock the model in one order
-- (src/model_lock.c), write it as its owner inside a security-restricted
-- operation (src/run_as_owner.c) through one module (src/model_store.c),
-- and make its tables from the one declaration of their columns
-- (src/model_schema.c).  Nothing here is PL/pgSQL: this file only
-- declares.
-- ==========================================================================

-- How model names are written and read: the naming rule for error hints,
-- and the parts of a name (src/model_read.c, one reader for C and SQL).
CREATE OR REPLACE FUNCTION perpca_internal.model_name_parts(model text) RETURNS text[]
    AS 'MODULE_PATHNAME', 'perpca_model_name_parts' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_internal.model_name_parts(text) IS
    'internal: {[schema,] base} of a model name read as SQL identifiers, or the improper-name error with the naming rule';

-- Options: named arguments with DEFAULT NULL from the option table of
-- src/fit_options.c (sql/options.awk), read by name in C (src/model_write.c,
-- src/fit_options.c), which holds every default.
CREATE OR REPLACE FUNCTION perpca_train(model text, query text, n_global int, n_local int,
    @OPTIONS: rounds tolerance step update retraction init seed center weights method verbose
        adaptive@,
    replace boolean DEFAULT false,
    @OPTIONS: start solver scale@,
    feature_names text[] DEFAULT NULL,
    @OPTIONS(train): hops missing@,
    calibration float8 DEFAULT NULL)
RETURNS TABLE (model_name text, d int, n_clients int, rounds_run int, converged boolean,
               objective float8, theta_est float8)
    AS 'MODULE_PATHNAME', 'perpca_train' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_train(@ARGTYPES(train)@) IS
    'fits Personalized PCA on a query of statistics or rows per client (perpca_fit''s options) and stores the model as tables <model>_components, _clients and _info, its query bound in the view <model>_source for every refresh; replace => true swaps it atomically (README: Reference, Models)';

