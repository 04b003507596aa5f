-- Shared by the fit tests (\i test/include/fit_helpers.sql): the reference
-- components table ref, the fit under test fo, and functions that compare them.
CREATE TEMP TABLE ref (name text, kind text, client text, k int, vector float8[]);

-- fo holds the fit under test
CREATE TEMP TABLE fo (client text, kind text, component int, pc float8[], variance float8);

CREATE FUNCTION pg_temp.dot(a float8[], b float8[]) RETURNS float8
LANGUAGE sql IMMUTABLE AS $$ SELECT sum(x * y) FROM unnest(a, b) AS t(x, y) $$;

-- subspace error ||P_U - P_U*||^2 + mean_i ||P_Vi - P_Vi*||^2 of fo against a reference
CREATE FUNCTION pg_temp.suberr(refname text) RETURNS float8 LANGUAGE sql AS $$
WITH r AS (SELECT kind, client, vector FROM ref WHERE name = refname),
blocks AS (SELECT kind, client FROM fo UNION SELECT kind, client FROM r),
terms AS (
  SELECT b.kind,
         (SELECT count(*) FROM fo f WHERE f.kind = b.kind AND f.client IS NOT DISTINCT FROM b.client)
       + (SELECT count(*) FROM r WHERE r.kind = b.kind AND r.client IS NOT DISTINCT FROM b.client)
       - 2 * coalesce((SELECT sum(pg_temp.dot(f.pc, r.vector) ^ 2)
                       FROM fo f JOIN r ON f.kind = r.kind AND f.client IS NOT DISTINCT FROM r.client
                       WHERE f.kind = b.kind AND f.client IS NOT DISTINCT FROM b.client), 0) AS t
  FROM blocks b)
SELECT coalesce((SELECT sum(t) FROM terms WHERE kind = 'global'), 0)
     + coalesce((SELECT avg(t) FROM terms WHERE kind = 'local'), 0)
$$;

-- max |[U, V_i]'[U, V_i] - I| over all clients (and U'U - I)
CREATE FUNCTION pg_temp.infeasibility() RETURNS float8 LANGUAGE sql AS $$
WITH owners AS (SELECT DISTINCT client FROM fo WHERE kind = 'local'),
sets AS (SELECT o.client AS owner, f.* FROM owners o JOIN fo f ON f.kind = 'global' OR f.client = o.client
         UNION ALL SELECT NULL, f.* FROM fo f WHERE f.kind = 'global')
SELECT max(abs(pg_temp.dot(a.pc, b.pc)
               - CASE WHEN a.kind = b.kind AND a.client IS NOT DISTINCT FROM b.client
                           AND a.component = b.component THEN 1 ELSE 0 END))
FROM sets a JOIN sets b ON a.owner IS NOT DISTINCT FROM b.owner
$$;

-- run a fit into fo
CREATE FUNCTION pg_temp.run(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  TRUNCATE fo;
  EXECUTE 'INSERT INTO fo SELECT * FROM ' || q;
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n;
END $$;
