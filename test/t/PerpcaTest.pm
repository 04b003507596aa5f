# PerpcaTest.pm -- setup shared by the TAP tests in test/t (scripts/test.sh runs
# prove from the repository root with -I test/t).
package PerpcaTest;
use strict;
use warnings;

use Exporter 'import';
use PostgreSQL::Test::Cluster;
use Test::More;

our @EXPORT = qw(test_path start_node obs_feed_sql role_schemas_sql require_pg_cron);

# Path of PATH (relative to the repository root, e.g. 'test/data/x.csv');
# bails out if it does not exist.
sub test_path
{
	my ($path) = @_;
	my $full = ($ENV{TESTDIR} // '.') . "/$path";
	-e $full or BAIL_OUT("missing $full");
	return $full;
}

# A new cluster NAME: initialized, CONF (if given) appended to
# postgresql.conf, started.
sub start_node
{
	my ($name, $conf) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf', $conf) if defined $conf;
	$node->start;
	return $node;
}

# Skips the whole file, with the reason, when the server's installation has
# no pg_cron (make installcheck on a server without it), as the Citus and
# pgvector tests do.  scripts/suite.sh installs it (postgresql-N-cron) and sets
# PERPCA_PG_CRON_REQUIRED: there, its absence is a failure.
sub require_pg_cron
{
	my $pkglibdir = `pg_config --pkglibdir`;
	my $sharedir = `pg_config --sharedir`;
	chomp($pkglibdir, $sharedir);
	my @missing = grep { !-f $_ } ("$pkglibdir/pg_cron.so", "$sharedir/extension/pg_cron.control");
	return unless @missing;
	my $why = 'pg_cron is not installed in this PostgreSQL installation (no ' . join(', no ', @missing) . ')';
	if ($ENV{PERPCA_PG_CRON_REQUIRED})
	{
		fail($why);
		done_testing();
		exit;
	}
	plan skip_all => $why;
}

# SQL that creates perpca, loads test/data/project_obs.csv into
# obs (client, obs, x) and copies the first 100 rows of each of CLIENTS
# into feed_rows (client, x), the rows a model is first trained on.
sub obs_feed_sql
{
	my @clients = @_;
	my $data = test_path('test/data/project_obs.csv');
	my $in = join(', ', map { "'$_'" } @clients);
	return qq{
CREATE EXTENSION perpca;
CREATE TABLE obs (client text, obs int, x float8[]);
\\copy obs from '$data' csv header
CREATE TABLE feed_rows AS SELECT client, x FROM obs WHERE client IN ($in) AND obs <= 100;
};
}

# SQL that creates, for each of ROLES, a login role and a schema of the same
# name that it owns (the attacker and victim roles of the security tests).
sub role_schemas_sql
{
	return join('', map { "CREATE ROLE $_ LOGIN;\nCREATE SCHEMA $_ AUTHORIZATION $_;\n" } @_);
}

1;
