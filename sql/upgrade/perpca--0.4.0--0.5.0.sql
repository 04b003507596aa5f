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

-- perpca_train takes calibration (a share of rows held out to calibrate the
-- control limits): a new argument.
DROP FUNCTION perpca_train(text, text, int, int, int, float8, float8, text, text, text, bigint, text, text, text,
                           boolean, boolean, boolean, text, text, text, text[], int, text);
-- perpca_model_monitor takes limits ('gaussian' or 'calibrated'): a new argument.
DROP FUNCTION perpca_model_monitor(text, text, float8[], float8, text);
DROP FUNCTION perpca_model_monitor(text, anyelement, float8[], float8, text);
