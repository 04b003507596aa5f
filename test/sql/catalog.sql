--
-- The extension's catalog, checked as a whole, so that a new object cannot
-- slip in without what every object must have.  Each query lists the
-- objects that break a rule; every list must stay empty.
--
CREATE TEMP VIEW members AS
SELECT d.classid, d.objid, pg_describe_object(d.classid, d.objid, 0) AS object
  FROM pg_depend d
 WHERE d.refclassid = 'pg_extension'::regclass
   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'perpca')
   AND d.deptype = 'e'
   -- PostgreSQL 18 also records the implicit array type of each of the
   -- extension's types (perpca_stats[]) as a member; it is part of its type.
   AND NOT EXISTS (SELECT 1 FROM pg_type t
                    WHERE d.classid = 'pg_type'::regclass AND t.typarray = d.objid);

-- Enough members that the checks below mean something.
SELECT count(*) > 100 AS many_members FROM members;

-- 1. COMMENT ON every object (functions, aggregates, types, schemas, sequences, casts ...).
SELECT object AS uncommented
  FROM members
 WHERE obj_description(objid, classid::regclass::text) IS NULL
 ORDER BY 1;

-- 2. Every function is C, or pins search_path to pg_catalog, pg_temp
--    (so nothing of another role's is found by name inside it).
SELECT m.object AS search_path_not_pinned
  FROM members m JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
  JOIN pg_language l ON l.oid = p.prolang
 WHERE l.lanname NOT IN ('c', 'internal')
   AND NOT coalesce(p.proconfig @> '{"search_path=pg_catalog, pg_temp"}', false)
 ORDER BY 1;

-- 3. No SECURITY DEFINER function: perpca never runs as its installer.
SELECT m.object AS security_definer
  FROM members m JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
 WHERE p.prosecdef
 ORDER BY 1;

-- 4. No SQL-standard body (BEGIN ATOMIC or RETURN): its names and operators
--    are bound at CREATE EXTENSION / ALTER EXTENSION UPDATE time, under the
--    installer's search_path, where another role may have planted one.  The
--    one exception, perpca_merge(perpca_stats, perpca_stats), names only
--    @extschema@.perpca_merge(perpca_stats) (whose argument type is the
--    extension's own, so nothing planted before install can match it better)
--    and VALUES: no operator, no unqualified name.
SELECT m.object AS sql_standard_body
  FROM members m JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
 WHERE p.prosqlbody IS NOT NULL
   AND p.oid <> 'perpca_merge(perpca_stats, perpca_stats)'::regprocedure
 ORDER BY 1;

-- 5. Volatility and parallel markings are stated, not defaulted: a function
--    left at VOLATILE PARALLEL UNSAFE must be one that writes, locks, reads a
--    session's state or runs a query (listed here by name, so a new one is a
--    decision, not an accident).
SELECT p.pronamespace::regnamespace AS schema, p.proname
  FROM members m JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
 WHERE p.provolatile = 'v' AND p.proparallel = 'u'
 GROUP BY 1, 2
 ORDER BY 1, 2;
