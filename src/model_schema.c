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

/* A column: its table, name, type, constraint (or NULL), the version that added it, and (history) the info column it repeats. */
typedef struct ColumnDecl
{
	ModelTable	table;
	const char *name;
	Oid			type;
	const char *constraint;
	const char *since;
	const char *from;
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
	{I, "model", TEXTOID, "PRIMARY KEY", "0.1.0", NULL},
	{I, "d", INT4OID, NN, "0.1.0", NULL},
	{I, "n_global", INT4OID, NN, "0.1.0", NULL},
	{I, "n_local", INT4OID, NULL, "0.1.0", NULL},
	{I, "n_clients", INT4OID, NN, "0.1.0", NULL},
	{I, "method", TEXTOID, NULL, "0.1.0", NULL},
	{I, "rounds_max", INT4OID, NULL, "0.1.0", NULL},
	{I, "tolerance", FLOAT8OID, NULL, "0.1.0", NULL},
	{I, "step", FLOAT8OID, NULL, "0.1.0", NULL},
	{I, "adaptive", BOOLOID, NULL, "0.1.0", NULL},
	{I, "update", TEXTOID, NULL, "0.1.0", NULL},
	{I, "retraction", TEXTOID, NULL, "0.1.0", NULL},
	{I, "init", TEXTOID, NULL, "0.1.0", NULL},
	{I, "seed", INT8OID, NULL, "0.1.0", NULL},
	{I, "center", TEXTOID, NN, "0.1.0", NULL},
	{I, "weights", TEXTOID, NULL, "0.1.0", NULL},
	{I, "source_query", TEXTOID, NN, "0.1.0", NULL},
	{I, "rounds", INT4OID, NULL, "0.1.0", NULL},
	{I, "converged", BOOLOID, NULL, "0.1.0", NULL},
	{I, "objective", FLOAT8OID, NULL, "0.1.0", NULL},
	{I, "kkt_residual", FLOAT8OID, NULL, "0.1.0", NULL},
	{I, "theta_est", FLOAT8OID, NULL, "0.1.0", NULL},
	{I, "step_used", FLOAT8OID, NULL, "0.1.0", NULL},
	{I, "fit_seconds", FLOAT8OID, NULL, "0.1.0", NULL},
	{I, "global_mean", FLOAT8ARRAYOID, NN, "0.1.0", NULL},
	{I, "total_variance", FLOAT8OID, NULL, "0.1.0", NULL},
	{I, "fitted_at", TIMESTAMPTZOID, NN, "0.1.0", NULL},
	{I, "version", INT8OID, NN, "0.1.0", NULL},
	{I, "client_type", TEXTOID, NULL, "0.2.0", NULL},
	{I, "options", JSONBOID, NULL, "0.2.0", NULL},
	{I, "scale_factors", FLOAT8ARRAYOID, NULL, "0.2.0", NULL},
	{I, "constant_features", INT4ARRAYOID, NULL, "0.2.0", NULL},
	{I, "search_path", TEXTOID, NULL, "0.3.0", NULL},
	{I, "feature_names", TEXTARRAYOID, NULL, "0.3.0", NULL},
	{I, "stats_digest", TEXTOID, NULL, "0.3.0", NULL},
	{I, "source_view", TEXTOID, NULL, "0.4.0", NULL},
	{I, "sketch_bound", FLOAT8OID, NULL, "0.4.0", NULL},
	{I, "calibration", FLOAT8OID, NULL, "0.5.0", NULL},
	{I, "calibration_split", TEXTOID, NULL, "0.5.0", NULL},
	{I, "calibration_rows", INT8OID, NULL, "0.5.0", NULL},
	{I, "calibration_scores", FLOAT8ARRAYOID, NULL, "0.5.0", NULL},
	{I, "flagged_gaussian", FLOAT8OID, NULL, "0.5.0", NULL},
	{I, "flagged_calibrated", FLOAT8OID, NULL, "0.5.0", NULL},

	{C, "client", TEXTOID, "PRIMARY KEY", "0.1.0", NULL},
	{C, "n", INT8OID, NN, "0.1.0", NULL},
	{C, "mean", FLOAT8ARRAYOID, NN, "0.1.0", NULL},
	{C, "n_local", INT4OID, NN, "0.1.0", NULL},
	{C, "total_variance", FLOAT8OID, NULL, "0.1.0", NULL},
	{C, "global_ratio", FLOAT8OID, NULL, "0.1.0", NULL},
	{C, "local_ratio", FLOAT8OID, NULL, "0.1.0", NULL},
	{C, "residual_ratio", FLOAT8OID, NULL, "0.1.0", NULL},
	{C, "train_error", FLOAT8OID, NULL, "0.1.0", NULL},
	{C, "source", TEXTOID, ONE_OF("source", "'fit', 'personalize'"), "0.1.0", NULL},
	{C, "score_covariance", FLOAT8ARRAYOID, NULL, "0.3.0", NULL},
	{C, "residual_moments", FLOAT8ARRAYOID, NULL, "0.3.0", NULL},
	{C, "sketch_bound", FLOAT8OID, NULL, "0.4.0", NULL},
	{C, "calibration_rows", INT8OID, NULL, "0.5.0", NULL},
	{C, "calibration_scores", FLOAT8ARRAYOID, NULL, "0.5.0", NULL},

	{K, "client", TEXTOID, NULL, "0.1.0", NULL},
	{K, "kind", TEXTOID, ONE_OF("kind", "'global', 'local'"), "0.1.0", NULL},
	{K, "component", INT4OID, "NOT NULL CHECK (component OPERATOR(pg_catalog.>=) 1)", "0.1.0", NULL},
	{K, "pc", FLOAT8ARRAYOID, NN, "0.1.0", NULL},
	{K, "variance", FLOAT8OID, NULL, "0.1.0", NULL},

	{H, "entry", INT4OID, "PRIMARY KEY CHECK (entry OPERATOR(pg_catalog.>=) 1)", "0.3.0", NULL},
	{H, "version", INT8OID, NULL, "0.3.0", "version"},
	{H, "at", TIMESTAMPTZOID, NN, "0.3.0", NULL},
	{H, "kind", TEXTOID, ONE_OF("kind", "'train', 'refresh'"), "0.3.0", NULL},
	{H, "clients", INT4OID, NULL, "0.3.0", "n_clients"},
	{H, "rows", INT8OID, NULL, "0.3.0", NULL},
	{H, "rounds_run", INT4OID, NULL, "0.3.0", "rounds"},
	{H, "converged", BOOLOID, NULL, "0.3.0", "converged"},
	{H, "objective", FLOAT8OID, NULL, "0.3.0", "objective"},
	{H, "seconds", FLOAT8OID, NULL, "0.3.0", NULL},
	{H, "role", NAMEOID, NULL, "0.3.0", NULL},
	{H, "warning", TEXTOID, NULL, "0.3.0", NULL},
	{H, "outcome", TEXTOID, ONE_OF("outcome", "'fitted', 'unchanged', 'failed'"), "0.3.0", NULL},
	{H, "starts", JSONBOID, NULL, "0.3.0", NULL},
	{H, "clients_added", INT4OID, NULL, "0.3.0", NULL},
	{H, "clients_dropped", INT4OID, NULL, "0.3.0", NULL},
	{H, "warm_start", BOOLOID, NULL, "0.3.0", NULL},
	{H, "digest", TEXTOID, NULL, "0.3.0", "stats_digest"},
	{H, "sketch_bound", FLOAT8OID, NULL, "0.4.0", "sketch_bound"},
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

/* The declaration of column name of table t and its position among t's (*k), or NULL; name NULL: *k is their number. */
static const ColumnDecl *
column_find(ModelTable t, const char *name, int *k)
{
	*k = 0;
	for (int i = 0; i < (int) lengthof(columns); i++)
		if (columns[i].table == t)
		{
			if (name != NULL && strcmp(columns[i].name, name) == 0)
				return &columns[i];
			(*k)++;
		}
	*k = name == NULL ? *k : -1;
	return NULL;
}

/* The declaration of column name of table t (an unknown name is a bug: elog), its position into *k. */
static const ColumnDecl *
column_get(ModelTable t, const char *name, int *k)
{
	const ColumnDecl *c = column_find(t, name, k);

	if (c == NULL)
		elog(ERROR, "model table \"%s\" declares no column \"%s\"", tables[t].suffix, name);
	return c;
}

const char *
model_table_suffix(ModelTable t)
{
	return tables[t].suffix;
}

ModelColumn
model_schema_column(ModelTable t, const char *name)
{
	int			k;
	const ColumnDecl *c = column_get(t, name, &k);
	ModelColumn col = {c->name, c->type, column_added_later(c)};

	return col;
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

void
model_row_init(ModelRow *row, ModelTable t)
{
	int			n;

	(void) column_find(t, NULL, &n);
	if (n > MODEL_MAX_COLUMNS)
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
	int			k;

	(void) column_get(row->table, name, &k);
	row->values[k] = isnull ? (Datum) 0 : value;
	row->nulls[k] = isnull;
}

bool
model_row_get(const ModelRow *row, const char *name, Datum *value, bool *isnull)
{
	int			k;

	if (column_find(row->table, name, &k) == NULL)
		return false;
	*value = row->values[k];
	*isnull = row->nulls[k];
	return true;
}

void
model_row_from_tuple(ModelRow *row, ModelTable t, HeapTuple tup, TupleDesc desc)
{
	model_row_init(row, t);
	for (int a = 0; a < desc->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);
		int			k;

		if (!att->attisdropped && column_find(t, NameStr(att->attname), &k) != NULL)
			row->values[k] = heap_getattr(tup, a + 1, desc, &row->nulls[k]);
	}
}

void
model_row_history_of(ModelRow *history, const ModelRow *info)
{
	model_row_init(history, MODEL_TABLE_HISTORY);
	for (int i = 0; i < (int) lengthof(columns); i++)
		if (columns[i].from != NULL)
		{
			Datum		v = (Datum) 0;
			bool		isnull = true;

			(void) model_row_get(info, columns[i].from, &v, &isnull);
			model_row_set(history, columns[i].name, v, isnull);
		}
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
	rs->slot = palloc(sizeof(int) * Max(rs->desc->natts, 1));
	/* a datum of a declared type goes only into a column of that type */
	for (int a = 0; a < rs->desc->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(rs->desc, a);
		int			k = -1;
		const ColumnDecl *c = att->attisdropped ? NULL : column_find(t, NameStr(att->attname), &k);

		rs->slot[a] = c != NULL ? k : -1;
		if (c != NULL && att->atttypid != c->type)
			ereport(ERROR,
					(errcode(PERPCA_ERRCODE_MODEL_DAMAGED),
					 errmsg("column %s of %s has type %s, not %s", quote_identifier(c->name), rs->rel,
							format_type_be(att->atttypid), format_type_be(c->type)),
					 errhint("perpca writes a model only into the tables it creates.")));
	}
}

void
model_rows_add(ModelRows *rs, const ModelRow *row)
{
	Datum	   *values = palloc0(sizeof(Datum) * rs->desc->natts);
	bool	   *nulls = palloc(sizeof(bool) * rs->desc->natts);

	/* the columns were matched by name once, at model_rows_begin */
	for (int a = 0; a < rs->desc->natts; a++)
	{
		int			k = rs->slot[a];

		values[a] = k >= 0 ? row->values[k] : (Datum) 0;
		nulls[a] = k >= 0 ? row->nulls[k] : true;
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
		int			k;

		if (TupleDescAttr(rs->desc, a)->attisdropped || column_find(rs->table, name, &k) == NULL)
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
