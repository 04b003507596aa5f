# 096_python.pl -- docs/python.md's two blocks run as they stand, each
# alone (the tables the blocks make dropped before each): the psycopg 3
# block (lists with None, a numpy row as .tolist(), a float8[] result, COPY
# of perpca_stats out and in, text and binary) and the psycopg2 block (COPY
# through copy_expert), with Debian's /usr/bin/python3 against a server that
# has the README's first model (readings, sales) and nothing else.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PerpcaTest;

my $python = '/usr/bin/python3';
plan skip_all => "needs $python with numpy, psycopg (python3-psycopg) and psycopg2 (python3-psycopg2)"
  unless -x $python && system($python, '-c', 'import numpy, psycopg, psycopg2') == 0;

# The ```python blocks of docs/python.md, in order.
open(my $fh, '<', test_path('docs/python.md')) or die "docs/python.md: $!";
my (@blocks, $in);
while (my $line = <$fh>)
{
	if (!defined $in && $line =~ /^```python/) { $in = ''; next; }
	if (defined $in && $line =~ /^```/) { push @blocks, $in; undef $in; next; }
	$in .= $line if defined $in;
}
close($fh);
is(scalar(@blocks), 2, 'docs/python.md has a psycopg 3 and a psycopg2 block');
like($blocks[0], qr/import psycopg\b/, 'the first block is psycopg 3');
like($blocks[1], qr/import psycopg2/, 'the second block is psycopg2');

my $node = start_node('python');
$node->safe_psql('postgres', q{
CREATE EXTENSION perpca;
CREATE TABLE readings AS SELECT 'store ' || (i % 4) AS store,
    ARRAY[random(), random(), i % 4 * random(), random()]::float8[] AS x FROM generate_series(1, 4000) i;
SELECT count(*) FROM perpca_train('sales', 'SELECT store, perpca_stats(x) FROM public.readings GROUP BY store',
                                  n_global => 1, n_local => 1);
});

# Run a block with libpq's variables pointing at the node.
sub run_block
{
	my ($code) = @_;
	local $ENV{PGHOST} = $node->host;
	local $ENV{PGPORT} = $node->port;
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run([ $python, '-c', $code ], '>', \$out, '2>', \$err);
	return ($ok, $out, $err);
}

# Back to the first model alone: what a block made is dropped.
sub fresh
{
	$node->safe_psql('postgres', 'DROP TABLE IF EXISTS py_rows, py_stats');
}

# py_stats against the aggregate's statistics: rows, and rows equal bit for bit.
my $same_stats = q{
SELECT count(*), count(*) FILTER (WHERE p.stats::text = r.stats::text
                                   AND perpca_stats_send(p.stats) = perpca_stats_send(r.stats))
  FROM py_stats p JOIN (SELECT store, perpca_stats(x) AS stats FROM readings GROUP BY store) r USING (store)};

# The psycopg2 block alone (it comes second on the page: it must not need the first).
fresh();
my ($ok, $out, $err) = run_block($blocks[1]);
ok($ok, 'the psycopg2 block runs alone') or diag($err);
is($node->safe_psql('postgres', $same_stats), '4|4', 'its binary COPY gives back the same statistics');

# The psycopg 3 block alone: two copies of the four groups' statistics
# (binary and text), each the same value as the aggregate's, bit for bit.
fresh();
($ok, $out, $err) = run_block($blocks[0]);
ok($ok, 'the psycopg 3 block runs alone') or diag($err);
is($out, "[('store 1', 1, 1), ('store 2', 1, 0)]\n", 'a None element is skipped and counted');
is($node->safe_psql('postgres', $same_stats), '8|8', 'COPY in text and binary gives back the same statistics');
is($node->safe_psql('postgres', 'SELECT count(*) FROM py_rows'), '3', 'the rows went in');

done_testing();
