# 010_fdw_shards.pl -- perpca statistics over postgres_fdw shards.
#
# Two shard clusters hold the raw rows of readings(client, x); a coordinator
# sees them as one table partitioned by client whose partitions are
# postgres_fdw foreign tables.  With the extension shippable and
# partition-wise aggregation on, perpca_stats runs on the shards (only one
# perpca_stats value per client crosses the wire) and the coordinator's
# per-client statistics are bit-for-bit those of a single node holding all
# rows; perpca_fit over the sharded table returns the single-node fit.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PerpcaTest;

my $d = 6;              # dimension of a row
my $rows = 700;         # rows per client
my %clients = (shard1 => [ 1, 2, 3, 4 ], shard2 => [ 5, 6, 7, 8, 9 ]);

# Same bits on every cluster: serial plans only (a parallel plan changes the
# order in which rows reach the aggregate, hence the last bits).
my $serial = "max_parallel_workers_per_gather = 0\n";

# Deterministic rows of the given clients, with offsets and scales that
# differ per client and a NULL every 50th row (skipped by perpca_stats).
sub rows_sql
{
	my ($list) = @_;
	my $in = join(', ', @$list);
	return qq{
SELECT c, CASE WHEN i % 50 = 0 THEN NULL ELSE
       ARRAY(SELECT 100.0 * c + (j + 1) * sin(i * 0.73 * (j + 1) + c)
                    + 0.01 * c * cos(i * 0.011 * (j + 3))
               FROM generate_series(0, $d - 1) AS j) END
  FROM unnest(ARRAY[$in]) AS c, generate_series(1, $rows) AS i
 ORDER BY c, i};
}

my %shard;
for my $name (sort keys %clients)
{
	my $node = start_node($name, $serial);
	$node->safe_psql(
		'postgres', qq{
CREATE EXTENSION perpca;
CREATE TABLE readings (client int NOT NULL, x float8[]);
INSERT INTO readings } . rows_sql($clients{$name}) . q{;
ANALYZE readings;
});
	$shard{$name} = $node;
}

my $coord = start_node('coordinator', $serial);

my $setup = q{
CREATE EXTENSION perpca;
CREATE EXTENSION postgres_fdw;
CREATE TABLE readings (client int NOT NULL, x float8[]) PARTITION BY LIST (client);
};
for my $name (sort keys %clients)
{
	my $node = $shard{$name};
	my ($host, $port) = ($node->host, $node->port);
	my $in = join(', ', @{ $clients{$name} });
	$setup .= qq{
CREATE SERVER $name FOREIGN DATA WRAPPER postgres_fdw
    OPTIONS (host '$host', port '$port', dbname 'postgres',
             extensions 'perpca', use_remote_estimate 'true');
CREATE USER MAPPING FOR CURRENT_USER SERVER $name;
CREATE FOREIGN TABLE readings_$name PARTITION OF readings FOR VALUES IN ($in)
    SERVER $name OPTIONS (schema_name 'public', table_name 'readings');
};
}
$setup .= q{
ANALYZE readings;
\\i } . test_path('test/include/compare.sql') . q{
};
$coord->safe_psql('postgres', $setup);

my $nclients = 0;
$nclients += scalar @{ $clients{$_} } for keys %clients;

# ---- the aggregate is pushed down to the shards ---------------------------

my $grouped = 'SELECT client, perpca_stats(x) AS s FROM readings GROUP BY client';

# Remote SQL lines of the plan of $query (partition-wise aggregation on).
sub remote_sql
{
	my ($query) = @_;
	my $plan = $coord->safe_psql('postgres',
		"SET enable_partitionwise_aggregate = on; EXPLAIN (VERBOSE, COSTS OFF) $query");
	return ($plan, [ $plan =~ /Remote SQL: (.*)$/mg ]);
}

my ($plan, $remote) = remote_sql($grouped);
note $plan;
is(scalar @$remote, 2, 'one foreign scan per shard');
is( scalar(grep { /^SELECT client, public\.perpca_stats\(x\) FROM public\.readings GROUP BY 1$/ } @$remote),
	2,
	'each shard runs perpca_stats ... GROUP BY client itself');
unlike($plan, qr/Aggregate\s*$|HashAggregate|GroupAggregate/m,
	'no aggregation left on the coordinator');
like($plan, qr/Relations: Aggregate on/, 'the foreign scans are aggregate pushdowns');

# Control: without the extension declared shippable the raw rows come over.
$coord->safe_psql('postgres', 'ALTER SERVER shard1 OPTIONS (DROP extensions)');
my ($plan_ns, $remote_ns) = remote_sql($grouped);
$coord->safe_psql('postgres', q{ALTER SERVER shard1 OPTIONS (ADD extensions 'perpca')});
is( scalar(grep { /perpca_stats/ } @$remote_ns),
	1, 'without extensions \'perpca\' shard1 ships raw rows instead (control)');
like($plan_ns, qr/Remote SQL: SELECT client, x FROM public\.readings$/m,
	'the control plan fetches client and x');

# ---- the coordinator's answer is the single-node answer -------------------

