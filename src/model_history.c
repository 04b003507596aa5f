/*
 * model_history.c -- perpca_model_history(): a model's history, read as
 * model_read.c reads a model
 *
 * Every perpca_train and perpca_refresh appends one row to <model>_history
 * (sql/create_or_replace/40_models.sql, perpca_internal.history_append, as
 * the model's owner).  The table belongs to the model's owner, who could
 * replace it by a view or give its columns types of her own; so it is read
 * here without SQL: found and locked after the model's three tables (the
 * one lock order of model_lock.c), checked to be a plain table of the
 * model's owner with the built-in column types it was created with, the
 * caller must have SELECT on <model>_info (so the history shows no more
 * than the model does) and on the columns read, no row-level security may
 * apply, and the rows come straight from the table access method.
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
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "model_lock.h"
#include "perpca.h"

PG_FUNCTION_INFO_V1(perpca_model_history);

/* The columns returned, in order, as stored; entry (the order) is required. */
typedef struct HistoryColumn
{
	const char *name;
	Oid			type;
} HistoryColumn;

static const HistoryColumn history_columns[] = {
	{"version", INT8OID}, {"at", TIMESTAMPTZOID}, {"kind", TEXTOID}, {"clients", INT4OID},
	{"rows", INT8OID}, {"rounds_run", INT4OID}, {"converged", BOOLOID}, {"objective", FLOAT8OID},
	{"seconds", FLOAT8OID}, {"role", NAMEOID}, {"warning", TEXTOID}, {"entry", INT4OID},
	{"outcome", TEXTOID}, {"starts", JSONBOID}, {"clients_added", INT4OID},
	{"clients_dropped", INT4OID}, {"warm_start", BOOLOID}
};
#define H_NCOLS lengthof(history_columns)
#define H_ENTRY 11

typedef struct HistoryRow
{
	int32		entry;
	Datum		values[H_NCOLS];
	bool		nulls[H_NCOLS];
} HistoryRow;

/* The attribute number of column col of rel, checked for its type; InvalidAttrNumber when absent. */
static AttrNumber
history_attnum(Relation rel, const HistoryColumn *col, const char *model)
{
	TupleDesc	desc = RelationGetDescr(rel);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped || strcmp(NameStr(att->attname), col->name) != 0)
			continue;
		if (att->atttypid != col->type)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of %s has type %s, expected %s", col->name,
							model_relid_name(RelationGetRelid(rel)), format_type_be(att->atttypid),
							format_type_be(col->type)),
					 errdetail("The history of model \"%s\" is not as perpca stores it.", model)));
		return att->attnum;
	}
	return InvalidAttrNumber;
}

static int
history_row_cmp(const void *a, const void *b)
{
	int32		x = (*(HistoryRow *const *) a)->entry;
	int32		y = (*(HistoryRow *const *) b)->entry;

	return (x > y) - (x < y);
}

/*
 * perpca_model_history(model text) RETURNS TABLE (version, at, kind,
 *   clients, rows, rounds_run, converged, objective, seconds, role, warning,
 *   entry, outcome, starts, clients_added, clients_dropped, warm_start)
 */
Datum
perpca_model_history(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *model = text_to_cstring(PG_GETARG_TEXT_PP(0));
	Oid			user = GetUserId();
	ModelLock	ml;
	Oid			history;
	Relation	rel;
	AttrNumber	att[H_NCOLS];
	Snapshot	snap;
	TableScanDesc scan;
	TupleTableSlot *slot;
	HistoryRow **rows;
	int			nrows = 0,
				maxrows = 16;

	InitMaterializedSRF(fcinfo, 0);
	model_lock(&ml, model, MODEL_LOCK_READ, true, false);
	/* No more of the history than of the model. */
	if (pg_class_aclcheck(ml.relid[MODEL_REL_INFO], user, ACL_SELECT) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, get_rel_name(ml.relid[MODEL_REL_INFO]));
	history = model_lock_history(&ml, MODEL_LOCK_READ, true);
	if (!OidIsValid(history))
		return (Datum) 0;		/* stored before 0.3.0 and not refreshed since */
	if (get_rel_relkind(history) != RELKIND_RELATION || model_rel_owner(history) != ml.owner)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("the history of model \"%s\" is not a table of the model's owner", model),
				 errdetail("%s is not a plain table owned by role \"%s\".", model_relid_name(history),
						   GetUserNameFromId(ml.owner, true)),
				 errhint("perpca reads a history only from the table it creates; drop \"%s\" and the next refresh starts a new one.",
						 get_rel_name(history))));
	rel = relation_open(history, NoLock);
	for (int c = 0; c < (int) H_NCOLS; c++)
		att[c] = history_attnum(rel, &history_columns[c], model);
	if (!AttributeNumberIsValid(att[H_ENTRY]))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"entry\" of %s does not exist", model_relid_name(history)),
				 errdetail("The history of model \"%s\" is not as perpca stores it.", model)));
	if (pg_class_aclcheck(history, user, ACL_SELECT) != ACLCHECK_OK)
		for (int c = 0; c < (int) H_NCOLS; c++)
			if (AttributeNumberIsValid(att[c]) &&
				pg_attribute_aclcheck(history, att[c], user, ACL_SELECT) != ACLCHECK_OK)
				aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, RelationGetRelationName(rel));
	if (check_enable_rls(history, InvalidOid, false) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("the history of model \"%s\" cannot be read under row-level security", model),
				 errhint("perpca reads a history whole; disable row-level security on %s.",
						 model_relid_name(history))));

	/* The rows, copied out of the buffers, then in entry order. */
	rows = palloc(sizeof(HistoryRow *) * maxrows);
	snap = ActiveSnapshotSet() ? GetActiveSnapshot() : GetTransactionSnapshot();
	scan = table_beginscan(rel, snap, 0, NULL);
	slot = table_slot_create(rel, NULL);
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		HistoryRow *row = palloc(sizeof(HistoryRow));

		CHECK_FOR_INTERRUPTS();
		for (int c = 0; c < (int) H_NCOLS; c++)
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
			get_typlenbyval(history_columns[c].type, &typlen, &typbyval);
			row->values[c] = row->nulls[c] ? (Datum) 0 : datumCopy(v, typbyval, typlen);
		}
		if (row->nulls[H_ENTRY])
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the history of model \"%s\" has a row without entry", model)));
		row->entry = DatumGetInt32(row->values[H_ENTRY]);
		if (nrows == maxrows)
		{
			maxrows *= 2;
			rows = repalloc(rows, sizeof(HistoryRow *) * maxrows);
		}
		rows[nrows++] = row;
	}
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
	relation_close(rel, NoLock);

	qsort(rows, nrows, sizeof(HistoryRow *), history_row_cmp);
	for (int i = 0; i < nrows; i++)
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, rows[i]->values, rows[i]->nulls);
	return (Datum) 0;
}
