# 060_rank_progress.pl -- perpca_choose_ranks shows the pair it is fitting in
# pg_stat_activity (application_name), gives it back afterwards, also when the
# scan is cancelled, and the session is usable after the cancel.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PerpcaTest;

my $node = start_node('ranks');
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION perpca;
SELECT setseed(0.25);
CREATE TABLE obs AS
    SELECT i % 30 AS client, i,
           ARRAY(SELECT random() * (1 + (j % 7)) FROM generate_series(1, 120) j WHERE i > 0) AS x
      FROM generate_series(1, 9000) i;
});

my $scan = "SELECT count(*) FROM perpca_choose_ranks('SELECT client, x, i FROM obs', NULL, "
  . "'{1,2,3,4,5,6}', '{1,2,3,4,5,6}')";

my $bg = $node->background_psql('postgres', on_error_stop => 0);
my $pid = $bg->query_safe("SET application_name = 'mine'; SELECT pg_backend_pid()");

$bg->query_until(qr/started/, "\\echo started\n$scan;\n");
ok( $node->poll_query_until(
		'postgres',
		"SELECT application_name ~ '^perpca_choose_ranks [0-9]+/36: n_global [1-6], n_local [1-6]\$' "
		  . "FROM pg_stat_activity WHERE pid = $pid"),
	'pg_stat_activity shows the pair being fitted');
$node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
ok( $node->poll_query_until(
		'postgres', "SELECT state = 'idle' FROM pg_stat_activity WHERE pid = $pid"),
	'the cancelled scan ends');
is( $node->safe_psql(
		'postgres', "SELECT application_name FROM pg_stat_activity WHERE pid = $pid"),
	'mine', 'application_name is given back after the cancel');
my ($out, $err) = $bg->query('SELECT 42');
is($out, '42', 'the session is usable after the cancel');
like($bg->{stderr}, qr/canceling statement due to user request/, 'the scan reported the cancel');
$bg->{stderr} = '';

# a scan to its end in the same session: the name given back, no NOTICE per pair
($out, $err) = $bg->query(
	"SELECT count(*) FILTER (WHERE recommended) FROM perpca_choose_ranks("
	  . "'SELECT client, x, i FROM obs WHERE client < 6', NULL, '{1}', '{0,1}'); "
	  . "SELECT current_setting('application_name')");
is($out, "1\nmine", 'a scan after the cancel runs to completion and gives the name back');
unlike($bg->{stderr}, qr/fitting pair/, 'no progress NOTICE without verbose (it is at DEBUG1)');
$bg->{stderr} = '';

# with verbose => true: a NOTICE per pair
($out, $err) = $bg->query(
	"SELECT count(*) FILTER (WHERE recommended) FROM perpca_choose_ranks("
	  . "'SELECT client, x, i FROM obs WHERE client < 6', NULL, '{1}', '{0,1}', verbose => true)");
is($out, '1', 'a verbose scan runs to completion');
like($bg->{stderr}, qr/fitting pair 1\/2 \(n_global 1, n_local 0\).*fitting pair 2\/2/s, 'a NOTICE per pair with verbose');

$bg->quit;
$node->stop;
done_testing();
