# 077_internal_execute.pl -- who may execute perpca's internal functions
# (sql/create_or_replace/95_privileges.sql, docs/security.md).
#
#   1. The functions of perpca_internal that PUBLIC may execute are exactly
#      the allow list below, each with its reason: a new internal function
#      executable by PUBLIC (or one dropped from 95_privileges.sql's grants)
#      fails this test until the list, 95_privileges.sql and the table of
#      docs/security.md agree.  Those not listed are refused to a plain role.
#   2. A plain role (mallory) calls every function still executable by
#      PUBLIC against another role's (alice's) model, with hostile arguments
#      (names with quotes and semicolons, alice's unreadable table, a model
#      whose info table is a view, NULLs): each call succeeds harmlessly or
#      fails with a clean SQLSTATE, never an internal error; no function of
#      alice runs as mallory (alice's model has an enum column with her
#      implicit casts to text, json and jsonb, and a second model's info
#      table is a view calling her function; both log current_user and warn
#      when it is not alice, which a failing call cannot roll back), no
#      row of alice's unreadable table reaches mallory, and alice's model is
#      unchanged.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PerpcaTest;

# ---- the allow list: function => why PUBLIC may execute it --------------------
my $pure = 'pure computation on its arguments';
my $citus = 'pure; support function of a distributed aggregate (Citus checks EXECUTE as the caller)';
my $shard = "shard side of perpca_fit_federated: the connecting role's query, as that role, state in its session";
my %allow = (
	'perpca_internal.scale_stats(perpca_stats,double precision[])' => $pure,
	'perpca_internal.scale_vector(double precision[],double precision[])' => $pure,
	'perpca_internal.stats_dist_accum(perpca_stats,double precision[])' => $citus,
	'perpca_internal.stats_dist_accum(perpca_stats,double precision[],text)' => $citus,
	'perpca_internal.stats_dist_combine(perpca_stats,perpca_stats)' => $citus,
	'perpca_internal.stats_dist_final(perpca_stats)' => $citus,
	'perpca_internal.shard_open(text,text,integer,integer,text,bigint,text)' => $shard,
	'perpca_internal.shard_scale(text,double precision[])' => $shard,
	'perpca_internal.shard_init(text,double precision[],double precision[])' => $shard,
	'perpca_internal.shard_basis(text,boolean,boolean)' => $shard,
	'perpca_internal.shard_apply(text,double precision[])' => $shard,
	'perpca_internal.shard_start_local(text,double precision[],text)' => $shard,
	'perpca_internal.shard_round(text,double precision[],double precision,text,text,boolean)' => $shard,
	'perpca_internal.shard_evaluate(text,double precision[],double precision)' => $shard,
	'perpca_internal.shard_finish(text,double precision[],boolean)' => $shard,
	'perpca_internal.shard_result(text)' => $shard,
	'perpca_internal.shard_close(text)' => $shard,
);

my $node = start_node('main');
my $q = q{SELECT client, perpca_stats(x) FROM public.obs GROUP BY client};
$node->safe_psql('postgres', obs_feed_sql('a', 'b', 'c') . role_schemas_sql('alice', 'mallory') . q{
GRANT SELECT ON obs TO PUBLIC;
GRANT USAGE ON SCHEMA alice TO PUBLIC;
});

# ---- 1. the allow list ------------------------------------------------------------
my @public = split /\n/, $node->safe_psql('postgres', q{
SELECT p.oid::regprocedure::text FROM pg_proc p
 WHERE p.pronamespace = 'perpca_internal'::regnamespace AND has_function_privilege('public', p.oid, 'EXECUTE')
 ORDER BY 1});
my @extra = grep { !exists $allow{$_} } @public;
my %is_public = map { $_ => 1 } @public;
my @gone = grep { !$is_public{$_} } sort keys %allow;
is(join("\n", @extra), '',
	'no perpca_internal function is executable by PUBLIC unless it is in the allow list (with its reason), '
	  . '95_privileges.sql and docs/security.md');
is(join("\n", @gone), '', 'every function of the allow list is executable by PUBLIC (95_privileges.sql grants it)');
my $revoked = $node->safe_psql('postgres', q{
SELECT count(*) FROM pg_proc p
 WHERE p.pronamespace = 'perpca_internal'::regnamespace AND NOT has_function_privilege('public', p.oid, 'EXECUTE')});
# (at least f_upper_quantile, which a plain role is refused below)
cmp_ok($revoked, '>=', 1, "the others are not executable by PUBLIC ($revoked functions)");
my ($ret, $out, $err) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT perpca_internal.f_upper_quantile(0.1, 1, 1)",
	extra_params => [ '-U', 'mallory' ]);
like($err, qr/ERROR:  42501: permission denied for function f_upper_quantile/,
	'a plain role cannot execute an internal function off the list');

