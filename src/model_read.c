/*
 * model_read.c -- finding a stored model, checking it and reading it safely
 *
 * A model "m" is three tables written by perpca_train(): m_info (one row),
 * m_clients and m_components.  Whoever owns them can replace them by views,
 * give them row-level security policies or columns of her own types, so
 * reading them with SQL as the caller would run her code with the caller's
 * privileges (a superuser's, say).  This file never runs SQL on them:
 *
 *   1. the three relations are looked up and locked as a SELECT would;
 *   2. each must be a plain table (relkind 'r'), all three of one owner;
 *   3. the caller must have SELECT on the columns read, and no row-level
 *      security may apply to the caller (a policy is code we would have to
 *      run, and skipping it would show rows the owner hid);
 *   4. the columns read must exist with the built-in types perpca_train
 *      gives them (nothing to call but built-in detoasting);
 *   5. the rows are read straight from the table access method under the
 *      statement's snapshot, and sorted and checked here in C.
 *
 * Steps 1-4 and the read of the version run once per statement (cheap:
 * syscache lookups and a one-row scan); the full read happens only when the
 * backend's cache has no data for the model's current version.
 * perpca_model_history() reads a model's history the same way.
 */
#include "postgres.h"

#include <math.h>

#include "access/relation.h"
#include "access/tableam.h"
#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "citus_placement.h"
#include "error_kinds.h"
#include "model_lock.h"
#include "model_read.h"
#include "perpca.h"

PG_FUNCTION_INFO_V1(perpca_model_history);

/* The columns read of each table (model_lock.h's order); their types are model_schema.c's. */
enum
{
	I_VERSION, I_D, I_CENTER, I_GLOBAL_MEAN, I_TOTAL_VARIANCE, I_THETA, I_SCALE, I_CLIENT_TYPE, I_FEATURES, I_NCOLS
};
enum
{
	C_CLIENT, C_MEAN, C_TOTAL_VARIANCE, C_GLOBAL_RATIO, C_N, C_SCORE_COV, C_RESIDUAL, C_NCOLS
};
enum
{
	K_KIND, K_CLIENT, K_COMPONENT, K_PC, K_VARIANCE, K_NCOLS
};
static const char *const read_columns[MODEL_NRELS][I_NCOLS] = {
	{"version", "d", "center", "global_mean", "total_variance", "theta_est", "scale_factors", "client_type",
	"feature_names"},
	{"client", "mean", "total_variance", "global_ratio", "n", "score_covariance", "residual_moments"},
	{"kind", "client", "component", "pc", "variance"},
};
static const int read_ncolumns[MODEL_NRELS] = {I_NCOLS, C_NCOLS, K_NCOLS};

/* The calibration columns (of info, and of clients with "client"), read on demand. */
enum
{
	CAL_ROWS, CAL_SCORES, CAL_CLIENT
};
static const char *const cal_columns[] = {"calibration_rows", "calibration_scores", "client"};

#define MAX_COLUMNS I_NCOLS
StaticAssertDecl((int) MODEL_REL_INFO == (int) MODEL_TABLE_INFO && (int) MODEL_REL_CLIENTS == (int) MODEL_TABLE_CLIENTS &&
				 (int) MODEL_REL_COMPONENTS == (int) MODEL_TABLE_COMPONENTS, "model_lock.h and model_schema.h disagree");

/* The opened relations of a model and the attribute numbers of their columns. */
typedef struct ModelRels
{
	const char *model;			/* the name as given, for messages */
	Relation	rel[MODEL_NRELS];
	AttrNumber	att[MODEL_NRELS][MAX_COLUMNS];
} ModelRels;

/* Raise the error for a model whose tables do not fit together. */
static void
model_damaged(const char *model, const char *detail)
{
	ereport(ERROR,
			(errcode(PERPCA_ERRCODE_MODEL_DAMAGED),
			 errmsg("model \"%s\" is inconsistent", model),
			 errdetail_internal("%s", detail),
			 errhint("Train it again with perpca_train(..., replace => true).")));
}

