/*
 * error_kinds.h -- the SQLSTATE of each kind of error perpca raises, in one
 * place
 *
 * Each kind has one code, chosen as PostgreSQL itself chooses for the same
 * kind of error (a length that does not match is 2202E, as in array_cat,
 * jsonb_object and hstore; a missing table is 42P01).  Raise an error of
 * one of these kinds with errcode(PERPCA_ERRCODE_...), not with the
 * ERRCODE_ name.  The README's error table (Reference, Errors) lists the
 * same kinds with the same codes: test/t/090_reference.pl checks it against
 * this file, kind by kind, and the code of each condition name against the
 * server.  Each kind is a comment "SQLSTATE condition_name: what the README
 * says" (one line) and the macro under it.
 */
#ifndef PERPCA_ERROR_KINDS_H
#define PERPCA_ERROR_KINDS_H

#include "utils/errcodes.h"

/* 22004 null_value_not_allowed: a NULL element of a row or matrix, a NULL argument that needs a value */
#define PERPCA_ERRCODE_NULL ERRCODE_NULL_VALUE_NOT_ALLOWED
/* 2202E array_subscript_error: an array that is not one-dimensional (rows) or two-dimensional (components) */
#define PERPCA_ERRCODE_ARRAY_SHAPE ERRCODE_ARRAY_SUBSCRIPT_ERROR
/* 2202E array_subscript_error: a dimension mismatch: a row, statistics, components or a client of another dimension than expected */
#define PERPCA_ERRCODE_DIMENSION ERRCODE_ARRAY_SUBSCRIPT_ERROR
/* 22000 data_exception: a NaN or infinite value, an empty row, statistics of no rows where rows are needed, an invalid perpca_stats value */
#define PERPCA_ERRCODE_BAD_VALUE ERRCODE_DATA_EXCEPTION
/* 54000 program_limit_exceeded: d above 4096 */
#define PERPCA_ERRCODE_DIM_LIMIT ERRCODE_PROGRAM_LIMIT_EXCEEDED
/* 22P02 invalid_text_representation: malformed perpca_stats text */
#define PERPCA_ERRCODE_STATS_TEXT ERRCODE_INVALID_TEXT_REPRESENTATION
/* 22023 invalid_parameter_value: a bad option (the message names the option and its valid values) */
#define PERPCA_ERRCODE_OPTION ERRCODE_INVALID_PARAMETER_VALUE
/* 42602 invalid_name: an improper model name */
#define PERPCA_ERRCODE_MODEL_NAME ERRCODE_INVALID_NAME
/* 42622 name_too_long: a model name too long */
#define PERPCA_ERRCODE_MODEL_NAME_LONG ERRCODE_NAME_TOO_LONG
/* 42P07 duplicate_table: a model that exists (perpca_train without replace) */
#define PERPCA_ERRCODE_MODEL_EXISTS ERRCODE_DUPLICATE_TABLE
/* 42704 undefined_object: a model that does not exist, an unknown client with unknown => 'error' */
#define PERPCA_ERRCODE_UNDEFINED ERRCODE_UNDEFINED_OBJECT
/* 42P01 undefined_table: a model missing one of its tables */
#define PERPCA_ERRCODE_MODEL_INCOMPLETE ERRCODE_UNDEFINED_TABLE
/* XX001 data_corrupted: a model whose tables contradict each other (edited other than by perpca) */
#define PERPCA_ERRCODE_MODEL_DAMAGED ERRCODE_DATA_CORRUPTED
/* 42501 insufficient_privilege: not the model's owner, or no SELECT on its tables */
#define PERPCA_ERRCODE_NOT_OWNER ERRCODE_INSUFFICIENT_PRIVILEGE
/* 55P03 lock_not_available: a model being refreshed or changed by another transaction */
#define PERPCA_ERRCODE_MODEL_BUSY ERRCODE_LOCK_NOT_AVAILABLE
/* 0A000 feature_not_supported: a query text that is not exactly one SELECT */
#define PERPCA_ERRCODE_NOT_ONE_SELECT ERRCODE_FEATURE_NOT_SUPPORTED

#endif							/* PERPCA_ERROR_KINDS_H */
