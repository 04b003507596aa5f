/*
 * row_reader.c -- the one reader of the rows a user's query returns, and the
 * missing option (row_reader.h)
 *
 * The contract, written once (docs/missing-values.md says it to users):
 *
 *   - Input forms: statistics (client, perpca_stats[, n_local]); rows as a
 *     numeric array (client, x) of smallint, integer, bigint, real, double
 *     precision or numeric; pgvector's vector or halfvec (client, v) where
 *     perpca_vector is installed; feature columns (client, c1, c2, ...) of
 *     those numeric types (domains over them too).
 *   - missing => 'error' (a NULL, NaN or infinite element is an error naming
 *     it, whose hint names the calling function's option), 'skip' (the row
 *     is left out and counted: perpca_stats(x, 'skip')) or 'observed' (the
 *     row is read on its observed coordinates, where the function can).
 *     Statistics carry the choice their aggregate made (perpca_skipped).
 *   - A function that cannot do a mode refuses it before it reads a row.
 *   - Skipped rows: one NOTICE per statement, and a count in the function's
 *     result (or perpca_last_fit().rows_skipped).
 *   - Groups that contribute nothing (no row left after skipping, or no
 *     variance) are named in one NOTICE, never an error.
 *
 * Rows become statistics through SQL that wraps the user's query, every name
 * in it qualified with perpca's schema, and the query runs as the caller
 * with the caller's (or the model's recorded) search_path.
 *
 * A fit that may run in the span of its clients' rows (fit_span.h) reads a
 * stored thin or sketched value whole once, checks it as every reader
 * does, and keeps its head and TOAST pointer (ClientsRead.rows_stored):
 * client_rows reads its rows again a slice at a time, under the same
 * statement's snapshot, and clients_load the whole value when the fit
 * runs in d after all.
 */
#include "postgres.h"

#include <ctype.h>

#include "access/detoast.h"
#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "lib/stringinfo.h"
#include "nodes/parsenodes.h"
#include "parser/parser.h"
#include "tcop/cmdtag.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/plancache.h"
#include "utils/syscache.h"

#include "client_key.h"
#include "error_kinds.h"
#include "linalg.h"
#include "perpca.h"
#include "row_reader.h"
#include "stats.h"

const char *const perpca_missing_names[3] = {"error", "skip", "observed"};

const char *row_statement_func = NULL;

PerpcaMissing
row_missing_parse(const char *value)
{
	for (int i = 0; i < (int) lengthof(perpca_missing_names); i++)
		if (strcmp(value, perpca_missing_names[i]) == 0)
			return (PerpcaMissing) i;
	ereport(ERROR,
			(errcode(PERPCA_ERRCODE_OPTION),
			 errmsg("invalid value for option \"missing\": \"%s\"", value),
			 errhint("Valid values are \"error\", \"skip\" or \"observed\".")));
	return PERPCA_MISSING_ERROR;	/* keep the compiler quiet */
}

PerpcaMissing
row_missing_arg(FunctionCallInfo fcinfo, int argno, PerpcaMissing dflt)
{
	if (argno >= PG_NARGS() || PG_ARGISNULL(argno))
		return dflt;
	return row_missing_parse(text_to_cstring(PG_GETARG_TEXT_PP(argno)));
}

void
row_missing_refuse(PerpcaMissing mode, const char *func, const char *why, const char *hint)
{
	ereport(ERROR,
			(errcode(PERPCA_ERRCODE_UNSUPPORTED),
			 errmsg("%s cannot read rows with missing => '%s'", func, perpca_missing_names[mode]),
			 errdetail("%s", why),
			 hint ? errhint("%s", hint) : 0));
	pg_unreachable();
}

