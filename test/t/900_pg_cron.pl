# 900_pg_cron.pl -- a model refreshed by pg_cron (slow group: a job runs at
# the start of the next minute, so each phase waits up to a minute or so).
#
# The cluster preloads pg_cron with the settings the README shows (without
# pg_cron in the installation the file skips: require_pg_cron).  Phase 1
# runs jobs in background workers (cron.use_background_workers = on);
# phase 2 restarts the server with pg_cron's default, a libpq connection,
# which needs cron.host (here the socket directory).  In each phase a job
# refreshes the model every minute; the test waits (bounded) until
# cron.job_run_details shows a successful run and the model has a new
# version with the client that appeared, then unschedules the job (and, in
# phase 1, a model of rows with gaps whose client lost every row).  Phase 3:
# a refresh of unchanged data writes nothing to the server log.
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

$node->safe_psql(
	'postgres', 'CREATE EXTENSION pg_cron;' . obs_feed_sql(qw(a b c)) . q{
SELECT model_name FROM perpca_train('m', 'SELECT client, perpca_stats(x) FROM public.feed_rows GROUP BY client', 2, 2);
});

# Schedule a refresh every minute, wait for a successful run that stored a
# new model with the given client count, unschedule; returns the version.
sub refresh_by_cron
{
	my ($phase, $n_clients) = @_;
	my $v0 = $node->safe_psql('postgres', 'SELECT version FROM m_info');
	my $job = $node->safe_psql('postgres',
		qq{SELECT cron.schedule('perpca-refresh-$phase', '* * * * *', \$\$SELECT * FROM public.perpca_refresh('public.m')\$\$)});
	ok( $node->poll_query_until(
			'postgres', qq{SELECT EXISTS (SELECT FROM cron.job_run_details
                                           WHERE jobid = $job AND status IN ('succeeded', 'failed'))}),
		"$phase: the job ran within the wait");
	is( $node->safe_psql(
			'postgres', qq{SELECT status, return_message FROM cron.job_run_details
                            WHERE jobid = $job ORDER BY runid LIMIT 1}),
		$phase eq 'libpq' ? 'succeeded|1 row' : 'succeeded|SELECT 1',
		"$phase: the job succeeded");
	is( $node->safe_psql(
			'postgres', "SELECT version > $v0, n_clients FROM m_info"),
		"t|$n_clients",
		"$phase: the model was refreshed with the new client");
	is($node->safe_psql('postgres', "SELECT cron.unschedule($job)"), 't', "$phase: unscheduled");
	return;
}

# Phase 1: background workers.
$node->safe_psql('postgres', q{INSERT INTO feed_rows SELECT client, x FROM obs WHERE client = 'd'});
refresh_by_cron('bgworker', 4);

# A model trained in its own schema with an unqualified query refreshes from
# the job's session, whose search_path is the default: perpca_train recorded
# the search_path the query needs (a model refreshes wherever it was
# trained).
$node->safe_psql('postgres', q{
CREATE SCHEMA app;
CREATE TABLE app.feed AS SELECT client, x FROM public.feed_rows WHERE client IN ('a', 'b', 'c');
SET search_path = app, public;
SELECT model_name FROM perpca_train('app.m2', 'SELECT client, perpca_stats(x) FROM feed GROUP BY client', 2, 1);
INSERT INTO app.feed SELECT client, x FROM public.obs WHERE client = 'd';
});
my $job2 = $node->safe_psql('postgres',
	q{SELECT cron.schedule('perpca-refresh-app', '* * * * *', $$SELECT * FROM public.perpca_refresh('app.m2')$$)});

# The walk of examples/missing_walk.sh from pg_cron, in the same minute: a
# model of rows with gaps, trained with missing => 'skip', whose client 'c'
# has since lost every row (each has a gap), refreshes: 'c' is left out, not
# an error (0.3.0 took no missing option, and a client of n = 0 failed every
# refresh).
$node->safe_psql('postgres', q{
CREATE TABLE public.gap_rows AS SELECT client, x FROM public.feed_rows WHERE client IN ('a', 'b', 'c');
UPDATE public.gap_rows SET x[1] = NULL WHERE client = 'a' AND x[2] > 0;
SELECT model_name FROM perpca_train('public.gm', 'SELECT client, x FROM public.gap_rows', 2, 1, missing => 'skip');
UPDATE public.gap_rows SET x[2] = NULL WHERE client = 'c';
});
my $job_gaps = $node->safe_psql('postgres',
	q{SELECT cron.schedule('perpca-refresh-gaps', '* * * * *', $$SELECT * FROM public.perpca_refresh('public.gm')$$)});
