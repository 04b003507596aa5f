-- perpca: Personalized PCA in SQL (created once: what an upgrade from 0.2.0 already has)
\echo Use "CREATE EXTENSION perpca" to load this file. \quit

-- Internal functions (called by perpca's own SQL and by the federated
-- coordinator) live in their own schema, out of the user's way.
CREATE SCHEMA perpca_internal;
COMMENT ON SCHEMA perpca_internal IS 'perpca: internal and shard-side functions (not for direct use)';
GRANT USAGE ON SCHEMA perpca_internal TO PUBLIC;

