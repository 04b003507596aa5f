/*
 * model_schema.h -- the columns of a model's tables, declared once
 * (model_schema.c): from that declaration come the CREATE TABLE of a new
 * model, the ADD COLUMNs that bring an older model's tables up to date,
 * the rows of each table's INSERT, and the types (and whether an older
 * model may lack them) the checked readers expect.
 */
#ifndef PERPCA_MODEL_SCHEMA_H
#define PERPCA_MODEL_SCHEMA_H

#include "postgres.h"

#include "utils/relcache.h"

/* The tables of a model; the first three in model_lock.h's lock order (MODEL_REL_*). */
typedef enum ModelTable
{
	MODEL_TABLE_INFO, MODEL_TABLE_CLIENTS, MODEL_TABLE_COMPONENTS, MODEL_TABLE_HISTORY, MODEL_NTABLES
} ModelTable;

/* A column a reader reads from a table perpca stores, its type, and whether older tables lack it. */
typedef struct ModelColumn
{
	const char *name;
	Oid			type;
	bool		optional;		/* absent: InvalidAttrNumber (read as NULL) */
} ModelColumn;

/* The suffix of a table's name ("info": <base>_info). */
extern const char *model_table_suffix(ModelTable t);

/* The declared column name of table t, as its readers expect it (an unknown name is a bug: elog). */
extern ModelColumn model_schema_column(ModelTable t, const char *name);

/* CREATE TABLE t of model schema.base (every declared column, its constraints, its comment), under SPI. */
extern void model_schema_create(ModelTable t, const char *schema, const char *base);

/* Add to table relid (table t of a model) the declared columns it lacks, under SPI; whether any. */
extern bool model_schema_add_missing(ModelTable t, Oid relid);

/* The most columns a table declares. */
#define MODEL_MAX_COLUMNS 64

/* One row of table t, by declared column (model_row_set); NULL where not set. */
typedef struct ModelRow
{
	ModelTable	table;
	Datum		values[MODEL_MAX_COLUMNS];
	bool		nulls[MODEL_MAX_COLUMNS];
} ModelRow;

extern void model_row_init(ModelRow *row, ModelTable t);

/* Set (or with isnull, clear) the declared column name of row (an unknown name is a bug: elog). */
extern void model_row_set(ModelRow *row, const char *name, Datum value, bool isnull);

/* The value of the declared column name of row; false when t declares no such column. */
extern bool model_row_get(const ModelRow *row, const char *name, Datum *value, bool *isnull);

/* The declared columns of table t from tup (of desc): a column the table lacks is NULL. */
extern void model_row_from_tuple(ModelRow *row, ModelTable t, HeapTuple tup, TupleDesc desc);

/* A history row with the columns that repeat the info row (version, clients, rounds_run, ...) from info. */
extern void model_row_history_of(ModelRow *history, const ModelRow *info);

/* The rows of one INSERT into a table of a model, each of the table's row type. */
typedef struct ModelRows
{
	ModelTable	table;
	const char *rel;
	TupleDesc	desc;
	int		   *slot;			/* per attribute of desc: its place in a ModelRow, or -1 */
	int			n;
	int			size;
	Datum	   *rows;
} ModelRows;

/* Begin the rows of table t of model schema.base; 22P.. (damaged) when a declared column has another type. */
extern void model_rows_begin(ModelRows *rs, ModelTable t, const char *schema, const char *base);

/* Add row (its declared columns by name; the table's others NULL). */
extern void model_rows_add(ModelRows *rs, const ModelRow *row);

/* Insert the rows with one INSERT, under SPI: one parameter, an array of the table's row type. */
extern void model_rows_insert(ModelRows *rs);

#endif							/* PERPCA_MODEL_SCHEMA_H */