/* Quoted qualified name of a relation, for messages. */
static char *
rel_name(Relation rel)
{
	return quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
									  RelationGetRelationName(rel));
}

AttrNumber
model_column_attnum(Relation rel, const ModelColumn *col, const char *detail)
{
	AttrNumber	att = get_attnum(RelationGetRelid(rel), col->name);
	Oid			type = att > 0 ? TupleDescAttr(RelationGetDescr(rel), att - 1)->atttypid : InvalidOid;

	if (att > 0 && type != col->type)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_WRONG_TYPE),
				 errmsg("column \"%s\" of %s has type %s, expected %s",
						col->name, rel_name(rel), format_type_be(type), format_type_be(col->type)),
				 errdetail_internal("%s", detail)));
	if (att <= 0 && !col->optional)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_MODEL_COLUMN),
				 errmsg("column \"%s\" of %s does not exist", col->name, rel_name(rel)),
				 errdetail_internal("%s", detail)));
	return att > 0 ? att : InvalidAttrNumber;
}

void
model_check_readable(Relation rel, const AttrNumber *att, int ncols, const char *what,
					 const char *hint)
{
	Oid			relid = RelationGetRelid(rel);
	Oid			user = GetUserId();

	if (pg_class_aclcheck(relid, user, ACL_SELECT) != ACLCHECK_OK)
	{
		for (int c = 0; c < ncols; c++)
			if (AttributeNumberIsValid(att[c]) &&
				pg_attribute_aclcheck(relid, att[c], user, ACL_SELECT) != ACLCHECK_OK)
				aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, RelationGetRelationName(rel));
	}
	if (check_enable_rls(relid, InvalidOid, false) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NOT_OWNER),
				 errmsg("%s cannot be read under row-level security", what),
				 errdetail("Row-level security of %s applies to role \"%s\".",
						   rel_name(rel), GetUserNameFromId(user, true)),
				 errhint("%s", hint)));
}

/* Steps 3 and 4 for the columns cols[0..n) of table t of model: their attribute numbers into att. */
static void
columns_check(Relation rel, ModelTable t, const char *const *cols, int n, AttrNumber *att, const char *model)
{
	char	   *detail = psprintf("Model \"%s\" is not as perpca_train() stores it.", model);

	for (int c = 0; c < n; c++)
	{
		ModelColumn col = model_schema_column(t, cols[c]);

		att[c] = model_column_attnum(rel, &col, detail);
	}
	model_check_readable(rel, att, n, psprintf("model \"%s\"", model),
						 "perpca reads a model whole; disable row-level security on the model's tables.");
}

/*
 * Steps 1-4: find, lock and open the three relations (model_lock.c: one lock
 * order for every function that touches a model; a model dropped meanwhile
 * is undefined_object), each checked.  On Citus, a reference table's rows
 * are read from this node's shard.
 */
static void
rels_open(ModelRels *r, text *model)
{
	ModelLock	ml;

	r->model = text_to_cstring(model);
	model_lock(&ml, r->model, MODEL_LOCK_READ, true, false);
	for (int i = 0; i < MODEL_NRELS; i++)
	{
		r->rel[i] = relation_open(perpca_citus_local_placement(ml.relid[i], ml.base), NoLock);
		columns_check(r->rel[i], (ModelTable) i, read_columns[i], read_ncolumns[i], r->att[i], r->model);
	}
}

/* ------------------------------------------------------------------------
 * Reading rows straight from a table
 * ------------------------------------------------------------------------
 */

/* A scan of one model table under the statement's snapshot; att: its columns'. */
typedef struct ModelScan
{
	TableScanDesc scan;
	TupleTableSlot *slot;
	const AttrNumber *att;
	const char *model;
} ModelScan;

static void
scan_begin(ModelScan *s, Relation rel, const AttrNumber *att, const char *model)
{
	Snapshot	snap = ActiveSnapshotSet() ? GetActiveSnapshot() : GetTransactionSnapshot();

	s->scan = table_beginscan(rel, snap, 0, NULL);
	s->slot = table_slot_create(rel, NULL);
	s->att = att;
	s->model = model;
}

