/*
 * model_history.c -- perpca_model_history(): a model's history, read as
 * model_read.c reads a model
 *
 * The table belongs to the model's owner, who could replace it by a view or
 * give its columns types of her own; so it is read without SQL: locked
 * after the model's three tables (model_lock.c), checked to be a plain
 * table of the owner with the declared column types, readable whole by the
 * caller (who must also have SELECT on <model>_info), straight from the
 * table access method.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/tableam.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "error_kinds.h"
#include "model_lock.h"
#include "model_read.h"
#include "perpca.h"

PG_FUNCTION_INFO_V1(perpca_model_history);

/*
 * The columns returned are those of the function's result (desc), by name;
 * their types are model_schema.c's declaration of the history's columns.
 */
typedef struct HistoryRow
{
	int32		entry;
	Datum		values[MODEL_MAX_COLUMNS];
	bool		nulls[MODEL_MAX_COLUMNS];
} HistoryRow;

/* The name of result column c. */
#define H_NAME(desc, c) NameStr(TupleDescAttr(desc, c)->attname)

static int
history_row_cmp(const void *a, const void *b)
{
	int32		x = (*(HistoryRow *const *) a)->entry;
	int32		y = (*(HistoryRow *const *) b)->entry;

	return (x > y) - (x < y);
}

/*
 * Lock the model and its history (model_lock.c's order) and open the
 * history, checked to be a plain table of the model's owner with the
 * columns perpca gives it (their numbers into att) that the caller may read
 * whole; NULL when the model has no history.
 */
static Relation
history_open(const char *model, TupleDesc desc, AttrNumber *att)
{
	ModelLock	ml;
	Oid			history;
	Relation	rel;
	char	   *detail;

	model_lock(&ml, model, MODEL_LOCK_READ, true, false);
	/* No more of the history than of the model. */
	if (pg_class_aclcheck(ml.relid[MODEL_REL_INFO], GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, get_rel_name(ml.relid[MODEL_REL_INFO]));
	history = model_lock_history(&ml, MODEL_LOCK_READ, true);
	if (!OidIsValid(history))
		return NULL;			/* stored before 0.3.0 and not refreshed since */
	if (get_rel_relkind(history) != RELKIND_RELATION || model_rel_owner(history) != ml.owner)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_WRONG_OBJECT),
				 errmsg("the history of model \"%s\" is not a table of the model's owner", model),
				 errdetail("%s is not a plain table owned by role \"%s\".", model_relid_name(history),
						   GetUserNameFromId(ml.owner, true)),
				 errhint("perpca reads a history only from the table it creates; drop \"%s\" and the next refresh starts a new one.",
						 get_rel_name(history))));
	rel = relation_open(history, NoLock);
	detail = psprintf("The history of model \"%s\" is not as perpca stores it.", model);
	for (int c = 0; c < desc->natts; c++)
	{
		ModelColumn col = model_schema_column(MODEL_TABLE_HISTORY, H_NAME(desc, c));

		att[c] = model_column_attnum(rel, &col, detail);
	}
	model_check_readable(rel, att, desc->natts, psprintf("the history of model \"%s\"", model),
						 psprintf("perpca reads a history whole; disable row-level security on %s.",
								  model_relid_name(history)));
	return rel;
}

/* One row of the history, copied out of the buffer (absent columns NULL). */
static HistoryRow *
history_row(TupleTableSlot *slot, TupleDesc desc, const AttrNumber *att, const char *model)
{
	HistoryRow *row = palloc(sizeof(HistoryRow));
	int			entry = -1;

	for (int c = 0; c < desc->natts; c++)
	{
		int16		typlen;
		bool		typbyval;
		Datum		v;

		if (!AttributeNumberIsValid(att[c]))
		{
			row->nulls[c] = true;
			row->values[c] = (Datum) 0;
			continue;
		}
		v = slot_getattr(slot, att[c], &row->nulls[c]);
		get_typlenbyval(model_schema_column(MODEL_TABLE_HISTORY, H_NAME(desc, c)).type, &typlen, &typbyval);
		if (strcmp(H_NAME(desc, c), "entry") == 0)
			entry = c;
		row->values[c] = row->nulls[c] ? (Datum) 0 : datumCopy(v, typbyval, typlen);
	}
	if (entry < 0 || row->nulls[entry])
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_MODEL_DAMAGED),
				 errmsg("the history of model \"%s\" has a row without entry", model)));
	row->entry = DatumGetInt32(row->values[entry]);
	return row;
}

/* The rows of the history (*nrows), in entry order. */
static HistoryRow **
history_rows(Relation rel, TupleDesc desc, const AttrNumber *att, const char *model, int *nrows)
{
	int			maxrows = 16;
	HistoryRow **rows = palloc(sizeof(HistoryRow *) * maxrows);
	Snapshot	snap = ActiveSnapshotSet() ? GetActiveSnapshot() : GetTransactionSnapshot();
	TableScanDesc scan = table_beginscan(rel, snap, 0, NULL);
	TupleTableSlot *slot = table_slot_create(rel, NULL);

	*nrows = 0;
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		CHECK_FOR_INTERRUPTS();
		if (*nrows == maxrows)
		{
			maxrows *= 2;
			rows = repalloc(rows, sizeof(HistoryRow *) * maxrows);
		}
		rows[(*nrows)++] = history_row(slot, desc, att, model);
	}
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
	qsort(rows, *nrows, sizeof(HistoryRow *), history_row_cmp);
	return rows;
}

/*
 * perpca_model_history(model text) RETURNS TABLE (version, at, kind,
 *   clients, rows, rounds_run, converged, objective, seconds, role, warning,
 *   entry, outcome, starts, clients_added, clients_dropped, warm_start, sketch_bound)
 */
Datum
perpca_model_history(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *model = text_to_cstring(PG_GETARG_TEXT_PP(0));
	AttrNumber	att[MODEL_MAX_COLUMNS];
	Relation	rel;
	HistoryRow **rows;
	int			nrows;

	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts > MODEL_MAX_COLUMNS)
		elog(ERROR, "perpca_model_history returns more columns than a history has");
	rel = history_open(model, rsinfo->setDesc, att);
	if (rel == NULL)
		return (Datum) 0;
	rows = history_rows(rel, rsinfo->setDesc, att, model, &nrows);
	relation_close(rel, NoLock);
	for (int i = 0; i < nrows; i++)
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, rows[i]->values, rows[i]->nulls);
	return (Datum) 0;
}
