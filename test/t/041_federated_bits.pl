# 041_federated_bits.pl -- the same bits, federated or not.
#
# Five clients (d = 24, deterministic rows generated alike on every
# cluster) are fitted on one node and federated over three layouts of the
# same clients into shards -- 3 + 2 (the layout where 0.3.0
# took 106 rounds federated and 114 on one node), 2 + 3 and 1 + 2 + 2 --
# each with the shards listed in two orders, so that they answer and are
# added in another order.  The shards return their sums exact (the layers
# of an expansion) and the coordinator stacks the start basis in the
# clients' key order, so every federated fit must take exactly the rounds
# of the single-node fit and return the same rows bit for bit: one md5.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PerpcaTest;

my $d = 24;
my $rows = 60;

# Rows of the given clients: a shared and a per-client structure with
# incommensurate frequencies, so the fit needs many rounds.
sub rows_sql
{
	my ($list) = @_;
	my $in = join(', ', @$list);
	return qq{
CREATE TABLE readings AS
SELECT c AS client,
       ARRAY(SELECT sin(i * 0.37 * (j + 1) + 1.3 * c) * (1 + 0.2 * c * cos(j))
                    + 0.6 * cos(i * (0.11 + 0.07 * c) * (j + 2))
                    + 0.05 * j * sin(i * 1.7 + j * j)
               FROM generate_series(0, $d - 1) AS j) AS x
  FROM unnest(ARRAY[$in]) AS c, generate_series(1, $rows) AS i;
CREATE TABLE stats AS SELECT client, perpca_stats(x) AS stats FROM readings GROUP BY client;
};
}

# Three layouts: which clients each shard holds.
my @layouts = (
	[ [ 1, 2, 3 ], [ 4, 5 ] ],
	[ [ 1, 4 ], [ 2, 3, 5 ] ],
	[ [5], [ 1, 3 ], [ 2, 4 ] ]);

my @shard;
for my $s (0 .. 2)
{
	my $node = start_node("shard$s");
	$node->safe_psql('postgres', 'CREATE EXTENSION perpca;');
	for my $l (0 .. $#layouts)
	{
		my $mine = $layouts[$l][$s] // [];
		my $sql = rows_sql(@$mine ? $mine : [0]);
		$sql =~ s/readings/readings_$l/g;
		$sql =~ s/\bstats AS/stats_$l AS/;
		$sql .= "DELETE FROM stats_$l WHERE client = 0;\n";
		$node->safe_psql('postgres', $sql);
	}
	push @shard, $node;
}

my $coord = start_node('coordinator');
$coord->safe_psql('postgres', 'CREATE EXTENSION perpca;' . rows_sql([ 1 .. 5 ]));

my @conninfo = map { sprintf("'host=%s port=%s dbname=postgres'", $_->host, $_->port) } @shard;
my $cols = 'client, kind, component, pc, variance';
my $md5 = q{SELECT md5(string_agg(format('%s|%s|%s|%s|%s', client, kind, component, pc, variance), ';'
                                  ORDER BY kind, client, component)) FROM fit};

for my $opts (q{init => 'dispca'}, q{init => 'best'}, q{solver => 'paper', init => 'dispca'})
{
	my $single = $coord->safe_psql('postgres', qq{
DROP TABLE IF EXISTS fit;
CREATE TABLE fit AS SELECT $cols FROM perpca_fit('SELECT client, stats FROM stats', 2, 3, $opts);
SELECT rounds_run FROM perpca_last_fit();
$md5});
	my ($rounds, $sum) = split /\n/, $single;
	note "$opts: single node $rounds rounds, md5 $sum";
	my %seen;
	for my $l (0 .. $#layouts)
	{
		my @list = @conninfo[ 0 .. $#{ $layouts[$l] } ];
		for my $order ('forward', 'reversed')
		{
			my @use = $order eq 'forward' ? @list : reverse @list;
			my $shards = 'ARRAY[' . join(', ', @use) . ']';
			my $fed = $coord->safe_psql('postgres', qq{
DROP TABLE IF EXISTS fit;
CREATE TABLE fit AS SELECT $cols FROM perpca_fit_federated($shards,
    'SELECT client, stats FROM stats_$l', 2, 3, $opts);
SELECT rounds_run FROM perpca_last_federated_fit();
$md5});
			my ($frounds, $fsum) = split /\n/, $fed;
			my $layout = join(' + ', map { scalar @$_ } @{ $layouts[$l] });
			note "$opts, layout $layout, $order: $frounds rounds, md5 $fsum";
			$seen{"$frounds $fsum"}++;
			is("$frounds $fsum", "$rounds $sum",
				"$opts, shards $layout listed $order: the single node's rounds and md5");
		}
	}
	is(scalar keys %seen, 1, "$opts: one md5 and one round count over 3 layouts x 2 orders");
}

$coord->stop;
$_->stop for @shard;

done_testing();
