# 076_planted_casts.pl -- nothing perpca runs around a user's rows is
# resolved late.  A plain role, mallory, owns the types of a table's key
# and value columns (an enum, a domain over it, a composite, domains over
# float8[] and over perpca_stats) and may create in the schema perpca is
# installed in.  A superuser trains models on her table; then she plants,
# for each type, what perpca's SQL could meet:
#   - casts of her key types to text (assignment casts: a CAST in SQL and
#     an assignment on INSERT would both take them);
#   - aggregates perpca_stats(<her domain over float8[]>) and
#     perpca_merge(<her domain over perpca_stats>) in perpca's own schema,
#     the exact match for a call that passes her column as it is.
# The superuser then refreshes every model, fits, evaluates and
# personalizes clients from queries over her columns.  Each of her
# functions records who ran it and makes her superuser when it can: the
# test checks that none ran as anyone but her, and that she is no
# superuser.  Keys of her types still match the model's.  Three of the
# models hold out rows for calibrated control limits (the split hashes her
# key and row), and the superuser monitors with those limits.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PerpcaTest;

my $node = start_node('main');
my $data = test_path('test/data/project_obs.csv');

# perpca in a schema everyone may create in (the "exact-match overload" setting).
$node->safe_psql('postgres', role_schemas_sql('mallory') . qq{
CREATE SCHEMA shared;
GRANT CREATE, USAGE ON SCHEMA shared TO PUBLIC;
CREATE EXTENSION perpca SCHEMA shared;
CREATE TABLE public.raw (client text, obs int, x float8[]);
\\copy public.raw from '$data' csv header
GRANT SELECT ON public.raw TO PUBLIC;
});

