--
-- perpca_refresh: refit a stored model from its recorded source query,
-- warm-started from its stored components, swapped in atomically.  New
-- clients get local components, clients gone from the query are dropped, a
-- failed or cancelled refresh leaves the model as it was.
--
CREATE SCHEMA perpca_refresh;
SET search_path = perpca_refresh, public;
SET extra_float_digits = 0;
\i test/include/compare.sql
-- Fingerprint of everything a model stores except the fit's timing.
CREATE FUNCTION fingerprint(model text) RETURNS text
LANGUAGE plpgsql STABLE AS $$
DECLARE
    c text;
    k text;
    i text;
BEGIN
    EXECUTE format('SELECT md5(string_agg(t::text, %L ORDER BY kind, client, component)) FROM %I t', '|',
                   model || '_components') INTO c;
    EXECUTE format('SELECT md5(string_agg(t::text, %L ORDER BY client)) FROM %I t', '|',
                   model || '_clients') INTO k;
    EXECUTE format('SELECT md5((t.version, t.n_clients, t.rounds, t.objective, t.init, t.source_query)::text) FROM %I t',
                   model || '_info') INTO i;
    RETURN md5(c || k || i);
END
$$;

-- The raw rows arrive over time: feed_rows; the model reads them through the view feed.
CREATE TABLE obs (client text, obs int, x float8[]);
\copy obs from 'test/data/project_obs.csv' csv header
CREATE TABLE feed_rows AS SELECT * FROM obs WHERE client IN ('a', 'b', 'c', 'd') AND obs <= 100;
CREATE VIEW feed AS SELECT client, x FROM feed_rows;

SELECT model_name, n_clients, converged
  FROM perpca_train('r', 'SELECT client, perpca_stats(x) FROM perpca_refresh.feed GROUP BY client', 2, 2);
SELECT version AS v0, rounds AS cold_rounds_before FROM r_info \gset
SELECT client, array_length(perpca_model_scores('r', client, x), 1) AS scores
  FROM obs WHERE obs = 1 AND client IN ('a', 'e') ORDER BY 1;

-- Nothing changed: the refresh recognises the statistics (their digest) and fits nothing.
SELECT outcome, version > :v0 AS new_version, clients, clients_added, clients_dropped, warm_start,
       converged, rounds_run
  FROM perpca_refresh('r');
-- One row more: a warm refresh runs the stored U as one of its starts, and
-- the best start wins.
INSERT INTO feed_rows SELECT client, -1, x FROM obs WHERE client = 'a' AND obs = 1;
SELECT outcome, version > :v0 AS new_version, clients, clients_added, clients_dropped, warm_start,
       converged
  FROM perpca_refresh('r');
DELETE FROM feed_rows WHERE obs = -1;
SELECT converged AS stored_start_converged
  FROM perpca_last_fit_starts() WHERE start = 'given';
SELECT bool_or(chosen AND objective >= (SELECT max(objective) FROM perpca_last_fit_starts())) AS best_start_kept
  FROM perpca_last_fit_starts();
SELECT init, source_query FROM r_info;

-- New rows for a..c, a new client e, client d gone.
INSERT INTO feed_rows SELECT * FROM obs WHERE client IN ('a', 'b', 'c') AND obs > 100;
INSERT INTO feed_rows SELECT * FROM obs WHERE client = 'e';
DELETE FROM feed_rows WHERE client = 'd';
SELECT version AS v1 FROM r_info \gset
SELECT sum(perpca_model_error('r', client, x)) AS error_before FROM obs WHERE client IN ('a', 'b', 'c') \gset
SELECT outcome, version > :v1 AS new_version, clients, clients_added, clients_dropped, warm_start, converged
  FROM perpca_refresh('r');
