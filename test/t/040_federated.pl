# 040_federated.pl -- perpca_fit_federated: PerPCA rounds run on the shards.
#
# Two shard clusters hold the per-client statistics of the oracle's part (e)
# fixture (d = 10, 20 clients), split 8 / 12.  A coordinator runs
# perpca_fit_federated over libpq connections to both; it also holds all 20
# clients, so a single-node perpca_fit on the union is the reference.  The
# federated answer must be the single-node answer (and the oracle's) to 1e-8
# in subspace error, feasible and converged, for every centre and weighting.
# Then the failure paths: a shard that is down, a bad connection string, a
# shard without perpca, a failing query, a cancelled fit -- each with a clear
# error, no connection left open on the shards, and a usable coordinator.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PerpcaTest;

my $data = test_path('test/data');
my %clients = (shard1 => [ 1 .. 8 ], shard2 => [ 9 .. 20 ]);

my $load = qq{
CREATE EXTENSION perpca;
CREATE TABLE e_all (client int, n int, stats perpca_stats);
\\copy e_all FROM '$data/fit_e_stats.csv' CSV HEADER
};

my %shard;
for my $name (sort keys %clients)
{
	my $node = start_node($name);
	my $in = join(', ', @{ $clients{$name} });
	$node->safe_psql('postgres',
		$load . "CREATE TABLE e_stats AS SELECT * FROM e_all WHERE client IN ($in); DROP TABLE e_all;");
	my $thin_in = $name eq 'shard1' ? '1, 2, 3, 4, 5, 6' : '7, 8, 9, 10, 11, 12';
	$node->safe_psql('postgres', qq{
CREATE TABLE thin_rows (client int, x float8[]);
\\copy thin_rows FROM '$data/fit_thin_rows.csv' CSV HEADER
DELETE FROM thin_rows WHERE client NOT IN ($thin_in);
});
	$node->safe_psql('postgres', 'CREATE DATABASE bare');    # no perpca there
	$shard{$name} = $node;
}

