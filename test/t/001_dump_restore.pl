# 001_dump_restore.pl -- perpca_stats values (dense and thin) and stored models
# survive pg_dump/pg_restore and
# binary COPY bit for bit; a backend that used perpca runs exactly one thread.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PerpcaTest;

# Worst case for BLAS threading: ask OpenBLAS for 4 threads.  It starts its
# pool when the library is loaded; _PG_init must stop it again.
delete $ENV{$_} for qw(OMP_NUM_THREADS GOTO_NUM_THREADS OPENBLAS_MAIN_FREE);
$ENV{OPENBLAS_NUM_THREADS} = '4';

my $node = start_node('main');

$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql(
	'src', q{
CREATE EXTENSION perpca;
CREATE TABLE t (id int PRIMARY KEY, what text NOT NULL, s perpca_stats);

-- d = 1, large offset
INSERT INTO t SELECT 1, 'd=1 offset 1e6', perpca_stats(ARRAY[1e6 + 0.1 * i])
FROM generate_series(1, 100) AS i;

-- d = 5, offsets of +-1e6 with small spread (catastrophic-cancellation bait)
INSERT INTO t SELECT 2, 'd=5 offset 1e6',
  perpca_stats(ARRAY[1e6 + sin(i), -1e6 + cos(i), 1e6 + sin(2 * i) / 3,
                     1e-3 * i, 7.0 / i])
FROM generate_series(1, 500) AS i;

-- d = 5, tiny values, one of them subnormal
INSERT INTO t SELECT 3, 'd=5 tiny incl. subnormal 5e-324',
  perpca_stats(ARRAY[1e-12 * sin(i), 1e-12 * cos(i), 1e-300 * i,
                     -1e-15 * i, 5e-324])
FROM generate_series(1, 50) AS i;

-- d = 300: about 360 kB, so stored out of line (TOAST)
INSERT INTO t SELECT 4, 'd=300',
  perpca_stats(ARRAY(SELECT sin(i * j * 0.001) + (j % 7) * 1e3
                     FROM generate_series(1, 300) AS j ORDER BY j))
FROM generate_series(1, 400) AS i;

-- a single row (zero co-moment), a merge of groups, and a NULL
INSERT INTO t SELECT 5, 'n=1', perpca_stats(ARRAY[1.5, -2.5, 3.25, 0, 1e6]);
INSERT INTO t SELECT 6, 'merged', perpca_merge(s) FROM t WHERE id IN (2, 5);
INSERT INTO t VALUES (7, 'null', NULL);

-- a thin value: 5 rows in d = 40 are kept as rows, not as a 40 x 40 matrix
INSERT INTO t SELECT 8, 'thin d=40 n=5',
  perpca_stats(ARRAY(SELECT 1e3 + sin(i * j) FROM generate_series(1, 40) AS j ORDER BY j))
FROM generate_series(1, 5) AS i;

-- sketches (0.4.0): shrunk (300 rows, ell = 4), exact (3 rows), with rows
-- skipped, and one merged with exact values
INSERT INTO t SELECT 9, 'sketch d=12 ell=4',
  perpca_sketch(ARRAY(SELECT 1e6 + sin(i * j) * j FROM generate_series(1, 12) AS j ORDER BY j), 4 ORDER BY i)
FROM generate_series(1, 300) AS i;
INSERT INTO t SELECT 10, 'sketch exact, skipped',
  perpca_sketch(CASE WHEN i = 2 THEN ARRAY[1, NULL, 3, 4]::float8[] ELSE ARRAY[i, i * i, -i, 0.5]::float8[] END, 3, 'skip' ORDER BY i)
FROM generate_series(1, 4) AS i;
INSERT INTO t SELECT 11, 'sketch merged with exact', perpca_merge(s ORDER BY k) FROM (
  SELECT 1 AS k, s FROM t WHERE id = 9
  UNION ALL SELECT 2, perpca_stats(ARRAY(SELECT cos(i * j) FROM generate_series(1, 12) AS j ORDER BY j))
  FROM generate_series(1, 20) AS i) q;

-- a stored model (plain tables + the extension's version sequence)
CREATE TABLE obs AS
  SELECT i % 4 AS client, ARRAY(SELECT sin(i * j) + (i % 4) * cos(j) FROM generate_series(1, 6) AS j ORDER BY j) AS x
  FROM generate_series(1, 400) AS i;
SELECT model_name FROM perpca_train('m', 'SELECT client, perpca_stats(x) FROM public.obs GROUP BY client', 2, 1);
SELECT outcome FROM perpca_refresh('m');
-- a model with calibrated control limits (its rows and split in the view mc_calibration)
SET client_min_messages = error;
SELECT model_name FROM perpca_train('mc', 'SELECT client, x FROM public.obs', 2, 1, calibration => 0.25);
RESET client_min_messages;
});
is($node->safe_psql('src', q{SELECT perpca_stats_form(s) FROM t WHERE id = 8}), 'thin',
	'the d=40 value with 5 rows is thin');

# a model's content and what a projection query computes from it
sub model_snapshot
{
	my ($db) = @_;
	return $node->safe_psql($db, q{
SELECT md5(string_agg(format('%s|%s|%s|%s|%s', client, kind, component, pc, variance), ';'
                      ORDER BY kind, client, component)) FROM m_components;
SELECT md5(string_agg(format('%s|%s|%s', client, n, mean), ';' ORDER BY client)) FROM m_clients;
SELECT version FROM m_info;
SELECT sum(perpca_model_error('m', client::text, x)) FROM obs;
SELECT last_value FROM perpca_model_version;
SELECT string_agg(concat_ws('|', entry, version, at, kind, clients, rows, rounds_run, converged, objective, role, outcome),
                  ';' ORDER BY entry) FROM perpca_model_history('m');
SELECT source_view, c.relkind, pg_get_userbyid(c.relowner), pg_get_viewdef(c.oid)
  FROM m_info, pg_class c WHERE c.oid = 'public.m_source'::regclass;
});
}
my $model_orig = model_snapshot('src');

# a calibrated model: its split, stored scores, report, and the calibrated limits it answers
sub calibrated_snapshot
{
	my ($db) = @_;
	return $node->safe_psql($db, q{
SELECT calibration, calibration_split, calibration_rows, md5(calibration_scores::text), flagged_gaussian, flagged_calibrated
  FROM mc_info;
SELECT md5(string_agg(format('%s|%s|%s', client, calibration_rows, calibration_scores), ';' ORDER BY client)) FROM mc_clients;
SELECT count(*) FILTER (WHERE heldout), pg_get_userbyid(c.relowner)
  FROM mc_calibration, pg_class c WHERE c.oid = 'public.mc_calibration'::regclass GROUP BY c.relowner;
SELECT sum(m.t2_limit + m.q_limit), count(*) FILTER (WHERE m.out_of_control)
  FROM obs o, perpca_model_monitor('mc', o.client::text, o.x, 0.05, limits => 'calibrated') m;
});
}
my $calibrated_orig = calibrated_snapshot('src');
like($calibrated_orig, qr/^0\.25\|abs\(hash_record_extended/, 'the calibrated model records its share and split');

is( $node->safe_psql(
		'src', q{SELECT string_agg(id || ':' || coalesce(perpca_dim(s), 0), ' ' ORDER BY id) FROM t}),
	'1:1 2:5 3:5 4:300 5:5 6:5 7:0 8:40 9:12 10:4 11:12',
	'source values have the intended dimensions');
is( $node->safe_psql(
		'src', q{SELECT pg_relation_size(reltoastrelid) > 0 FROM pg_class WHERE relname = 't'}),
	't',
	'the d=300 value is stored in the TOAST table');

# text output and send bytes of every value, keyed by id
sub snapshot
{
	my ($db, $table) = @_;
	my $out = $node->safe_psql($db,
		"SELECT id, what, coalesce(s::text, 'NULL'), "
		  . "coalesce(encode(perpca_stats_send(s), 'hex'), 'NULL') "
		  . "FROM $table ORDER BY id");
	my %snap;
	for my $line (split /\n/, $out)
	{
		my ($id, $what, $text, $bytes) = split /\|/, $line;
		$snap{$id} = { what => $what, text => $text, bytes => $bytes };
	}
	return \%snap;
}

sub compare
{
	my ($label, $want, $got) = @_;
	is(scalar(keys %$got), scalar(keys %$want), "$label: row count");
	for my $id (sort { $a <=> $b } keys %$want)
	{
		my $w = $want->{$id};
		my $g = $got->{$id};
		my $what = $w->{what};
		ok(defined $g, "$label: row $id ($what) present") or next;
		ok($g->{text} eq $w->{text}, "$label: $what: identical text output")
		  or diag("lengths " . length($w->{text}) . " vs " . length($g->{text}));
		ok($g->{bytes} eq $w->{bytes},
			"$label: $what: identical perpca_stats_send bytes")
		  or diag("lengths " . length($w->{bytes}) . " vs " . length($g->{bytes}));
	}
	return;
}

my $orig = snapshot('src', 't');

# each value, through its text form and back, in the source database
for my $id (sort { $a <=> $b } keys %$orig)
{
	my ($ret, $out, $err) = $node->psql('src',
		"SELECT s::text::perpca_stats::text IS NOT DISTINCT FROM s::text FROM t WHERE id = $id");
	ok($ret == 0 && $out eq 't', "text round trip: $orig->{$id}{what}")
	  or diag($err);
}
ok(length($orig->{4}{bytes}) > 2 * 8 * 45000, 'the d=300 value has its full size');

my $tmp = PostgreSQL::Test::Utils::tempdir;

# custom-format dump, pg_restore into a new database
$node->command_ok(
	[ 'pg_dump', '-Fc', '-d', 'src', '-f', "$tmp/src.dump" ],
	'pg_dump -Fc');
$node->safe_psql('postgres', 'CREATE DATABASE dst_custom');
$node->command_ok(
	[ 'pg_restore', '--exit-on-error', '-d', 'dst_custom', "$tmp/src.dump" ],
	'pg_restore');
compare('pg_restore', $orig, snapshot('dst_custom', 't'));
is(model_snapshot('dst_custom'), $model_orig, 'pg_restore: the model, its history and its projections are identical');
like($model_orig, qr/\|train\|.*;2\|.*\|refresh\|.*\|unchanged$/m, 'the history dumped: the train and an unchanged refresh');
is($node->safe_psql('dst_custom', q{SELECT entry, outcome FROM perpca_refresh('m')}), '3|unchanged',
	'pg_restore: the restored model refreshes and its history goes on');
is(calibrated_snapshot('dst_custom'), $calibrated_orig,
	'pg_restore: the calibrated model, its split and its calibrated limits are identical');
$node->safe_psql('dst_custom', q{
UPDATE mc_clients SET calibration_rows = NULL, calibration_scores = NULL;
UPDATE mc_info SET calibration_rows = NULL, calibration_scores = NULL, flagged_gaussian = NULL, flagged_calibrated = NULL;
SET client_min_messages = error;
SELECT outcome FROM perpca_refresh('mc', warm => false);});
is(calibrated_snapshot('dst_custom'), $calibrated_orig,
	'pg_restore: a refresh of the restored model recomputes the same calibration from its bound split');

# plain SQL dump, restored with psql
$node->command_ok(
	[ 'pg_dump', '-Fp', '-d', 'src', '-f', "$tmp/src.sql" ],
	'pg_dump -Fp');
$node->safe_psql('postgres', 'CREATE DATABASE dst_plain');
$node->command_ok(
	[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', 'dst_plain', '-f', "$tmp/src.sql" ],
	'psql restore of the plain dump');
compare('plain dump', $orig, snapshot('dst_plain', 't'));
is(model_snapshot('dst_plain'), $model_orig, 'plain dump: the model, its history and its projections are identical');
is(calibrated_snapshot('dst_plain'), $calibrated_orig, 'plain dump: the calibrated model and its limits are identical');

# binary COPY goes through perpca_stats_send / perpca_stats_recv
$node->safe_psql('src', qq{
COPY t TO '$tmp/t.bin' WITH (FORMAT binary);
CREATE TABLE t_bin (LIKE t);
COPY t_bin FROM '$tmp/t.bin' WITH (FORMAT binary);
});
compare('binary COPY', $orig, snapshot('src', 't_bin'));

# A backend that loaded perpca and ran BLAS work must have exactly one
# thread: its Threads line is read by the backend itself.
my $threads = $node->safe_psql(
	'src', q{
SELECT perpca_dim(perpca_stats(ARRAY(SELECT sin(i * j) FROM generate_series(1, 200) AS j ORDER BY j)))
FROM generate_series(1, 3000) AS i;
SELECT count(*) FROM (SELECT perpca_covariance(s) FROM t WHERE s IS NOT NULL) AS c;
SELECT (regexp_match(pg_read_file('/proc/self/status'), 'Threads:\s*(\d+)'))[1];
});
my @lines = split /\n/, $threads;
is($lines[0], '200', 'the aggregate ran in this backend');
is($lines[-1], '1', 'backend that used perpca has exactly 1 thread');

$node->stop;
done_testing();
