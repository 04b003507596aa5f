/*
 * calibrate.c -- control limits calibrated on held-out training rows
 * (calibrate.h)
 *
 * The split is bound at train in the model's views (calibrate_split.c):
 * <model>_source aggregates the rows not held out, <model>_calibration
 * returns every row (client, x, heldout).  After each fit the rows are
 * scored in C with the model's own T^2 and Q at MONITOR_REF_ALPHA
 * (monitor.c): s = max(T2 / T2_lim, Q / Q_lim).  A client with at least
 * MONITOR_CAL_CLIENT_ROWS held-out rows keeps its own top scores
 * (<model>_clients.calibration_scores), every other is judged by the
 * pooled ones (<model>_info.calibration_scores); the training rows' scores
 * give the share each kind of limits flags (flagged_gaussian,
 * flagged_calibrated).
 */
#include "postgres.h"

#include <math.h>

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"

#include "calibrate.h"
#include "calibrate_split.h"
#include "client_key.h"
#include "monitor.h"
#include "perpca.h"

void
calibrate_bind_rows(const StoreModel *sm, const char *query, const char *path, double share)
{
	store_view_drop(sm, "calibration", share > 0.0);
	if (share > 0.0)
		store_view_create(sm, "calibration", calibrate_rows_select(query, path, share), path,
						  psprintf("perpca model %s: its rows, and which are held out to calibrate its control limits (split bound when it was trained); read after every fit",
								   sm->base));
}

/* ------------------------------------------------------------------------
 * Scoring the rows after a fit
 * ------------------------------------------------------------------------
 */

/* A growing list of scores. */
typedef struct ScoreList
{
	double	   *s;
	int64		n;
	int64		cap;
} ScoreList;

static void
list_add(ScoreList *l, double s)
{
	if (l->n == l->cap)
	{
		l->cap = Max(16, l->cap * 2);
		l->s = l->s ? repalloc_huge(l->s, sizeof(double) * l->cap)
			: MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * l->cap);
	}
	l->s[l->n++] = s;
}

static int
desc_cmp(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x < y) - (x > y);
}

/* The scores of one pass: held out per client and pooled, and the training rows' (with their client's index). */
typedef struct CalibrationPass
{
	const ModelData *m;
	ScoreList  *heldout;		/* per client */
	ScoreList	pooled;
	ScoreList	fit;
	int		   *fit_client;		/* per training row: its client's index */
	int64		left_out;		/* rows without a score: a gap, an unknown client, no limit */
} CalibrationPass;

/* Whether array a holds d finite values, a row to score. */
static bool
row_complete(ArrayType *a, int d)
{
	const double *x;

	if (ARR_NDIM(a) != 1 || ARR_HASNULL(a) || ArrayGetNItems(1, ARR_DIMS(a)) != d)
		return false;
	x = (const double *) ARR_DATA_PTR(a);
	for (int j = 0; j < d; j++)
		if (!isfinite(x[j]))
			return false;
	return true;
}

/* The client of m with the key v (NULL: none, or NULL). */
static const ModelClient *
row_client(const ModelData *m, ClientKeyOut *key, Datum v, bool isnull)
{
	char	   *name;
	const ModelClient *c;

	if (isnull)
		return NULL;
	name = client_key_text(key, v);
	c = model_find_client(m, name, strlen(name));
	pfree(name);
	return c;
}

/* Add score s of a training row of client i to p. */
static void
pass_fit(CalibrationPass *p, int i, double s)
{
	int64		cap = p->fit.cap;

	list_add(&p->fit, s);
	if (p->fit.cap != cap)
		p->fit_client = p->fit_client ? repalloc_huge(p->fit_client, sizeof(int) * p->fit.cap)
			: MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int) * p->fit.cap);
	p->fit_client[p->fit.n - 1] = i;
}

