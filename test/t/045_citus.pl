# 045_citus.pl -- perpca on a real Citus cluster: a coordinator and two workers.
#
# readings(client, region, x) is distributed by client; readings_local holds
# the same rows, each client's in the same order, in a plain table.  Checked:
#   - GROUP BY client: perpca_stats runs whole on the workers, bit-identical to
#     the plain table;
#   - GROUP BY region / no GROUP BY: perpca_stats pulls every raw row to the
#     coordinator, perpca_stats_distributed aggregates on the workers and ships
#     one state per group and shard (rows and bytes measured), with the plain
#     table's statistics;
#   - perpca_fit, perpca_train, perpca_refresh on the coordinator: the plain
#     table's components, bit for bit;
#   - a stored model in reference tables: projection functions pushed down to
#     the workers read the model there, with the coordinator's results.
# Citus comes from scripts/prepare.sh (scripts/test.sh builds it when the source
# is there); without it the test skips.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PerpcaTest;

if ($ENV{PERPCA_CITUS_FAILED})
{
	fail("Citus is available: $ENV{PERPCA_CITUS_FAILED}");
	done_testing();
	exit;
}
my $pkglibdir = `pg_config --pkglibdir`;
chomp $pkglibdir;
plan skip_all => 'Citus is not installed in this PostgreSQL installation ('
  . ($ENV{PERPCA_CITUS_SKIP} // "no citus.so in $pkglibdir; scripts/test.sh builds it with scripts/prepare.sh extras") . ')'
  unless -f "$pkglibdir/citus.so";

my $d = 6;         # dimension of a row
my $rows = 700;    # rows per client (client 10 has 2: a thin value)
my $nclients = 10;
my $shards = 4;

# A Citus node: serial plans, so that a group's rows always meet the
# aggregate in the same order (the last bits of a statistic depend on it).
sub citus_node
{
	my ($name) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf(
		'postgresql.conf', qq{
shared_preload_libraries = 'citus'
citus.local_hostname = '@{[ $node->host ]}'
max_parallel_workers_per_gather = 0
});
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION citus');
	return $node;
}

my $coord = citus_node('coordinator');
my @workers = map { citus_node("worker$_") } 1 .. 2;
$coord->safe_psql('postgres',
	"SELECT citus_set_coordinator_host('@{[ $coord->host ]}', @{[ $coord->port ]})");
$coord->safe_psql('postgres',
	"SELECT citus_add_node('@{[ $_->host ]}', @{[ $_->port ]})") for @workers;
is($coord->safe_psql('postgres', 'SELECT count(*) FROM citus_get_active_worker_nodes()'),
	'2', 'the coordinator sees two workers');

# perpca is created on the coordinator only; Citus creates it on the workers.
$coord->safe_psql('postgres', 'CREATE EXTENSION perpca');
is($_->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'perpca'"),
	$coord->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'perpca'"),
	$_->name . ': Citus created perpca there') for @workers;

# Deterministic rows FROM..TO of each client, offsets and scales per client,
# a NULL every 50th row; client 10 has rows 1 and 2 only (a thin value).
sub rows_sql
{
	my ($from, $to) = @_;
	return qq{
SELECT c, c % 3, CASE WHEN i % 50 = 0 THEN NULL ELSE
       ARRAY(SELECT 100.0 * c + (j + 1) * sin(i * 0.73 * (j + 1) + c)
                    + 0.01 * c * cos(i * 0.011 * (j + 3))
               FROM generate_series(0, $d - 1) AS j) END
  FROM generate_series(1, $nclients) AS c, generate_series($from, $to) AS i
 WHERE c < $nclients OR i <= 2
 ORDER BY c, i};
}
my $rows_sql = rows_sql(1, $rows);
$coord->safe_psql(
	'postgres', qq{
SET citus.shard_count = $shards;
CREATE TABLE readings (client int NOT NULL, region int NOT NULL, x float8[]);
SELECT create_distributed_table('readings', 'client');
INSERT INTO readings $rows_sql;
-- the plain copy, pulled shard by shard: each client's rows in shard order
CREATE TABLE readings_local AS SELECT * FROM readings;
\\i @{[ test_path('test/include/compare.sql') ]}
});
my $nonnull = ($nclients - 1) * ($rows - $rows / 50) + 2;
is($coord->safe_psql('postgres', 'SELECT count(x), count(DISTINCT client) FROM readings_local'),
	"$nonnull|$nclients", 'the plain copy holds every row');

# EXPLAIN VERBOSE of a query, with every task shown.
sub plan_of
{
	my ($query) = @_;
	return $coord->safe_psql('postgres',
		"SET citus.explain_all_tasks = on; EXPLAIN (VERBOSE, COSTS OFF) $query");
}

# The worker queries of a plan, as [node port, query].
sub tasks_of
{
	my ($plan) = @_;
	my @tasks;
	while ($plan =~ /Query: (.*)\n\s*Node: host=\S+ port=(\d+)/g)
	{
		push @tasks, [ $2, $1 ];
	}
	return @tasks;
}

# Rows and bytes (text) the coordinator receives for a plan: each worker
# query run on its worker.
sub moved
{
	my ($plan) = @_;
	my %node = map { $_->port => $_ } ($coord, @workers);
	my ($nrows, $nbytes) = (0, 0);
	for my $t (tasks_of($plan))
	{
		my $out = $node{ $t->[0] }->safe_psql('postgres', $t->[1]);
		next if $out eq '';
		my @lines = split /\n/, $out;
		$nrows += @lines;
		$nbytes += length($out) + 1;
	}
	return ($nrows, $nbytes);
}

# ---- GROUP BY the distribution column: pushed down whole --------------------

my $by_client = 'SELECT client, perpca_stats(x) AS s FROM readings GROUP BY client';
my $plan = plan_of($by_client);
note $plan;
like($plan, qr/\A\s*Custom Scan \(Citus Adaptive\)/, 'GROUP BY client: nothing left to do on the coordinator');
is(scalar(grep { $_->[1] =~ /perpca_stats\(x\).*GROUP BY client$/ } tasks_of($plan)),
	$shards, 'GROUP BY client: each shard runs perpca_stats ... GROUP BY client');
my $same_bits = q{
SELECT count(*), count(*) FILTER (WHERE a.s::text = b.s::text)
  FROM (%s) a
  FULL JOIN (SELECT client, perpca_stats(x) AS s FROM readings_local GROUP BY client) b USING (client)};
is($coord->safe_psql('postgres', sprintf($same_bits, $by_client)),
	"$nclients|$nclients", 'GROUP BY client: bit-identical to the plain table');
is( $coord->safe_psql('postgres',
		sprintf($same_bits, 'SELECT client, perpca_stats_distributed(x) AS s FROM readings GROUP BY client')),
	"$nclients|$nclients",
	'perpca_stats_distributed GROUP BY client: bit-identical to perpca_stats on the plain table');

# ---- other groupings: raw rows, or partial states -------------------------

my $by_region_plain = 'SELECT region, perpca_stats(x) AS s FROM readings GROUP BY region';
my $by_region = 'SELECT region, perpca_stats_distributed(x) AS s FROM readings GROUP BY region';
my $plan_plain = plan_of($by_region_plain);
$plan = plan_of($by_region);
note $plan_plain, "\n", $plan;
is(scalar(grep { $_->[1] =~ /^SELECT region, x AS \S+ FROM \S+ readings WHERE true$/ } tasks_of($plan_plain)),
	$shards, 'perpca_stats GROUP BY region: every shard ships its raw rows (control)');
is( scalar(grep { $_->[1] =~ /worker_partial_agg\('public\.perpca_stats_distributed\(double precision\[\]\)'::regprocedure, x\).* GROUP BY region$/ }
		tasks_of($plan)),
	$shards, 'perpca_stats_distributed GROUP BY region: each shard aggregates (worker_partial_agg)');
like($plan, qr/coord_combine_agg\(/, 'the coordinator combines the partial states (coord_combine_agg)');

my ($rows_before, $bytes_before) = moved($plan_plain);
my ($rows_after, $bytes_after) = moved($plan);
my $groups = $coord->safe_psql('postgres',
	'SELECT count(DISTINCT (get_shard_id_for_distribution_column(\'readings\', client), region)) FROM readings');
diag "GROUP BY region, $shards shards: perpca_stats moves $rows_before rows ($bytes_before bytes as text), "
  . "perpca_stats_distributed $rows_after rows ($bytes_after bytes)";
is($rows_before, ($nclients - 1) * $rows + 2, 'perpca_stats: one row moved per table row');
is($rows_after, $groups, 'perpca_stats_distributed: one state moved per group and shard');
cmp_ok($bytes_after * 10, '<', $bytes_before, 'perpca_stats_distributed moves less than a tenth of the bytes');

my $region_close = q{
SELECT count(*),
       count(*) FILTER (WHERE perpca_count(a.s) = perpca_count(b.s)),
       count(*) FILTER (WHERE stats_close(a.s, b.s, 1e-12))
  FROM (%s) a
  FULL JOIN (SELECT region, perpca_stats(x) AS s FROM readings_local GROUP BY region) b USING (region)};
is($coord->safe_psql('postgres', sprintf($region_close, $by_region)),
	'3|3|3', 'GROUP BY region: the plain table\'s statistics (exact counts, within 1e-12)');
is( $coord->safe_psql(
		'postgres', q{
SELECT perpca_count(a), stats_close(a, (SELECT perpca_stats(x) FROM readings_local), 1e-12)
  FROM (SELECT perpca_stats_distributed(x) AS a FROM readings) q}),
	"$nonnull|t", 'whole table: the plain table\'s statistics');
like(plan_of('SELECT perpca_stats_distributed(x) FROM readings'),
	qr/worker_partial_agg.*FROM public\.readings_\d+ readings WHERE true$/m,
	'whole table: aggregated on the workers');

# Rows with gaps: perpca_stats_distributed(x, 'skip') leaves them
# out on the workers and the coordinator's combine adds the counts.
my $gappy = q{CASE WHEN abs(hashfloat8(x[1])) % 5 = 0 THEN ARRAY[NULL::float8] || x[2:] ELSE x END};
my $skip_plan = plan_of("SELECT region, perpca_stats_distributed($gappy, 'skip') FROM readings GROUP BY region");
note $skip_plan;
like($skip_plan, qr/worker_partial_agg/, "perpca_stats_distributed(x, 'skip') GROUP BY region: aggregated on the workers");
is( $coord->safe_psql(
		'postgres', qq{
SELECT count(*), count(*) FILTER (WHERE perpca_skipped(a.s) = b.skipped AND perpca_count(a.s) = b.n
                                        AND stats_close(a.s, b.complete, 1e-12))
  FROM (SELECT region, perpca_stats_distributed($gappy, 'skip') AS s FROM readings GROUP BY region) a
  FULL JOIN (SELECT region, count(*) FILTER (WHERE abs(hashfloat8(x[1])) % 5 = 0) AS skipped,
                    count(*) FILTER (WHERE abs(hashfloat8(x[1])) % 5 <> 0) AS n,
                    perpca_stats(x) FILTER (WHERE abs(hashfloat8(x[1])) % 5 <> 0) AS complete
               FROM readings_local WHERE x IS NOT NULL GROUP BY region) b USING (region)}),
	'3|3', "perpca_stats_distributed(x, 'skip') GROUP BY region: exact skipped counts, the complete rows' statistics");

# Wide rows (d = 300, stored out of line): a thin group's state keeps its
# rows' TOAST pointers on the worker until the state is output there.
$coord->safe_psql(
	'postgres', q{
CREATE TABLE wide (client int NOT NULL, region int NOT NULL, x float8[]);
ALTER TABLE wide ALTER COLUMN x SET STORAGE EXTERNAL;
SELECT create_distributed_table('wide', 'client', colocate_with => 'readings');
INSERT INTO wide
SELECT c, c % 3, ARRAY(SELECT sin(i * 0.37 + j * 1.1 + c) * 10 + cos(j) FROM generate_series(1, 300) AS j)
  FROM generate_series(1, 9) AS c, generate_series(1, 40) AS i ORDER BY c, i;
CREATE TABLE wide_local AS SELECT * FROM wide;
});
is( $coord->safe_psql(
		'postgres', q{
SELECT count(*), count(*) FILTER (WHERE perpca_stats_form(a.s) = 'thin'),
       count(*) FILTER (WHERE stats_close(a.s, b.s, 1e-12))
  FROM (SELECT region, perpca_stats_distributed(x) AS s FROM wide GROUP BY region) a
  FULL JOIN (SELECT region, perpca_stats(x) AS s FROM wide_local GROUP BY region) b USING (region)}),
	'3|3|3', 'd = 300, rows in TOAST, thin groups: the plain table\'s statistics');

# perpca_merge_distributed: per-client statistics stored in a distributed
# table, merged by region on the workers.
$coord->safe_psql(
	'postgres', q{
CREATE TABLE client_stats AS SELECT client, region, perpca_stats(x) AS s FROM readings_local GROUP BY client, region;
SELECT create_distributed_table('client_stats', 'client', colocate_with => 'readings');
});
my $merge = 'SELECT region, perpca_merge_distributed(s) AS s FROM client_stats GROUP BY region';
like(plan_of($merge), qr/worker_partial_agg\('public\.perpca_merge_distributed\(public\.perpca_stats\)'::regprocedure, s\)/,
	'perpca_merge_distributed GROUP BY region: merged on the workers');
is($coord->safe_psql('postgres', sprintf($region_close, $merge)),
	'3|3|3', 'perpca_merge_distributed: the plain table\'s statistics');

# ---- fits on the coordinator ----------------------------------------------

my $fit_same = q{
SELECT count(*), count(*) FILTER (WHERE a.pc::text = b.pc::text AND a.variance = b.variance)
  FROM (%s) a
  FULL JOIN (%s) b
    ON a.kind = b.kind AND a.component = b.component AND a.client IS NOT DISTINCT FROM b.client};
my $fit = "SELECT client, kind, component, pc, variance FROM perpca_fit('%s', 2, 1)";
my $q_dist = 'SELECT client::text, perpca_stats(x) FROM readings GROUP BY client ORDER BY client';
my $q_local = 'SELECT client::text, perpca_stats(x) FROM readings_local GROUP BY client ORDER BY client';
my $q_partial = 'SELECT client::text, perpca_stats_distributed(x) FROM readings GROUP BY client ORDER BY client';
is($coord->safe_psql('postgres', sprintf($fit_same, sprintf($fit, $q_dist), sprintf($fit, $q_local))),
	(2 + $nclients) . '|' . (2 + $nclients), 'perpca_fit over the distributed table: the plain table\'s components, bit for bit');
is($coord->safe_psql('postgres', sprintf($fit_same, sprintf($fit, $q_partial), sprintf($fit, $q_local))),
	(2 + $nclients) . '|' . (2 + $nclients), 'perpca_fit over perpca_stats_distributed: the same');

# perpca_train stages the query's rows in a temporary table with INSERT ...
# SELECT, which on Citus does not keep the query's order; the fit reads the
# staged clients in the byte order of their keys, so it sees them in the same
# order as on the plain table and stores the same model, bit for bit.
my $model_close = q{
SELECT count(*), count(*) FILTER (WHERE a.pc::text = b.pc::text AND a.variance = b.variance)
  FROM m_components a
  FULL JOIN m_local_components b
    ON a.kind = b.kind AND a.component = b.component AND a.client IS NOT DISTINCT FROM b.client};
$coord->safe_psql(
	'postgres', qq{
SELECT perpca_train('m', '$q_dist', 2, 1);
SELECT perpca_train('m_local', '$q_local', 2, 1);
});
is($coord->safe_psql('postgres', $model_close),
	(2 + $nclients) . '|' . (2 + $nclients),
	'perpca_train over the distributed table: the plain table\'s model, bit for bit');

# ---- projection inside distributed queries ----------------------------------

my $errors = 'SELECT client, sum(perpca_model_error(\'%s\', client, x)) AS e FROM %s GROUP BY client';
my ($ok, $out, $err) = $coord->psql('postgres', sprintf($errors, 'm', 'readings'));
like($err, qr/model "m" does not exist/, 'a model in plain tables is not on the workers (control)');

$coord->safe_psql('postgres',
	"SELECT create_reference_table('m_$_')") for qw(info clients components);
$plan = plan_of(sprintf($errors, 'm', 'readings'));
is(scalar(grep { $_->[1] =~ /perpca_model_error\('m'::text, client, x/ } tasks_of($plan)),
	$shards, 'the projection runs on the workers');
my $proj_same = qq{
SELECT count(*), count(*) FILTER (WHERE a.e = b.e)
  FROM (@{[ sprintf($errors, 'm', 'readings') ]}) a
  FULL JOIN (@{[ sprintf($errors, 'm', 'readings_local') ]}) b USING (client)};
is($coord->safe_psql('postgres', $proj_same), "$nclients|$nclients",
	'perpca_model_error on the workers, model in reference tables: the coordinator\'s errors over the plain table, bit for bit');
# Every row-wise model function, row by row (the plain table's side runs
# on the coordinator, which reads its own copy of the reference tables).
my $row_fns = join(' || ',
	map { "coalesce($_('m', client, x)::text, 'NULL')" }
	  qw(perpca_model_scores perpca_model_global_part perpca_model_local_part
	  perpca_model_reconstruct perpca_model_residual perpca_model_error));
$plan = plan_of("SELECT $row_fns FROM readings");
is(scalar(grep { $_->[1] =~ /perpca_model_local_part\('m'::text, client, x/ } tasks_of($plan)),
	$shards, 'the row-wise model functions run on the workers');
is( $coord->safe_psql(
		'postgres', qq{
SELECT count(*), count(*) FILTER (WHERE a.v = b.v)
  FROM (SELECT client, row_number() OVER (PARTITION BY client ORDER BY x::text) AS k, v
          FROM (SELECT client, x, $row_fns AS v FROM readings) s) a
  FULL JOIN (SELECT client, row_number() OVER (PARTITION BY client ORDER BY x::text) AS k, $row_fns AS v
               FROM readings_local) b
       USING (client, k)}),
	($nclients - 1) * $rows + 2 . '|' . (($nclients - 1) * $rows + 2),
	'scores, parts, reconstruction, residual and error of every row: the coordinator\'s, bit for bit');
is( $coord->safe_psql(
		'postgres', q{
SELECT count(*), count(*) FILTER (WHERE a.error = b.error AND a.explained_ratio = b.explained_ratio)
  FROM perpca_evaluate('m', 'SELECT client, x FROM readings') a
  FULL JOIN perpca_evaluate('m', 'SELECT client, x FROM readings_local') b USING (client)}),
	"$nclients|$nclients", 'perpca_evaluate over the distributed table: the plain table\'s figures');

# A refresh on the coordinator writes the reference tables; the workers see
# the new version at once.
my $more = rows_sql($rows + 1, $rows + 100);
$coord->safe_psql(
	'postgres', qq{
INSERT INTO readings $more;
INSERT INTO readings_local $more;
SELECT perpca_refresh('m');
SELECT perpca_refresh('m_local');
});
is($coord->safe_psql('postgres', 'SELECT version > 1 FROM m_info'), 't', 'the model was refreshed');
is($coord->safe_psql('postgres', $model_close),
	(2 + $nclients) . '|' . (2 + $nclients),
	'perpca_refresh over the distributed table: the plain table\'s model, bit for bit');
is($coord->safe_psql('postgres', $proj_same), "$nclients|$nclients",
	'after the refresh the workers project with the new model');

# perpca_personalize writes the reference tables from the coordinator: the
# new client's local components equal those of the plain-table model.
$coord->safe_psql(
	'postgres', q{
CREATE TABLE newcomer AS SELECT perpca_stats(x) AS s FROM readings_local WHERE client = 1;
SELECT count(*) FROM perpca_personalize('m', 'newcomer', (SELECT s FROM newcomer));
SELECT count(*) FROM perpca_personalize('m_local', 'newcomer', (SELECT s FROM newcomer));
});
is($coord->safe_psql('postgres', $model_close),
	(2 + $nclients + 1) . '|' . (2 + $nclients + 1),
	'perpca_personalize on a model in reference tables: the plain table\'s components');

# Model tables distributed by a column are refused with a clear error.
$coord->safe_psql(
	'postgres', qq{
SELECT perpca_train('h', '$q_local', 2, 1);
SELECT create_distributed_table('h_clients', 'client');
});
($ok, $out, $err) = $coord->psql('postgres', "SELECT perpca_model_error('h', 3, ARRAY[1,2,3,4,5,6]::float8[])");
like($err, qr/model "h" is stored in a distributed table/, 'a model in distributed tables: a clear error');

$_->stop for ($coord, @workers);
done_testing();
