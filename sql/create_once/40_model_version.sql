-- Models: the version sequence (created once)

-- Every change of a stored model takes a new version from this sequence, so
-- that backends caching the model notice a replaced or personalized model.
CREATE SEQUENCE perpca_model_version;
GRANT USAGE ON SEQUENCE perpca_model_version TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('perpca_model_version', '');
COMMENT ON SEQUENCE perpca_model_version IS
    'version numbers of stored models (a new one for every train, replace or personalize)';

