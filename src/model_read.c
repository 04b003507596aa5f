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
 */
#include "postgres.h"

#include <math.h>

#include "access/relation.h"
#include "access/tableam.h"
#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
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
#include "model_schema.h"
#include "perpca.h"

/* ------------------------------------------------------------------------
 * The relations and columns of a model
 * ------------------------------------------------------------------------
 */

/* The relations in model_lock.h's order. */
#define REL_INFO MODEL_REL_INFO
#define REL_CLIENTS MODEL_REL_CLIENTS
#define REL_COMPONENTS MODEL_REL_COMPONENTS
#define NRELS MODEL_NRELS

enum
{
	I_VERSION, I_D, I_CENTER, I_GLOBAL_MEAN, I_TOTAL_VARIANCE, I_THETA, I_SCALE, I_CLIENT_TYPE, I_FEATURES, I_NCOLS
};
/* The columns read, by name; their types and whether an older model may lack them are
 * model_schema.c's declaration. */
static const char *const info_columns[I_NCOLS] = {
	"version", "d", "center", "global_mean", "total_variance", "theta_est", "scale_factors", "client_type",
	"feature_names"
};

enum
{
	C_CLIENT, C_MEAN, C_TOTAL_VARIANCE, C_GLOBAL_RATIO, C_N, C_SCORE_COV, C_RESIDUAL, C_NCOLS
};
static const char *const clients_columns[C_NCOLS] = {
	"client", "mean", "total_variance", "global_ratio", "n", "score_covariance", "residual_moments"
};

enum
{
	K_KIND, K_CLIENT, K_COMPONENT, K_PC, K_VARIANCE, K_NCOLS
};
static const char *const components_columns[K_NCOLS] = {"kind", "client", "component", "pc", "variance"};

static const char *const *const rel_columns[NRELS] = {info_columns, clients_columns, components_columns};
static const int rel_ncolumns[NRELS] = {I_NCOLS, C_NCOLS, K_NCOLS};

#define MAX_COLUMNS I_NCOLS		/* the longest of the three lists */
StaticAssertDecl((int) MODEL_REL_INFO == (int) MODEL_TABLE_INFO && (int) MODEL_REL_CLIENTS == (int) MODEL_TABLE_CLIENTS &&
				 (int) MODEL_REL_COMPONENTS == (int) MODEL_TABLE_COMPONENTS, "model_lock.h and model_schema.h disagree");
StaticAssertDecl((int) C_NCOLS <= (int) MAX_COLUMNS && (int) K_NCOLS <= (int) MAX_COLUMNS, "MAX_COLUMNS too small");

/* The opened relations of a model and the attribute numbers of its columns. */
typedef struct ModelRels
{
	const char *model;			/* the name as given, for messages */
	Relation	rel[NRELS];
	AttrNumber	att[NRELS][MAX_COLUMNS];
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

/*
 * Find, lock and open the three relations of a model (model_lock.c: one lock
 * order for every function that touches a model; a model dropped meanwhile
 * is undefined_object).  On Citus, a reference table's rows are read from
 * this node's shard.
 */
static void
rels_open(ModelRels *r, text *model)
{
	ModelLock	ml;

	r->model = text_to_cstring(model);
	model_lock(&ml, r->model, MODEL_LOCK_READ, true, false);
	for (int i = 0; i < NRELS; i++)
		r->rel[i] = relation_open(perpca_citus_local_placement(ml.relid[i], ml.base), NoLock);
}

/* Close the relations, keeping the locks until the end of the transaction (as a SELECT does). */
static void
rels_close(ModelRels *r)
{
	for (int i = 0; i < NRELS; i++)
		relation_close(r->rel[i], NoLock);
}

/* Quoted qualified name of a relation, for messages. */
static char *
rel_name(Relation rel)
{
	return quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
									  RelationGetRelationName(rel));
}

/*
 * The attribute number of column col of rel, checked for its type: an error
 * when it has another type, or is missing and not optional (InvalidAttrNumber
 * when it is optional and missing).  detail says which model the table is.
 */
