--
-- Choosing the ranks (perpca_choose_ranks): a planted problem with 2 global
-- and 1 local component (test/fixtures/gen_evaluate.py) must be recognised
-- from held-out error and theta_est; the held-out error at the planted
-- ranks is compared with the numpy oracle's fit.
--
CREATE SCHEMA perpca_ranks;
SET search_path = perpca_ranks, public;
SET extra_float_digits = 0;
CREATE FUNCTION close(a float8, b float8, tol float8) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$ SELECT abs(a - b) <= tol * greatest(abs(b), 1e-300) $$;

CREATE TABLE obs (client text, obs int, heldout boolean, x float8[]);
\copy obs from 'test/data/ranks_obs.csv' csv header
CREATE TABLE expected (n_global int, n_local int, heldout_error float8);
\copy expected from 'test/data/ranks_expected.csv' csv header

-- A held-out query.  The NOTICE per pair is checked separately below; the
-- overparametrized pairs (3, 1), (3, 2) may stop at the round cap with a
-- WARNING (flat directions), which does not matter for the choice.
SET client_min_messages = error;
CREATE TABLE scan AS
SELECT * FROM perpca_choose_ranks('SELECT client, x FROM obs WHERE NOT heldout',
                                  'SELECT client, x FROM obs WHERE heldout',
                                  global_ranks => '{0,1,2,3}', local_ranks => '{0,1,2}');
RESET client_min_messages;
SELECT n_global, n_local, recommended FROM scan WHERE recommended;
SELECT count(*) AS pairs, count(*) FILTER (WHERE recommended) AS recommended,
       bool_and(train_error > 0 AND heldout_error > 0 AND seconds >= 0 AND rounds_run >= 1) AS figures,
       bool_and((n_local = 0) = (theta_est IS NULL)) AS theta_only_with_local
  FROM scan;
-- At the planted ranks the fit is numpy's: the same held-out error.
SELECT s.n_global, s.n_local, close(s.heldout_error, e.heldout_error, 1e-7) AS heldout_error
  FROM scan s JOIN expected e USING (n_global, n_local);
-- The option hops reaches every pair's fit: hops => 0 runs the starts
-- only, so fewer rounds where there are global components to hop.
SET client_min_messages = error;
CREATE TABLE scan_no_hops AS
SELECT * FROM perpca_choose_ranks('SELECT client, x FROM obs WHERE NOT heldout',
                                  'SELECT client, x FROM obs WHERE heldout',
                                  global_ranks => '{0,1,2,3}', local_ranks => '{0,1,2}', hops => 0);
RESET client_min_messages;
SELECT count(*) FILTER (WHERE n.rounds_run < s.rounds_run) > 0 AS fewer_rounds_without_hops,
       bool_and(n.rounds_run = s.rounds_run) FILTER (WHERE s.n_global = 0) AS same_without_global
  FROM scan_no_hops n JOIN scan s USING (n_global, n_local);
-- Why the neighbours lose: too few components leave signal in the error;
-- moving a global component to the clients (1, 2) keeps the error but the
-- clients' local subspaces then share a direction (theta_est near 0).
SELECT (SELECT heldout_error FROM scan WHERE (n_global, n_local) = (1, 1))
         > 1.05 * (SELECT heldout_error FROM scan WHERE (n_global, n_local) = (2, 1)) AS fewer_is_worse,
       (SELECT heldout_error FROM scan WHERE (n_global, n_local) = (1, 2))
         <= 1.05 * (SELECT heldout_error FROM scan WHERE (n_global, n_local) = (2, 1)) AS local_copy_fits_as_well,
       (SELECT theta_est FROM scan WHERE (n_global, n_local) = (1, 2)) < 0.05 AS but_is_aligned,
       (SELECT theta_est FROM scan WHERE (n_global, n_local) = (2, 1)) > 0.5 AS planted_is_not;
-- Every pair's note says why it was or was not recommended (numbers masked:
-- the overparametrized pairs stop at the round cap).
SELECT n_global, n_local, recommended, regexp_replace(note, '[0-9]+\.[0-9]+(e-[0-9]+)?', '#', 'g') AS note
  FROM scan ORDER BY n_global + n_local, n_global;
-- Training error falls with the ranks; objective is the fit's.
SELECT bool_and(a.train_error >= b.train_error - 1e-9) AS train_error_monotone
  FROM scan a JOIN scan b ON b.n_global = a.n_global AND b.n_local = a.n_local + 1;

