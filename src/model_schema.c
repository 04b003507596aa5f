/*
 * model_schema.c -- the columns of a model's tables, declared once, and
 * what is generated from them (model_schema.h)
 *
 * columns[] below is the one place that says what a model's tables hold.
 * From it come the CREATE TABLE of a new model and of its history, the ADD
 * COLUMNs that bring an older model's tables up to date (every column
 * declared since a later version than its table's), and the types and the
 * optional flag the checked readers expect (a column added later may be
 * missing from a model stored before and not written since).
 *
 * The DDL names every type schema-qualified and writes every operator of a
 * constraint OPERATOR(pg_catalog.x): a constraint is stored bound, so it
 * must bind to nothing a search_path offers.
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
#include "access/htup_details.h"
#include "funcapi.h"

#include "error_kinds.h"
#include "model_schema.h"

/* A table of a model: its suffix, the version that created it, what follows its columns, its comment. */
typedef struct TableDecl
{
	const char *suffix;
	const char *since;
	const char *constraints;	/* table constraints after the columns, or NULL */
	const char *after;			/* a statement run after CREATE TABLE (%s: the table), or NULL */
	const char *comment;		/* %s: the base name (twice for info) */
} TableDecl;

static const TableDecl tables[MODEL_NTABLES] = {
	[MODEL_TABLE_INFO] = {"info", "0.1.0", NULL, NULL,
		"perpca model %s: options, source query (bound in the view %s_source) and the search_path it was bound with, key type, diagnostics and version of the fit"},
	[MODEL_TABLE_CLIENTS] = {"clients", "0.1.0", NULL, NULL,
		"perpca model %s: one row per client (mean, explained-variance ratios, training error)"},
	[MODEL_TABLE_COMPONENTS] = {"components", "0.1.0",
		"CHECK ((kind OPERATOR(pg_catalog.=) 'global') OPERATOR(pg_catalog.=) (client IS NULL)), "
		"UNIQUE NULLS NOT DISTINCT (kind, client, component)",
		"ALTER TABLE %s REPLICA IDENTITY FULL",
		"perpca model %s: global (client NULL) and local principal components"},
	[MODEL_TABLE_HISTORY] = {"history", "0.3.0", NULL, NULL,
		"perpca model %s: one row per train and refresh (perpca_model_history)"},
};

/* A column: its table, name, type, constraint (or NULL), and the version that added it. */
typedef struct ColumnDecl
{
	ModelTable	table;
	const char *name;
	Oid			type;
	const char *constraint;
	const char *since;
} ColumnDecl;

#define I MODEL_TABLE_INFO
#define C MODEL_TABLE_CLIENTS
#define K MODEL_TABLE_COMPONENTS
#define H MODEL_TABLE_HISTORY
#define NN "NOT NULL"
#define ONE_OF(col, list) "NOT NULL CHECK (" col " OPERATOR(pg_catalog.=) ANY (ARRAY[" list "]))"

/*
 * Every column of every table, in each table's column order.  The option
 * columns of info (method .. weights) are those of 0.1.0; every option,
 * these and later ones, is in options (jsonb), which a refresh reads.
 */
