-- man_vectors.sql -- Personalized PCA of document vectors stored as pgvector's vector
--
-- The vectors: LSA of this machine's manual pages, by section (man1 commands,
-- man2 system calls, man3 C library, man3pm Perl modules, man5 file formats,
-- man7 overviews, man8 administration), 768 dimensions, unit length, made by
-- examples/man_vectors.py (no network).  Run with psql, the directory of its
-- output in the variable dir:
--
--   /usr/bin/python3 examples/man_vectors.py /tmp/man
--   psql -v dir=/tmp/man -f examples/man_vectors.sql
--
-- Needs perpca and pgvector installed; creates perpca_vector and the tables
-- man_pages, man_terms, models man_pp (Personalized PCA: 32 global components,
-- 8 of each section's own), man_cpca and man_cpca40 (pooled PCA, 32 and 40
-- components).  docs/pgvector.md shows the output of a run.
\set ON_ERROR_STOP 1
\pset footer off
CREATE EXTENSION IF NOT EXISTS perpca_vector CASCADE;

-- The models of an earlier run first: each one's view <model>_source reads man_pages.
SELECT perpca_drop(m) FROM (VALUES ('man_pp'), ('man_cpca'), ('man_cpca40')) AS t(m)
WHERE to_regclass(m || '_info') IS NOT NULL;
DROP TABLE IF EXISTS man_pages, man_terms;
CREATE TABLE man_pages (section text, page text, v vector(768), id serial PRIMARY KEY);
CREATE TABLE man_terms (term text PRIMARY KEY, v vector(768));
-- (\copy takes its line as it is: the commands are put together in variables)
\set docs_csv :dir '/docs.csv'
\set terms_csv :dir '/terms.csv'
\set load_docs '\\copy man_pages (section, page, v) FROM ' :'docs_csv' ' csv'
\set load_terms '\\copy man_terms FROM ' :'terms_csv' ' csv'
:load_docs
:load_terms
ANALYZE man_pages;
SELECT section, count(*) AS pages FROM man_pages GROUP BY section ORDER BY section;

-- Statistics straight from the vector column (perpca_stats(vector)), then the
-- fits.  center => 'global': every section's scores are measured from the same
-- point, so that scores of different sections can be compared.
\timing on
SELECT count(*) FROM perpca_train('man_pp',
    'SELECT section, perpca_stats(v) FROM man_pages GROUP BY section',
    n_global => 32, n_local => 8, center => 'global', tolerance => 1e-8);
SELECT count(*) FROM perpca_train('man_cpca',
    'SELECT section, perpca_stats(v) FROM man_pages GROUP BY section',
    n_global => 32, n_local => 0, center => 'global', method => 'cpca');
SELECT count(*) FROM perpca_train('man_cpca40',
    'SELECT section, perpca_stats(v) FROM man_pages GROUP BY section',
    n_global => 40, n_local => 0, center => 'global', method => 'cpca');
\timing off

-- What each section shares and what is its own: the share of its variance (about
-- the pooled centre) that the 32 global components capture, the share its own
-- 8 components add, and what pooled PCA's 32 components capture.
SELECT p.client AS section, p.n AS pages,
       round(p.global_ratio::numeric, 3) AS shared_32,
       round(p.local_ratio::numeric, 3) AS own_8,
       round(c.global_ratio::numeric, 3) AS pooled_pca_32
FROM man_pp_clients p JOIN man_cpca_clients c USING (client)
ORDER BY p.client;

