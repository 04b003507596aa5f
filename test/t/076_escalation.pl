# 076_escalation.pl -- the escalation paths and lesser findings of the 0.2.0
# attack (docs/security.md), each as a scenario that made a plain role superuser or
# let her disturb another role's model on 0.2.0:
#   1. the owner replaces <model>_info by a view that calls her function, or
#      adds an enum column with her own implicit casts to text and json; a
#      superuser evaluates, summarizes, personalizes, reads and drops the
#      model (perpca_evaluate read the tables with SQL as the caller;
#      perpca_personalize ran to_jsonb over the info row as the caller);
#   2. another role holds the model's lock (0.2.0: an advisory key anyone
#      could compute) and the owner's refresh fails with 55P03;
#   3. perpca_drop, called by a superuser, drops three tables that are not a
#      model, and by another role, someone else's model;
#   4. perpca_internal.perpca_model_scale_factors splices a name into SQL;
#   5. model names longer than 52 bytes: 42622 from train and from readers;
#   6. on a hot standby, personalize and drop say so (25006).
# Mallory's functions record every call made as a role other than her in
# mallory.fired and try to make her superuser; the test checks both.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PerpcaTest;

my $node = PostgreSQL::Test::Cluster->new('primary');
$node->init(allows_streaming => 1);
$node->start;
my $q = q{SELECT client, perpca_stats(x) FROM public.obs GROUP BY client};

$node->safe_psql('postgres', obs_feed_sql('a', 'b', 'c') . role_schemas_sql('mallory', 'alice') . q{
GRANT SELECT ON obs TO PUBLIC;
CREATE TABLE one AS SELECT perpca_stats(x) AS s FROM obs WHERE client = 'new';
GRANT SELECT ON one TO PUBLIC;
});

# Mallory's trap: records who ran it and, if that role may, makes her superuser.
$node->safe_psql('postgres', qq{
CREATE TABLE mallory.fired (who text, what text);
GRANT INSERT ON mallory.fired TO PUBLIC;
CREATE FUNCTION mallory.evil(what text) RETURNS boolean LANGUAGE plpgsql AS \$\$
BEGIN
    INSERT INTO mallory.fired VALUES (current_user, what);
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        EXECUTE 'ALTER ROLE mallory SUPERUSER';
    END IF;
    RETURN true;
END \$\$;
SELECT model_name FROM perpca_train('mallory.v', '$q', 2, 1);
SELECT model_name FROM perpca_train('mallory.e', '$q', 2, 1);
}, extra_params => [ '-U', 'mallory' ]);

# ---- 1a. <model>_info replaced by a view calling her function ---------------
$node->safe_psql('postgres', q{
ALTER TABLE mallory.v_info RENAME TO v_info_table;
CREATE VIEW mallory.v_info AS SELECT * FROM mallory.v_info_table WHERE mallory.evil('view');
}, extra_params => [ '-U', 'mallory' ]);

# ---- 1b. an enum column with her implicit casts to text and json --------------
$node->safe_psql('postgres', q{
CREATE TYPE mallory.color AS ENUM ('red');
CREATE FUNCTION mallory.color_text(c mallory.color) RETURNS text LANGUAGE plpgsql AS
$$ BEGIN PERFORM mallory.evil('cast to text'); RETURN 'red'; END $$;
CREATE FUNCTION mallory.color_json(c mallory.color) RETURNS json LANGUAGE plpgsql AS
$$ BEGIN PERFORM mallory.evil('cast to json'); RETURN '"red"'; END $$;
CREATE FUNCTION mallory.color_jsonb(c mallory.color) RETURNS jsonb LANGUAGE plpgsql AS
$$ BEGIN PERFORM mallory.evil('cast to jsonb'); RETURN '"red"'; END $$;
CREATE CAST (mallory.color AS text) WITH FUNCTION mallory.color_text(mallory.color) AS IMPLICIT;
CREATE CAST (mallory.color AS json) WITH FUNCTION mallory.color_json(mallory.color) AS IMPLICIT;
CREATE CAST (mallory.color AS jsonb) WITH FUNCTION mallory.color_jsonb(mallory.color) AS IMPLICIT;
ALTER TABLE mallory.e_info ADD COLUMN paint mallory.color DEFAULT 'red';
ALTER TABLE mallory.e_components ADD COLUMN paint mallory.color DEFAULT 'red';
ALTER TABLE mallory.e_clients ADD COLUMN paint mallory.color DEFAULT 'red';
}, extra_params => [ '-U', 'mallory' ]);

