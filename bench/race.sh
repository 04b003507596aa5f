#!/bin/bash
# race.sh -- the reliability attack's race, re-run: CLIENTS sessions for
# SECONDS seconds of train (replace), drop, refresh, personalize and reads
# (component_info, evaluate, row scores, similarity) on two models, every
# call's SQLSTATE counted.  Connects with the usual PG* variables; makes its
# tables in the current database.
#
#   PGHOST=... PGPORT=... bash bench/race.sh [SECONDS] [CLIENTS] [VERSION]
#
# Floor: 0 deadlocks (40P01), 0 internal errors
# (class XX, e.g. XX000, XX001 "model is incomplete"), 0 spurious 42501 or
# 42P01; a reader of a model that a drop removed gets 42704.  VERSION (default:
# the default version) installs that version of perpca first, e.g. 0.2.0 to
# compare.
set -euo pipefail
SECONDS_RUN=${1:-60}
CLIENTS=${2:-8}
VERSION=${3:-}
DB_SQL=$(mktemp)
trap 'rm -f "$DB_SQL"' EXIT
psql -X -q -v ON_ERROR_STOP=1 <<SQL
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS perpca CASCADE;
CREATE EXTENSION perpca ${VERSION:+VERSION '$VERSION'};
DROP TABLE IF EXISTS race_obs, race_result;
CREATE TABLE race_obs AS
SELECT 'c' || (i % 5) AS client, ARRAY[sin(i), cos(3 * i), sin(5 * i), cos(7 * i)]::float8[] AS x
  FROM generate_series(1, 500) AS i;
CREATE TABLE race_result (action text, sqlstate text, message text);
CREATE OR REPLACE FUNCTION race_step(k int) RETURNS void LANGUAGE plpgsql AS \$\$
DECLARE
    a text := (ARRAY['train', 'drop', 'read', 'evaluate', 'scores', 'similarity', 'personalize', 'refresh'])[1 + floor(random() * 8)::int];
    m text := 'race_m' || (k % 2);
    st text := '00000';
    msg text;
BEGIN
    BEGIN
        CASE a
        WHEN 'train' THEN PERFORM perpca_train(m, 'SELECT client, perpca_stats(x) FROM race_obs GROUP BY client', 2, 1, replace => true);
        WHEN 'drop' THEN PERFORM perpca_drop(m, if_exists => true);
        WHEN 'read' THEN PERFORM count(*) FROM perpca_component_info(m);
        WHEN 'evaluate' THEN PERFORM count(*) FROM perpca_evaluate(m, 'SELECT client, x FROM race_obs');
        WHEN 'scores' THEN PERFORM count(perpca_model_scores(m, client, x)) FROM race_obs;
        WHEN 'similarity' THEN PERFORM count(*) FROM perpca_similarity(m);
        WHEN 'personalize' THEN PERFORM count(*) FROM perpca_personalize(m, 'p', (SELECT perpca_stats(x) FROM race_obs WHERE client = 'c1'));
        ELSE PERFORM count(*) FROM perpca_refresh(m, wait => true);
        END CASE;
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
    END;
    INSERT INTO race_result VALUES (a, st, msg);
END
\$\$;
SQL
echo 'SELECT race_step(:client_id);' > "$DB_SQL"
pgbench -n -c "$CLIENTS" -T "$SECONDS_RUN" -f "$DB_SQL" 2>&1 | grep -E 'number of transactions actually processed|tps' || true
psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
\pset footer off
SELECT sqlstate, count(*) AS calls, string_agg(DISTINCT action, ' ' ORDER BY action) AS actions,
       min(message) AS example
  FROM race_result GROUP BY sqlstate ORDER BY sqlstate;
SELECT count(*) FILTER (WHERE sqlstate = '40P01') AS deadlocks,
       count(*) FILTER (WHERE sqlstate LIKE 'XX%') AS internal_errors,
       count(*) FILTER (WHERE sqlstate IN ('42501', '42P01')) AS spurious_42501_42P01,
       count(*) AS calls
  FROM race_result;
SQL
