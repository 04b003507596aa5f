# 078_similarity_memory.pl -- perpca_similarity runs in bounded memory.
#
# 0.2.0 built every pair's row in the query's memory: 241 MB at 3,000
# clients, 4.4 GB after 60 s at 20,000.  Now the pairs are returned one per
# call: in FROM they go to a tuplestore that spills to disk beyond work_mem,
# in the select list they stream.  The backend's peak resident memory
# (VmHWM in /proc) is measured around the calls on models of 20,000 and
# 3,000 clients, with work_mem = 1MB; the bound is generous (64 MB over what
# the backend had after loading the models), and it is a memory bound, not a
# time one.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PerpcaTest;

plan skip_all => 'needs /proc' unless -r '/proc/self/status';
# Under AddressSanitizer (scripts/suite.sh --sanitize exports ASAN_OPTIONS) a backend's
# memory includes shadow memory and the freed-memory quarantine, so a bound on
# its growth says nothing about perpca: the normal run checks it.
plan skip_all => 'memory bound not meaningful under AddressSanitizer (shadow memory, quarantine)'
	if ($ENV{ASAN_OPTIONS} // '') ne '';

my $node = start_node('main');

# A model trained on a few clients, then grown to N clients with one local
# component each, written straight into its tables (a fit of 20,000 clients
# would take longer than this test needs).
sub grow_sql
{
	my ($model, $n) = @_;
	return qq{
SELECT model_name FROM perpca_train('$model',
    'SELECT ''c'' || (i % 3), perpca_stats(ARRAY[sin(i), cos(3 * i), sin(5 * i)]) FROM generate_series(1, 90) AS i GROUP BY 1',
    1, 1);
INSERT INTO ${model}_clients (client, n, mean, n_local, total_variance, global_ratio, local_ratio,
                              residual_ratio, train_error, source)
SELECT 'k' || lpad(i::text, 6, '0'), 10, ARRAY[0, 0, 0], 1, 1, 0.5, 0.3, 0.2, 0.2, 'fit'
  FROM generate_series(1, $n - 3) AS i;
INSERT INTO ${model}_components (client, kind, component, pc, variance)
SELECT 'k' || lpad(i::text, 6, '0'), 'local', 1, ARRAY[0, cos(i), sin(i)], 0.3
  FROM generate_series(1, $n - 3) AS i;
UPDATE ${model}_info SET version = nextval('perpca_model_version');
};
}
$node->safe_psql('postgres', 'CREATE EXTENSION perpca;' . grow_sql('big', 20000) . grow_sql('mid', 3000));
is($node->safe_psql('postgres', q{SELECT count(*) FROM perpca_component_info('big') WHERE kind = 'local'}),
	'20000', 'a model of 20,000 clients');

my $s = $node->background_psql('postgres');
my $pid = $s->query_safe(q{SET work_mem = '1MB'; SELECT pg_backend_pid()});
sub peak_kb
{
	my $status = slurp_file("/proc/$pid/status");
	my ($kb) = $status =~ /^VmHWM:\s+(\d+) kB/m;
	return $kb;
}
# Load both models into the backend's cache first.
$s->query_safe(q{SELECT count(*) FROM perpca_component_info('big'); SELECT count(*) FROM perpca_component_info('mid')});
my $base = peak_kb();
ok($base > 0, "backend peak after loading the models: $base kB");

is($s->query_safe(q{SELECT count(*) FROM (SELECT perpca_similarity('big') LIMIT 3000000) AS p}),
	'3000000', '20,000 clients: the first 3,000,000 pairs stream (select list, LIMIT)');
my $after_big = peak_kb();
cmp_ok($after_big - $base, '<', 64 * 1024,
	"20,000 clients: the backend grew by " . ($after_big - $base) . " kB (bound 65536 kB)");

is($s->query_safe(q{SELECT count(*), count(DISTINCT client_a) FROM perpca_similarity('mid')}),
	'4498500|2999', '3,000 clients: every pair once (in FROM: a tuplestore that spills)');
my $after_mid = peak_kb();
cmp_ok($after_mid - $base, '<', 64 * 1024,
	"3,000 clients, all 4,498,500 pairs: the backend grew by " . ($after_mid - $base) . " kB (bound 65536 kB)");

is($s->query_safe(q{SELECT count(*) FROM perpca_similarity('mid', all_pairs => true) WHERE distance = 0 AND client_a = client_b}),
	'3000', 'all_pairs: each client with itself at distance 0');
my $after_all = peak_kb();
cmp_ok($after_all - $base, '<', 64 * 1024,
	"3,000 clients, all 9,000,000 ordered pairs: the backend grew by " . ($after_all - $base) . " kB (bound 65536 kB)");
$s->quit;
$node->stop;
done_testing();
