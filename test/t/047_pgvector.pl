# 047_pgvector.pl -- perpca_vector on a real pgvector: vector and halfvec rows in,
# vector rows out.
#
# Checked against the float8[] path on the same numbers (v::real[]::float8[]):
#   - perpca_stats(vector) and perpca_stats(halfvec) give the same value bit for
#     bit (text form, which round-trips exactly): dense groups, several
#     blocks, NULL rows, the whole table, every binary16 value (normal,
#     subnormal, zero, both signs); a thin group keeps its rows as float4
#     (format version 4, about half the bytes), and widened (wide() below)
#     it is the float8[] path's thin value bit for bit; under a forced
#     parallel plan the partial states combine (plan and statistics checked);
#   - float4 thin values: binary COPY round trip, merges that stay float4
#     (the value of all the rows), fits equal to the float8[] path's;
#   - each model row function (scores, global part, local part, reconstruct,
#     residual, error) for a vector row equals the float8[] one's result cast
#     to vector (float8 for the error), with text and integer client keys, an
#     unknown client, a scaled model;
#   - errors: a row of another dimension, a dimension above perpca's limit, and
#     malformed vectors (made from bytes with a binary-coercible cast: header
#     inconsistent with the size, unused field set, zero dimensions, NaN);
#     a schema other than perpca's; empty scores as a vector;
#   - per-row global scores stored in a vector(k) column with an HNSW index:
#     the index search over the scores returns the neighbours that an exact
#     search over the full vectors returns (recall@10 measured);
#   - docs/pgvector.md's reduce, index, re-rank recipe on a committed fixture
#     (test/data/rerank_*.csv): candidates from an HNSW index over per-tenant
#     scores, re-ranked by the full vectors in one statement, return exactly the
#     exact 10 nearest when the candidates hold them.
# pgvector comes from the PostgreSQL installation (a Debian package) or from
# scripts/prepare.sh (scripts/test.sh builds it when the source is there);
# without it the test skips.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PerpcaTest;