static bool
scan_next(ModelScan *s)
{
	CHECK_FOR_INTERRUPTS();
	return table_scan_getnextslot(s->scan, ForwardScanDirection, s->slot);
}

static void
scan_end(ModelScan *s)
{
	ExecDropSingleTupleTableSlot(s->slot);
	table_endscan(s->scan);
}

/* Column col of the current row; an absent column is NULL. */
static Datum
scan_value(ModelScan *s, int col, bool *isnull)
{
	*isnull = true;
	return AttributeNumberIsValid(s->att[col]) ? slot_getattr(s->slot, s->att[col], isnull) : (Datum) 0;
}

static ModelFloat
scan_float(ModelScan *s, int col)
{
	ModelFloat	f;
	Datum		v = scan_value(s, col, &f.isnull);

	f.value = f.isnull ? 0.0 : DatumGetFloat8(v);
	return f;
}

/* A text column as a C string in cxt, or NULL. */
static char *
scan_text(ModelScan *s, int col, MemoryContext cxt)
{
	bool		isnull;
	Datum		v = scan_value(s, col, &isnull);

	return isnull ? NULL : MemoryContextStrdup(cxt, TextDatumGetCString(v));
}

/*
 * A float8[] column copied into cxt (NULL stays NULL), finite values only;
 * *n its values: expect of them in one dimension when expect >= 0, else any
 * number in up to two.
 */
static double *
scan_floats(ModelScan *s, int col, int expect, int *n, MemoryContext cxt, const char *what)
{
	bool		isnull;
	Datum		v = scan_value(s, col, &isnull);
	ArrayType  *a;
	double	   *copy;

	*n = 0;
	if (isnull)
		return NULL;
	a = DatumGetArrayTypeP(v);
	if (ARR_NDIM(a) > (expect >= 0 ? 1 : 2) || ARR_HASNULL(a) || ARR_ELEMTYPE(a) != FLOAT8OID)
		model_damaged(s->model, psprintf("A %s is not a float8 vector or matrix without NULLs.", what));
	*n = ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a));
	if (expect >= 0 && *n != expect)
		model_damaged(s->model, psprintf("A %s has %d values, the model's dimension is %d.", what, *n, expect));
	copy = MemoryContextAlloc(cxt, sizeof(double) * Max(*n, 1));
	memcpy(copy, ARR_DATA_PTR(a), sizeof(double) * *n);
	for (int i = 0; i < *n; i++)
		if (!isfinite(copy[i]))
			model_damaged(s->model, psprintf("A %s has a NaN or infinite value.", what));
	if ((Pointer) a != DatumGetPointer(v))
		pfree(a);
	return copy;
}

/* A float8[] column of d values, or NULL. */
static double *
scan_vector(ModelScan *s, int col, int d, MemoryContext cxt, const char *what)
{
	int			n;

	return scan_floats(s, col, d, &n, cxt, what);
}

/* The feature names (a text[] of d non-NULL names), or NULL when the column is absent or NULL. */
static char **
scan_names(ModelScan *s, int col, int d, MemoryContext cxt)
{
	bool		isnull;
	Datum		v = scan_value(s, col, &isnull);
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	char	  **names;

	if (isnull)
		return NULL;
	deconstruct_array(DatumGetArrayTypeP(v), TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	if (n != d)
		model_damaged(s->model, psprintf("feature_names has %d names, the model's dimension is %d.", n, d));
	names = MemoryContextAlloc(cxt, sizeof(char *) * d);
	for (int j = 0; j < d; j++)
	{
		if (nulls[j])
			model_damaged(s->model, "A feature name is NULL.");
		names[j] = MemoryContextStrdup(cxt, TextDatumGetCString(elems[j]));
	}
	return names;
}

/*
 * Was rel created (or last changed in pg_class) by a transaction this
 * statement's snapshot does not see?  Then its rows are invisible too: a
 * model dropped and trained again after the statement started.
 */
static bool
rel_newer_than_snapshot(Relation rel)
{
	Snapshot	snap = ActiveSnapshotSet() ? GetActiveSnapshot() : GetTransactionSnapshot();
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(RelationGetRelid(rel)));
	TransactionId xmin;
	bool		newer;

	if (!HeapTupleIsValid(tup))
		return false;
	xmin = HeapTupleHeaderGetXmin(tup->t_data);
	newer = TransactionIdIsNormal(xmin) && !TransactionIdIsCurrentTransactionId(xmin) &&
		XidInMVCCSnapshot(xmin, snap);
	ReleaseSysCache(tup);
	return newer;
}

