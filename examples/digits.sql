-- examples/digits.sql -- Personalized PCA on handwritten digits, one client per class
--
-- Data: the UCI handwritten digits that python3-sklearn ships (1797 images of
-- 8 x 8 pixels), written to examples/data/digits.csv by examples/make_data.py
-- with a fixed 80/20 split inside each class.  Each digit class is a client:
-- the global components are what all digits share, the local components of a
-- class what sets that digit apart.
--
-- Run from the repository root, in a database with the perpca extension:
--     psql -X -v ON_ERROR_STOP=1 -f examples/digits.sql
-- It leaves everything in schema "digits"; examples/plot.py draws the pictures.
\set ON_ERROR_STOP 1
-- (psql -v quiet=1: errors only, as the CI test runs it)
\if :{?quiet}
SET client_min_messages = error;
\else
SET client_min_messages = warning;
\endif
DROP SCHEMA IF EXISTS digits CASCADE;
CREATE SCHEMA digits;
SET search_path = digits, public;

CREATE TABLE digits (id int PRIMARY KEY, label int NOT NULL, part text NOT NULL,
                     few boolean NOT NULL, pixels float8[] NOT NULL);
\copy digits from 'examples/data/digits.csv' csv header

-- 1. One model: 4 components shared by all digits, 4 of each digit's own.
SELECT model_name, d, n_clients, converged, round(theta_est::numeric, 3) AS theta_est
  FROM perpca_train('digits.model',
                    $$SELECT label, perpca_stats(pixels) FROM digits.digits WHERE part = 'train' GROUP BY label$$,
                    n_global => 4, n_local => 4);

-- What the global and local parts explain of each class's held-out images.
SELECT client AS digit, n, round(error::numeric, 2) AS heldout_error,
       round(global_ratio::numeric, 3) AS global, round(local_ratio::numeric, 3) AS local,
       round(explained_ratio::numeric, 3) AS both
  FROM perpca_evaluate('digits.model', $$SELECT label, pixels FROM digits.digits WHERE part = 'test'$$);

-- Which digits are alike: distance between their local subspaces (0 = same).
SELECT client_a AS digit, string_agg(to_char(distance, 'FM0.00'), ' ' ORDER BY client_b::int) AS distance_to_0_9
  FROM perpca_similarity('digits.model') GROUP BY client_a ORDER BY client_a::int;

-- Groups of digits: spectral clustering of those distances.  Without k the
-- spectrum shows no cluster structure (a NOTICE says so, one cluster); k = 3
-- is the split the largest eigengap would pick.
SELECT cluster, string_agg(client, ' ' ORDER BY client::int) AS digits
  FROM perpca_clusters('digits.model', 3) GROUP BY cluster ORDER BY cluster;

-- 2. Held-out error against individual PCA (each class alone) and pooled PCA
-- (one basis for all), as in the paper's FEMNIST table, with all training
-- images and with only 15 per class.  Same number of components per client
-- for every method: n_global + n_local.
CREATE TABLE comparison (regime text, n_global int, n_local int, method text,
                         train_error float8, heldout_error float8);
DO $$
DECLARE
    regime text;
    r int;
    method text;
    src text;
BEGIN
    FOREACH regime IN ARRAY ARRAY['all', 'few'] LOOP
        src := format($q$SELECT label, perpca_stats(pixels) FROM digits.digits WHERE part = 'train' %s GROUP BY label$q$,
                      CASE regime WHEN 'few' THEN 'AND few' ELSE '' END);
        FOREACH r IN ARRAY ARRAY[1, 2, 4, 6] LOOP
            FOREACH method IN ARRAY ARRAY['perpca', 'indiv', 'cpca'] LOOP
                PERFORM perpca_train('digits.cmp', src, r, r, method => method, replace => true);
                INSERT INTO digits.comparison
                SELECT regime, r, r, method, t.error, h.error
                  FROM perpca_evaluate_summary('digits.cmp', src) t,
                       perpca_evaluate_summary('digits.cmp',
                           $q$SELECT label, pixels FROM digits.digits WHERE part = 'test'$q$) h;
            END LOOP;
        END LOOP;
    END LOOP;
    PERFORM perpca_drop('digits.cmp');
END
$$;
SELECT regime, n_global + n_local AS components,
       round(min(heldout_error) FILTER (WHERE method = 'perpca')::numeric, 2) AS perpca,
       round(min(heldout_error) FILTER (WHERE method = 'indiv')::numeric, 2) AS individual,
       round(min(heldout_error) FILTER (WHERE method = 'cpca')::numeric, 2) AS pooled,
       round(min(train_error) FILTER (WHERE method = 'perpca')::numeric, 2) AS perpca_train,
       round(min(train_error) FILTER (WHERE method = 'indiv')::numeric, 2) AS individual_train
  FROM comparison GROUP BY 1, 2 ORDER BY 1, 2;

-- 3. Choosing the ranks: a grid fitted on the training images and scored on
-- the held-out ones; `recommended` marks the rule's choice.
CREATE TABLE ranks AS
SELECT * FROM perpca_choose_ranks(
    $$SELECT label, pixels FROM digits.digits WHERE part = 'train'$$,
    $$SELECT label, pixels FROM digits.digits WHERE part = 'test'$$,
    global_ranks => '{0,2,4,6,8}', local_ranks => '{0,2,4,6}');
SELECT n_global, n_local, round(train_error::numeric, 2) AS train_error,
       round(heldout_error::numeric, 2) AS heldout_error, round(theta_est::numeric, 3) AS theta_est,
       rounds_run, recommended
  FROM ranks ORDER BY n_global, n_local;
RESET client_min_messages;
