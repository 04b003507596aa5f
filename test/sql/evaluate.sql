--
-- Held-out evaluation of stored models (perpca_evaluate, perpca_evaluate_summary).
-- Expected figures come from the numpy oracle's converged fit on the same
-- training rows, evaluated row by row on the held-out rows
-- (test/fixtures/gen_evaluate.py), for each center option, for clients the
-- model knows and for one it has never seen.
--
CREATE SCHEMA perpca_evaluate;
SET search_path = perpca_evaluate, public;
SET extra_float_digits = 0;
CREATE FUNCTION close(a float8, b float8, tol float8) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$ SELECT abs(a - b) <= tol * greatest(abs(b), 1e-300) $$;

CREATE TABLE obs (client text, obs int, heldout boolean, x float8[]);
\copy obs from 'test/data/evaluate_obs.csv' csv header
CREATE TABLE expected (center text, part text, client text, known boolean, n bigint, error float8,
                       total float8, global_ratio float8, local_ratio float8);
\copy expected from 'test/data/evaluate_expected.csv' csv header

CREATE VIEW models AS
SELECT 'client' AS center, 'ev_client' AS model UNION ALL
SELECT 'global', 'ev_global' UNION ALL
SELECT 'none', 'ev_none';
SELECT m.center, t.n_clients
  FROM models m,
       LATERAL perpca_train(m.model, $$SELECT client, perpca_stats(x) FROM obs WHERE NOT heldout GROUP BY client$$,
                            2, 2, tolerance => 1e-12, center => m.center) t
 ORDER BY 1;

-- From rows and from statistics, held-out and training rows, against numpy.
CREATE TABLE got AS
SELECT m.center, p.part, s.source, e.*
  FROM models m
 CROSS JOIN (VALUES ('heldout', 'heldout'), ('train', 'NOT heldout')) AS p(part, cond)
 CROSS JOIN (VALUES ('rows'), ('stats')) AS s(source)
 CROSS JOIN LATERAL perpca_evaluate(m.model,
       CASE s.source WHEN 'rows' THEN 'SELECT client, x FROM obs WHERE ' || p.cond
            ELSE 'SELECT client, perpca_stats(x) FROM obs WHERE ' || p.cond || ' GROUP BY client' END) e;
SELECT g.center, g.part, g.source, count(*) AS clients,
       bool_and(g.known = x.known AND g.n = x.n) AS known_n,
       bool_and(close(g.error, x.error, 1e-7)) AS error,
       bool_and(close(g.total_variance, x.total, 1e-10)) AS total,
       bool_and(close(g.global_ratio, x.global_ratio, 1e-8)) AS global_ratio,
       bool_and(close(g.local_ratio, x.local_ratio, 1e-7)) AS local_ratio,
       bool_and(close(g.explained_ratio, x.global_ratio + x.local_ratio, 1e-8)) AS explained_ratio
  FROM got g JOIN expected x USING (center, part, client)
 GROUP BY 1, 2, 3 ORDER BY 1, 2, 3;
-- The held-out rows of the unseen client, on the global components only.
SELECT center, client, known, n, local_ratio = 0 AS no_local_part, source
  FROM got WHERE client = 'new' ORDER BY center, source;

-- Rows and statistics give the same numbers (the error is tr((I-P) S) either way).
SELECT r.center, bool_and(close(r.error, s.error, 1e-12) AND close(r.total_variance, s.total_variance, 1e-12)
                          AND close(r.explained_ratio, s.explained_ratio, 1e-12)) AS same
  FROM got r JOIN got s USING (center, part, client)
 WHERE r.source = 'rows' AND s.source = 'stats'
 GROUP BY 1 ORDER BY 1;

-- The same errors as the row-wise projection functions of the model, and
-- on training rows the train_error the model stored.
SELECT m.center,
       bool_and(close(g.error, (SELECT avg(perpca_model_error(m.model, o.client, o.x))
                                 FROM obs o WHERE o.client = g.client AND o.heldout), 1e-10)) AS model_error
  FROM models m JOIN got g ON g.center = m.center AND g.part = 'heldout' AND g.source = 'rows'
 GROUP BY 1 ORDER BY 1;