/*
 * Begin a scan of the info table at its first row.  An empty info table is
 * damage, unless the tables are newer than the statement's snapshot (a model
 * dropped and trained again meanwhile): as of the snapshot the model does
 * not exist (42704), as for a reader that waited for a drop.
 */
static void
info_begin(ModelScan *s, const ModelRels *r)
{
	scan_begin(s, r->rel[MODEL_REL_INFO], r->att[MODEL_REL_INFO], r->model);
	if (scan_next(s))
		return;
	if (rel_newer_than_snapshot(r->rel[MODEL_REL_INFO]))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_UNDEFINED),
				 errmsg("model \"%s\" does not exist", r->model),
				 errdetail("Its tables were created after this statement's snapshot was taken (the model was dropped and trained again meanwhile)."),
				 errhint("Run the statement again to read the new model.")));
	model_damaged(r->model, "The info table must have exactly one row.");
}

/* End the scan of the info table, which must have had one row. */
static void
info_end(ModelScan *s)
{
	if (scan_next(s))
		model_damaged(s->model, "The info table must have exactly one row.");
	scan_end(s);
}

/* The model's version, from its single info row. */
static int64
read_version(const ModelRels *r)
{
	ModelScan	s;
	bool		isnull;
	int64		version;

	info_begin(&s, r);
	version = DatumGetInt64(scan_value(&s, I_VERSION, &isnull));
	if (isnull)
		model_damaged(r->model, "The model has no version.");
	info_end(&s);
	return version;
}

/* ------------------------------------------------------------------------
 * Loading a model
 * ------------------------------------------------------------------------
 */

/* The info row: dimension, centering, pooled mean, total variance, theta, scale, key type, names. */
static void
load_info(ModelData *m, const ModelRels *r)
{
	static const char *const centers[3] = {[CENTER_CLIENT] = "client",[CENTER_GLOBAL] = "global",[CENTER_NONE] = "none"};
	ModelScan	s;
	bool		isnull;
	char	   *center;
	int			k;

	info_begin(&s, r);
	m->d = DatumGetInt32(scan_value(&s, I_D, &isnull));
	if (isnull || m->d < 1 || m->d > PERPCA_MAX_DIM)
		model_damaged(r->model, "The info table has no valid dimension d.");
	center = scan_text(&s, I_CENTER, CurrentMemoryContext);
	for (k = 0; k < 3 && (center == NULL || strcmp(center, centers[k]) != 0); k++)
		;
	if (k == 3)
		model_damaged(r->model, "The center option must be client, global or none.");
	m->center = (ModelCenter) k;
	m->global_mean = scan_vector(&s, I_GLOBAL_MEAN, m->d, m->cxt, "global_mean");
	if (m->global_mean == NULL)
		model_damaged(r->model, "The info table has no global_mean.");
	m->total_variance = scan_float(&s, I_TOTAL_VARIANCE);
	m->theta_est = scan_float(&s, I_THETA);
	m->client_type = scan_text(&s, I_CLIENT_TYPE, m->cxt);
	m->scale = scan_vector(&s, I_SCALE, m->d, m->cxt, "scale_factors");
	for (int j = 0; m->scale != NULL && j < m->d; j++)
		if (!(m->scale[j] > 0.0))
			model_damaged(r->model, "The scale_factors of the info table must hold positive divisors.");
	m->feature_names = scan_names(&s, I_FEATURES, m->d, m->cxt);
	info_end(&s);
}