ok( $node->poll_query_until(
		'postgres', qq{SELECT EXISTS (SELECT FROM cron.job_run_details
                                       WHERE jobid = $job2 AND status IN ('succeeded', 'failed'))}),
	'app schema: the job ran within the wait');
is( $node->safe_psql(
		'postgres', qq{SELECT status, return_message FROM cron.job_run_details WHERE jobid = $job2 ORDER BY runid LIMIT 1}),
	'succeeded|SELECT 1', 'app schema: the refresh of a model trained with an unqualified query succeeded');
is($node->safe_psql('postgres', 'SELECT n_clients, search_path FROM app.m2_info'),
	'4|app, public', 'app schema: refreshed with the recorded search_path');
is($node->safe_psql('postgres', "SELECT cron.unschedule($job2)"), 't', 'app schema: unscheduled');
ok( $node->poll_query_until(
		'postgres', qq{SELECT EXISTS (SELECT FROM cron.job_run_details
                                       WHERE jobid = $job_gaps AND status IN ('succeeded', 'failed'))}),
	'gaps: the job ran within the wait');
is( $node->safe_psql(
		'postgres', qq{SELECT status FROM cron.job_run_details WHERE jobid = $job_gaps ORDER BY runid LIMIT 1}),
	'succeeded', 'gaps: the refresh of rows with gaps and a client without rows succeeded');
is( $node->safe_psql(
		'postgres', q{SELECT outcome, clients, clients_dropped FROM perpca_model_history('public.gm') ORDER BY entry DESC LIMIT 1}),
	'fitted|2|1', 'gaps: refitted on the two clients with rows, the empty one dropped');
is($node->safe_psql('postgres', "SELECT cron.unschedule($job_gaps)"), 't', 'gaps: unscheduled');

# The planted overload of 076_bound_query.pl, through pg_cron: a superuser's model
# trained with search_path app, public (both writable by PUBLIC); mallory
# then plants an aggregate perpca_stats(numeric[]) in both, which beats the
# implicit cast numeric[] -> float8[] of the query's perpca_stats(x).  0.3.0
# parsed the text again in the job and ran it as the superuser; 0.4.0 reads
# the view bound at train (076_bound_query.pl has the hand-run refreshes).
$node->safe_psql('postgres', q{
GRANT CREATE ON SCHEMA public TO PUBLIC;
GRANT USAGE, CREATE ON SCHEMA app TO PUBLIC;
CREATE ROLE mallory LOGIN;
CREATE TABLE app.feedn AS SELECT client, x::numeric[] AS x FROM public.feed_rows WHERE client IN ('a', 'b', 'c');
SET search_path = app, public;
SELECT model_name FROM perpca_train('app.atk', 'SELECT client, perpca_stats(x) FROM feedn GROUP BY client', 2, 1);
INSERT INTO app.feedn SELECT client, x::numeric[] FROM public.obs WHERE client = 'd';
});
$node->safe_psql('postgres', q{
CREATE TABLE public.fired (who text, what text);
GRANT INSERT ON public.fired TO PUBLIC;
CREATE FUNCTION app.trap_acc(perpca_stats, numeric[]) RETURNS perpca_stats LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.fired VALUES (current_user, 'perpca_stats(numeric[])');
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        EXECUTE 'ALTER ROLE mallory SUPERUSER';
    END IF;
    RETURN $1;
END $$;
CREATE AGGREGATE app.perpca_stats(numeric[]) (SFUNC = app.trap_acc, STYPE = perpca_stats);
CREATE AGGREGATE public.perpca_stats(numeric[]) (SFUNC = app.trap_acc, STYPE = perpca_stats);
-- Her enum of client keys; a table of it and a model the superuser trains on it...
CREATE TYPE app.region AS ENUM ('a', 'b', 'c');
}, extra_params => [ '-U', 'mallory' ]);
$node->safe_psql('postgres', q{
CREATE TABLE app.regions AS SELECT client::app.region AS region, x FROM public.feed_rows WHERE client IN ('a', 'b', 'c');
SELECT model_name FROM perpca_train('app.katk', 'SELECT region, x FROM app.regions', 2, 1)});
# ... and then her cast of the enum to text (0.4.0 before late binding was
# ruled out cast the key to text in SQL around the bound view).
$node->safe_psql('postgres', q{
CREATE FUNCTION app.region_text(r app.region) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.fired VALUES (current_user, 'cast region');
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        EXECUTE 'ALTER ROLE mallory SUPERUSER';
    END IF;
    RETURN r::name;
END $$;
CREATE CAST (app.region AS text) WITH FUNCTION app.region_text(app.region) AS ASSIGNMENT;
}, extra_params => [ '-U', 'mallory' ]);
my $job3 = $node->safe_psql('postgres',
	q{SELECT cron.schedule('perpca-refresh-planted', '* * * * *',
	  $$SELECT * FROM public.perpca_refresh('app.atk'); SELECT * FROM public.perpca_refresh('app.katk', warm => false)$$)});
