# 065_upgrade.pl -- ALTER EXTENSION perpca UPDATE from 0.1.0, 0.2.0, 0.3.0 and 0.4.0
# gives the default version, object for object.
#
# Database "fresh" gets CREATE EXTENSION perpca (the default version);
# database "upgraded" gets perpca 0.1.0, statistics values and a stored
# model, then ALTER EXTENSION perpca UPDATE.  Then:
#   1. the extension's members are the same in both databases, object by
#      object: every function's full definition (pg_get_functiondef: body,
#      volatility, strictness, parallel marking, SET clauses, security),
#      aggregates' support functions, types, operators, casts, relations,
#      schemas, ACLs, owners and comments.  The list of objects is read from
#      pg_depend, so objects that later versions add are compared too;
#   2. the values and the model made by 0.1.0 still read and compute the
#      same, and the model can be refreshed, personalized and dropped.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PerpcaTest;

my $node = start_node('main');
my $data = test_path('test/data/project_obs.csv');

# Every member of the extension, one line each: identity, then what defines
# it.  Sorted, so that two databases can be compared line by line.
my $members_sql = q{
WITH m AS (
    SELECT d.classid, d.objid, d.objsubid
      FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
     WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e' AND e.extname = 'perpca'
)
SELECT pg_describe_object(m.classid, m.objid, m.objsubid)
       || E'\n  owner: ' || coalesce(
            (SELECT o.rolname FROM pg_roles o WHERE o.oid = coalesce(
                (SELECT proowner FROM pg_proc WHERE m.classid = 'pg_proc'::regclass AND oid = m.objid),
                (SELECT typowner FROM pg_type WHERE m.classid = 'pg_type'::regclass AND oid = m.objid),
                (SELECT relowner FROM pg_class WHERE m.classid = 'pg_class'::regclass AND oid = m.objid),
                (SELECT nspowner FROM pg_namespace WHERE m.classid = 'pg_namespace'::regclass AND oid = m.objid),
                (SELECT oprowner FROM pg_operator WHERE m.classid = 'pg_operator'::regclass AND oid = m.objid))),
            '-')
       || E'\n  comment: ' || coalesce(obj_description(m.objid, (SELECT relname FROM pg_class WHERE oid = m.classid)), '(none)')
       || E'\n  ' || CASE m.classid
            WHEN 'pg_proc'::regclass THEN (
                SELECT 'kind ' || p.prokind::text || ', acl ' || coalesce(p.proacl::text, 'default')
                       || E'\n' || CASE WHEN p.prokind = 'a' THEN (
                            SELECT format('aggregate %s(%s) sfunc %s stype %s finalfunc %s combine %s serial %s deserial %s initcond %s parallel %s strict %s volatile %s',
                                          p.proname, pg_get_function_identity_arguments(p.oid),
                                          a.aggtransfn::regprocedure, format_type(a.aggtranstype, NULL),
                                          a.aggfinalfn::regprocedure, a.aggcombinefn::regprocedure,
                                          a.aggserialfn::regprocedure, a.aggdeserialfn::regprocedure,
                                          coalesce(a.agginitval, '-'), p.proparallel, p.proisstrict, p.provolatile)
                              FROM pg_aggregate a WHERE a.aggfnoid = p.oid)
                          ELSE pg_get_functiondef(p.oid) END
                  FROM pg_proc p WHERE p.oid = m.objid)
            WHEN 'pg_type'::regclass THEN (
                SELECT format('type %s len %s byval %s align %s storage %s in %s out %s recv %s send %s',
                              format_type(t.oid, NULL), t.typlen, t.typbyval, t.typalign, t.typstorage,
                              t.typinput, t.typoutput, t.typreceive, t.typsend)
                  FROM pg_type t WHERE t.oid = m.objid)
            WHEN 'pg_class'::regclass THEN (
                SELECT format('relkind %s acl %s', c.relkind, coalesce(c.relacl::text, 'default'))
                  FROM pg_class c WHERE c.oid = m.objid)
            WHEN 'pg_namespace'::regclass THEN (
                SELECT format('acl %s', coalesce(n.nspacl::text, 'default'))
                  FROM pg_namespace n WHERE n.oid = m.objid)
            WHEN 'pg_operator'::regclass THEN (
                SELECT format('operator %s(%s, %s) proc %s', o.oprname, o.oprleft::regtype, o.oprright::regtype,
                              o.oprcode::regprocedure)
                  FROM pg_operator o WHERE o.oid = m.objid)
            ELSE 'other'
          END AS member
  FROM m
 ORDER BY 1;
};

my $ext_sql = q{
SELECT extversion, extrelocatable, extnamespace::regnamespace,
       (SELECT array_agg(c::regclass::text ORDER BY c::regclass::text) FROM unnest(extconfig) AS c) AS config
  FROM pg_extension WHERE extname = 'perpca';
};

