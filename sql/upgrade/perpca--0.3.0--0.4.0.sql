-- perpca 0.3.0 -> 0.4.0: what must change before the install parts run.
\echo Use "ALTER EXTENSION perpca UPDATE" to load this file. \quit
--
-- The upgrade script sql/perpca--0.3.0--0.4.0.sql is this file, then the
-- create-once parts that are new in 0.4.0 (Makefile: NEW_ONCE_0_4_0), then
-- every part of sql/create_or_replace/ (see sql/README).  So here goes only
-- what CREATE OR REPLACE cannot do: dropping objects that 0.4.0 no longer
-- has, or whose signature, argument names, defaults or result type change
-- (CREATE OR REPLACE refuses those), and ALTERs of objects created once.
-- Each entry names the issue that needs it.

-- Issue 34: the shards return their sums exact (the layers of an expansion,
-- sums = weight, objective, gradient_v), and shard_basis the clients'
-- blocks with their keys; the result types change.
DROP FUNCTION IF EXISTS perpca_internal.shard_basis(text, boolean, boolean);
DROP FUNCTION IF EXISTS perpca_internal.shard_round(text, float8[], float8, text, text, boolean);
DROP FUNCTION IF EXISTS perpca_internal.shard_evaluate(text, float8[], float8);
DROP FUNCTION IF EXISTS perpca_internal.shard_finish(text, float8[], boolean);
-- Issue 34: perpca_last_fit gains stopped, perpca_last_fit_starts basin and ended
-- (issue 38: and perpca_last_fit sketch_bound).
DROP FUNCTION IF EXISTS perpca_last_fit();
DROP FUNCTION IF EXISTS perpca_last_fit_starts();

-- Issue 36: a model's query is bound once, in the view <model>_source;
-- stage_fill reads that view, its arguments renamed (query, search_path ->
-- schema_name, base).
DROP FUNCTION perpca_internal.stage_fill(text, text);
-- Issue 36: query_shape is no longer called (stage_fill reads the view).
DROP FUNCTION perpca_internal.query_shape(text, text);
-- Issue 36: one write module in C (src/model_store.c): the PL/pgSQL of the
-- write path, and the internal functions only it called, are gone.
DROP FUNCTION perpca_internal.train(text, text, text, text, jsonb, boolean, text, text[]);
DROP FUNCTION perpca_internal.refresh(text, text, text, boolean, text);
DROP FUNCTION perpca_internal.model_refresh(text, text, boolean);
DROP FUNCTION perpca_internal.model_store(text, text, text, jsonb, text, text[]);
DROP FUNCTION perpca_internal.model_fill_clients(text, text, text, text, float8[], text, text, @extschema@.perpca_stats, float8[]);
DROP FUNCTION perpca_internal.model_personalize(text, text, text, @extschema@.perpca_stats, int, float8[]);
DROP FUNCTION perpca_internal.model_create(text, text);
DROP FUNCTION perpca_internal.history_create(text, text);
DROP FUNCTION perpca_internal.history_append(text, text, jsonb);
DROP FUNCTION perpca_internal.model_owner(text, text);
DROP FUNCTION perpca_internal.model_check_owner(text, regrole);
DROP FUNCTION perpca_internal.stage_create(regrole);
DROP FUNCTION perpca_internal.stage_start(text, regrole, text);
DROP FUNCTION perpca_internal.stage_digest(jsonb, text[]);
DROP FUNCTION perpca_internal.run_as(regrole, text, "any");

-- issue 35 (one row contract): missing => on the readers of rows; the
-- evaluation reports the rows it skipped; the stage reads rows of any form.
DROP FUNCTION perpca_fit(text, int, int, int, float8, float8, text, text, text, bigint, text, text, text, boolean, boolean, text, text, text, int);
DROP FUNCTION perpca_train(text, text, int, int, int, float8, float8, text, text, text, bigint, text, text, text, boolean, boolean, boolean, text, text, text, text[], int);
DROP FUNCTION perpca_choose_ranks(text, text, int[], int[], float8, float8, float8, int, float8, float8, text, text, text, bigint, text, text, boolean, text, text, float8, int);
DROP FUNCTION perpca_evaluate(text, text);
DROP FUNCTION perpca_evaluate_summary(text, text);
DROP FUNCTION perpca_evaluate_imputation(text, text, float8, bigint);
DROP FUNCTION perpca_fit_federated(text[], text, int, int, int, float8, float8, text, text, text, text, text, boolean, boolean, text, bigint, text, int);
DROP FUNCTION perpca_internal.shard_open(text, text, int, int, text, bigint);
DROP FUNCTION perpca_last_federated_fit();
-- perpca_model_monitor takes missing => as the other row functions do.
DROP FUNCTION perpca_model_monitor(text, text, float8[], float8);
DROP FUNCTION perpca_model_monitor(text, anyelement, float8[], float8);

-- Issue 38: the history row gains sketch_bound (the bound a fit on sketched
-- statistics states for its objective): perpca_model_history and
-- perpca_refresh, which returns the row it appends, change their result type.
DROP FUNCTION perpca_model_history(text);
DROP FUNCTION perpca_refresh(text, boolean, boolean, text);