my $coord = start_node('coordinator');
$coord->safe_psql('postgres', $load . qq{
ALTER TABLE e_all RENAME TO e_stats;
CREATE TABLE ref (name text, kind text, client text, k int, vector float8[]);
\\copy ref FROM '$data/fit_e_ref.csv' CSV HEADER
CREATE TABLE thin_rows (client int, x float8[]);
\\copy thin_rows FROM '$data/fit_thin_rows.csv' CSV HEADER
CREATE TEMP TABLE ref_thin (LIKE ref);
\\copy ref_thin FROM '$data/fit_thin_ref.csv' CSV HEADER
INSERT INTO ref SELECT 'thin_' || name, kind, client, k, vector FROM ref_thin;
CREATE FUNCTION dot(a float8[], b float8[]) RETURNS float8
LANGUAGE sql IMMUTABLE AS \$\$ SELECT sum(x * y) FROM unnest(a, b) AS t(x, y) \$\$;
-- ||P_A - P_B||^2 for one block (global, or one client's local) of two fits
-- (client, kind, pc), summed over the global block and averaged over the clients.
CREATE FUNCTION suberr(a_query text, b_query text) RETURNS float8 LANGUAGE plpgsql AS \$f\$
DECLARE r float8;
BEGIN
  EXECUTE format(\$q\$
    WITH a AS (%s), b AS (%s),
    blocks AS (SELECT kind, client FROM a UNION SELECT kind, client FROM b),
    terms AS (
      SELECT bl.kind,
             (SELECT count(*) FROM a WHERE a.kind = bl.kind AND a.client IS NOT DISTINCT FROM bl.client)
           + (SELECT count(*) FROM b WHERE b.kind = bl.kind AND b.client IS NOT DISTINCT FROM bl.client)
           - 2 * coalesce((SELECT sum(dot(a.pc, b.pc) ^ 2) FROM a JOIN b
                             ON a.kind = b.kind AND a.client IS NOT DISTINCT FROM b.client
                           WHERE a.kind = bl.kind AND a.client IS NOT DISTINCT FROM bl.client), 0) AS t
      FROM blocks bl)
    SELECT coalesce((SELECT sum(t) FROM terms WHERE kind = 'global'), 0)
         + coalesce((SELECT avg(t) FROM terms WHERE kind = 'local'), 0)\$q\$, a_query, b_query)
  INTO r;
  RETURN r;
END \$f\$;
-- max |[U, V_i]'[U, V_i] - I| over the clients of the fit in table t
CREATE FUNCTION infeasibility(t regclass) RETURNS float8 LANGUAGE plpgsql AS \$f\$
DECLARE r float8;
BEGIN
  EXECUTE format(\$q\$
    WITH fo AS (SELECT * FROM %s),
    owners AS (SELECT DISTINCT client FROM fo WHERE kind = 'local'),
    sets AS (SELECT o.client AS owner, f.* FROM owners o JOIN fo f ON f.kind = 'global' OR f.client = o.client)
    SELECT max(abs(dot(a.pc, b.pc)
                   - CASE WHEN a.kind = b.kind AND a.client IS NOT DISTINCT FROM b.client
                               AND a.component = b.component THEN 1 ELSE 0 END))
    FROM sets a JOIN sets b ON a.owner = b.owner\$q\$, t)
  INTO r;
  RETURN r;
END \$f\$;
});

my @conninfo = map { sprintf("host=%s port=%s dbname=postgres", $_->host, $_->port) }
  map { $shard{$_} } sort keys %clients;
my $shards = 'ARRAY[' . join(', ', map { "'$_'" } @conninfo) . ']';
my $query = q{'SELECT client, stats FROM e_stats ORDER BY client'};
my $cols = 'client, kind, component, pc, variance';

# ---- same answer as a single node, for each centre and weighting -----------

my @cases = (
	[ 'opt_none',    q{center => 'none'} ],
	[ 'opt_client',  q{center => 'client'} ],
	[ 'opt_global',  q{center => 'global'} ],
	[ 'opt_samples', q{center => 'none', weights => 'samples'} ]);
for my $case (@cases)
{
	my ($ref, $opts) = @$case;
	$coord->safe_psql('postgres', qq{
DROP TABLE IF EXISTS fed, single;
CREATE TABLE fed AS SELECT $cols FROM perpca_fit_federated($shards, $query, 2, 3, $opts);
CREATE TABLE fed_diag AS SELECT * FROM perpca_last_federated_fit();
CREATE TABLE single AS SELECT $cols FROM perpca_fit($query, 2, 3, $opts);
CREATE TABLE single_diag AS SELECT * FROM perpca_last_fit();
});
	my $err = $coord->safe_psql('postgres', q{
SELECT suberr('SELECT * FROM fed', 'SELECT * FROM single') < 1e-8,
       suberr('SELECT * FROM fed', $$SELECT client, kind, k AS component, vector AS pc FROM ref WHERE name = '} . $ref . q{'$$) < 1e-8,
       infeasibility('fed') < 1e-10,
       (SELECT count(*) FROM fed) = (SELECT count(*) FROM single),
       (SELECT count(*) FROM fed f JOIN single s
           ON f.kind = s.kind AND f.component = s.component AND f.client IS NOT DISTINCT FROM s.client
         WHERE abs(f.variance - s.variance) <= 1e-8 * greatest(abs(s.variance), 1)) = (SELECT count(*) FROM single)});
	is($err, 't|t|t|t|t', "$ref: federated = single node = oracle (subspaces 1e-8), feasible, same rows and variances");
	my $diag = $coord->safe_psql('postgres', q{
SELECT f.converged, f.n_shards, f.n_clients, f.d,
       abs(f.objective - s.objective) <= 1e-8 * abs(s.objective), f.kkt_residual < 1e-12
  FROM fed_diag f, single_diag s});
	is($diag, 't|2|20|10|t|t', "$ref: converged over 2 shards and 20 clients, same objective, KKT residual small");
	my $bytes = $coord->safe_psql('postgres', q{
SELECT rounds_run, setup_bytes, round_bytes, round_binary_bytes, result_bytes, stats_binary_bytes FROM fed_diag});
	my ($rounds, $setup, $round, $binary, $result, $stats) = split /\|/, $bytes;
	note "$ref: $rounds rounds; bytes: setup $setup, per round $round (packed float8: $binary), "
	  . "result $result; total " . ($setup + $rounds * $round + $result)
	  . "; the clients' perpca_stats: $stats (binary)";
	$coord->safe_psql('postgres', 'DROP TABLE fed_diag, single_diag');
}

# One engine: with the same options the federated fit runs exactly the rounds
# of perpca_fit (the sums over clients are exact, so the shards change no
# bit of them), for both solvers, every start, both updates and adaptive on
# and off.
my @same = (
	q{solver => 'paper', init => 'dispca', center => 'none', adaptive => false, tolerance => 1e-12, rounds => 20000},
	q{solver => 'paper', init => 'dispca', update => 'polar', step => 0.05, tolerance => 1e-10},
	q{solver => 'paper', init => 'best', center => 'global'},
	q{solver => 'lbfgs'},
	q{solver => 'lbfgs', init => 'dispca', center => 'global'},
	q{solver => 'lbfgs', init => 'qu', weights => 'samples'},
	q{solver => 'lbfgs', init => 'pooled', center => 'none'},
	q{solver => 'lbfgs', init => 'random', seed => 7},
	q{solver => 'lbfgs', scale => 'standard'},
	q{solver => 'lbfgs', scale => 'standard', center => 'global', weights => 'samples'});
for my $opts (@same)
{
	# scale 'standard': one node pools the divisors by another route, equal to rounding only
	my $same_rounds = $opts =~ /scale/ ? 'abs(f.rounds_run - s.rounds_run) <= 2' : 'f.rounds_run = s.rounds_run';
	$coord->safe_psql('postgres', qq{
DROP TABLE IF EXISTS fed, single, fed_diag, single_diag;
CREATE TABLE fed AS SELECT $cols FROM perpca_fit_federated($shards, $query, 2, 3, $opts);
CREATE TABLE fed_diag AS SELECT * FROM perpca_last_federated_fit();
CREATE TABLE single AS SELECT $cols FROM perpca_fit($query, 2, 3, $opts);
CREATE TABLE single_diag AS SELECT * FROM perpca_last_fit();
});
	is( $coord->safe_psql('postgres', qq{
SELECT f.converged = s.converged, $same_rounds, f.solver = s.solver,
       abs(f.objective - s.objective) <= 1e-10 * abs(s.objective),
       suberr('SELECT * FROM fed', 'SELECT * FROM single') < 1e-10,
       (SELECT count(*) FROM fed) = (SELECT count(*) FROM single)
  FROM fed_diag f, single_diag s}),
		't|t|t|t|t|t', "same rounds and answer as perpca_fit: $opts");
	note "$opts: " . $coord->safe_psql('postgres', q{
SELECT format('%s rounds federated, %s single node, %s bytes per round, %s s', f.rounds_run, s.rounds_run,
              f.round_bytes, round(f.seconds::numeric, 3)) FROM fed_diag f, single_diag s});
}

# Exact sums: the shards' sums are exact and added exactly, so listing the
# shards the other way round (they answer and are added in another order)
# and a query that returns the clients in another order give the same
# rounds and the same bits, for the default fit (starts, hops) and the
# paper's solver (041_federated_bits: other groupings of the clients).
my $shards_reversed = 'ARRAY[' . join(', ', map { "'$_'" } reverse @conninfo) . ']';
my $query_desc = q{'SELECT client, stats FROM e_stats ORDER BY client DESC'};
for my $opts (q{solver => 'lbfgs'}, q{solver => 'paper', init => 'dispca'})
{
	is( $coord->safe_psql('postgres', qq{
DROP TABLE IF EXISTS fed, fed_diag, fed2, fed2_diag;
CREATE TABLE fed AS SELECT $cols FROM perpca_fit_federated($shards, $query, 2, 3, $opts);
CREATE TABLE fed_diag AS SELECT * FROM perpca_last_federated_fit();
CREATE TABLE fed2 AS SELECT $cols FROM perpca_fit_federated($shards_reversed, $query_desc, 2, 3, $opts);
CREATE TABLE fed2_diag AS SELECT * FROM perpca_last_federated_fit();
SELECT a.rounds_run = b.rounds_run, a.objective = b.objective,
       (SELECT count(*) FROM fed f JOIN fed2 g ON f.client IS NOT DISTINCT FROM g.client
                                             AND f.kind = g.kind AND f.component = g.component
         WHERE f.pc = g.pc AND f.variance = g.variance) = (SELECT count(*) FROM fed)
  FROM fed_diag a, fed2_diag b}),
		't|t|t', "shards listed the other way round, clients in another order: the same rounds and bits ($opts)");
}

# The option hops reaches the federated fit: hops => 0 runs the starts only,
# the default hops after them (perpca_last_fit_starts shows either kind).
is( $coord->safe_psql('postgres', qq{
SELECT count(*) > 0 FROM perpca_fit_federated($shards, $query, 2, 3, hops => 0);
SELECT count(*) FILTER (WHERE start LIKE 'hop %') FROM perpca_last_fit_starts();
SELECT count(*) > 0 FROM perpca_fit_federated($shards, $query, 2, 3);
SELECT count(*) FILTER (WHERE start LIKE 'hop %') > 0 FROM perpca_last_fit_starts();}),
	"t\n0\nt\nt", 'hops => 0 reaches perpca_fit_federated: no hop; the default hops');

# Thin statistics (ten clients with 8 rows in d = 20) and two dense ones,
# split 6 / 6: thin S_i stay factored on the shards, for every centre.
my $thin_query = q{'SELECT client, perpca_stats(x) FROM thin_rows GROUP BY client ORDER BY client'};
for my $center ('client', 'none', 'global')
{
	is( $coord->safe_psql('postgres', qq{
DROP TABLE IF EXISTS fed;
CREATE TABLE fed AS SELECT $cols FROM perpca_fit_federated($shards, $thin_query, 2, 2, center => '$center');
SELECT suberr('SELECT * FROM fed', \$\$SELECT $cols FROM perpca_fit($thin_query, 2, 2, center => '$center')\$\$) < 1e-8,
       suberr('SELECT * FROM fed', \$\$SELECT client, kind, k AS component, vector AS pc FROM ref
                                    WHERE name = 'thin_opt_$center'\$\$) < 1e-8,
       infeasibility('fed') < 1e-10, (SELECT count(*) FROM fed), converged, n_clients
  FROM perpca_last_federated_fit()}),
		't|t|t|26|t|12', "thin and dense clients, center $center: federated = single node = oracle");
}

# Scale 'standard' with thin clients: the shards scale their rows with the
# divisors pooled over both shards, as perpca_fit does on one node.
is( $coord->safe_psql('postgres', qq{
DROP TABLE IF EXISTS fed;
CREATE TABLE fed AS SELECT $cols FROM perpca_fit_federated($shards, $thin_query, 2, 2, center => 'global',
                                                          scale => 'standard');
SELECT suberr('SELECT * FROM fed', \$\$SELECT $cols FROM perpca_fit($thin_query, 2, 2, center => 'global',
                                                                   scale => 'standard')\$\$) < 1e-8,
       suberr('SELECT * FROM fed', \$\$SELECT $cols FROM perpca_fit($thin_query, 2, 2, center => 'global')\$\$) > 1e-4,
       converged
  FROM perpca_last_federated_fit()}),
	't|t|t', 'thin and dense clients, scale standard: federated = single node, and not the unscaled fit');

# Rows with gaps: each shard reads its rows with the one row
# reader under the fit's missing option; the skips are counted at the
# coordinator, and the fit is perpca_fit's on one node (2 + 1: client 2
# keeps 2 complete rows, too few for 2 local components to converge).
my $gaps = q{CREATE TABLE gap_rows AS SELECT client, x FROM thin_rows WHERE client <= 12;
UPDATE gap_rows SET x[1] = NULL WHERE client IN (2, 9) AND x[2] > 0;
UPDATE gap_rows SET x[3] = NULL WHERE client = 4;
SELECT count(*) FROM gap_rows WHERE array_position(x, NULL) IS NOT NULL;};
my $gap_rows = 0;
$gap_rows += $shard{$_}->safe_psql('postgres', $gaps) for sort keys %shard;
is($coord->safe_psql('postgres', $gaps), $gap_rows, "the shards hold the coordinator's $gap_rows rows with gaps");
my $gap_query = q{'SELECT client, x FROM gap_rows'};
is( $coord->safe_psql('postgres', qq{
DROP TABLE IF EXISTS fed;
CREATE TABLE fed AS SELECT $cols FROM perpca_fit_federated($shards, $gap_query, 2, 1, missing => 'skip');
CREATE TEMP TABLE fed_skipped AS SELECT rows_skipped, n_clients FROM perpca_last_federated_fit();
SELECT suberr('SELECT * FROM fed', \$\$SELECT $cols FROM perpca_fit($gap_query, 2, 1, missing => 'skip')\$\$) < 1e-8,
       f.rows_skipped, f.rows_skipped = (SELECT rows_skipped FROM perpca_last_fit()), f.n_clients
  FROM fed_skipped f}),
	"t|$gap_rows|t|11", 'rows with gaps, missing => skip: federated = single node, every skipped row counted, the empty client left out');
my ($gap_ret, $gap_err) = fed_error($shards, $gap_query, '2, 2');
like($gap_err, qr/input row element \d+ of 20 is NULL.*missing => 'skip' to perpca_fit_federated/s,
	'rows with gaps, missing => error (default): the element, and the hint of perpca_fit_federated');
($gap_ret, $gap_err) = fed_error($shards, $gap_query, "2, 2, missing => 'observed'");
like($gap_err, qr/0A000|cannot read rows with missing => 'observed'/, 'missing => observed: refused at once');
# a federated fit states no sketch's bound: sketched statistics on a shard are refused, naming perpca_fit
($gap_ret, $gap_err) = fed_error($shards, q{'SELECT client, perpca_sketch(x, 2, ''skip'') FROM gap_rows GROUP BY client'}, '1, 1');
like($gap_err, qr/perpca_fit_federated does not take sketched statistics.*perpca_fit, on one server/s,
	'sketched statistics on a shard: refused, with the hint to fit them with perpca_fit');

# The comparison can fail: a fit with other ranks is told apart.
is( $coord->safe_psql('postgres', qq{
SELECT suberr('SELECT * FROM fed',
              \$\$SELECT $cols FROM perpca_fit($query, 2, 3, center => 'client')\$\$) > 1e-4}),
	't', 'the comparison tells fits of different problems apart');

# What shipping the statistics would cost in text form, for the record.
my $text_bytes = 0;
$text_bytes += $shard{$_}->safe_psql('postgres', 'SELECT sum(octet_length(stats::text)) FROM e_stats')
  for keys %shard;
note "shipping every client's perpca_stats as text: $text_bytes bytes";

# Shards with no client of the query take no part; the rest still fit.
is( $coord->safe_psql('postgres', qq{
SELECT count(*) FROM perpca_fit_federated($shards,
    'SELECT client, stats FROM e_stats WHERE client <= 8', 2, 3, center => 'none');
SELECT n_shards, n_clients FROM perpca_last_federated_fit()}),
	"26\n1|8", 'a shard without clients is skipped (2 global + 8 x 3 local rows)');

# ---- failures: clear errors, nothing left open on the shards ---------------

# Sessions the coordinator holds open on a shard.
sub open_sessions
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		q{SELECT count(*) FROM pg_stat_activity WHERE application_name = 'perpca_fit_federated'});
}

