/*
 * row_reader.h -- the one reader of the rows a user's query returns, and the
 * one option that governs their gaps, missing => 'error' | 'skip' |
 * 'observed' (row_reader.c)
 *
 * Every function that reads a query of rows or statistics calls this
 * reader: it plans the query (without running it), tells its form --
 * statistics (client, perpca_stats[, n_local]), a numeric array (client, x
 * smallint[] .. numeric[]), pgvector's vector or halfvec (client, v) where
 * perpca_vector is installed, or feature columns (client, c1, c2, ...) of
 * numeric types -- and wraps rows into one perpca_stats per client under
 * the missing mode.  Skipped rows and groups that contribute nothing are
 * reported the same way everywhere (one NOTICE per statement).
 */
#ifndef PERPCA_ROW_READER_H
#define PERPCA_ROW_READER_H

#include "postgres.h"

#include "fmgr.h"

#include "pg_compat.h"

/* What a row with a NULL, NaN or infinite element does. */
typedef enum PerpcaMissing
{
	PERPCA_MISSING_ERROR,		/* it is an error that names the element */
	PERPCA_MISSING_SKIP,		/* it is left out and counted */
	PERPCA_MISSING_OBSERVED		/* it is read on its observed coordinates */
} PerpcaMissing;

extern const char *const perpca_missing_names[3];

/* The value of a missing option (22023 listing the three otherwise). */
extern PerpcaMissing row_missing_parse(const char *value);

/* The missing argument argno of a call; dflt when the call has none or it is NULL. */
extern PerpcaMissing row_missing_arg(FunctionCallInfo fcinfo, int argno, PerpcaMissing dflt);

/*
 * A mode a function cannot do, refused at once (0A000): what names the
 * function, why says what it reads, hint what to do instead.
 */
extern pg_noreturn void row_missing_refuse(PerpcaMissing mode, const char *func, const char *why,
										   const char *hint);

/* The forms of a query's result. */
typedef enum RowForm
{
	ROW_FORM_STATS,				/* (client, perpca_stats[, integer]) */
	ROW_FORM_ARRAY,				/* (client, x numeric array[, ...]) */
	ROW_FORM_VECTOR,			/* (client, vector or halfvec[, ...]) */
	ROW_FORM_COLUMNS			/* (client, c1, c2, ...) of numeric types */
} RowForm;

/* A query's shape, from its plan. */
typedef struct RowShape
{
	RowForm		form;
	char	   *body;			/* the query without trailing semicolons, as it is wrapped */
	int			natts;
	Oid		   *types;			/* natts column types */
	char	  **names;			/* natts column names */
} RowShape;

/*
 * The shape of query (planned as the current user with the current
 * search_path, not run); what names it in errors ("query", "held-out
 * query").  A query of another form is a 42804 error that lists the forms.
 */
extern void row_shape(const char *query, RowShape *shape, const char *what);

/*
 * The query as one row per client, (client text, stats perpca_stats): rows
 * aggregated under mode (every name qualified with perpca's schema, so
 * nothing binds to the caller's search_path); statistics merged per client
 * when merge, else returned as the query gives them (a third column too).
 * keyed puts pg_typeof(client) in front, and keeps the key's type.
 */
/* The INSERT that stages query (a train's or refresh's) under missing; *names_json its feature names or "null". */
extern char *row_stage_command(const char *query, const char *path, PerpcaMissing mode, char **names_json);

extern char *row_stats_sql(const char *query, const RowShape *shape, PerpcaMissing mode,
						   bool merge, bool keyed);

/*
 * The query of rows (not statistics) as (client, x float8[]) rows, the key
 * as the query gives it (a row function's form, NULL elements kept).
 */
extern char *row_rows_sql(const RowShape *shape);

/*
 * One NOTICE for the rows a statement left out for missing values: func
 * names the function, skipped the rows, in clients of nclients groups.
 */
extern void row_report_skipped(const char *func, int64 skipped, int clients, int nclients);

/*
 * One NOTICE naming the groups that contribute nothing: empty (no row left
 * after skipping) or without variance; what says which ("have no rows",
 * ...), consequence what happens to them.
 */
extern void row_report_groups(const char *func, const char *const *names, int n, const char *what,
							  const char *consequence);

/* The hint for a row's missing element in func, which takes missing => 'skip'. */
extern char *row_skip_hint(const char *func);

/*
 * In a PG_CATCH of a function that read a user's query (cxt: the memory
 * context of the PG_TRY): the error again, without perpca's internal SQL as
 * CONTEXT (unless it is an internal error), and with missing_hint (NULL:
 * unchanged) in place of the aggregate's hint for a row's missing element.
 */
extern pg_noreturn void row_rethrow(const char *missing_hint, MemoryContext cxt);

#endif							/* PERPCA_ROW_READER_H */
