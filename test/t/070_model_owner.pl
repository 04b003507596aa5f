# 070_model_owner.pl -- who a model's maintenance runs as, and concurrent creation.
#
# 1. Six sessions train one new model at once: the model's lock is taken
#    before its existence is checked, so one creates it and the others fail
#    with duplicate_table (42P07, "already exists"), or all succeed in turn
#    with replace => true.  None fails with a catalog error.  (0.1.0: five of
#    six failed on pg_type_typname_nsp_index.)
# 2. perpca_refresh runs the stored source query as the model's owner, inside
#    a security-restricted operation: a low-privileged role's model, refreshed
#    by a superuser, can do nothing the role could not (read a table only the
#    superuser may read, create a temporary object, SET ROLE, fire a trigger
#    as the superuser).  A non-owner's refresh fails with 42501.
# 3. A replace or a personalize of another role's model by a superuser also
#    writes as the owner (the owner's trigger sees the owner).
# 4. What the owner's code does ends with the refresh: with on_error =>
#    'record', an owner's trigger on the history that raises fails the
#    refresh, which is recorded (or, when the history refuses that row too,
#    said in the WARNING), and the superuser's batch goes on; a lock_timeout
#    the owner's code sets is her failure, the caller's own lock_timeout
#    stops the caller (55P03); session-level advisory locks the owner's code
#    takes are released when it ends (fitted, failed, raised, or a replace),
#    and a lock the caller holds keeps its own count.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PerpcaTest;

my $node = start_node('main', "max_connections = 40\n");
$node->safe_psql('postgres', obs_feed_sql(qw(a b c d)) . q{
CREATE TABLE gate (g int);
INSERT INTO gate VALUES (1);
});

