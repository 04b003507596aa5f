/*
 * row_reader.h -- the one reader of the rows a user's query returns, and the
 * one option that governs their gaps, missing => 'error' | 'skip' |
 * 'observed' (row_reader.c states the contract: the forms, the modes, the
 * one NOTICE per statement)
 */
#ifndef PERPCA_ROW_READER_H
#define PERPCA_ROW_READER_H

#include "postgres.h"

#include "access/htup.h"
#include "access/tupdesc.h"
#include "fmgr.h"

#include "pg_compat.h"
#include "stats.h"

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

/*
 * One user's query, read once: checked to be one SELECT (perpca_one_select),
 * planned as the current user with the current search_path (not run), its
 * form told and its missing mode parsed.  Every reader of the query (the
 * fit, train and refresh, evaluate, choose_ranks, personalize,
 * missing_eval, a federated shard) takes its SQL from here.
 */
typedef struct RowSource
{
	const char *query;			/* as the user wrote it */
	char	   *body;			/* its one SELECT without trailing semicolons, as it is wrapped */
	const char *what;			/* names it in errors ("query", "held-out query") */
	PerpcaMissing missing;		/* what a row with a gap does */
	RowForm		form;
	int			natts;
	Oid		   *types;			/* natts column types */
	char	  **names;			/* natts column names */
} RowSource;

/*
 * Plan query into src (one SELECT, then its columns; not run): a query of
 * another form is a 42804 error that lists the forms.
 */
extern void row_source_open(RowSource *src, const char *query, const char *what, PerpcaMissing missing);

/* row_source_open without telling the form (src->form unset): the caller checks the columns first. */
extern void row_source_plan(RowSource *src, const char *query, const char *what, PerpcaMissing missing);

/* Tell src's form from its columns (the 42804 error of row_source_open). */
extern void row_source_classify(RowSource *src);

/*
 * The source as one row per client, (client, stats perpca_stats): rows
 * aggregated under src->missing, statistics merged per client when merge,
 * else returned as the query gives them (a third column too).  The key stays
 * in its own type (client_key.c writes it); perpca's aggregates are named
 * with its schema and called with arguments of exactly their types, so
 * nothing binds to the caller's search_path or to a better match another
 * role creates.
 */
extern char *row_source_stats_sql(const RowSource *src, bool merge);

/*
 * The source of rows (not statistics) as (client, x float8[]) rows, the key
 * as the query gives it (a row function's form, NULL elements kept).
 */
extern char *row_source_rows_sql(const RowSource *src);

/* row_source_open planned with search_path path (a model's recorded one), then the caller's again. */
extern void row_source_open_path(RowSource *src, const char *query, const char *what,
								 PerpcaMissing missing, const char *path);

/* The feature names of a source of columns as a JSON array; "null" for other forms. */
extern char *row_source_names_json(const RowSource *src);

/*
 * The SELECT a model's source view binds at train: query (planned with
 * search_path path) through row_source_stats_sql under mode, unmerged;
 * *names_json its feature names (row_source_names_json).
 */
extern char *row_source_select(const char *query, const char *path, PerpcaMissing mode, char **names_json);

/* One row of the user's query. */
typedef struct ClientInput
{
	char	   *name;
	PerpcaStats *stats;			/* NULL: no rows (kept only with keep_empty) */
	int			r2;				/* local components of this client */
	int64		skipped;		/* its rows left out for missing values */
	int			sketch_rows;	/* sketched statistics: rows of B (at most ell); 0 for exact ones */
	double		delta;			/* sketched statistics: 0 <= M2 - B'B <= delta I; 0 for exact ones */

	/*
	 * Rows left in storage (ClientsRead.rows_stored): the stored value's TOAST
	 * pointer, and stats is then only the value's head (its header, mean and
	 * mean_lo, a sketch's delta and trace: CLIENT_HEAD_BYTES), with a size of
	 * its own; client_rows reads its rows, clients_load the whole value.
	 * NULL when stats is the whole value.
	 */
	struct varlena *stored;
	double		sumsq;			/* with stored: ||rows||_F^2 (a thin value's trace, a sketch's ||B||_F^2) */
} ClientInput;