SELECT client, n, n_local, source FROM r_clients ORDER BY client;
SELECT kind, client, count(*) AS components FROM r_components GROUP BY 1, 2 ORDER BY 1, 2 NULLS FIRST;
-- This session's cached model follows the refresh: e now has local scores, d is unseen.
SELECT client, array_length(perpca_model_scores('r', client, x), 1) AS scores
  FROM obs WHERE obs = 1 AND client IN ('a', 'd', 'e') ORDER BY 1;
SELECT abs(sum(perpca_model_error('r', client, x)) - :error_before) > 1e-9 AS errors_changed
  FROM obs WHERE client IN ('a', 'b', 'c');

-- The same data fitted cold: the same model.  (Rounds cold against warm: bench/refresh_bench.sh.)
SELECT model_name, converged
  FROM perpca_train('r_cold', 'SELECT client, perpca_stats(x) FROM perpca_refresh.feed GROUP BY client', 2, 2);
SELECT projector_distance(w.u, c.u) < 1e-8 AS same_global_subspace,
       abs(wi.objective - ci.objective) <= 1e-9 * abs(ci.objective) AS same_objective
  FROM (SELECT array_agg(pc ORDER BY component) AS u FROM r_components WHERE kind = 'global') w,
       (SELECT array_agg(pc ORDER BY component) AS u FROM r_cold_components WHERE kind = 'global') c,
       r_info wi, r_cold_info ci;
SELECT k.client, projector_distance(w.v, c.v) < 1e-6 AS same_local_subspace
  FROM (SELECT client, array_agg(pc ORDER BY component) AS v FROM r_components WHERE kind = 'local' GROUP BY 1) w
  JOIN (SELECT client, array_agg(pc ORDER BY component) AS v FROM r_cold_components WHERE kind = 'local' GROUP BY 1) c
 USING (client) JOIN r_clients k USING (client) ORDER BY 1;

-- A cold refresh ignores the stored components and uses the recorded init again.
SELECT warm_start, converged FROM perpca_refresh('r', warm => false);
SELECT init FROM r_info;
-- The next one, of the same data, fits nothing.
SELECT outcome, warm_start FROM perpca_refresh('r');

-- A personalized client is not in the source query: the next refresh drops it.
SELECT count(*) AS personalized
  FROM perpca_personalize('r', 'new', (SELECT perpca_stats(x) FROM obs WHERE client = 'new'));
SELECT clients_added, clients_dropped FROM perpca_refresh('r');
SELECT count(*) FILTER (WHERE client = 'new') AS new_rows FROM r_clients;

-- A refresh that fails leaves the model exactly as it was: when its source query fails,
SELECT fingerprint('r') AS fp \gset
\set VERBOSITY terse
CREATE FUNCTION unavailable() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN RAISE EXCEPTION 'source is unavailable' USING ERRCODE = 'connection_failure'; END $$;
CREATE OR REPLACE VIEW feed AS SELECT client, x FROM feed_rows WHERE unavailable();
SELECT * FROM perpca_refresh('r');
CREATE OR REPLACE VIEW feed AS SELECT client, x FROM feed_rows;
SELECT fingerprint('r') = :'fp' AS unchanged_after_error;
-- ... also when the rows have the wrong dimension,
INSERT INTO feed_rows VALUES ('z', 1, '{1,2,3}');
SELECT * FROM perpca_refresh('r');
DELETE FROM feed_rows WHERE client = 'z';
SELECT fingerprint('r') = :'fp' AS unchanged_after_bad_rows;
-- ... when it is cancelled (here by statement_timeout while the source query runs),
CREATE FUNCTION slow() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$ BEGIN PERFORM pg_sleep(30); RETURN true; END $$;
CREATE OR REPLACE VIEW feed AS SELECT client, x FROM feed_rows WHERE slow();
SET statement_timeout = '300ms';
SELECT * FROM perpca_refresh('r');
RESET statement_timeout;
CREATE OR REPLACE VIEW feed AS SELECT client, x FROM feed_rows;
SELECT fingerprint('r') = :'fp' AS unchanged_after_cancel;
-- ... and when its transaction rolls back.
BEGIN;
SELECT clients, clients_dropped FROM perpca_refresh('r', warm => false);
SELECT count(*) AS components_in_transaction FROM r_components;
ROLLBACK;
\set VERBOSITY default
SELECT fingerprint('r') = :'fp' AS unchanged_after_rollback;
SELECT array_length(perpca_model_scores('r', 'e', x), 1) AS scores_after_rollback FROM obs WHERE obs = 1 AND client = 'e';

