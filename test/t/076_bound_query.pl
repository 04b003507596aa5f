# 076_bound_query.pl -- a model's query is bound once, at train.
#
# The attack on 0.3.0: a superuser trains a model with a search_path whose
# schemas another role may write (app, public: PUBLIC has CREATE on both).
# Afterwards mallory plants, in every schema of that path, overloads that
# match the query's calls better than what they were bound to at train:
#   - an aggregate perpca_stats(numeric[]) (exact) that beats the implicit
#     cast numeric[] -> float8[] into perpca_stats(float8[]);
#   - an operator > (numeric, integer) that beats the implicit cast of 0 to
#     numeric in "w > 0";
#   - a function array_length(numeric[], integer) that beats the
#     polymorphic array_length(anyarray, integer);
#   - an operator + (numeric, integer) in the feature-columns query ("x[2] + 1").
# 0.3.0 parsed the query text again at every refresh, so each of them ran as
# the model's owner (the superuser) and made mallory superuser.  0.4.0 binds
# the query once, in the view <model>_source created by the owner at train;
# a refresh reads that view.  The test checks that the planted objects do
# bind for anyone who parses the text anew (mallory's own run of it), then
# that a superuser's refresh runs none of them.  (The same attack through a
# pg_cron job is in 900_pg_cron.pl.)
#
# Also here: a replace binds the new query; a model stored before 0.4.0 is
# bound at its first refresh; a dropped view is a clear error; perpca_drop
# drops the view; every query text is exactly one SELECT (0A000, the canary
# survives); on_error => 'record' records a 57014 raised by the owner's
# query, while a statement timeout of the caller still stops the caller.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PerpcaTest;

my $node = start_node('main');

my $q_stats = q{SELECT client, perpca_stats(x) FROM obsn WHERE w > 0 AND array_length(x, 1) = 8 GROUP BY client};
my $q_cols = q{SELECT client, x[1] AS a, x[2] + 1 AS b, x[3] AS c FROM obsn WHERE w > 0};

$node->safe_psql('postgres', obs_feed_sql(qw(a b c)) . qq{
GRANT CREATE ON SCHEMA public TO PUBLIC;
CREATE ROLE mallory LOGIN;
CREATE SCHEMA app;
GRANT USAGE, CREATE ON SCHEMA app TO PUBLIC;
CREATE TABLE app.obsn AS SELECT client, obs::numeric AS w, x::numeric[] AS x FROM public.obs WHERE client IN ('a', 'b', 'c');
GRANT SELECT ON app.obsn TO PUBLIC;
SET search_path = app, public;
SELECT model_name FROM perpca_train('app.m', '$q_stats', 2, 1);
SELECT model_name FROM perpca_train('app.f', '$q_cols', 1, 1);
});


