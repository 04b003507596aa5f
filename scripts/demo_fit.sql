-- scripts/demo_fit.sql -- fitted global/local components of the demo stores
--
-- Included by scripts/demo.sql only when the extension has perpca_fit.
-- The query given to perpca_fit returns one row per client: (name,
-- perpca_stats, number of local components).  Odd stores were generated with
-- one local direction, even stores with two.
CREATE TABLE demo_fit AS
SELECT *
FROM perpca_fit(
    'SELECT ''store '' || store, s, CASE WHEN store % 2 = 0 THEN 2 ELSE 1 END
       FROM demo_store_stats ORDER BY store',
    n_global => 2, n_local => 2);

\echo
\echo '-- diagnostics of the fit'
SELECT method, rounds, converged, round(objective::numeric, 4) AS objective,
       n_clients, dim
FROM perpca_last_fit();

\echo
\echo '-- global components (expected: axes 1 and 2), shared by every store'
SELECT component,
       (SELECT array_agg(round(v::numeric, 2) ORDER BY k)
          FROM unnest(pc) WITH ORDINALITY AS u(v, k)) AS pc,
       round(variance::numeric, 2) AS variance
FROM demo_fit WHERE kind = 'global' AND component IS NOT NULL
GROUP BY component, pc, variance
ORDER BY component;

\echo
\echo '-- local components of each store (expected: axis 2+s; even stores also axis 3+s mod 6)'
SELECT client, component,
       (SELECT array_agg(round(v::numeric, 2) ORDER BY k)
          FROM unnest(pc) WITH ORDINALITY AS u(v, k)) AS pc,
       round(variance::numeric, 2) AS variance
FROM demo_fit WHERE kind = 'local'
ORDER BY client, component;
