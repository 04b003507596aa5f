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
 */
#include "postgres.h"

#include <ctype.h>

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/plancache.h"
#include "utils/syscache.h"

#include "error_kinds.h"
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

/* The perpca_stats type of the extension's schema nsp. */
static Oid
stats_type(Oid nsp)
{
	return GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum("perpca_stats"),
						   ObjectIdGetDatum(nsp));
}

/* The form of a result of natts columns of these types, or a 42804 error. */
static RowForm
classify(const Oid *types, int natts, const char *what)
{
	Oid			second = natts >= 2 ? getBaseType(types[1]) : InvalidOid;
	Oid			elem = OidIsValid(second) ? get_element_type(second) : InvalidOid;
	bool		columns = natts >= 2;

	if (natts >= 2 && second == stats_type(perpca_extension_schema()))
		return ROW_FORM_STATS;
	if (OidIsValid(elem) && numeric_type(elem))
		return ROW_FORM_ARRAY;
	if (natts >= 2 && pgvector_type(types[1]))
	{
		if (!OidIsValid(get_extension_oid("perpca_vector", true)))
			ereport(ERROR,
					(errcode(PERPCA_ERRCODE_NEEDS_EXTENSION),
					 errmsg("rows of type %s need the extension perpca_vector", format_type_be(types[1])),
					 errhint("CREATE EXTENSION perpca_vector in perpca's schema (docs/pgvector.md).")));
		return ROW_FORM_VECTOR;
	}
	for (int i = 1; i < natts; i++)
		columns = columns && numeric_type(types[i]);
	if (columns)
		return ROW_FORM_COLUMNS;
	ereport(ERROR,
			(errcode(PERPCA_ERRCODE_WRONG_TYPE),
			 errmsg("the %s must return a client key, then statistics or rows", what),
			 errdetail("Its columns are of types %s%s%s.", natts > 0 ? format_type_be(types[0]) : "(none)",
					   natts > 1 ? ", " : "", natts > 1 ? format_type_be(types[1]) : ""),
			 errhint("Return (client, perpca_stats), (client, x) with x a numeric array (or a vector or "
					 "halfvec with perpca_vector), or (client, c1, c2, ...) with numeric columns.")));
	return ROW_FORM_STATS;		/* keep the compiler quiet */
}

/*
 * The plan's result of sql (prepared, not run; SPI connected), or the error
 * for more than one statement or one that returns no rows (row_reader.h).
 */
TupleDesc
row_planned_result(const char *sql, const char *what)
{
	SPIPlanPtr	plan = SPI_prepare(sql, 0, NULL);
	List	   *sources;

	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	sources = SPI_plan_get_plan_sources(plan);
	if (list_length(sources) != 1)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NOT_ONE_SELECT),
				 errmsg("the %s must be a single statement", what)));
	if (((CachedPlanSource *) linitial(sources))->resultDesc == NULL)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("the %s must return rows", what),
				 errhint("Pass a SELECT returning (client, perpca_stats) or rows (client, x) or (client, c1, c2, ...).")));
	return ((CachedPlanSource *) linitial(sources))->resultDesc;
}

/*
 * The query's one statement, without the semicolons and comments after it
 * (query_check.c), to be wrapped as a subquery: a comment at its end is
 * ended by the newline the wrapper puts after it.
 */
static char *
query_body(const char *query, const char *what)
{
	return perpca_one_select(query, what);
}

void
row_shape(const char *query, RowShape *shape, const char *what)
{
	MemoryContext caller = CurrentMemoryContext;
	TupleDesc	desc;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/* one SELECT (query_check.c), then as the subquery every reader runs it as */
	(void) perpca_one_select(query, what);
	(void) row_planned_result(query, what);
	shape->body = MemoryContextStrdup(caller, query_body(query, what));
	desc = row_planned_result(psprintf("SELECT * FROM (%s\n) AS q", shape->body), what);
	shape->natts = desc->natts;
	shape->types = MemoryContextAlloc(caller, sizeof(Oid) * Max(desc->natts, 1));
	shape->names = MemoryContextAlloc(caller, sizeof(char *) * Max(desc->natts, 1));
	for (int i = 0; i < desc->natts; i++)
	{
		shape->types[i] = TupleDescAttr(desc, i)->atttypid;
		shape->names[i] = MemoryContextStrdup(caller, NameStr(TupleDescAttr(desc, i)->attname));
	}
	SPI_finish();
	shape->form = classify(shape->types, shape->natts, what);
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
row_argument(const RowShape *shape)
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
row_aliases(const RowShape *shape)
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
row_stats_sql(const char *query, const RowShape *shape, PerpcaMissing mode, bool merge)
{
	const char *ext = quote_identifier(get_namespace_name(perpca_extension_schema()));
	char	   *agg;

	if (shape->form == ROW_FORM_STATS && !merge)
		return pstrdup(query);
	if (shape->form == ROW_FORM_STATS)
		agg = psprintf("%s.perpca_merge(CAST(q.x1 AS %s.perpca_stats))", ext, ext);
	else
		agg = psprintf("%s.perpca_stats(%s%s)", ext, row_argument(shape),
					   mode == PERPCA_MISSING_SKIP ? ", CAST('skip' AS pg_catalog.text)" : "");
	return psprintf("SELECT q.c AS client, %s AS stats FROM (%s\n) AS q(%s) GROUP BY q.c",
					agg, shape->body, shape->form == ROW_FORM_STATS ? "c, x1" : row_aliases(shape));
}

char *
row_rows_sql(const RowShape *shape)
{
	const char *x = shape->form == ROW_FORM_VECTOR
		? "CAST(CAST(q.x1 AS pg_catalog.float4[]) AS pg_catalog.float8[])"
		: row_argument(shape);

	Assert(shape->form != ROW_FORM_STATS);
	return psprintf("SELECT q.c, %s AS x FROM (%s\n) AS q(%s)", x, shape->body, row_aliases(shape));
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

/* The feature names of a query of columns, as a JSON array (null for other forms). */
static char *
feature_names_json(const RowShape *shape)
{
	StringInfoData buf;

	if (shape->form != ROW_FORM_COLUMNS)
		return "null";
	initStringInfo(&buf);
	appendStringInfoChar(&buf, '[');
	for (int i = 1; i < shape->natts; i++)
	{
		if (i > 1)
			appendStringInfoString(&buf, ", ");
		escape_json(&buf, shape->names[i]);
	}
	appendStringInfoChar(&buf, ']');
	return buf.data;
}

/*
 * The SELECT a model's source view binds (store_source_bind), planned as
 * the current user with the given search_path: statistics as the query
 * gives them (with its n_local column), rows of any form aggregated per
 * client under mode (row_stats_sql); *names_json the names of its feature
 * columns as a JSON array, or "null".
 */
char *
row_source_select(const char *query, const char *path, PerpcaMissing mode, char **names_json)
{
	RowShape	shape;
	int			nestlevel;

	nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", path, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	row_shape(query, &shape, "query of a model");
	AtEOXact_GUC(true, nestlevel);
	*names_json = feature_names_json(&shape);
	return row_stats_sql(shape.body, &shape, mode, false);
}