static const ColumnDecl columns[] = {
	{I, "model", TEXTOID, "PRIMARY KEY", "0.1.0"},
	{I, "d", INT4OID, NN, "0.1.0"},
	{I, "n_global", INT4OID, NN, "0.1.0"},
	{I, "n_local", INT4OID, NULL, "0.1.0"},
	{I, "n_clients", INT4OID, NN, "0.1.0"},
	{I, "method", TEXTOID, NULL, "0.1.0"},
	{I, "rounds_max", INT4OID, NULL, "0.1.0"},
	{I, "tolerance", FLOAT8OID, NULL, "0.1.0"},
	{I, "step", FLOAT8OID, NULL, "0.1.0"},
	{I, "adaptive", BOOLOID, NULL, "0.1.0"},
	{I, "update", TEXTOID, NULL, "0.1.0"},
	{I, "retraction", TEXTOID, NULL, "0.1.0"},
	{I, "init", TEXTOID, NULL, "0.1.0"},
	{I, "seed", INT8OID, NULL, "0.1.0"},
	{I, "center", TEXTOID, NN, "0.1.0"},
	{I, "weights", TEXTOID, NULL, "0.1.0"},
	{I, "source_query", TEXTOID, NN, "0.1.0"},
	{I, "rounds", INT4OID, NULL, "0.1.0"},
	{I, "converged", BOOLOID, NULL, "0.1.0"},
	{I, "objective", FLOAT8OID, NULL, "0.1.0"},
	{I, "kkt_residual", FLOAT8OID, NULL, "0.1.0"},
	{I, "theta_est", FLOAT8OID, NULL, "0.1.0"},
	{I, "step_used", FLOAT8OID, NULL, "0.1.0"},
	{I, "fit_seconds", FLOAT8OID, NULL, "0.1.0"},
	{I, "global_mean", FLOAT8ARRAYOID, NN, "0.1.0"},
	{I, "total_variance", FLOAT8OID, NULL, "0.1.0"},
	{I, "fitted_at", TIMESTAMPTZOID, NN, "0.1.0"},
	{I, "version", INT8OID, NN, "0.1.0"},
	{I, "client_type", TEXTOID, NULL, "0.2.0"},
	{I, "options", JSONBOID, NULL, "0.2.0"},
	{I, "scale_factors", FLOAT8ARRAYOID, NULL, "0.2.0"},
	{I, "constant_features", INT4ARRAYOID, NULL, "0.2.0"},
	{I, "search_path", TEXTOID, NULL, "0.3.0"},
	{I, "feature_names", TEXTARRAYOID, NULL, "0.3.0"},
	{I, "stats_digest", TEXTOID, NULL, "0.3.0"},
	{I, "source_view", TEXTOID, NULL, "0.4.0"},
	{I, "sketch_bound", FLOAT8OID, NULL, "0.4.0"},
	{I, "calibration", FLOAT8OID, NULL, "0.5.0"},
	{I, "calibration_split", TEXTOID, NULL, "0.5.0"},
	{I, "calibration_rows", INT8OID, NULL, "0.5.0"},
	{I, "calibration_scores", FLOAT8ARRAYOID, NULL, "0.5.0"},
	{I, "flagged_gaussian", FLOAT8OID, NULL, "0.5.0"},
	{I, "flagged_calibrated", FLOAT8OID, NULL, "0.5.0"},

	{C, "client", TEXTOID, "PRIMARY KEY", "0.1.0"},
	{C, "n", INT8OID, NN, "0.1.0"},
	{C, "mean", FLOAT8ARRAYOID, NN, "0.1.0"},
	{C, "n_local", INT4OID, NN, "0.1.0"},
	{C, "total_variance", FLOAT8OID, NULL, "0.1.0"},
	{C, "global_ratio", FLOAT8OID, NULL, "0.1.0"},
	{C, "local_ratio", FLOAT8OID, NULL, "0.1.0"},
	{C, "residual_ratio", FLOAT8OID, NULL, "0.1.0"},
	{C, "train_error", FLOAT8OID, NULL, "0.1.0"},
	{C, "source", TEXTOID, ONE_OF("source", "'fit', 'personalize'"), "0.1.0"},
	{C, "score_covariance", FLOAT8ARRAYOID, NULL, "0.3.0"},
	{C, "residual_moments", FLOAT8ARRAYOID, NULL, "0.3.0"},
	{C, "sketch_bound", FLOAT8OID, NULL, "0.4.0"},
	{C, "calibration_rows", INT8OID, NULL, "0.5.0"},
	{C, "calibration_scores", FLOAT8ARRAYOID, NULL, "0.5.0"},

	{K, "client", TEXTOID, NULL, "0.1.0"},
	{K, "kind", TEXTOID, ONE_OF("kind", "'global', 'local'"), "0.1.0"},
	{K, "component", INT4OID, "NOT NULL CHECK (component OPERATOR(pg_catalog.>=) 1)", "0.1.0"},
	{K, "pc", FLOAT8ARRAYOID, NN, "0.1.0"},
	{K, "variance", FLOAT8OID, NULL, "0.1.0"},

	{H, "entry", INT4OID, "PRIMARY KEY CHECK (entry OPERATOR(pg_catalog.>=) 1)", "0.3.0"},
	{H, "version", INT8OID, NULL, "0.3.0"},
	{H, "at", TIMESTAMPTZOID, NN, "0.3.0"},
	{H, "kind", TEXTOID, ONE_OF("kind", "'train', 'refresh'"), "0.3.0"},
	{H, "clients", INT4OID, NULL, "0.3.0"},
	{H, "rows", INT8OID, NULL, "0.3.0"},
	{H, "rounds_run", INT4OID, NULL, "0.3.0"},
	{H, "converged", BOOLOID, NULL, "0.3.0"},
	{H, "objective", FLOAT8OID, NULL, "0.3.0"},
	{H, "seconds", FLOAT8OID, NULL, "0.3.0"},
	{H, "role", NAMEOID, NULL, "0.3.0"},
	{H, "warning", TEXTOID, NULL, "0.3.0"},
	{H, "outcome", TEXTOID, ONE_OF("outcome", "'fitted', 'unchanged', 'failed'"), "0.3.0"},
	{H, "starts", JSONBOID, NULL, "0.3.0"},
	{H, "clients_added", INT4OID, NULL, "0.3.0"},
	{H, "clients_dropped", INT4OID, NULL, "0.3.0"},
	{H, "warm_start", BOOLOID, NULL, "0.3.0"},
	{H, "digest", TEXTOID, NULL, "0.3.0"},
	{H, "sketch_bound", FLOAT8OID, NULL, "0.4.0"},
};

