-- perpca 0.4.0 -> 0.5.0: what must change before the install parts run.
\echo Use "ALTER EXTENSION perpca UPDATE" to load this file. \quit
--
-- The upgrade script sql/perpca--0.4.0--0.5.0.sql is this file, then the
-- guard (sql/upgrade/guard.sql), then the create-once parts that are new in
-- 0.5.0 (Makefile: NEW_ONCE_0_5_0), then every part of sql/create_or_replace/
-- (see sql/README).  So here goes only what CREATE OR REPLACE cannot do:
-- dropping objects that 0.5.0 no longer has, or whose signature, argument
-- names, defaults or result type change (CREATE OR REPLACE refuses those),
-- and ALTERs of objects created once.  Each entry says what changed.

-- The functions that take the fit options: dropped when their arguments
-- differ from 0.4.0's (an option added to src/fit_options.c's table; make
-- writes each line, sql/options.awk).
@DROP_IF_CHANGED(fit)@
@DROP_IF_CHANGED(train)@
@DROP_IF_CHANGED(federated)@
@DROP_IF_CHANGED(ranks)@
-- perpca_model_monitor takes limits ('gaussian' or 'calibrated'): a new argument.
DROP FUNCTION perpca_model_monitor(text, text, float8[], float8, text);
DROP FUNCTION perpca_model_monitor(text, anyelement, float8[], float8, text);
-- perpca_internal.fit: the write path calls the fit in C; its row type goes with it.
DROP FUNCTION perpca_internal.fit(text, jsonb);
DROP TYPE perpca_internal.perpca_fit_row;
-- The write path computes the clients' control statistics in C (monitor.c): no SQL entry.
DROP FUNCTION perpca_internal.client_monitor_stats(perpca_stats, float8[], float8[]);
-- Internal functions no path reaches any more (C calls their code directly;
-- the library keeps their symbols for the scripts of 0.2.0 and older).
DROP FUNCTION perpca_internal.evaluate_stats(text, perpca_stats, float8[], float8[], float8[]);
DROP FUNCTION perpca_internal.query_columns(text);
DROP FUNCTION perpca_internal.stats_query(text, text);