/* ------------------------------------------------------------------------
 * One SELECT
 *
 * Every query text perpca runs that its callers write (a model's query, a
 * warm start, the rows of every reader, a shard's query) is checked here,
 * once, before it is planned or run: it must parse as exactly one SELECT
 * (VALUES and TABLE are SELECTs too), without INTO (which creates a table)
 * and without a data-modifying WITH.  Anything else is refused with
 * feature_not_supported (0A000), the SQLSTATE a read-only SPI call gives a
 * second statement.  The check is the raw parser's, so it needs no catalog
 * and no search_path.
 * ------------------------------------------------------------------------
 */

static void
refuse(const char *what, const char *detail)
{
	ereport(ERROR,
			(errcode(PERPCA_ERRCODE_NOT_ONE_SELECT),
			 errmsg("%s must be exactly one SELECT", what),
			 errdetail("%s", detail),
			 errhint("Pass one SELECT, VALUES or TABLE statement: perpca runs nothing else.")));
}

/* A syntax error's position is in the query text, as SPI reports it. */
static void
syntax_error_callback(void *arg)
{
	int			pos = geterrposition();

	if (pos > 0)
	{
		errposition(0);
		internalerrposition(pos);
		internalerrquery((const char *) arg);
	}
}

/* Whether a SELECT has a data-modifying WITH, at its top or in a set operation's branch. */
static bool
select_modifies(SelectStmt *s)
{
	ListCell   *lc;

	if (s == NULL)
		return false;
	if (s->withClause != NULL)
		foreach(lc, s->withClause->ctes)
		{
			Node	   *q = ((CommonTableExpr *) lfirst(lc))->ctequery;

			if (!IsA(q, SelectStmt) || select_modifies((SelectStmt *) q))
				return true;
		}
	return select_modifies(s->larg) || select_modifies(s->rarg);
}

/*
 * Check that query is exactly one SELECT (what names it in the error) and
 * return that statement's own text, without the semicolons after it: text
 * that can be written after "AS " or inside parentheses as it stands.
 */
char *
perpca_one_select(const char *query, const char *what)
{
	ErrorContextCallback errcallback = {error_context_stack, syntax_error_callback, (void *) query};
	List	   *stmts;
	RawStmt    *raw;
	SelectStmt *sel;

	error_context_stack = &errcallback;
	stmts = raw_parser(query, RAW_PARSE_DEFAULT);
	error_context_stack = errcallback.previous;
	if (list_length(stmts) != 1)
		refuse(what, list_length(stmts) == 0 ? "It is empty."
			   : psprintf("It is %d statements.", list_length(stmts)));
	raw = linitial_node(RawStmt, stmts);
	if (!IsA(raw->stmt, SelectStmt))
		refuse(what, psprintf("It is a %s statement.",
							  GetCommandTagName(CreateCommandTag(raw->stmt))));
	sel = (SelectStmt *) raw->stmt;
	if (sel->intoClause != NULL)
		refuse(what, "SELECT INTO creates a table.");
	if (select_modifies(sel))
		refuse(what, "It has a data-modifying statement in WITH.");
	return raw->stmt_len > 0 ? pnstrdup(query + raw->stmt_location, raw->stmt_len)
		: pstrdup(query + raw->stmt_location);
}

/* ------------------------------------------------------------------------
 * The shape of a query
 * ------------------------------------------------------------------------
 */

/* Is type (under any domain) one of the numeric types a feature may have? */
static bool
numeric_type(Oid type)
{
	Oid			base = getBaseType(type);

	return base == INT2OID || base == INT4OID || base == INT8OID || base == FLOAT4OID ||
		base == FLOAT8OID || base == NUMERICOID;
}

/* Is type (under any domain) pgvector's vector or halfvec, by name? */
static bool
pgvector_type(Oid type)
{
	HeapTuple	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(getBaseType(type)));
	bool		found = false;

	if (HeapTupleIsValid(tup))
	{
		const char *name = NameStr(((Form_pg_type) GETSTRUCT(tup))->typname);

		found = strcmp(name, "vector") == 0 || strcmp(name, "halfvec") == 0;
		ReleaseSysCache(tup);
	}
	return found;
}