# ---- the two databases ------------------------------------------------------
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('postgres', 'CREATE DATABASE upgraded');
$node->safe_psql('fresh', 'CREATE EXTENSION perpca');
my $default = $node->safe_psql('fresh', q{SELECT extversion FROM pg_extension WHERE extname = 'perpca'});
isnt($default, '0.1.0', "the default version ($default) is not 0.1.0");

# 0.1.0 with data: statistics values (dense and thin) and a stored model.
$node->safe_psql('upgraded', qq{
CREATE EXTENSION perpca VERSION '0.1.0';
CREATE TABLE obs (client text, obs int, x float8[]);
\\copy obs from '$data' csv header
CREATE TABLE stats AS
SELECT client, perpca_stats(x) AS dense, perpca_stats(x) FILTER (WHERE obs <= 3) AS thin
  FROM obs GROUP BY client;
SELECT model_name FROM perpca_train('m', 'SELECT client, perpca_stats(x) FROM public.obs WHERE client <> ''new'' GROUP BY client', 2, 2);
});
is($node->safe_psql('upgraded', q{SELECT extversion FROM pg_extension WHERE extname = 'perpca'}),
	'0.1.0', 'installed 0.1.0');

# What the 0.1.0 values and model compute, before the update.
my $values_sql = q{
SELECT client, perpca_count(dense), perpca_count(thin), perpca_dim(dense),
       round(perpca_total_variance(dense, perpca_mean(dense))::numeric, 9),
       round(perpca_total_variance(thin, perpca_mean(thin))::numeric, 9),
       (SELECT array_agg(round(v::numeric, 9)) FROM unnest(perpca_mean(perpca_merge(dense, thin))) AS v)
  FROM stats ORDER BY client;
};
my $model_sql = q{
SELECT o.client, o.obs, round(perpca_model_error('m', o.client, o.x)::numeric, 9),
       (SELECT array_agg(round(v::numeric, 9)) FROM unnest(perpca_model_scores('m', o.client, o.x)) AS v)
  FROM obs o WHERE o.obs <= 3 ORDER BY 1, 2;
};
my $values_before = $node->safe_psql('upgraded', $values_sql);
my $model_before = $node->safe_psql('upgraded', $model_sql);
my $components_before = $node->safe_psql('upgraded',
	q{SELECT client, kind, component, pc FROM m_components ORDER BY 2, 1, 3});

# A function the update creates, planted first by a plain role who may create
# in the extension's schema (CREATE OR REPLACE would fail on it: "is not a
# member of extension"), stops the update with an error that names it and its
# owner (and nothing is updated); dropped, the update goes on.
$node->safe_psql('upgraded', q{CREATE ROLE planter LOGIN; GRANT CREATE ON SCHEMA public TO planter});
$node->safe_psql('upgraded', q{CREATE FUNCTION public.perpca_last_fit_clients() RETURNS int LANGUAGE sql AS 'SELECT 1'},
	extra_params => [ '-U', 'planter' ]);
my ($rc, $out, $err) = $node->psql('upgraded', "\\set VERBOSITY verbose\nALTER EXTENSION perpca UPDATE");
like($err, qr/ERROR:  42723: function (public\.)?perpca_last_fit_clients\(\) \(owned by role planter\) is in the way of the update of perpca/,
	'a planted function of a new name stops the update, named with its owner (42723)');
is($node->safe_psql('upgraded', q{SELECT extversion FROM pg_extension WHERE extname = 'perpca'}),
	'0.1.0', 'and nothing is updated');
$node->safe_psql('upgraded', q{DROP FUNCTION public.perpca_last_fit_clients(); REVOKE CREATE ON SCHEMA public FROM planter; DROP ROLE planter});

$node->safe_psql('upgraded', 'ALTER EXTENSION perpca UPDATE');

# ---- 1. the catalog -----------------------------------------------------------
is($node->safe_psql('upgraded', $ext_sql), $node->safe_psql('fresh', $ext_sql),
	'version, schema and configuration tables equal a fresh install');

my @fresh = split /\n(?=\S)/, $node->safe_psql('fresh', $members_sql);
my @upgraded = split /\n(?=\S)/, $node->safe_psql('upgraded', $members_sql);
cmp_ok(scalar(@fresh), '>', 40, 'a fresh install has ' . scalar(@fresh) . ' members');
my %fresh = map { (split /\n/, $_)[0] => $_ } @fresh;
my %upgraded = map { (split /\n/, $_)[0] => $_ } @upgraded;
my @missing = grep { !exists $upgraded{$_} } sort keys %fresh;
my @extra = grep { !exists $fresh{$_} } sort keys %upgraded;
is_deeply(\@missing, [], 'no object of a fresh install is missing after the update');
is_deeply(\@extra, [], 'the update leaves no object that a fresh install does not have');
my @differ = grep { exists $upgraded{$_} && $upgraded{$_} ne $fresh{$_} } sort keys %fresh;
is_deeply(\@differ, [], 'every object is defined as in a fresh install');
for my $k (@differ)
{
	diag("---- fresh:\n$fresh{$k}\n---- upgraded:\n$upgraded{$k}");
}

