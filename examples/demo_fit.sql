-- examples/demo_fit.sql -- fitted global/local components of the demo stores
--
-- Included by examples/demo.sql only when the extension has perpca_fit.
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
SELECT method, rounds_run, converged, round(objective::numeric, 4) AS objective,
       n_clients, d
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

\echo
\echo '== a stored model: perpca_train keeps the fit as plain tables =='
SELECT model_name, n_clients, rounds_run, converged, round(theta_est::numeric, 3) AS theta_est
FROM perpca_train('demo_model',
    'SELECT ''store '' || store, perpca_stats(x), CASE WHEN store % 2 = 0 THEN 2 ELSE 1 END
       FROM demo_sales GROUP BY store',
    n_global => 2, n_local => 2);
\dt demo_model_*

\echo
\echo '-- per-store explained variance: what the stores share (global) and what is their own (local)'
SELECT client, n, round(global_ratio::numeric, 3) AS global_ratio,
       round(local_ratio::numeric, 3) AS local_ratio, round(residual_ratio::numeric, 3) AS residual_ratio
FROM demo_model_clients ORDER BY client;

\echo
\echo '-- projection in a query: the rows the model explains least (squared residual: an anomaly score)'
SELECT store, id, round(perpca_model_error('demo_model', 'store ' || store, x)::numeric, 3) AS error
FROM demo_sales ORDER BY error DESC LIMIT 5;

\echo
\echo '-- stores that differ in the same way: distance between their local subspaces'
SELECT client_a, client_b, round(distance::numeric, 3) AS distance
FROM perpca_similarity('demo_model') WHERE client_a < client_b ORDER BY distance, client_a LIMIT 6;