# A superuser uses both models every way perpca offers.
my $rows = q{SELECT client, x FROM public.obs};
for my $m ('mallory.v', 'mallory.e')
{
	for my $call (
		"SELECT count(*) FROM perpca_evaluate('$m', '$rows')",
		"SELECT count(*) FROM perpca_evaluate_summary('$m', '$rows')",
		"SELECT count(*) FROM perpca_personalize('$m', 'new', (SELECT s FROM public.one))",
		"SELECT count(*) FROM perpca_component_info('$m')",
		"SELECT count(*) FROM perpca_similarity('$m')",
		"SELECT theta_est IS NOT NULL FROM perpca_model_theta('$m')",
		"SELECT count(perpca_model_error('$m', client, x)) FROM public.obs")
	{
		$node->psql('postgres', $call);
	}
}
is($node->safe_psql('postgres', q{SELECT string_agg(DISTINCT who || ': ' || what, ', ') FROM mallory.fired WHERE who <> 'mallory'}),
	'', 'no function of mallory ran as the superuser');
is($node->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'}),
	'f', 'mallory is not a superuser');

my ($ret, $out, $err) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT * FROM perpca_evaluate('mallory.v', '$rows')");
like($err, qr/ERROR:  42809: model "mallory.v" is not stored in plain tables/,
	'perpca_evaluate refuses a model whose info table is a view (wrong_object_type)');
($ret, $out, $err) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT * FROM perpca_personalize('mallory.v', 'new', (SELECT s FROM public.one))");
like($err, qr/ERROR:  42809: model "mallory.v" is not stored in plain tables/,
	'perpca_personalize refuses it too');
is($node->safe_psql('postgres', "SELECT count(*) > 0 FROM perpca_evaluate('mallory.e', '$rows')"),
	't', 'the model with an extra enum column is evaluated (its columns of other types are never read)');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM perpca_personalize('mallory.e', 'new', (SELECT s FROM public.one))"),
	'1', 'and personalized, as its owner');
$node->psql('postgres', "SELECT perpca_drop('mallory.v')");
is($node->safe_psql('postgres', "SELECT perpca_drop('mallory.e')"), '', 'the superuser drops the model');
is($node->safe_psql('postgres', q{SELECT string_agg(DISTINCT who || ': ' || what, ', ') FROM mallory.fired WHERE who <> 'mallory'}),
	'', 'still: no function of mallory ran as the superuser');
is($node->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'}),
	'f', 'still: mallory is not a superuser');

# ---- 2. nobody else holds a model's lock ---------------------------------------
$node->safe_psql('postgres', qq{GRANT USAGE ON SCHEMA alice TO PUBLIC;
SELECT model_name FROM perpca_train('alice.am', '$q', 2, 1)},
	extra_params => [ '-U', 'alice' ]);
my $bg = $node->background_psql('postgres', on_error_stop => 0, extra_params => [ '-U', 'mallory' ]);
$bg->query_safe('BEGIN');
$bg->query_safe(q{SELECT pg_advisory_xact_lock(1885696624, hashtext('alice.am'))});
$bg->query_safe(q{SELECT pg_advisory_xact_lock(1885696624, hashtext(format('%I.%I', 'alice', 'am')))});
($ret, $out, $err) = $node->psql('postgres', q{SELECT count(*) FROM perpca_refresh('alice.am')},
	extra_params => [ '-U', 'alice' ]);
is($ret, 0, "the owner's refresh runs while another role holds 0.2.0's advisory key") or diag($err);
my ($lret, $lout, $lerr) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT * FROM perpca_refresh('alice.am')",
	extra_params => [ '-U', 'mallory' ]);
