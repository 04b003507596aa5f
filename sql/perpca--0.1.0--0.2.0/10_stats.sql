-- ==========================================================================
-- Statistics: the perpca_stats aggregates
-- ==========================================================================

-- 0.2.0 declares the transition state size of both aggregates (SSPACE), so
-- that the planner sizes hash aggregates over many groups with it.  ALTER
-- AGGREGATE cannot change SSPACE, and dropping the aggregates would drop or
-- break what depends on them (perpca_merge(a, b), users' views), so the
-- upgrade sets the catalog field that CREATE AGGREGATE ... SSPACE sets.
-- The support functions keep their signatures; the serialized state's
-- format changed, which only processes of one query (running the same
-- library) ever exchange.
UPDATE pg_catalog.pg_aggregate SET aggtransspace = 16384
WHERE aggfnoid IN ('@extschema@.perpca_stats(pg_catalog.float8[])'::pg_catalog.regprocedure,
                   '@extschema@.perpca_merge(@extschema@.perpca_stats)'::pg_catalog.regprocedure);
