/*
 * models.c -- projection functions that read a stored model by name
 *
 * A model "m" is three ordinary tables written by perpca_train():
 * m_components, m_clients and m_info (one row, with a version number that
 * every change of the model renews).  The model is read with SPI once and
 * kept in a per-backend cache, keyed by the info table's OID.
 *
 * Each calling expression keeps a ModelBinding in fn_extra.  The binding is
 * checked against the database only when the snapshot changes (in practice
 * once per statement): then one SPI query reads the model's version and the
 * cache reloads the model if it was replaced.  Rows of the same statement
 * use the bound data directly, so the per-row cost is that of the pure
 * array functions plus a client lookup.
 *
 * Loaded data are reference-counted: a binding holds a reference until its
 * query's memory is released, so a reload never frees data in use.
 *
 * Decomposition of a row x of client i with centre c (the client's mean,
 * the pooled mean or zero, as the fit's center option), y = x - c:
 *   global part  c + U^T U y      local part  V_i^T V_i y
 *   residual     y - U^T U y - V_i^T V_i y   (the three parts sum to x)
 * U holds the global and V_i the local components as rows.  A client the
 * model has never seen is projected on the global components only, centred
 * at the pooled mean under center 'client'; its local part is zero.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/varlena.h"

#include "linalg.h"
#include "perpca.h"

PG_FUNCTION_INFO_V1(perpca_model_scores);
PG_FUNCTION_INFO_V1(perpca_model_global_part);
PG_FUNCTION_INFO_V1(perpca_model_local_part);
PG_FUNCTION_INFO_V1(perpca_model_reconstruct);
PG_FUNCTION_INFO_V1(perpca_model_residual);
PG_FUNCTION_INFO_V1(perpca_model_error);
PG_FUNCTION_INFO_V1(perpca_similarity);

typedef enum ModelCenter
{
	CENTER_CLIENT,				/* each client's own mean */
	CENTER_GLOBAL,				/* the pooled mean of all rows */
	CENTER_NONE					/* no centering */
} ModelCenter;

/* One client of a loaded model. */
typedef struct ModelClient
{
	char	   *name;
	int			namelen;
	int			r2;				/* local components */
	double	   *V;				/* r2 x d, rows */
	double	   *mean;			/* d */
} ModelClient;

/* One loaded version of a model, in its own memory context. */
typedef struct ModelData
{
	Oid			info_oid;
	int64		version;
	int			refcount;		/* bindings using these data */
	bool		current;		/* still the cache's entry for info_oid */
	MemoryContext cxt;
	int			d;
	int			r1;
	int			r2max;
	ModelCenter center;
	double	   *U;				/* r1 x d, rows */
	double	   *global_mean;	/* d */
	int			nclients;
	ModelClient *clients;		/* sorted by name (bytewise) */
} ModelData;

/* The cache: the current data of every model this backend has read. */
typedef struct CacheEntry
{
	ModelData  *data;
	struct CacheEntry *next;
} CacheEntry;

static CacheEntry *model_cache = NULL;

/* What a calling expression keeps in fn_extra. */
typedef struct ModelBinding
{
	text	   *model;			/* the model name it was bound for */
	ModelData  *data;
	MemoryContextCallback release;
	/* snapshot the binding was last checked under */
	LocalTransactionId lxid;
	TransactionId xmin;
	TransactionId xmax;
	CommandId	curcid;
	/* the last client looked up, and scratch space */
	const ModelClient *client;
	double	   *y;				/* d */
	double	   *s;				/* r1 + r2max */
	double	   *out;			/* d */
} ModelBinding;

/* ------------------------------------------------------------------------
 * Finding a model and reading it with SPI
 * ------------------------------------------------------------------------
 */