# Her types and her table (keys north/south/east/west/up, the rows of a..e).
$node->safe_psql('postgres', q{
CREATE TYPE mallory.region AS ENUM ('north', 'south', 'east', 'west', 'up');
CREATE TYPE mallory.site AS (code text, n int);
CREATE DOMAIN mallory.vec AS float8[];
CREATE DOMAIN mallory.rdom AS mallory.region;
CREATE DOMAIN mallory.sv AS shared.perpca_stats;
CREATE TABLE mallory.obs AS
SELECT (ARRAY['north', 'south', 'east', 'west', 'up']::mallory.region[])[ascii(client) - 96] AS region,
       ROW(client, ascii(client))::mallory.site AS site,
       (ARRAY['north', 'south', 'east', 'west', 'up']::mallory.region[])[ascii(client) - 96]::mallory.rdom AS rdom,
       x::mallory.vec AS xv, x, x[1] AS c1, x[2] AS c2, x[3] AS c3, x[4] AS c4
  FROM public.raw WHERE client BETWEEN 'a' AND 'e';
GRANT USAGE ON SCHEMA mallory TO PUBLIC;
GRANT SELECT ON mallory.obs TO PUBLIC;
CREATE TABLE mallory.fired (who text, what text);
GRANT INSERT ON mallory.fired TO PUBLIC;
CREATE FUNCTION mallory.evil(what text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO mallory.fired VALUES (current_user, what);
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        EXECUTE 'ALTER ROLE mallory SUPERUSER';
    END IF;
END $$;
}, extra_params => [ '-U', 'mallory' ]);

# The superuser's models over her columns, trained before anything is planted.
my %models = (
	m_enum => q{SELECT region, x FROM mallory.obs},
	m_site => q{SELECT site, x FROM mallory.obs},
	m_cols => q{SELECT region, c1, c2, c3, c4 FROM mallory.obs},
	m_stats => q{SELECT region, shared.perpca_stats(x) FROM mallory.obs GROUP BY region},
	m_dom => q{SELECT region, xv FROM mallory.obs},
	m_dkey => q{SELECT rdom, x FROM mallory.obs},
	m_enum_cal => q{SELECT region, x FROM mallory.obs},
	m_site_cal => q{SELECT site, x FROM mallory.obs},
	m_dom_cal => q{SELECT rdom, xv FROM mallory.obs},
);
# The _cal models hold out rows to calibrate their control limits: the
# split (a hash of her key and row) is bound in their views, and every
# refresh scores the held-out rows.
for my $m (sort keys %models)
{
	my $q = $models{$m} =~ s/'/''/gr;
	my $cal = $m =~ /_cal$/ ? ', calibration => 0.3' : '';
	$node->safe_psql('postgres', "SELECT model_name FROM shared.perpca_train('public.$m', '$q', 1, 1$cal)");
}

# ---- her traps, planted after training -------------------------------------------
$node->safe_psql('postgres', q{
CREATE FUNCTION mallory.region_text(r mallory.region) RETURNS text LANGUAGE plpgsql AS $$
BEGIN PERFORM mallory.evil('cast region'); RETURN 'x' || r::name; END $$;
CREATE CAST (mallory.region AS text) WITH FUNCTION mallory.region_text(mallory.region) AS ASSIGNMENT;
CREATE FUNCTION mallory.site_text(s mallory.site) RETURNS text LANGUAGE plpgsql AS $$
BEGIN PERFORM mallory.evil('cast site'); RETURN 'x'; END $$;
CREATE CAST (mallory.site AS text) WITH FUNCTION mallory.site_text(mallory.site) AS ASSIGNMENT;
CREATE FUNCTION mallory.vec_step(s float8[], v mallory.vec) RETURNS float8[] LANGUAGE plpgsql AS $$
BEGIN PERFORM mallory.evil('aggregate perpca_stats(vec)'); RETURN s; END $$;
CREATE AGGREGATE shared.perpca_stats(mallory.vec) (SFUNC = mallory.vec_step, STYPE = float8[]);
CREATE FUNCTION mallory.sv_step(s float8[], v mallory.sv) RETURNS float8[] LANGUAGE plpgsql AS $$
BEGIN PERFORM mallory.evil('aggregate perpca_merge(sv)'); RETURN s; END $$;
CREATE AGGREGATE shared.perpca_merge(mallory.sv) (SFUNC = mallory.sv_step, STYPE = float8[]);
CREATE TABLE mallory.svs AS SELECT region, shared.perpca_stats(x)::mallory.sv AS s FROM mallory.obs GROUP BY region;
GRANT SELECT ON mallory.svs TO PUBLIC;
}, extra_params => [ '-U', 'mallory' ]);
# The traps are live: her own use of the cast and the aggregates runs them.
$node->safe_psql('postgres', q{
SELECT 'north'::mallory.region::text;
SELECT shared.perpca_stats(xv) FROM mallory.obs;
SELECT shared.perpca_merge(s) FROM mallory.svs;
}, extra_params => [ '-U', 'mallory' ]);
is($node->safe_psql('postgres', q{SELECT string_agg(DISTINCT what, ', ' ORDER BY what) FROM mallory.fired WHERE who = 'mallory'}),
	'aggregate perpca_merge(sv), aggregate perpca_stats(vec), cast region', 'her traps fire for her');

# ---- what a superuser runs ---------------------------------------------------------
for my $m (sort keys %models)
{
	is($node->safe_psql('postgres', "SELECT outcome FROM shared.perpca_refresh('public.$m', warm => false)"),
		'fitted', "refresh of $m by a superuser");
}
for my $m (sort keys %models)
{
	is($node->safe_psql('postgres', "SELECT outcome FROM shared.perpca_refresh('public.$m', on_error => 'record')"),
		'unchanged', "refresh of $m with on_error => 'record'");
}
my %calls = (
	'perpca_fit, enum key' => q{SELECT count(*) FROM shared.perpca_fit('SELECT region, x FROM mallory.obs', 1, 1)},
	'perpca_fit, composite key' => q{SELECT count(*) FROM shared.perpca_fit('SELECT site, x FROM mallory.obs', 1, 1)},
	'perpca_fit, feature columns' => q{SELECT count(*) FROM shared.perpca_fit('SELECT region, c1, c2, c3, c4 FROM mallory.obs', 1, 1)},
	'perpca_fit, domain over float8[]' => q{SELECT count(*) FROM shared.perpca_fit('SELECT region, xv FROM mallory.obs', 1, 1)},
	'perpca_evaluate, enum key' => q{SELECT count(*) FROM shared.perpca_evaluate('m_enum', 'SELECT region, x FROM mallory.obs')},
	'perpca_evaluate, domain over float8[]' => q{SELECT count(*) FROM shared.perpca_evaluate('m_dom', 'SELECT region, xv FROM mallory.obs')},
	'perpca_evaluate, domain over perpca_stats' => q{SELECT count(*) FROM shared.perpca_evaluate('m_stats', 'SELECT region, s FROM mallory.svs')},
	'perpca_personalize_clients, enum key' => q{SELECT count(*) FROM shared.perpca_personalize_clients('m_enum', 'SELECT region, x FROM mallory.obs')},
	'perpca_personalize_clients, domain over float8[]' => q{SELECT count(*) FROM shared.perpca_personalize_clients('m_dom', 'SELECT region, xv FROM mallory.obs')},
	'perpca_model_monitor, calibrated, composite key' => q{SELECT count(*) FILTER (WHERE (shared.perpca_model_monitor('m_site_cal', site, x, limits => 'calibrated')).t2 IS NOT NULL) FROM mallory.obs},
	'perpca_model_monitor, calibrated, domain key' => q{SELECT count(*) FILTER (WHERE (shared.perpca_model_monitor('m_dom_cal', rdom, xv, limits => 'calibrated')).t2 IS NOT NULL) FROM mallory.obs},
);
for my $c (sort keys %calls)
{
	my ($rc, $out, $err) = $node->psql('postgres', $calls{$c});
	is($rc, 0, "$c runs for a superuser") or diag($err);
}

# ---- nothing of hers ran as anyone else --------------------------------------------
is($node->safe_psql('postgres', q{SELECT count(*) FROM mallory.fired WHERE who <> 'mallory'}), '0',
	'none of her casts or aggregates ran as another role')
  or diag($node->safe_psql('postgres', q{SELECT who, what, count(*) FROM mallory.fired GROUP BY 1, 2}));
is($node->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'}), 'f',
	'mallory is not a superuser');

is($node->safe_psql('postgres', q{
SELECT count(*) FROM (SELECT calibration_rows FROM public.m_enum_cal_info UNION ALL SELECT calibration_rows FROM public.m_site_cal_info
                      UNION ALL SELECT calibration_rows FROM public.m_dom_cal_info) c WHERE calibration_rows > 0}), '3',
	'the calibrated models scored their held-out rows at the refresh');

# ---- and her keys still match the models' ---------------------------------------------
is($node->safe_psql('postgres', q{
SELECT count(*) FILTER (WHERE shared.perpca_model_error('m_enum', region, x, unknown => 'error') IS NOT NULL)
     + count(*) FILTER (WHERE shared.perpca_model_error('m_site', site, x, unknown => 'error') IS NOT NULL)
     + count(*) FILTER (WHERE shared.perpca_model_error('m_dkey', rdom, x, unknown => 'error') IS NOT NULL)
  FROM mallory.obs}), '2250', 'every row of hers matches its client in the models, by enum, composite and domain key');
is($node->safe_psql('postgres', q{SELECT string_agg(client, ',' ORDER BY client) FROM m_enum_clients}),
	'east,north,south,up,west', 'the enum keys are stored as their labels');

# ---- a model stored before 0.4.0, bound at its first refresh --------------------------
# Its recorded search_path names her schema before public; she shadows the
# table its query reads with a view that calls her function (which would run
# as the superuser who refreshes).  Only the schemas no one but the owner or
# a superuser can create in are searched: public.raw is bound.
$node->safe_psql('postgres', q{
SELECT model_name FROM shared.perpca_train('public.old', 'SELECT client, shared.perpca_stats(x) FROM public.raw GROUP BY client', 1, 1);
DROP VIEW public.old_source;
UPDATE public.old_info SET source_view = NULL, source_query = 'SELECT client, shared.perpca_stats(x) FROM raw GROUP BY client',
       search_path = 'mallory, public';
SELECT model_name FROM shared.perpca_train('public.old2', 'SELECT client, shared.perpca_stats(x) FROM public.raw GROUP BY client', 1, 1);
DROP VIEW public.old2_source;
UPDATE public.old2_info SET source_view = NULL, source_query = 'SELECT client, perpca_stats(x) FROM public.raw GROUP BY client',
       search_path = 'shared, public';
});
$node->safe_psql('postgres', q{
CREATE VIEW mallory.raw AS SELECT r.* FROM public.raw r, LATERAL (SELECT mallory.evil('view raw')) e;
GRANT SELECT ON mallory.raw TO PUBLIC;
}, extra_params => [ '-U', 'mallory' ]);
is($node->safe_psql('postgres', q{SELECT outcome FROM shared.perpca_refresh('public.old', warm => false)}), 'fitted',
	'a model stored before 0.4.0 refreshes');
like($node->safe_psql('postgres', q{SELECT pg_get_viewdef('public.old_source')}), qr/FROM raw\b|FROM public\.raw/,
	'its query is bound to public.raw');
is($node->safe_psql('postgres', q{SELECT count(*) FROM mallory.fired WHERE who <> 'mallory'}), '0',
	'her view in the recorded search_path did not run');
my ($rc, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT * FROM shared.perpca_refresh('public.old2')");
like($err, qr/ERROR:  42883: [^\n]*perpca_stats[\s\S]*DETAIL:  [^\n]*stored before 0\.4\.0[^\n]*\(shared\)[\s\S]*HINT:  Train it again/,
	'a query that needs a schema others can create in: an error that says which and how to re-train');
is($node->safe_psql('postgres', q{SELECT outcome FROM shared.perpca_refresh('public.old2', on_error => 'record')}), 'failed',
	'with on_error => record, the failure is recorded');

done_testing();
