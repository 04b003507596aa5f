# 091_file_map.pl -- the file map at the top of src/perpca.h is true: it
# names every src/*.c file, once, and no file that does not exist.  A map
# entry is a comment line " *   name.c   what it owns" (three spaces after
# the star; continuation lines have more); a name with * names a family
# (solver_*.c), which must match at least one file.  And every error src/*.c raises
# takes its SQLSTATE from a kind of src/error_kinds.h: no raw ERRCODE_ name
# outside that header, except where a caught error's code is tested
# (sqlerrcode).  No cluster.
use strict;
use warnings;

use Test::More;
use PerpcaTest;

my $src = test_path('src');
open(my $fh, '<', "$src/perpca.h") or die "src/perpca.h: $!";
my (%mapped, @twice);
while (my $line = <$fh>)
{
	last if $line =~ m{^\s*\*/};	# the map is the header's first comment
	next unless $line =~ /^ \* {3}([a-z0-9_*]+\.c)\s/;
	push @twice, $1 if $mapped{$1}++;
}
close($fh);

my %files = map { m{([^/]+)$}; $1 => 1 } glob("$src/*.c");
ok(scalar(keys %files) > 30, 'src/*.c found');

# a family's pattern as a regular expression
my %family;
for my $name (grep { /\*/ } keys %mapped)
{
	(my $re = quotemeta($name)) =~ s/\\\*/[a-z0-9_]+/g;
	$family{$name} = qr/^$re$/;
}
my @unmapped = grep { my $f = $_; !$mapped{$f} && !grep { $f =~ $_ } values %family } sort keys %files;
is_deeply(\@unmapped, [], 'every src/*.c file is in the file map of src/perpca.h');
my @gone = grep { my $m = $_; $family{$m} ? !grep { $_ =~ $family{$m} } keys %files : !$files{$m} } sort keys %mapped;
is_deeply(\@gone, [], 'every file the map names exists in src/');
is_deeply(\@twice, [], 'no file is named twice in the map');

my @raw;
for my $c (sort glob("$src/*.c"))
{
	open(my $cf, '<', $c) or die "$c: $!";
	while (my $line = <$cf>)
	{
		push @raw, ($c =~ m{([^/]+)$})[0] . ":$.: $line"
		  if $line =~ /(?<!PERPCA_)\bERRCODE_[A-Z]/ && $line !~ /sqlerrcode/;
	}
	close($cf);
}
is_deeply(\@raw, [], 'every errcode in src/*.c is a PERPCA_ERRCODE_ kind of src/error_kinds.h');

done_testing();