-- The split by a hash of a row key: repeatable, about holdout of the rows held out.
SET client_min_messages = warning;
CREATE TABLE split1 AS SELECT * FROM perpca_choose_ranks('SELECT client, x, obs FROM obs', NULL,
                                       '{2}', '{1}', holdout => 0.3);
CREATE TABLE split2 AS SELECT * FROM perpca_choose_ranks('SELECT client, x, obs FROM obs', NULL,
                                       '{2}', '{1}', holdout => 0.3);
RESET client_min_messages;
SELECT close(a.heldout_error, b.heldout_error, 1e-12) AS repeatable, a.recommended
  FROM split1 a, split2 b;
SELECT round(avg((abs(hash_record_extended(ROW(obs), 0) % 10000) < 3000)::int), 1) AS held_out_share FROM obs;

-- The split hashes the key in its own type (its default hash operator class,
-- which only a superuser creates): no cast of the key is resolved, so a cast
-- to text planted by the role that owns the key's type is not run, here by
-- a superuser.  (A cast of the key to text in the split would run it as the caller.)
CREATE ROLE perpca_ranks_mallory;
CREATE SCHEMA perpca_ranks_mallory AUTHORIZATION perpca_ranks_mallory;
CREATE TABLE perpca_ranks.fired (who text);
SET ROLE perpca_ranks_mallory;
CREATE TYPE perpca_ranks_mallory.day AS ENUM ('mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun');
CREATE FUNCTION perpca_ranks_mallory.trap(d perpca_ranks_mallory.day) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO perpca_ranks.fired VALUES (current_user);
    RETURN pg_catalog.format('%s', d);
END $$;
CREATE CAST (perpca_ranks_mallory.day AS text) WITH FUNCTION perpca_ranks_mallory.trap(perpca_ranks_mallory.day);
RESET ROLE;
CREATE TABLE dobs AS
SELECT client, x, obs, ((enum_range(NULL::perpca_ranks_mallory.day))[1 + obs % 7]) AS day FROM obs;
SET client_min_messages = warning;
SELECT count(*) AS pairs FROM perpca_choose_ranks('SELECT client, x, (obs, day) FROM dobs', NULL, '{2}', '{1}');
SELECT count(*) AS pairs FROM perpca_choose_ranks('SELECT client, x, day FROM dobs', NULL, '{2}', '{1}');
RESET client_min_messages;
SELECT count(*) AS trap_calls FROM perpca_ranks.fired;
-- A key without a hash function (json) is split by its text, from its type's
-- output function, repeatably.
SET client_min_messages = warning;
SELECT close(a.heldout_error, b.heldout_error, 1e-12) AS repeatable
  FROM perpca_choose_ranks('SELECT client, x, json_build_array(obs) FROM obs', NULL, '{2}', '{1}') a,
       perpca_choose_ranks('SELECT client, x, json_build_array(obs) FROM obs', NULL, '{2}', '{1}') b;
RESET client_min_messages;
DROP TABLE dobs;
DROP SCHEMA perpca_ranks_mallory CASCADE;
DROP ROLE perpca_ranks_mallory;

-- A query may end with semicolons and a comment, as perpca_train takes it:
-- the readers wrap its one statement, not the text after it.
SET client_min_messages = warning;
SELECT count(*) AS pairs
  FROM perpca_choose_ranks('SELECT client, x FROM obs WHERE NOT heldout; -- the training rows',
                           'SELECT client, x FROM obs WHERE heldout ; ; /* held out */', '{2}', '{1}');
SELECT count(*) AS pairs FROM perpca_choose_ranks('SELECT client, x, obs FROM obs; -- split on obs', NULL, '{2}', '{1}');
SELECT count(*) AS pairs FROM perpca_choose_ranks('SELECT client, x, obs FROM obs -- split on obs', NULL, '{2}', '{1}');
SELECT count(*) AS components FROM perpca_fit('SELECT client, x FROM obs; -- every row', 2, 1);
RESET client_min_messages;

-- An answer at the large edge of the grid widens it: with local_ranks fixed
-- at one rank only global_ranks grows, until the answer leaves the edge.
SELECT n_global, n_local FROM perpca_choose_ranks('SELECT client, x FROM obs WHERE NOT heldout',
                                                  'SELECT client, x FROM obs WHERE heldout', '{1,2}', '{0}')
 WHERE recommended;