# No coordinator session left on either shard (waits for backends to exit).
sub no_sessions_left
{
	my ($what) = @_;
	for my $name (sort keys %shard)
	{
		ok( $shard{$name}->poll_query_until('postgres',
				q{SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'perpca_fit_federated'}),
			"$what: no session left on $name");
	}
}

# Run a federated fit with the given shards and query; return (ok, stderr).
sub fed_error
{
	my ($shard_list, $q, $ranks) = @_;
	$ranks //= '2, 3';
	my ($ret, $out, $err) = $coord->psql('postgres',
		"SELECT count(*) FROM perpca_fit_federated($shard_list, $q, $ranks)");
	return ($ret, $err);
}

# a shard that is down (a port nobody listens on)
my $down_port = PostgreSQL::Test::Cluster::get_free_port();
my $down = sprintf('ARRAY[%s, %s]', "'$conninfo[0]'",
	sprintf("'host=%s port=%d dbname=postgres'", $shard{shard2}->host, $down_port));
my ($ret, $out, $err);
($ret, $err) = fed_error($down, $query);
isnt($ret, 0, 'a shard that is down: the fit fails');
like($err, qr/could not connect to shard 2/, 'a shard that is down: the error names the shard');
no_sessions_left('shard down');

# an invalid connection string
($ret, $err) = fed_error("ARRAY['$conninfo[0]', 'no_such_keyword=1']", $query);
like($err, qr/ERROR:  invalid connection string for shard 2/, 'an invalid connection string is named');
no_sessions_left('invalid connection string');

