# 020_concurrency.pl -- stored models under concurrent sessions.
#
# 1. A long-lived session that has cached a model sees a replaced model on
#    its next statement after the replacing transaction commits (and not
#    before, nor inside a REPEATABLE READ transaction that began earlier).
# 2. Readers projecting rows while a refresh runs are never blocked, never
#    fail, and see the old model until the refresh commits, then the new one.
# 3. Two refreshes of one model: the second fails at once with
#    lock_not_available, or with wait => true waits for the first and then
#    refreshes the model the first one stored.
# 4. Stress: readers that check every statement for a half-written model
#    (pgbench) while writers append rows and refresh the model repeatedly.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use PerpcaTest;

my $node = start_node('main', "max_connections = 40\n");

$node->safe_psql(
	'postgres', obs_feed_sql(qw(a b c d)) . q{
SELECT model_name FROM perpca_train('m', 'SELECT client, perpca_stats(x) FROM public.feed_rows GROUP BY client', 2, 2);
-- One statement's view of the model: version, number of components, and the
-- summed reconstruction error of some rows from the cached model.
CREATE VIEW model_view AS
SELECT i.version, (SELECT count(*) FROM m_components) AS components,
       (SELECT round(sum(perpca_model_error('m', o.client, o.x))::numeric, 8)
          FROM obs o WHERE o.obs <= 20) AS error
  FROM m_info i;
-- Raises if the model seen by this statement is half-written, or if the
-- cached model differs from the stored tables under the same snapshot.
CREATE FUNCTION check_model() RETURNS bigint LANGUAGE plpgsql STABLE AS $$
DECLARE
    info record;
    n bigint;
    cached float8;
    stored float8;
BEGIN
    SELECT * INTO STRICT info FROM m_info;
    SELECT count(*) INTO n FROM m_components;
    IF n <> info.n_global + info.n_local * info.n_clients
       OR (SELECT count(*) FROM m_clients) <> info.n_clients THEN
        RAISE EXCEPTION 'half-written model: version %, % components', info.version, n;
    END IF;
    SELECT sum(perpca_model_error('m', o.client, o.x)) INTO cached FROM obs o WHERE o.obs <= 20;
    SELECT sum((SELECT sum(r * r) FROM unnest(perpca_residual(o.x, w.pcs, c.mean)) AS r)) INTO stored
      FROM obs o JOIN m_clients c USING (client),
           LATERAL (SELECT array_agg(pc ORDER BY kind, component) AS pcs FROM m_components k
                     WHERE k.client IS NULL OR k.client = o.client) w
     WHERE o.obs <= 20;
    stored := stored + (SELECT sum((SELECT sum(r * r)
                                      FROM unnest(perpca_residual(o.x,
                                             (SELECT array_agg(pc ORDER BY component) FROM m_components
                                               WHERE kind = 'global'), info.global_mean)) AS r))
                          FROM obs o WHERE o.obs <= 20
                           AND NOT EXISTS (SELECT FROM m_clients c WHERE c.client = o.client));
    IF abs(cached - stored) > 1e-9 * stored THEN
        RAISE EXCEPTION 'cached model differs from the stored one: % vs %', cached, stored;
    END IF;
    RETURN info.version;
END
$$;
});
is($node->safe_psql('postgres', 'SELECT check_model() = version FROM m_info'),
	't', 'check_model() accepts the trained model');

# Clear a background session's accumulated stderr (BackgroundPsql keeps it).
sub clear_err { $_[0]->{stderr} = ''; return; }

# ---- 1. a cached model is replaced by another session --------------------
my $reader = $node->background_psql('postgres', on_error_stop => 0);
$reader->query_safe('SET client_min_messages = warning');    # the unseen client's NOTICE
$reader->set_query_timer_restart;
my $scores_sql = q{SELECT array_length(perpca_model_scores('m', 'a', x), 1) FROM obs WHERE client = 'a' AND obs = 1};
is($reader->query_safe($scores_sql), '4', 'reader: 2 global + 2 local scores (model cached)');
$reader->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
is($reader->query_safe($scores_sql), '4', 'reader: inside a repeatable-read transaction');

$node->safe_psql('postgres',
	q{SELECT model_name FROM perpca_train('m', 'SELECT client, perpca_stats(x) FROM public.feed_rows GROUP BY client', 2, 1, replace => true)});
is($reader->query_safe($scores_sql), '4',
	'reader: its repeatable-read snapshot still shows the old model');
$reader->query_safe('COMMIT');
is($reader->query_safe($scores_sql), '3',
	'reader: the next statement after the replace committed uses the new model');

my $writer = $node->background_psql('postgres', on_error_stop => 0);
$writer->query_safe('SET client_min_messages = warning');    # the unseen client's NOTICE
$writer->set_query_timer_restart;
$writer->query_safe('BEGIN');
$writer->query_safe(
	q{SELECT model_name FROM perpca_train('m', 'SELECT client, perpca_stats(x) FROM public.feed_rows GROUP BY client', 2, 2, replace => true)});
is($reader->query_safe($scores_sql), '3', 'reader: an uncommitted replace is not visible');
$writer->query_safe('COMMIT');
is($reader->query_safe($scores_sql), '4', 'reader: the replace is visible once committed');

# ---- 2. readers during a refresh --------------------------------------------
$node->safe_psql('postgres',
	q{INSERT INTO feed_rows SELECT client, x FROM obs WHERE client IN ('a', 'b', 'c') AND obs > 100 OR client = 'e'});