#undef I
#undef C
#undef K
#undef H

/* Whether a column came after its table: a table stored before may lack it. */
static bool
column_added_later(const ColumnDecl *c)
{
	return strcmp(c->since, tables[c->table].since) != 0;
}

const char *
model_table_suffix(ModelTable t)
{
	return tables[t].suffix;
}

ModelTable
model_table_by_suffix(const char *suffix)
{
	for (int t = 0; t < MODEL_NTABLES; t++)
		if (strcmp(tables[t].suffix, suffix) == 0)
			return (ModelTable) t;
	ereport(ERROR,
			(errcode(PERPCA_ERRCODE_ARGUMENT),
			 errmsg("a model has no table \"%s\"", suffix)));
	pg_unreachable();
}

ModelColumn
model_schema_column(ModelTable t, const char *name)
{
	for (int i = 0; i < (int) lengthof(columns); i++)
		if (columns[i].table == t && strcmp(columns[i].name, name) == 0)
		{
			ModelColumn col = {columns[i].name, columns[i].type, column_added_later(&columns[i])};

			return col;
		}
	elog(ERROR, "model table \"%s\" declares no column \"%s\"", tables[t].suffix, name);
	pg_unreachable();
}

/* "name type[ constraint]" of a column, the type schema-qualified. */
static void
append_column(StringInfo buf, const ColumnDecl *c)
{
	appendStringInfo(buf, "%s %s", quote_identifier(c->name),
					 format_type_extended(c->type, -1, FORMAT_TYPE_FORCE_QUALIFY));
	if (c->constraint != NULL)
		appendStringInfo(buf, " %s", c->constraint);
}

static void
spi_exec(const char *sql)
{
	if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "SPI_execute failed: %s", sql);
}

void
model_schema_create(ModelTable t, const char *schema, const char *base)
{
	const TableDecl *td = &tables[t];
	char	   *rel = quote_qualified_identifier(schema, psprintf("%s_%s", base, td->suffix));
	StringInfoData buf;
	bool		first = true;

	initStringInfo(&buf);
	appendStringInfo(&buf, "CREATE TABLE %s (", rel);
	for (int i = 0; i < (int) lengthof(columns); i++)
	{
		if (columns[i].table != t)
			continue;
		if (!first)
			appendStringInfoString(&buf, ", ");
		append_column(&buf, &columns[i]);
		first = false;
	}
	if (td->constraints != NULL)
		appendStringInfo(&buf, ", %s", td->constraints);
	appendStringInfoChar(&buf, ')');
	spi_exec(buf.data);
	if (td->after != NULL)
		spi_exec(psprintf(td->after, rel));
	spi_exec(psprintf("COMMENT ON TABLE %s IS %s", rel,
					  quote_literal_cstr(psprintf(td->comment, base, base))));
}

bool
model_schema_add_missing(ModelTable t, Oid relid)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < (int) lengthof(columns); i++)
	{
		const ColumnDecl *c = &columns[i];

		if (c->table != t || !column_added_later(c) ||
			get_attnum(relid, c->name) != InvalidAttrNumber)
			continue;
		appendStringInfoString(&buf, buf.len == 0 ? "" : ", ");
		appendStringInfoString(&buf, "ADD COLUMN ");
		append_column(&buf, c);
	}
	if (buf.len == 0)
		return false;
	spi_exec(psprintf("ALTER TABLE %s %s",
					  quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
												 get_rel_name(relid)),
					  buf.data));
	return true;
}

/* The position of column name among the declared columns of table t, or -1; name NULL: their number. */
static int
row_index(ModelTable t, const char *name)
{
	int			k = 0;

	for (int i = 0; i < (int) lengthof(columns); i++)
		if (columns[i].table == t)
		{
			if (name != NULL && strcmp(columns[i].name, name) == 0)
				return k;
			k++;
		}
	return name == NULL ? k : -1;
}