/* Byte-wise order of client names (COLLATE "C"). */
static int
client_cmp(const char *a, int alen, const char *b, int blen)
{
	int			c = memcmp(a, b, Min(alen, blen));

	return c != 0 ? c : alen - blen;
}

static int
client_qsort_cmp(const void *a, const void *b)
{
	const ModelClient *x = a;
	const ModelClient *y = b;

	return client_cmp(x->name, x->namelen, y->name, y->namelen);
}

/* The client of the clients table's current row s, read into c and checked. */
static void
client_row(ModelScan *s, const ModelData *m, ModelClient *c)
{
	int			nmoments;
	bool		isnull;

	memset(c, 0, sizeof(ModelClient));
	c->name = scan_text(s, C_CLIENT, m->cxt);
	if (c->name == NULL)
		model_damaged(s->model, "A client name is NULL.");
	c->namelen = strlen(c->name);
	c->mean = scan_vector(s, C_MEAN, m->d, m->cxt, "client mean");
	if (c->mean == NULL && m->center == CENTER_CLIENT)
		model_damaged(s->model, psprintf("Client \"%s\" has no mean.", c->name));
	c->total_variance = scan_float(s, C_TOTAL_VARIANCE);
	c->global_ratio = scan_float(s, C_GLOBAL_RATIO);
	c->n = DatumGetInt64(scan_value(s, C_N, &isnull));
	if (isnull || c->n < 0)
		model_damaged(s->model, psprintf("Client \"%s\" has no row count.", c->name));
	c->score_cov = scan_floats(s, C_SCORE_COV, -1, &c->score_cov_len, m->cxt, "score_covariance");
	c->residual_moments = scan_floats(s, C_RESIDUAL, -1, &nmoments, m->cxt, "residual_moments");
	if (c->residual_moments != NULL && nmoments != 3)
		model_damaged(s->model, psprintf("Client \"%s\" has %d residual_moments, not 3.", c->name, nmoments));
}

/* Room for element n of *a (capacity *cap, elements of size bytes) in the array's context. */
static void *
array_room(void *a, int n, int *cap, Size size)
{
	if (n < *cap)
		return a;
	*cap *= 2;
	return repalloc(a, size * *cap);
}

/* The clients, sorted by name, with their means and variance figures. */
static void
load_clients(ModelData *m, const ModelRels *r)
{
	ModelScan	s;
	int			cap = 16;

	m->clients = MemoryContextAlloc(m->cxt, sizeof(ModelClient) * cap);
	scan_begin(&s, r->rel[MODEL_REL_CLIENTS], r->att[MODEL_REL_CLIENTS], r->model);
	while (scan_next(&s))
	{
		m->clients = array_room(m->clients, m->nclients, &cap, sizeof(ModelClient));
		client_row(&s, m, &m->clients[m->nclients++]);
	}
	scan_end(&s);
	qsort(m->clients, m->nclients, sizeof(ModelClient), client_qsort_cmp);
	for (int i = 1; i < m->nclients; i++)
		if (client_qsort_cmp(&m->clients[i - 1], &m->clients[i]) == 0)
			model_damaged(r->model, psprintf("Client \"%s\" has two rows.", m->clients[i].name));
}

/* One row of the components table, as read: its owner is -1 (global) or the client's index. */
typedef struct ComponentRow
{
	int			owner;
	int			component;
	double	   *pc;
	ModelFloat	variance;
} ComponentRow;

/* Global first, then by client, then by component number. */
static int
component_cmp(const void *a, const void *b)
{
	const ComponentRow *x = a;
	const ComponentRow *y = b;

	if (x->owner != y->owner)
		return x->owner < y->owner ? -1 : 1;
	return (x->component > y->component) - (x->component < y->component);
}