if ($ENV{PERPCA_PGVECTOR_FAILED})
{
	fail("pgvector is available: $ENV{PERPCA_PGVECTOR_FAILED}");
	done_testing();
	exit;
}
my $sharedir = `pg_config --sharedir`;
chomp $sharedir;
plan skip_all => 'pgvector is not installed in this PostgreSQL installation ('
  . ($ENV{PERPCA_PGVECTOR_SKIP}
	  // "no vector.control in $sharedir/extension; scripts/test.sh builds it with scripts/prepare.sh extras")
  . ')'
  unless -f "$sharedir/extension/vector.control";

my $node = start_node('pgvector', "max_parallel_workers_per_gather = 0\n");
my $db = 'postgres';

sub sql { return $node->safe_psql($db, $_[0]); }

# ($ok, $sqlstate, $message) of SQL that should fail.
sub fails
{
	my ($sql) = @_;
	my ($rc, $out, $err) =
	  $node->psql($db, "\\set VERBOSITY verbose\n$sql", on_error_stop => 1);
	my ($state) = $err =~ /ERROR:\s+([0-9A-Z]{5}):/;
	return ($rc != 0, $state // '', $err);
}

sub error_is
{
	my ($sql, $state, $re, $name) = @_;
	my ($failed, $got, $err) = fails($sql);
	ok($failed && $got eq $state && $err =~ $re, $name)
	  or diag("expected $state =~ $re, got: $err");
}

sql('CREATE EXTENSION perpca_vector CASCADE');
# A value as the float8[] path writes it: a float4 thin value widened (scaling
# by ones widens it and changes no bit), any other value as it is.
sql(q{CREATE FUNCTION wide(s perpca_stats) RETURNS text LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT CASE WHEN perpca_stats_form(s) = 'thin'
              THEN perpca_internal.scale_stats(s, array_fill(1::float8, ARRAY[perpca_dim(s)]))::text
              ELSE s::text END $$;
CREATE FUNCTION version_of(s perpca_stats) RETURNS int LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT get_byte(perpca_stats_send(s), 0) $$});
is( sql(  "SELECT string_agg(extname, ',' ORDER BY extname) FROM pg_extension "
		  . "WHERE extname IN ('perpca', 'vector', 'perpca_vector')"),
	'perpca,perpca_vector,vector',
	'CREATE EXTENSION perpca_vector CASCADE brings perpca and vector');

# ---- In: statistics ---------------------------------------------------------
# Rows of three groups in d = 12 with their own offsets and spreads: group 1
# has 5 rows (thin: n <= d/2), group 2 300 (dense, three blocks of 128),
# group 3 40; a NULL every 37th row.  Values rounded to float4 by the vector.
my $d = 12;
sql(qq{
CREATE TABLE rows AS
SELECT i, g,
       CASE WHEN i % 37 = 0 THEN NULL ELSE
       ARRAY(SELECT (g * 10 + sin(i * 0.37 + j * 1.3) * (j % 4 + 1) + cos(i * j * 0.011) / 3)::real
             FROM generate_series(1, $d) AS j)::vector($d) END AS v
FROM (SELECT i, CASE WHEN i <= 5 THEN 1 WHEN i <= 305 THEN 2 ELSE 3 END AS g
      FROM generate_series(1, 345) AS i) s;
ALTER TABLE rows ADD COLUMN h halfvec($d);
UPDATE rows SET h = v::halfvec($d);
});

is( sql(  "SELECT string_agg(g || ':' || perpca_stats_form(s) || ':' || perpca_count(s), ' ' ORDER BY g) "
		  . "FROM (SELECT g, perpca_stats(v) AS s FROM rows GROUP BY g) q"),
	'1:thin:5 2:dense:292 3:dense:39',
	'perpca_stats(vector): groups thin and dense, NULL rows skipped');
is( sql(  "SELECT count(*) FILTER (WHERE wide(a) = b::text) || '/' || count(*) FROM ("
		  . "SELECT g, perpca_stats(v) AS a, perpca_stats(v::real[]::float8[]) AS b FROM rows GROUP BY g "
		  . "UNION ALL SELECT 0, perpca_stats(v), perpca_stats(v::real[]::float8[]) FROM rows) q"),
	'4/4',
	'perpca_stats(vector) = perpca_stats(v::real[]::float8[]) bit for bit (3 groups and the whole table; thin widened)');
is( sql(  "SELECT count(*) FILTER (WHERE wide(a) = b::text) || '/' || count(*) FROM ("
		  . "SELECT g, perpca_stats(h) AS a, perpca_stats(h::real[]::float8[]) AS b FROM rows GROUP BY g "
		  . "UNION ALL SELECT 0, perpca_stats(h), perpca_stats(h::real[]::float8[]) FROM rows) q"),
	'4/4',
	'perpca_stats(halfvec) = perpca_stats(h::real[]::float8[]) bit for bit (thin widened)');
is( sql(  "SELECT string_agg(version_of(a) || ',' || version_of(b) || ',' || version_of(c), ' ' ORDER BY g) FROM ("
		  . "SELECT g, perpca_stats(v) AS a, perpca_stats(h) AS b, perpca_stats(v::real[]::float8[]) AS c FROM rows GROUP BY g) q"),
	'4,4,1 1,1,1 1,1,1',
	'the thin group of vector and of halfvec rows is a float4 thin value (version 4); float8[] rows and dense groups as before');
is( sql(  "SELECT wide(perpca_stats(v)) <> perpca_stats(v)::text FROM rows WHERE g = 1"),
	't', 'wide() changes a float4 thin value (the comparisons above are not of the same text)');
is(sql("SELECT perpca_stats(v) IS NULL FROM rows WHERE v IS NULL"),
	't', 'only NULL rows: NULL, as for float8[]');
is( sql(  "SELECT (SELECT perpca_stats(v)::text FROM rows WHERE g = 2) "
		  . "= (SELECT perpca_merge(s)::text FROM (SELECT perpca_stats(v) AS s FROM rows WHERE g = 2) q)"),
	't', 'a vector-made value merges like any perpca_stats value');

# perpca_sketch (perpca_vector 0.4.0): the float8[] aggregate's value for the
# same rows in the same order, bit for bit; a stored sketch for the dump below.
is( sql(  "SELECT count(*) FILTER (WHERE a::text = b::text AND perpca_stats_form(a) = 'sketch') || '/' || count(*) FROM ("
		  . "SELECT g, perpca_sketch(v, 3 ORDER BY i) AS a, perpca_sketch(v::real[]::float8[], 3 ORDER BY i) AS b FROM rows GROUP BY g "
		  . "UNION ALL SELECT g, perpca_sketch(h, 4, 'skip' ORDER BY i), perpca_sketch(h::real[]::float8[], 4, 'skip' ORDER BY i) FROM rows GROUP BY g) q"),
	'6/6',
	'perpca_sketch(vector / halfvec, ell[, nulls]) = perpca_sketch(v::real[]::float8[], ...) bit for bit');
error_is("SELECT perpca_sketch(v, 13) FROM rows", '22023', qr/ell \(13\) must not exceed the dimension d \(12\)/,
	'perpca_sketch(vector): ell above d is an error');
is( sql(  "SELECT perpca_dim(perpca_sketch(x, 8)) FROM (SELECT ARRAY(SELECT sin(i * j)::real FROM generate_series(1, 16000) j)::vector AS x "
		  . "FROM generate_series(1, 20) i) q"),
	'16000', 'perpca_sketch(vector) at d = 16000');
sql("CREATE TABLE vsketch AS SELECT g, perpca_sketch(v, 3) AS s FROM rows GROUP BY g");

# Every finite binary16 value, both signs (63488 values), in 16 rows of 3968:
# the mean of a one-row group is the row, so it shows each conversion
# (compared as numbers: the statistics' mean of -0 alone is +0, for float8[] too).
sql(q{
CREATE TABLE halves AS
WITH v AS (
    SELECT row_number() OVER (ORDER BY s, e, f) - 1 AS k,
           s * CASE WHEN e = 0 THEN f * 2.0::float8 ^ -24 ELSE (1024 + f) * 2.0::float8 ^ (e - 25) END AS x
    FROM generate_series(0, 30) AS e, generate_series(0, 1023) AS f, (VALUES (1), (-1)) AS sg(s))
SELECT k / 3968 AS r, array_agg(x ORDER BY k)::real[]::halfvec AS h FROM v GROUP BY k / 3968;
});
is( sql(  "SELECT count(*) FILTER (WHERE perpca_mean(s) = h::real[]::float8[]) || '/' || count(*) "
		  . "FROM (SELECT r, h, perpca_stats(h) OVER (PARTITION BY r) AS s FROM halves) q"),
	'16/16', 'every binary16 value (normal, subnormal, zero, negative) read exactly');

# Forced parallel plan: partial states from the workers combine (a group split
# over processes meets in an order that depends on them: compared closely,
# not bitwise).
sql(q{CREATE TABLE big AS SELECT k % 4 AS g, v FROM rows, generate_series(0, 59) AS k; ANALYZE big});
my $par = q{SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0; SET enable_hashagg = off;};
like(sql("$par EXPLAIN (COSTS OFF) SELECT g, perpca_stats(v) FROM big GROUP BY g"),
	qr/Partial GroupAggregate|Partial HashAggregate|Partial Aggregate/, 'perpca_stats(vector) runs as a parallel partial aggregate');
sql("$par CREATE TABLE par AS SELECT g, perpca_stats(v) AS s FROM big GROUP BY g");
is( sql(  "SELECT bool_and(perpca_count(p.s) = perpca_count(q.s) AND "
		  . "(SELECT max(abs(a - b)) < 1e-9 FROM unnest(perpca_covariance(p.s), perpca_covariance(q.s)) AS u(a, b))) "
		  . "FROM par p JOIN (SELECT g, perpca_stats(v::real[]::float8[]) AS s FROM big GROUP BY g) q USING (g)"),
	't', 'parallel perpca_stats(vector): the serial float8[] statistics');

# Thin groups of inline rows under the forced parallel plan: each process's
# state keeps its rows as they came (float4 bytes), serialized and combined
# as they are, and the result is the serial float8[] path's.
sql(q{CREATE TABLE thinpar AS
SELECT i % 500 AS g, ARRAY(SELECT ((i % 500) + sin(i * 0.7 + j)) FROM generate_series(1, 64) AS j)::vector(64) AS v
FROM generate_series(1, 10000) AS i; ANALYZE thinpar});
like(sql("$par EXPLAIN (COSTS OFF) SELECT g, perpca_stats(v) FROM thinpar GROUP BY g"),
	qr/Partial GroupAggregate|Partial HashAggregate/, 'thin groups of inline vector rows: a parallel partial aggregate');
sql("$par CREATE TABLE thinpar_s AS SELECT g, perpca_stats(v) AS s FROM thinpar GROUP BY g");
is( sql(  "SELECT count(*) FILTER (WHERE perpca_stats_form(p.s) = 'thin' AND perpca_count(p.s) = perpca_count(q.s) AND "
		  . "(SELECT max(abs(a - b)) < 1e-9 FROM unnest(perpca_covariance(p.s), perpca_covariance(q.s)) AS u(a, b))) "
		  . "|| '/' || count(*) FROM thinpar_s p JOIN (SELECT g, perpca_stats(v::real[]::float8[]) AS s FROM thinpar GROUP BY g) q USING (g)"),
	'500/500', 'parallel thin groups of inline vector rows: the serial float8[] statistics');
is( sql(  "SELECT count(*) FILTER (WHERE wide(a) = b::text AND version_of(a) = 4) || '/' || count(*) FROM ("
		  . "SELECT g, perpca_stats(v) AS a, perpca_stats(v::real[]::float8[]) AS b FROM thinpar GROUP BY g) q"),
	'500/500', 'serial thin groups of inline vector rows: float4 thin values, widened the float8[] path bit for bit');
is( sql(  "SELECT count(*) FILTER (WHERE version_of(s) = 4) FROM thinpar_s"),
	'500', 'parallel thin groups of inline vector rows: the combined states keep float4 rows');

# ---- Rows in TOAST ------------------------------------------------------------------
# vector(600) (2408 bytes) and halfvec(1100) (2208 bytes) rows are stored out of
# line; a thin group keeps such rows as TOAST pointers until its final function
# (or until it turns dense: group 0 has 320 rows, more than d/2 = 300).  40 groups,
# rows interleaved across them.
sql(q{
CREATE TABLE toasted (i int, g int, v vector(600), h halfvec(1100));
ALTER TABLE toasted ALTER COLUMN v SET STORAGE EXTERNAL, ALTER COLUMN h SET STORAGE EXTERNAL;
INSERT INTO toasted
SELECT i, CASE WHEN i <= 320 THEN 0 ELSE i % 39 + 1 END,
       ARRAY(SELECT (sin(i * 0.7 + j * 0.013) * (1 + i % 5) + j * 0.001)::real FROM generate_series(1, 600) AS j)::vector,
       ARRAY(SELECT (cos(i * 0.3 + j * 0.021) * 4)::real FROM generate_series(1, 1100) AS j)::halfvec
FROM generate_series(1, 320 + 39 * 12) AS i;
ANALYZE toasted;
});
is(sql("SELECT pg_relation_size(reltoastrelid) > 100 * 8192 FROM pg_class WHERE relname = 'toasted'"),
	't', 'the vector and halfvec rows are stored in TOAST');
for my $plan (['HashAggregate', 'SET enable_sort = off; SET work_mem = \'256MB\';'],
	['GroupAggregate', 'SET enable_hashagg = off;'])
{
	my ($name, $set) = @$plan;
	like(sql("$set EXPLAIN (COSTS OFF) SELECT g, perpca_stats(v) FROM toasted GROUP BY g"),
		qr/$name/, "plan: $name");
	is( sql(  "$set SELECT count(*) FILTER (WHERE wide(a) = b::text AND wide(c) = e::text) || '/' || count(*) FROM ("
			  . "SELECT g, perpca_stats(v) AS a, perpca_stats(v::real[]::float8[]) AS b, "
			  . "perpca_stats(h, 'skip') AS c, perpca_stats(h::real[]::float8[]) AS e FROM toasted GROUP BY g) q"),
		'40/40', "$name over rows in TOAST: vector and halfvec statistics bit for bit those of the float8[] path");
}
is( sql(  "SELECT count(*) FILTER (WHERE wide(a) = b::text) || '/' || count(*) FROM ("
		  . "SELECT perpca_stats(v) OVER w AS a, perpca_stats(v::real[]::float8[]) OVER w AS b "
		  . "FROM toasted WHERE g <= 3 WINDOW w AS (PARTITION BY g ORDER BY i)) q"),
	'356/356', 'as a window aggregate (running statistics): bit for bit');
sql(  "$par CREATE TABLE par_toasted AS SELECT g, perpca_stats(v) AS s, perpca_stats(h) AS t FROM toasted GROUP BY g");
like(sql("$par EXPLAIN (COSTS OFF) SELECT g, perpca_stats(v), perpca_stats(h) FROM toasted GROUP BY g"),
	qr/Partial/, 'rows in TOAST: a parallel plan');
is( sql(  "SELECT bool_and(perpca_count(p.s) = perpca_count(q.s) AND perpca_count(p.t) = perpca_count(q.t) AND "
		  . "(SELECT max(abs(a - b)) < 1e-9 FROM unnest(perpca_mean(p.s), perpca_mean(q.s)) AS u(a, b)) AND "
		  . "(SELECT max(abs(a - b)) < 1e-9 FROM unnest(perpca_mean(p.t), perpca_mean(q.t)) AS u(a, b)) AND "
		  . "(SELECT max(abs(a - b)) < 1e-9 FROM unnest(perpca_covariance(p.s), perpca_covariance(q.s)) AS u(a, b))) "
		  . "FROM par_toasted p JOIN (SELECT g, perpca_stats(v::real[]::float8[]) AS s, "
		  . "perpca_stats(h::real[]::float8[]) AS t FROM toasted GROUP BY g) q USING (g)"),
	't', 'rows in TOAST, parallel: the serial statistics (pending rows passed between processes)');

# ---- Float4 thin values -------------------------------------------------------------
# Groups 1..39 of toasted: 12 rows of d = 600 each, thin.  A float4 thin value
# holds its mean (2 d doubles) and its rows as float4: the rows take half the
# bytes of the float8[] path's.
sql(q{CREATE TABLE thin4 AS SELECT g, perpca_stats(v ORDER BY i) AS s, perpca_stats(h ORDER BY i) AS t,
  perpca_stats(v::real[]::float8[] ORDER BY i) AS f FROM toasted WHERE g BETWEEN 1 AND 39 GROUP BY g});
is( sql(  "SELECT count(*) FILTER (WHERE pg_column_size(s) = 24 + 16 * 600 + 4 * 12 * 600 + 8 "
		  . "AND pg_column_size(t) = 24 + 16 * 1100 + 4 * 12 * 1100 + 8 "
		  . "AND pg_column_size(f) = 24 + 16 * 600 + 8 * 12 * 600 AND version_of(s) = 4 AND version_of(t) = 4) "
		  . "|| '/' || count(*) FROM (SELECT g, perpca_stats(v) AS s, perpca_stats(h) AS t, perpca_stats(v::real[]::float8[]) AS f "
		  . "FROM toasted WHERE g BETWEEN 1 AND 39 GROUP BY g) q"),
	'39/39', 'float4 thin values: 24 + 16 d + 4 n d + 8 bytes, the float8[] path 24 + 16 d + 8 n d');
is( sql("SELECT count(*) FILTER (WHERE s::text::perpca_stats::text = s::text AND t::text::perpca_stats::text = t::text) FROM thin4"),
	'39', 'float4 thin values: text round trip');
my $copy = PostgreSQL::Test::Utils::tempdir;
sql("COPY thin4 TO '$copy/thin4.bin' (FORMAT binary)");
sql("CREATE TABLE thin4_back (LIKE thin4); COPY thin4_back FROM '$copy/thin4.bin' (FORMAT binary)");
is( sql(  "SELECT count(*) FILTER (WHERE a.s::text = b.s::text AND a.t::text = b.t::text "
		  . "AND perpca_stats_send(a.s) = perpca_stats_send(b.s)) FROM thin4 a JOIN thin4_back b USING (g)"),
	'39', 'float4 thin values: binary COPY round trip (perpca_stats_send, perpca_stats_recv)');
is( sql(  "SELECT count(*) FILTER (WHERE m::text = s::text) || '/' || count(*) FROM ("
		  . "SELECT g, perpca_merge(p ORDER BY half) AS m FROM ("
		  . "SELECT g, i > (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY i) FROM toasted o WHERE o.g = t.g) AS half, "
		  . "perpca_stats(v ORDER BY i) AS p FROM toasted t WHERE g BETWEEN 1 AND 39 GROUP BY 1, 2) q GROUP BY g) m JOIN thin4 USING (g)"),
	'39/39', 'perpca_merge of the float4 thin values of two halves of a group, in order: the float4 thin value of the group');
is( sql(  "SELECT perpca_stats_form(m) || ' ' || perpca_count(m) || ' ' || "
		  . "(SELECT max(abs(a - b)) < 1e-9 FROM unnest(perpca_covariance(m), perpca_covariance(e)) AS u(a, b)) "
		  . "FROM (SELECT perpca_merge(s) AS m, perpca_merge(f) AS e FROM thin4) q"),
	'dense 468 true', 'perpca_merge of float4 thin values past the thin limit: dense, the float8[] rows\' statistics');
is( sql(  "SELECT (SELECT string_agg(pc::text || variance, ';' ORDER BY kind, client, component) "
		  . "FROM perpca_fit('SELECT g, s FROM thin4', 2, 1)) "
		  . "= (SELECT string_agg(pc::text || variance, ';' ORDER BY kind, client, component) "
		  . "FROM perpca_fit('SELECT g, f FROM thin4', 2, 1))"),
	't', 'a fit on float4 thin values: the fit on the float8[] path\'s, bit for bit');

# ---- Errors ----------------------------------------------------------------------
error_is("SELECT perpca_stats(v) FROM (VALUES ('[1,2]'::vector), ('[1,2,3]')) s(v)",
	'2202E', qr/input row has dimension 3, expected 2/, 'rows of two dimensions: an error');
error_is("SELECT perpca_stats(array_fill(1, ARRAY[5000])::vector)",
	'54000', qr/dimension 5000 exceeds the limit of 4096/, 'a vector above perpca\'s dimension limit');
error_is("SELECT perpca_stats(array_fill(1, ARRAY[5000])::halfvec)",
	'54000', qr/dimension 5000 exceeds the limit of 4096/, 'a halfvec above perpca\'s dimension limit');
# Malformed values, made from bytes (little-endian) by a binary-coercible cast.
sql(q{CREATE CAST (bytea AS vector) WITHOUT FUNCTION; CREATE CAST (bytea AS halfvec) WITHOUT FUNCTION});
is(sql(q{SELECT perpca_mean(perpca_stats('\x020000000000803f00000040'::bytea::vector))}),
	'{1,2}', 'a well-formed vector made from bytes reads (so the malformed ones below are what fail)');
error_is(q{SELECT perpca_stats('\x030000000000803f00000040'::bytea::vector)},
	'XX001', qr/input row is not a valid vector value.*3 dimensions/s, 'vector: dimension inconsistent with the size');
error_is(q{SELECT perpca_stats('\x020001000000803f00000040'::bytea::vector)},
	'XX001', qr/not a valid vector value.*unused field 1/s, 'vector: unused field not zero');
error_is(q{SELECT perpca_stats('\x00000000'::bytea::vector)},
	'XX001', qr/not a valid vector value/, 'vector: zero dimensions');
error_is(q{SELECT perpca_stats('\x0100'::bytea::vector)},
	'XX001', qr/not a valid vector value.*fewer than a header/s, 'vector: shorter than its header');
error_is(q{SELECT perpca_stats('\x02000000003c'::bytea::halfvec)},
	'XX001', qr/input row is not a valid halfvec value/, 'halfvec: dimension inconsistent with the size');
error_is(q{SELECT perpca_stats('\x020000000000c07f00000040'::bytea::vector)},
	'22000', qr/input row element 1 of 2 is NaN/, 'vector: a NaN (bytes only; pgvector rejects it) is rejected like in float8[]');
error_is(q{SELECT perpca_stats('\x02000000007c0040'::bytea::halfvec)},
	'22000', qr/input row element 1 of 2 is Infinity/, 'halfvec: an infinity is rejected like in float8[]');

# perpca_stats(v, nulls): 'skip' leaves such a row out and counts it.
is( sql(  "SELECT perpca_stats(v, 'skip')::text = perpca_stats(v)::text "
		  . "AND perpca_stats(h, 'skip')::text = perpca_stats(h::real[]::float8[], 'skip')::text FROM rows"),
	't', "perpca_stats(v, 'skip') on pgvector's rows: the statistics of perpca_stats(v)");
is( sql(  q{SELECT perpca_count(s) || ' ' || perpca_skipped(s) || ' ' || (perpca_mean(s) = '{1,2}') FROM (SELECT perpca_stats(v, 'skip') AS s FROM }
		  . q{(VALUES ('\x020000000000c07f00000040'::bytea::vector), ('[1,2]'), (NULL), ('\x020000000000807f00000040'::bytea::vector)) t(v)) q}),
	'1 2 true', "perpca_stats(vector, 'skip'): rows with NaN or infinity left out and counted, NULL rows ignored");
is( sql(  q{SELECT perpca_count(s) || ' ' || perpca_skipped(s) FROM (SELECT perpca_stats(h, 'skip') AS s FROM }
		  . q{(VALUES ('\x02000000007c0040'::bytea::halfvec), ('[1,2]'), ('[3,4]')) t(h)) q}),
	'2 1', "perpca_stats(halfvec, 'skip') likewise");
error_is(q{SELECT perpca_stats(v, 'error') FROM (VALUES ('\x020000000000c07f00000040'::bytea::vector)) t(v)},
	'22000', qr/input row element 1 of 2 is NaN/, "perpca_stats(vector, 'error'): an error");
error_is(q{SELECT perpca_stats('[1,2]'::vector, NULL)},
	'22004', qr/missing must be 'error' or 'skip', not NULL/, 'nulls NULL: an error');
error_is(q{SELECT perpca_stats('[1,2]'::halfvec, 'drop')},
	'22023', qr/missing must be 'error' or 'skip'/, 'nulls of another word: an error');

sql('CREATE SCHEMA elsewhere');
$node->safe_psql($db, 'CREATE DATABASE other');
$node->safe_psql('other', 'CREATE EXTENSION vector; CREATE EXTENSION perpca; CREATE SCHEMA elsewhere');
{
	my ($rc, $out, $err) =
	  $node->psql('other', "\\set VERBOSITY verbose\nCREATE EXTENSION perpca_vector SCHEMA elsewhere");
	ok($rc != 0 && $err =~ /3F000: perpca_vector must be created in the schema of perpca, public/,
		'perpca_vector refuses a schema other than perpca\'s')
	  or diag($err);
}
# As docs/pgvector.md says: with perpca in schema pca (pgvector in a schema
# of its own), CREATE EXTENSION without SCHEMA is refused with the command as
# the hint, and SCHEMA pca works.
$node->safe_psql($db, 'CREATE DATABASE in_pca');
$node->safe_psql('in_pca',
	'CREATE SCHEMA pca; CREATE SCHEMA vec; CREATE EXTENSION vector SCHEMA vec; CREATE EXTENSION perpca SCHEMA pca');
{
	my ($rc, $out, $err) = $node->psql('in_pca', 'CREATE EXTENSION perpca_vector');
	ok($rc != 0 && $err =~ /HINT:  CREATE EXTENSION perpca_vector SCHEMA pca/,
		'perpca in schema pca: the refusal names the command') or diag($err);
	is( $node->safe_psql('in_pca', q{CREATE EXTENSION perpca_vector SCHEMA pca;
SELECT pca.perpca_count(pca.perpca_stats(v)) FROM (VALUES ('[1,2]'::vec.vector), ('[3,4]')) t(v)}),
		'2', 'CREATE EXTENSION perpca_vector SCHEMA pca works, pgvector in its own schema');
}

# ---- Out: the model row functions --------------------------------------------------
sql(q{SELECT count(*) FROM perpca_train('vm', 'SELECT g, perpca_stats(v) FROM rows WHERE g > 1 GROUP BY g', 2, 2)});
sql(q{SELECT count(*) FROM perpca_train('vs', 'SELECT g, perpca_stats(v) FROM rows WHERE g > 1 GROUP BY g', 2, 1,
                                       scale => 'standard', center => 'global')});
for my $model ('vm', 'vs')
{
	for my $key ('g', 'g::text')
	{
		my @checks = map {
			"count(*) FILTER (WHERE perpca_model_$_('$model', $key, v)::text "
			  . "= perpca_model_$_('$model', $key, v::real[]::float8[])::vector::text)"
		} qw(scores global_part local_part reconstruct residual);
		push @checks,
		  "count(*) FILTER (WHERE perpca_model_error('$model', $key, v) "
		  . "= perpca_model_error('$model', $key, v::real[]::float8[]))";
		is( sql(  "SET client_min_messages = warning; SELECT concat_ws(' ', "
				  . join(', ', @checks)
				  . ", count(*)) FROM rows WHERE v IS NOT NULL"),
			'336 336 336 336 336 336 336',
			"model $model, key $key: scores, global_part, local_part, reconstruct, residual (vector) "
			  . 'and error (float8) equal the float8[] functions\'');
	}
}
is( sql(  "SELECT perpca_model_scores('vm', 1, v)::text = perpca_model_scores('vm', 1, v::real[]::float8[])::vector::text "
		  . "AND vector_dims(perpca_model_scores('vm', 1, v)) = 2 FROM rows WHERE i = 1"),
	't', 'an unknown client (group 1 was not trained): global scores only, as for float8[]');
error_is("SELECT perpca_model_scores('vm', 1, v, unknown => 'error') FROM rows WHERE i = 1",
	'42704', qr/client "1" is not in model "vm"/, 'unknown => error holds for vector rows');
error_is("SELECT perpca_model_global_part('vm', 2, '[1,2,3]'::vector)",
	'2202E', qr/x has dimension 3, expected 12/, 'a row of the wrong dimension: an error');
error_is(q{SELECT perpca_model_residual('vm', 2, '\x010001000000803f'::bytea::vector)},
	'XX001', qr/x is not a valid vector value/, 'a malformed vector row: an error');
error_is(q{SELECT perpca_model_scores('vm', 2, ''::bytea::vector)},
	'XX001', qr/x is not a valid vector value.*fewer than a header/s, 'vector x: empty');
error_is(q{SELECT perpca_model_error('vm', 2, '\x010000000000c07f'::bytea::vector)},
	'22000', qr/x element 1 of 1 is NaN/, 'a NaN in a vector row: an error');
is(sql("SELECT perpca_model_scores('vm', 2, NULL::vector) IS NULL"), 't', 'a NULL row: NULL (STRICT)');

# The one row reader: the functions that read a query of rows
# take vector and halfvec rows as they take float8[] rows.
is( sql(  q{SELECT count(*) FROM perpca_train('vr', 'SELECT g, v FROM rows WHERE g > 1', 2, 2, missing => 'skip');
SELECT (SELECT string_agg(pc::text || variance, ';' ORDER BY kind, client, component) FROM vr_components)
     = (SELECT string_agg(pc::text || variance, ';' ORDER BY kind, client, component) FROM vm_components)}),
	"1\nt", 'perpca_train from vector rows: the model of perpca_stats(v), bit for bit');
is( sql(  q{SELECT count(*) FILTER (WHERE a.error = b.error AND a.n = b.n AND a.skipped = 0) || '/' || count(*)
  FROM perpca_evaluate('vm', 'SELECT g, h FROM rows') a
  JOIN perpca_evaluate('vm', 'SELECT g, h::real[]::float8[] FROM rows') b USING (client)}),
	'3/3', 'perpca_evaluate of halfvec rows: the figures of their float8[] values');
is( sql(  q{SELECT count(*) FILTER (WHERE a.hidden = b.hidden AND a.error = b.error) || '/' || count(*)
  FROM perpca_evaluate_imputation('vm', 'SELECT g, v FROM rows', 0.2, 5) a
  JOIN perpca_evaluate_imputation('vm', 'SELECT g, v::real[]::float8[] FROM rows', 0.2, 5) b USING (client)}),
	'3/3', 'perpca_evaluate_imputation of vector rows: that of their float8[] values');
error_is("SELECT * FROM perpca_fit('SELECT g, v FROM rows', 2, 1, missing => 'observed')",
	'0A000', qr/cannot read rows with missing => 'observed'/, 'vector rows: observed is refused by a fit, at once');
sql(q{SELECT count(*) FROM perpca_train('vi', 'SELECT g, perpca_stats(v) FROM rows WHERE g > 1 GROUP BY g', 0, 2,
                                       method => 'indiv')});
error_is("SET client_min_messages = warning; SELECT perpca_model_scores('vi', 9, v) FROM rows WHERE i = 1",
	'22000', qr/the scores has no values, and a vector needs at least one/,
	'no global components and an unknown client: no scores, an error for a vector (float8[]: empty array)');
sql(q{DROP CAST (bytea AS vector); DROP CAST (bytea AS halfvec)});

# ---- Scores in an HNSW index: recall against the full vectors ------------------------
# 800 rows in d = 48 of 4 groups: a shared 6-dimensional structure, each group's
# own 2 directions (small), and noise.  The model's 6 global scores per row go to a
# vector(6) column with an HNSW index; for 40 query rows the index's 10 nearest
# by the scores are compared with the exact 10 nearest by the full vectors.
sql(q{
CREATE TABLE emb AS
SELECT i, i % 4 AS g,
       ARRAY(SELECT (  sum(  sin(i * (0.731 + c * 0.113) + c * 1.9) * 3.0
                           * cos(j * (0.37 + c * 0.217) + c))
                     + 0.3 * sin(i * 0.05 * (i % 4 + 1) + j * (i % 4 + 2))
                     + 0.01 * sin(i * 12.9898 + j * 78.233))::real
             FROM generate_series(1, 48) AS j, generate_series(1, 6) AS c
             GROUP BY j ORDER BY j)::vector(48) AS v
FROM generate_series(1, 800) AS i;
});
sql(q{SELECT count(*) FROM perpca_train('em', 'SELECT g, perpca_stats(v) FROM emb GROUP BY g', 6, 2, center => 'global')});
sql(q{
ALTER TABLE emb ADD COLUMN s vector(6);
UPDATE emb SET s = subvector(perpca_model_scores('em', g, v), 1, 6);
CREATE INDEX emb_s ON emb USING hnsw (s vector_l2_ops);
ANALYZE emb;
});
like(sql("SET enable_seqscan = off; EXPLAIN (COSTS OFF) SELECT i FROM emb ORDER BY s <-> '[1,2,3,4,5,6]' LIMIT 10"),
	qr/Index Scan using emb_s/, 'the search over the scores uses the HNSW index');
my $recall = sql(q{
SET enable_seqscan = off;
SELECT round(avg(hits) / 10, 3) FROM (
    SELECT q.i, (SELECT count(*) FROM
                   (SELECT e.i FROM emb e ORDER BY e.s <-> q.s LIMIT 10) ann
                   JOIN (SELECT e.i FROM emb e ORDER BY e.v <-> q.v LIMIT 10) ex
                   USING (i)) AS hits
    FROM emb q WHERE q.i % 20 = 0) r
});
diag("recall\@10 of the HNSW search over 6 global scores against exact search over 48 dimensions: $recall");
cmp_ok($recall, '>=', 0.9, 'HNSW over the stored scores finds the full vectors\' neighbours (recall@10 >= 0.9)');
# The measure can tell: two of the six scores (exact search) lose neighbours.
my $recall2 = sql(q{
SELECT round(avg(hits) / 10, 3) FROM (
    SELECT q.i, (SELECT count(*) FROM
                   (SELECT e.i FROM emb e ORDER BY subvector(e.s, 1, 2) <-> subvector(q.s, 1, 2) LIMIT 10) ann
                   JOIN (SELECT e.i FROM emb e ORDER BY e.v <-> q.v LIMIT 10) ex
                   USING (i)) AS hits
    FROM emb q WHERE q.i % 20 = 0) r
});
diag("recall\@10 of exact search over the first 2 scores: $recall2");
cmp_ok($recall2, '<', 0.7, 'two scores of six: the recall falls (the measure is not blind)');

# ---- Reduce, index, re-rank (docs/pgvector.md's recipe) --------------------------------
# test/data/rerank_*.csv (test/fixtures/gen_rerank.py): 3 tenants of 200 unit
# vectors in d = 32 (2 shared directions, 4 of each tenant's own, noise), 60
# query vectors not in the table, and each query's exact 10 nearest documents of
# its tenant by cosine distance (numpy, float64), their distances at least 1e-4
# apart.  The recipe: a table partitioned by tenant, 2 + 4 Personalized PCA
# scores in a vector(6) column with an HNSW index, and one statement that takes
# the tenant and the full query vector, reduces the query in the statement,
# takes c candidates from the index and re-ranks them by the full vectors.
my $rr = test_path('test/data');
sql(qq{
CREATE TABLE rr_docs (id int, tenant text, embedding vector(32)) PARTITION BY LIST (tenant);
CREATE TABLE rr_docs_t1 PARTITION OF rr_docs FOR VALUES IN ('t1');
CREATE TABLE rr_docs_t2 PARTITION OF rr_docs FOR VALUES IN ('t2');
CREATE TABLE rr_docs_t3 PARTITION OF rr_docs FOR VALUES IN ('t3');
CREATE TABLE rr_queries (qid int, tenant text, v vector(32));
CREATE TABLE rr_expected (qid int, rank int, id int);
\\copy rr_docs FROM '$rr/rerank_docs.csv' CSV HEADER
\\copy rr_queries FROM '$rr/rerank_queries.csv' CSV HEADER
\\copy rr_expected FROM '$rr/rerank_expected.csv' CSV HEADER
});
sql(q{
SELECT count(*) FROM perpca_train('rr_pp', 'SELECT tenant, perpca_stats(embedding) FROM public.rr_docs GROUP BY tenant',
                                  n_global => 2, n_local => 4);
ALTER TABLE rr_docs ADD COLUMN reduced vector(6);
UPDATE rr_docs SET reduced = perpca_model_scores('rr_pp', tenant, embedding);
CREATE INDEX ON rr_docs USING hnsw (reduced vector_l2_ops);
ANALYZE rr_docs;
});
is(sql('SELECT count(*) FROM rr_docs WHERE reduced IS NOT NULL'), '600', 'every document has its reduced scores');

# The recipe's statement, prepared; c candidates; each query's ids, one line per query.
sub rerank
{
	my ($c, $ef) = @_;
	my $script = "SET enable_seqscan = off;\nSET hnsw.ef_search = $ef;\n" . qq{PREPARE search(text, vector) AS
WITH cand AS MATERIALIZED (
    SELECT id, embedding FROM rr_docs
     WHERE tenant = \$1
     ORDER BY reduced <-> perpca_model_scores('rr_pp', \$1, \$2)
     LIMIT $c)
SELECT id FROM cand ORDER BY embedding <=> \$2 LIMIT 10;
};
	$script .= "SELECT tenant, v FROM rr_queries WHERE qid = $_ \\gset\n"
	  . "\\echo q$_\nEXECUTE search(:'tenant', :'v');\n"
	  for 1 .. 60;
	my %got;
	my $q;
	for (split /\n/, sql($script))
	{
		if (/^q(\d+)$/) { $q = $1; $got{$q} = []; }
		elsif (/^\d+$/) { push @{ $got{$q} }, $_; }
	}
	return \%got;
}
my %want;
for (split /\n/, sql('SELECT qid, string_agg(id::text, \',\' ORDER BY rank) FROM rr_expected GROUP BY qid'))
{
	my ($q, $ids) = split /\|/;
	$want{$q} = $ids;
}
is(scalar(keys %want), 60, '60 queries with their exact 10 nearest');
like(sql(q{SET enable_seqscan = off;
EXPLAIN (COSTS OFF) WITH cand AS MATERIALIZED (SELECT id, embedding FROM rr_docs WHERE tenant = 't2'
    ORDER BY reduced <-> perpca_model_scores('rr_pp', 't2', (SELECT v FROM rr_queries WHERE qid = 25)) LIMIT 40)
SELECT id FROM cand ORDER BY embedding <=> (SELECT v FROM rr_queries WHERE qid = 25) LIMIT 10}),
	qr/Index Scan using rr_docs_t2_reduced_idx on rr_docs_t2.*Order By: \(reduced <->/s,
	'the candidates come from the HNSW index over the reduced scores of the tenant\'s partition');
# pgvector's exact search over the full vectors agrees with the fixture.
is( sql(  q{SELECT count(*) FROM rr_queries q WHERE ARRAY(SELECT d.id FROM rr_docs d WHERE d.tenant = q.tenant
                                  ORDER BY d.embedding <=> q.v LIMIT 10)
                          = ARRAY(SELECT e.id FROM rr_expected e WHERE e.qid = q.qid ORDER BY e.rank)}),
	'60', 'exact search over the full vectors: the fixture\'s 10 nearest, in order');
# 40 candidates cover the exact 10 of every query (checked first), so the re-rank
# must return exactly them, in order.
is( sql(  q{SET enable_seqscan = off; SET hnsw.ef_search = 40;
SELECT count(*) FROM rr_queries q
 WHERE ARRAY(SELECT e.id FROM rr_expected e WHERE e.qid = q.qid)
    <@ ARRAY(SELECT d.id FROM rr_docs d WHERE d.tenant = q.tenant
              ORDER BY d.reduced <-> perpca_model_scores('rr_pp', q.tenant, q.v) LIMIT 40)}),
	'60', '40 candidates from the index hold each query\'s exact 10 nearest');
my $got = rerank(40, 40);
my @wrong = grep { join(',', @{ $got->{$_} // [] }) ne $want{$_} } sort { $a <=> $b } keys %want;
is_deeply(\@wrong, [], 'reduce, index, re-rank in one statement: exactly the exact 10 nearest, in order, for all 60 queries')
  or diag(join("\n", map { "q$_: got " . join(',', @{ $got->{$_} // [] }) . ", want $want{$_}" } @wrong));
# The check can fail: 10 candidates (the reduced scores alone) miss some.
$got = rerank(10, 40);
my $hits = 0;
for my $q (keys %want)
{
	my %w = map { $_ => 1 } split /,/, $want{$q};
	$hits += grep { $w{$_} } @{ $got->{$q} };
}
diag("recall\@10 of the reduced scores alone (10 candidates): " . ($hits / 600));
cmp_ok($hits, '<', 570, '10 candidates: fewer of the exact neighbours (the check is not blind)');

# ---- Dump and restore ------------------------------------------------------------------
# The database (perpca, vector, perpca_vector, the models, the vector columns and the
# HNSW index) restored into a new one: the vector functions give the same results.
my $tmp = PostgreSQL::Test::Utils::tempdir;
$node->command_ok([ 'pg_dump', '-Fc', '-d', $db, '-f', "$tmp/db.dump" ], 'pg_dump -Fc');
$node->safe_psql($db, 'CREATE DATABASE restored');
$node->command_ok([ 'pg_restore', '--exit-on-error', '-d', 'restored', "$tmp/db.dump" ],
	'pg_restore with perpca_vector');
my $check = "SELECT md5(string_agg(perpca_model_scores('em', g, v)::text, '' ORDER BY i)) "
  . "|| (SELECT md5(string_agg(s::text, '' ORDER BY g)) FROM (SELECT g, perpca_stats(v) AS s FROM emb GROUP BY g) q) FROM emb";
is($node->safe_psql('restored', $check), sql($check),
	'restored: perpca_model_scores(vector) and perpca_stats(vector) as before');

is( $node->safe_psql('restored', "SELECT md5(string_agg(s::text, '' ORDER BY g)) FROM vsketch"),
	sql("SELECT md5(string_agg(s::text, '' ORDER BY g)) FROM vsketch"),
	'restored: the stored sketches as before');
my $thin4_check = "SELECT md5(string_agg(s::text || t::text || encode(perpca_stats_send(s), 'hex'), '' ORDER BY g)) FROM thin4";
is($node->safe_psql('restored', $thin4_check), sql($thin4_check), 'restored: the stored float4 thin values as before');

# ---- A domain over vector, and an overload planted in perpca's schema -----------
# A plain role who may create in perpca's schema makes a domain over vector and
# an aggregate perpca_stats(<her domain>), the exact match for a call that
# passes her column as it is.  perpca passes it as vector: hers never runs,
# whoever trains or fits on her rows.
sql(q{
CREATE ROLE mallory LOGIN;
GRANT CREATE ON SCHEMA public TO mallory;
GRANT SELECT ON public.rows TO mallory;
CREATE TABLE public.fired (who text);
GRANT INSERT ON public.fired TO PUBLIC;
});
$node->safe_psql($db, q{
CREATE DOMAIN public.mvec AS vector;
CREATE FUNCTION public.mvec_step(s float8[], v public.mvec) RETURNS float8[] LANGUAGE plpgsql
    AS $$ BEGIN INSERT INTO public.fired VALUES (current_user); RETURN s; END $$;
CREATE AGGREGATE public.perpca_stats(public.mvec) (SFUNC = public.mvec_step, STYPE = float8[]);
CREATE TABLE public.mrows AS SELECT g, v::public.mvec AS dv FROM public.rows WHERE g > 1;
GRANT SELECT ON public.mrows TO PUBLIC;
SELECT public.perpca_stats(dv) IS NOT NULL FROM public.mrows;
}, extra_params => [ '-U', 'mallory' ]);
is(sql(q{SELECT count(*) FROM public.fired WHERE who = 'mallory'}) > 0 ? 'fires' : 'silent', 'fires',
	'her aggregate is the exact match for her domain');
is( sql(  q{SELECT count(*) FROM perpca_train('vd', 'SELECT g, dv FROM public.mrows', 2, 2, missing => 'skip');
SELECT count(*) FROM perpca_fit('SELECT g, dv FROM public.mrows', 2, 1, missing => 'skip');
SELECT (SELECT string_agg(pc::text || variance, ';' ORDER BY kind, client, component) FROM vd_components)
     = (SELECT string_agg(pc::text || variance, ';' ORDER BY kind, client, component) FROM vr_components)}),
	"1\n4\nt", 'a train and a fit on a domain over vector: the model of its vectors');
is(sql(q{SELECT outcome FROM perpca_refresh('vd', warm => false)}), 'fitted', 'and its refresh');
is(sql(q{SELECT count(*) FROM public.fired WHERE who <> 'mallory'}), '0',
	'her aggregate over the domain never ran for the superuser');

# ---- Upgrade ------------------------------------------------------------------------
# perpca_vector 0.3.0 updated to 0.4.0 has the objects (and their comments) of a
# fresh 0.4.0.
my $objects = q{SELECT string_agg(pg_describe_object(d.classid, d.objid, 0) || ' / ' ||
        coalesce(obj_description(d.objid, d.classid::regclass::name), ''), E'\n' ORDER BY 1)
    FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
    WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e' AND e.extname = 'perpca_vector'};
$node->safe_psql('postgres', 'CREATE DATABASE upgraded');
$node->safe_psql('upgraded', q{CREATE EXTENSION perpca; CREATE EXTENSION vector;
	CREATE EXTENSION perpca_vector VERSION '0.3.0'; ALTER EXTENSION perpca_vector UPDATE});
is($node->safe_psql('upgraded', "SELECT extversion FROM pg_extension WHERE extname = 'perpca_vector'"),
	'0.4.0', 'perpca_vector updates from 0.3.0 to 0.4.0');
is($node->safe_psql('upgraded', $objects), sql($objects),
	'perpca_vector 0.3.0 -> 0.4.0: the objects and comments of a fresh 0.4.0');
like(sql($objects), qr/function perpca_sketch\(vector,integer\)/, 'the object list names perpca_sketch(vector, int)');

$node->stop;
done_testing();