/* OID of the model's info table; raises undefined_object when there is none. */
static Oid
model_info_oid(text *model, char **base)
{
	List	   *names = textToQualifiedNameList(model);
	RangeVar   *rv;
	Oid			oid;

	if (list_length(names) > 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("improper model name \"%s\"", text_to_cstring(model)),
				 errdetail("A model name is a table name prefix, optionally qualified by a schema name.")));
	rv = makeRangeVarFromNameList(names);
	*base = rv->relname;
	rv->relname = psprintf("%s_info", *base);
	oid = RangeVarGetRelid(rv, NoLock, true);
	if (!OidIsValid(oid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("model \"%s\" does not exist", text_to_cstring(model)),
				 errhint("Create it with perpca_train().")));
	return oid;
}

/* Quoted "schema"."<base>_<suffix>", in the schema of the info table. */
static char *
model_table(Oid info_oid, const char *base, const char *suffix)
{
	char	   *nsp = get_namespace_name(get_rel_namespace(info_oid));

	return quote_qualified_identifier(nsp, psprintf("%s_%s", base, suffix));
}

/* Raise the error for a model whose tables do not fit together. */
static void
model_damaged(const char *base, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("model \"%s\" is inconsistent", base),
			 errdetail_internal("%s", detail),
			 errhint("Train it again with perpca_train(..., replace => true).")));
}

