--
-- Reading a stored model safely: a model's owner cannot make another role
-- (here a superuser, and an ordinary role) run her code through the
-- model-aware functions.  Her model's tables replaced by views, given
-- row-level security, other owners or other column types are refused with a
-- clear error; her function, which leaves a trace in a sequence and a
-- NOTICE whenever it runs, never runs.  (On 0.1.0 each of these reads ran
-- her function as the caller.)
--
SET client_min_messages = notice;
CREATE SCHEMA mr;
SET search_path = mr, public;
\i test/include/compare.sql
CREATE TABLE obs (client text, obs int, x float8[]);
\copy obs from 'test/data/project_obs.csv' csv header
GRANT USAGE ON SCHEMA mr TO PUBLIC;
GRANT SELECT ON obs TO PUBLIC;

-- Runs a statement; 'ok', or the SQLSTATE and message (and detail) of its error.
CREATE FUNCTION try(q text, with_detail boolean DEFAULT false) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    detail text;
BEGIN
    EXECUTE q;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
    RETURN SQLSTATE || ': ' || SQLERRM || CASE WHEN with_detail AND detail <> '' THEN ' / ' || detail ELSE '' END;
END
$$;
-- A call of every model-aware function on a model.
CREATE FUNCTION calls(model text) RETURNS TABLE (fn text, q text) LANGUAGE sql AS $$
    SELECT f, pg_catalog.format(q, model) FROM (VALUES
        ('perpca_model_scores',      $q$SELECT perpca_model_scores(%L, client, x) FROM mr.obs WHERE obs = 1 AND client <> 'new'$q$),
        ('perpca_model_global_part', $q$SELECT perpca_model_global_part(%L, client, x) FROM mr.obs WHERE obs = 1 AND client <> 'new'$q$),
        ('perpca_model_local_part',  $q$SELECT perpca_model_local_part(%L, client, x) FROM mr.obs WHERE obs = 1 AND client <> 'new'$q$),
        ('perpca_model_reconstruct', $q$SELECT perpca_model_reconstruct(%L, client, x) FROM mr.obs WHERE obs = 1 AND client <> 'new'$q$),
        ('perpca_model_residual',    $q$SELECT perpca_model_residual(%L, client, x) FROM mr.obs WHERE obs = 1 AND client <> 'new'$q$),
        ('perpca_model_error',       $q$SELECT perpca_model_error(%L, client, x) FROM mr.obs WHERE obs = 1 AND client <> 'new'$q$),
        ('perpca_similarity',        $q$SELECT * FROM perpca_similarity(%L)$q$),
        ('perpca_component_info',    $q$SELECT * FROM perpca_component_info(%L)$q$),
        ('perpca_model_theta',       $q$SELECT * FROM perpca_model_theta(%L)$q$)) AS c(f, q)
$$;

-- Alice owns a model; bob is another ordinary role.
CREATE ROLE perpca_mr_alice;
CREATE ROLE perpca_mr_bob;
CREATE SCHEMA mr_alice AUTHORIZATION perpca_mr_alice;
GRANT USAGE ON SCHEMA mr_alice TO PUBLIC;
SET ROLE perpca_mr_alice;
SELECT model_name, n_clients FROM perpca_train('mr_alice.m',
    $$SELECT client, perpca_stats(x) FROM mr.obs WHERE client <> 'new' GROUP BY client$$, 2, 2);
GRANT SELECT ON mr_alice.m_info, mr_alice.m_clients, mr_alice.m_components TO perpca_mr_bob;
-- Her function: counts its runs in a sequence and says who ran it.
CREATE SEQUENCE mr_alice.trace;
GRANT USAGE ON SEQUENCE mr_alice.trace TO PUBLIC;
CREATE FUNCTION mr_alice.evil() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_catalog.nextval('mr_alice.trace');
    RAISE NOTICE 'evil() ran as %', current_user;
    RETURN true;
END
$$;
RESET ROLE;

-- Her intact model reads fine, for a superuser and for bob (this also warms the cache).
SELECT fn, try(q) FROM calls('mr_alice.m');
SET ROLE perpca_mr_bob;
SELECT fn, try(q) FROM calls('mr_alice.m');
RESET ROLE;