-- Per-client n_local from the query's third column, and schema-qualified names under another search_path.
SELECT model_name FROM perpca_train('perpca_refresh.ranks',
    $$SELECT client, perpca_stats(x), CASE WHEN client = 'a' THEN 3 ELSE 1 END FROM perpca_refresh.feed GROUP BY client$$,
    2, 1);
INSERT INTO feed_rows SELECT * FROM obs WHERE client = 'd';
SET search_path = public;
SELECT outcome, clients, clients_added, warm_start FROM perpca_refresh('perpca_refresh.ranks');
SET search_path = perpca_refresh, public;
SELECT client, n_local FROM ranks_clients ORDER BY 1;
SELECT client, count(*) AS local_components FROM ranks_components WHERE kind = 'local' GROUP BY 1 ORDER BY 1;

-- Errors and properties.
\set VERBOSITY terse
SELECT * FROM perpca_refresh('no_such_model');
SELECT * FROM perpca_refresh('a.b.c');
\set VERBOSITY default
SELECT count(*) AS null_model_rows FROM perpca_refresh(NULL);
SELECT perpca_merge(NULL::perpca_stats, NULL::perpca_stats) IS NULL AS merge_of_nulls;
SELECT p.pronamespace::regnamespace AS schema, p.proname, pg_get_function_identity_arguments(p.oid) AS args,
       p.provolatile, p.proisstrict, p.proparallel, obj_description(p.oid, 'pg_proc') IS NOT NULL AS commented,
       (SELECT lanname FROM pg_language WHERE oid = p.prolang) = 'c'
       OR p.proconfig @> '{"search_path=pg_catalog, pg_temp"}' AS pinned_or_c
  FROM pg_proc p
 WHERE p.proname IN ('perpca_refresh', 'perpca_merge', 'perpca_drop', 'model_lock', 'fit') AND p.prokind = 'f'
 ORDER BY 2, 3;

-- The option hops reaches perpca_train, is recorded, and a refresh reuses
-- it: hops => 0 runs the starts only, at train and at refresh; the default
-- (4) runs at least one hop after them.
SELECT model_name FROM perpca_train('r_hops', 'SELECT client, perpca_stats(x) FROM perpca_refresh.feed GROUP BY client',
                                    2, 2, hops => 0);
SELECT options->'hops' AS recorded_hops,
       (SELECT count(*) FILTER (WHERE start LIKE 'hop %') FROM perpca_last_fit_starts()) AS hops_at_train
  FROM r_hops_info;
SELECT outcome FROM perpca_refresh('r_hops', warm => false);
SELECT options->'hops' AS recorded_hops,
       (SELECT count(*) FILTER (WHERE start LIKE 'hop %') FROM perpca_last_fit_starts()) AS hops_at_refresh
  FROM r_hops_info;
SELECT model_name FROM perpca_train('r_hops', 'SELECT client, perpca_stats(x) FROM perpca_refresh.feed GROUP BY client',
                                    2, 2, replace => true);
SELECT options->'hops' AS recorded_hops,
       (SELECT count(*) FILTER (WHERE start LIKE 'hop %') FROM perpca_last_fit_starts()) > 0 AS hops_at_train
  FROM r_hops_info;

SET client_min_messages = warning;
DROP SCHEMA perpca_refresh CASCADE;
RESET client_min_messages;
RESET search_path;
RESET extra_float_digits;