# ---- alice's model, her traps and her secret ------------------------------------------
$node->safe_psql('postgres', qq{
CREATE TABLE alice.fired (who text, what text);
GRANT INSERT ON alice.fired TO PUBLIC;
CREATE FUNCTION alice.trap(what text) RETURNS boolean LANGUAGE plpgsql AS \$\$
BEGIN
    INSERT INTO alice.fired VALUES (current_user, what);
    -- a failing call rolls the row back: the warning reaches the caller anyway
    IF current_user <> 'alice' THEN
        RAISE WARNING 'alice-trap-fired: % as %', what, current_user;
    END IF;
    RETURN true;
END \$\$;
CREATE TABLE alice.secret (client text, stats perpca_stats, note text);
INSERT INTO alice.secret SELECT client, perpca_stats(x), 'alice-secret-42' FROM public.obs GROUP BY client;
SELECT model_name FROM perpca_train('alice.am', '$q', 2, 1);
SELECT model_name FROM perpca_train('alice.vm', '$q', 2, 1);
ALTER TABLE alice.vm_info RENAME TO vm_info_table;
CREATE VIEW alice.vm_info AS SELECT * FROM alice.vm_info_table WHERE alice.trap('view');
CREATE TYPE alice.color AS ENUM ('red');
CREATE FUNCTION alice.color_text(c alice.color) RETURNS text LANGUAGE plpgsql AS
\$\$ BEGIN PERFORM alice.trap('cast to text'); RETURN 'red'; END \$\$;
CREATE FUNCTION alice.color_json(c alice.color) RETURNS json LANGUAGE plpgsql AS
\$\$ BEGIN PERFORM alice.trap('cast to json'); RETURN '"red"'; END \$\$;
CREATE FUNCTION alice.color_jsonb(c alice.color) RETURNS jsonb LANGUAGE plpgsql AS
\$\$ BEGIN PERFORM alice.trap('cast to jsonb'); RETURN '"red"'; END \$\$;
CREATE CAST (alice.color AS text) WITH FUNCTION alice.color_text(alice.color) AS IMPLICIT;
CREATE CAST (alice.color AS json) WITH FUNCTION alice.color_json(alice.color) AS IMPLICIT;
CREATE CAST (alice.color AS jsonb) WITH FUNCTION alice.color_jsonb(alice.color) AS IMPLICIT;
ALTER TABLE alice.am_info ADD COLUMN paint alice.color DEFAULT 'red';
ALTER TABLE alice.am_clients ADD COLUMN paint alice.color DEFAULT 'red';
ALTER TABLE alice.am_components ADD COLUMN paint alice.color DEFAULT 'red';
GRANT SELECT ON alice.am_info, alice.am_clients, alice.am_components, alice.vm_info, alice.vm_clients,
                alice.vm_components TO PUBLIC;
}, extra_params => [ '-U', 'alice' ]);
my $state_sql = q{
SELECT (SELECT version FROM alice.am_info) || ' ' || (SELECT count(*) FROM alice.am_clients) || ' '
       || (SELECT count(*) FROM alice.am_components) || ' '
       || (SELECT string_agg(md5(pc::text), ',' ORDER BY kind, client, component) FROM alice.am_components) || ' '
       || (SELECT count(*) FROM alice.secret)};
my $state = $node->safe_psql('postgres', $state_sql);
$node->safe_psql('postgres', 'TRUNCATE alice.fired');