void
model_row_init(ModelRow *row, ModelTable t)
{
	if (row_index(t, NULL) > MODEL_MAX_COLUMNS)
		elog(ERROR, "model table \"%s\" declares more than MODEL_MAX_COLUMNS columns", tables[t].suffix);
	row->table = t;
	for (int k = 0; k < MODEL_MAX_COLUMNS; k++)
	{
		row->values[k] = (Datum) 0;
		row->nulls[k] = true;
	}
}

void
model_row_set(ModelRow *row, const char *name, Datum value, bool isnull)
{
	int			k = row_index(row->table, name);

	if (k < 0)
		elog(ERROR, "model table \"%s\" declares no column \"%s\"", tables[row->table].suffix, name);
	row->values[k] = isnull ? (Datum) 0 : value;
	row->nulls[k] = isnull;
}

bool
model_row_get(const ModelRow *row, const char *name, Datum *value, bool *isnull)
{
	int			k = row_index(row->table, name);

	if (k < 0)
		return false;
	*value = row->values[k];
	*isnull = row->nulls[k];
	return true;
}

void
model_rows_begin(ModelRows *rs, ModelTable t, const char *schema, const char *base)
{
	char	   *name = psprintf("%s_%s", base, tables[t].suffix);
	Oid			relid = get_relname_relid(name, get_namespace_oid(schema, false));

	if (!OidIsValid(relid))
		elog(ERROR, "table %s.%s not found", schema, name);
	rs->table = t;
	rs->rel = quote_qualified_identifier(schema, name);
	rs->desc = lookup_rowtype_tupdesc_copy(get_rel_type_id(relid), -1);
	rs->n = 0;
	rs->size = 16;
	rs->rows = palloc(sizeof(Datum) * rs->size);
	/* a datum of a declared type goes only into a column of that type */
	for (int a = 0; a < rs->desc->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(rs->desc, a);
		int			k = att->attisdropped ? -1 : row_index(t, NameStr(att->attname));

		if (k >= 0 && att->atttypid != model_schema_column(t, NameStr(att->attname)).type)
			ereport(ERROR,
					(errcode(PERPCA_ERRCODE_MODEL_DAMAGED),
					 errmsg("column %s of %s has type %s, not %s", quote_identifier(NameStr(att->attname)), rs->rel,
							format_type_be(att->atttypid), format_type_be(model_schema_column(t, NameStr(att->attname)).type)),
					 errhint("perpca writes a model only into the tables it creates.")));
	}
}

void
model_rows_add(ModelRows *rs, const ModelRow *row)
{
	Datum	   *values = palloc0(sizeof(Datum) * rs->desc->natts);
	bool	   *nulls = palloc(sizeof(bool) * rs->desc->natts);

	for (int a = 0; a < rs->desc->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(rs->desc, a);

		nulls[a] = true;
		if (!att->attisdropped)
			(void) model_row_get(row, NameStr(att->attname), &values[a], &nulls[a]);
	}
	if (rs->n == rs->size)
		rs->rows = repalloc_huge(rs->rows, sizeof(Datum) * (rs->size *= 2));
	rs->rows[rs->n++] = heap_copy_tuple_as_datum(heap_form_tuple(rs->desc, values, nulls), rs->desc);
}

void
model_rows_insert(ModelRows *rs)
{
	StringInfoData names,
				fields;
	Oid			type = get_array_type(rs->desc->tdtypeid);
	Datum		rows;

	if (rs->n == 0)
		return;
	initStringInfo(&names);
	initStringInfo(&fields);
	for (int a = 0; a < rs->desc->natts; a++)
	{
		const char *name = NameStr(TupleDescAttr(rs->desc, a)->attname);

		if (TupleDescAttr(rs->desc, a)->attisdropped || row_index(rs->table, name) < 0)
			continue;
		appendStringInfo(&names, "%s%s", names.len > 0 ? ", " : "", quote_identifier(name));
		appendStringInfo(&fields, "%sr.%s", fields.len > 0 ? ", " : "", quote_identifier(name));
	}
	rows = PointerGetDatum(construct_array(rs->rows, rs->n, rs->desc->tdtypeid, -1, false, TYPALIGN_DOUBLE));
	if (SPI_execute_with_args(psprintf("INSERT INTO %s (%s) SELECT %s FROM pg_catalog.unnest($1) AS r",
									   rs->rel, names.data, fields.data),
							  1, &type, &rows, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not insert into %s", rs->rel);
}