SELECT bool_and(close(g.error, c.train_error, 1e-10)) AS train_error
  FROM got g JOIN ev_client_clients c USING (client)
 WHERE g.center = 'client' AND g.part = 'train' AND g.source = 'stats';

-- Summary: equal and sample weights, against the per-client figures of numpy.
SELECT m.center, s.clients, s.unseen_clients, s.n,
       close(s.error, (SELECT avg(error) FROM expected x WHERE x.center = m.center AND x.part = 'heldout'), 1e-7) AS error,
       close(s.error_samples, (SELECT sum(n * error) / sum(n) FROM expected x
                                WHERE x.center = m.center AND x.part = 'heldout'), 1e-7) AS error_samples,
       close(s.explained_ratio, (SELECT sum((global_ratio + local_ratio) * total) / sum(total) FROM expected x
                                  WHERE x.center = m.center AND x.part = 'heldout'), 1e-8) AS explained,
       close(s.explained_ratio_samples, (SELECT sum(n * (global_ratio + local_ratio) * total) / sum(n * total)
                                          FROM expected x WHERE x.center = m.center AND x.part = 'heldout'), 1e-8) AS explained_samples,
       close(s.global_ratio + s.local_ratio, s.explained_ratio, 1e-12) AS parts_add_up
  FROM models m, LATERAL perpca_evaluate_summary(m.model, 'SELECT client, x FROM obs WHERE heldout') s
 ORDER BY 1;

-- Other input shapes: integer client keys, real[] rows, duplicate statistics
-- rows of one client (merged), NULL rows (skipped), a client with only NULL rows.
SELECT client, n, close(error, (SELECT error FROM got WHERE center = 'client' AND part = 'heldout'
                                                       AND source = 'rows' AND client = 'a'), 1e-12) AS same
  FROM perpca_evaluate('ev_client', $$SELECT client, perpca_stats(x) FROM obs WHERE heldout AND client = 'a'
                                       GROUP BY client, obs % 3$$);
SELECT client, n, error IS NOT NULL AS has_error
  FROM perpca_evaluate('ev_client', $$SELECT client, x::real[] FROM obs WHERE heldout AND client IN ('a', 'b')
                                       UNION ALL SELECT 'a', NULL UNION ALL SELECT 'z', NULL$$);
SELECT client, known, n FROM perpca_evaluate('ev_client', $$SELECT 7, x FROM obs WHERE heldout AND client = 'a'$$);
SELECT count(*) FROM perpca_evaluate('ev_client', $$SELECT client, x FROM obs WHERE false$$);

-- Errors.
\set VERBOSITY terse
SELECT * FROM perpca_evaluate('no_such_model', 'SELECT client, x FROM obs');
SELECT * FROM perpca_evaluate('ev_client', 'SELECT client FROM obs');
SELECT * FROM perpca_evaluate('ev_client', $$SELECT client, obs FROM obs WHERE client = 'd'$$);
SELECT * FROM perpca_evaluate('ev_client', $$SELECT client, x[1:5] FROM obs WHERE client = 'b'$$);
SELECT * FROM perpca_evaluate('ev_client', $$SELECT NULL::text, x FROM obs$$);
SELECT * FROM perpca_evaluate('ev_client', $$SELECT 'a', ARRAY[1, 2, 3, 4, 5, 6, 7, 'NaN']::float8[]$$);
SELECT * FROM perpca_evaluate('ev_client', 'SELECT 1; SELECT 2');
SELECT * FROM perpca_evaluate('ev_client', 'CREATE TABLE x ()');
SELECT * FROM perpca_evaluate('ev_client', NULL);
\set VERBOSITY default

-- Every new object is commented.
SELECT p.pronamespace::regnamespace::text AS schema, p.proname, obj_description(p.oid, 'pg_proc') IS NOT NULL AS commented
  FROM pg_proc p
 WHERE p.proname IN ('perpca_evaluate', 'perpca_evaluate_summary', 'perpca_choose_ranks')
 ORDER BY 1, 2;

SET client_min_messages = warning;
DROP SCHEMA perpca_evaluate CASCADE;