/* Read one component row of model m into row (pc in the current context). */
static void
component_row(ModelScan *s, const ModelData *m, ComponentRow *row)
{
	char	   *kind = scan_text(s, K_KIND, CurrentMemoryContext);
	char	   *client = scan_text(s, K_CLIENT, CurrentMemoryContext);
	bool		global = kind != NULL && strcmp(kind, "global") == 0;
	bool		isnull;
	Datum		v;

	if (kind == NULL || global != (client == NULL) || (!global && strcmp(kind, "local") != 0))
		model_damaged(s->model, "Components must be global (client NULL) or local (client set).");
	row->owner = -1;
	if (!global)
	{
		const ModelClient *c = model_find_client(m, client, strlen(client));

		if (c == NULL)
			model_damaged(s->model, psprintf("Client \"%s\" has local components but no row in the clients table.",
											 client));
		row->owner = c - m->clients;
	}
	v = scan_value(s, K_COMPONENT, &isnull);
	if (isnull)
		model_damaged(s->model, "A component has no number.");
	row->component = DatumGetInt32(v);
	row->pc = scan_vector(s, K_PC, m->d, CurrentMemoryContext, "component");
	if (row->pc == NULL)
		model_damaged(s->model, "A component has no pc.");
	row->variance = scan_float(s, K_VARIANCE);
}

/* Copy the k rows into a k x d matrix, their numbers and variances, in cxt; returns k. */
static int
component_block(const ComponentRow *rows, int k, int d, MemoryContext cxt,
				double **A, int **number, ModelFloat **variance)
{
	*A = MemoryContextAlloc(cxt, sizeof(double) * d * Max(k, 1));
	*number = MemoryContextAlloc(cxt, sizeof(int) * Max(k, 1));
	*variance = MemoryContextAlloc(cxt, sizeof(ModelFloat) * Max(k, 1));
	for (int i = 0; i < k; i++)
	{
		memcpy(*A + (int64) i * d, rows[i].pc, sizeof(double) * d);
		(*number)[i] = rows[i].component;
		(*variance)[i] = rows[i].variance;
	}
	return k;
}

/* The rows of the components table (*n), sorted: global first, then by client and number. */
static ComponentRow *
component_rows(const ModelData *m, const ModelRels *r, int *n)
{
	ModelScan	s;
	int			cap = 16;
	ComponentRow *rows = palloc(sizeof(ComponentRow) * cap);

	*n = 0;
	scan_begin(&s, r->rel[MODEL_REL_COMPONENTS], r->att[MODEL_REL_COMPONENTS], r->model);
	while (scan_next(&s))
	{
		rows = array_room(rows, *n, &cap, sizeof(ComponentRow));
		component_row(&s, m, &rows[(*n)++]);
	}
	scan_end(&s);
	qsort(rows, *n, sizeof(ComponentRow), component_cmp);
	for (int j = 1; j < *n; j++)
		if (component_cmp(&rows[j - 1], &rows[j]) == 0)
			model_damaged(r->model, psprintf("Component %d of %s appears twice.", rows[j].component,
											 rows[j].owner < 0 ? "the global components" :
											 m->clients[rows[j].owner].name));
	return rows;
}

/* The components: U, then each client's V_i; a client's score_covariance, when stored, is k x k for its k. */
static void
load_components(ModelData *m, const ModelRels *r)
{
	int			n;
	int			i = 0;
	ComponentRow *rows = component_rows(m, r, &n);

	while (i < n && rows[i].owner < 0)
		i++;
	m->r1 = component_block(rows, i, m->d, m->cxt, &m->U, &m->global_number, &m->global_variance);
	for (int j = 0; j < m->nclients; j++)
	{
		ModelClient *c = &m->clients[j];
		int			end = i;
		int			k;

		while (end < n && rows[end].owner == j)
			end++;
		if (end > i)
			c->r2 = component_block(rows + i, end - i, m->d, m->cxt, &c->V, &c->number, &c->variance);
		m->r2max = Max(m->r2max, c->r2);
		i = end;
		k = m->r1 + c->r2;
		if (c->score_cov != NULL && c->score_cov_len != k * k)
			model_damaged(r->model, psprintf("Client \"%s\" has a score_covariance of %d values, not %d x %d.",
											 c->name, c->score_cov_len, k, k));
	}
}

/*
 * Read one version of a model into a new memory context, under the current
 * one until it is read whole (an error frees it with the statement's
 * memory), then under TopMemoryContext.
 */
