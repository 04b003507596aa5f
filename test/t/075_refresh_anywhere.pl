# 075_refresh_anywhere.pl -- a model refreshes wherever it was trained.
#
# perpca in its own schema, the data in schema app, the model trained with
# search_path app, perpca, public and an unqualified query.  perpca_train
# records that search_path (resolved to schema names) in <model>_info,
# binds the query with it in the view <model>_source, and reads the view the
# way every refresh will: as the owner, inside a security-restricted
# operation.  Refreshes
# then work from a session whose search_path is pg_catalog alone, by the
# owner and by a superuser; a query that could not run that way fails at
# train time, not at the first refresh.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PerpcaTest;

my $node = start_node('main');
my $data = test_path('test/data/project_obs.csv');

$node->safe_psql('postgres', qq{
CREATE SCHEMA perpca;
CREATE EXTENSION perpca SCHEMA perpca;
CREATE ROLE alice LOGIN;
CREATE SCHEMA app AUTHORIZATION alice;
GRANT USAGE ON SCHEMA perpca TO alice;
CREATE TABLE app.obs (client text, obs int, x float8[]);
\\copy app.obs from '$data' csv header
CREATE TABLE app.feed_rows AS SELECT client, x FROM app.obs WHERE client IN ('a', 'b', 'c') AND obs <= 100;
ALTER TABLE app.obs OWNER TO alice;
ALTER TABLE app.feed_rows OWNER TO alice;
});

# Trained by alice with an unqualified query under her search_path.
is( $node->safe_psql('postgres', q{
SET ROLE alice;
SET search_path = app, perpca, public;
SELECT model_name, n_clients FROM perpca_train('m', 'SELECT client, perpca_stats(x) FROM feed_rows GROUP BY client', 2, 1);
}), 'm|3', 'trained in schema app with an unqualified query');
is($node->safe_psql('postgres', 'SELECT search_path FROM app.m_info'),
	'app, perpca, public', 'the search_path in effect is recorded as schema names');

# "$user" resolves to a schema name; schemas that do not exist are left out.
$node->safe_psql('postgres', q{
SET ROLE alice;
SET search_path = "$user", no_such_schema, app, perpca;
SELECT model_name FROM perpca_train('app.m_user', 'SELECT client, perpca_stats(x) FROM feed_rows GROUP BY client', 1, 1);
});
is($node->safe_psql('postgres', 'SELECT search_path FROM app.m_user_info'),
	'app, perpca', '"$user" and missing schemas resolved at train time');

# Refreshes from a session whose search_path is pg_catalog alone.
$node->safe_psql('postgres', q{INSERT INTO app.feed_rows SELECT client, x FROM app.obs WHERE client = 'd'});
my ($rc, $out, $err) = $node->psql('postgres', q{
SET ROLE alice;
SET search_path = pg_catalog;
SELECT clients, clients_added FROM perpca.perpca_refresh('app.m');
});
is($rc, 0, 'the owner refreshes with search_path = pg_catalog') or diag($err);
is($out, '4|1', 'the refresh ran the recorded query with the recorded search_path');

$node->safe_psql('postgres', q{INSERT INTO app.feed_rows SELECT client, x FROM app.obs WHERE client = 'e'});
($rc, $out, $err) = $node->psql('postgres', q{
SET search_path = pg_catalog;
SELECT clients, clients_added FROM perpca.perpca_refresh('app.m');
});
is($rc, 0, 'a superuser refreshes from search_path = pg_catalog') or diag($err);
is($out, '5|1', 'as the owner, with the recorded search_path');

# The model's functions read it from any search_path too.
is( $node->safe_psql('postgres', q{
SET search_path = pg_catalog;
SELECT count(*) FROM app.obs WHERE client = 'e'
   AND pg_catalog.array_length(perpca.perpca_model_scores('app.m', client, x), 1) = 3;
}), '150', 'the refreshed model projects the new client');

# A query that could not be refreshed fails at train time: here a function
# that creates a temporary table, which a security-restricted operation
# (every refresh) refuses.
$node->safe_psql('postgres', q{
CREATE FUNCTION app.uses_temp() RETURNS boolean LANGUAGE plpgsql AS
$$ BEGIN CREATE TEMPORARY TABLE IF NOT EXISTS scratch (i int); RETURN true; END $$;
ALTER FUNCTION app.uses_temp() OWNER TO alice;
});
($rc, $out, $err) = $node->psql('postgres', q{
SET ROLE alice;
SET search_path = app, perpca;
SELECT * FROM perpca_train('bad', 'SELECT client, perpca_stats(x) FROM feed_rows WHERE uses_temp() GROUP BY client', 1, 1);
});
isnt($rc, 0, 'a query that a refresh could not run fails at train time');
like($err, qr/cannot create temporary table within security-restricted operation/,
	'with the error the first refresh would have given');
is($node->safe_psql('postgres', q{SELECT to_regclass('app.bad_info') IS NULL}), 't', 'and no model is stored');

# A model stored before 0.3.0 (no search_path column, no view) keeps
# refreshing with the search_path refreshes used then: pg_catalog and
# perpca's schema, with which its first refresh binds its query in a view.
$node->safe_psql('postgres', q{
SET ROLE alice;
SET search_path = app, perpca;
SELECT model_name FROM perpca_train('old', 'SELECT client, perpca.perpca_stats(x) FROM app.feed_rows GROUP BY client', 1, 1);
ALTER TABLE app.old_info DROP COLUMN search_path, DROP COLUMN source_view;
DROP VIEW app.old_source;
});
($rc, $out, $err) = $node->psql('postgres', q{
SET search_path = pg_catalog;
SELECT clients FROM perpca.perpca_refresh('app.old');
});
is($rc, 0, 'a model without a recorded search_path refreshes') or diag($err);
is($node->safe_psql('postgres', 'SELECT search_path, source_view FROM app.old_info'),
	'pg_catalog, perpca|app.old_source', 'and records the search_path it was bound with, and its view');
is($node->safe_psql('postgres', q{SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = 'app.old_source'::regclass}),
	'alice', 'the view is the owner\'s, though a superuser refreshed');

$node->stop;
done_testing();
