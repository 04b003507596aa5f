# 095_own_table.pl -- the README's "Your own table" block runs as it stands:
# it is read from README.md, run against the wine data (test/data/wine.csv)
# with ON_ERROR_STOP, and what it leaves behind is checked.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PerpcaTest;

# The first ```sql block after the "## Your own table" heading.
open(my $fh, '<', test_path('README.md')) or die "README.md: $!";
my ($state, $block) = ('before', '');
while (my $line = <$fh>)
{
	$state = 'section' if $state eq 'before' && $line =~ /^## Your own table\b/;
	if ($state eq 'section' && $line =~ /^```sql/) { $state = 'block'; next; }
	last if $state eq 'block' && $line =~ /^```/;
	$block .= $line if $state eq 'block';
}
close($fh);
like($block, qr/perpca_train\('wine_model'/, 'the README has the block');

my $node = start_node('own_table');
my $wine = test_path('test/data/wine.csv');
$node->safe_psql('postgres', qq{
CREATE EXTENSION perpca;
CREATE TABLE wine (id int PRIMARY KEY, cultivar int NOT NULL,
    alcohol float8, malic_acid float8, ash float8, alcalinity float8, magnesium float8,
    phenols float8, flavanoids float8, nonflavanoid_phenols float8, proanthocyanins float8,
    color_intensity float8, hue float8, od280 float8, proline float8);
\\copy wine from '$wine' csv header
});

my ($rc, $out, $err) = $node->psql('postgres', $block, extra_params => [ '-v', 'ON_ERROR_STOP=1' ]);
is($rc, 0, 'the block runs without an error') or diag($err);
like($out, qr/\|t$/m, 'the rank scan recommends a pair');

# What the block left: a scaled model of the 3 cultivars in d = 13, which
# explains most of each cultivar's standardized variance with 2 + 1 components.
is( $node->safe_psql('postgres', q{
SELECT d, n_global, n_clients, client_type, options ->> 'scale'
  FROM wine_model_info}),
	'13|2|3|integer|standard', 'wine_model: 3 cultivars, d = 13, scaled');
is( $node->safe_psql('postgres', q{
SELECT count(*), bool_and(global_ratio + local_ratio > 0.5)
  FROM perpca_evaluate('wine_model', 'SELECT cultivar, x FROM wine_x')}),
	'3|t', 'each cultivar: more than half its variance explained');
is( $node->safe_psql('postgres', q{
SELECT count(*) FILTER (WHERE cardinality(perpca_model_scores('wine_model', cultivar, x)) = 3)
  FROM wine_x}),
	'178', 'every wine gets 2 global + 1 local scores');

is( $node->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM perpca_component_variance('wine_model')),
       (SELECT count(*) FILTER (WHERE out_of_control) BETWEEN 1 AND 30
          FROM wine_x w, perpca_model_monitor('wine_model', w.cultivar, w.x, alpha => 0.05)),
       (SELECT string_agg(cluster::text, ',' ORDER BY client) FROM perpca_clusters('wine_model', 2))}),
	'9|t|1,2,1', 'per-component variance, a few wines out of control, cultivars 0 and 2 together');
is( $node->safe_psql('postgres', q{
SELECT count(*), bool_and(top_features ~ '^[a-z_0-9]+ [+-]') , bool_or(top_features LIKE '%proline%')
  FROM perpca_component_info('wine_model')}),
	'5|t|t', 'components read by name');
is( $node->safe_psql('postgres', q{
SELECT array_to_string(feature_names, ',') FROM wine_model_info}),
	'alcohol,malic_acid,ash,alcalinity,magnesium,phenols,flavanoids,nonflavanoid_phenols,proanthocyanins,'
	  . 'color_intensity,hue,od280,proline', 'trained from the feature columns: they name the features');
is( $node->safe_psql('postgres', q{
SELECT string_agg(concat_ws(' ', entry, kind, outcome, clients, rows, rounds_run > 0), ', ' ORDER BY entry)
  FROM perpca_model_history('wine_model')}),
	'1 train fitted 3 178 t, 2 refresh unchanged 3 178 f', 'the history: the train, then a refresh that fitted nothing');

$node->stop;
done_testing();
