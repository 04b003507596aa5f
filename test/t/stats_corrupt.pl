use strict;
use warnings;

# ---- stored bytes corrupted: a column retyped by a superuser --------------------------------
# Valid values' stored bytes (without the 4-byte length word: version,
# form, ell, dim, rows, n, then the doubles and, for versions 2 and 3, the
# skipped count) are mutated with a fixed seed: header fields set to edge
# values, bytes flipped, truncated or appended, doubles made NaN, infinite,
# huge or random, and half the time the length made to match the mutated
# header again, so that the checks of the numbers are reached too.  The
# bytes go into a bytea column that is then retyped as perpca_stats
# (ALTER ... USING an identity function: no input function runs), as a
# catalog edit or a damaged disk would leave them.  Every case then meets
# every reader of the type, each in its own subtransaction (one DO block).
# Checks: the backend never crashes; a reader gives a result or an error
# whose SQLSTATE is a clean rejection (not XX000); every value a reader
# accepted and every merge it wrote reads back through text and binary
# input.

my @READERS = qw(out send count dim skipped form mean covariance uncentered total_variance
  merge merge_agg scale_factors fit);

sub corrupt_pick { return $_[ int(rand(@_)) ]; }

# The length of the bytes (after the length word) that a header describes, or -1.
sub corrupt_expected_len
{
	my ($b) = @_;
	return -1 if length($b) < 20;
	my ($version, $form, $ell, $d, $rows, $n) = unpack('C C s< l< l< q<', $b);
	return -1 if $d < 1 || $d > 16000 || $n < 0;
	if ($version == 3 && $form == 2)
	{
		return -1 if $ell < 1 || $ell > 4096 || $rows < 0 || $rows > $ell;
		return 20 + 8 * (2 * $d + 2 + $rows * $d) + 8;
	}
	return -1 unless ($version == 1 || $version == 2) && ($form == 0 || $form == 1);
	return -1 if $form == 1 && $n > 100_000;
	my $values = 2 * $d + ($form == 1 ? $n * $d : $d * ($d + 1) / 2);
	return -1 if $values > 1_000_000;
	return 20 + 8 * $values + ($version == 2 ? 8 : 0);
}

sub corrupt_double
{
	return rand() < 0.7
	  ? pack('d<', corrupt_pick(9**9**9, -9**9**9, (9**9**9) / (9**9**9), 1e308, -1e308, 5e-324, 0, -1, 1e154))
	  : pack('C8', map { int(rand(256)) } 1 .. 8);
}

sub corrupt_mutate_once
{
	my ($b) = @_;
	my $kind = int(rand(12));
	my $len = length($b);
	$b .= "\0" x (20 - $len) if $len < 20 && $kind <= 5;
	my ($version, $form, $ell, $d, $rows, $n) = unpack('C C s< l< l< q<', $b . ("\0" x 20));
	if ($kind == 0) { substr($b, 0, 1, chr(corrupt_pick(0, 1, 2, 3, 4, 255))); }
	elsif ($kind == 1) { substr($b, 1, 1, chr(corrupt_pick(0, 1, 2, 3, 255))); }
	elsif ($kind == 2) { substr($b, 2, 2, pack('s<', corrupt_pick(-32768, -1, 0, 1, 2, 3, $ell + 1, 4096, 4097, 32767))); }
	elsif ($kind == 3)
	{
		substr($b, 4, 4,
			pack('l<', corrupt_pick(-2147483648, -1, 0, 1, 2, 3, $d - 1, $d + 1, 2 * $d, 4096, 4097, 16000, 16001, 2147483647)));
	}
	elsif ($kind == 4) { substr($b, 8, 4, pack('l<', corrupt_pick(-1, 0, 1, 2, 3, $ell, $ell + 1, $rows + 1, 2147483647))); }
	elsif ($kind == 5)
	{
		substr($b, 12, 8,
			pack('q<', corrupt_pick(-1, 0, 1, 2, 3, $n - 1, $n + 1, 2 * $n, 2147483648, 4611686018427387904, 9223372036854775807, -9223372036854775807)));
	}
	elsif ($kind == 6) { $b = substr($b, 0, int(rand($len + 1))); }
	elsif ($kind == 7) { $b .= join('', map { chr(int(rand(256))) } 1 .. 1 + int(rand(64))); }
	elsif ($kind == 8 && $len > 0)
	{
		my $p = int(rand($len));
		substr($b, $p, 1, chr(ord(substr($b, $p, 1)) ^ (1 << int(rand(8)))));
	}
	elsif ($kind == 9 && $len > 0) { substr($b, int(rand($len)), 1, chr(int(rand(256)))); }
	elsif ($kind == 10 && $len >= 28)
	{
		substr($b, 20 + 8 * int(rand(int(($len - 20) / 8))), 8, corrupt_double()) for 1 .. 1 + int(rand(3));
	}
	elsif ($kind == 11) { substr($b, 2, 18, join('', map { chr(int(rand(256))) } 1 .. 18)) if $len >= 20; }
	return $b;
}

