# 079_sketch_fit_memory.pl -- a fit of sketched clients forms no d x d matrix.
#
# A fit on sketches (ell rows each) must stay far below the exact
# fit's memory even on few tenants.  0.4.0 at first formed the d x d sum of
# the local projectors for theta_est (134 MB at d = 4,096) and kept every
# L-BFGS run's exact accumulators (d x r1 x 67 digits); 10 sketched tenants
# at d = 3,072 peaked at 263 MB against 90 MB now.  Here 3 tenants of 60
# rows at d = 4,096 (the widest a dense client may be, so the dense route
# was still open), sketched at ell = 16 (0.6 MB each), are fitted 2 + 2 with
# the default search; the backend's peak resident memory (VmHWM in /proc)
# may grow by at most half of one d x d matrix of doubles (64 MB).  It grew
# by 38 MB (the pooled start's and the hops' exact sums of d x b blocks,
# BLAS buffers); with the d x d matrix of theta_est back it grew by 163 MB.
# A memory bound, not a time one.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PerpcaTest;

plan skip_all => 'needs /proc' unless -r '/proc/self/status';
# Under AddressSanitizer a backend's memory includes shadow memory and the
# freed-memory quarantine: the normal run checks the bound.
plan skip_all => 'memory bound not meaningful under AddressSanitizer (shadow memory, quarantine)'
	if ($ENV{ASAN_OPTIONS} // '') ne '';

my $d = 4096;
my $node = start_node('main');
$node->safe_psql('postgres', qq{
CREATE EXTENSION perpca;
SELECT setseed(0.25);
CREATE TABLE sk AS
SELECT g AS tenant, perpca_sketch(x, 16) AS stats
  FROM (SELECT i % 3 AS g,
               array_agg(sin(i * j * 0.001 + (i % 3)) + cos(j * (i % 3 + 1) * 0.002) + 0.1 * random() ORDER BY j) AS x
          FROM generate_series(1, 60) AS i, generate_series(1, $d) AS j
         GROUP BY i) r
 GROUP BY g;
});
is($node->safe_psql('postgres', q{SELECT count(*), min(perpca_stats_form(stats)), max(perpca_dim(stats)) FROM sk}),
	"3|sketch|$d", "3 sketched tenants at d = $d");

my $s = $node->background_psql('postgres');
my $pid = $s->query_safe(q{SELECT pg_backend_pid()});
sub peak_kb
{
	my $status = slurp_file("/proc/$pid/status");
	my ($kb) = $status =~ /^VmHWM:\s+(\d+) kB/m;
	return $kb;
}
# perpca loaded, the sketches read once
$s->query_safe(q{SELECT count(*) FROM sk WHERE perpca_count(stats) > 0});
my $base = peak_kb();
ok($base > 0, "backend peak before the fit: $base kB");

# The fit's convergence is not this test's subject: on these smooth rows the
# alpha-FD sketches (sketch.c) keep the top directions so well that the search
# may end with "stopped before converging" at rounding, a WARNING, which
# query_safe would take for a failure.
$s->query_safe(q{SET client_min_messages = error});
is($s->query_safe(q{SELECT count(*) FROM perpca_fit('SELECT tenant, stats FROM sk', 2, 2)}),
	2 + 3 * 2, 'the fit returns its components');
is($s->query_safe(q{SELECT d, theta_est > 0 AND theta_est < 1 FROM perpca_last_fit()}),
	"$d|t", 'theta_est is computed');
my $grew = peak_kb() - $base;
my $bound = $d * $d * 8 / 2 / 1024;
cmp_ok($grew, '<', $bound, "the sketched fit grew the backend by $grew kB (bound $bound kB, half of d x d doubles)");
$s->quit;
$node->stop;
done_testing();