-- The components in words: the terms whose LSA directions align best with each
-- component (inner products with <#>; a minus marks the negative side).
SELECT coalesce(client, 'shared') AS "component of", component,
       (SELECT string_agg(CASE WHEN ip < 0 THEN '-' ELSE '' END || term, ' ' ORDER BY abs(ip) DESC)
          FROM (SELECT t.term, -(t.v <#> c.pc::vector) AS ip FROM man_terms t
                ORDER BY abs(t.v <#> c.pc::vector) DESC LIMIT 8) s) AS terms
FROM man_pp_components c
WHERE (kind = 'global' AND component <= 4) OR (kind = 'local' AND component = 1)
ORDER BY kind, client, component;

-- Scores come back as vector: the 32 global scores of each page (the first 32 of
-- perpca_model_scores), the 32 global + 8 own, and pooled PCA's, each in a vector
-- column; HNSW indexes on the 32-dimensional ones.
ALTER TABLE man_pages ADD COLUMN s_pp vector(32), ADD COLUMN s_pp40 vector(40),
                      ADD COLUMN s_cpca vector(32), ADD COLUMN s_cpca40 vector(40);
UPDATE man_pages SET s_pp40 = perpca_model_scores('man_pp', section, v),
                     s_cpca = perpca_model_scores('man_cpca', section, v),
                     s_cpca40 = perpca_model_scores('man_cpca40', section, v);
UPDATE man_pages SET s_pp = subvector(s_pp40, 1, 32);
CREATE INDEX man_pages_s_pp ON man_pages USING hnsw (s_pp vector_l2_ops);
CREATE INDEX man_pages_s_cpca ON man_pages USING hnsw (s_cpca vector_l2_ops);
ANALYZE man_pages;

-- Neighbours of one page through the index on its 32 global scores, next to
-- those of its full 768-dimensional vector.
SET enable_seqscan = off;
SET hnsw.ef_search = 100;
EXPLAIN (COSTS OFF)
SELECT e.page FROM man_pages e ORDER BY e.s_pp <-> (SELECT s_pp FROM man_pages WHERE page = 'fork.2') LIMIT 10;
SELECT a.rank, a.page AS "by 32 global scores (HNSW)", x.page AS "by the 768-d vector (exact)"
FROM (SELECT row_number() OVER () AS rank, page FROM
        (SELECT e.page FROM man_pages e
         ORDER BY e.s_pp <-> (SELECT s_pp FROM man_pages WHERE page = 'fork.2') LIMIT 10) s) a
JOIN (SELECT row_number() OVER () AS rank, page FROM
        (SELECT e.page FROM man_pages e
         ORDER BY e.v <-> (SELECT v FROM man_pages WHERE page = 'fork.2') LIMIT 10) s) x USING (rank)
ORDER BY rank;

-- Recall@10 over every 10th page (the page itself left out): how many of the
-- 10 nearest by the full vectors are among the 10 nearest by the k-dimensional
-- scores, found through the HNSW indexes.
SET enable_seqscan = off;
EXPLAIN (COSTS OFF)
SELECT (SELECT count(*) FROM
          (SELECT e.id FROM man_pages e WHERE e.id <> q.id ORDER BY e.s_pp <-> q.s_pp LIMIT 10) a
          JOIN (SELECT e.id FROM man_pages e WHERE e.id <> q.id ORDER BY e.v <-> q.v LIMIT 10) x USING (id))
FROM man_pages q WHERE q.id % 10 = 0;
SELECT 'whole corpus' AS search, 'Personalized PCA, 32 global scores (HNSW)' AS projection,
       round(avg((SELECT count(*) FROM
          (SELECT e.id FROM man_pages e WHERE e.id <> q.id ORDER BY e.s_pp <-> q.s_pp LIMIT 10) a
          JOIN (SELECT e.id FROM man_pages e WHERE e.id <> q.id ORDER BY e.v <-> q.v LIMIT 10) x USING (id))) / 10, 3)
       AS recall_at_10
FROM man_pages q WHERE q.id % 10 = 0
UNION ALL
SELECT 'whole corpus', 'pooled PCA (cpca), 32 scores (HNSW)',
       round(avg((SELECT count(*) FROM
          (SELECT e.id FROM man_pages e WHERE e.id <> q.id ORDER BY e.s_cpca <-> q.s_cpca LIMIT 10) a
          JOIN (SELECT e.id FROM man_pages e WHERE e.id <> q.id ORDER BY e.v <-> q.v LIMIT 10) x USING (id))) / 10, 3)
FROM man_pages q WHERE q.id % 10 = 0;
RESET enable_seqscan;
-- Within the page's own section (exact search over the scores): 40 numbers a
-- page either way, 32 shared + 8 of the section's own, or 40 pooled.
SELECT 'own section' AS search, p AS projection,
       round(avg((SELECT count(*) FROM
          (SELECT e.id FROM man_pages e WHERE e.id <> q.id AND e.section = q.section
           ORDER BY CASE p WHEN 'Personalized PCA, 32 global scores' THEN e.s_pp <-> q.s_pp
                           WHEN 'Personalized PCA, 32 global + 8 own scores' THEN e.s_pp40 <-> q.s_pp40
                           ELSE e.s_cpca40 <-> q.s_cpca40 END LIMIT 10) a
          JOIN (SELECT e.id FROM man_pages e WHERE e.id <> q.id AND e.section = q.section
                ORDER BY e.v <-> q.v LIMIT 10) x USING (id))) / 10, 3) AS recall_at_10
FROM (VALUES ('Personalized PCA, 32 global scores'), ('Personalized PCA, 32 global + 8 own scores'),
             ('pooled PCA (cpca), 40 scores')) AS v(p)
CROSS JOIN man_pages q WHERE q.id % 10 = 0
GROUP BY p ORDER BY p;
