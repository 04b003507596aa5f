# 092_links.pl -- no broken relative link in the repository's markdown: every
# [text](target) and <a href="target"> of every *.md file whose target is
# not a URL names a file or folder that exists (relative to the file), and
# its #anchor, if any, is a heading of the target markdown file (as GitHub
# makes anchors: lower case, punctuation dropped, spaces as hyphens, -1, -2
# for repeats) or an <a id>/<a name> there.  No cluster.
use strict;
use warnings;
use utf8;

use File::Find;
use Test::More;
use PerpcaTest;

my $root = test_path('README.md') =~ s{/README\.md$}{}r;

# The markdown files of the tree (not build outputs, logs or vendored trees).
my @files;
find(
	{
		no_chdir => 1,
		wanted => sub {
			if (-d $_ && m{/(\.git|log|tmp_check|results|node_modules|\.deps)$}) {
				$File::Find::prune = 1;
				return;
			}
			push @files, $_ if -f $_ && /\.md$/;
		}
	},
	$root);
@files = sort @files;
ok(scalar(@files) >= 5, 'markdown files found: ' . scalar(@files));

sub slurp
{
	my ($path) = @_;
	open(my $fh, '<:encoding(UTF-8)', $path) or die "$path: $!";
	local $/;
	my $text = <$fh>;
	close($fh);
	return $text;
}

# The text without fenced code blocks and inline code (links there are code).
sub prose
{
	my ($text) = @_;
	$text =~ s/^(```|~~~).*?^\1[^\n]*$//msg;
	$text =~ s/`[^`\n]*`//g;
	return $text;
}

# The anchors of a markdown file, as GitHub makes them.
my %anchors_of;
sub anchors
{
	my ($path) = @_;
	return $anchors_of{$path} if $anchors_of{$path};
	my (%set, %seen);
	my $text = slurp($path);
	$text =~ s/^(```|~~~).*?^\1[^\n]*$//msg;
	for my $line (split /\n/, $text)
	{
		$set{$1} = 1 while $line =~ /<a\s+(?:id|name)="([^"]+)"/g;
		next unless $line =~ /^#{1,6}\s+(.*?)\s*#*\s*$/;
		my $slug = lc($1);
		$slug =~ s/<[^>]*>//g;                    # html tags
		$slug =~ s/\[([^\]]*)\]\([^)]*\)/$1/g;    # links: their text
		$slug =~ s/[^\w\- ]//g;                   # punctuation (\w: letters of any script, digits, _)
		$slug =~ s/ /-/g;
		my $n = $seen{$slug}++;
		$set{$n ? "$slug-$n" : $slug} = 1;
	}
	return $anchors_of{$path} = \%set;
}

my @broken;
for my $file (@files)
{
	(my $dir = $file) =~ s{/[^/]+$}{};
	my $text = prose(slurp($file));
	my @targets;
	push @targets, $1 while $text =~ /\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g;
	push @targets, $1 while $text =~ /<a\s[^>]*href="([^"]+)"/g;
	push @targets, $1 while $text =~ /^\s*\[[^\]]+\]:\s*(\S+)/mg;    # reference definitions
	for my $target (@targets)
	{
		next if $target =~ m{^[a-z][a-z0-9+.-]*:}i;    # http:, https:, mailto:, ...
		my ($path, $anchor) = $target =~ /^([^#]*)(?:#(.*))?$/;
		my $full = $path eq '' ? $file : "$dir/$path";
		(my $rel = $file) =~ s{^\Q$root\E/}{};
		if (!-e $full)
		{
			push @broken, "$rel: $target (no such file)";
			next;
		}
		next unless defined $anchor && $anchor ne '';
		next unless $full =~ /\.md$/;
		push @broken, "$rel: $target (no such anchor)" unless anchors($full)->{$anchor};
	}
}
is(scalar(@broken), 0, 'every relative link of the markdown files resolves')
  or diag(join("\n", 'broken links:', @broken));

done_testing();
