-- perpca 0.2.0 -> 0.3.0: what must change before the install parts run.
\echo Use "ALTER EXTENSION perpca UPDATE" to load this file. \quit
--
-- The upgrade script sql/perpca--0.2.0--0.3.0.sql is this file, then the
-- create-once parts that are new in 0.3.0 (Makefile: NEW_ONCE_0_3_0), then
-- every part of sql/create_or_replace/ (see sql/README).  So here goes only
-- what CREATE OR REPLACE cannot do: dropping objects that 0.3.0 no longer
-- has, or whose signature, argument names, defaults or result type change
-- (CREATE OR REPLACE refuses those), and ALTERs of objects created once.
-- onesource: options checked by C (perpca_internal.fit_options), no longer by a fit over no clients
DROP FUNCTION perpca_internal.check_fit_options(int, float8, float8, text, text, text, bigint, text, text, text, boolean, text, text, text);
-- onesource: the fit's divisors come back from perpca_internal.fit, not from session state
DROP FUNCTION perpca_internal.last_fit_scale_factors();
-- onesource: write path renamed and given options as one jsonb (perpca_internal.run_as, stage_*, model_store, model_create, model_refresh)
DROP FUNCTION perpca_internal.perpca_run_as_owner(regclass, regnamespace, text, "any");
DROP FUNCTION perpca_internal.perpca_model_refresh(text, text, boolean);
DROP FUNCTION perpca_internal.perpca_model_store(text, text, text, int, int, int, float8, float8, text, text, text, bigint, text, text, text, boolean, boolean, text, text, text);
DROP FUNCTION perpca_internal.perpca_stage_fill(text);
DROP FUNCTION perpca_internal.perpca_stage_create(regrole);
DROP FUNCTION perpca_internal.perpca_stage_start(text, regrole);
DROP FUNCTION perpca_internal.perpca_model_create(text, text);
-- onesource: names are resolved and models locked in C (model_write.c, model_lock.c)
DROP FUNCTION perpca_internal.perpca_model_tables_existing(text);
DROP FUNCTION perpca_internal.perpca_model_tables(text);
DROP FUNCTION perpca_internal.perpca_accept_invalidations();
-- perpca_choose_ranks moves to C (75_ranks.sql) and gains target_explained_ratio and a note column.
DROP FUNCTION perpca_choose_ranks(text, text, int[], int[], float8, float8, float8, int, float8, float8, text, text, text, bigint, text, text, boolean, text, text);
DROP FUNCTION perpca_internal.recommend_ranks(float8[], int[], float8[], int[], float8, float8, float8);
-- perpca_component_info gains top_features.
DROP FUNCTION perpca_component_info(text);

-- The row-wise model functions gain missing => 'error' | 'observed' (issue 25).
DROP FUNCTION IF EXISTS @extschema@.perpca_model_scores(text, text, float8[], text);
DROP FUNCTION IF EXISTS @extschema@.perpca_model_scores(text, anyelement, float8[], text);
DROP FUNCTION IF EXISTS @extschema@.perpca_model_global_part(text, text, float8[], text);
DROP FUNCTION IF EXISTS @extschema@.perpca_model_global_part(text, anyelement, float8[], text);
DROP FUNCTION IF EXISTS @extschema@.perpca_model_local_part(text, text, float8[], text);
DROP FUNCTION IF EXISTS @extschema@.perpca_model_local_part(text, anyelement, float8[], text);
DROP FUNCTION IF EXISTS @extschema@.perpca_model_reconstruct(text, text, float8[], text);
DROP FUNCTION IF EXISTS @extschema@.perpca_model_reconstruct(text, anyelement, float8[], text);
DROP FUNCTION IF EXISTS @extschema@.perpca_model_residual(text, text, float8[], text);
DROP FUNCTION IF EXISTS @extschema@.perpca_model_residual(text, anyelement, float8[], text);
DROP FUNCTION IF EXISTS @extschema@.perpca_model_error(text, text, float8[], text);
DROP FUNCTION IF EXISTS @extschema@.perpca_model_error(text, anyelement, float8[], text);
-- perpca_last_fit gains the column rows_skipped (issue 25).
DROP FUNCTION @extschema@.perpca_last_fit();
-- onesource: internal names without the perpca_ prefix; helpers with no caller left dropped
DROP FUNCTION perpca_internal.perpca_model_owner(text, text);
DROP FUNCTION perpca_internal.perpca_model_check_owner(text, regrole);
DROP FUNCTION perpca_internal.perpca_model_fill_clients(text, text, text, text, float8[], text, text, perpca_stats, float8[]);
DROP FUNCTION perpca_internal.perpca_model_scale_factors(text);
DROP FUNCTION perpca_internal.perpca_model_name_rule();
-- onesource: perpca_train gains feature_names (issue 27)
DROP FUNCTION perpca_train(text, text, int, int, int, float8, float8, text, text, text, bigint, text, text, text, boolean, boolean, boolean, text, text, text);

-- perpca_last_fit_rounds gains the columns products and inner_iterations.
DROP FUNCTION perpca_last_fit_rounds();

-- perpca_fit gains the option hops.
DROP FUNCTION perpca_fit(text, int, int, int, float8, float8, text, text, text, bigint, text, text, text, boolean, boolean, text, text, text);

-- trust: 0.2.0's PL/pgSQL model lock has no caller left (models are locked by perpca_internal.model_lock, C)
DROP FUNCTION perpca_internal.perpca_model_lock(text, text, text, boolean);

-- perpca_fit_federated gains the option hops (perpca_train and perpca_choose_ranks gain it too; their 0.2.0 signatures are dropped above).
DROP FUNCTION perpca_fit_federated(text[], text, int, int, int, float8, float8, text, text, text, text, text, boolean, boolean, text, bigint, text);
-- perpca_refresh gains on_error and returns the row it appends to the model's history (issue 27).
DROP FUNCTION perpca_refresh(text, boolean, boolean);
