# 036_row_report.pl -- every function that reads rows reports what it left
# out in the same words: one NOTICE per query read, built by one C
# function (row_report, src/row_reader.c), "FUNC: N rows left out for missing
# values, in a of b groups; k group(s) with no rows: ...; k group(s) without
# variance: ...", with the same DETAIL.  Each function reads the same rows
# under missing => 'skip', so after its name each message must be perpca_fit's;
# the row functions and the federated coordinator, which see no groups, say
# the first part and its sentence.  0.3.0 worded these differently per
# function (and the empty group and the group without variance apart).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PerpcaTest;

my $node = start_node('row_report');
$node->safe_psql('postgres', q{
CREATE EXTENSION perpca;
-- g0 complete, g1 with 2 rows with a gap, 'gaps' only rows with gaps, 'one' one row
CREATE TABLE t (g text, x float8[]);
INSERT INTO t SELECT 'g' || (i % 2), ARRAY[sin(i), cos(i * 1.3), (i * 7) % 11] FROM generate_series(1, 40) i;
UPDATE t SET x[2] = NULL WHERE g = 'g1' AND x[3] IN (3, 5);
INSERT INTO t VALUES ('gaps', ARRAY[NULL, 1, 2]), ('gaps', ARRAY[1, NULL, 2]), ('one', ARRAY[1, 2, 3]);
});
my $gaps = $node->safe_psql('postgres', q{SELECT count(*) FROM t WHERE array_position(x, NULL) IS NOT NULL});
my $conn = sprintf("host=%s port=%s dbname=postgres", $node->host, $node->port);
my $q = q{'SELECT g, x FROM t'};

# The NOTICEs of one statement: [function, message after "function: ", detail].
sub notices
{
	my ($sql) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', "SET client_min_messages = notice;\n$sql");
	is($ret, 0, "runs: $sql") or diag($err);
	my @found;
	for my $line (split /\n/, $err)
	{
		if ($line =~ /NOTICE:\s+(perpca_[a-z_]+(?: \(held-out rows\))?): (.*)$/) { push @found, [ $1, $2, '' ]; }
		elsif ($line =~ /DETAIL:\s+(.*)$/ && @found) { $found[-1][2] = $1; }
	}
	return grep { $_->[1] =~ /left out for missing values|with no rows|without variance/ } @found;
}

my ($ref) = notices("SELECT count(*) FROM perpca_fit($q, 1, 1, missing => 'skip')");
ok(defined $ref, 'perpca_fit reports') or BAIL_OUT('no reference NOTICE');
is($ref->[1],
	"$gaps rows left out for missing values, in 2 of 4 groups; 1 group with no rows: 'gaps'; 1 group without variance: 'one'",
	'perpca_fit names the rows, the empty group and the group without variance');

$node->safe_psql('postgres', q{SELECT count(*) FROM perpca_train('m_p', 'SELECT g, x FROM t WHERE g = ''g0''', 1, 1)});
my @calls = (
	[ 'perpca_train', "SELECT count(*) FROM perpca_train('m', $q, 1, 1, missing => 'skip')" ],
	[ 'perpca_refresh', "SELECT count(*) FROM perpca_refresh('m', warm => false)" ],
	[ 'perpca_choose_ranks', "SELECT count(*) FROM perpca_choose_ranks($q, heldout => $q, global_ranks => '{1}', local_ranks => '{0}', missing => 'skip')" ],
	[ 'perpca_evaluate', "SELECT count(*) FROM perpca_evaluate('m', $q, missing => 'skip')" ],
	[ 'perpca_evaluate_summary', "SELECT count(*) FROM perpca_evaluate_summary('m', $q, missing => 'skip')" ],
	[ 'perpca_evaluate_imputation', "SELECT count(*) FROM perpca_evaluate_imputation('m', $q, 0.9, 1, missing => 'skip')" ],
	[ 'perpca_personalize_clients', "SELECT count(*) FROM perpca_personalize_clients('m_p', $q, missing => 'skip')" ]);
for my $call (@calls)
{
	my ($func, $sql) = @$call;
	my @n = notices($sql);
	ok(scalar(@n) >= 1, "$func reports");
	for my $n (@n)
	{
		like($n->[0], qr/^\Q$func\E( \(held-out rows\))?$/, "$func reports as itself ($n->[0])");
		is($n->[1], $ref->[1], "$n->[0]: the message of perpca_fit");
		is($n->[2], $ref->[2], "$n->[0]: the detail of perpca_fit");
	}
}

# Without groups: the first part and its sentence, the same words.
my ($skipped_part) = $ref->[1] =~ /^([^,;]+)/;
my ($skipped_sentence) = $ref->[2] =~ /^(.*?\.)(?: A group|$)/;
for my $call (
	[ 'perpca_model_scores', "SELECT count(s) FROM (SELECT perpca_model_scores('m', g, x, missing => 'skip') AS s FROM t) q" ],
	[ 'perpca_fit_federated', "SELECT count(*) FROM perpca_fit_federated(ARRAY['$conn'], $q, 1, 1, missing => 'skip')" ])
{
	my ($func, $sql) = @$call;
	my @n = notices($sql);
	is(scalar(@n), 1, "$func gives one NOTICE");
	is($n[0][0], $func, "$func reports as itself");
	is($n[0][1], $skipped_part, "$func: perpca_fit's first part");
	is($n[0][2], $skipped_sentence, "$func: perpca_fit's first sentence");
}

$node->stop;
done_testing();