void
row_source_classify(RowSource *src)
{
	const Oid  *types = src->types;
	int			natts = src->natts;
	Oid			second = natts >= 2 ? getBaseType(types[1]) : InvalidOid;
	Oid			elem = OidIsValid(second) ? get_element_type(second) : InvalidOid;
	bool		columns = natts >= 2;

	src->form = ROW_FORM_STATS;
	if (natts >= 2 && second == stats_type_oid())
		return;
	src->form = ROW_FORM_ARRAY;
	if (OidIsValid(elem) && numeric_type(elem))
		return;
	src->form = ROW_FORM_VECTOR;
	if (natts >= 2 && pgvector_type(types[1]))
	{
		if (!OidIsValid(get_extension_oid("perpca_vector", true)))
			ereport(ERROR,
					(errcode(PERPCA_ERRCODE_NEEDS_EXTENSION),
					 errmsg("rows of type %s need the extension perpca_vector", format_type_be(types[1])),
					 errhint("CREATE EXTENSION perpca_vector in perpca's schema (docs/pgvector.md).")));
		return;
	}
	src->form = ROW_FORM_COLUMNS;
	for (int i = 1; i < natts; i++)
		columns = columns && numeric_type(types[i]);
	if (columns)
		return;
	ereport(ERROR,
			(errcode(PERPCA_ERRCODE_WRONG_TYPE),
			 errmsg("the %s must return a client key, then statistics or rows", src->what),
			 errdetail("Its columns are of types %s%s%s.", natts > 0 ? format_type_be(types[0]) : "(none)",
					   natts > 1 ? ", " : "", natts > 1 ? format_type_be(types[1]) : ""),
			 errhint("Return (client, perpca_stats), (client, x) with x a numeric array (or a vector or "
					 "halfvec with perpca_vector), or (client, c1, c2, ...) with numeric columns.")));
}

/* The columns of query's plan into src (SPI connected), in cxt. */
static void
plan_columns(RowSource *src, const char *query, MemoryContext cxt)
{
	SPIPlanPtr	plan = SPI_prepare(query, 0, NULL);
	TupleDesc	desc;

	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	desc = ((CachedPlanSource *) linitial(SPI_plan_get_plan_sources(plan)))->resultDesc;
	src->natts = desc->natts;
	src->types = MemoryContextAlloc(cxt, sizeof(Oid) * Max(desc->natts, 1));
	src->names = MemoryContextAlloc(cxt, sizeof(char *) * Max(desc->natts, 1));
	for (int i = 0; i < desc->natts; i++)
	{
		src->types[i] = TupleDescAttr(desc, i)->atttypid;
		src->names[i] = MemoryContextStrdup(cxt, NameStr(TupleDescAttr(desc, i)->attname));
	}
}

/*
 * The query is checked by the raw parser first (one SELECT), then planned
 * once, as it stands, so that an error points into the user's own text; an
 * error shows without SPI's context (row_rethrow), as every reader's.
 */
void
row_source_plan(RowSource *src, const char *query, const char *what, PerpcaMissing missing)
{
	MemoryContext caller = CurrentMemoryContext;

	src->query = query;
	src->what = what;
	src->missing = missing;
	src->body = perpca_one_select(query, what);
	PG_TRY();
	{
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		plan_columns(src, query, caller);
		SPI_finish();
	}
	PG_CATCH();
	{
		row_rethrow(NULL, caller);
	}
	PG_END_TRY();
}

void
row_source_open(RowSource *src, const char *query, const char *what, PerpcaMissing missing)
{
	row_source_plan(src, query, what, missing);
	row_source_classify(src);
}

/* ------------------------------------------------------------------------
 * Rows as statistics
 * ------------------------------------------------------------------------
 */

/*
 * The aggregate's argument: the row as float8[] (or as the vector it is),
 * always of exactly the type the aggregate takes.  A column of a domain is
 * cast to its base type (no function: PostgreSQL ignores casts from
 * domains), a numeric array or column by the built-in casts; so no function
 * another role creates in perpca's schema can be the better match.
 */