-- 1. <model>_info replaced by a view that calls her function.
SET ROLE perpca_mr_alice;
ALTER TABLE mr_alice.m_info RENAME TO m_info_real;
CREATE VIEW mr_alice.m_info AS SELECT * FROM mr_alice.m_info_real WHERE mr_alice.evil();
GRANT SELECT ON mr_alice.m_info TO perpca_mr_bob;
RESET ROLE;
SELECT fn, try(q) FROM calls('mr_alice.m');
SET ROLE perpca_mr_alice;
DROP VIEW mr_alice.m_info;
ALTER TABLE mr_alice.m_info_real RENAME TO m_info;
RESET ROLE;

-- 2. <model>_components and 3. <model>_clients replaced by such views (the
-- info table, and so the cached version, unchanged).
SET ROLE perpca_mr_alice;
ALTER TABLE mr_alice.m_components RENAME TO m_components_real;
CREATE VIEW mr_alice.m_components AS SELECT * FROM mr_alice.m_components_real WHERE mr_alice.evil();
RESET ROLE;
SELECT fn, try(q) FROM calls('mr_alice.m');
SET ROLE perpca_mr_alice;
DROP VIEW mr_alice.m_components;
ALTER TABLE mr_alice.m_components_real RENAME TO m_components;
ALTER TABLE mr_alice.m_clients RENAME TO m_clients_real;
CREATE MATERIALIZED VIEW mr_alice.m_clients AS SELECT * FROM mr_alice.m_clients_real WHERE mr_alice.evil() WITH NO DATA;
RESET ROLE;
SELECT fn, try(q) FROM calls('mr_alice.m');
SET ROLE perpca_mr_alice;
DROP MATERIALIZED VIEW mr_alice.m_clients;
ALTER TABLE mr_alice.m_clients_real RENAME TO m_clients;
RESET ROLE;

-- 4. Row-level security whose policy calls her function, read by bob (a
-- superuser bypasses it; bob would run the policy).
SET ROLE perpca_mr_alice;
ALTER TABLE mr_alice.m_clients ENABLE ROW LEVEL SECURITY;
CREATE POLICY p ON mr_alice.m_clients USING (mr_alice.evil());
RESET ROLE;
SET ROLE perpca_mr_bob;
SELECT fn, try(q) FROM calls('mr_alice.m');
RESET ROLE;
SET ROLE perpca_mr_alice;
DROP POLICY p ON mr_alice.m_clients;
ALTER TABLE mr_alice.m_clients DISABLE ROW LEVEL SECURITY;
RESET ROLE;

-- 5. A column of another type (what the cache would read as an int4).
SET ROLE perpca_mr_alice;
ALTER TABLE mr_alice.m_info ALTER COLUMN d TYPE text;
RESET ROLE;
SELECT fn, try(q) FROM calls('mr_alice.m') WHERE fn IN ('perpca_model_error', 'perpca_model_theta');
SET ROLE perpca_mr_alice;
ALTER TABLE mr_alice.m_info ALTER COLUMN d TYPE int USING d::int;
RESET ROLE;

-- 6. Tables of two owners.
ALTER TABLE mr_alice.m_components OWNER TO perpca_mr_bob;
SELECT fn, try(q) FROM calls('mr_alice.m') WHERE fn IN ('perpca_model_error', 'perpca_similarity');
ALTER TABLE mr_alice.m_components OWNER TO perpca_mr_alice;

-- 7. The caller needs SELECT on the tables, as for a query.
SET ROLE perpca_mr_alice;
REVOKE SELECT ON mr_alice.m_components FROM perpca_mr_bob;
RESET ROLE;
SET ROLE perpca_mr_bob;
SELECT fn, try(q) FROM calls('mr_alice.m') WHERE fn IN ('perpca_model_error', 'perpca_component_info');
RESET ROLE;
-- Column privileges on the columns read are enough.
SET ROLE perpca_mr_alice;
GRANT SELECT (kind, client, component, pc, variance) ON mr_alice.m_components TO perpca_mr_bob;
RESET ROLE;
SET ROLE perpca_mr_bob;
SELECT fn, try(q) FROM calls('mr_alice.m') WHERE fn IN ('perpca_model_error', 'perpca_component_info');
RESET ROLE;

-- Her function never ran, and her restored model reads fine again.
SELECT last_value, is_called FROM mr_alice.trace;
SELECT fn, try(q) FROM calls('mr_alice.m');

DROP SCHEMA mr_alice CASCADE;
DROP ROLE perpca_mr_alice;
DROP ROLE perpca_mr_bob;