# Mallory's traps: record who ran them and, if that role may, make her superuser.
$node->safe_psql('postgres', q{
CREATE TABLE public.fired (who text, what text);
GRANT INSERT ON public.fired TO PUBLIC;
CREATE FUNCTION public.evil(what text) RETURNS boolean LANGUAGE plpgsql
SET search_path = pg_catalog AS $$
BEGIN
    INSERT INTO public.fired VALUES (current_user, what);
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        EXECUTE 'ALTER ROLE mallory SUPERUSER';
    END IF;
    RETURN true;
END $$;
DO $do$
DECLARE
    s text;
BEGIN
    FOREACH s IN ARRAY ARRAY['app', 'public'] LOOP
        EXECUTE format($f$CREATE FUNCTION %1$I.trap_acc(perpca_stats, numeric[]) RETURNS perpca_stats
            LANGUAGE plpgsql AS $b$BEGIN PERFORM public.evil(%2$L); RETURN $1; END $b$ $f$, s, s || '.perpca_stats(numeric[])');
        EXECUTE format('CREATE AGGREGATE %1$I.perpca_stats(numeric[]) (SFUNC = %1$I.trap_acc, STYPE = perpca_stats)', s);
        EXECUTE format($f$CREATE FUNCTION %1$I.trap_gt(numeric, integer) RETURNS boolean
            LANGUAGE plpgsql AS $b$BEGIN PERFORM public.evil(%2$L); RETURN true; END $b$ $f$, s, s || '.>(numeric, integer)');
        EXECUTE format('CREATE OPERATOR %1$I.> (LEFTARG = numeric, RIGHTARG = integer, FUNCTION = %1$I.trap_gt)', s);
        EXECUTE format($f$CREATE FUNCTION %1$I.array_length(numeric[], integer) RETURNS integer
            LANGUAGE plpgsql AS $b$BEGIN PERFORM public.evil(%2$L); RETURN 8; END $b$ $f$, s, s || '.array_length(numeric[], integer)');
        EXECUTE format($f$CREATE FUNCTION %1$I.trap_plus(numeric, integer) RETURNS numeric
            LANGUAGE plpgsql AS $b$BEGIN PERFORM public.evil(%2$L); RETURN 0; END $b$ $f$, s, s || '.+(numeric, integer)');
        EXECUTE format('CREATE OPERATOR %1$I.+ (LEFTARG = numeric, RIGHTARG = integer, FUNCTION = %1$I.trap_plus)', s);
    END LOOP;
END $do$;
}, extra_params => [ '-U', 'mallory' ]);

# The traps do bind for whoever parses the text anew with the recorded path.
$node->safe_psql('postgres', qq{
SET search_path = app, public;
SELECT count(q.*) FROM ($q_stats) q;
SELECT count(q.*) FROM ($q_cols) q;
}, extra_params => [ '-U', 'mallory' ]);
is($node->safe_psql('postgres', q{SELECT string_agg(DISTINCT what, ', ' ORDER BY what) FROM public.fired WHERE who = 'mallory'}),
	'app.+(numeric, integer), app.>(numeric, integer), app.array_length(numeric[], integer), app.perpca_stats(numeric[])',
	'the planted overloads beat what the query bound at train, for a query parsed now');

# A superuser refreshes both models by hand, from the default search_path
# and from the recorded one, with and without on_error => 'record'.
for my $path ('"$user", public', 'app, public')
{
	for my $m ('app.m', 'app.f')
	{
		my ($rc, $out, $err) = $node->psql('postgres', qq{
SET search_path = $path;
SELECT outcome FROM perpca_refresh('$m', warm => false);
SELECT outcome FROM perpca_refresh('$m', warm => false, on_error => 'record');
});
		is($out, "fitted\nfitted", "superuser refreshes $m with search_path $path") or diag($err);
	}
}
is($node->safe_psql('postgres', q{SELECT string_agg(DISTINCT who || ': ' || what, ', ') FROM public.fired WHERE who <> 'mallory'}),
	'', 'no planted function, operator or aggregate ran in a refresh');
is($node->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'}),
	'f', 'mallory is not a superuser');
is($node->safe_psql('postgres', q{SELECT n_clients, feature_names FROM app.f_info}),
	'3|{a,b,c}', 'the feature-columns model refreshed with its names from the view');

# (after the attack, so that the test runs it on 0.3.0 too, where it fails)
is($node->safe_psql('postgres', q{SELECT search_path, source_view FROM app.m_info}),
	'app, public|app.m_source', 'the model records its search_path and the view that binds its query');
is($node->safe_psql('postgres', q{SELECT c.relkind, pg_get_userbyid(c.relowner) FROM pg_class c WHERE c.oid = 'app.m_source'::regclass}),
	'v|' . $node->safe_psql('postgres', 'SELECT current_user'), 'the view is the owner\'s');

# A replace binds the new query (with the path in effect now).
$node->safe_psql('postgres', q{
SELECT model_name FROM perpca_train('app.m', 'SELECT client, perpca_stats(x::float8[]) FROM app.obsn WHERE client <> ''c'' GROUP BY client', 1, 1, replace => true);
});
is($node->safe_psql('postgres', q{SELECT n_clients, search_path FROM app.m_info}), '2|public',
	'replace => true stores the new query and path');
