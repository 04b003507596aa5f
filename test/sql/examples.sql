--
-- The examples' SQL (examples/digits.sql, examples/video.sql) runs here
-- without the plotting part, and its key numbers are checked against numpy
-- (test/fixtures/gen_examples.py on the committed example data):
-- individual and pooled PCA are closed-form, so they must agree to rounding;
-- PerPCA is not convex and numpy's best of several starts may end at another
-- stationary point close by (measured: 7 of the 8 cases agree to 1e-8, the
-- eighth, 15 images per class at 6 + 6, differs by 2%), so its errors are
-- compared within 3%.
--
SET extra_float_digits = 0;
\set quiet 1
\set ECHO none
\o /dev/null
\i examples/digits.sql
\i examples/video.sql
\o
\set ECHO all
CREATE SCHEMA perpca_examples;
SET search_path = perpca_examples, public;
CREATE FUNCTION close(a float8, b float8, tol float8) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$ SELECT abs(a - b) <= tol * greatest(abs(b), 1e-300) $$;
CREATE TABLE digits_expected (regime text, r int, method text, train_error float8, heldout_error float8);
\copy digits_expected from 'test/data/examples_digits.csv' csv header
CREATE TABLE video_expected (frame int, global_ratio float8, local_ratio float8, theta_est float8, objective float8);
\copy video_expected from 'test/data/examples_video.csv' csv header

-- Digits: held-out and training error of PerPCA, individual and pooled PCA.
SELECT c.method, count(*) AS cases,
       bool_and(close(c.heldout_error, e.heldout_error, CASE c.method WHEN 'perpca' THEN 3e-2 ELSE 1e-9 END)) AS heldout,
       bool_and(close(c.train_error, e.train_error, CASE c.method WHEN 'perpca' THEN 3e-2 ELSE 1e-9 END)) AS train
  FROM digits.comparison c JOIN digits_expected e ON e.regime = c.regime AND e.r = c.n_global AND e.method = c.method
 GROUP BY 1 ORDER BY 1;
-- What the data say: with all the images individual PCA has the lower
-- held-out error at every rank; with 15 per class PerPCA is ahead of it
-- only at the largest rank, and ahead of pooled PCA everywhere.
SELECT regime, n_global + n_local AS components,
       min(heldout_error) FILTER (WHERE method = 'perpca') < min(heldout_error) FILTER (WHERE method = 'indiv') AS perpca_beats_individual,
       min(heldout_error) FILTER (WHERE method = 'perpca') < min(heldout_error) FILTER (WHERE method = 'cpca') AS perpca_beats_pooled
  FROM digits.comparison GROUP BY 1, 2 ORDER BY 1, 2;
-- The stored model and the rank scan ran.
SELECT n_clients, d, n_global, n_local FROM digits.model_info;
SELECT count(*) AS pairs, count(*) FILTER (WHERE recommended) AS recommended FROM digits.ranks;

-- Video: the share of every frame the model explains, and the objective,
-- against numpy's (an ill-conditioned problem: both stop short of a small
-- gradient, the example after 200 rounds at about 1e-6 of the optimum).
SELECT count(*) AS frames,
       bool_and(close(c.global_ratio + c.local_ratio, e.global_ratio + e.local_ratio, 1e-4)) AS explained,
       bool_and(c.global_ratio > 0.95) AS mostly_background
  FROM video.model_clients c JOIN video_expected e ON e.frame = c.client::int;
SELECT close(i.objective, (SELECT max(objective) FROM video_expected), 1e-4) AS objective FROM video.model_info i;
-- The parts add up to the frame, and the foreground sits on the rows the
-- moving objects cross (15 of 48 rows hold more than 60% of it).
SELECT count(*) AS rows,
       bool_and((SELECT max(abs(b + f + e - p)) FROM unnest(pixels, background, foreground, residual) AS u(p, b, f, e)) < 1e-9) AS parts_add_up
  FROM video.parts;
SELECT min(on_object_rows) > 0.6 AS foreground_on_objects FROM video.foreground_rows;

SET client_min_messages = warning;
DROP SCHEMA perpca_examples, digits, video CASCADE;