static char *
row_argument(const RowSource *shape)
{
	StringInfoData buf;

	if (shape->form == ROW_FORM_VECTOR)
		return psprintf("CAST(q.x1 AS %s)", format_type_be_qualified(getBaseType(shape->types[1])));
	if (shape->form == ROW_FORM_ARRAY)
		return "CAST(q.x1 AS pg_catalog.float8[])";
	initStringInfo(&buf);
	appendStringInfoString(&buf, "ARRAY[");
	for (int i = 1; i < shape->natts; i++)
		appendStringInfo(&buf, "%sCAST(q.x%d AS pg_catalog.float8)", i > 1 ? ", " : "", i);
	appendStringInfoChar(&buf, ']');
	return buf.data;
}

/* The alias list of the wrapped query: q(c, x1 .. xk). */
static char *
row_aliases(const RowSource *shape)
{
	StringInfoData buf;
	int			k = shape->form == ROW_FORM_COLUMNS ? shape->natts - 1 : 1;

	initStringInfo(&buf);
	appendStringInfoString(&buf, "c");
	for (int i = 1; i <= k; i++)
		appendStringInfo(&buf, ", x%d", i);
	return buf.data;
}

char *
row_source_stats_sql(const RowSource *src, bool merge)
{
	const char *ext = quote_identifier(get_namespace_name(perpca_extension_schema()));
	char	   *agg;

	if (src->form == ROW_FORM_STATS && !merge)
		return pstrdup(src->query);
	if (src->form == ROW_FORM_STATS)
		agg = psprintf("%s.perpca_merge(CAST(q.x1 AS %s.perpca_stats))", ext, ext);
	else
		agg = psprintf("%s.perpca_stats(%s%s)", ext, row_argument(src),
					   src->missing == PERPCA_MISSING_SKIP ? ", CAST('skip' AS pg_catalog.text)" : "");
	return psprintf("SELECT q.c AS client, %s AS stats FROM (%s\n) AS q(%s) GROUP BY q.c",
					agg, src->body, src->form == ROW_FORM_STATS ? "c, x1" : row_aliases(src));
}

char *
row_source_rows_sql(const RowSource *src)
{
	const char *x = src->form == ROW_FORM_VECTOR
		? "CAST(CAST(q.x1 AS pg_catalog.float4[]) AS pg_catalog.float8[])"
		: row_argument(src);

	Assert(src->form != ROW_FORM_STATS);
	return psprintf("SELECT q.c, %s AS x FROM (%s\n) AS q(%s)", x, src->body, row_aliases(src));
}

/* ------------------------------------------------------------------------
 * The clients of a source
 * ------------------------------------------------------------------------
 */

/* Rows fetched from the query at a time: only these are held twice. */
#define FETCH_ROWS 256

/* Statistics read as they are: (client, perpca_stats [, integer]). */
static void
check_stats_shape(const RowSource *src)
{
	Oid			stats = stats_type_oid();
	const Oid  *t = src->types;

	if (src->natts < 2 || src->natts > 3 || t[1] != stats ||
		(src->natts == 3 && t[2] != INT4OID && t[2] != INT2OID && t[2] != INT8OID))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_WRONG_TYPE),
				 errmsg("query must return columns (client, perpca_stats) or (client, perpca_stats, integer)"),
				 errdetail("The query returned %d column(s)%s.", src->natts,
						   src->natts >= 2 && t[1] != stats
						   ? " and its second column is not of type perpca_stats" : ""),
				 errhint("Use a query like SELECT group_id, perpca_stats(x) FROM t GROUP BY group_id.")));
}

