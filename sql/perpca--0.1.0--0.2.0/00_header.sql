-- perpca 0.1.0 -> 0.2.0
\echo Use "ALTER EXTENSION perpca UPDATE TO '0.2.0'" to load this file. \quit

CREATE SCHEMA perpca_internal;
COMMENT ON SCHEMA perpca_internal IS 'perpca: internal and shard-side functions (not for direct use)';
GRANT USAGE ON SCHEMA perpca_internal TO PUBLIC;