like($lerr, qr/ERROR:  42501: must be owner of model "alice.am"/,
	'another role cannot take the model lock (insufficient_privilege, before any lock is queued)');
($lret, $lout, $lerr) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT perpca_drop('alice.am')",
	extra_params => [ '-U', 'mallory' ]);
like($lerr, qr/ERROR:  42501: must be owner of model "alice.am"/, '... nor the drop lock');
$bg->query_safe('COMMIT');
$bg->quit;

# ---- 3. perpca_drop checks what it drops --------------------------------------
$node->safe_psql('postgres', q{
CREATE TABLE t_info (model text, d int);
CREATE TABLE t_components (a int);
CREATE TABLE t_clients (a int);
CREATE VIEW w_info AS SELECT 1 AS version;
CREATE TABLE w_components (a int);
CREATE TABLE w_clients (a int);
});
($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT perpca_drop('t')");
like($err, qr/ERROR:  42809: table public.t_info is not the info table of a perpca model/,
	'perpca_drop refuses three tables that are not a model');
($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT perpca_drop('w')");
like($err, qr/ERROR:  42809: model "w" is not stored in plain tables/, 'and a view in a model\'s place');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname IN ('t_info', 't_components', 't_clients', 'w_info')}),
	'4', 'both sets are still there');
($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT perpca_drop('alice.am')",
	extra_params => [ '-U', 'mallory' ]);
like($err, qr/ERROR:  42501: must be owner of model "alice.am"/, 'another role cannot drop a model');

# ---- 4. no name is spliced into SQL ----------------------------------------------
($ret, $out, $err) = $node->psql('postgres',
	"SET statement_timeout = '1s'; SELECT perpca_internal.perpca_model_scale_factors('t;select/**/pg_sleep(5)')",
	extra_params => [ '-U', 'mallory' ]);
unlike($err, qr/statement timeout/, 'perpca_model_scale_factors does not run a name as SQL');

# ---- 5. long names: one error from writers and readers ------------------------
my $long = 'x' x 53;
for my $call (
	"SELECT * FROM perpca_train('$long', '$q', 1, 1)",
	"SELECT * FROM perpca_component_info('$long')",
	"SELECT * FROM perpca_evaluate('$long', '$rows')",
	"SELECT perpca_drop('$long')",
	"SELECT * FROM perpca_personalize('$long', 'a', (SELECT s FROM public.one))",
	"SELECT perpca_model_scores('$long', 'a', ARRAY[1]::float8[])")
{
	($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\n$call");
	like($err, qr/ERROR:  42622: model name "x+" is too long/, "name_too_long: $call");
}
($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT perpca_drop('alice.gone')");
like($err, qr/ERROR:  42704: model "alice.gone" does not exist/, 'a missing model is undefined_object');

# ---- 6. a hot standby ---------------------------------------------------------------
$node->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($node, 'b', has_streaming => 1);
$standby->start;
$node->wait_for_catchup($standby);
is($standby->safe_psql('postgres', q{SELECT count(*) FROM perpca_component_info('alice.am')}),
	$node->safe_psql('postgres', q{SELECT count(*) FROM perpca_component_info('alice.am')}),
	'the standby reads models');
for my $call (
	"SELECT * FROM perpca_personalize('alice.am', 'z', (SELECT s FROM public.one))",
	"SELECT perpca_drop('alice.am')")
{
	($ret, $out, $err) = $standby->psql('postgres', "\\set VERBOSITY verbose\n$call");
	like($err, qr/ERROR:  25006: cannot change model "alice.am" during recovery/, "hot standby: $call");
}
for my $call (
	"SELECT * FROM perpca_train('alice.am2', '$q', 1, 1)",
	"SELECT * FROM perpca_refresh('alice.am')")
{
	($ret, $out, $err) = $standby->psql('postgres', "\\set VERBOSITY verbose\n$call");
	like($err, qr/ERROR:  25006: /, "hot standby: $call is read_only_sql_transaction");
}
$standby->stop;
$node->stop;
done_testing();
