-- examples/video.sql -- background and foreground of a video with Personalized PCA
--
-- The paper's video application: each frame is a client and the rows of a
-- frame are its observations (vectors of the frame's width).  What all frames
-- share, the global part, is the background; what is unique to a frame, its
-- local part, is what moves.  The clip (examples/data/video.csv, built by
-- examples/make_data.py) is scikit-image's "camera" photograph shrunk to
-- 48 x 64 pixels, with a bright disc crossing it from left to right (rows
-- 12-20) and a dark square from right to left (rows 35-40), 24 frames.
--
-- Run from the repository root, in a database with the perpca extension:
--     psql -X -v ON_ERROR_STOP=1 -f examples/video.sql
-- It leaves everything in schema "video"; examples/plot.py draws the pictures.
\set ON_ERROR_STOP 1
-- (psql -v quiet=1: errors only, as the CI test runs it)
\if :{?quiet}
SET client_min_messages = error;
\else
SET client_min_messages = warning;
\endif
DROP SCHEMA IF EXISTS video CASCADE;
CREATE SCHEMA video;
SET search_path = video, public;

CREATE TABLE video (frame int, row int, pixels float8[], PRIMARY KEY (frame, row));
\copy video from 'examples/data/video.csv' csv header

-- 20 global components for the background rows, 3 local ones per frame; no
-- centering, so that the background keeps its brightness.  The problem is
-- ill-conditioned (the background's small singular values are close), so the
-- gradient converges slowly while the objective is settled early: 200 rounds
-- from the disPCA start reach the optimum to about 1e-6 (the WARNING about the
-- round limit says so), where the default would take ~2000 rounds for nothing
-- visible.
SELECT model_name, d, n_clients, round(theta_est::numeric, 3) AS theta_est
  FROM perpca_train('video.model', $$SELECT frame, perpca_stats(pixels) FROM video.video GROUP BY frame$$,
                    n_global => 20, n_local => 3, center => 'none', init => 'dispca', rounds => 200);

-- Every row split by the model: background (global part), foreground
-- (local part) and what neither explains; the three add up to the row.
CREATE TABLE parts AS
SELECT frame, row, pixels,
       perpca_model_global_part('video.model', frame::text, pixels) AS background,
       perpca_model_local_part('video.model', frame::text, pixels) AS foreground,
       perpca_model_residual('video.model', frame::text, pixels) AS residual
  FROM video;

-- Where the foreground is: the share of each frame's foreground energy on
-- the rows the moving objects cross (15 of the 48 rows).
CREATE VIEW foreground_rows AS
SELECT frame,
       sum(e) FILTER (WHERE row BETWEEN 12 AND 20 OR row BETWEEN 35 AND 40) / sum(e) AS on_object_rows
  FROM (SELECT frame, row, (SELECT sum(v * v) FROM unnest(foreground) AS v) AS e FROM parts) s
 GROUP BY frame;
SELECT round(min(on_object_rows)::numeric, 3) AS min_share, round(avg(on_object_rows)::numeric, 3) AS mean_share,
       round(15 / 48.0, 3) AS share_of_rows
  FROM foreground_rows;

-- Explained variance per frame: the background carries most of every frame.
SELECT client::int AS frame, round(global_ratio::numeric, 4) AS background, round(local_ratio::numeric, 4) AS foreground
  FROM video.model_clients ORDER BY 1 LIMIT 5;
RESET client_min_messages;