/* Score one row (client, x, heldout) of the view into p. */
static void
pass_row(CalibrationPass *p, ClientKeyOut *key, HeapTuple tup, TupleDesc desc, double *y, double *t)
{
	bool		isnull;
	Datum		v = SPI_getbinval(tup, desc, 1, &isnull);
	const ModelClient *c = row_client(p->m, key, v, isnull);
	bool		heldout = DatumGetBool(SPI_getbinval(tup, desc, 3, &isnull));
	double		s = NAN;

	v = SPI_getbinval(tup, desc, 2, &isnull);
	if (c != NULL && !isnull)
	{
		ArrayType  *a = DatumGetArrayTypeP(v);

		if (row_complete(a, p->m->d))
			s = monitor_reference_score(p->m, c, (const double *) ARR_DATA_PTR(a), y, t);
		if ((Pointer) a != DatumGetPointer(v))
			pfree(a);
	}
	if (isnan(s))
		p->left_out++;
	else if (heldout)
	{
		list_add(&p->heldout[c - p->m->clients], s);
		list_add(&p->pooled, s);
	}
	else
		pass_fit(p, c - p->m->clients, s);
}

/* One pass over the rows of <base>_calibration. */
static void
pass_read(const StoreModel *sm, CalibrationPass *p)
{
	SPIPlanPtr	plan = SPI_prepare(psprintf("SELECT v.client, v.x, v.heldout FROM %s v", store_rel(sm, "calibration")),
								   0, NULL);
	double	   *y = palloc(sizeof(double) * p->m->d);
	double	   *t = palloc(sizeof(double) * (p->m->r1 + p->m->r2max + 1));
	Portal		portal;
	ClientKeyOut key;

	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	portal = SPI_cursor_open(NULL, plan, NULL, NULL, true);
	client_key_prepare(&key, TupleDescAttr(portal->tupDesc, 0)->atttypid, CurrentMemoryContext);
	for (SPI_cursor_fetch(portal, true, 1000); SPI_processed > 0; SPI_cursor_fetch(portal, true, 1000))
	{
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			CHECK_FOR_INTERRUPTS();
			pass_row(p, &key, SPI_tuptable->vals[i], SPI_tuptable->tupdesc, y, t);
		}
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
}

/* Whether client i is judged by its own held-out scores. */
static bool
own_scores(const CalibrationPass *p, int i)
{
	return p->heldout[i].n >= MONITOR_CAL_CLIENT_ROWS;
}

/* The calibrated threshold at MONITOR_REF_ALPHA for client i (scores sorted). */
static double
pass_threshold(const CalibrationPass *p, int i)
{
	const ScoreList *l = own_scores(p, i) ? &p->heldout[i] : &p->pooled;

	return monitor_conformal_threshold(l->s, (int) Min(l->n, PG_INT32_MAX), l->n, MONITOR_REF_ALPHA);
}

/* The top scores of l as a float8[] datum (stored: monitor_conformal_keep of them). */
static Datum
top_scores(const ScoreList *l)
{
	return PointerGetDatum(perpca_vector_build(l->s, (int) Min(l->n, monitor_conformal_keep(l->n))));
}

/*
 * Each client's held-out rows and, for one with enough, its top scores, in
 * one UPDATE: client i's scores are scores[first[i] : first[i] + count[i] - 1].
 */
static void
store_clients(const StoreModel *sm, const CalibrationPass *p)
{
	int			n = Max(p->m->nclients, 1);
	Datum	   *keys = palloc(sizeof(Datum) * n),
			   *rows = palloc(sizeof(Datum) * n),
			   *first = palloc(sizeof(Datum) * n),
			   *count = palloc(sizeof(Datum) * n);
	ScoreList	all = {0};

	for (int i = 0; i < p->m->nclients; i++)
	{
		int			k = own_scores(p, i) ? (int) Min(p->heldout[i].n, monitor_conformal_keep(p->heldout[i].n)) : 0;

		keys[i] = CStringGetTextDatum(p->m->clients[i].name);
		rows[i] = Int64GetDatum(p->heldout[i].n);
		first[i] = Int32GetDatum((int) all.n + 1);
		count[i] = Int32GetDatum(k);
		for (int j = 0; j < k; j++)
			list_add(&all, p->heldout[i].s[j]);
	}
	store_sql(psprintf("UPDATE %s c SET calibration_rows = u.n, calibration_scores = CASE WHEN u.k > 0"
					   " THEN $5[u.f : u.f + u.k - 1] END FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2),"
					   " pg_catalog.unnest($3), pg_catalog.unnest($4)) AS u(client, n, f, k)"
					   " WHERE c.client = u.client", store_rel(sm, "clients")),
			  5, (Oid[]) {TEXTARRAYOID, INT8ARRAYOID, INT4ARRAYOID, INT4ARRAYOID, FLOAT8ARRAYOID},
			  (Datum[]) {PointerGetDatum(construct_array_builtin(keys, p->m->nclients, TEXTOID)),
				  PointerGetDatum(construct_array_builtin(rows, p->m->nclients, INT8OID)),
				  PointerGetDatum(construct_array_builtin(first, p->m->nclients, INT4OID)),
				  PointerGetDatum(construct_array_builtin(count, p->m->nclients, INT4OID)),
			  PointerGetDatum(perpca_vector_build(all.s, (int) all.n))}, NULL);
}

