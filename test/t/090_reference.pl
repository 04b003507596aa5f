# 090_reference.pl -- the README's reference matches the catalog: every
# function and aggregate in the extension's own schema (what \df perpca*
# shows a user) is named in the README's Reference tables, and every
# perpca_* name those tables give exists there -- so neither can drift.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PerpcaTest;

my $node = start_node('reference');
$node->safe_psql('postgres', 'CREATE EXTENSION perpca');

# Functions and aggregates of the extension in its own schema (not perpca_internal).
my %catalog = map { $_ => 1 } split /\n/, $node->safe_psql(
	'postgres', q{
SELECT DISTINCT p.proname
  FROM pg_catalog.pg_proc p
  JOIN pg_catalog.pg_depend dp ON dp.classid = 'pg_catalog.pg_proc'::regclass AND dp.objid = p.oid
                             AND dp.deptype = 'e'
  JOIN pg_catalog.pg_extension e ON e.oid = dp.refobjid AND e.extname = 'perpca'
 WHERE p.pronamespace = e.extnamespace
 ORDER BY 1});
ok(scalar(keys %catalog) > 20, 'the extension schema holds the user functions');

# The perpca_* names in the table rows of the README's "## Reference" section.
open(my $fh, '<', test_path('README.md')) or die "README.md: $!";
my ($in_reference, %readme) = (0);
while (my $line = <$fh>)
{
	$in_reference = 1 if $line =~ /^## Reference\b/;
	last if $in_reference && $line =~ /^## / && $line !~ /^## Reference\b/;
	next unless $in_reference && $line =~ /^\|/;
	$readme{$1} = 1 while $line =~ /\b(perpca_[a-z0-9_]+)\b(?!\.)/g;
}
close($fh);
delete $readme{perpca_internal};

my @undocumented = grep { !$readme{$_} } sort keys %catalog;
is_deeply(\@undocumented, [], 'every function in the extension schema is in the README reference');
my @unknown = grep { !$catalog{$_} } sort keys %readme;
is_deeply(\@unknown, [], 'every perpca_* name of the README reference exists in the extension schema');

$node->stop;
done_testing();