static ModelData *
model_load(const ModelRels *r, int64 version)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "perpca model",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext tmp = AllocSetContextCreate(CurrentMemoryContext, "perpca model load",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(tmp);
	ModelData  *m = MemoryContextAllocZero(cxt, sizeof(ModelData));

	m->cxt = cxt;
	m->info_oid = RelationGetRelid(r->rel[MODEL_REL_INFO]);
	m->clients_oid = RelationGetRelid(r->rel[MODEL_REL_CLIENTS]);
	m->components_oid = RelationGetRelid(r->rel[MODEL_REL_COMPONENTS]);
	m->version = version;
	load_info(m, r);
	load_clients(m, r);
	load_components(m, r);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(tmp);
	MemoryContextSetParent(cxt, TopMemoryContext);
	return m;
}

/* The calibration columns of the scan's current row: rows (NULL: not set) and the top scores. */
static ModelCalibration
scan_calibration(ModelScan *s, MemoryContext cxt)
{
	ModelCalibration cal = {0};
	bool		isnull;
	Datum		v = scan_value(s, CAL_ROWS, &isnull);

	cal.present = !isnull;
	cal.rows = isnull ? 0 : DatumGetInt64(v);
	cal.scores = scan_floats(s, CAL_SCORES, -1, &cal.n, cxt, "calibration_scores");
	return cal;
}

/* Scan relation relid (table t) of model m, its first ncols calibration columns checked. */
static Relation
cal_begin(ModelScan *s, Oid relid, ModelTable t, int ncols, AttrNumber *att, const char *model)
{
	Relation	rel = relation_open(relid, AccessShareLock);

	columns_check(rel, t, cal_columns, ncols, att, model);
	scan_begin(s, rel, att, model);
	return rel;
}

void
model_read_calibration(ModelData *m, const char *model)
{
	AttrNumber	att[lengthof(cal_columns)];
	ModelScan	s;
	Relation	rel;

	if (m->calibration_read)
		return;
	rel = cal_begin(&s, m->info_oid, MODEL_TABLE_INFO, CAL_CLIENT, att, model);
	if (scan_next(&s))
		m->calibration = scan_calibration(&s, m->cxt);
	scan_end(&s);
	relation_close(rel, NoLock);
	if (m->calibration.present)
	{
		rel = cal_begin(&s, m->clients_oid, MODEL_TABLE_CLIENTS, lengthof(cal_columns), att, model);
		while (scan_next(&s))
		{
			char	   *name = scan_text(&s, CAL_CLIENT, CurrentMemoryContext);
			ModelClient *c = name ? (ModelClient *) model_find_client(m, name, strlen(name)) : NULL;

			if (c != NULL)
				c->calibration = scan_calibration(&s, m->cxt);
		}
		scan_end(&s);
		relation_close(rel, NoLock);
	}
	m->calibration_read = true;
}

/* ------------------------------------------------------------------------
 * The per-backend cache
 * ------------------------------------------------------------------------
 */

/* The current data of every model this backend has read. */
typedef struct CacheEntry
{
	ModelData  *data;
	struct CacheEntry *next;
} CacheEntry;

static CacheEntry *model_cache = NULL;

void
model_unref(ModelData *m)
{
	m->refcount--;
	if (m->refcount == 0 && !m->current)
		MemoryContextDelete(m->cxt);
}

/* The cached data when they are of this version and these tables, else a fresh read. */
static ModelData *
cache_get(const ModelRels *r, int64 version)
{
	Oid			info_oid = RelationGetRelid(r->rel[MODEL_REL_INFO]);
	CacheEntry *e;
	ModelData  *m;

	for (e = model_cache; e != NULL; e = e->next)
		if (e->data->info_oid == info_oid)
			break;
	if (e != NULL && e->data->version == version &&
		e->data->clients_oid == RelationGetRelid(r->rel[MODEL_REL_CLIENTS]) &&
		e->data->components_oid == RelationGetRelid(r->rel[MODEL_REL_COMPONENTS]))
		return e->data;
	m = model_load(r, version);
	m->current = true;
	if (e == NULL)
	{
		e = MemoryContextAllocZero(TopMemoryContext, sizeof(CacheEntry));
		e->next = model_cache;
		model_cache = e;
	}
	else
	{
		/* The replaced version lives on while bindings still use it. */
		e->data->current = false;
		if (e->data->refcount == 0)
			MemoryContextDelete(e->data->cxt);
	}
	e->data = m;
	return m;
}