/* The pooled scores, the split and the training rows' flagged shares in the info row; the Gaussian share. */
static double
store_info(const StoreModel *sm, const CalibrationPass *p, double share)
{
	int64		gaussian = 0,
				calibrated = 0;
	double	   *threshold = palloc(sizeof(double) * Max(p->m->nclients, 1));
	double		rows = (double) Max(p->fit.n, 1);

	for (int i = 0; i < p->m->nclients; i++)
		threshold[i] = pass_threshold(p, i);
	for (int64 r = 0; r < p->fit.n; r++)
	{
		gaussian += p->fit.s[r] > 1.0;
		calibrated += p->fit.s[r] > threshold[p->fit_client[r]];
	}
	store_sql(psprintf("UPDATE %s SET calibration = $1, calibration_split = $2, calibration_rows = $3,"
					   " calibration_scores = $4, flagged_gaussian = $5, flagged_calibrated = $6", store_rel(sm, "info")),
			  6, (Oid[]) {FLOAT8OID, TEXTOID, INT8OID, FLOAT8ARRAYOID, FLOAT8OID, FLOAT8OID},
			  (Datum[]) {Float8GetDatum(share), CStringGetTextDatum(calibrate_split_rule(share)),
				  Int64GetDatum(p->pooled.n), top_scores(&p->pooled), Float8GetDatum(gaussian / rows),
			  Float8GetDatum(calibrated / rows)}, p->fit.n == 0 ? "    nn" : NULL);
	return p->fit.n > 0 ? (double) gaussian / (double) p->fit.n : 0.0;
}

/* The model just written, seen by this transaction's next command. */
static ModelData *
written_model(const StoreModel *sm)
{
	ModelData  *m;

	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	m = model_open(cstring_to_text(psprintf("%s.%s", quote_identifier(sm->schema), quote_identifier(sm->base))));
	m->refcount++;
	PopActiveSnapshot();
	return m;
}

void
calibrate_after_fit(const StoreModel *sm, double share)
{
	CalibrationPass p = {0};
	double		flagged;

	if (!(share > 0.0))
		return;
	store_view_check(sm, "calibration",
					 "Train the model again with perpca_train(..., calibration => share, replace => true).");
	p.m = written_model(sm);
	p.heldout = palloc0(sizeof(ScoreList) * Max(p.m->nclients, 1));
	pass_read(sm, &p);
	for (int i = 0; i < p.m->nclients; i++)
		if (p.heldout[i].n > 0)
			qsort(p.heldout[i].s, p.heldout[i].n, sizeof(double), desc_cmp);
	if (p.pooled.n > 0)
		qsort(p.pooled.s, p.pooled.n, sizeof(double), desc_cmp);
	store_clients(sm, &p);
	flagged = store_info(sm, &p, share);
	model_unref((ModelData *) p.m);
	if (flagged > 2.0 * MONITOR_REF_ALPHA)
		ereport(WARNING,
				(errmsg("the Gaussian control limits of model \"%s\" flag %.2f%% of its training rows at alpha = %g",
						sm->base, 100.0 * flagged, MONITOR_REF_ALPHA),
				 errdetail("More than twice alpha: the rows are not the independent Gaussian rows those limits assume."),
				 errhint("perpca_model_monitor(..., limits => 'calibrated') uses the limits calibrated on the %ld held-out rows.",
						 (long) p.pooled.n)));
}
