--
-- Safe under any search_path: a hostile schema first in search_path (and a
-- role's operator last in it) shadows functions and operators that perpca's
-- SQL uses; every perpca entry point must behave as under a plain path, and
-- no hostile object may run.  Each hostile object raises "hijacked".
-- Other areas add their entry points to the "calls" section.
--
CREATE SCHEMA sp_data;
CREATE TABLE sp_data.obs (client text, obs int, x float8[]);
\copy sp_data.obs from 'test/data/project_obs.csv' csv header
CREATE TABLE sp_data.ikeys AS
SELECT ascii(client) AS client, obs, x FROM sp_data.obs;

CREATE SCHEMA hostile;
CREATE FUNCTION hostile.trap_tt(a text, b text) RETURNS boolean LANGUAGE plpgsql AS
$$ BEGIN RAISE EXCEPTION 'hijacked: a text comparison'; END $$;
CREATE FUNCTION hostile.trap_ii(a int, b int) RETURNS boolean LANGUAGE plpgsql AS
$$ BEGIN RAISE EXCEPTION 'hijacked: an int comparison'; END $$;
CREATE FUNCTION hostile.trap_oo(a oid, b oid) RETURNS boolean LANGUAGE plpgsql AS
$$ BEGIN RAISE EXCEPTION 'hijacked: an oid comparison'; END $$;
CREATE FUNCTION hostile.trap_t(a text, b text) RETURNS text LANGUAGE plpgsql AS
$$ BEGIN RAISE EXCEPTION 'hijacked: text function'; END $$;
CREATE FUNCTION hostile.trap_mul(a bigint, b float8) RETURNS float8 LANGUAGE plpgsql AS
$$ BEGIN RAISE EXCEPTION 'hijacked: *(bigint, float8)'; END $$;
CREATE FUNCTION hostile.trap_f(a float8, b float8) RETURNS float8 LANGUAGE plpgsql AS
$$ BEGIN RAISE EXCEPTION 'hijacked: float8 arithmetic'; END $$;
CREATE FUNCTION hostile.trap_j(a jsonb, b text) RETURNS text LANGUAGE plpgsql AS
$$ BEGIN RAISE EXCEPTION 'hijacked: ->>'; END $$;
CREATE OPERATOR hostile.= (LEFTARG = text, RIGHTARG = text, FUNCTION = hostile.trap_tt);
CREATE OPERATOR hostile.<> (LEFTARG = text, RIGHTARG = text, FUNCTION = hostile.trap_tt);
CREATE OPERATOR hostile.= (LEFTARG = int, RIGHTARG = int, FUNCTION = hostile.trap_ii);
CREATE OPERATOR hostile.> (LEFTARG = int, RIGHTARG = int, FUNCTION = hostile.trap_ii);
CREATE OPERATOR hostile.= (LEFTARG = oid, RIGHTARG = oid, FUNCTION = hostile.trap_oo);
CREATE OPERATOR hostile.|| (LEFTARG = text, RIGHTARG = text, FUNCTION = hostile.trap_t);
CREATE OPERATOR hostile.* (LEFTARG = bigint, RIGHTARG = float8, FUNCTION = hostile.trap_mul);
CREATE OPERATOR hostile./ (LEFTARG = float8, RIGHTARG = float8, FUNCTION = hostile.trap_f);
CREATE OPERATOR hostile.- (LEFTARG = float8, RIGHTARG = float8, FUNCTION = hostile.trap_f);
CREATE OPERATOR hostile.->> (LEFTARG = jsonb, RIGHTARG = text, FUNCTION = hostile.trap_j);
CREATE FUNCTION hostile.format(text, text) RETURNS text LANGUAGE sql AS $$ SELECT hostile.trap_t($1, $2) $$;
CREATE FUNCTION hostile.format(text, text, text) RETURNS text LANGUAGE sql AS $$ SELECT hostile.trap_t($1, $2) $$;
CREATE FUNCTION hostile.quote_ident(text) RETURNS text LANGUAGE sql AS $$ SELECT hostile.trap_t($1, $1) $$;
CREATE FUNCTION hostile.concat(text, text) RETURNS text LANGUAGE sql AS $$ SELECT hostile.trap_t($1, $2) $$;
CREATE FUNCTION hostile.perpca_fit(query text, n_global int, n_local int)
RETURNS TABLE (client text, kind text, component int, pc float8[], variance float8)
LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'hijacked: perpca_fit'; END $$;

-- The traps are armed.
SET search_path = hostile, pg_catalog, public;
SELECT 'a'::text = 'a'::text;
SELECT format('%s', 'x');
SELECT 2 > 1;
SELECT 1::bigint * 2::float8;
SET search_path = public, hostile;
SELECT 1::bigint * 2::float8;
RESET search_path;

-- ---- calls: models (40_models.sql, 50_refresh.sql) ------------------------
-- Reference figures under a plain search_path.
SELECT model_name, n_clients FROM perpca_train('sp_data.plain',
    'SELECT client, perpca_stats(x) FROM sp_data.obs WHERE client OPERATOR(pg_catalog.<>) ''new'' GROUP BY client',
    2, 1, weights => 'samples');

-- The same under a hostile schema first, then with the role's *(bigint, float8) last.
SET search_path = hostile, pg_catalog, public;
SELECT model_name, n_clients FROM perpca_train('sp_data.first',
    'SELECT client, perpca_stats(x) FROM sp_data.obs WHERE client OPERATOR(pg_catalog.<>) ''new'' GROUP BY client',
    2, 1, weights => 'samples');
SELECT outcome, clients, clients_added, warm_start FROM perpca_refresh('sp_data.first');
SELECT model_name, n_clients FROM perpca_train('sp_data.first',
    'SELECT client, perpca_stats(x) FROM sp_data.obs WHERE client OPERATOR(pg_catalog.<>) ''new'' GROUP BY client',
    2, 1, weights => 'samples', replace => true);
SELECT pg_catalog.count(*) AS personalized FROM perpca_personalize('sp_data.first', 'new',
    (SELECT perpca_stats(x) FROM sp_data.obs WHERE client OPERATOR(pg_catalog.=) 'new'));
SELECT model_name, n_clients FROM perpca_train('sp_data.ints',
    'SELECT client, perpca_stats(x) FROM sp_data.ikeys WHERE client OPERATOR(pg_catalog.<>) 110 GROUP BY client',
    2, 1);
SELECT pg_catalog.count(*) AS personalized FROM perpca_personalize('sp_data.ints', 110,
    (SELECT perpca_stats(x) FROM sp_data.ikeys WHERE client OPERATOR(pg_catalog.=) 110));
SELECT perpca_drop('sp_data.ints');
SELECT perpca_drop('sp_data.none', if_exists => true);

SET search_path = public, hostile;
SELECT model_name, n_clients FROM perpca_train('sp_data.last',
    'SELECT client, perpca_stats(x) FROM sp_data.obs WHERE client <> ''new'' GROUP BY client',
    2, 1, weights => 'samples');
SELECT outcome, clients FROM perpca_refresh('sp_data.last');
RESET search_path;

-- ---- calls: results (46_results.sql, 75_ranks.sql) ------------------------
SET client_min_messages = warning;
SET search_path = hostile, pg_catalog, public;
SELECT pg_catalog.count(*) AS loadings FROM perpca_loadings('sp_data.first');
SELECT pg_catalog.count(*) AS variances FROM perpca_component_variance('sp_data.first');
SELECT pg_catalog.count(m.out_of_control) AS monitored
  FROM sp_data.obs o, perpca_model_monitor('sp_data.first', o.client, o.x) m;
SELECT pg_catalog.count(*) AS clustered FROM perpca_clusters('sp_data.first', 2);
SELECT pg_catalog.count(*) AS pairs FROM perpca_choose_ranks('SELECT client, x, obs FROM sp_data.obs', NULL, '{1,2}', '{0,1}');
SET search_path = public, hostile;
SELECT pg_catalog.count(*) AS loadings FROM perpca_loadings('sp_data.first');
SELECT pg_catalog.count(*) AS variances FROM perpca_component_variance('sp_data.first');
SELECT pg_catalog.count(m.out_of_control) AS monitored
  FROM sp_data.obs o, perpca_model_monitor('sp_data.first', o.client, o.x) m;
SELECT pg_catalog.count(*) AS clustered FROM perpca_clusters('sp_data.first', 2);
SELECT pg_catalog.count(*) AS pairs FROM perpca_choose_ranks('SELECT client, x, obs FROM sp_data.obs', NULL, '{1,2}', '{0,1}');
RESET search_path;
RESET client_min_messages;

-- The models equal the one trained under a plain search_path.
SELECT i.model, i.n_clients, i.weights, abs(i.objective - p.objective) < 1e-9 * abs(p.objective) AS objective,
       abs(i.total_variance - p.total_variance) < 1e-9 * p.total_variance AS total_variance
  FROM (SELECT * FROM sp_data.first_info UNION ALL SELECT * FROM sp_data.last_info) i,
       sp_data.plain_info p
 ORDER BY 1;
SELECT client, source FROM sp_data.first_clients WHERE client = 'new';

SET client_min_messages = warning;
DROP SCHEMA sp_data CASCADE;
DROP SCHEMA hostile CASCADE;
RESET client_min_messages;
