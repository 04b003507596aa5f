/*
 * citus_placement.c -- a model table that Citus replicates, read through
 * this node's own copy
 *
 * On Citus a stored model is made available on every node by turning its
 * three tables into reference tables (create_reference_table).  Each node
 * then holds the rows in a local shard, a plain table named
 * <table>_<shardid> in the same schema, while the table of the model's name
 * is an empty "shell" that only Citus' planner knows how to read.  A
 * projection pushed down to a worker (SELECT perpca_model_error('m', ...)
 * FROM dist_table) runs inside a query on a shard, where Citus refuses any
 * further distributed query; model_read.c reads heaps directly, so it is
 * given the local shard instead of the shell.
 *
 * Everything here reads Citus' catalog tables (pg_dist_partition,
 * pg_dist_shard) straight from the heap, without SQL and without linking to
 * Citus; without Citus (no pg_dist_partition) a relation maps to itself
 * after one catalog cache lookup.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/skey.h"
#include "access/stratnum.h"
#include "access/tableam.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "executor/tuptable.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "citus_placement.h"
#include "error_kinds.h"

/* A scan of one of Citus' catalog tables for the rows of one logicalrelid. */
typedef struct CatalogScan
{
	Relation	rel;
	TableScanDesc scan;
	TupleTableSlot *slot;
} CatalogScan;

/* Begin the scan of pg_catalog.<catalog> WHERE logicalrelid = relid; false if there is no such catalog. */
static bool
catalog_scan_begin(CatalogScan *cs, const char *catalog, Oid relid)
{
	Oid			catoid = get_relname_relid(catalog, PG_CATALOG_NAMESPACE);
	AttrNumber	att;
	ScanKeyData *key;

	if (!OidIsValid(catoid))
		return false;
	cs->rel = relation_open(catoid, AccessShareLock);
	att = get_attnum(catoid, "logicalrelid");
	if (att == InvalidAttrNumber)
		elog(ERROR, "pg_catalog.%s has no column logicalrelid", catalog);
	key = palloc(sizeof(ScanKeyData));
	ScanKeyInit(key, att, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	cs->scan = table_beginscan(cs->rel, GetCatalogSnapshot(catoid), 1, key);
	cs->slot = table_slot_create(cs->rel, NULL);
	return true;
}

static bool
catalog_scan_next(CatalogScan *cs)
{
	return table_scan_getnextslot(cs->scan, ForwardScanDirection, cs->slot);
}

/* A column of the current row by name (must not be NULL). */
static Datum
catalog_value(CatalogScan *cs, const char *column)
{
	AttrNumber	att = get_attnum(RelationGetRelid(cs->rel), column);
	bool		isnull;
	Datum		v;

	if (att == InvalidAttrNumber)
		elog(ERROR, "Citus catalog %s has no column %s", RelationGetRelationName(cs->rel), column);
	v = slot_getattr(cs->slot, att, &isnull);
	if (isnull)
		elog(ERROR, "Citus catalog %s has a NULL %s", RelationGetRelationName(cs->rel), column);
	return v;
}

static void
catalog_scan_end(CatalogScan *cs)
{
	ExecDropSingleTupleTableSlot(cs->slot);
	table_endscan(cs->scan);
	relation_close(cs->rel, AccessShareLock);
}

/* Citus' partition method of relid ('h' hash, 'n' reference or local, ...), or 0 for a plain table. */
static char
citus_partmethod(Oid relid)
{
	CatalogScan cs;
	char		method = 0;

	if (!catalog_scan_begin(&cs, "pg_dist_partition", relid))
		return 0;
	if (catalog_scan_next(&cs))
		method = DatumGetChar(catalog_value(&cs, "partmethod"));
	catalog_scan_end(&cs);
	return method;
}

/* The shard id of a single-shard Citus table. */
static int64
citus_single_shard(Oid relid)
{
	CatalogScan cs;
	int64		shardid = 0;
	int			n = 0;

	if (!catalog_scan_begin(&cs, "pg_dist_shard", relid))
		elog(ERROR, "pg_catalog.pg_dist_shard does not exist");
	while (catalog_scan_next(&cs))
	{
		shardid = DatumGetInt64(catalog_value(&cs, "shardid"));
		n++;
	}
	catalog_scan_end(&cs);
	if (n != 1)
		elog(ERROR, "Citus table %s has %d shards, expected one", get_rel_name(relid), n);
	return shardid;
}

/* Do the two relations have the same owner? */
static bool
owned_alike(Oid a, Oid b)
{
	HeapTuple	ta = SearchSysCache1(RELOID, ObjectIdGetDatum(a));
	HeapTuple	tb = SearchSysCache1(RELOID, ObjectIdGetDatum(b));
	bool		same;

	if (!HeapTupleIsValid(ta) || !HeapTupleIsValid(tb))
		elog(ERROR, "cache lookup failed for relation %u or %u", a, b);
	same = ((Form_pg_class) GETSTRUCT(ta))->relowner == ((Form_pg_class) GETSTRUCT(tb))->relowner;
	ReleaseSysCache(ta);
	ReleaseSysCache(tb);
	return same;
}

Oid
perpca_citus_local_placement(Oid relid, const char *model)
{
	char		method = citus_partmethod(relid);
	char	   *name;
	char	   *shard;
	Oid			shardrel;

	if (method == 0)
		return relid;
	name = get_rel_name(relid);
	if (method != 'n')
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_UNSUPPORTED),
				 errmsg("model \"%s\" is stored in a distributed table", model),
				 errdetail("Citus distributes %s by a column (partition method '%c').", name, method),
				 errhint("Make the three tables of the model reference tables with create_reference_table().")));
	shard = psprintf("%s_" INT64_FORMAT, name, citus_single_shard(relid));
	if (strlen(shard) >= NAMEDATALEN)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_MODEL_NAME_LONG),
				 errmsg("model \"%s\" has a name too long to find its Citus shards", model),
				 errdetail("The shard of %s would be named \"%s\".", name, shard),
				 errhint("Use a model name of at most %d characters on Citus.", NAMEDATALEN - 30)));
	shardrel = get_relname_relid(shard, get_rel_namespace(relid));
	if (!OidIsValid(shardrel))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_UNSUPPORTED),
				 errmsg("model \"%s\" has no copy on this node", model),
				 errdetail("%s is a Citus table without a placement on this node.", name),
				 errhint("Make the three tables of the model reference tables with create_reference_table().")));
	LockRelationOid(shardrel, AccessShareLock);
	if (!owned_alike(shardrel, relid))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NOT_OWNER),
				 errmsg("the local copy of model \"%s\" has another owner than its table", model),
				 errdetail("Relation %s is not owned by the owner of %s.", shard, name)));
	return shardrel;
}