my $old = $node->safe_psql('postgres', 'SELECT * FROM model_view');
$reader->query_safe("SET lock_timeout = '10s'");
is($reader->query_safe('SELECT * FROM model_view'), $old, 'reader: cached the model before the refresh');

$writer->query_safe('BEGIN');
my $refreshed = $writer->query_safe(q{SELECT version, clients, clients_added FROM perpca_refresh('m')});
like($refreshed, qr/^\d+\|5\|1$/, 'refresh (not committed yet) added client e');
my ($new_version) = split /\|/, $refreshed;

my ($during, $err) = $reader->query('SELECT * FROM model_view');
is($err, 0, 'reader: no error (and no lock wait) while the refresh is uncommitted');
is($during, $old, 'reader: sees the old model while the refresh is uncommitted');
clear_err($reader);
is($node->safe_psql('postgres', 'SELECT * FROM model_view'), $old,
	'new session: sees the old model while the refresh is uncommitted');
is($node->safe_psql('postgres', 'SELECT check_model() IS NOT NULL'), 't',
	'new session: the old model is whole');

$writer->query_safe('COMMIT');
my $after = $reader->query_safe('SELECT * FROM model_view');
my ($after_version, $after_components) = split /\|/, $after;
is($after_version, $new_version, 'reader: the next statement sees the refreshed model');
is($after_components, 2 + 2 * 5, 'reader: with the new client\'s components');
isnt($after, $old, 'reader: the refreshed model projects differently');
is($node->safe_psql('postgres', 'SELECT * FROM model_view'), $after,
	'reader\'s cached model equals a fresh session\'s');

# ---- 3. two refreshes of the same model -----------------------------------
$writer->query_safe('BEGIN');
my $first = $writer->query_safe(q{SELECT version FROM perpca_refresh('m', warm => false)});

my ($ret, $out, $stderr) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT * FROM perpca_refresh('m')");
isnt($ret, 0, 'a second refresh fails while the first is running');
like($stderr, qr/ERROR:  55P03: model "m" is being refreshed or changed by another transaction/,
	'... at once, with lock_not_available and a clear message');
like($stderr, qr/HINT:  .*wait => true/, '... and a hint to wait');

my $waiter = $node->background_psql('postgres', on_error_stop => 0);
$waiter->query_safe('SET client_min_messages = warning');    # the unseen client's NOTICE
$waiter->set_query_timer_restart;
$waiter->query_until(qr/waiting/,
	"\\echo waiting\nSELECT 'queued', version FROM perpca_refresh('m', wait => true, warm => false);\n");
ok( $node->poll_query_until(
		'postgres', q{SELECT count(*) FROM pg_stat_activity
                       WHERE wait_event_type = 'Lock' AND query LIKE '%perpca_refresh%wait => true%'},
		'1'),
	'a refresh with wait => true waits for the lock');
is($reader->query_safe("SELECT version FROM m_info"), $new_version,
	'readers still go on while one refresh runs and another waits');

$writer->query_safe('COMMIT');
my $queued = $waiter->query_safe('SELECT 1');
like($queued, qr/^queued\|(\d+)\n1$/, 'the waiting refresh ran after the first committed');
my ($second) = $queued =~ /^queued\|(\d+)/;
ok(defined $second && $second > $first, 'the waiting refresh stored a newer version');
is($node->safe_psql('postgres', 'SELECT version = check_model() FROM m_info'), 't',
	'the model is whole and it is the second refresh\'s');
is($node->safe_psql('postgres', 'SELECT count(*) FROM m_info'), '1', 'one info row');

# ---- 4. stress: checking readers against refreshing writers -------------------
my $tmp = PostgreSQL::Test::Utils::tempdir;
PostgreSQL::Test::Utils::append_to_file("$tmp/reader.sql", "SELECT check_model();\n");
PostgreSQL::Test::Utils::append_to_file("$tmp/writer.sql", q{
INSERT INTO feed_rows SELECT client, x FROM obs WHERE client IN ('a', 'b', 'c', 'e') ORDER BY random() LIMIT 10;
SELECT version FROM perpca_refresh('m', wait => true, warm => false);
});
my $v0 = $node->safe_psql('postgres', 'SELECT version FROM m_info');
my @connect = ('-h', $node->host, '-p', $node->port, 'postgres');
my ($wout, $werr) = ('', '');
my $writers = IPC::Run::start(
	[ 'pgbench', '-n', '-c', '2', '-t', '15', '-f', "$tmp/writer.sql", @connect ],
	'>', \$wout, '2>', \$werr);
my ($rout, $rerr) = ('', '');
my $readers_ok = IPC::Run::run(
	[ 'pgbench', '-n', '-c', '3', '-t', '150', '-f', "$tmp/reader.sql", @connect ],
	'>', \$rout, '2>', \$rerr);
my $writers_ok = $writers->finish;
ok($readers_ok, 'pgbench readers: no reader failed or saw a half-written model')
  or diag("$rout\n$rerr");
ok($writers_ok, 'pgbench writers: all refreshes (with wait => true) succeeded')
  or diag("$wout\n$werr");
is($node->safe_psql('postgres', "SELECT version - $v0 >= 30 FROM m_info"), 't',
	'every writer transaction refreshed the model');
is($node->safe_psql('postgres', 'SELECT version = check_model() FROM m_info'), 't',
	'the model is whole after the stress run');

$reader->quit;
$writer->quit;
$waiter->quit;
$node->stop;
done_testing();