ModelData *
model_open(text *model)
{
	ModelRels	r;
	ModelData  *m;

	rels_open(&r, model);
	m = cache_get(&r, read_version(&r));
	for (int i = 0; i < MODEL_NRELS; i++)
		relation_close(r.rel[i], NoLock);	/* the locks are kept, as a SELECT keeps them */
	return m;
}

const ModelClient *
model_find_client(const ModelData *m, const char *name, int len)
{
	ModelClient key = {.name = (char *) name,.namelen = len};

	return bsearch(&key, m->clients, m->nclients, sizeof(ModelClient), client_qsort_cmp);
}

/* ------------------------------------------------------------------------
 * perpca_model_history(): a model's history, read as the model is
 *
 * The history belongs to the model's owner, who could replace it by a view
 * or give its columns types of her own; so it is locked after the model's
 * three tables (model_lock.c), checked to be a plain table of the owner
 * with the declared column types, readable whole by the caller (who must
 * also have SELECT on <model>_info), and scanned as the model is.
 * ------------------------------------------------------------------------
 */

/* A row of the result, whose columns (desc) are history columns by name (model_schema.c's types). */
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

/* The scan's current row of the history, copied out of the buffer (absent columns NULL). */
static HistoryRow *
history_row(ModelScan *s, TupleDesc desc)
{
	HistoryRow *row = palloc(sizeof(HistoryRow));
	int			entry = -1;

	for (int c = 0; c < desc->natts; c++)
	{
		int16		typlen;
		bool		typbyval;
		Datum		v = scan_value(s, c, &row->nulls[c]);

		get_typlenbyval(model_schema_column(MODEL_TABLE_HISTORY, H_NAME(desc, c)).type, &typlen, &typbyval);
		if (strcmp(H_NAME(desc, c), "entry") == 0)
			entry = c;
		row->values[c] = row->nulls[c] ? (Datum) 0 : datumCopy(v, typbyval, typlen);
	}
	if (entry < 0 || row->nulls[entry])
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_MODEL_DAMAGED),
				 errmsg("the history of model \"%s\" has a row without entry", s->model)));
	row->entry = DatumGetInt32(row->values[entry]);
	return row;
}

/*
 * perpca_model_history(model text) RETURNS TABLE (version, at, kind,
 *   clients, rows, rounds_run, converged, objective, seconds, role, warning,
 *   entry, outcome, starts, clients_added, clients_dropped, warm_start, sketch_bound)
 * in entry order.
 */
Datum
perpca_model_history(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *model = text_to_cstring(PG_GETARG_TEXT_PP(0));
	AttrNumber	att[MODEL_MAX_COLUMNS];
	Relation	rel;
	ModelScan	s;
	int			cap = 16;
	int			nrows = 0;
	HistoryRow **rows = palloc(sizeof(HistoryRow *) * cap);

	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts > MODEL_MAX_COLUMNS)
		elog(ERROR, "perpca_model_history returns more columns than a history has");
	rel = history_open(model, rsinfo->setDesc, att);
	if (rel == NULL)
		return (Datum) 0;
	scan_begin(&s, rel, att, model);
	while (scan_next(&s))
	{
		rows = array_room(rows, nrows, &cap, sizeof(HistoryRow *));
		rows[nrows++] = history_row(&s, rsinfo->setDesc);
	}
	scan_end(&s);
	relation_close(rel, NoLock);
	qsort(rows, nrows, sizeof(HistoryRow *), history_row_cmp);
	for (int i = 0; i < nrows; i++)
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, rows[i]->values, rows[i]->nulls);
	return (Datum) 0;
}
