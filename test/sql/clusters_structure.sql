--
-- perpca_clusters without k: the planted number of clusters where clients
-- were drawn in groups, one cluster ("no cluster structure") where they were
-- not: five sets of each, from test/fixtures/gen_clusters.py (the numpy
-- oracle's fit of each set gives the expected answer, far from the rule's
-- boundary).
--
CREATE SCHEMA perpca_clusters_structure;
SET search_path = perpca_clusters_structure, public;
CREATE TABLE obs (problem text, client text, obs int, x float8[]);
\copy obs from 'test/data/clusters_structure_obs.csv' csv header
CREATE TABLE expected (problem text, n_local int, planted int, per_group int, expected_k int, mu_k float8, ratio float8);
\copy expected from 'test/data/clusters_structure_expected.csv' csv header

SET client_min_messages = warning;
SELECT count(*) AS trained
  FROM expected e,
       LATERAL perpca_train('cs_' || e.problem,
                            format('SELECT client, perpca_stats(x) FROM perpca_clusters_structure.obs WHERE problem = %L GROUP BY client',
                                   e.problem), 2, e.n_local) t;
RESET client_min_messages;

-- Each set's answer without k: the number of clusters, and for planted
-- groups the planted partition (clients c01.. in group order).  One NOTICE
-- a set says what decided it.
\set VERBOSITY terse
CREATE TABLE answer AS
SELECT e.problem, e.planted, e.expected_k, c.client, c.cluster,
       (substr(c.client, 2)::int - 1) / e.per_group AS planted_group
  FROM expected e, LATERAL perpca_clusters('cs_' || e.problem) c;
\set VERBOSITY default
SELECT problem, planted, count(DISTINCT cluster) AS clusters,
       count(DISTINCT cluster) = expected_k AS expected,
       count(DISTINCT (cluster, planted_group)) = planted AS planted_partition
  FROM answer GROUP BY problem, planted, expected_k ORDER BY planted, problem;

-- The figures, in full for one set of each kind.
SELECT count(*) AS clients FROM perpca_clusters('cs_random_20');
SELECT count(*) AS clients FROM perpca_clusters('cs_planted_3');
-- k given: as many clusters as asked, structure or not.
SELECT count(DISTINCT cluster) AS clusters FROM perpca_clusters('cs_random_20', 3);

SET client_min_messages = warning;
DROP SCHEMA perpca_clusters_structure CASCADE;
