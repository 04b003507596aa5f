/*
 * error_kinds.h -- the SQLSTATE of each kind of error perpca raises, in one
 * place
 *
 * Each kind has one code, chosen as PostgreSQL itself chooses for the same
 * kind of error (a length that does not match is 2202E, as in array_cat,
 * jsonb_object and hstore; a missing table is 42P01).  Raise an error of
 * one of these kinds with errcode(PERPCA_ERRCODE_...), not with the
 * ERRCODE_ name (test/t/091_file_map.pl fails on a raw ERRCODE_ name in a
 * .c file of src).  The README's error table (Reference, Errors) lists the
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
/* 54000 program_limit_exceeded: d above 16000, or above 4096 for exact statistics and paths that form a d x d matrix */
#define PERPCA_ERRCODE_DIM_LIMIT ERRCODE_PROGRAM_LIMIT_EXCEEDED
/* 54000 program_limit_exceeded: more clients than perpca_clusters takes */
#define PERPCA_ERRCODE_CLIENT_LIMIT ERRCODE_PROGRAM_LIMIT_EXCEEDED
/* 22P02 invalid_text_representation: malformed perpca_stats text */
#define PERPCA_ERRCODE_STATS_TEXT ERRCODE_INVALID_TEXT_REPRESENTATION
/* 22023 invalid_parameter_value: a bad option (the message names the option and its valid values) */
#define PERPCA_ERRCODE_OPTION ERRCODE_INVALID_PARAMETER_VALUE
/* 22023 invalid_parameter_value: a bad argument: a value out of its range, a query that is not one statement returning rows */
#define PERPCA_ERRCODE_ARGUMENT ERRCODE_INVALID_PARAMETER_VALUE
/* 42602 invalid_name: an improper model name */
#define PERPCA_ERRCODE_MODEL_NAME ERRCODE_INVALID_NAME
/* 42622 name_too_long: a model name too long */
#define PERPCA_ERRCODE_MODEL_NAME_LONG ERRCODE_NAME_TOO_LONG
/* 42P07 duplicate_table: a model that exists (perpca_train without replace), a relation in the way of a model's source view */
#define PERPCA_ERRCODE_MODEL_EXISTS ERRCODE_DUPLICATE_TABLE
/* 42704 undefined_object: a model that does not exist, an unknown client with unknown => 'error', a federated fit not open in the session, a shard without perpca */
#define PERPCA_ERRCODE_UNDEFINED ERRCODE_UNDEFINED_OBJECT
/* 42P01 undefined_table: a model missing one of its tables or its source view */
#define PERPCA_ERRCODE_MODEL_INCOMPLETE ERRCODE_UNDEFINED_TABLE
/* XX001 data_corrupted: a model whose tables contradict each other (edited other than by perpca) */
#define PERPCA_ERRCODE_MODEL_DAMAGED ERRCODE_DATA_CORRUPTED
/* XX001 data_corrupted: a stored vector value that is not valid */
#define PERPCA_ERRCODE_VECTOR_CORRUPTED ERRCODE_DATA_CORRUPTED
/* XX001 data_corrupted: a stored perpca_stats value whose size does not match its header (dimension, rows, form) */
#define PERPCA_ERRCODE_STATS_CORRUPTED ERRCODE_DATA_CORRUPTED
/* 42501 insufficient_privilege: not the model's owner (or a member of its role), no SELECT on its tables, no right to create its source view */
#define PERPCA_ERRCODE_NOT_OWNER ERRCODE_INSUFFICIENT_PRIVILEGE
/* 55P03 lock_not_available: a model being refreshed or changed by another transaction */
#define PERPCA_ERRCODE_MODEL_BUSY ERRCODE_LOCK_NOT_AVAILABLE
/* 0A000 feature_not_supported: a query text that is not exactly one SELECT */
#define PERPCA_ERRCODE_NOT_ONE_SELECT ERRCODE_FEATURE_NOT_SUPPORTED
/* 0A000 feature_not_supported: what perpca does not do: a perpca_stats format of another version, a distributed model without a local copy, an option a function does not take, an aggregate support function called directly */
#define PERPCA_ERRCODE_UNSUPPORTED ERRCODE_FEATURE_NOT_SUPPORTED
/* 42804 datatype_mismatch: a value or query column of the wrong type, a client key whose type cannot match the model's */
#define PERPCA_ERRCODE_WRONG_TYPE ERRCODE_DATATYPE_MISMATCH
/* 42P18 indeterminate_datatype: a client key whose type cannot be determined */
#define PERPCA_ERRCODE_UNKNOWN_TYPE ERRCODE_INDETERMINATE_DATATYPE
/* 22003 numeric_value_out_of_range: a row count or values too large for perpca_stats, statistics too large or too small in magnitude for the fit, a value out of range for vector */
#define PERPCA_ERRCODE_OUT_OF_RANGE ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE
/* 21000 cardinality_violation: a client that appears twice in a query or on two shards */
#define PERPCA_ERRCODE_DUPLICATE_CLIENT ERRCODE_CARDINALITY_VIOLATION
/* 42809 wrong_object_type: a model table that is not a plain table of the model's owner, a relation in place of its source view */
#define PERPCA_ERRCODE_WRONG_OBJECT ERRCODE_WRONG_OBJECT_TYPE
/* 42703 undefined_column: a model table missing one of its columns */
#define PERPCA_ERRCODE_MODEL_COLUMN ERRCODE_UNDEFINED_COLUMN
/* 3F000 invalid_schema_name: a schema that does not exist */
#define PERPCA_ERRCODE_NO_SCHEMA ERRCODE_INVALID_SCHEMA_NAME
/* 42883 undefined_function: rows of a pgvector type without the companion extension that reads them */
#define PERPCA_ERRCODE_NEEDS_EXTENSION ERRCODE_UNDEFINED_FUNCTION
/* 25006 read_only_sql_transaction: a change to a model during recovery */
#define PERPCA_ERRCODE_READ_ONLY ERRCODE_READ_ONLY_SQL_TRANSACTION
/* 55000 object_not_in_prerequisite_state: a federated fit step out of order, a model without the statistics a function needs */
#define PERPCA_ERRCODE_NOT_READY ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE
/* 42710 duplicate_object: a federated fit already open in the session */
#define PERPCA_ERRCODE_FIT_OPEN ERRCODE_DUPLICATE_OBJECT
/* 08001 sqlclient_unable_to_establish_sqlconnection: a shard that cannot be reached, an invalid connection string */
#define PERPCA_ERRCODE_SHARD_CONNECT ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION
/* 08006 connection_failure: a shard's error that carries no SQLSTATE */
#define PERPCA_ERRCODE_SHARD_LOST ERRCODE_CONNECTION_FAILURE
/* 2F003 prohibited_sql_statement_attempted: a shard connection without a password, by a role that is not superuser */
#define PERPCA_ERRCODE_SHARD_PASSWORD ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED
/* 08P01 protocol_violation: a shard that answers other than perpca does (wrong columns, shapes, NULLs) */
#define PERPCA_ERRCODE_SHARD_PROTOCOL ERRCODE_PROTOCOL_VIOLATION
/* 53200 out_of_memory: out of memory (a shard connection that could not be allocated) */
#define PERPCA_ERRCODE_OUT_OF_MEMORY ERRCODE_OUT_OF_MEMORY
/* XX000 internal_error: a computation that fails on the data (a posterior that is not definite) */
#define PERPCA_ERRCODE_INTERNAL ERRCODE_INTERNAL_ERROR

#endif							/* PERPCA_ERROR_KINDS_H */