AttrNumber
model_column_attnum(Relation rel, const ModelColumn *col, const char *detail)
{
	TupleDesc	desc = RelationGetDescr(rel);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped || strcmp(NameStr(att->attname), col->name) != 0)
			continue;
		if (att->atttypid != col->type)
			ereport(ERROR,
					(errcode(PERPCA_ERRCODE_WRONG_TYPE),
					 errmsg("column \"%s\" of %s has type %s, expected %s",
							col->name, rel_name(rel), format_type_be(att->atttypid),
							format_type_be(col->type)),
					 errdetail_internal("%s", detail)));
		return att->attnum;
	}
	if (!col->optional)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_MODEL_COLUMN),
				 errmsg("column \"%s\" of %s does not exist", col->name, rel_name(rel)),
				 errdetail_internal("%s", detail)));
	return InvalidAttrNumber;
}

/*
 * The caller may SELECT the columns att[0..ncols) of rel that exist, and no
 * row-level security applies to the caller.  what names what is read in the
 * errors ("model \"m\""), hint says how to lift row-level security.
 */
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

/* Open a model's relations and run every check of steps 1-4. */
static void
rels_open_checked(ModelRels *r, text *model)
{
	char	   *detail,
			   *what;

	rels_open(r, model);
	detail = psprintf("Model \"%s\" is not as perpca_train() stores it.", r->model);
	what = psprintf("model \"%s\"", r->model);
	for (int i = 0; i < NRELS; i++)
	{
		for (int c = 0; c < rel_ncolumns[i]; c++)
		{
			ModelColumn col = model_schema_column((ModelTable) i, rel_columns[i][c]);

			r->att[i][c] = model_column_attnum(r->rel[i], &col, detail);
		}
		model_check_readable(r->rel[i], r->att[i], rel_ncolumns[i], what,
							 "perpca reads a model whole; disable row-level security on the model's tables.");
	}
}

/* ------------------------------------------------------------------------
 * Reading rows straight from a table
 * ------------------------------------------------------------------------
 */

/* A scan of one model table under the statement's snapshot. */
typedef struct ModelScan
{
	TableScanDesc scan;
	TupleTableSlot *slot;
} ModelScan;

