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
                             missing text DEFAULT NULL, calibration float8 DEFAULT NULL)
RETURNS TABLE (model_name text, d int, n_clients int, rounds_run int, converged boolean,
               objective float8, theta_est float8)
    AS 'MODULE_PATHNAME', 'perpca_train' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_train(text, text, int, int, int, float8, float8, text, text, text, bigint, text, text, text, boolean, boolean, boolean, text, text, text, text[], int, text, float8) IS
    'fits PerPCA on a query returning (client, perpca_stats[, n_local]) or rows of any form the row reader takes (a numeric array, a vector or halfvec, numeric feature columns), aggregated per client under missing (''error'', the default, or ''skip''; recorded in <model>_info.options and applied at every refresh; a client left without rows is named in a NOTICE and left out), and stores the model as tables <model>_components, <model>_clients and <model>_info; the client key may be of any type (its type is recorded); the query must be one SELECT; it is bound now, with the search_path in effect (recorded in <model>_info.search_path), in the view <model>_source, which the owner owns and every refresh reads, and read now as every refresh will (restricted, as the owner), so a query that could not be refreshed fails now; replace => true swaps an existing model atomically (another role''s model is written as its owner); NULL options take perpca_fit''s defaults (the effective ones are recorded in <model>_info.options); start is perpca_fit''s warm-start query (with init => ''given''); scale => ''standard'' divides each feature by its pooled standard deviation, stored in <model>_info.scale_factors and applied by every function that reads the model; feature_names (d names) are stored in <model>_info.feature_names for perpca_loadings and top_features; calibration => share (0 < share < 1; rows only, not statistics) holds out the rows whose hash abs(hash_record_extended(ROW(client, x), 0) % 10000) is below share * 10000 (the split bound in the views <model>_source and <model>_calibration), fits on the rest, and after every fit scores the held-out rows to calibrate perpca_model_monitor(..., limits => ''calibrated''), recording in <model>_info the share of the training rows each kind of limits flags at alpha = 0.01 (a WARNING when the Gaussian limits flag more than 0.02)';

