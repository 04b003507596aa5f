# 910_maintenance_cron.pl -- pg_cron refreshes a materialized view of anomaly
# scores (slow group: a job runs at the start of the next minute).
#
# What users build: perpca in its own schema (CREATE EXTENSION perpca SCHEMA
# perpca), the data and the model in schema app, a materialized view of
# perpca_model_error and perpca_model_scores over the rows, and a pg_cron job
# that refreshes it (plain, then CONCURRENTLY) at night.  From PostgreSQL 17
# on the refresh runs with search_path = pg_catalog, pg_temp (test/sql/
# maintenance.sql shows it); the job must succeed and the view must hold the
# new rows, equal to the functions called directly.  Without pg_cron in the
# installation the file skips (require_pg_cron).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PerpcaTest;

require_pg_cron();
my $node = start_node(
	'main', q{
shared_preload_libraries = 'pg_cron'
cron.database_name = 'postgres'
cron.use_background_workers = on
max_worker_processes = 16
});
my $data = test_path('test/data/project_obs.csv');

$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION pg_cron;
CREATE SCHEMA perpca;
CREATE EXTENSION perpca SCHEMA perpca;
CREATE SCHEMA app;
CREATE TABLE app.obs (client text, obs int, x float8[]);
\\copy app.obs from '$data' csv header
CREATE TABLE app.feed AS SELECT client, obs, x FROM app.obs WHERE client <> 'new' AND obs <= 100;
SET search_path = app, perpca;
SELECT model_name FROM perpca_train('app.m', 'SELECT client, perpca_stats(x) FROM app.feed GROUP BY client', 2, 2);
CREATE MATERIALIZED VIEW app.anomaly AS
SELECT client, obs, perpca_model_error('app.m', client, x) AS error,
       perpca_model_scores('app.m', client, x) AS scores
  FROM app.feed;
CREATE UNIQUE INDEX ON app.anomaly (client, obs);
});

# The view's rows, and how many of them equal a direct call.
my $check = q{
SELECT count(*),
       count(*) FILTER (WHERE a.error OPERATOR(pg_catalog.=) perpca.perpca_model_error('app.m', f.client, f.x)
                          AND a.scores OPERATOR(pg_catalog.=) perpca.perpca_model_scores('app.m', f.client, f.x))
  FROM app.feed f LEFT JOIN app.anomaly a USING (client, obs)};
is($node->safe_psql('postgres', $check), '500|500', 'the view holds the first 500 rows');

# New rows; a job that refreshes the view both ways, every minute.
$node->safe_psql('postgres',
	q{INSERT INTO app.feed SELECT client, obs, x FROM app.obs WHERE client <> 'new' AND obs > 100});
my $job = $node->safe_psql('postgres',
	q{SELECT cron.schedule('perpca-anomaly', '* * * * *',
	    $$REFRESH MATERIALIZED VIEW app.anomaly; REFRESH MATERIALIZED VIEW CONCURRENTLY app.anomaly$$)});
ok( $node->poll_query_until(
		'postgres', qq{SELECT EXISTS (SELECT FROM cron.job_run_details
                                       WHERE jobid = $job AND status IN ('succeeded', 'failed'))}),
	'the job ran within the wait');
is( $node->safe_psql(
		'postgres', qq{SELECT status, return_message FROM cron.job_run_details
                        WHERE jobid = $job ORDER BY runid LIMIT 1}),
	'succeeded|REFRESH MATERIALIZED VIEW',
	'the job succeeded');
is($node->safe_psql('postgres', "SELECT cron.unschedule($job)"), 't', 'unscheduled');
is($node->safe_psql('postgres', $check), '750|750', 'the view holds all 750 rows, equal to direct calls');

$node->stop;
done_testing();