/* The optional third column: this client's number of local components (NULL = n_local). */
static int
client_local_rank(HeapTuple tup, TupleDesc desc, const char *name, int n_local)
{
	bool		isnull;
	Datum		v;
	int64		r2;

	if (desc->natts < 3)
		return n_local;
	v = SPI_getbinval(tup, desc, 3, &isnull);
	if (isnull)
		return n_local;
	r2 = perpca_integer_value(v, TupleDescAttr(desc, 2)->atttypid, "the third column of the query");
	if (r2 < 0 || r2 > PERPCA_MAX_DIM)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("client \"%s\" asks for %lld local components", name, (long long) r2),
				 errhint("The third column must be between 0 and the dimension minus n_global.")));
	return (int) r2;
}

/*
 * Leave c's rows in storage when its value (whole in c->stats, validated)
 * is thin or sketched, stored out of line without compression (a slice of
 * its rows is then read without the rest) and as it is stored (not a float4
 * value, widened on reading): keep the TOAST pointer v and the value's head
 * in cxt, and ||rows||_F^2 computed as the fit computes it.
 */
static void
store_rows(ClientInput *c, Datum v, MemoryContext cxt)
{
	struct varlena *ptr = (struct varlena *) DatumGetPointer(v);
	struct varatt_external toast;
	PerpcaStats *s = c->stats;
	const double *Y = PERPCA_STATS_BODY(s);
	int64		rows = s->n;

	if (!VARATT_IS_EXTERNAL_ONDISK(ptr) || s->form == PERPCA_FORM_DENSE)
		return;
	VARATT_EXTERNAL_GET_POINTER(toast, ptr);
	if (VARATT_EXTERNAL_IS_COMPRESSED(toast) || toast.va_rawsize != (int32) VARSIZE(s))
		return;
	if (s->form == PERPCA_FORM_SKETCH)
	{
		int			brows;

		Y = perpca_stats_sketch_rows(s, &brows);
		rows = brows;
	}
	if (rows == 0)
		return;
	c->sumsq = linalg_dot(rows * s->dim, Y, Y);
	c->stats = MemoryContextAlloc(cxt, CLIENT_HEAD_BYTES(s));
	memcpy(c->stats, s, CLIENT_HEAD_BYTES(s));
	SET_VARSIZE(c->stats, CLIENT_HEAD_BYTES(s));
	c->stored = MemoryContextAlloc(cxt, VARSIZE_EXTERNAL(ptr));
	memcpy(c->stored, ptr, VARSIZE_EXTERNAL(ptr));
	pfree(s);
}

/*
 * Copy one result row into cxt: client name, stats value, local rank, its
 * rows left in storage when how says so (store_rows); *flat when it has no
 * variance.  False for a client without rows (NULL statistics, or every row
 * skipped): its name is set, its statistics (when any) are not kept,
 * *skipped counts them.
 */
static bool
read_client(HeapTuple tup, TupleDesc desc, const ClientsRead *how, MemoryContext cxt,
			ClientInput *out, int64 *skipped, bool *flat)
{
	bool		isnull;
	Datum		v;
	MemoryContext old;

	v = SPI_getbinval(tup, desc, 1, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NULL),
				 errmsg("client column of the query must not be NULL")));
	old = MemoryContextSwitchTo(cxt);
	out->name = client_key_text_of(TupleDescAttr(desc, 0)->atttypid, v);
	MemoryContextSwitchTo(old);
	v = SPI_getbinval(tup, desc, 2, &isnull);
	if (isnull)
		return false;
	old = MemoryContextSwitchTo(cxt);
	out->stats = perpca_stats_detoast_copy(v);
	MemoryContextSwitchTo(old);
	perpca_stats_validate(out->stats);
	(void) perpca_stats_sketch_rows(out->stats, &out->sketch_rows);
	out->delta = perpca_stats_sketch_delta(out->stats);
	*skipped += perpca_stats_skipped(out->stats);
	if (out->stats->n == 0)
	{
		pfree(out->stats);
		out->stats = NULL;
		return false;
	}
	out->r2 = client_local_rank(tup, desc, out->name, how->n_local);
	*flat = perpca_stats_flat(out->stats);
	if (how->rows_stored)
		store_rows(out, v, cxt);
	return true;
}

