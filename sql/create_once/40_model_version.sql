-- Models: the version sequence and the fit-row type (created once)

-- Every change of a stored model takes a new version from this sequence, so
-- that backends caching the model notice a replaced or personalized model.
CREATE SEQUENCE perpca_model_version;
GRANT USAGE ON SEQUENCE perpca_model_version TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('perpca_model_version', '');
COMMENT ON SEQUENCE perpca_model_version IS
    'version numbers of stored models (a new one for every train, replace or personalize)';

-- One row of perpca_fit's result, as a model holds it between the fit and the store.
CREATE TYPE perpca_internal.perpca_fit_row AS (client text, kind text, component int, pc float8[], variance float8);
COMMENT ON TYPE perpca_internal.perpca_fit_row IS 'internal: a row of perpca_fit''s result';