--
-- Client keys in their own type: a model trained on int, bigint, uuid, date
-- or text keys is read with the key in that type (and the text form).
--
SET DateStyle = 'ISO, MDY';
CREATE VIEW keyed AS
SELECT client, obs, x, ascii(client) - 96 AS k_int, (ascii(client) - 96)::bigint * 10000000000 AS k_bigint,
       md5(client)::uuid AS k_uuid, date '2024-01-01' + (ascii(client) - 96) AS k_date
  FROM obs WHERE client <> 'new';
SELECT model_name, n_clients FROM perpca_train('mk_text', 'SELECT client, perpca_stats(x) FROM mr.keyed GROUP BY 1', 2, 2);
SELECT model_name, n_clients FROM perpca_train('mk_int', 'SELECT k_int, perpca_stats(x) FROM mr.keyed GROUP BY 1', 2, 2);
SELECT model_name, n_clients FROM perpca_train('mk_bigint', 'SELECT k_bigint, perpca_stats(x) FROM mr.keyed GROUP BY 1', 2, 2);
SELECT model_name, n_clients FROM perpca_train('mk_uuid', 'SELECT k_uuid, perpca_stats(x) FROM mr.keyed GROUP BY 1', 2, 2);
SELECT model_name, n_clients FROM perpca_train('mk_date', 'SELECT k_date, perpca_stats(x) FROM mr.keyed GROUP BY 1', 2, 2);
SELECT client FROM mk_date_clients ORDER BY 1;

-- Every row's key is known (unknown => 'error' would raise otherwise), the
-- answer is that of the key's text form, and the same as the text model's.
SELECT 'text' AS key_type, count(*) AS rows,
       bool_and(array_length(perpca_model_scores('mk_text', client, x, unknown => 'error'), 1) = 4) AS known,
       bool_and(perpca_model_error('mk_text', client::varchar, x, 'error') = perpca_model_error('mk_text', client, x)) AS varchar_same
  FROM keyed;
SELECT 'int' AS key_type, count(*) AS rows,
       bool_and(array_length(perpca_model_scores('mk_int', k_int, x, unknown => 'error'), 1) = 4) AS known,
       bool_and(perpca_model_error('mk_int', k_int, x) = perpca_model_error('mk_int', k_int::text, x)) AS same_as_text,
       bool_and(arrays_close(perpca_model_residual('mk_int', k_int, x), perpca_model_residual('mk_text', client, x), 1e-8)) AS same_as_text_model,
       bool_and(perpca_model_error('mk_int', k_int::smallint, x, 'error') = perpca_model_error('mk_int', k_int::bigint, x, 'error')) AS int2_int8
  FROM keyed;
SELECT 'bigint' AS key_type, count(*) AS rows,
       bool_and(array_length(perpca_model_scores('mk_bigint', k_bigint, x, unknown => 'error'), 1) = 4) AS known,
       bool_and(perpca_model_error('mk_bigint', k_bigint, x) = perpca_model_error('mk_bigint', k_bigint::text, x)) AS same_as_text,
       bool_and(arrays_close(perpca_model_global_part('mk_bigint', k_bigint, x), perpca_model_global_part('mk_text', client, x), 1e-8)) AS same_as_text_model
  FROM keyed;
SELECT 'uuid' AS key_type, count(*) AS rows,
       bool_and(array_length(perpca_model_scores('mk_uuid', k_uuid, x, unknown => 'error'), 1) = 4) AS known,
       bool_and(perpca_model_error('mk_uuid', k_uuid, x) = perpca_model_error('mk_uuid', k_uuid::text, x)) AS same_as_text,
       bool_and(arrays_close(perpca_model_local_part('mk_uuid', k_uuid, x), perpca_model_local_part('mk_text', client, x), 1e-8)) AS same_as_text_model
  FROM keyed;
SELECT 'date' AS key_type, count(*) AS rows,
       bool_and(array_length(perpca_model_scores('mk_date', k_date, x, unknown => 'error'), 1) = 4) AS known,
       bool_and(perpca_model_error('mk_date', k_date, x) = perpca_model_error('mk_date', k_date::text, x)) AS same_as_text,
       bool_and(arrays_close(perpca_model_reconstruct('mk_date', k_date, x), perpca_model_reconstruct('mk_text', client, x), 1e-8)) AS same_as_text_model
  FROM keyed;
