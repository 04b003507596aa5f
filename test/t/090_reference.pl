# 090_reference.pl -- the README's reference matches the catalog: every
# function and aggregate in the extension's own schema (what \df perpca*
# shows a user) is named in the README's Reference tables, and every
# perpca_* name those tables give exists there -- so neither can drift; and
# every output column and every column of a model's tables is explained there.
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

# Every output column of those functions, and every column of a model's
# tables, is named (in backquotes) somewhere in the Reference section.
my $reference = '';
open($fh, '<', test_path('README.md')) or die "README.md: $!";
$in_reference = 0;
while (my $line = <$fh>)
{
	$in_reference = 1 if $line =~ /^## Reference\b/;
	last if $in_reference && $line =~ /^## / && $line !~ /^## Reference\b/;
	$reference .= $line if $in_reference;
}
close($fh);
my %named = map { $_ => 1 } ($reference =~ /`([a-z_0-9]+)`/g);

my @outputs = split /\n/, $node->safe_psql(
	'postgres', q{
SELECT DISTINCT p.proname || '.' || a.name
  FROM pg_catalog.pg_proc p
  JOIN pg_catalog.pg_depend dp ON dp.classid = 'pg_catalog.pg_proc'::regclass AND dp.objid = p.oid
                             AND dp.deptype = 'e'
  JOIN pg_catalog.pg_extension e ON e.oid = dp.refobjid AND e.extname = 'perpca'
  CROSS JOIN LATERAL unnest(p.proargnames, p.proargmodes) AS a(name, mode)
 WHERE p.pronamespace = e.extnamespace AND a.mode IN ('o', 't', 'b')
 ORDER BY 1});
ok(scalar(@outputs) > 50, 'the functions have output columns');
my @unexplained = grep { my ($f, $c) = split /\./; !$named{$c} } @outputs;
is_deeply(\@unexplained, [], 'every output column is named in the README reference');

