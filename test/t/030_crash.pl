# 030_crash.pl -- a server killed with SIGKILL in the middle of a refresh
# comes back with the previous model intact and usable.
#
# A. The backend running perpca_refresh is killed while the refit reads its
#    source query (the postmaster then restarts all processes).
# B. The postmaster is killed while the refresh is swapping the model in:
#    the old rows are already deleted and the new ones inserted, the
#    transaction has not committed.
# After each crash the model's rows, version and projections are those of
# before, and a refresh after recovery works.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use PerpcaTest;

my $node = start_node('main', "restart_after_crash = on\n");

$node->safe_psql(
	'postgres', obs_feed_sql(qw(a b c d)) . q{
CREATE VIEW feed AS SELECT client, x FROM feed_rows;
SELECT model_name FROM perpca_train('m', 'SELECT client, perpca_stats(x) FROM public.feed GROUP BY client', 2, 2);
-- new rows and a new client, so that a refresh would change the model
INSERT INTO feed_rows SELECT client, x FROM obs WHERE client IN ('a', 'b', 'c') AND obs > 100 OR client = 'e';
CREATE FUNCTION stall() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(600); RETURN NULL; END $$;
CREATE FUNCTION slow() RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(600); RETURN true; END $$;
});

# Everything the model stores, and what it computes, as one line.
my $state_sql = q{
SELECT i.version, i.n_clients,
       (SELECT md5(string_agg(c::text, '|' ORDER BY kind, client, component)) FROM m_components c),
       (SELECT md5(string_agg(k::text, '|' ORDER BY client)) FROM m_clients k),
       (SELECT round(sum(perpca_model_error('m', o.client, o.x))::numeric, 8) FROM obs o),
       (SELECT count(*) FROM obs o WHERE array_length(perpca_model_scores('m', o.client, o.x), 1) = 4)
  FROM m_info i};
my $before = $node->safe_psql('postgres', $state_sql);
like($before, qr/^\d+\|4\|\w{32}\|\w{32}\|[\d.]+\|600$/, 'model before the crashes');

# Start a refresh in a background session and wait until its backend sleeps
# in pg_sleep (the stalled point); returns the session and the backend's pid.
sub stalled_refresh
{
	my $s = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	$s->query_until(qr/started/, "\\echo started\nSELECT * FROM perpca_refresh('m');\n");
	$node->poll_query_until('postgres',
		"SELECT wait_event FROM pg_stat_activity WHERE pid = $pid", 'PgSleep')
	  or die "the refresh did not reach its stall point";
	return ($s, $pid);
}

# Wait (bounded) until a process is gone.
sub wait_gone
{
	my ($pid) = @_;
	for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
	{
		return 1 unless kill(0, $pid);
		usleep(100_000);
	}
	return 0;
}

# ---- A. SIGKILL of the refreshing backend during the refit ------------------
$node->safe_psql('postgres', 'CREATE OR REPLACE VIEW feed AS SELECT client, x FROM feed_rows WHERE slow()');
my ($s, $pid) = stalled_refresh();
my $log_offset = -s $node->logfile;
kill 'KILL', $pid;
ok( $node->wait_for_log(qr/all server processes terminated; reinitializing/, $log_offset),
	'A: killing the backend made the server restart');
ok($node->poll_query_until('postgres', 'SELECT true'), 'A: server accepts connections again');
eval { $s->quit };
is($node->safe_psql('postgres', $state_sql), $before, 'A: the model is exactly as before the refresh');
$node->safe_psql('postgres', 'CREATE OR REPLACE VIEW feed AS SELECT client, x FROM feed_rows');

# ---- B. SIGKILL of the postmaster while the refresh swaps the model in -------
$node->safe_psql('postgres',
	'CREATE TRIGGER stall AFTER INSERT ON m_info FOR EACH ROW EXECUTE FUNCTION stall()');
($s, $pid) = stalled_refresh();
is( $node->safe_psql(
		'postgres', qq{SELECT string_agg(relation::regclass::text, ',' ORDER BY relation::regclass::text)
                         FROM pg_locks WHERE pid = $pid AND mode = 'RowExclusiveLock'
                          AND relation IN ('m_components'::regclass, 'm_clients'::regclass, 'm_info'::regclass)}),
	'm_clients,m_components,m_info',
	'B: the refresh has rewritten the model\'s tables (uncommitted)');
$node->kill9;
ok(wait_gone($pid), 'B: the refreshing backend is gone with the postmaster');
eval { $s->quit };
$node->start;
is($node->safe_psql('postgres', $state_sql), $before, 'B: after restart the model is exactly as before');

# ---- after recovery: the model refreshes normally ----------------------------
$node->safe_psql('postgres', 'DROP TRIGGER stall ON m_info');
is( $node->safe_psql(
		'postgres', q{SELECT clients, clients_added FROM perpca_refresh('m')}),
	'5|1', 'a refresh after recovery works');
my $after = $node->safe_psql('postgres', $state_sql);
my ($v_before) = split /\|/, $before;
my ($v_after, $n_after) = split /\|/, $after;
ok($v_after > $v_before, 'the refreshed model has a newer version');
is($n_after, 5, 'and the new client');

$node->stop;
done_testing();