static void
scan_begin(ModelScan *s, Relation rel)
{
	Snapshot	snap = ActiveSnapshotSet() ? GetActiveSnapshot() : GetTransactionSnapshot();

	s->scan = table_beginscan(rel, snap, 0, NULL);
	s->slot = table_slot_create(rel, NULL);
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

/* A column of the current row (NULL-flagged). */
static Datum
scan_value(ModelScan *s, AttrNumber att, bool *isnull)
{
	return slot_getattr(s->slot, att, isnull);
}

static ModelFloat
scan_float(ModelScan *s, AttrNumber att)
{
	ModelFloat	f;
	Datum		v = scan_value(s, att, &f.isnull);

	f.value = f.isnull ? 0.0 : DatumGetFloat8(v);
	return f;
}

/* A text column as a C string in cxt, or NULL. */
static char *
scan_text(ModelScan *s, AttrNumber att, MemoryContext cxt)
{
	bool		isnull;
	Datum		v = scan_value(s, att, &isnull);
	char	   *str;
	char	   *copy;

	if (isnull)
		return NULL;
	str = TextDatumGetCString(v);
	copy = MemoryContextStrdup(cxt, str);
	pfree(str);
	return copy;
}

/* A float8[] column of length d copied into cxt (NULL stays NULL); finite values only. */
static double *
scan_vector(ModelScan *s, AttrNumber att, int d, MemoryContext cxt, const char *model, const char *what)
{
	bool		isnull;
	Datum		v = scan_value(s, att, &isnull);
	ArrayType  *a;
	double	   *x;
	double	   *copy;
	int			n;

	if (isnull)
		return NULL;
	a = DatumGetArrayTypeP(v);
	x = perpca_vector_shape(a, &n, what);
	if (n != d)
		model_damaged(model, psprintf("A %s has %d values, the model's dimension is %d.", what, n, d));
	for (int i = 0; i < d; i++)
		if (!isfinite(x[i]))
			model_damaged(model, psprintf("A %s has a NaN or infinite value.", what));
	copy = MemoryContextAlloc(cxt, sizeof(double) * d);
	memcpy(copy, x, sizeof(double) * d);
	if ((Pointer) a != DatumGetPointer(v))
		pfree(a);
	return copy;
}

/* A float8[] column of any length and up to 2 dimensions (NULL stays NULL), finite values only, copied into cxt; *n its values. */
static double *
scan_floats(ModelScan *s, AttrNumber att, int *n, MemoryContext cxt, const char *model, const char *what)
{
	bool		isnull;
	Datum		v;
	ArrayType  *a;
	double	   *x;
	double	   *copy;

	*n = 0;
	if (!AttributeNumberIsValid(att) || (v = scan_value(s, att, &isnull), isnull))
		return NULL;
	a = DatumGetArrayTypeP(v);
	if (ARR_NDIM(a) > 2 || ARR_HASNULL(a) || ARR_ELEMTYPE(a) != FLOAT8OID)
		model_damaged(model, psprintf("A %s is not a float8 vector or matrix without NULLs.", what));
	*n = ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a));
	x = (double *) ARR_DATA_PTR(a);
	for (int i = 0; i < *n; i++)
		if (!isfinite(x[i]))
			model_damaged(model, psprintf("A %s has a NaN or infinite value.", what));
	copy = MemoryContextAlloc(cxt, sizeof(double) * Max(*n, 1));
	memcpy(copy, x, sizeof(double) * *n);
	return copy;
}

/* The feature names (a text[] of d non-NULL names), or NULL when the column is absent or NULL. */
static char **
scan_names(ModelScan *s, AttrNumber att, int d, MemoryContext cxt, const char *model)
{
	bool		isnull;
	Datum		v;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	char	  **names;

	if (!AttributeNumberIsValid(att) || (v = scan_value(s, att, &isnull), isnull))
		return NULL;
	deconstruct_array(DatumGetArrayTypeP(v), TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	if (n != d)
		model_damaged(model, psprintf("feature_names has %d names, the model's dimension is %d.", n, d));
	names = MemoryContextAlloc(cxt, sizeof(char *) * d);
	for (int j = 0; j < d; j++)
	{
		if (nulls[j])
			model_damaged(model, "A feature name is NULL.");
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
 * Move to the info table's first row.  An empty info table is damage,
 * unless the tables are newer than the statement's snapshot (a model
 * dropped and trained again meanwhile): as of the snapshot the model does
 * not exist (42704), as for a reader that waited for a drop.
 */
static void
info_single_row(ModelScan *s, const ModelRels *r)
{
	if (scan_next(s))
		return;
	if (rel_newer_than_snapshot(r->rel[REL_INFO]))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_UNDEFINED),
				 errmsg("model \"%s\" does not exist", r->model),
				 errdetail("Its tables were created after this statement's snapshot was taken (the model was dropped and trained again meanwhile)."),
				 errhint("Run the statement again to read the new model.")));
	model_damaged(r->model, "The info table must have exactly one row.");
}

/* The model's version, from its single info row. */
static int64
read_version(const ModelRels *r)
{
	ModelScan	s;
	bool		isnull;
	int64		version;

	scan_begin(&s, r->rel[REL_INFO]);
	info_single_row(&s, r);
	version = DatumGetInt64(scan_value(&s, r->att[REL_INFO][I_VERSION], &isnull));
	if (isnull)
		model_damaged(r->model, "The model has no version.");
	if (scan_next(&s))
		model_damaged(r->model, "The info table must have exactly one row.");
	scan_end(&s);
	return version;
}

/* ------------------------------------------------------------------------
 * Loading a model
 * ------------------------------------------------------------------------
 */