# The same from 0.2.0, 0.3.0 and 0.4.0 (their released scripts in sql/released/),
# each with a model that the old version trained and that the update must
# keep refreshable.
for my $old ('0.2.0', '0.3.0', '0.4.0')
{
	my $db = 'from' . ($old =~ s/\.//gr);
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, qq{
CREATE EXTENSION perpca VERSION '$old';
CREATE TABLE obs (client text, obs int, x float8[]);
\\copy obs from '$data' csv header
SELECT model_name FROM perpca_train('m', 'SELECT client, perpca_stats(x) FROM public.obs WHERE client <> ''new'' GROUP BY client', 2, 2);
});
	my $all_rows = $model_sql =~ s/o\.obs <= 3/true/r;
	my $model_old = $node->safe_psql($db, $all_rows);
	$node->safe_psql($db, 'ALTER EXTENSION perpca UPDATE');
	is($node->safe_psql($db, $ext_sql), $node->safe_psql('fresh', $ext_sql),
		"from $old: version, schema and configuration tables equal a fresh install");
	my %from = map { (split /\n/, $_)[0] => $_ } split /\n(?=\S)/, $node->safe_psql($db, $members_sql);
	is_deeply([ grep { !exists $from{$_} } sort keys %fresh ], [], "from $old: no object of a fresh install is missing");
	is_deeply([ grep { !exists $fresh{$_} } sort keys %from ], [], "from $old: no object a fresh install does not have");
	my @differ = grep { exists $from{$_} && $from{$_} ne $fresh{$_} } sort keys %fresh;
	is_deeply(\@differ, [], "from $old: every object is defined as in a fresh install");
	diag("---- fresh:\n$fresh{$_}\n---- from $old:\n$from{$_}") for @differ;
	is($node->safe_psql($db, $all_rows), $model_old,
		"from $old: the $old model projects rows as before the update");
	# 0.2.0 kept no history; 0.3.0 and 0.4.0 record the train.
	is($node->safe_psql($db, q{SELECT count(*) FROM perpca_model_history('m')}), $old eq '0.2.0' ? '0' : '1',
		"from $old: the model's history is as the old version left it");
	# A 0.3.0 model of unchanged statistics would be 'unchanged': refit it anyway.
	is($node->safe_psql($db, q{SELECT outcome, clients FROM perpca_refresh('m', warm => false)}), 'fitted|5',
		"from $old: the $old model refreshes after the update");
	is($node->safe_psql($db, q{SELECT source_view, pg_get_viewdef('public.m_source') ~ 'perpca_stats' FROM m_info}),
		'public.m_source|t', "from $old: its query is bound in the view m_source (by the train, or by the first refresh after the update)");
	is($node->safe_psql($db, q{SELECT outcome, rounds_run FROM perpca_refresh('m')}), 'unchanged|0',
		"from $old: the next refresh of the same data fits nothing");
}

# ---- 2. old values and models ---------------------------------------------------
is($node->safe_psql('upgraded', $values_sql), $values_before,
	'0.1.0 statistics values read and compute the same after the update');
is($node->safe_psql('upgraded', $model_sql), $model_before,
	'the 0.1.0 model projects rows as before the update');
is($node->safe_psql('upgraded', q{SELECT client, kind, component, pc FROM m_components ORDER BY 2, 1, 3}),
	$components_before, 'its components are untouched');

# The 0.1.0 model is refreshed by 0.2.0, then personalized and dropped.
my $refresh = $node->safe_psql('upgraded',
	q{SELECT outcome, clients, clients_added, clients_dropped, warm_start FROM perpca_refresh('m')});
is($refresh, 'fitted|5|0|0|t', 'the 0.1.0 model refreshes (warm) after the update');
is($node->safe_psql('upgraded', q{SELECT source_view FROM m_info}), 'public.m_source',
	'and binds its query in the view m_source');
my $personalized = $node->safe_psql('upgraded', q{
SELECT count(*) FROM perpca_personalize('m', 'new', (SELECT dense FROM stats WHERE client = 'new'));
SELECT source FROM m_clients WHERE client = 'new';
});
is($personalized, "2\npersonalize", 'a new client is personalized into the 0.1.0 model');
$node->safe_psql('upgraded', q{SELECT perpca_drop('m')});
is($node->safe_psql('upgraded', q{SELECT to_regclass('m_info') IS NULL}), 't', 'and the model is dropped');

# A model trained by 0.2.0 in the upgraded database works as in the fresh one.
my $train = q{
CREATE TABLE IF NOT EXISTS obs2 (client text, obs int, x float8[]);
TRUNCATE obs2;
\copy obs2 from 'DATA' csv header
SELECT model_name, n_clients FROM perpca_train('m2', 'SELECT client, perpca_stats(x) FROM public.obs2 GROUP BY client', 2, 1);
SELECT round(sum(perpca_model_error('m2', client, x))::numeric, 6) FROM obs2;
};
$train =~ s/DATA/$data/;
is($node->safe_psql('upgraded', $train), $node->safe_psql('fresh', $train),
	'a model trained after the update equals one trained by a fresh install');

$node->stop;
done_testing();