void
row_source_run(const char *sql, RowEach each, void *arg)
{
	Portal		portal;

	SPI_connect();
	portal = SPI_cursor_open_with_args(NULL, sql, 0, NULL, NULL, NULL, true, 0);
	for (;;)
	{
		SPI_cursor_fetch(portal, true, FETCH_ROWS);
		if (SPI_processed == 0)
			break;
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			CHECK_FOR_INTERRUPTS();
			each(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, arg);
		}
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	SPI_finish();
}

/* The clients read so far, and what to report of them. */
typedef struct ClientsSoFar
{
	ClientInput *clients;
	int			n;
	int			cap;
	RowReport	report;
	const ClientsRead *how;
	MemoryContext cxt;
} ClientsSoFar;

/* Read one row of (client, stats [, n_local]) into sofar (in its cxt). */
static void
read_row(HeapTuple tup, TupleDesc desc, void *arg)
{
	ClientsSoFar *sofar = arg;
	ClientInput *c;
	bool		rows,
				flat = false;

	if (sofar->n == sofar->cap)
	{
		sofar->cap = Max(sofar->cap * 2, 16);
		sofar->clients = sofar->clients ? repalloc(sofar->clients, sizeof(ClientInput) * sofar->cap)
			: MemoryContextAlloc(sofar->cxt, sizeof(ClientInput) * sofar->cap);
	}
	c = &sofar->clients[sofar->n];
	memset(c, 0, sizeof(ClientInput));
	rows = read_client(tup, desc, sofar->how, sofar->cxt, c, &c->skipped, &flat);
	row_report_group(&sofar->report, c->name, rows ? c->stats->n : 0, c->skipped, rows && flat);
	if (rows || sofar->how->keep_empty)
		sofar->n++;
}

/*
 * Run the source through a cursor and copy its rows into cxt, a batch at a
 * time, so that the clients' statistics are in memory only once.  An error
 * while reading names the caller's option in its hint and shows none of the
 * wrapper's SQL.
 */
ClientInput *
clients_read(const RowSource *src, const ClientsRead *how, MemoryContext cxt,
			 int *nclients, int64 *skipped)
{
	ClientsSoFar sofar = {.how = how, .cxt = cxt};
	MemoryContext here = CurrentMemoryContext;
	char	   *hint = row_skip_hint(how->func);

	PG_TRY();
	{
		if (src->form == ROW_FORM_STATS && !how->merge)
			check_stats_shape(src);
		row_source_run(row_source_stats_sql(src, how->merge), read_row, &sofar);
	}
	PG_CATCH();
	{
		row_rethrow(hint, here);
	}
	PG_END_TRY();
	row_report(how->func, &sofar.report);
	*nclients = sofar.n;
	*skipped = sofar.report.skipped;
	return sofar.clients ? sofar.clients : MemoryContextAllocZero(cxt, sizeof(ClientInput));
}

/* Bytes of a stored value's rows read at a time: only these are held twice. */
#define CLIENT_SLICE_BYTES (1024 * 1024)

void
client_rows(const ClientInput *c, int first, int count, double *out)
{
	const PerpcaStats *s = c->stats;
	int64		rowbytes = sizeof(double) * s->dim,
				step = Max(1, CLIENT_SLICE_BYTES / rowbytes);

	Assert(c->stored != NULL);
	Assert(first >= 0 && count >= 0 && first + count <= (s->form == PERPCA_FORM_SKETCH ? s->rows : s->n));
	for (int64 r = 0; r < count; r += step)
	{
		int64		len = rowbytes * Min(step, count - r);
		struct varlena *slice;

		CHECK_FOR_INTERRUPTS();
		slice = detoast_attr_slice(c->stored, CLIENT_HEAD_BYTES(s) - VARHDRSZ + (first + r) * rowbytes, len);
		if ((int64) VARSIZE_ANY_EXHDR(slice) != len)
			ereport(ERROR,
					(errcode(PERPCA_ERRCODE_STATS_CORRUPTED),
					 errmsg("perpca_stats value is corrupted"),
					 errdetail("The stored value of client \"%s\" is shorter than it was when the fit read it.", c->name)));
		memcpy(out + r * s->dim, VARDATA_ANY(slice), len);
		pfree(slice);
	}
}