/* The info row: dimension, centering, pooled mean, total variance, theta. */
static void
load_info(ModelData *m, const ModelRels *r)
{
	const AttrNumber *att = r->att[REL_INFO];
	ModelScan	s;
	bool		isnull;
	char	   *center;

	scan_begin(&s, r->rel[REL_INFO]);
	info_single_row(&s, r);
	m->d = DatumGetInt32(scan_value(&s, att[I_D], &isnull));
	if (isnull || m->d < 1 || m->d > PERPCA_MAX_DIM)
		model_damaged(r->model, "The info table has no valid dimension d.");
	center = scan_text(&s, att[I_CENTER], CurrentMemoryContext);
	if (center && strcmp(center, "client") == 0)
		m->center = CENTER_CLIENT;
	else if (center && strcmp(center, "global") == 0)
		m->center = CENTER_GLOBAL;
	else if (center && strcmp(center, "none") == 0)
		m->center = CENTER_NONE;
	else
		model_damaged(r->model, "The center option must be client, global or none.");
	m->global_mean = scan_vector(&s, att[I_GLOBAL_MEAN], m->d, m->cxt, r->model, "global_mean");
	if (m->global_mean == NULL)
		model_damaged(r->model, "The info table has no global_mean.");
	m->total_variance = scan_float(&s, att[I_TOTAL_VARIANCE]);
	m->theta_est = scan_float(&s, att[I_THETA]);
	m->client_type = AttributeNumberIsValid(att[I_CLIENT_TYPE]) ?
		scan_text(&s, att[I_CLIENT_TYPE], m->cxt) : NULL;
	m->scale = AttributeNumberIsValid(att[I_SCALE]) ?
		scan_vector(&s, att[I_SCALE], m->d, m->cxt, r->model, "scale_factors") : NULL;
	for (int j = 0; m->scale != NULL && j < m->d; j++)
		if (!(m->scale[j] > 0.0))
			model_damaged(r->model, "The scale_factors of the info table must hold positive divisors.");
	m->feature_names = scan_names(&s, att[I_FEATURES], m->d, m->cxt, r->model);
	scan_end(&s);
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
client_row(ModelScan *s, const ModelData *m, const ModelRels *r, ModelClient *c)
{
	const AttrNumber *att = r->att[REL_CLIENTS];
	int			nmoments;
	bool		isnull;

	memset(c, 0, sizeof(ModelClient));
	c->name = scan_text(s, att[C_CLIENT], m->cxt);
	if (c->name == NULL)
		model_damaged(r->model, "A client name is NULL.");
	c->namelen = strlen(c->name);
	c->mean = scan_vector(s, att[C_MEAN], m->d, m->cxt, r->model, "client mean");
	if (c->mean == NULL && m->center == CENTER_CLIENT)
		model_damaged(r->model, psprintf("Client \"%s\" has no mean.", c->name));
	c->total_variance = scan_float(s, att[C_TOTAL_VARIANCE]);
	c->global_ratio = scan_float(s, att[C_GLOBAL_RATIO]);
	c->n = DatumGetInt64(scan_value(s, att[C_N], &isnull));
	if (isnull || c->n < 0)
		model_damaged(r->model, psprintf("Client \"%s\" has no row count.", c->name));
	c->score_cov = scan_floats(s, att[C_SCORE_COV], &c->score_cov_len, m->cxt, r->model,
							   "score_covariance");
	c->residual_moments = scan_floats(s, att[C_RESIDUAL], &nmoments, m->cxt, r->model,
									  "residual_moments");
	if (c->residual_moments != NULL && nmoments != 3)
		model_damaged(r->model, psprintf("Client \"%s\" has %d residual_moments, not 3.", c->name, nmoments));
}

/* The clients, sorted by name, with their means and variance figures. */
static void
load_clients(ModelData *m, const ModelRels *r)
{
	ModelScan	s;
	int			cap = 16;

	m->clients = MemoryContextAllocZero(m->cxt, sizeof(ModelClient) * cap);
	scan_begin(&s, r->rel[REL_CLIENTS]);
	while (scan_next(&s))
	{
		if (m->nclients == cap)
		{
			cap *= 2;
			m->clients = repalloc(m->clients, sizeof(ModelClient) * cap);
		}
		client_row(&s, m, r, &m->clients[m->nclients++]);
	}
	scan_end(&s);
	qsort(m->clients, m->nclients, sizeof(ModelClient), client_qsort_cmp);
	for (int i = 1; i < m->nclients; i++)
		if (client_qsort_cmp(&m->clients[i - 1], &m->clients[i]) == 0)
			model_damaged(r->model, psprintf("Client \"%s\" has two rows.", m->clients[i].name));
}

/* One row of the components table, as read. */
typedef struct ComponentRow
{
	bool		global;
	char	   *client;			/* NULL for a global component */
	int			clientlen;
	int			component;
	double	   *pc;
	ModelFloat	variance;
} ComponentRow;

/* Global first, then by client (bytewise), then by component number. */
static int
component_cmp(const void *a, const void *b)
{
	const ComponentRow *x = a;
	const ComponentRow *y = b;
	int			c;

	if (x->global != y->global)
		return x->global ? -1 : 1;
	if (!x->global && (c = client_cmp(x->client, x->clientlen, y->client, y->clientlen)) != 0)
		return c;
	return (x->component > y->component) - (x->component < y->component);
}

/* Read one component row into row (pc and names in the current context). */
static void
component_row(ModelScan *s, const ModelRels *r, int d, ComponentRow *row)
{
	const AttrNumber *att = r->att[REL_COMPONENTS];
	char	   *kind = scan_text(s, att[K_KIND], CurrentMemoryContext);
	bool		isnull;
	Datum		v;

	row->client = scan_text(s, att[K_CLIENT], CurrentMemoryContext);
	row->global = kind != NULL && strcmp(kind, "global") == 0;
	if (kind == NULL || (row->global != (row->client == NULL)) ||
		(!row->global && strcmp(kind, "local") != 0))
		model_damaged(r->model, "Components must be global (client NULL) or local (client set).");
	row->clientlen = row->client ? strlen(row->client) : 0;
	v = scan_value(s, att[K_COMPONENT], &isnull);
	if (isnull)
		model_damaged(r->model, "A component has no number.");
	row->component = DatumGetInt32(v);
	row->pc = scan_vector(s, att[K_PC], d, CurrentMemoryContext, r->model, "component");
	if (row->pc == NULL)
		model_damaged(r->model, "A component has no pc.");
	row->variance = scan_float(s, att[K_VARIANCE]);
}

/* Copy rows [from, to) into a k x d matrix, their numbers and variances, in cxt. */
static void
component_block(const ComponentRow *rows, int from, int to, int d, MemoryContext cxt,
				double **A, int **number, ModelFloat **variance)
{
	int			k = to - from;

	*A = MemoryContextAlloc(cxt, sizeof(double) * d * Max(k, 1));
	*number = MemoryContextAlloc(cxt, sizeof(int) * Max(k, 1));
	*variance = MemoryContextAlloc(cxt, sizeof(ModelFloat) * Max(k, 1));
	for (int i = 0; i < k; i++)
	{
		memcpy(*A + (int64) i * d, rows[from + i].pc, sizeof(double) * d);
		(*number)[i] = rows[from + i].component;
		(*variance)[i] = rows[from + i].variance;
	}
}

/* The rows of the components table (*n), sorted: global first, then by client and number. */
static ComponentRow *
component_rows(const ModelRels *r, int d, int *n)
{
	ModelScan	s;
	int			cap = 16;
	ComponentRow *rows = palloc(sizeof(ComponentRow) * cap);

	*n = 0;
	scan_begin(&s, r->rel[REL_COMPONENTS]);
	while (scan_next(&s))
	{
		if (*n == cap)
		{
			cap *= 2;
			rows = repalloc(rows, sizeof(ComponentRow) * cap);
		}
		component_row(&s, r, d, &rows[(*n)++]);
	}
	scan_end(&s);
	qsort(rows, *n, sizeof(ComponentRow), component_cmp);
	for (int j = 1; j < *n; j++)
		if (component_cmp(&rows[j - 1], &rows[j]) == 0)
			model_damaged(r->model, psprintf("Component %d of %s appears twice.", rows[j].component,
											 rows[j].global ? "the global components" : rows[j].client));
	return rows;
}

/* Each client's score_covariance, when stored, is k x k for its r1 + r2 components. */
static void
check_score_covariances(const ModelData *m, const ModelRels *r)
{
	for (int j = 0; j < m->nclients; j++)
	{
		const ModelClient *c = &m->clients[j];
		int			k = m->r1 + c->r2;

		if (c->score_cov != NULL && c->score_cov_len != k * k)
			model_damaged(r->model, psprintf("Client \"%s\" has a score_covariance of %d values, not %d x %d.",
											 c->name, c->score_cov_len, k, k));
	}
}

/* The components: U, then each client's V_i. */
static void
load_components(ModelData *m, const ModelRels *r)
{
	int			n;
	int			i = 0;
	ComponentRow *rows = component_rows(r, m->d, &n);

	while (i < n && rows[i].global)
		i++;
	m->r1 = i;
	component_block(rows, 0, i, m->d, m->cxt, &m->U, &m->global_number, &m->global_variance);
	while (i < n)
	{
		int			end = i;
		ModelClient *c = (ModelClient *) model_find_client(m, rows[i].client, rows[i].clientlen);

		while (end < n && client_cmp(rows[end].client, rows[end].clientlen,
									 rows[i].client, rows[i].clientlen) == 0)
			end++;
		if (c == NULL)
			model_damaged(r->model, psprintf("Client \"%s\" has local components but no row in the clients table.",
											 rows[i].client));
		c->r2 = end - i;
		component_block(rows, i, end, m->d, m->cxt, &c->V, &c->number, &c->variance);
		m->r2max = Max(m->r2max, c->r2);
		i = end;
	}
	check_score_covariances(m, r);
}

/* Read one version of a model into a new memory context under TopMemoryContext. */
static ModelData *
model_load(const ModelRels *r, int64 version)
{
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext, "perpca model",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext tmp = AllocSetContextCreate(CurrentMemoryContext, "perpca model load",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(tmp);
	ModelData  *m = MemoryContextAllocZero(cxt, sizeof(ModelData));

	m->cxt = cxt;
	m->info_oid = RelationGetRelid(r->rel[REL_INFO]);
	m->clients_oid = RelationGetRelid(r->rel[REL_CLIENTS]);
	m->components_oid = RelationGetRelid(r->rel[REL_COMPONENTS]);
	m->version = version;
	PG_TRY();
	{
		load_info(m, r);
		load_clients(m, r);
		load_components(m, r);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(old);
		MemoryContextDelete(cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	MemoryContextDelete(tmp);
	return m;
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
	Oid			info_oid = RelationGetRelid(r->rel[REL_INFO]);
	CacheEntry *e;
	ModelData  *m;

	for (e = model_cache; e != NULL; e = e->next)
		if (e->data->info_oid == info_oid)
			break;
	if (e != NULL && e->data->version == version &&
		e->data->clients_oid == RelationGetRelid(r->rel[REL_CLIENTS]) &&
		e->data->components_oid == RelationGetRelid(r->rel[REL_COMPONENTS]))
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

	rels_open_checked(&r, model);
	m = cache_get(&r, read_version(&r));
	rels_close(&r);
	return m;
}

const ModelClient *
model_find_client(const ModelData *m, const char *name, int len)
{
	int			lo = 0;
	int			hi = m->nclients - 1;

	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		const ModelClient *c = &m->clients[mid];
		int			cmp = client_cmp(name, len, c->name, c->namelen);

		if (cmp == 0)
			return c;
		if (cmp < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return NULL;
}