# a database without perpca
(my $bare = $conninfo[1]) =~ s/dbname=postgres/dbname=bare/;
($ret, $err) = fed_error("ARRAY['$conninfo[0]', '$bare']", $query);
like($err, qr/extension "perpca" is not installed on shard 2/, 'a shard without perpca is named');
no_sessions_left('no perpca');

# the shard's own error comes back with its SQLSTATE
($ret, $err) = fed_error($shards, q{'SELECT client, stats FROM no_such_table'});
like($err, qr/ERROR:  shard 1: relation "no_such_table" does not exist/, 'a failing shard query: the shard error is relayed');
($ret, $out, $err) = $coord->psql('postgres', q{
DO $$ BEGIN
  PERFORM perpca_fit_federated(ARRAY['} . $conninfo[0] . q{'], 'SELECT 1', 2, 3);
EXCEPTION WHEN datatype_mismatch THEN RAISE NOTICE 'sqlstate kept';
END $$});
like($err, qr/NOTICE:  sqlstate kept/, 'the shard\'s SQLSTATE is kept (datatype_mismatch)');
no_sessions_left('remote error');

# n_global + n_local larger than d is rejected on the shards; absurd ranks at once
($ret, $err) = fed_error($shards, $query, '5, 6');
like($err, qr/exceed the dimension 10/, 'ranks too large for d are rejected');
($ret, $err) = fed_error($shards, $query, '1, 2147483647');
like($err, qr/option "n_local" must be between 0 and 16000/, 'an absurd rank is rejected, no crash');
($ret, $err) = fed_error($shards, $query, '0, 0');
like($err, qr/no components to fit/, 'no components at all is an error');

