# 050_cancel.pl -- a long perpca_fit shows its phase in pg_stat_activity,
# stops promptly on pg_cancel_backend and on statement_timeout, and the
# session is usable afterwards; a long statistics scan reports its progress
# (perpca.progress_rows) and cancels the same way.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use PerpcaTest;

my $node = start_node('cancel');
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION perpca;
SELECT setseed(0.5);
CREATE TABLE st AS
    SELECT i % 20 AS client,
           perpca_stats(ARRAY(SELECT random() FROM generate_series(1, 30) WHERE i > 0)) AS s
    FROM generate_series(1, 1000) i GROUP BY 1;
});

my $long_fit = "SELECT count(*) FROM perpca_fit('SELECT client, s FROM st', 2, 3, "
  . "rounds => 10000000, tolerance => 0, solver => 'paper')";

my $bg = $node->background_psql('postgres', on_error_stop => 0);
my $pid = $bg->query_safe('SELECT pg_backend_pid()');

# 1. pg_cancel_backend while the rounds run
$bg->query_until(qr/started/, "\\echo started\n$long_fit;\n");
ok( $node->poll_query_until(
		'postgres',
		"SELECT query LIKE '/* perpca_fit: fitting 20 clients, d = 30% */ ' || \$q\$$long_fit\$q\$ || '%' FROM pg_stat_activity WHERE pid = $pid"),
	'pg_stat_activity shows the fit phase in front of the statement');
my $t0 = time;
$node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
ok( $node->poll_query_until(
		'postgres', "SELECT state = 'idle' FROM pg_stat_activity WHERE pid = $pid"),
	'the cancelled fit ends');
note sprintf('cancel took %.3f s', time - $t0);
is( $node->safe_psql(
		'postgres', "SELECT query FROM pg_stat_activity WHERE pid = $pid"),
	"$long_fit;",
	'pg_stat_activity shows the statement again after the fit');
my ($out, $err) = $bg->query('SELECT 42');
is($out, '42', 'the session is usable after the cancel');
like($bg->{stderr}, qr/canceling statement due to user request/, 'the fit reported the cancel');
$bg->{stderr} = '';

# 2. statement_timeout
$t0 = time;
($out, $err) = $bg->query("SET statement_timeout = '500ms'; $long_fit");
like($bg->{stderr}, qr/canceling statement due to statement timeout/, 'statement_timeout stops the fit');
note sprintf('timeout fit returned after %.3f s', time - $t0);
$bg->{stderr} = '';

# 3. the same session fits normally afterwards
$out = $bg->query_safe(
	"RESET statement_timeout; "
	  . "SELECT count(*) FROM perpca_fit('SELECT client, s FROM st', 2, 3, rounds => 50, tolerance => 0, solver => 'paper'); "
	  . "SELECT rounds_run FROM perpca_last_fit()");
is($out, "62\n50", 'a fit after the cancels runs to completion in the same session');

# 4. a long statistics scan with perpca.progress_rows shows its progress, and cancels
# (the set-returning function in a target list streams its rows; in FROM a
# FunctionScan would first write all of them to a tuplestore)
my $long_scan = "SELECT perpca_count(perpca_stats(ARRAY[i, -i]::float8[])) "
  . "FROM (SELECT generate_series(1, 2000000000) AS i) AS g";
$bg->query_safe("SET max_parallel_workers_per_gather = 0; SET perpca.progress_rows = 100000");
$bg->query_until(qr/scanning/, "\\echo scanning\n$long_scan;\n");
ok( $node->poll_query_until(
		'postgres',
		"SELECT query ~ '^/\\* perpca_stats: [0-9]+ rows aggregated \\*/ SELECT perpca_count' FROM pg_stat_activity WHERE pid = $pid"),
	'pg_stat_activity shows the progress of a statistics scan');
$node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
ok( $node->poll_query_until(
		'postgres', "SELECT state = 'idle' FROM pg_stat_activity WHERE pid = $pid"),
	'the cancelled scan ends');
is( $node->safe_psql(
		'postgres', "SELECT query FROM pg_stat_activity WHERE pid = $pid"),
	"$long_scan;",
	'after the cancelled scan pg_stat_activity shows the statement again');
($out, $err) = $bg->query('SELECT 43');
is($out, '43', 'the session is usable after the cancelled scan');
like($bg->{stderr}, qr/perpca_stats: 100000 rows aggregated by this process/, 'the scan sent progress NOTICEs');
$bg->quit;

# 5. the server never restarted
is($node->safe_psql('postgres', 'SELECT count(*) FROM st'), '20', 'server still up, data intact');
$node->stop;
done_testing();