/* Run a read-only query under the current snapshot. */
static void
spi_read(const char *sql)
{
	if (SPI_execute(sql, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute failed: %s", sql);
}

/* Column col of SPI result row i, NULL-checked. */
static Datum
spi_value(uint64 i, int col, bool *isnull)
{
	return SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, col, isnull);
}

/* Column col of row i as a float8[] of length d, copied into cxt (NULL stays NULL). */
static double *
spi_vector(uint64 i, int col, int d, MemoryContext cxt, const char *what)
{
	bool		isnull;
	Datum		v = spi_value(i, col, &isnull);
	int			n;
	double	   *x;
	double	   *copy;

	if (isnull)
		return NULL;
	x = perpca_vector_arg(DatumGetArrayTypeP(v), &n, what);
	if (n != d)
		perpca_dim_mismatch(d, n, what);
	copy = MemoryContextAlloc(cxt, sizeof(double) * d);
	memcpy(copy, x, sizeof(double) * d);
	return copy;
}

/* Column col of row i as a C string in cxt, or NULL. */
static char *
spi_text(uint64 i, int col, MemoryContext cxt)
{
	bool		isnull;
	Datum		v = spi_value(i, col, &isnull);

	return isnull ? NULL : MemoryContextStrdup(cxt, TextDatumGetCString(v));
}

/* The version of the model (its single info row). */
static int64
model_version(const char *info, const char *base)
{
	bool		isnull;
	Datum		v;

	spi_read(psprintf("SELECT version FROM %s", info));
	if (SPI_processed != 1)
		model_damaged(base, "The info table must have exactly one row.");
	v = spi_value(0, 1, &isnull);
	if (isnull)
		model_damaged(base, "The model has no version.");
	return DatumGetInt64(v);
}

/* Byte-wise order of client names (COLLATE "C"). */
static int
client_cmp(const char *a, int alen, const char *b, int blen)
{
	int			c = memcmp(a, b, Min(alen, blen));

	return c != 0 ? c : alen - blen;
}

/* The client of m with this name, or NULL. */
static ModelClient *
client_find(const ModelData *m, const char *name, int len)
{
	int			lo = 0;
	int			hi = m->nclients - 1;

	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		ModelClient *c = &m->clients[mid];
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

/* Read the info row: dimension, centering, pooled mean. */
static void
load_info(ModelData *m, const char *info, const char *base)
{
	bool		isnull;
	char	   *center;

	spi_read(psprintf("SELECT d, center, global_mean FROM %s", info));
	if (SPI_processed != 1)
		model_damaged(base, "The info table must have exactly one row.");
	m->d = DatumGetInt32(spi_value(0, 1, &isnull));
	if (isnull || m->d < 1 || m->d > PERPCA_MAX_DIM)
		model_damaged(base, "The info table has no valid dimension d.");
	center = spi_text(0, 2, CurrentMemoryContext);
	if (center && strcmp(center, "client") == 0)
		m->center = CENTER_CLIENT;
	else if (center && strcmp(center, "global") == 0)
		m->center = CENTER_GLOBAL;
	else if (center && strcmp(center, "none") == 0)
		m->center = CENTER_NONE;
	else
		model_damaged(base, "The center option must be client, global or none.");
	m->global_mean = spi_vector(0, 3, m->d, m->cxt, "global_mean");
	if (m->global_mean == NULL)
		model_damaged(base, "The info table has no global_mean.");
}

/* Read the clients (sorted by name) and their means. */
static void
load_clients(ModelData *m, const char *clients, const char *base)
{
	spi_read(psprintf("SELECT client, mean FROM %s ORDER BY client COLLATE \"C\"", clients));
	m->nclients = (int) SPI_processed;
	m->clients = MemoryContextAllocZero(m->cxt, sizeof(ModelClient) * Max(m->nclients, 1));
	for (int i = 0; i < m->nclients; i++)
	{
		ModelClient *c = &m->clients[i];

		c->name = spi_text(i, 1, m->cxt);
		if (c->name == NULL)
			model_damaged(base, "A client name is NULL.");
		c->namelen = strlen(c->name);
		c->mean = spi_vector(i, 2, m->d, m->cxt, "mean");
		if (c->mean == NULL && m->center == CENTER_CLIENT)
			model_damaged(base, psprintf("Client \"%s\" has no mean.", c->name));
	}
}

/* Copy rows [from, to) of the SPI result's pc column (4) into a k x d matrix. */
static double *
spi_rows(uint64 from, uint64 to, int d, MemoryContext cxt)
{
	double	   *A = MemoryContextAlloc(cxt, sizeof(double) * d * Max(to - from, 1));

	for (uint64 i = from; i < to; i++)
	{
		double	   *pc = spi_vector(i, 4, d, CurrentMemoryContext, "pc");

		if (pc == NULL)
			elog(ERROR, "unexpected NULL component");
		memcpy(A + (i - from) * d, pc, sizeof(double) * d);
	}
	return A;
}

/* The kind column of row i ("" when NULL). */
static const char *
spi_kind(uint64 i)
{
	char	   *kind = spi_text(i, 1, CurrentMemoryContext);

	return kind ? kind : "";
}

/* Read the components: U, then each client's V_i (rows grouped by client). */
static void
load_components(ModelData *m, const char *components, const char *base)
{
	uint64		i = 0;
	uint64		n;

	spi_read(psprintf("SELECT kind, client, component, pc FROM %s WHERE pc IS NOT NULL "
					  "ORDER BY kind, client COLLATE \"C\", component", components));
	n = SPI_processed;
	while (i < n && strcmp(spi_kind(i), "global") == 0)
		i++;
	m->r1 = (int) i;
	m->U = spi_rows(0, i, m->d, m->cxt);
	while (i < n)
	{
		char	   *name = spi_text(i, 2, CurrentMemoryContext);
		uint64		end = i;
		ModelClient *c;

		if (name == NULL || strcmp(spi_kind(i), "local") != 0)
			model_damaged(base, "Components must be global (client NULL) or local (client set).");
		while (end < n && spi_text(end, 2, CurrentMemoryContext) != NULL &&
			   strcmp(spi_text(end, 2, CurrentMemoryContext), name) == 0)
			end++;
		c = client_find(m, name, strlen(name));
		if (c == NULL)
			model_damaged(base, psprintf("Client \"%s\" has local components but no row in the clients table.", name));
		c->r2 = (int) (end - i);
		c->V = spi_rows(i, end, m->d, m->cxt);
		m->r2max = Max(m->r2max, c->r2);
		i = end;
	}
}

/* Read one version of a model into a new memory context under TopMemoryContext. */
static ModelData *
model_load(Oid info_oid, const char *base, int64 version)
{
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext, "perpca model",
											  ALLOCSET_DEFAULT_SIZES);
	ModelData  *m = MemoryContextAllocZero(cxt, sizeof(ModelData));

	m->cxt = cxt;
	m->info_oid = info_oid;
	m->version = version;
	PG_TRY();
	{
		load_info(m, model_table(info_oid, base, "info"), base);
		load_clients(m, model_table(info_oid, base, "clients"), base);
		load_components(m, model_table(info_oid, base, "components"), base);
	}
	PG_CATCH();
	{
		MemoryContextDelete(cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return m;
}

/* ------------------------------------------------------------------------
 * The per-backend cache and the per-expression binding
 * ------------------------------------------------------------------------
 */

/* Drop one reference; free data that are no longer current nor used. */
static void
model_unref(ModelData *m)
{
	m->refcount--;
	if (m->refcount == 0 && !m->current)
		MemoryContextDelete(m->cxt);
}

/* The current data of a model at this version, reading it if needed. */
static ModelData *
cache_get(Oid info_oid, const char *base, int64 version)
{
	CacheEntry *e;
	ModelData  *m;

	for (e = model_cache; e != NULL; e = e->next)
		if (e->data->info_oid == info_oid)
			break;
	if (e != NULL && e->data->version == version)
		return e->data;
	m = model_load(info_oid, base, version);
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

/* True when two text values (either may be NULL) hold the same bytes. */
static bool
same_text(const text *a, const text *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return VARSIZE_ANY_EXHDR(a) == VARSIZE_ANY_EXHDR(b) &&
		memcmp(VARDATA_ANY(a), VARDATA_ANY(b), VARSIZE_ANY_EXHDR(a)) == 0;
}

/* Memory-context callback: the binding's query is over. */
static void
binding_release(void *arg)
{
	ModelBinding *b = (ModelBinding *) arg;

	if (b->data != NULL)
		model_unref(b->data);
	b->data = NULL;
}

/* Check the binding against the database and bind it to the model's current data. */
static void
binding_refresh(ModelBinding *b, text *model, MemoryContext fcxt)
{
	char	   *base;
	Oid			info_oid = model_info_oid(model, &base);
	ModelData  *m;
	int64		version;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	version = model_version(model_table(info_oid, base, "info"), base);
	m = cache_get(info_oid, base, version);
	SPI_finish();

	if (b->data != m)
	{
		if (b->data != NULL)
			model_unref(b->data);
		m->refcount++;
		b->data = m;
		b->client = NULL;
		b->y = MemoryContextAlloc(fcxt, sizeof(double) * m->d);
		b->out = MemoryContextAlloc(fcxt, sizeof(double) * m->d);
		b->s = MemoryContextAlloc(fcxt, sizeof(double) * (m->r1 + m->r2max));
	}
	if (!same_text(b->model, model))
	{
		b->model = MemoryContextAlloc(fcxt, VARSIZE_ANY(model));
		memcpy(b->model, model, VARSIZE_ANY(model));
	}
}

/* True when the active snapshot differs from the one the binding was checked under. */
static bool
binding_snapshot_changed(ModelBinding *b)
{
	Snapshot	snap;

	if (!ActiveSnapshotSet())
		return true;
	snap = GetActiveSnapshot();
	return b->lxid != MyProc->lxid || b->xmin != snap->xmin ||
		b->xmax != snap->xmax || b->curcid != snap->curcid;
}

/* Remember the active snapshot the binding was checked under. */
static void
binding_snapshot_save(ModelBinding *b)
{
	Snapshot	snap;

	b->lxid = MyProc->lxid;
	if (!ActiveSnapshotSet())
		return;
	snap = GetActiveSnapshot();
	b->xmin = snap->xmin;
	b->xmax = snap->xmax;
	b->curcid = snap->curcid;
}

/* The binding of this call site, checked once per snapshot and whenever the model name changes. */
static ModelBinding *
model_bind(FunctionCallInfo fcinfo, text *model)
{
	FmgrInfo   *flinfo = fcinfo->flinfo;
	ModelBinding *b = (ModelBinding *) flinfo->fn_extra;

	if (b == NULL)
	{
		b = MemoryContextAllocZero(flinfo->fn_mcxt, sizeof(ModelBinding));
		b->release.func = binding_release;
		b->release.arg = b;
		MemoryContextRegisterResetCallback(flinfo->fn_mcxt, &b->release);
		flinfo->fn_extra = b;
	}
	if (b->data == NULL || binding_snapshot_changed(b) || !same_text(b->model, model))
	{
		binding_refresh(b, model, flinfo->fn_mcxt);
		binding_snapshot_save(b);
	}
	return b;
}

/* The bound model's client of this name, or NULL for a client it has never seen. */
static const ModelClient *
model_client(ModelBinding *b, text *client)
{
	const char *name = VARDATA_ANY(client);
	int			len = VARSIZE_ANY_EXHDR(client);

	if (b->client != NULL && b->client->namelen == len &&
		memcmp(b->client->name, name, len) == 0)
		return b->client;
	b->client = client_find(b->data, name, len);
	return b->client;
}

/* ------------------------------------------------------------------------
 * Projection of one row
 * ------------------------------------------------------------------------
 */

/* One row decomposed: the centre, y = x - centre, scores s = [U y; V_i y]. */
typedef struct RowProjection
{
	const ModelData *m;
	const ModelClient *c;		/* NULL: unseen client */
	const double *center;		/* NULL: no centering */
	int			r2;				/* local components used (0 for an unseen client) */
	double	   *y;
	double	   *s;
	double	   *out;
} RowProjection;

/* Bind the model, find the client, centre x and compute its scores. */
static void
row_project(FunctionCallInfo fcinfo, RowProjection *p)
{
	ModelBinding *b = model_bind(fcinfo, PG_GETARG_TEXT_PP(0));
	const ModelData *m = b->data;
	int			d;
	const double *x;

	p->m = m;
	p->c = model_client(b, PG_GETARG_TEXT_PP(1));
	x = perpca_vector_arg(PG_GETARG_ARRAYTYPE_P(2), &d, "x");
	if (d != m->d)
		perpca_dim_mismatch(m->d, d, "x");
	if (m->center == CENTER_NONE)
		p->center = NULL;
	else if (m->center == CENTER_CLIENT && p->c != NULL)
		p->center = p->c->mean;
	else
		p->center = m->global_mean;
	p->r2 = p->c ? p->c->r2 : 0;
	p->y = b->y;
	p->s = b->s;
	p->out = b->out;
	for (int i = 0; i < d; i++)
		p->y[i] = p->center ? x[i] - p->center[i] : x[i];
	linalg_matvec(false, m->r1, d, 1.0, m->U, p->y, 0.0, p->s);
	if (p->r2 > 0)
		linalg_matvec(false, p->r2, d, 1.0, p->c->V, p->y, 0.0, p->s + m->r1);
}

/* out = base (or zero) + alpha (U^T s_global if global) + alpha (V^T s_local if local). */
static void
row_combine(RowProjection *p, const double *base, double alpha, bool global, bool local)
{
	int			d = p->m->d;

	if (base)
		memcpy(p->out, base, sizeof(double) * d);
	else
		memset(p->out, 0, sizeof(double) * d);
	if (global)
		linalg_matvec(true, p->m->r1, d, alpha, p->m->U, p->s, 1.0, p->out);
	if (local && p->r2 > 0)
		linalg_matvec(true, p->r2, d, alpha, p->c->V, p->s + p->m->r1, 1.0, p->out);
}

/* Scores of x: the global scores, then the client's local scores. */
Datum
perpca_model_scores(PG_FUNCTION_ARGS)
{
	RowProjection p;

	row_project(fcinfo, &p);
	PG_RETURN_ARRAYTYPE_P(perpca_vector_build(p.s, p.m->r1 + p.r2));
}

/* Global part of x: centre + U^T U (x - centre), what the clients share. */
Datum
perpca_model_global_part(PG_FUNCTION_ARGS)
{
	RowProjection p;

	row_project(fcinfo, &p);
	row_combine(&p, p.center, 1.0, true, false);
	PG_RETURN_ARRAYTYPE_P(perpca_vector_build(p.out, p.m->d));
}

/* Local part of x: V_i^T V_i (x - centre), what is unique to the client. */
Datum
perpca_model_local_part(PG_FUNCTION_ARGS)
{
	RowProjection p;

	row_project(fcinfo, &p);
	row_combine(&p, NULL, 1.0, false, true);
	PG_RETURN_ARRAYTYPE_P(perpca_vector_build(p.out, p.m->d));
}

/* Reconstruction of x: its global part plus its local part. */
Datum
perpca_model_reconstruct(PG_FUNCTION_ARGS)
{
	RowProjection p;

	row_project(fcinfo, &p);
	row_combine(&p, p.center, 1.0, true, true);
	PG_RETURN_ARRAYTYPE_P(perpca_vector_build(p.out, p.m->d));
}

/* Residual of x: x minus its reconstruction. */
Datum
perpca_model_residual(PG_FUNCTION_ARGS)
{
	RowProjection p;

	row_project(fcinfo, &p);
	row_combine(&p, p.y, -1.0, true, true);
	PG_RETURN_ARRAYTYPE_P(perpca_vector_build(p.out, p.m->d));
}

/* Squared norm of the residual: the reconstruction error of x, an anomaly score. */
Datum
perpca_model_error(PG_FUNCTION_ARGS)
{
	RowProjection p;

	row_project(fcinfo, &p);
	row_combine(&p, p.y, -1.0, true, true);
	PG_RETURN_FLOAT8(linalg_dot(p.m->d, p.out, p.out));
}

/* ------------------------------------------------------------------------
 * Client similarity
 * ------------------------------------------------------------------------
 */

/*
 * rho_ij = ||P_Vi - P_Vj||_F^2 / r2 for every ordered pair of clients, where
 * ||P_Vi - P_Vj||_F^2 = r_i + r_j - 2 ||V_i V_j^T||_F^2 and r2 = (r_i + r_j) / 2
 * (the paper's r2 when all clients have the same local rank).
 */
Datum
perpca_similarity(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ModelBinding *b;
	const ModelData *m;
	double	   *G;

	InitMaterializedSRF(fcinfo, 0);
	b = model_bind(fcinfo, PG_GETARG_TEXT_PP(0));
	m = b->data;
	G = palloc(sizeof(double) * Max(m->r2max * m->r2max, 1));
	for (int i = 0; i < m->nclients; i++)
	{
		const ModelClient *a = &m->clients[i];

		CHECK_FOR_INTERRUPTS();
		for (int j = 0; j < m->nclients; j++)
		{
			const ModelClient *c = &m->clients[j];
			Datum		row[3];
			bool		nulls[3] = {false, false, false};
			double		inner = 0.0;
			double		dist = 0.0;

			if (i != j && a->r2 + c->r2 > 0)
			{
				if (a->r2 > 0 && c->r2 > 0)
				{
					linalg_gemm(false, true, a->r2, c->r2, m->d, 1.0, a->V, m->d,
								c->V, m->d, 0.0, G, c->r2);
					inner = linalg_dot((int64) a->r2 * c->r2, G, G);
				}
				dist = Max(a->r2 + c->r2 - 2.0 * inner, 0.0) / (0.5 * (a->r2 + c->r2));
			}
			row[0] = CStringGetTextDatum(a->name);
			row[1] = CStringGetTextDatum(c->name);
			row[2] = Float8GetDatum(dist);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row, nulls);
		}
	}
	return (Datum) 0;
}