bool
clients_load(ClientInput *in, int n)
{
	bool		any = false;

	for (int i = 0; i < n; i++)
	{
		PerpcaStats *head = in[i].stats,
				   *whole;

		if (in[i].stored == NULL)
			continue;
		CHECK_FOR_INTERRUPTS();
		whole = perpca_stats_detoast_copy(PointerGetDatum(in[i].stored));
		if (VARSIZE(whole) < CLIENT_HEAD_BYTES(head) ||
			memcmp((char *) whole + VARHDRSZ, (char *) head + VARHDRSZ, CLIENT_HEAD_BYTES(head) - VARHDRSZ) != 0)
			ereport(ERROR,
					(errcode(PERPCA_ERRCODE_STATS_CORRUPTED),
					 errmsg("perpca_stats value is corrupted"),
					 errdetail("The stored value of client \"%s\" is not the one the fit read.", in[i].name)));
		pfree(head);
		in[i].stats = whole;
		in[i].stored = NULL;
		any = true;
	}
	return any;
}

/* ------------------------------------------------------------------------
 * Reporting
 * ------------------------------------------------------------------------
 */

/* The detail of each part of a report: the same words for every function. */
#define REPORT_SKIPPED_DETAIL \
	"A row with a NULL, NaN or infinite element is left out under missing => 'skip' " \
	"(perpca_stats(x, 'skip')): figures are those of the complete rows, and a row function returns NULL for it."
#define REPORT_EMPTY_DETAIL \
	"A group with no rows (all left out, or statistics of none) contributes nothing: a fit leaves it out, " \
	"an evaluation gives it n = 0 and NULL figures, perpca_personalize stores nothing, " \
	"and a model scores it as a client it does not know."
#define REPORT_FLAT_DETAIL \
	"A group without variance (one row, or all its rows equal) is kept but contributes nothing to the " \
	"components; a ratio to its variance is NULL."

/* names[0..*kept) stays the first ROW_REPORT_NAMES names in byte order (whatever the order of the groups). */
static void
keep_name(const char **names, int *kept, const char *name)
{
	int			i;

	if (*kept == ROW_REPORT_NAMES && strcmp(name, names[ROW_REPORT_NAMES - 1]) >= 0)
		return;
	i = Min(*kept, ROW_REPORT_NAMES - 1);
	for (; i > 0 && strcmp(name, names[i - 1]) < 0; i--)
		names[i] = names[i - 1];
	names[i] = name;
	*kept = Min(*kept + 1, ROW_REPORT_NAMES);
}

void
row_report_group(RowReport *r, const char *name, int64 n, int64 skipped, bool flat)
{
	r->groups = Max(r->groups, 0) + 1;
	r->skipped += skipped;
	r->with_skipped += skipped > 0;
	if (n <= 0)
	{
		int			kept = Min(r->nempty, ROW_REPORT_NAMES);

		keep_name(r->empty, &kept, name);
		r->nempty++;
	}
	else if (flat)
	{
		int			kept = Min(r->nflat, ROW_REPORT_NAMES);

		keep_name(r->flat, &kept, name);
		r->nflat++;
	}
}

/* "; k groups what: 'a', 'b' and 3 more" into msg, and its sentence into detail. */
static void
report_names(StringInfo msg, StringInfo detail, int n, const char *const *names, const char *what,
			 const char *sentence)
{
	if (n <= 0)
		return;
	appendStringInfo(msg, "%s%d group%s %s: ", msg->len > 0 ? "; " : "", n, n == 1 ? "" : "s", what);
	for (int i = 0; i < n && i < ROW_REPORT_NAMES; i++)
		appendStringInfo(msg, "%s%s", i > 0 ? ", " : "", quote_literal_cstr(names[i]));
	if (n > ROW_REPORT_NAMES)
		appendStringInfo(msg, " and %d more", n - ROW_REPORT_NAMES);
	appendStringInfo(detail, "%s%s", detail->len > 0 ? " " : "", sentence);
}

