-- examples/demo.sql -- the demo run by scripts/demo.sh (psql -f, ON_ERROR_STOP)
--
-- Six "stores" with rows in d = 8.  Every store shares two directions (axes 1
-- and 2, standard deviations 5 and 3); store s also varies along its own axis
-- 2 + s (sd 2.5), and even-numbered stores along a second local axis (sd 1.5);
-- all coordinates get noise (sd 0.3) and each store has its own mean.
-- Deterministic: setseed() fixes random().
--
-- To extend the demo, add a section at the end; sections that need a
-- function that may not exist yet go in their own file, included under
-- \if like demo_fit.sql below.
\set ECHO none
\pset footer off
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS perpca;

-- a standard normal draw (Box-Muller; PostgreSQL 15 has no random_normal)
CREATE FUNCTION demo_gauss() RETURNS float8 LANGUAGE sql VOLATILE AS
$$ SELECT sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) $$;

SELECT setseed(0.42) \gset

CREATE TABLE demo_sales (store int NOT NULL, id int NOT NULL, x float8[] NOT NULL);

INSERT INTO demo_sales (store, id, x)
SELECT s, i,
       ARRAY(SELECT s * 0.5 * (j % 3)                               -- store mean
                    + 5.0 * r.g1 * (j = 1)::int                     -- global 1
                    + 3.0 * r.g2 * (j = 2)::int                     -- global 2
                    + 2.5 * r.l1 * (j = 2 + s)::int                 -- local 1
                    + 1.5 * r.l2 * (s % 2 = 0 AND j = 3 + s % 6)::int  -- local 2
                    + 0.3 * demo_gauss()                            -- noise
             FROM generate_series(1, 8) AS j ORDER BY j)
FROM generate_series(1, 6) AS s
CROSS JOIN LATERAL generate_series(1, 150 + 50 * s) AS i
-- the references to s and i make the draws happen once per row
CROSS JOIN LATERAL (SELECT demo_gauss() + 0 * i AS g1, demo_gauss() + 0 * s AS g2,
                           demo_gauss() + 0 * i AS l1, demo_gauss() + 0 * s AS l2) AS r;

\echo
\echo '== demo data: rows per store (d = 8) =='
SELECT store, count(*) AS rows FROM demo_sales GROUP BY store ORDER BY store;

-- one perpca_stats value per store: the sufficient statistics of the group
CREATE TABLE demo_store_stats AS
SELECT store, perpca_stats(x) AS s FROM demo_sales GROUP BY store;

\echo
\echo '== per-store statistics: n, d, mean (rounded) =='
SELECT store,
       perpca_count(s) AS n,
       perpca_dim(s) AS d,
       (SELECT array_agg(round(m::numeric, 2) ORDER BY k)
          FROM unnest(perpca_mean(s)) WITH ORDINALITY AS u(m, k)) AS mean
FROM demo_store_stats ORDER BY store;

\echo
\echo '== per-store variance along each axis (diagonal of the covariance) =='
\echo '   axes 1-2 are shared by all stores; store s also varies along axis 2+s'
SELECT store,
       (SELECT array_agg(round(c[k][k]::numeric, 1) ORDER BY k)
          FROM generate_series(1, 8) AS k) AS variance
FROM (SELECT store, perpca_covariance(s) AS c FROM demo_store_stats) AS v
ORDER BY store;

\echo
\echo '== all stores merged (perpca_merge) =='
SELECT perpca_count(m) AS n, perpca_dim(m) AS d,
       (SELECT array_agg(round(c[k][k]::numeric, 1) ORDER BY k)
          FROM generate_series(1, 8) AS k) AS variance
FROM (SELECT perpca_merge(s) AS m FROM demo_store_stats) AS a,
     LATERAL (SELECT perpca_covariance(m) AS c) AS cv;

-- Fitted global and local components, once the extension has perpca_fit.
SELECT EXISTS (SELECT 1 FROM pg_proc p
               JOIN pg_depend dep ON dep.classid = 'pg_proc'::regclass
                                 AND dep.objid = p.oid AND dep.deptype = 'e'
               JOIN pg_extension e ON e.oid = dep.refobjid AND e.extname = 'perpca'
               WHERE p.proname = 'perpca_fit') AS has_fit \gset
\if :has_fit
\echo
\echo '== fitted components (perpca_fit) =='
\ir demo_fit.sql
\else
\echo
\echo '(perpca_fit is not in this build of the extension: no fitted components to show)'
\endif