# Every ratio a function returns is defined in the Reference's table of
# ratios (its first column names it).
my ($ratios) = $reference =~ /^#### Ratios\n(.*?)^#/ms;
ok(defined $ratios, 'the Reference has a section of ratios');
my %defined = map { $_ => 1 } map { ((split /\|/)[1] // '') =~ /`([a-z_0-9]+)`/g } grep { /^\| `/ } split(/\n/, $ratios // '');
my @undefined = grep { my ($f, $c) = split /\./; $c =~ /(^|_)ratio(_|$)/ && !$defined{$c} } @outputs;
is_deeply(\@undefined, [], 'every ratio a function returns is defined in the Reference');

# The README is the functions' manual; their COMMENTs are a line for \df+:
# every function, aggregate and procedure of the extension has a comment of
# at most 300 characters, and each in the extension's own schema (what a
# user calls) ends with "(README: Reference, S)", S a section of the
# Reference.
my %sections = map { $_ => 1 } ($reference =~ /^### (.+?)\s*$/mg);
ok(scalar(keys %sections) >= 5, 'the Reference has its sections');
my @comments = map { [ split /\t/, $_, 4 ] } split /\n/, $node->safe_psql(
	'postgres', q{
SELECT p.oid::regprocedure, (p.pronamespace = e.extnamespace)::int,
       length(coalesce(obj_description(p.oid, 'pg_proc'), '')),
       replace(coalesce(obj_description(p.oid, 'pg_proc'), ''), E'\n', ' ')
  FROM pg_catalog.pg_proc p
  JOIN pg_catalog.pg_depend dp ON dp.classid = 'pg_catalog.pg_proc'::regclass AND dp.objid = p.oid
                             AND dp.deptype = 'e'
  JOIN pg_catalog.pg_extension e ON e.oid = dp.refobjid AND e.extname = 'perpca'
 ORDER BY 1}, extra_params => [ '-F', "\t", '-A' ]);
ok(scalar(@comments) > 100, 'the extension has its functions');
my @long = map { "$_->[0]: $_->[2]" } grep { $_->[2] > 300 } @comments;
is_deeply(\@long, [], 'every function comment is at most 300 characters');
my @unpointed = map { $_->[0] } grep {
	$_->[1] && !($_->[3] =~ /\(README: Reference, ([^)]+)\)$/ && $sections{$1})
} @comments;
is_deeply(\@unpointed, [], 'every user function comment ends with its README Reference section');

$node->safe_psql('postgres', q{
CREATE TABLE ref_rows AS
SELECT 'c' || (i % 3) AS client, ARRAY[i % 7, i % 5, i % 3, i % 11]::float8[] AS x
  FROM generate_series(1, 60) i;
SELECT * FROM perpca_train('ref_model', 'SELECT client, perpca_stats(x) FROM ref_rows GROUP BY client', 1, 1)});
my @model_columns = split /\n/, $node->safe_psql(
	'postgres', q{
SELECT c.relname || '.' || a.attname
  FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
 WHERE c.relname IN ('ref_model_info', 'ref_model_clients', 'ref_model_components')
   AND a.attnum > 0 AND NOT a.attisdropped
 ORDER BY 1});
ok(scalar(@model_columns) > 30, 'a model has its three tables');
my @unexplained_columns = grep { my ($t, $c) = split /\./; !$named{$c} } @model_columns;
is_deeply(\@unexplained_columns, [], "every column of a model's tables is named in the README reference");
my @undefined_columns = grep { my ($t, $c) = split /\./; $c =~ /(^|_)ratio(_|$)/ && !$defined{$c} } @model_columns;
is_deeply(\@undefined_columns, [], "every ratio of a model's tables is defined in the Reference");

# The error table of the Reference lists the kinds of src/error_kinds.h, in
# its order, with the same codes, condition names and words; each condition
# name is its ERRCODE_ macro's, and the server raises it with that SQLSTATE.
my (@kinds, $kind_comment);
open($fh, '<', test_path('src/error_kinds.h')) or die "src/error_kinds.h: $!";
while (my $line = <$fh>)
{
	if ($line =~ m{^/\* ([0-9A-Z]{5}) ([a-z_]+): (.*) \*/$})
	{
		$kind_comment = [ $1, $2, $3 ];
	}
	elsif ($line =~ /^#define PERPCA_ERRCODE_\w+ ERRCODE_(\w+)$/)
	{
		ok($kind_comment, "ERRCODE_$1 has its comment line in src/error_kinds.h");
		push @kinds, [ @{ $kind_comment // [ '', '', '' ] }, $1 ];
		undef $kind_comment;
	}
}
close($fh);
ok(scalar(@kinds) >= 10, 'src/error_kinds.h lists the kinds of errors');
my @error_rows;
push @error_rows, [ $1, $2, $3 ]
  while $reference =~ /^\| `([0-9A-Z]{5})` \| `([a-z_]+)` \| (.*?) \|$/mg;
is_deeply(\@error_rows, [ map { [ @$_[ 0 .. 2 ] ] } @kinds ],
	'the README error table lists the kinds of src/error_kinds.h');
my %server_code = split /[=\n]/, $node->safe_psql(
	'postgres', q{
CREATE FUNCTION pg_temp.sqlstate_of(name text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = name;
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;
END $$;
SELECT n || '=' || pg_temp.sqlstate_of(n) FROM unnest(ARRAY[}
	  . join(', ', map { "'$_->[1]'" } @kinds) . q{]) n});
for my $k (@kinds)
{
	my ($code, $name, $what, $macro) = @$k;
	# errcodes.txt drops the class prefix S_R_E_ from the condition name
	(my $condition = lc($macro)) =~ s/^s_r_e_//;
	is($name, $condition, "$code: $name is the condition name of ERRCODE_$macro");
	is($server_code{$name}, $code, "$name is SQLSTATE $code");
}

# A newcomer's stumbling points, as the README and docs say them (each
# failed on 0.3.0): commands that run in a root shell without sudo, a page on
# Python, the schema of perpca_vector, personalized clients under refresh,
# self-pairs in perpca_similarity, the Debian build outputs ignored.
sub slurp
{
	my ($path) = @_;
	open(my $in, '<', test_path($path)) or die "$path: $!";
	local $/;
	my $text = <$in>;
	close($in);
	return $text;
}
my $readme = slurp('README.md');
my @sudo = grep { /^\s*sudo\b/ } split /\n/, $readme;
is_deeply(\@sudo, [], 'no README command line starts with sudo');
like($readme, qr/runuser -u postgres --/, 'the README runs psql as postgres with runuser');
like($readme, qr/\(docs\/python\.md\)/, 'the README links the Python page');
like(slurp('docs/python.md'), qr/psycopg2.*\.tolist\(\)|\.tolist\(\).*psycopg2/s, 'docs/python.md covers psycopg2 and numpy');
like(slurp('docs/pgvector.md'), qr/CREATE EXTENSION perpca_vector SCHEMA/, 'docs/pgvector.md names the schema of perpca_vector');
like($readme, qr/`perpca_personalize` are not in the query: a refresh drops them/, 'the README says a refresh drops personalized clients');
like($reference, qr/all_pairs`[^|]*each client with itself/, 'the reference says all_pairs pairs each client with itself');
my %ignored = map { $_ => 1 } split /\n/, slurp('.gitignore');
is_deeply([ grep { !$ignored{$_} } ('/debian/.debhelper/', '/debian/debhelper-build-stamp', '/debian/files',
		'/debian/postgresql-*-perpca/', '/debian/postgresql-*-perpca.debhelper.log', '/debian/postgresql-*-perpca.substvars') ],
	[], "dpkg-buildpackage's outputs in debian/ are in .gitignore");

$node->stop;
done_testing();