# one client key on two shards: refused before the first round, naming the key and both shards
($ret, $err) = fed_error($shards, q{'SELECT 1, stats FROM e_stats ORDER BY client LIMIT 1'});
like($err, qr/client "1" is on shard 1 and on shard 2/, 'a key on two shards is refused, naming both');
no_sessions_left('duplicate key');

# cancellation: the shards sleep in their query; statement_timeout on the
# coordinator cancels the fit, cancels the shards' queries and closes the
# connections (without the cancel the shards would sleep for 300 s, longer
# than poll_query_until waits), and the session goes on.
my $slow = q{'SELECT client, stats FROM e_stats, pg_sleep(300) ORDER BY client'};

($ret, $out, $err) = $coord->psql('postgres', qq{
SET statement_timeout = '1s';
SELECT count(*) FROM perpca_fit_federated($shards, $slow, 2, 3);
RESET statement_timeout;
SELECT 'still usable', count(*) FROM perpca_fit_federated($shards, $query, 2, 3);
}, on_error_stop => 0);
like($err, qr/canceling statement due to statement timeout/, 'statement_timeout cancels a federated fit');
like($out, qr/still usable\|62/, 'the same session fits again after the cancel');
no_sessions_left('cancel');
is(open_sessions($shard{shard1}), '0', 'nothing left open on shard1 after all that');

