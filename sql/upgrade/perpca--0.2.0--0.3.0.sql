-- perpca 0.2.0 -> 0.3.0: what must change before the install parts run.
\echo Use "ALTER EXTENSION perpca UPDATE" to load this file. \quit
--
-- The upgrade script sql/perpca--0.2.0--0.3.0.sql is this file, then the
-- create-once parts that are new in 0.3.0 (Makefile: NEW_ONCE_0_3_0), then
-- every part of sql/create_or_replace/ (see sql/README).  So here goes only
-- what CREATE OR REPLACE cannot do: dropping objects that 0.3.0 no longer
-- has, or whose signature, argument names, defaults or result type change
-- (CREATE OR REPLACE refuses those), and ALTERs of objects created once.

-- perpca_last_fit_rounds gains the columns products and inner_iterations.
DROP FUNCTION perpca_last_fit_rounds();

-- perpca_fit gains the option hops.
DROP FUNCTION perpca_fit(text, int, int, int, float8, float8, text, text, text, bigint, text, text, text, boolean, boolean, text, text, text);