# A single-node copy: every raw row, pulled once through the foreign tables
# in each shard's scan order, so each client's rows arrive in the same order.
$coord->safe_psql('postgres',
	'CREATE TABLE readings_local AS SELECT client, x FROM readings; ANALYZE readings_local');
is( $coord->safe_psql('postgres',
		'SELECT count(*), count(x), count(DISTINCT client) FROM readings_local'),
	join('|', $nclients * $rows, $nclients * ($rows - $rows / 50), $nclients),
	'the local copy holds every row');

my $compare = qq{
SET enable_partitionwise_aggregate = on;
WITH sharded AS ($grouped),
     single AS (SELECT client, perpca_stats(x) AS s FROM readings_local GROUP BY client)
SELECT count(*),
       count(*) FILTER (WHERE perpca_count(sh.s) = si.s_count),
       count(*) FILTER (WHERE stats_close(sh.s, si.s, 1e-12)),
       count(*) FILTER (WHERE sh.s::text = si.s::text)
  FROM sharded sh
  FULL JOIN (SELECT client, s, perpca_count(s) AS s_count FROM single) si USING (client)};
is($coord->safe_psql('postgres', $compare),
	join('|', ($nclients) x 4),
	'per-client statistics: all clients, exact counts, within 1e-12, and bit-identical text');

# Each shard computes the same value when asked directly: the text form
# carried the value across without loss.
for my $name (sort keys %clients)
{
	my $direct = $shard{$name}->safe_psql('postgres',
		'SELECT string_agg(client || \' \' || perpca_stats::text, E\'\n\' ORDER BY client) '
		  . 'FROM (SELECT client, perpca_stats(x) FROM readings GROUP BY client) q');
	my $via = $coord->safe_psql('postgres',
		'SET enable_partitionwise_aggregate = on; '
		  . "SELECT string_agg(client || ' ' || s::text, E'\\n' ORDER BY client) FROM ($grouped) q "
		  . 'WHERE client IN (' . join(', ', @{ $clients{$name} }) . ')');
	is($via, $direct, "$name: value through postgres_fdw equals the shard's own");
}

# Sanity of the comparison: a client missing one row is told apart.
is( $coord->safe_psql(
		'postgres', qq{
SELECT stats_close(sh.s, (SELECT perpca_stats(x) FROM
                            (SELECT x, row_number() OVER () AS k FROM readings_local
                              WHERE client = 3) q WHERE k > 1), 1e-12)
  FROM ($grouped) sh WHERE client = 3}),
	'f',
	'the comparison tells a client missing one row apart');

# Fleet-wide statistics: per-client values merged on the coordinator.
my $fleet = "SELECT perpca_merge(s) FROM ($grouped) q";
($plan, $remote) = remote_sql($fleet);
is( scalar(grep { /perpca_stats\(x\).*GROUP BY 1$/ } @$remote),
	2, 'fleet-wide merge: per-client aggregation still runs on the shards');
is( $coord->safe_psql(
		'postgres', qq{
SET enable_partitionwise_aggregate = on;
SELECT stats_close(($fleet), (SELECT perpca_stats(x) FROM readings_local), 1e-12),
       perpca_count(($fleet))}),
	't|' . ($nclients * ($rows - $rows / 50)),
	'fleet-wide merge equals the single-node statistics of all rows');

# ---- the fit on the coordinator is the single-node fit --------------------

# perpca_fit reads one (client, perpca_stats) row per client with SPI; on the
# coordinator that query is the pushed-down one above, so the fit sees the
# shards' statistics.  Same statistics, same client order: same components.
my $fit_cols = 'client, kind, component, pc, variance';
my $fit_sharded = "SELECT $fit_cols FROM perpca_fit("
  . "'SELECT client::text, perpca_stats(x) FROM readings GROUP BY client ORDER BY client', 2, 1)";
my $fit_single = "SELECT $fit_cols FROM perpca_fit("
  . "'SELECT client::text, perpca_stats(x) FROM readings_local GROUP BY client ORDER BY client', 2, 1)";
($plan, $remote) = remote_sql(
	'SELECT client::text, perpca_stats(x) FROM readings GROUP BY client ORDER BY client');
is(scalar(grep { /perpca_stats\(x\)/ } @$remote),
	2, 'the fit\'s input query is pushed down to both shards');
$coord->safe_psql(
	'postgres', qq{
SET enable_partitionwise_aggregate = on;
CREATE TABLE fit_sharded AS $fit_sharded;
CREATE TABLE fit_single AS $fit_single;
});
is( $coord->safe_psql(
		'postgres', q{
SELECT count(*),
       count(*) FILTER (WHERE a.kind = 'global'),
       count(*) FILTER (WHERE arrays_close(a.pc, b.pc, 1e-9, 1e-300)
                          AND abs(a.variance - b.variance) <= 1e-9 * abs(b.variance))
  FROM fit_sharded a
  FULL JOIN fit_single b
    ON a.kind = b.kind AND a.component = b.component
   AND a.client IS NOT DISTINCT FROM b.client}),
	join('|', 2 + $nclients, 2, 2 + $nclients),
	'perpca_fit on the coordinator returns the single-node components within 1e-9');

$coord->stop;
$shard{$_}->stop for keys %shard;

done_testing();