# One to three mutations; then, half the time, the length the header asks for.
sub corrupt_mutate
{
	my ($b) = @_;
	$b = corrupt_mutate_once($b) for 1 .. 1 + int(rand(3));
	my $want = corrupt_expected_len($b);
	if ($want >= 0 && rand() < 0.5)
	{
		$b .= corrupt_double() while length($b) < $want;
		$b = substr($b, 0, $want);
	}
	return $b;
}

sub stats_corrupt_fuzz
{
	my ($node, $cases) = @_;
	my @raw = map { pack('H*', $_) }
	  split /\n/, $node->safe_psql('postgres', q{SELECT encode(stats_bytes(v), 'hex') FROM base ORDER BY id});
	my $sql = "CREATE TABLE corrupt (id int PRIMARY KEY, v bytea);\nINSERT INTO corrupt VALUES\n";
	$sql .= join(",\n", map { "($_, '\\x" . unpack('H*', corrupt_mutate(corrupt_pick(@raw))) . "')" } 1 .. $cases);
	$sql .= ";\n" . q{
-- the column retyped as a superuser can: no input function sees the bytes
ALTER TABLE corrupt ALTER COLUMN v TYPE perpca_stats USING raw_stats(v);
CREATE TABLE corrupt_result (id int, reader text, sqlstate text, PRIMARY KEY (id, reader));
CREATE TABLE corrupt_written (id int, reader text, v perpca_stats);
CREATE FUNCTION corrupt_read(i int, reader text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    val perpca_stats;
    wrote perpca_stats;
BEGIN
    SELECT c.v INTO val FROM corrupt c WHERE c.id = i;
    CASE reader
    WHEN 'out' THEN PERFORM val::text; wrote := val;
    WHEN 'send' THEN PERFORM perpca_stats_send(val);
    WHEN 'count' THEN PERFORM perpca_count(val);
    WHEN 'dim' THEN PERFORM perpca_dim(val);
    WHEN 'skipped' THEN PERFORM perpca_skipped(val);
    WHEN 'form' THEN PERFORM perpca_stats_form(val);
    WHEN 'mean' THEN PERFORM perpca_mean(val);
    WHEN 'covariance' THEN PERFORM perpca_covariance(val);
    WHEN 'uncentered' THEN PERFORM perpca_covariance(val, false);
    WHEN 'total_variance' THEN PERFORM perpca_total_variance(val);
    WHEN 'merge' THEN wrote := perpca_merge(val, val);
    WHEN 'merge_agg' THEN SELECT perpca_merge(x) INTO wrote FROM (SELECT val UNION ALL SELECT b.v FROM base b WHERE perpca_dim(b.v) = perpca_dim(val) LIMIT 2) AS m(x);
    WHEN 'scale_factors' THEN PERFORM perpca_scale_factors(val);
    WHEN 'fit' THEN PERFORM count(*) FROM perpca_fit(format('SELECT c, v FROM (VALUES (''a''), (''b'')) AS k(c), corrupt WHERE id = %s', i), 1, 0);
    END CASE;
    IF wrote IS NOT NULL THEN
        INSERT INTO corrupt_written VALUES (i, reader, wrote);
    END IF;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;
END $$;
DO $$
DECLARE
    i int;
    r text;
BEGIN
    FOR i IN SELECT id FROM corrupt ORDER BY id LOOP
        FOREACH r IN ARRAY '@READERS@'::text[] LOOP
            INSERT INTO corrupt_result VALUES (i, r, corrupt_read(i, r));
        END LOOP;
    END LOOP;
END $$;
};
	my $readers = '{' . join(',', @READERS) . '}';
	$sql =~ s/\@READERS\@/$readers/;
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run([ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'), '-f', '-' ],
		'<', \$sql, '>', \$out, '2>', \$err);
	ok($ok, "corrupt: $cases corrupted stored values met every reader (the backend did not crash)")
	  or diag(substr($err, -2000));
	return unless $ok;
	my $all = $node->safe_psql('postgres', 'SELECT count(*) FROM corrupt_result');
	is($all, $cases * @READERS, "corrupt: $cases cases x " . scalar(@READERS) . ' readers, each with its outcome');
	my $states = $node->safe_psql('postgres',
		q{SELECT sqlstate || ' x' || count(*) FROM corrupt_result GROUP BY sqlstate ORDER BY sqlstate});
	note("corrupt outcomes: " . join(', ', split /\n/, $states));
	is($node->safe_psql('postgres', q{
SELECT string_agg(DISTINCT reader || ' ' || sqlstate, ', ') FROM corrupt_result
 WHERE sqlstate NOT IN ('ok', 'XX001', '0A000', '22000', '22003', '2202E', '54000', '22023')}), '',
		'corrupt: every rejection is a clean one (a corrupted value XX001, an invalid one 22000, no XX000)');
	cmp_ok($node->safe_psql('postgres', q{SELECT count(DISTINCT id) FROM corrupt_result WHERE sqlstate = 'XX001'}),
		'>', $cases / 10, 'corrupt: sizes that contradict their header are found (XX001)');
	cmp_ok($node->safe_psql('postgres', q{SELECT count(DISTINCT id) FROM corrupt_result WHERE reader = 'out' AND sqlstate = '22000'}),
		'>', $cases / 20, 'corrupt: numbers that no rows have are found (22000)');
	# what a reader accepted or wrote reads back, through text and binary input
	my $dir = PostgreSQL::Test::Utils::tempdir();
	$node->safe_psql('postgres', qq{
COPY (SELECT v FROM corrupt_written ORDER BY id, reader) TO '$dir/written.bin' (FORMAT binary);
CREATE TABLE corrupt_back (v perpca_stats);
COPY corrupt_back FROM '$dir/written.bin' (FORMAT binary);
});
	my ($written, $text_back, $bin_back) = split /\|/, $node->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM corrupt_written),
       (SELECT count(*) FROM corrupt_written WHERE v::text::perpca_stats::text = v::text),
       (SELECT count(*) FROM corrupt_back b WHERE EXISTS (SELECT FROM corrupt_written w WHERE w.v::text = b.v::text))});
	cmp_ok($written, '>', $cases / 20, "corrupt: $written values accepted or written by a reader");
	is($text_back, $written, 'corrupt: each reads back through text input, unchanged');
	is($bin_back, $written, 'corrupt: each reads back through binary input, unchanged');
	my $log = slurp_file($node->logfile);
	unlike($log, qr/terminated by signal|server process .* was terminated/, 'corrupt: no backend crashed');
	return;
}

1;