like($node->safe_psql('postgres', q{SELECT pg_get_viewdef('app.m_source')}), qr/<> 'c'/,
	'and binds it in the view');
is($node->safe_psql('postgres', q{SELECT clients FROM perpca_refresh('app.m', warm => false)}), '2',
	'a refresh reads the new query');

# A model stored before 0.4.0 (no view, source_view NULL) is bound at its first
# refresh, with the schemas of its search_path that only the owner or a
# superuser can create in (076_planted_casts: the others are left out).
$node->safe_psql('postgres', q{
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
SELECT model_name FROM perpca_train('old', 'SELECT client, perpca_stats(x) FROM public.feed_rows GROUP BY client', 1, 1);
DROP VIEW old_source;
UPDATE old_info SET source_view = NULL;
});
is($node->safe_psql('postgres', q{SELECT outcome FROM perpca_refresh('old', warm => false)}), 'fitted',
	'a model without a view refreshes');
is($node->safe_psql('postgres', q{SELECT source_view, to_regclass('public.old_source') IS NOT NULL FROM old_info}),
	'public.old_source|t', 'and is bound in its view from then on');

# A model of 0.4.0 whose view is gone is not bound again from its text.
$node->safe_psql('postgres', 'DROP VIEW old_source');
my ($rc, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT * FROM perpca_refresh('old')");
like($err, qr/ERROR:  42P01: the view public.old_source, which holds the query of model "public.old", does not exist/,
	'a dropped view: 42P01, the text is not parsed again');
($rc, $out, $err) = $node->psql('postgres', q{SELECT outcome FROM perpca_refresh('old', on_error => 'record')});
is($out, 'failed', 'with on_error => record, the failure is recorded');
$node->safe_psql('postgres', q{CREATE TABLE old_source (i int)});
($rc, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT * FROM perpca_train('old', 'SELECT client, perpca_stats(x) FROM public.feed_rows GROUP BY client', 1, 1, replace => true)");
like($err, qr/ERROR:  42P07: relation public.old_source is in the way of the source view of model "public.old"/,
	'a table in the view\'s place is not dropped (42P07)');
$node->safe_psql('postgres', q{DROP TABLE old_source;
SELECT model_name FROM perpca_train('old', 'SELECT client, perpca_stats(x) FROM public.feed_rows GROUP BY client', 1, 1, replace => true)});
is($node->safe_psql('postgres', q{SELECT perpca_drop('old'); SELECT to_regclass('public.old_source') IS NULL}), "\nt",
	'perpca_drop drops the view with the model');

# ---- every query text is exactly one SELECT -----------------------------------
$node->safe_psql('postgres', q{CREATE TABLE public.canary (i int); INSERT INTO public.canary VALUES (1)});
my $good = q{SELECT client, perpca_stats(x) FROM public.feed_rows GROUP BY client};
my $start = q{SELECT NULL::text, ''global'', 1, ARRAY[1, 0, 0, 0, 0, 0, 0, 0]::float8[]};
for my $call (
	"SELECT * FROM perpca_train('s1', '$good', 1, 1, init => 'given', start => '$start; DROP TABLE public.canary')",
	"SELECT * FROM perpca_train('s2', '$good; DROP TABLE public.canary', 1, 1)",
	"SELECT * FROM perpca_train('s3', 'WITH d AS (DELETE FROM public.canary RETURNING 1) $good', 1, 1)",
	"SELECT * FROM perpca_train('s4', '$good', 1, 1, init => 'given', start => 'WITH d AS (DELETE FROM public.canary RETURNING 1) $start')",
	"SELECT count(*) FROM perpca_fit('$good; DROP TABLE public.canary', 1, 1)",
	"SELECT count(*) FROM perpca_fit('$good', 1, 1, init => 'given', start => '$start; DROP TABLE public.canary')",
	"SELECT count(*) FROM perpca_fit('DELETE FROM public.canary RETURNING 1, 2', 1, 1)",
	"SELECT count(*) FROM perpca_fit('SELECT 1 INTO public.canary2', 1, 1)",
	"SELECT count(*) FROM perpca_evaluate('app.f', 'SELECT client, x FROM public.feed_rows; DROP TABLE public.canary')",
	"SELECT count(*) FROM perpca_choose_ranks('SELECT client, x FROM public.feed_rows; DROP TABLE public.canary', 'SELECT client, x FROM public.feed_rows')")
{
	($rc, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\n$call");
	like($err, qr/ERROR:  0A000: .*must be exactly one SELECT/, "refused with 0A000: $call");
}
is($node->safe_psql('postgres', q{SELECT count(*), to_regclass('public.canary2') IS NULL FROM public.canary}), '1|t',
	'the canary survives, nothing was created');
is($node->safe_psql('postgres', qq{SELECT model_name FROM perpca_train('s5', '$good;; ', 1, 1, init => 'given', start => '$start;')}),
	's5', 'one SELECT with trailing semicolons is accepted');

# ---- on_error => 'record' records what the owner's code raises -----------------
$node->safe_psql('postgres', q{
CREATE ROLE alice LOGIN;
CREATE SCHEMA alice AUTHORIZATION alice;
GRANT SELECT ON public.feed_rows TO alice;
}, );
$node->safe_psql('postgres', q{
CREATE TABLE alice.switch (mode text);
INSERT INTO alice.switch VALUES ('ok');
CREATE FUNCTION alice.gate() RETURNS boolean LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
    IF (SELECT mode FROM alice.switch) = 'cancel' THEN
        RAISE EXCEPTION 'raised by the owner' USING ERRCODE = 'query_canceled';
    ELSIF (SELECT mode FROM alice.switch) = 'sleep' THEN
        PERFORM pg_sleep(0.05);
    END IF;
    RETURN true;
END $$;
SELECT model_name FROM perpca_train('alice.g', 'SELECT client, perpca_stats(x) FROM public.feed_rows WHERE alice.gate() GROUP BY client', 1, 1);
UPDATE alice.switch SET mode = 'cancel';
}, extra_params => [ '-U', 'alice' ]);
$node->safe_psql('postgres', q{SELECT model_name FROM perpca_train('other', 'SELECT client, perpca_stats(x) FROM public.feed_rows GROUP BY client', 1, 1)});
($rc, $out, $err) = $node->psql('postgres', q{
BEGIN;
SELECT outcome, warning FROM perpca_refresh('alice.g', warm => false, on_error => 'record');
SELECT outcome FROM perpca_refresh('other', warm => false, on_error => 'record');
COMMIT;
});
is($rc, 0, 'a 57014 raised by the owner\'s query does not stop the superuser\'s batch') or diag($err);
is($out, "failed|failed: 57014: raised by the owner\nfitted", 'it is recorded as the refresh\'s failure, and the next refresh runs');
is($node->safe_psql('postgres', q{SELECT outcome, warning FROM perpca_model_history('alice.g') ORDER BY entry DESC LIMIT 1}),
	'failed|failed: 57014: raised by the owner', 'the history keeps it');
$node->safe_psql('postgres', q{UPDATE alice.switch SET mode = 'sleep'}, extra_params => [ '-U', 'alice' ]);
($rc, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\n" . q{
SET statement_timeout = '200ms';
SELECT outcome FROM perpca_refresh('alice.g', warm => false, on_error => 'record');
});
like($err, qr/ERROR:  57014: canceling statement due to statement timeout/,
	'a statement timeout of the caller still stops the caller');
is($node->safe_psql('postgres', q{SELECT count(*) FROM perpca_model_history('alice.g')}), '2',
	'and nothing is recorded for it');

$node->stop;
done_testing();