-- Literals: an untyped literal is text, a typed one keeps its type.
SELECT array_length(perpca_model_scores('mk_text', 'a', x), 1) AS text_literal,
       array_length(perpca_model_scores('mk_int', 1, x), 1) AS int_literal,
       array_length(perpca_model_scores('mk_uuid', '0cc175b9-c0f1-b6a8-31c3-99e269772661'::uuid, x), 1) AS uuid_literal,
       array_length(perpca_model_scores('mk_date', date '2024-01-02', x), 1) AS date_literal
  FROM obs WHERE client = 'a' AND obs = 1;
-- Types that cannot match: an error, whatever the unknown option.
SELECT try($$SELECT perpca_model_error('mk_text', k_int, x) FROM mr.keyed$$) AS int_key_on_text_keys;
SELECT try($$SELECT perpca_model_error('mk_date', k_bigint, x) FROM mr.keyed$$) AS bigint_key_on_date_keys;
SELECT try($$SELECT perpca_model_error('mk_int', k_uuid, x) FROM mr.keyed$$) AS uuid_key_on_int_keys;
SELECT try($$SELECT perpca_model_error('mk_int', k_date, x, 'error') FROM mr.keyed$$) AS date_key_on_int_keys;
-- The same key in another type that can match: text keys '1'..'5' read with int keys.
SELECT try($$SELECT perpca_model_error('mk_int', k_int::numeric, x, 'error') FROM mr.keyed$$) AS numeric_key_on_int_keys;

--
-- Unknown clients: with unknown => 'error' an error that names the key and
-- the model; with the default ('global') one NOTICE per statement, however
-- many rows and call sites miss.
--
SELECT try($$SELECT perpca_model_error('mk_text', 'stroe_7', x, unknown => 'error') FROM mr.obs$$) AS text_typo;
SELECT try($$SELECT perpca_model_error('mk_int', 42, x, unknown => 'error') FROM mr.obs$$) AS int_unknown;
\set VERBOSITY default
SELECT perpca_model_error('mk_text', 'stroe_7', x, unknown => 'error') FROM obs LIMIT 1;
SELECT count(*) AS rows, count(DISTINCT client) AS unknown_keys,
       bool_and(array_length(perpca_model_scores('mk_text', client || '_typo', x), 1) = 2) AS global_only,
       bool_and(perpca_model_local_part('mk_text', client || '_typo', x) = array_fill(0::float8, ARRAY[8])) AS no_local_part
  FROM obs;
SELECT count(*) AS rows_second_statement FROM obs WHERE perpca_model_error('mk_text', client || '_typo', x) >= 0;
SELECT count(*) AS known_rows_no_notice FROM keyed WHERE perpca_model_error('mk_text', client, x) >= 0;
-- Unknown keys of two models in one statement: one NOTICE per model.
SELECT count(*) AS two_models FROM obs
 WHERE perpca_model_error('mk_text', client || '_typo', x) >= 0 AND perpca_model_error('mk_int', 42, x) >= 0;
-- The unknown option is checked; NULL gives NULL (the functions are strict).
SELECT try($$SELECT perpca_model_error('mk_text', 'a', x, unknown => 'ignore') FROM mr.obs$$) AS bad_option;
SELECT perpca_model_error('mk_text', 'a', x, NULL) IS NULL AS null_option FROM obs LIMIT 1;
SELECT p.proname, pg_get_function_identity_arguments(p.oid) AS args, p.provolatile, p.proisstrict, p.proparallel
  FROM pg_proc p
 WHERE p.proname ~ '^perpca_(model_(scores|global_part|local_part|reconstruct|residual|error|theta)|similarity|component_info)$'
 ORDER BY 1, 2;