# ---- 2. mallory calls every function still executable by PUBLIC -------------------------
my $stats = q{(SELECT perpca_stats(x) FROM public.obs WHERE client = 'a')};
my $hostile = q{'am''; DROP TABLE alice.am_info; --'};
my $priv = '42501';
# [call, SQLSTATEs accepted ('' = success)]
my @calls = (
	# (a) pure
	[ "SELECT perpca_internal.scale_stats($stats, NULL) IS NOT NULL", '' ],
	[ "SELECT perpca_internal.scale_stats($stats, ARRAY[1, 0]::float8[])", '22023|2202E|22000' ],
	[ 'SELECT perpca_internal.scale_vector(ARRAY[1, 2]::float8[], ARRAY[1]::float8[])', '22023|2202E|22000' ],
	# aggregate support functions refuse a direct call
	[ "SELECT perpca_internal.stats_dist_final(perpca_internal.stats_dist_accum(NULL, ARRAY[1, 2]::float8[]))", '0A000' ],
	[ "SELECT perpca_internal.stats_dist_accum(NULL, ARRAY[1, NULL]::float8[], 'skip')", '0A000' ],
	[ "SELECT perpca_internal.stats_dist_combine($stats, $stats)", '0A000' ],
	# (b) the caller's query, as the caller
	[ "SELECT * FROM perpca_internal.shard_open('f', 'SELECT client, stats FROM alice.secret', 1, 1, 'equal', 0, 'skip')", $priv ],
	[ "SELECT * FROM perpca_internal.shard_scale('nope', '{1}')", '22023|42704|55000' ],
	[ "SELECT * FROM perpca_internal.shard_init('nope', NULL, NULL)", '22023|42704|55000' ],
	[ "SELECT * FROM perpca_internal.shard_basis('nope', false, true)", '22023|42704|55000' ],
	[ "SELECT * FROM perpca_internal.shard_apply('nope', '{{1}}')", '22023|42704|55000' ],
	[ "SELECT * FROM perpca_internal.shard_start_local('nope', '{{1}}', 'x')", '22023|42704|55000' ],
	[ "SELECT * FROM perpca_internal.shard_round('nope', '{{1}}', 0.1, 'stgd', 'polar', false)", '22023|42704|55000' ],
	[ "SELECT * FROM perpca_internal.shard_evaluate('nope', '{{1}}', 0.1)", '22023|42704|55000' ],
	[ "SELECT * FROM perpca_internal.shard_finish('nope', '{{1}}', false)", '22023|42704|55000' ],
	[ "SELECT perpca_internal.shard_result('nope')", '22023|42704|55000' ],
	[ "SELECT perpca_internal.shard_close('nope')", '' ],
	# the writers of a model: C from the call on (no internal function of the write path is
	# executable by PUBLIC); against alice's model they refuse before anything is read
	[ "SELECT * FROM perpca_refresh('alice.am')", $priv ],
	[ "SELECT * FROM perpca_refresh('alice.am', on_error => 'record')", $priv ],
	[ "SELECT * FROM perpca_refresh('alice.vm')", "$priv|42809" ],
	[ "SELECT * FROM perpca_train('alice.am', 'SELECT client, stats FROM alice.secret', 2, 1, replace => true)", $priv ],
	[ "SELECT * FROM perpca_train('alice.newm', '$q', 2, 1)", $priv ],
	[ "SELECT * FROM perpca_personalize('alice.am', 'x', $stats)", $priv ],
	[ "SELECT perpca_drop('alice.am')", $priv ],
);
my %called;
for my $c (@calls)
{
	my ($sql, $accept) = @$c;
	$called{$_} = 1 for $sql =~ /perpca_internal\.(\w+)\(/g;
	my ($r, $o, $e) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql", extra_params => [ '-U', 'mallory' ]);
	my ($state) = $e =~ /ERROR:  ([0-9A-Z]{5}):/;
	$state //= '';
	like($state, qr/^(?:$accept)$/, "mallory: $sql -> " . ($state eq '' ? 'success' : $state))
	  or diag($e);
	unlike("$o$e", qr/alice-secret-42/, "no row of alice's secret reaches mallory: $sql");
	unlike($e, qr/alice-trap-fired/, "no function of alice runs as mallory: $sql");
}
# every function of the list was called above
my @uncalled = grep { my ($n) = /^perpca_internal\.(\w+)\(/; !$called{$n} } sort keys %allow;
is(join(', ', @uncalled), '', 'every function of the allow list is called with hostile arguments');

# Every function of perpca_internal with NULL arguments, as mallory: a clean error or a result.
my @nulls = split /\n/, $node->safe_psql('postgres', q{
SELECT format('SELECT %s(%s)', p.oid::regproc,
              (SELECT string_agg(CASE WHEN t = '"any"'::regtype THEN 'NULL::text' ELSE 'NULL::' || format_type(t, NULL) END,
                                 ', ' ORDER BY i)
                 FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY AS a(t, i)))
  FROM pg_proc p
 WHERE p.pronamespace = 'perpca_internal'::regnamespace AND p.prokind = 'f'
 ORDER BY 1});
my @internal;
for my $sql (@nulls)
{
	my ($r, $o, $e) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql", extra_params => [ '-U', 'mallory' ]);
	push @internal, "$sql: $e" if $e =~ /ERROR:  XX|server closed|terminated|alice-trap-fired/;
}
is(join("\n", @internal), '', 'NULL arguments: never an internal error (' . scalar(@nulls) . ' functions)');

is($node->safe_psql('postgres', q{SELECT string_agg(DISTINCT who || ': ' || what, ', ') FROM alice.fired WHERE who <> 'alice'}),
	'', 'no function of alice ran as mallory');
is($node->safe_psql('postgres', $state_sql), $state, "alice's model and her secret are unchanged");
is($node->safe_psql('postgres', q{
SELECT count(*) FROM pg_class WHERE relnamespace = 'alice'::regnamespace AND relowner <> 'alice'::regrole}),
	'0', "mallory created nothing in alice's schema");
is($node->safe_psql('postgres', q{SELECT rolsuper OR pg_has_role('mallory', 'alice', 'USAGE') FROM pg_roles WHERE rolname = 'mallory'}),
	'f', 'mallory has gained no privilege');

# The owner still uses her model through the user-facing functions (the internal ones run for her).
is($node->safe_psql('postgres', qq{
SELECT count(*) FROM perpca_personalize('alice.am', 'z', $stats);
SELECT clients FROM perpca_refresh('alice.am')}, extra_params => [ '-U', 'alice' ]),
	"1\n6", 'alice personalizes and refreshes her model');
$node->stop;
done_testing();