ok( $node->poll_query_until(
		'postgres', qq{SELECT EXISTS (SELECT FROM cron.job_run_details
                                       WHERE jobid = $job3 AND status IN ('succeeded', 'failed'))}),
	'planted overload: the job ran within the wait');
is( $node->safe_psql(
		'postgres', qq{SELECT status FROM cron.job_run_details WHERE jobid = $job3 ORDER BY runid LIMIT 1}),
	'succeeded', 'planted overload: the refresh succeeded');
is($node->safe_psql('postgres', 'SELECT n_clients FROM app.atk_info'), '4',
	'planted overload: the model was refreshed with the new client');
is($node->safe_psql('postgres', q{SELECT outcome FROM perpca_model_history('app.katk') ORDER BY entry DESC LIMIT 1}),
	'fitted', 'planted cast: the enum-keyed model was refreshed in the job');
is($node->safe_psql('postgres', q{SELECT count(*) FROM public.fired WHERE who <> 'mallory'}), '0',
	'planted overload and cast: neither ran in the job');
is($node->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'}), 'f',
	'planted overload: mallory is not a superuser');
is($node->safe_psql('postgres', "SELECT cron.unschedule($job3)"), 't', 'planted overload: unscheduled');

# Phase 2: libpq connection to the socket directory.
$node->append_conf(
	'postgresql.conf', sprintf(q{
cron.use_background_workers = off
cron.host = '%s'
}, $node->host));
$node->restart;
$node->safe_psql('postgres', q{INSERT INTO feed_rows SELECT client, x FROM obs WHERE client = 'e'});
refresh_by_cron('libpq', 5);

is( $node->safe_psql(
		'postgres', q{SELECT count(*) FROM obs WHERE client = 'e'
                         AND array_length(perpca_model_scores('m', client, x), 1) = 4}),
	'150', 'the refreshed model projects the new client with its local components');

# Phase 3: a refresh of unchanged data is recorded in the model's history and
# says so at DEBUG1 only, so a nightly job writes nothing to the server log
# even at log_min_messages = notice (0.3.0 wrote a NOTICE every run).
$node->safe_psql('postgres', 'ALTER SYSTEM SET log_min_messages = notice; SELECT pg_reload_conf()');
my $log_offset = -s $node->logfile;
my $v_same = $node->safe_psql('postgres', 'SELECT version FROM m_info');
my $job_same = $node->safe_psql('postgres',
	q{SELECT cron.schedule('perpca-refresh-same', '* * * * *', $$SELECT * FROM public.perpca_refresh('public.m')$$)});
ok( $node->poll_query_until(
		'postgres', qq{SELECT EXISTS (SELECT FROM cron.job_run_details
                                       WHERE jobid = $job_same AND status IN ('succeeded', 'failed'))}),
	'unchanged: the job ran within the wait');
is($node->safe_psql('postgres', "SELECT cron.unschedule($job_same)"), 't', 'unchanged: unscheduled');
is( $node->safe_psql(
		'postgres', q{SELECT outcome, version, rounds_run FROM perpca_model_history('public.m') ORDER BY entry DESC LIMIT 1}),
	"unchanged|$v_same|0", 'unchanged: the history row is the record');
unlike(slurp_file($node->logfile, $log_offset), qr/is unchanged: nothing was fitted/,
	'unchanged: no line in the server log at log_min_messages = notice');

$node->stop;
done_testing();