--
-- A damaged model (changed by hand, version renewed so that caches reload)
-- gives a clear error, not a wrong answer or a crash.
--
CREATE FUNCTION damage(change text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    result text;
BEGIN
    EXECUTE change;
    UPDATE mk_text_info SET version = version + 1000;
    result := try($q$SELECT perpca_model_error('mk_text', client, x) FROM mr.keyed$q$, true);
    RAISE EXCEPTION USING MESSAGE = result, ERRCODE = 'P0001';
EXCEPTION WHEN raise_exception THEN
    RETURN SQLERRM;     -- the change is rolled back
END
$$;
SELECT damage($$ALTER TABLE mk_text_info DROP CONSTRAINT mk_text_info_pkey;
              INSERT INTO mk_text_info SELECT * FROM mk_text_info$$) AS two_info_rows;
SELECT damage($$DELETE FROM mk_text_info$$) AS no_info_row;
SELECT damage($$UPDATE mk_text_components SET pc = pc[1:3] WHERE client = 'b'$$) AS short_pc;
SELECT damage($$UPDATE mk_text_components SET pc[2] = 'NaN' WHERE client = 'b'$$) AS nan_pc;
SELECT damage($$DELETE FROM mk_text_clients WHERE client = 'c'$$) AS client_row_missing;
SELECT damage($$UPDATE mk_text_info SET center = 'middle'$$) AS bad_center;
SELECT damage($$ALTER TABLE mk_text_clients DROP COLUMN global_ratio$$) AS dropped_column;
SELECT damage($$DROP TABLE mk_text_components$$) AS missing_table;
SELECT try($$SELECT perpca_model_error('mk_text', client, x) FROM mr.keyed$$) AS intact_again;

-- Keys of another type in parallel workers give the serial answer.
SELECT sum(perpca_model_error('mk_int', k_int, x)) AS serial_sum FROM keyed \gset
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
-- Forces parallel plans; named force_parallel_mode before PostgreSQL 16.
SELECT CASE WHEN current_setting('server_version_num')::int >= 160000
            THEN 'debug_parallel_query' ELSE 'force_parallel_mode' END AS force_parallel \gset
SET :force_parallel = on;
SELECT abs(sum(perpca_model_error('mk_int', k_int, x, 'error')) - :serial_sum) <= 1e-9 * :serial_sum AS parallel_equals_serial
  FROM keyed;
RESET :force_parallel;
RESET max_parallel_workers_per_gather;
RESET min_parallel_table_scan_size;
RESET parallel_tuple_cost;
RESET parallel_setup_cost;

--
-- perpca_similarity: each unordered pair once, no self-pairs; all_pairs for
-- the full matrix.
--
SELECT model_name, n_clients FROM perpca_train('m4', $$SELECT client, perpca_stats(x) FROM mr.obs
                                                      WHERE client IN ('a', 'b', 'c', 'd') GROUP BY 1$$, 2, 2);
SELECT count(*) AS pairs, bool_and(client_a < client_b) AS a_before_b, bool_and(distance > 0) AS positive
  FROM perpca_similarity('m4');
SELECT client_a, client_b FROM perpca_similarity('m4') ORDER BY 1, 2;
SELECT count(*) AS ordered_pairs, count(*) FILTER (WHERE client_a = client_b AND distance = 0) AS zero_diagonal
  FROM perpca_similarity('m4', all_pairs => true);
SELECT bool_and(u.distance = f.distance AND abs(u.distance - g.distance) <= 1e-14) AS same_distances
  FROM perpca_similarity('m4') u
  JOIN perpca_similarity('m4', true) f ON f.client_a = u.client_a AND f.client_b = u.client_b
  JOIN perpca_similarity('m4', true) g ON g.client_a = u.client_b AND g.client_b = u.client_a;

--
-- perpca_component_info: what the ratio columns divide by (as documented).
--
SELECT i.kind, count(*) AS rows,
       bool_and(abs(i.explained_variance_ratio - i.variance /
                    CASE i.kind WHEN 'global' THEN f.total_variance ELSE c.total_variance END) <= 1e-14) AS ratio,
       bool_and(abs(i.cumulative_explained_variance_ratio -
                    CASE i.kind WHEN 'global' THEN 0 ELSE c.global_ratio END -
                    (SELECT sum(j.variance) FROM perpca_component_info('m4') j
                      WHERE j.client IS NOT DISTINCT FROM i.client AND j.component <= i.component) /
                    CASE i.kind WHEN 'global' THEN f.total_variance ELSE c.total_variance END) <= 1e-14) AS cumulative
  FROM perpca_component_info('m4') i CROSS JOIN m4_info f LEFT JOIN m4_clients c ON c.client = i.client
 GROUP BY 1 ORDER BY 1;
-- The last local row of a client is its global_ratio + local_ratio.
SELECT bool_and(abs(i.cumulative_explained_variance_ratio - (c.global_ratio + c.local_ratio)) <= 1e-14) AS last_local_row
  FROM perpca_component_info('m4') i JOIN m4_clients c ON c.client = i.client
 WHERE i.component = c.n_local;

SET client_min_messages = warning;
DROP SCHEMA mr CASCADE;
RESET client_min_messages;
RESET search_path;
RESET DateStyle;