# ---- 1. six sessions create one model ---------------------------------------
# Run SQL in six sessions at once, all held at a gate (a table that a
# seventh session locks) inside the clients query; then open the gate.
sub six_at_once
{
	my ($sql) = @_;
	my $gate = $node->background_psql('postgres');
	$gate->query_safe('BEGIN');
	$gate->query_safe('LOCK TABLE gate IN ACCESS EXCLUSIVE MODE');
	my @runs;
	for my $i (1 .. 6)
	{
		my ($out, $err) = ('', '');
		my $h = IPC::Run::start(
			[ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-v', 'VERBOSITY=verbose', '-d', $node->connstr('postgres'), '-c', $sql ],
			'>', \$out, '2>', \$err);
		push @runs, [ $h, \$out, \$err ];
	}
	# All six wait for a lock: the gate (the first one) or the model's lock.
	$node->poll_query_until('postgres',
		q{SELECT count(*) = 6 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%perpca_train%'})
	  or diag('not all six sessions were seen waiting');
	$gate->query_safe('COMMIT');
	$gate->quit;
	my @results;
	for my $r (@runs)
	{
		$r->[0]->finish;
		push @results, { rc => $r->[0]->result(0), out => ${ $r->[1] }, err => ${ $r->[2] } };
	}
	return @results;
}

my $train = q{SELECT model_name FROM perpca_train('six', 'SELECT client, perpca_stats(x) FROM public.feed_rows, public.gate GROUP BY client', 2, 1%s)};
my @first = six_at_once(sprintf($train, ''));
my @ok = grep { $_->{rc} == 0 } @first;
my @dup = grep { $_->{rc} != 0 && $_->{err} =~ /42P07: model "six" already exists/ } @first;
is(scalar(@ok), 1, 'six sessions create one new model: one succeeds');
is(scalar(@dup), 5, 'the five others fail with duplicate_table, after waiting')
  or diag(join("\n", map { $_->{err} } @first));
unlike(join('', map { $_->{err} } @first), qr/pg_type_typname_nsp_index|23505|XX000/,
	'no catalog error');

my @second = six_at_once(sprintf($train, ', replace => true'));
is(scalar(grep { $_->{rc} == 0 } @second), 6, 'with replace => true all six succeed in turn')
  or diag(join("\n", map { $_->{err} } @second));
is($node->safe_psql('postgres', q{SELECT n_clients, version > 1 FROM six_info}), '4|t',
	'the model is whole afterwards');

# ---- 2. refresh as the owner -------------------------------------------------
$node->safe_psql('postgres', q{
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
CREATE ROLE alice_friend LOGIN IN ROLE alice;
CREATE SCHEMA alice AUTHORIZATION alice;
GRANT USAGE ON SCHEMA alice TO bob;
GRANT SELECT ON feed_rows TO alice;
CREATE TABLE secret (s text);
INSERT INTO secret VALUES ('only the superuser may read this');
CREATE TABLE audit (who text, what text);
GRANT INSERT, SELECT ON audit TO PUBLIC;
});
# alice trains a model on a view of her own; she may read feed_rows.
$node->safe_psql('postgres', q{
SET ROLE alice;
CREATE TABLE alice.rows AS SELECT * FROM public.feed_rows;
SELECT model_name FROM perpca_train('alice.m', 'SELECT client, perpca_stats(x) FROM alice.rows GROUP BY client', 2, 1);
});
is($node->safe_psql('postgres', q{SELECT relowner::regrole FROM pg_class WHERE oid = 'alice.m_info'::regclass}),
	'alice', 'alice owns her model');

# She rewrites her model's query (its view <model>_source, hers) to call her
# function, which tries what she may not: read the secret, and reports who
# it runs as.
$node->safe_psql('postgres', q{
SET ROLE alice;
CREATE FUNCTION alice.probe(x float8[]) RETURNS float8[] LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.audit VALUES (current_user, 'ran');
    BEGIN
        PERFORM * FROM public.secret;
        INSERT INTO public.audit VALUES (current_user, 'read the secret');
    EXCEPTION WHEN insufficient_privilege THEN
        INSERT INTO public.audit VALUES (current_user, 'secret denied');
    END;
    BEGIN
        CREATE TEMPORARY TABLE hijack (x int);
        INSERT INTO public.audit VALUES (current_user, 'created a temporary table');
    EXCEPTION WHEN OTHERS THEN
        INSERT INTO public.audit VALUES (current_user, 'temporary table refused: ' || SQLSTATE);
    END;
    BEGIN
        SET ROLE alice;
        INSERT INTO public.audit VALUES (current_user, 'set role');
    EXCEPTION WHEN OTHERS THEN
        INSERT INTO public.audit VALUES (current_user, 'set role refused: ' || SQLSTATE);
    END;
    RETURN x;
END
$$;
CREATE OR REPLACE VIEW alice.m_source AS SELECT client, perpca_stats(alice.probe(x)) FROM alice.rows GROUP BY client;
});

my $superuser = $node->safe_psql('postgres', 'SELECT current_user');
my $su = $node->safe_psql('postgres', q{
SELECT clients, outcome IN ('fitted', 'unchanged') FROM perpca_refresh('alice.m');
SELECT current_user;
SELECT DISTINCT who, what FROM audit ORDER BY 1, 2;
SELECT relowner::regrole FROM pg_class WHERE oid = 'alice.m_info'::regclass;
});
my @su = split /\n/, $su;
is($su[0], '4|t', 'the superuser refreshed alice\'s model');
is($su[1], $superuser, 'and is still the superuser afterwards');
my $audit = join("\n", @su[ 2 .. $#su - 1 ]);
like($audit, qr/^alice\|ran$/m, 'the source query ran as alice, not as the superuser');
like($audit, qr/^alice\|secret denied$/m, 'it could not read what only the superuser may read');
unlike($audit, qr/read the secret|created a temporary table|\|set role$|^\Q$superuser\E\|/m,
	'nothing ran with the superuser\'s privileges');
like($audit, qr/^alice\|temporary table refused: 42501$/m,
	'no temporary object (security-restricted operation)');
like($audit, qr/^alice\|set role refused: 42501$/m, 'no SET ROLE (security-restricted operation)');
is($su[-1], 'alice', 'the model still belongs to alice');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname = 'hijack'}), '0',
	'no temporary table was left behind');

# The query was bound with the search_path of the train; what it calls runs
# with pg_catalog, pg_temp (as REFRESH MATERIALIZED VIEW since PostgreSQL 17):
# the caller's search_path does not reach it.
$node->safe_psql('postgres', q{
SET ROLE alice;
CREATE FUNCTION alice.path_probe() RETURNS text LANGUAGE sql AS $$ SELECT current_setting('search_path') $$;
});
$node->safe_psql('postgres', q{
SET ROLE alice;
CREATE OR REPLACE VIEW alice.m_source AS SELECT client, perpca_stats(x) FROM alice.rows, (SELECT alice.path_probe() AS p) s WHERE pg_catalog.length(s.p) > 0 AND pg_catalog.textregexeq(s.p, '^pg_catalog, pg_temp$') GROUP BY client;
});
is($node->safe_psql('postgres', q{
SET search_path = public, pg_temp;
SELECT clients FROM perpca_refresh('alice.m');
}), '4', 'the source query runs with search_path pg_catalog, pg_temp, not the caller\'s');

# A role that is not alice (nor a member of alice) may not refresh: 42501.
my ($rc, $out, $err) = $node->psql('postgres', q{
\set VERBOSITY verbose
SET ROLE bob;
SELECT * FROM perpca_refresh('alice.m');
});
isnt($rc, 0, 'bob cannot refresh alice\'s model');
like($err, qr/42501: must be owner of model "alice.m"/, 'he gets insufficient_privilege (42501)');

# A member of alice may, and the refresh still runs as alice.
$node->safe_psql('postgres', q{
SET ROLE alice;
CREATE OR REPLACE VIEW alice.m_source AS SELECT client, perpca_stats(alice.probe(x)) FROM alice.rows GROUP BY client;
});
$node->safe_psql('postgres', 'TRUNCATE audit');
is($node->safe_psql('postgres', q{
SET ROLE alice_friend;
SELECT clients FROM perpca_refresh('alice.m');
RESET ROLE;
SELECT DISTINCT who FROM audit;
}), "4\nalice", 'a member of the owning role refreshes, as the owner');

# The switch to the owner is C (run_as_owner.c) with no SQL form in 0.4.0; the
# writers check the caller before it, whatever calls them.
($rc, $out, $err) = $node->psql('postgres', q{
\set VERBOSITY verbose
SET ROLE bob;
SELECT * FROM perpca_refresh('alice.m', on_error => 'record');
});
like($err, qr/42501: must be owner of model "alice.m"/, 'a non-member cannot refresh, even recording failures (42501)');
is($node->safe_psql('postgres', q{SELECT to_regprocedure('perpca_internal.run_as(regrole, text, "any")') IS NULL}),
	't', 'no SQL form of the switch to the owner');

# ---- 3. replace and personalize of alice's model by the superuser ---------------
$node->safe_psql('postgres', q{
TRUNCATE audit;
SET ROLE alice;
CREATE FUNCTION alice.note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.audit VALUES (current_user, TG_OP || ' ' || TG_TABLE_NAME);
    RETURN NULL;
END
$$;
CREATE TRIGGER note AFTER INSERT ON alice.m_components FOR EACH STATEMENT EXECUTE FUNCTION alice.note();
});
$node->safe_psql('postgres', q{
SELECT model_name FROM perpca_train('alice.m', 'SELECT client, perpca_stats(x) FROM public.feed_rows GROUP BY client', 2, 1, replace => true);
SELECT count(*) FROM perpca_personalize('alice.m', 'z', (SELECT perpca_stats(x) FROM public.obs WHERE client = 'e'));
});
is($node->safe_psql('postgres', q{SELECT who, count(*) FROM audit GROUP BY 1}), 'alice|2',
	'the superuser\'s replace and personalize wrote alice\'s tables as alice (her trigger saw alice)');
($rc, $out, $err) = $node->psql('postgres', q{
\set VERBOSITY verbose
SET ROLE bob;
SELECT * FROM perpca_train('alice.m', 'SELECT client, perpca_stats(x) FROM public.feed_rows GROUP BY client', 2, 1, replace => true);
});
like($err, qr/42501: must be owner of model "alice.m"/, 'bob cannot replace it');

# A view in place of a model table is refused before anything runs.
$node->safe_psql('postgres', q{
SET ROLE alice;
ALTER TABLE alice.m_info RENAME TO m_info_real;
CREATE VIEW alice.m_info AS SELECT * FROM alice.m_info_real;
});
($rc, $out, $err) = $node->psql('postgres', q{
\set VERBOSITY verbose
SELECT * FROM perpca_refresh('alice.m');
});
like($err, qr/42809: model "alice.m" is not stored in plain tables/, 'a view as <model>_info is refused (42809)');

# ---- 4. what the owner's code does ends with the refresh -----------------------
# alice's model h reads her rows through her function gate(), which does what
# alice.switch says: take session-level advisory locks (4242 on every row,
# 4243 shared, and 4244, which the caller already holds once), then raise or
# not; or wait for a table with a lock_timeout of her own.  Her trigger on
# the model's history refuses fitted rows, or every row.
$node->safe_psql('postgres', q{
CREATE TABLE alice.switch (mode text);
INSERT INTO alice.switch VALUES ('ok');
CREATE TABLE alice.lockme (i int);
CREATE FUNCTION alice.gate() RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    m text := (SELECT s.mode FROM alice.switch s);
BEGIN
    IF m LIKE 'advisory%' THEN
        PERFORM pg_advisory_lock(4242);
        PERFORM pg_advisory_lock_shared(4243);
        PERFORM pg_advisory_lock(4244);
        IF m = 'advisory, raise' THEN
            RAISE EXCEPTION 'raised after locking';
        END IF;
    ELSIF m = 'own lock_timeout' THEN
        PERFORM set_config('lock_timeout', '100ms', true);
        PERFORM count(*) FROM alice.lockme;
    END IF;
    RETURN true;
END $$;
SELECT model_name FROM perpca_train('alice.h', 'SELECT client, perpca_stats(x) FROM alice.rows WHERE alice.gate() GROUP BY client', 1, 1);
CREATE FUNCTION alice.refuse() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    m text := (SELECT s.mode FROM alice.switch s);
BEGIN
    IF m = 'refuse all' OR (m = 'refuse fitted' AND NEW.outcome = 'fitted') THEN
        RAISE EXCEPTION 'the history refuses %', NEW.outcome;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER refuse BEFORE INSERT ON alice.h_history FOR EACH ROW EXECUTE FUNCTION alice.refuse();
}, extra_params => [ '-U', 'alice' ]);

sub switch_to
{
	my ($mode) = @_;
	$node->safe_psql('postgres', "UPDATE alice.switch SET mode = '$mode'", extra_params => [ '-U', 'alice' ]);
}
my $h_state = q{SELECT (SELECT version FROM alice.h_info) || ' ' || (SELECT count(*) FROM perpca_model_history('alice.h'))};
my $batch = q{
BEGIN;
SELECT outcome, warning FROM perpca_refresh('alice.h', warm => false, on_error => 'record');
SELECT outcome FROM perpca_refresh('six', warm => false, on_error => 'record');
COMMIT;
};

# A history that refuses the refresh's row fails the refresh, which is
# recorded, and the superuser's batch goes on.
switch_to('refuse fitted');
my $before = $node->safe_psql('postgres', $h_state);
($rc, $out, $err) = $node->psql('postgres', $batch);
is($rc, 0, 'a history trigger that raises does not stop the superuser\'s batch (on_error => record)') or diag($err);
is($out, "failed|failed: P0001: the history refuses fitted\nfitted",
	'the refresh fails with the trigger\'s error, and the next model refreshes');
like($err, qr/WARNING:  refresh of model "alice.h" failed: the history refuses fitted/, 'with a WARNING');
is($node->safe_psql('postgres', q{SELECT outcome, warning FROM perpca_model_history('alice.h') ORDER BY entry DESC LIMIT 1}),
	'failed|failed: P0001: the history refuses fitted', 'the failure is in the history');
my ($version, $entries) = split / /, $before;
is($node->safe_psql('postgres', $h_state), $version . ' ' . ($entries + 1), 'the model is unchanged, one row more in its history');

# A history that refuses every row: the outcome is returned and said in the WARNING.
switch_to('refuse all');
$before = $node->safe_psql('postgres', $h_state);
($rc, $out, $err) = $node->psql('postgres', $batch);
is($rc, 0, 'a history that cannot be written does not stop the batch either') or diag($err);
is($out, "failed|failed: P0001: the history refuses fitted\nfitted", 'the refresh\'s outcome is returned');
like($err, qr/WARNING:  refresh of model "alice.h" failed: the history refuses fitted\n.*its history could not be written either: the history refuses failed \(SQLSTATE P0001\)/s,
	'the WARNING says the history could not be written');
is($node->safe_psql('postgres', $h_state), $before, 'nothing changed');
($rc, $out, $err) = $node->psql('postgres', q{SELECT outcome FROM perpca_refresh('alice.h', warm => false)});
like($err, qr/ERROR:  the history refuses fitted/, 'without on_error => record, the trigger\'s error is the caller\'s');

# Lock timeouts: the owner's own is recorded; the caller's stops the caller.
my $bg = $node->background_psql('postgres');
$bg->query_safe('BEGIN');
$bg->query_safe('LOCK TABLE alice.lockme IN ACCESS EXCLUSIVE MODE');
switch_to('own lock_timeout');
$before = $node->safe_psql('postgres', $h_state);
is($node->safe_psql('postgres', q{SELECT outcome, warning FROM perpca_refresh('alice.h', warm => false, on_error => 'record')}),
	'failed|failed: 55P03: canceling statement due to lock timeout',
	'a lock_timeout set by the owner\'s code is recorded as the refresh\'s failure');
switch_to('ok');
$bg->query_safe('LOCK TABLE alice.rows IN ACCESS EXCLUSIVE MODE');
$before = $node->safe_psql('postgres', $h_state);
($rc, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\n" . q{
SET lock_timeout = '200ms';
SELECT outcome FROM perpca_refresh('alice.h', warm => false, on_error => 'record');
});
like($err, qr/ERROR:  55P03: canceling statement due to lock timeout/,
	'the caller\'s own lock_timeout stops the caller, even with on_error => record');
is($out, '', 'no row is returned');
is($node->safe_psql('postgres', $h_state), $before, 'and nothing is recorded for it');
$bg->query_safe('COMMIT');
$bg->quit;

# Session-level advisory locks taken by the owner's code end with the refresh,
# whether it fitted, failed and was recorded, or raised; the caller's own
# lock on 4244 stays, held once.
my $locks = q{SELECT coalesce(string_agg(objid || ' ' || mode, ', ' ORDER BY objid, mode), 'none') FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()};
switch_to('advisory');
is($node->safe_psql('postgres', qq{
SELECT pg_advisory_lock(4244);
SELECT outcome FROM perpca_refresh('alice.h', warm => false, on_error => 'record');
$locks;
SELECT pg_advisory_unlock(4244);
$locks;
}), "\nfitted\n4244 ExclusiveLock\nt\nnone", 'a refresh that fitted leaves none of the owner\'s advisory locks');
switch_to('advisory, raise');
is($node->safe_psql('postgres', qq{
SELECT pg_advisory_lock(4244);
SELECT outcome FROM perpca_refresh('alice.h', warm => false, on_error => 'record');
$locks;
SELECT pg_advisory_unlock(4244);
$locks;
}), "\nfailed\n4244 ExclusiveLock\nt\nnone", 'nor one that failed and was recorded');
($rc, $out, $err) = $node->psql('postgres', qq{
SELECT pg_advisory_lock(4244);
SELECT outcome FROM perpca_refresh('alice.h', warm => false);
$locks;
DO \$\$ BEGIN PERFORM perpca_refresh('alice.h', warm => false); EXCEPTION WHEN raise_exception THEN NULL; END \$\$;
$locks;
SELECT pg_advisory_unlock(4244);
$locks;
}, on_error_stop => 0);
like($err, qr/ERROR:  raised after locking/, 'the owner\'s error stops a refresh without on_error => record');
is($out, "\n4244 ExclusiveLock\n4244 ExclusiveLock\nt\nnone",
	'nor one that raised, in the caller\'s transaction or in a subtransaction of it');

# The same for a superuser's replace of alice's model, which runs her query
# as her: whether it succeeds, or fails and ends the caller's transaction.
my $replace = q{SELECT model_name FROM perpca_train('alice.h', 'SELECT client, perpca_stats(x) FROM alice.rows WHERE alice.gate() GROUP BY client', 1, 1, replace => true)};
($rc, $out, $err) = $node->psql('postgres', qq{
SELECT pg_advisory_lock(4244);
$replace;
$locks;
SELECT pg_advisory_unlock(4244);
$locks;
}, on_error_stop => 0);
like($err, qr/ERROR:  raised after locking/, 'the replace fails with the owner\'s error');
is($out, "\n4244 ExclusiveLock\nt\nnone", 'and leaves none of her advisory locks');
switch_to('advisory');
is($node->safe_psql('postgres', qq{
SELECT pg_advisory_lock(4244);
$replace;
$locks;
SELECT pg_advisory_unlock(4244);
$locks;
}), "\nh\n4244 ExclusiveLock\nt\nnone", 'nor does a replace that succeeds');

$node->stop;
done_testing();