/* The bytes of a thin or sketched value's head: everything before its rows. */
#define CLIENT_HEAD_BYTES(s) \
	(offsetof(PerpcaStats, data) + sizeof(double) * (2 * (Size) (s)->dim + ((s)->form == PERPCA_FORM_SKETCH ? 2 : 0)))

/* How to read a row source's clients (row_reader.h: its forms and the missing option). */
typedef struct ClientsRead
{
	int			n_local;		/* the local rank of a client without its own */
	bool		merge;			/* statistics: merge a client's rows (else one row each) */
	const char *func;			/* who reads, in NOTICEs and hints */
	bool		keep_empty;		/* keep a client without rows, with stats NULL */
	bool		rows_stored;	/* leave a stored thin or sketched value's rows in storage (ClientInput.stored) */
} ClientsRead;

/*
 * Run src (statistics, or rows of any form, which are aggregated per client
 * under src->missing) through a cursor: the clients, copied into cxt, and
 * their number.  A client without rows (every row skipped, or NULL
 * statistics) is left out (unless how->keep_empty); rows skipped for missing
 * values, in all clients, are counted in *skipped; both, and clients without
 * variance, are said in the one NOTICE of row_report.
 */
extern ClientInput *clients_read(const RowSource *src, const ClientsRead *how,
								 MemoryContext cxt, int *nclients, int64 *skipped);

/*
 * Rows first .. first + count - 1 of client c, whose rows were left in
 * storage (c->stored; a thin value's centred rows, a sketch's B), into out
 * (count x d), a slice at a time.  Rows in memory are the client's own Y.
 */
extern void client_rows(const ClientInput *c, int first, int count, double *out);

/*
 * Every client's whole value in place of its head (in CurrentMemoryContext),
 * as clients_read gives it without rows_stored; false when none was left in
 * storage.
 */
extern bool clients_load(ClientInput *in, int n);

/* What a reader does with one row of a source's SQL (in SPI, the batch freed after it). */
typedef void (*RowEach) (HeapTuple tup, TupleDesc desc, void *arg);

/*
 * Run sql (a source's SQL, or perpca's own around it) as the current user
 * through a read-only cursor, a batch of rows at a time: each(row, arg) for
 * every row.  The caller connects nothing: SPI is connected here.
 */
extern void row_source_run(const char *sql, RowEach each, void *arg);

/* At most this many group names in a report; the rest are counted. */
#define ROW_REPORT_NAMES 5

/*
 * What reading one query left out or found without substance, gathered
 * group by group with row_report_group and said by row_report, the one
 * NOTICE of every function that reads rows.
 */
typedef struct RowReport
{
	int64		skipped;		/* rows left out for missing values */
	int			with_skipped;	/* groups that lost at least one of them */
	int			groups;			/* groups read; -1: not known (rows of a row function, shards) */
	int			nempty;			/* groups with no row left */
	int			nflat;			/* groups without variance */
	const char *empty[ROW_REPORT_NAMES];	/* the first names of each, in byte order */
	const char *flat[ROW_REPORT_NAMES];
} RowReport;

/*
 * One group read: n rows kept, skipped left out; flat when it has no
 * variance (a group with n = 0 is empty whatever flat says).  name must live
 * until row_report.
 */
extern void row_report_group(RowReport *r, const char *name, int64 n, int64 skipped, bool flat);

/*
 * The one NOTICE (none when there is nothing to say), worded the same for
 * every function: "func: N rows left out for missing values, in a of b
 * groups; k groups with no rows: 'x', ...; k groups without variance: ...",
 * with one fixed sentence of detail per part.
 */
extern void row_report(const char *func, const RowReport *r);

/*
 * The user-facing function whose internal SQL is running (perpca_train,
 * perpca_refresh), for the report and hint of a read nested in it; NULL
 * outside one.
 */
extern const char *row_statement_func;

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