# ---- the shard-side functions on their own --------------------------------

my $s1 = $shard{shard1};
($ret, $out, $err) = $s1->psql('postgres',
	q{SELECT * FROM perpca_internal.shard_round('nope', '{{1}}', 0.1, 'stgd', 'polar', false)});
like($err, qr/federated fit "nope" is not open in this session/, 'a round on a fit that is not open');
is( $s1->safe_psql('postgres', q{
SELECT n_clients, dim, n_rows > 0, array_length(keys, 1)
  FROM perpca_internal.shard_open('t1', 'SELECT client, stats FROM e_stats', 2, 3, 'equal', 0);
SELECT weight FROM perpca_internal.shard_init('t1', NULL);
SELECT array_dims(basis), array_length(keys, 1), columns[1] FROM perpca_internal.shard_basis('t1', false, true);
SELECT perpca_internal.shard_close('t1'), perpca_internal.shard_close('t1');}),
	"8|10|t|8\n8\n[1:10][1:40]|8|5\nt|f", 'open, init, basis (8 clients\' blocks of 5 columns, with their keys), close');
# the shard functions are out of the user's namespace
is($s1->safe_psql('postgres', q{SELECT count(*) FROM pg_proc WHERE proname LIKE 'perpca_shard%'}), '0',
	'no shard function in the extension schema');

$coord->stop;
$shard{$_}->stop for keys %shard;

done_testing();
