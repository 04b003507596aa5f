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

-- Options: named arguments with DEFAULT NULL, read by name in C
-- (src/model_write.c, src/fit_options.c), which holds every default.
CREATE OR REPLACE FUNCTION perpca_train(model text, query text, n_global int, n_local int,
                             rounds int DEFAULT NULL, tolerance float8 DEFAULT NULL,
                             step float8 DEFAULT NULL, update text DEFAULT NULL,
                             retraction text DEFAULT NULL, init text DEFAULT NULL,
                             seed bigint DEFAULT NULL, center text DEFAULT NULL,
                             weights text DEFAULT NULL, method text DEFAULT NULL,
                             verbose boolean DEFAULT NULL, adaptive boolean DEFAULT NULL,
                             replace boolean DEFAULT false, start text DEFAULT NULL,
                             solver text DEFAULT NULL, scale text DEFAULT NULL,
                             feature_names text[] DEFAULT NULL, hops int DEFAULT NULL,
                             missing text DEFAULT NULL)
RETURNS TABLE (model_name text, d int, n_clients int, rounds_run int, converged boolean,
               objective float8, theta_est float8)
    AS 'MODULE_PATHNAME', 'perpca_train' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_train(text, text, int, int, int, float8, float8, text, text, text, bigint, text, text, text, boolean, boolean, boolean, text, text, text, text[], int, text) IS
    'fits Personalized PCA on a query of statistics or rows per client (perpca_fit''s options) and stores the model as tables <model>_components, _clients and _info, its query bound in the view <model>_source for every refresh; replace => true swaps it atomically (README: Reference, Models)';

