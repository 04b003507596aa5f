#!/usr/bin/perl
# scripts/run_tap.pl NAME FILE [INCLUDE_DIR...] -- run one TAP test file
#
# The file's own TAP output goes to stderr as it comes; its result goes to
# stdout as one TAP line: "ok - NAME", "ok - NAME # SKIP REASON" when the file
# skipped everything (a skip, never a pass), or "not ok - NAME" (a failed test,
# a wrong plan, a parse error or a non-zero exit status).
use strict;
use warnings;
use TAP::Parser;

my ($name, $file, @inc) = @ARGV;
$ENV{HARNESS_ACTIVE} = 1;
my $parser = TAP::Parser->new(
	{ source => $file, switches => [ map { "-I$_" } @inc ], merge => 1 });
while (my $result = $parser->next)
{
	print STDERR $result->as_string, "\n";
}
if ($parser->has_problems)
{
	print "not ok - $name\n";
}
elsif (defined $parser->skip_all)
{
	(my $reason = $parser->skip_all) =~ s/\s+/ /g;
	print "ok - $name # SKIP $reason\n";
}
else
{
	print "ok - $name\n";
}