void
row_report(const char *func, const RowReport *r)
{
	StringInfoData msg;
	StringInfoData detail;

	if (r->skipped <= 0 && r->nempty <= 0 && r->nflat <= 0)
		return;
	initStringInfo(&msg);
	initStringInfo(&detail);
	if (r->skipped > 0)
	{
		appendStringInfo(&msg, "%lld row%s left out for missing values",
						 (long long) r->skipped, r->skipped == 1 ? "" : "s");
		if (r->groups >= 0)
			appendStringInfo(&msg, ", in %d of %d group%s", r->with_skipped, r->groups,
							 r->groups == 1 ? "" : "s");
		appendStringInfoString(&detail, REPORT_SKIPPED_DETAIL);
	}
	report_names(&msg, &detail, r->nempty, r->empty, "with no rows", REPORT_EMPTY_DETAIL);
	report_names(&msg, &detail, r->nflat, r->flat, "without variance", REPORT_FLAT_DETAIL);
	ereport(NOTICE,
			(errmsg("%s: %s", func, msg.data),
			 errdetail("%s", detail.data)));
}

char *
row_skip_hint(const char *func)
{
	return psprintf("Pass missing => 'skip' to %s to leave out rows with a NULL, NaN or infinite element "
					"and count them.", func);
}

void
row_rethrow(const char *missing_hint, MemoryContext cxt)
{
	ErrorData  *edata;
	char	   *hint;

	MemoryContextSwitchTo(cxt);
	/* Callers build the hint before their PG_TRY; copied anyway, since FlushErrorState frees ErrorContext. */
	hint = missing_hint != NULL ? pstrdup(missing_hint) : NULL;
	edata = CopyErrorData();
	FlushErrorState();
	if (ERRCODE_TO_CATEGORY(edata->sqlerrcode) != ERRCODE_TO_CATEGORY(ERRCODE_INTERNAL_ERROR))
		edata->context = NULL;
	if (hint != NULL && edata->hint != NULL &&
		(strcmp(edata->hint, PERPCA_SKIP_HINT) == 0 || strcmp(edata->hint, PERPCA_OBSERVED_HINT) == 0))
		edata->hint = hint;
	ReThrowError(edata);
}

/* ------------------------------------------------------------------------
 * The stage of a train or refresh
 * ------------------------------------------------------------------------
 */

char *
row_source_names_json(const RowSource *src)
{
	StringInfoData buf;

	if (src->form != ROW_FORM_COLUMNS)
		return "null";
	initStringInfo(&buf);
	appendStringInfoChar(&buf, '[');
	for (int i = 1; i < src->natts; i++)
	{
		if (i > 1)
			appendStringInfoString(&buf, ", ");
		escape_json(&buf, src->names[i]);
	}
	appendStringInfoChar(&buf, ']');
	return buf.data;
}

/*
 * The SELECT a model's source view binds (store_source_bind), planned as
 * the current user with the given search_path: statistics as the query
 * gives them (with its n_local column), rows of any form aggregated per
 * client under mode.
 */
void
row_source_open_path(RowSource *src, const char *query, const char *what, PerpcaMissing missing,
					 const char *path)
{
	int			nestlevel = NewGUCNestLevel();

	(void) set_config_option("search_path", path, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	row_source_open(src, query, what, missing);
	AtEOXact_GUC(true, nestlevel);
}

char *
row_source_select(const char *query, const char *path, PerpcaMissing mode, char **names_json)
{
	RowSource	src;

	row_source_open_path(&src, query, "query of a model", mode, path);
	*names_json = row_source_names_json(&src);
	src.query = src.body;
	return row_source_stats_sql(&src, false);
}
