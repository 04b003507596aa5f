# 085_isolation.pl -- the lock orders of a model's functions, as
# pg_isolation_regress specs (test/isolation/specs, expected output in
# test/isolation/expected): drop against readers (no deadlock, 42704 for a
# model dropped meanwhile) and refresh against readers and other sessions'
# locks.  Run here, on a node of its own, because scripts/test.sh runs
# pg_regress only.
use strict;
use warnings;

use File::Basename;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PerpcaTest;

my $regress = $ENV{PG_REGRESS} or plan skip_all => 'PG_REGRESS is not set';
my $isolation = dirname(dirname($regress)) . '/isolation/pg_isolation_regress';
plan skip_all => "no pg_isolation_regress at $isolation" unless -x $isolation;

my $node = start_node('main', "max_prepared_transactions = 10\ndeadlock_timeout = 100ms\n");
my $indir = test_path('test/isolation');
my @specs = map { basename($_, '.spec') } sort glob("$indir/specs/*.spec");
cmp_ok(scalar(@specs), '>=', 2, 'isolation specs: ' . join(', ', @specs));

my $outdir = "${PostgreSQL::Test::Utils::tmp_check}/isolation";
mkdir $outdir;
my ($out, $err) = ('', '');
my $ok = IPC::Run::run(
	[
		$isolation, "--inputdir=$indir", "--outputdir=$outdir", '--bindir=',
		'--host=' . $node->host, '--port=' . $node->port,
		'--dbname=perpca_isolation', '--load-extension=perpca', @specs
	],
	'>', \$out, '2>', \$err);
ok($ok, 'pg_isolation_regress: every spec gives its expected output') or diag("$out\n$err");
if (!$ok && -f "$outdir/regression.diffs")
{
	diag(slurp_file("$outdir/regression.diffs"));
}
$node->stop;
done_testing();
