-- perpca_fit: every bad input gets a clear error; long fits are cancellable
CREATE TEMP TABLE e_stats (client int, n int, stats perpca_stats);
\copy e_stats FROM 'test/data/fit_e_stats.csv' CSV HEADER
\set VERBOSITY default

-- ranks
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM e_stats', 5, 6);
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM e_stats', 2, -1);
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM e_stats', -1, 2);
SELECT count(*) FROM perpca_fit('SELECT client, stats, 9 FROM e_stats', 2, 3);
SELECT count(*) FROM perpca_fit('SELECT client, stats, -2 FROM e_stats', 2, 3);
-- clients
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM e_stats WHERE false', 2, 3);
SELECT count(*) FROM perpca_fit($$SELECT client, stats FROM e_stats UNION ALL SELECT 99, 'v1 n=1 d=2 mean={1,2} mean_lo={0,0} m2={0,0,0}'::perpca_stats$$, 1, 1);
-- a client of another dimension is a dimension error (2202E), named as the
-- odd one, before any rank check, also when its key comes first (here its
-- d = 2 < n_global + n_local)
SET client_min_messages = warning;
DO $$
DECLARE
    q text;
BEGIN
    FOREACH q IN ARRAY ARRAY[
        $q$SELECT 0, 'v1 n=1 d=2 mean={1,2} mean_lo={0,0} m2={0,0,0}'::perpca_stats UNION ALL SELECT client, stats FROM e_stats$q$,
        $q$SELECT client, stats FROM e_stats UNION ALL SELECT 0, 'v1 n=1 d=2 mean={1,2} mean_lo={0,0} m2={0,0,0}'::perpca_stats$q$]
    LOOP
        BEGIN
            PERFORM count(*) FROM perpca_fit(q, 2, 3);
        EXCEPTION WHEN OTHERS THEN
            RAISE WARNING '%: %', SQLSTATE, SQLERRM;
        END;
    END LOOP;
END
$$;
RESET client_min_messages;
SELECT count(*) FROM perpca_fit($$SELECT 1, NULL::perpca_stats$$, 1, 1);
SELECT count(*) FROM perpca_fit($$SELECT NULL::int, stats FROM e_stats$$, 1, 1);
SELECT count(*) FROM perpca_fit($$SELECT 1, 'v1 n=0 d=2 mean={0,0} mean_lo={0,0} m2={0,0,0}'::perpca_stats$$, 1, 1);
-- query shape
SELECT count(*) FROM perpca_fit('SELECT client FROM e_stats', 2, 3);
SELECT count(*) FROM perpca_fit('SELECT client, n FROM e_stats', 2, 3);
-- the same client is named whatever order the groups come in
SET enable_hashagg = off;
SELECT count(*) FROM perpca_fit('SELECT client, n FROM e_stats', 2, 3);
RESET enable_hashagg;
SELECT count(*) FROM perpca_fit('SELECT client, stats, 1.5 FROM e_stats', 2, 3);
SELECT count(*) FROM perpca_fit('SELEC nothing', 2, 3);
SELECT count(*) FROM perpca_fit('CREATE TEMP TABLE t_no_rows (x int)', 2, 3);
SELECT count(*) FROM perpca_fit(NULL, 2, 3);
-- option values
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM e_stats', 2, 3, update => 'sgd');
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM e_stats', 2, 3, retraction => 'cayley');
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM e_stats', 2, 3, init => 'given');
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM e_stats', 2, 3, center => 'pooled');
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM e_stats', 2, 3, weights => 'rows');
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM e_stats', 2, 3, method => 'pca');
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM e_stats', 2, 3, rounds => -1);
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM e_stats', 2, 3, tolerance => -1);
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM e_stats', 2, 3, step => 0);
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM e_stats', 2, 3, step => 'NaN');
-- 0.2.0: a NULL option means its default (wrappers pass theirs through)
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM e_stats', 2, 3, method => NULL);
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM e_stats', 2, 3, seed => NULL);

-- a long fit is cancelled by statement_timeout (and the session goes on)
SET statement_timeout = '300ms';
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM e_stats', 2, 3, rounds => 10000000, tolerance => 0, solver => 'paper');
RESET statement_timeout;
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM e_stats', 2, 3, rounds => 5);

-- a client's local rank (the third column) must be an integer
SELECT count(*) FROM perpca_fit('SELECT client, stats, 1.5 FROM e_stats', 2, 3);
SELECT count(*) FROM perpca_fit('SELECT client, stats, 1::smallint FROM e_stats', 2, 3);