-- The share rule: the smallest pair whose held-out explained ratio reaches
-- the target (as BigQuery ML's PCA_EXPLAINED_VARIANCE_RATIO); (1, 2)
-- explains nearly as much as the planted (2, 1), a little less.
SET client_min_messages = error;
SELECT n_global, n_local, heldout_explained_ratio >= 0.95 AS reaches, note
  FROM perpca_choose_ranks('SELECT client, x FROM obs WHERE NOT heldout',
                           'SELECT client, x FROM obs WHERE heldout', '{0,1,2,3}', '{0,1,2}',
                           target_explained_ratio => 0.95)
 WHERE recommended;
RESET client_min_messages;
SELECT (SELECT heldout_explained_ratio FROM scan WHERE (n_global, n_local) = (2, 0)) < 0.95 AS two_is_short,
       (SELECT heldout_explained_ratio FROM scan WHERE (n_global, n_local) = (1, 2)) >= 0.95 AS aligned_reaches;
-- A target no pair of the grid reaches: nothing recommended, widen.
SELECT count(*) FILTER (WHERE recommended) AS recommended
  FROM perpca_choose_ranks('SELECT client, x FROM obs WHERE NOT heldout',
                           'SELECT client, x FROM obs WHERE heldout', '{1,2}', '{0}',
                           target_explained_ratio => 0.99);

-- A pair that uses every dimension (d = 10) is left out, and says so; a grid
-- with one of them still finds the planted pair (0.2.0's rule took the
-- smallest pair near the best error, which such pairs win).
SET client_min_messages = error;
SELECT n_global, n_local, heldout_error IS NULL AS no_figures, recommended,
       regexp_replace(note, '(ratio) [0-9.]+ against [0-9.]+', '\1 # against #') AS note
  FROM perpca_choose_ranks('SELECT client, x FROM obs WHERE NOT heldout',
                           'SELECT client, x FROM obs WHERE heldout', '{2,8,9}', '{0,1}')
 WHERE recommended OR heldout_error IS NULL OR n_global = 8;
RESET client_min_messages;
-- The answer at the grid's small edge: the grid is widened below it (n_local 0),
-- and the planted pair stays the answer.
SELECT n_global, n_local, recommended
  FROM perpca_choose_ranks('SELECT client, x FROM obs WHERE NOT heldout',
                           'SELECT client, x FROM obs WHERE heldout', '{2}', '{1,2}')
 WHERE recommended;

-- min_theta annotates, it does not exclude: each client's local
-- direction is a common direction slightly tilted (test/fixtures/gen_evaluate.py),
-- so (1, 1) has theta_est about 0.025 < min_theta and explains the held-out
-- rows clearly better than (2, 0).  0.3.0 left (1, 1) out and recommended (2, 0).
CREATE TABLE aobs (client text, obs int, heldout boolean, x float8[]);
\copy aobs from 'test/data/ranks_aligned_obs.csv' csv header
CREATE TABLE aexpected (n_global int, n_local int, heldout_explained_ratio float8, theta_est float8);
\copy aexpected from 'test/data/ranks_aligned_expected.csv' csv header
SET client_min_messages = error;
CREATE TABLE ascan AS
SELECT * FROM perpca_choose_ranks('SELECT client, x FROM aobs WHERE NOT heldout',
                                  'SELECT client, x FROM aobs WHERE heldout', '{1,2}', '{0,1}');
RESET client_min_messages;
SELECT n_global, n_local, recommended, note FROM ascan ORDER BY n_global + n_local, n_global;
-- The figures are the numpy oracle's fits of (1, 1) and (2, 0).
SELECT s.n_global, s.n_local, close(s.heldout_explained_ratio, e.heldout_explained_ratio, 1e-7) AS ratio,
       e.theta_est IS NULL OR close(s.theta_est, e.theta_est, 1e-6) AS theta
  FROM ascan s JOIN aexpected e USING (n_global, n_local) ORDER BY 1;
-- min_theta only annotates: 0 or 0.5 recommend the same pair; the note follows it.
SET client_min_messages = error;
SELECT min_theta, n_global, n_local, note LIKE '%theta_est % < min_theta%' AS annotated
  FROM unnest('{0,0.5}'::float8[]) AS m(min_theta),
       perpca_choose_ranks('SELECT client, x FROM aobs WHERE NOT heldout',
                           'SELECT client, x FROM aobs WHERE heldout', '{1,2}', '{0,1}', min_theta => m.min_theta)
 WHERE recommended;
-- The share rule, too.
SELECT n_global, n_local, note
  FROM perpca_choose_ranks('SELECT client, x FROM aobs WHERE NOT heldout',
                           'SELECT client, x FROM aobs WHERE heldout', '{1,2}', '{0,1}',
                           target_explained_ratio => 0.98)
 ORDER BY n_global + n_local, n_global;
RESET client_min_messages;

-- Rows without low-rank structure (independent features of one variance):
-- every pair explains about its share k/d of the held-out variance, so the
-- error rule recommends nothing and says so.
SELECT setseed(0.5);
CREATE TABLE iso AS
SELECT i % 4 AS client, i, ARRAY(SELECT random() - 0.5 FROM generate_series(1, 8) j WHERE i > 0) AS x
  FROM generate_series(1, 1600) i;
SET client_min_messages = error;
CREATE TABLE iso_scan AS
SELECT * FROM perpca_choose_ranks('SELECT client, x, i FROM iso', NULL, '{0,1,2,3}', '{0,1,2}');
RESET client_min_messages;
SELECT count(*) FILTER (WHERE recommended) AS recommended,
       bool_and(heldout_explained_ratio < 1.5 * (n_global + n_local) / 8.0) AS about_k_over_d,
       bool_and(note LIKE 'not recommended: no low-rank structure%') AS noted
  FROM iso_scan;
DO $$
BEGIN
    PERFORM * FROM perpca_choose_ranks('SELECT client, x, i FROM iso', NULL, '{1,2}', '{0}');
END
$$;

-- No table is written: a scan runs in a read-only transaction (as on a hot standby).
BEGIN READ ONLY;
SET LOCAL client_min_messages = warning;
SELECT n_global, n_local FROM perpca_choose_ranks('SELECT client, x FROM obs WHERE NOT heldout',
                                                  'SELECT client, x FROM obs WHERE heldout', '{2}', '{1}')
 WHERE recommended;
COMMIT;

-- Errors.
\set VERBOSITY terse
SELECT * FROM perpca_choose_ranks('SELECT client, x FROM obs');
SELECT * FROM perpca_choose_ranks('SELECT client, x, obs FROM obs', holdout => 1.5);
SELECT * FROM perpca_choose_ranks('SELECT client, x FROM obs WHERE NOT heldout', 'SELECT client, x FROM obs WHERE heldout',
                                  '{0}', '{0}');
SELECT * FROM perpca_choose_ranks('SELECT client, x FROM obs WHERE false', 'SELECT client, x FROM obs');
SELECT * FROM perpca_choose_ranks(NULL);
SELECT * FROM perpca_choose_ranks('SELECT client, x FROM obs WHERE NOT heldout', 'SELECT client, x FROM obs WHERE heldout',
                                  '{1}', '{0}', target_explained_ratio => 1.5);
SELECT * FROM perpca_choose_ranks('SELECT client, x FROM obs WHERE NOT heldout', 'SELECT client, x FROM obs WHERE heldout',
                                  '{1}', '{0,NULL}');
SELECT * FROM perpca_choose_ranks('SELECT client, x FROM obs WHERE NOT heldout', 'SELECT client, 1 FROM obs WHERE heldout');
-- the same held-out client is named whatever order the groups come in
SET enable_hashagg = off;
SELECT * FROM perpca_choose_ranks('SELECT client, x FROM obs WHERE NOT heldout', 'SELECT client, 1 FROM obs WHERE heldout');
SET enable_hashagg = on;
SET enable_sort = off;
SELECT * FROM perpca_choose_ranks('SELECT client, x FROM obs WHERE NOT heldout', 'SELECT client, 1 FROM obs WHERE heldout');
RESET enable_hashagg;
RESET enable_sort;
\set VERBOSITY default
-- Feature columns without a held-out query: the split needs the features as
-- one array and a key (the feature columns are not read as x and key).
SELECT * FROM perpca_choose_ranks('SELECT client, x[1] AS a, x[2] AS b, x[3] AS c, obs FROM obs');
-- solver passes to perpca_train when it has that option, else a clear error.
CREATE FUNCTION solver_passes() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    supported boolean := EXISTS (SELECT 1 FROM pg_proc WHERE proname = 'perpca_train' AND 'solver' = ANY (proargnames));
BEGIN
    PERFORM * FROM perpca_choose_ranks('SELECT client, x FROM obs WHERE NOT heldout',
                                       'SELECT client, x FROM obs WHERE heldout', '{1}', '{1}', solver => 'paper');
    RETURN CASE WHEN supported THEN 'as perpca_train supports it' ELSE 'accepted without support' END;
EXCEPTION WHEN feature_not_supported THEN
    RETURN CASE WHEN supported THEN 'refused with support' ELSE 'as perpca_train supports it' END;
END
$$;
SET client_min_messages = error;
SELECT solver_passes();
RESET client_min_messages;

SET client_min_messages = warning;
DROP SCHEMA perpca_ranks CASCADE;
