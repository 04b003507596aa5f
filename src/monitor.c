/*
 * monitor.c -- control limits of a stored model (perpca_model_monitor) and
 * the per-client statistics they need, stored at training time
 *
 * Multivariate statistical process control on each client's own structure.
 * For client i with covariance S (its training rows about their mean, in
 * the model's scaled units) and components W = [U; V_i] (k x d, rows), a row
 * x gives y = (x - mean_i) / scale, scores t = W y and residual
 * e = (I - W'W) y:
 *
 *   T^2 = t' C^-1 t,  C = W S W' (the scores' covariance; directions of C
 *         with an eigenvalue below 1e-12 of the largest are left out, k'
 *         the rest);
 *   Q   = ||e||^2 (the squared prediction error; = perpca_model_error for
 *         center 'client').
 *
 * Limits at level a for a row from the client's own distribution:
 *
 *   T^2: k' (n^2 - 1) / (n (n - k')) F_{1-a}(k', n - k'), the limit for a new
 *        observation when mean and covariance are estimated from n rows
 *        (Tracy, Young and Mason 1992; Montgomery, Introduction to
 *        Statistical Quality Control, section 11.3); NULL when n <= k';
 *   Q:   Jackson and Mudholkar (1979): with theta_j = tr R^j, R = (I - W'W)
 *        S (I - W'W) the residual covariance, h0 = 1 - 2 theta1 theta3 /
 *        (3 theta2^2) and z the upper a quantile of N(0, 1),
 *        Q_a = theta1 [z sqrt(2 theta2 h0^2) / theta1 + 1 + theta2 h0 (h0 - 1) / theta1^2]^(1 / h0);
 *        where that is undefined (h0 <= 0, or a non-positive base), Box's
 *        (1954) g chi^2_h with g = theta2 / theta1, h = theta1^2 / theta2 and
 *        the Wilson-Hilferty chi^2 quantile.  NULL when theta1 is 0 (the
 *        components span every row).
 *
 * A row is out of control when either statistic exceeds its limit; each is
 * tested at a' = 1 - sqrt(1 - alpha) (Sidak), so that the row's false-alarm
 * rate is alpha when T^2 and Q are independent (Gaussian rows).
 *
 * C and (theta1, theta2, theta3) are computed from each client's statistics
 * when the model is written (perpca_internal.client_monitor_stats, called by
 * perpca_internal.model_fill_clients) and stored in <model>_clients.score_covariance
 * and .residual_moments: no second pass over the rows.  For sketched
 * statistics they are the sketch's (M2 taken as B'B), computed in blocks of
 * its rows, never as a d x d matrix.
 *
 * Calibrated limits (limits => 'calibrated', a model trained with
 * calibration => share): a row's score is s = max(T^2 / T^2_lim, Q / Q_lim)
 * at the reference level MONITOR_REF_ALPHA (monitor_reference_score, which
 * calibrate.c applies to the held-out rows after every fit).  From the n
 * held-out scores of the client (when it has at least
 * MONITOR_CAL_CLIENT_ROWS) or of every client (pooled), the threshold at
 * alpha is the floor((n + 1) alpha)-th largest, c (split-conformal: a
 * false-alarm rate of at most alpha for rows exchangeable with the held-out
 * ones); the limits returned are c T^2_lim and c Q_lim, so that a row is
 * out of control exactly when s > c.  The stored top scores are read from
 * <model>_info and <model>_clients once per model version, as model_read.c
 * reads a model: straight from the tables, after the same checks.
 */
#include "postgres.h"

#include <math.h>

#include "access/relation.h"
#include "access/tableam.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "error_kinds.h"
#include "linalg.h"
#include "missing.h"
#include "model_bind.h"
#include "model_schema.h"
#include "monitor.h"
#include "perpca.h"
#include "quantiles.h"
#include "stats.h"

PG_FUNCTION_INFO_V1(perpca_client_monitor_stats);
PG_FUNCTION_INFO_V1(perpca_model_monitor);

/* Eigenvalues of C below this share of the largest are directions without variance. */
#define MONITOR_EIG_RTOL 1e-12

/* ------------------------------------------------------------------------
 * At training time: the scores' covariance and the residual spectrum
 * ------------------------------------------------------------------------
 */

/*
 * C = W S W' (k x k) and {tr R, tr R^2, tr R^3} of R = P S P, P = I - W'W,
 * for the covariance S of s and W (k x d, rows).
 */
static void
monitor_moments(const PerpcaStats *s, const double *W, int k, double *C, double *moments)
{
	int			d = s->dim;
	double	   *S = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * d * d),
			   *A = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * d * d),
			   *R = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * d * d),
			   *R2;

	perpca_stats_moment(s, NULL, S);

	/* C = W S W' */
	linalg_gemm(false, false, k, d, d, 1.0, W, d, S, d, 0.0, A, d);
	linalg_gemm(false, true, k, k, d, 1.0, A, d, W, d, 0.0, C, k);

	/* P = I - W'W into R; A = P S; R = A P */
	linalg_gemm(true, false, d, d, k, -1.0, W, d, W, d, 0.0, R, d);
	for (int j = 0; j < d; j++)
		R[(int64) j * d + j] += 1.0;
	linalg_gemm(false, false, d, d, d, 1.0, R, d, S, d, 0.0, A, d);
	linalg_gemm(false, false, d, d, d, 1.0, A, d, R, d, 0.0, S, d);	/* S <- P S P = R */
	R2 = A;
	linalg_gemm(false, false, d, d, d, 1.0, S, d, S, d, 0.0, R2, d);
	for (int j = 0; j < d; j++)
		moments[0] += S[(int64) j * d + j];
	moments[1] = linalg_dot((int64) d * d, S, S);	/* tr R^2 = ||R||_F^2, R symmetric */
	moments[2] = linalg_dot((int64) d * d, S, R2);	/* tr R^3 = sum R .* R^2 */
}

/*
 * The same for a sketch, S = B'B / n (B its rows x d rows, n its rows'
 * count), in rows x rows blocks, never d x d: with A = W B' / sqrt(n)
 * (k x rows), C = A A'; with G = (B / sqrt(n)) - A'W (rows x d, the rows
 * of P B' / sqrt(n)), R = G'G has the nonzero spectrum of H = G G', so
 * tr R^j = tr H^j.  The figures are the sketch's (B'B for M2), as its fit's.
 */
static void
monitor_moments_rows(const double *B, int rows, double n, int d, const double *W, int k,
					 double *C, double *moments)
{
	double		s = 1.0 / sqrt(n);
	double	   *A,
			   *G,
			   *H,
			   *H2;

	memset(C, 0, sizeof(double) * k * k);
	if (rows == 0)
		return;
	A = palloc(sizeof(double) * k * rows);
	G = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * rows * d);
	H = palloc(sizeof(double) * rows * rows);
	H2 = palloc(sizeof(double) * rows * rows);
	linalg_gemm(false, true, k, rows, d, s, W, d, B, d, 0.0, A, rows);
	linalg_gemm(false, true, k, k, rows, 1.0, A, rows, A, rows, 0.0, C, k);
	memcpy(G, B, sizeof(double) * rows * d);
	linalg_gemm(true, false, rows, d, k, -1.0, A, rows, W, d, s, G, d);
	linalg_gemm(false, true, rows, rows, d, 1.0, G, d, G, d, 0.0, H, rows);
	linalg_gemm(false, false, rows, rows, rows, 1.0, H, rows, H, rows, 0.0, H2, rows);
	for (int j = 0; j < rows; j++)
		moments[0] += H[j * rows + j];
	moments[1] = linalg_dot((int64) rows * rows, H, H);
	moments[2] = linalg_dot((int64) rows * rows, H, H2);
}

/* W = [U; V] ((r1 + r2) x d, rows): the global components, then the local ones. */
static double *
stack_rows(const double *U, int r1, const double *V, int r2, int d)
{
	double	   *W = palloc(sizeof(double) * (r1 + r2) * d);

	if (r1 > 0)
		memcpy(W, U, sizeof(double) * r1 * d);
	if (r2 > 0)
		memcpy(W + (int64) r1 * d, V, sizeof(double) * r2 * d);
	return W;
}

/* C and the residual moments of statistics of any form: a sketch through its rows B. */
static void
monitor_moments_any(const PerpcaStats *s, const double *W, int k, double *C, double *moments)
{
	int			rows;
	const double *B;

	if (s->form != PERPCA_FORM_SKETCH)
	{
		monitor_moments(s, W, k, C, moments);
		return;
	}
	B = perpca_stats_sketch_rows(s, &rows);
	monitor_moments_rows(B, B != NULL ? rows : 0, (double) s->n, s->dim, W, k, C, moments);
}

/*
 * perpca_internal.client_monitor_stats(s perpca_stats, u float8[], v float8[],
 *     OUT score_covariance float8[], OUT residual_moments float8[]):
 * C = W S W' ((r1 + r2) x (r1 + r2)) and {tr R, tr R^2, tr R^3} for the
 * covariance S of the statistics (already in the model's units) and W = [u; v].
 * NULLs for NULL or empty statistics.
 */
Datum
perpca_client_monitor_stats(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[2];
	bool		nulls[2] = {true, true};
	PerpcaStats *s;
	double	   *U,
			   *V,
			   *W,
			   *C;
	double		moments[3] = {0, 0, 0};
	int			d,
				r1,
				r2,
				k;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "client_monitor_stats must return a record");
	desc = BlessTupleDesc(desc);
	if (PG_ARGISNULL(0))
		PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
	s = PG_GETARG_PERPCA_STATS(0);
	perpca_stats_validate(s);
	d = s->dim;
	U = perpca_components_arg(fcinfo, 1, d, &r1, "global components");
	V = perpca_components_arg(fcinfo, 2, d, &r2, "local components");
	k = r1 + r2;
	if (s->n == 0 || k == 0)
		PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
	W = stack_rows(U, r1, V, r2, d);
	C = palloc(sizeof(double) * k * k);
	monitor_moments_any(s, W, k, C, moments);
	values[0] = PointerGetDatum(perpca_matrix_build(C, k, k));
	values[1] = PointerGetDatum(perpca_vector_build(moments, 3));
	nulls[0] = nulls[1] = false;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

/* ------------------------------------------------------------------------
 * Limits
 * ------------------------------------------------------------------------
 */

/* The T^2 limit for k' scores estimated from n rows, or NaN when n <= k'. */
static double
t2_limit(int k, int64 n, double a)
{
	double		nn = (double) n;

	if (k < 1 || n <= k)
		return NAN;
	return k * (nn * nn - 1.0) / (nn * (nn - k)) * quantile_f_upper(a, k, nn - k);
}

/* The Q limit from the residual moments (Jackson-Mudholkar, else Box), or NaN. */
static double
q_limit(const double *theta, double a)
{
	double		t1 = theta[0],
				t2 = theta[1],
				t3 = theta[2],
				z = quantile_normal_upper(a),
				h0,
				h,
				c;

	if (!(t1 > 0.0) || !(t2 > 0.0))
		return NAN;
	h0 = 1.0 - 2.0 * t1 * t3 / (3.0 * t2 * t2);
	if (h0 > 1e-3)
	{
		double		base = z * sqrt(2.0 * t2 * h0 * h0) / t1 + 1.0 + t2 * h0 * (h0 - 1.0) / (t1 * t1);

		if (base > 0.0)
			return t1 * pow(base, 1.0 / h0);
	}
	/* Box: Q ~ g chi^2_h; Wilson-Hilferty for the chi^2 quantile. */
	h = t1 * t1 / t2;
	c = 1.0 - 2.0 / (9.0 * h) + z * sqrt(2.0 / (9.0 * h));
	return t2 / t1 * h * c * c * c;
}

/* ------------------------------------------------------------------------
 * perpca_model_monitor
 * ------------------------------------------------------------------------
 */

#define ARG_MODEL 0
#define ARG_CLIENT 1
#define ARG_X 2
#define ARG_ALPHA 3
#define ARG_MISSING 4
#define ARG_LIMITS 5

/* The hint of a row with a gap under missing => 'error'. */
#define MONITOR_MISSING_HINT "Pass missing => 'skip' to return NULL for a row with a NULL, NaN or infinite element (counted in one NOTICE); perpca_model_impute() fills the gaps."

/* The monitor statistics of one row. */
typedef struct MonitorRow
{
	double		t2;
	double		t2_limit;
	double		q;
	double		q_limit;
} MonitorRow;

/*
 * What a client's rows need, computed once per client, model version and
 * alpha: B (kused x k) with T^2 = ||B t||^2 (rows z_j' / sqrt(lambda_j) of the
 * eigenpairs of C kept), and the two limits.
 */
typedef struct MonitorClient
{
	bool		ready;
	double		alpha;
	int			kused;
	double	   *B;
	double		t2_limit;
	double		q_limit;
} MonitorClient;

/* The per-backend cache of MonitorClient, for one model version at a time. */
static struct
{
	MemoryContext cxt;
	Oid			info_oid;
	int64		version;
	int			nclients;
	const ModelClient *clients; /* the model data's array: an entry is its index */
	MonitorClient *entries;
	struct Calibration *cal;	/* read at the first call for calibrated limits */
} monitor_cache;

/* The cache entry of client c of m (reset when the model's version changes). */
static MonitorClient *
monitor_entry(const ModelData *m, const ModelClient *c)
{
	if (monitor_cache.cxt == NULL)
		monitor_cache.cxt = AllocSetContextCreate(TopMemoryContext, "perpca monitor",
												  ALLOCSET_SMALL_SIZES);
	if (monitor_cache.info_oid != m->info_oid || monitor_cache.version != m->version ||
		monitor_cache.clients != m->clients || monitor_cache.nclients != m->nclients)
	{
		MemoryContextReset(monitor_cache.cxt);
		monitor_cache.info_oid = m->info_oid;
		monitor_cache.version = m->version;
		monitor_cache.clients = m->clients;
		monitor_cache.nclients = m->nclients;
		monitor_cache.entries = MemoryContextAllocZero(monitor_cache.cxt,
													   sizeof(MonitorClient) * Max(m->nclients, 1));
		monitor_cache.cal = NULL;
	}
	return c != NULL ? &monitor_cache.entries[c - m->clients] : NULL;
}

/* Fill e for client c (k = r1 + r2 scores) at level a. */
static void
monitor_prepare(MonitorClient *e, const ModelClient *c, int k, double alpha, double a)
{
	double	   *C = palloc(sizeof(double) * k * k);
	double	   *Z = palloc(sizeof(double) * k * k);
	double	   *values = palloc(sizeof(double) * k);
	double	   *work = palloc(sizeof(double) * LINALG_EIGH_SMALL_WORK(k));

	if (e->B == NULL)
		e->B = MemoryContextAlloc(monitor_cache.cxt, sizeof(double) * Max(k * k, 1));
	e->kused = 0;
	e->t2_limit = NAN;
	e->q_limit = NAN;
	if (c->score_cov != NULL && k > 0)
	{
		memcpy(C, c->score_cov, sizeof(double) * k * k);
		if (linalg_eigh_small(k, C, values, Z, k, work) != 0)
			elog(ERROR, "eigendecomposition of the scores' covariance failed");
		for (int j = 0; j < k; j++)
		{
			if (!(values[j] > MONITOR_EIG_RTOL * values[0]))
				continue;
			for (int b = 0; b < k; b++)
				e->B[(int64) e->kused * k + b] = Z[(int64) b * k + j] / sqrt(values[j]);
			e->kused++;
		}
		e->t2_limit = t2_limit(e->kused, c->n, a);
	}
	if (c->residual_moments != NULL)
		e->q_limit = q_limit(c->residual_moments, a);
	e->alpha = alpha;
	e->ready = true;
	pfree(C);
	pfree(Z);
	pfree(values);
	pfree(work);
}

/*
 * The scores t = W y of x for client c of m (NULL: unseen, the global
 * components only) with y = (x - centre) / scale, and the residual
 * e = y - W't left in y; returns Q = ||e||^2.
 */
static double
monitor_scores(const ModelData *m, const ModelClient *c, const double *x, double *y, double *t)
{
	int			d = m->d;
	int			r2 = c ? c->r2 : 0;
	const double *centre;

	if (c != NULL)
		centre = c->mean;
	else
		centre = m->center == CENTER_NONE ? NULL : m->global_mean;
	for (int j = 0; j < d; j++)
	{
		y[j] = centre ? x[j] - centre[j] : x[j];
		if (m->scale)
			y[j] /= m->scale[j];
	}
	if (m->r1 > 0)
		linalg_matvec(false, m->r1, d, 1.0, m->U, y, 0.0, t);
	if (r2 > 0)
		linalg_matvec(false, r2, d, 1.0, c->V, y, 0.0, t + m->r1);
	/* e = y - W't, in y */
	if (m->r1 > 0)
		linalg_matvec(true, m->r1, d, -1.0, m->U, t, 1.0, y);
	if (r2 > 0)
		linalg_matvec(true, r2, d, -1.0, c->V, t + m->r1, 1.0, y);
	return linalg_dot(d, y, y);
}

/* The statistics of x for client c of m (NULL: unseen, Q against the global components only). */
static MonitorRow
monitor_row(const ModelData *m, const ModelClient *c, const double *x, double alpha, double *y,
			double *t)
{
	int			k = m->r1 + (c ? c->r2 : 0);
	MonitorRow	r = {NAN, NAN, NAN, NAN};
	MonitorClient *e;

	r.q = monitor_scores(m, c, x, y, t);
	if (c == NULL)
		return r;
	e = monitor_entry(m, c);
	if (!e->ready || e->alpha != alpha)
		monitor_prepare(e, c, k, alpha, 1.0 - sqrt(1.0 - alpha));	/* Sidak: each of the two */
	if (e->kused > 0)
	{
		r.t2 = 0.0;
		for (int j = 0; j < e->kused; j++)
		{
			double		z = linalg_dot(k, e->B + (int64) j * k, t);

			r.t2 += z * z;
		}
	}
	r.t2_limit = e->t2_limit;
	r.q_limit = e->q_limit;
	return r;
}

/* A row's score: the larger ratio of a statistic to its limit (either alone where the other has none), or NaN. */
static double
row_score(MonitorRow r)
{
	double		s = NAN;

	if (!isnan(r.t2) && r.t2_limit > 0.0)
		s = r.t2 / r.t2_limit;
	if (!isnan(r.q) && r.q_limit > 0.0)
		s = isnan(s) ? r.q / r.q_limit : Max(s, r.q / r.q_limit);
	return s;
}

double
monitor_reference_score(const ModelData *m, const ModelClient *c, const double *x, double *y, double *t)
{
	return row_score(monitor_row(m, c, x, MONITOR_REF_ALPHA, y, t));
}

/* ------------------------------------------------------------------------
 * Calibrated limits (the scores stored by calibrate.c)
 * ------------------------------------------------------------------------
 */

double
monitor_conformal_threshold(const double *top, int stored, int64 n, double alpha)
{
	int64		j = (int64) floor((double) (n + 1) * alpha + 1e-9);

	if (j < 1 || j > stored)
		return INFINITY;
	return top[j - 1];
}

int
monitor_conformal_keep(int64 n)
{
	return (int) Min(n, (int64) floor((double) (n + 1) * MONITOR_CAL_ALPHA_MAX + 1e-9));
}

/* The calibration of one model version: pooled and per client (the model's clients' order). */
typedef struct Calibration
{
	bool		present;
	int64		pooled_rows;	/* held-out rows scored */
	int			pooled_n;		/* their top scores, descending */
	double	   *pooled;
	int64	   *client_rows;
	int		   *client_n;		/* 0: judged by the pooled scores */
	double	  **client_scores;
} Calibration;

/* The columns calibrated limits read. */
static const char *const cal_columns[3] = {"calibration_rows", "calibration_scores", "client"};

/* Open a model table by relid, its calibration columns (n of cal_columns) found and checked readable. */
static Relation
cal_open(Oid relid, ModelTable t, int n, AttrNumber *att, const char *model)
{
	Relation	rel = relation_open(relid, AccessShareLock);
	char	   *detail = psprintf("Model \"%s\" is not as perpca_train() stores it.", model);

	for (int i = 0; i < n; i++)
	{
		ModelColumn col = model_schema_column(t, cal_columns[i]);

		att[i] = model_column_attnum(rel, &col, detail);
	}
	model_check_readable(rel, att, n, psprintf("model \"%s\"", model),
						 "perpca reads a model whole; disable row-level security on the model's tables.");
	return rel;
}

/* The stored scores of the slot's column att: a float8 vector without NULLs, finite; *n its length. */
static double *
cal_scores(TupleTableSlot *slot, AttrNumber att, int *n, const char *model)
{
	bool		isnull;
	Datum		v;
	ArrayType  *a;
	double	   *x;

	*n = 0;
	if (!AttributeNumberIsValid(att) || (v = slot_getattr(slot, att, &isnull), isnull))
		return NULL;
	a = DatumGetArrayTypeP(v);
	if (ARR_NDIM(a) != 1 || ARR_HASNULL(a) || ARR_ELEMTYPE(a) != FLOAT8OID)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_MODEL_DAMAGED),
				 errmsg("model \"%s\" is inconsistent", model),
				 errdetail("Its calibration_scores are not a float8 vector without NULLs.")));
	*n = ArrayGetNItems(1, ARR_DIMS(a));
	x = palloc(sizeof(double) * Max(*n, 1));
	memcpy(x, ARR_DATA_PTR(a), sizeof(double) * *n);
	return x;
}

/* The rows of a model table, read under the statement's snapshot: fn called for each. */
static void
cal_scan(Relation rel, void (*fn) (TupleTableSlot *, const AttrNumber *, const ModelData *, Calibration *, const char *),
		 const AttrNumber *att, const ModelData *m, Calibration *cal, const char *model)
{
	TableScanDesc scan = table_beginscan(rel, GetActiveSnapshot(), 0, NULL);
	TupleTableSlot *slot = table_slot_create(rel, NULL);

	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
		fn(slot, att, m, cal, model);
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
	relation_close(rel, NoLock);
}

static void
cal_info_row(TupleTableSlot *slot, const AttrNumber *att, const ModelData *m, Calibration *cal, const char *model)
{
	bool		isnull = true;

	(void) m;
	if (AttributeNumberIsValid(att[0]))
		cal->pooled_rows = DatumGetInt64(slot_getattr(slot, att[0], &isnull));
	cal->present = !isnull;
	cal->pooled = cal_scores(slot, att[1], &cal->pooled_n, model);
}

static void
cal_client_row(TupleTableSlot *slot, const AttrNumber *att, const ModelData *m, Calibration *cal, const char *model)
{
	bool		isnull;
	Datum		v = slot_getattr(slot, att[2], &isnull);
	char	   *name;
	const ModelClient *c;
	int			i;

	if (isnull || !AttributeNumberIsValid(att[0]))
		return;
	name = TextDatumGetCString(v);
	if ((c = model_find_client(m, name, strlen(name))) == NULL)
		return;
	i = c - m->clients;
	v = slot_getattr(slot, att[0], &isnull);
	cal->client_rows[i] = isnull ? 0 : DatumGetInt64(v);
	cal->client_scores[i] = cal_scores(slot, att[1], &cal->client_n[i], model);
}

/* The calibration of m, read once per model version into the monitor's cache. */
static const Calibration *
monitor_calibration(const ModelData *m, const char *model)
{
	MemoryContext old;
	AttrNumber	att[3];
	Calibration *cal;

	(void) monitor_entry(m, NULL);
	if (monitor_cache.cal != NULL)
		return monitor_cache.cal;
	old = MemoryContextSwitchTo(monitor_cache.cxt);
	cal = palloc0(sizeof(Calibration));
	cal->client_rows = palloc0(sizeof(int64) * Max(m->nclients, 1));
	cal->client_n = palloc0(sizeof(int) * Max(m->nclients, 1));
	cal->client_scores = palloc0(sizeof(double *) * Max(m->nclients, 1));
	cal_scan(cal_open(m->info_oid, MODEL_TABLE_INFO, 2, att, model), cal_info_row, att, m, cal, model);
	if (cal->present)
		cal_scan(cal_open(m->clients_oid, MODEL_TABLE_CLIENTS, 3, att, model), cal_client_row, att, m, cal, model);
	MemoryContextSwitchTo(old);
	monitor_cache.cal = cal;
	return cal;
}

/* The calibrated threshold on a row's score for client i at alpha: its own scores' when it has them, else the pooled. */
static double
calibrated_threshold(const Calibration *cal, int i, double alpha, const char *model)
{
	double		thr;

	if (!cal->present)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NOT_READY),
				 errmsg("model \"%s\" has no calibrated control limits", model),
				 errdetail("It was trained without held-out rows."),
				 errhint("Train it with perpca_train(..., calibration => 0.2, replace => true) to hold out a fifth of its rows for them, or pass limits => 'gaussian'.")));
	if (cal->client_n[i] > 0)
		return monitor_conformal_threshold(cal->client_scores[i], cal->client_n[i], cal->client_rows[i], alpha);
	thr = monitor_conformal_threshold(cal->pooled, cal->pooled_n, cal->pooled_rows, alpha);
	if (isinf(thr))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("model \"%s\" has too few held-out rows for calibrated limits at alpha = %g", model, alpha),
				 errdetail("Split-conformal limits at alpha need at least ceil(1 / alpha) - 1 held-out rows; the model has " INT64_FORMAT ".",
						   cal->pooled_rows),
				 errhint("Pass alpha >= %g, or train with a larger calibration share.",
						 1.0 / (double) (cal->pooled_rows + 1))));
	return thr;
}

/*
 * The statistics of x for client c with the calibrated limits at alpha:
 * the reference limits scaled by the threshold on the score, so that a row
 * is out of control exactly when its score exceeds the threshold.
 */
static MonitorRow
monitor_row_calibrated(const ModelData *m, const ModelClient *c, const double *x, double alpha, double *y,
					   double *t, const char *model)
{
	MonitorRow	r = monitor_row(m, c, x, MONITOR_REF_ALPHA, y, t);
	double		thr;

	if (c == NULL)
		return r;
	thr = calibrated_threshold(monitor_calibration(m, model), c - m->clients, alpha, model);
	r.t2_limit *= thr;
	r.q_limit *= thr;
	return r;
}

/* The row (t2, t2_limit, q, q_limit, out_of_control) of perpca_model_monitor; NaN is NULL. */
static Datum
monitor_result(FunctionCallInfo fcinfo, MonitorRow r)
{
	TupleDesc	desc;
	Datum		values[5];
	bool		nulls[5];
	bool		t2_out,
				q_out;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "perpca_model_monitor must return a record");
	desc = BlessTupleDesc(desc);
	values[0] = Float8GetDatum(r.t2);
	values[1] = Float8GetDatum(r.t2_limit);
	values[2] = Float8GetDatum(r.q);
	values[3] = Float8GetDatum(r.q_limit);
	nulls[0] = isnan(r.t2);
	nulls[1] = isnan(r.t2_limit);
	nulls[2] = isnan(r.q);
	nulls[3] = isnan(r.q_limit);
	t2_out = !nulls[0] && !nulls[1] && r.t2 > r.t2_limit;
	q_out = !nulls[2] && !nulls[3] && r.q > r.q_limit;
	values[4] = BoolGetDatum(t2_out || q_out);
	nulls[4] = !t2_out && !q_out && nulls[1] && nulls[3];	/* no limit to judge by */
	return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
}

/* The key of the call's client, for the error of a row with a gap (as model_functions.c's). */
static const char *
monitor_client_name(FunctionCallInfo fcinfo)
{
	const ModelClient *c = model_bound_client(fcinfo,
											  model_bind(fcinfo, PG_GETARG_TEXT_PP(ARG_MODEL)), false);

	if (c != NULL)
		return c->name;
	if (get_fn_expr_argtype(fcinfo->flinfo, ARG_CLIENT) == TEXTOID)
		return text_to_cstring(PG_GETARG_TEXT_PP(ARG_CLIENT));
	return NULL;
}

/* limits => 'gaussian' (false) or 'calibrated' (true); for calibrated ones, alpha within their range. */
static bool
monitor_limits_arg(FunctionCallInfo fcinfo, double alpha)
{
	char	   *limits = PG_NARGS() > ARG_LIMITS ? text_to_cstring(PG_GETARG_TEXT_PP(ARG_LIMITS)) : "gaussian";

	if (strcmp(limits, "gaussian") == 0)
		return false;
	if (strcmp(limits, "calibrated") != 0)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_OPTION),
				 errmsg("invalid value for option \"limits\": \"%s\"", limits),
				 errhint("Valid values are \"gaussian\" (the default) or \"calibrated\" (a model trained with calibration => share).")));
	if (alpha < MONITOR_CAL_ALPHA_MIN || alpha > MONITOR_CAL_ALPHA_MAX)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("calibrated limits take alpha between %g and %g, got %g", MONITOR_CAL_ALPHA_MIN,
						MONITOR_CAL_ALPHA_MAX, alpha),
				 errhint("The model stores the held-out scores those levels need; limits => 'gaussian' takes any alpha.")));
	return true;
}

/* The checked alpha and missing arguments; missing => 'observed' is refused. */
static PerpcaMissing
monitor_args(FunctionCallInfo fcinfo, double alpha)
{
	PerpcaMissing mode = missing_arg(fcinfo, ARG_MISSING);

	if (!(alpha > 0.0 && alpha < 1.0))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("alpha must be between 0 and 1 (exclusive), got %g", alpha),
				 errhint("alpha is the false-alarm rate of out_of_control, for example 0.01.")));
	if (mode == PERPCA_MISSING_OBSERVED)
		row_missing_refuse(mode, "perpca_model_monitor",
						   "T^2, Q and their limits are those of complete rows.",
						   "Pass missing => 'skip' to return NULL for a row with a gap (counted in one NOTICE), or fill the gaps first (perpca_model_impute).");
	return mode;
}

/* 55000 for a client of a model stored before its control statistics were. */
static void
monitor_check_client(FunctionCallInfo fcinfo, const ModelData *m, const ModelClient *c)
{
	if (c != NULL && (c->score_cov == NULL || c->residual_moments == NULL || c->mean == NULL) &&
		m->r1 + c->r2 > 0)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NOT_READY),
				 errmsg("model \"%s\" has no control statistics for client \"%s\"",
						text_to_cstring(PG_GETARG_TEXT_PP(ARG_MODEL)), c->name),
				 errdetail("Models stored before perpca 0.3.0 lack <model>_clients.score_covariance and residual_moments."),
				 errhint("Refresh the model (perpca_refresh) or train it again with replace => true.")));
}

/*
 * perpca_model_monitor(model, client, x, alpha DEFAULT 0.01, missing DEFAULT
 * 'error', limits DEFAULT 'gaussian', OUT t2, OUT t2_limit, OUT q, OUT
 * q_limit, OUT out_of_control): under missing => 'skip' a row with a gap is
 * NULL, counted as the other row functions count it; limits =>
 * 'calibrated' scales the limits at MONITOR_REF_ALPHA by the model's
 * split-conformal threshold at alpha.
 */
Datum
perpca_model_monitor(PG_FUNCTION_ARGS)
{
	ModelBinding *b = model_bind(fcinfo, PG_GETARG_TEXT_PP(ARG_MODEL));
	const ModelData *m = model_bound_data(b);
	double		alpha = PG_GETARG_FLOAT8(ARG_ALPHA);
	PerpcaMissing mode = monitor_args(fcinfo, alpha);
	bool		calibrated = monitor_limits_arg(fcinfo, alpha);
	const ModelClient *c;
	const double *x;
	const bool *obs;
	int			d;
	double	   *y,
			   *t;

	c = model_bound_client(fcinfo, b, false);
	(void) missing_read_client_row(fcinfo, PG_GETARG_ARRAYTYPE_P(ARG_X), mode, monitor_client_name,
								   MONITOR_MISSING_HINT, &d, &x, &obs);
	if (d != m->d)
		perpca_dim_mismatch(m->d, d, "x");
	if (obs != NULL)
	{
		missing_skip_row(fcinfo, model_bound_too_few(b));
		PG_RETURN_NULL();
	}
	monitor_check_client(fcinfo, m, c);
	y = model_bound_scratch(b, &t);
	if (calibrated)
		PG_RETURN_DATUM(monitor_result(fcinfo, monitor_row_calibrated(m, c, x, alpha, y, t,
																	  text_to_cstring(PG_GETARG_TEXT_PP(ARG_MODEL)))));
	PG_RETURN_DATUM(monitor_result(fcinfo, monitor_row(m, c, x, alpha, y, t)));
}

/*
 * For the write path (model_store.c): perpca_internal.client_monitor_stats
 * of statistics s (in the model's units) and W = [U; V] (rows) as two
 * arrays; false (nothing set) for empty statistics or no components.
 */
bool
monitor_client_stats(const PerpcaStats *s, const double *U, int r1, const double *V, int r2,
					 Datum *score_covariance, Datum *residual_moments)
{
	int			k = r1 + r2;
	double	   *C;
	double		moments[3] = {0, 0, 0};

	if (s->n == 0 || k == 0)
		return false;
	C = palloc(sizeof(double) * k * k);
	monitor_moments_any(s, stack_rows(U, r1, V, r2, s->dim), k, C, moments);
	*score_covariance = PointerGetDatum(perpca_matrix_build(C, k, k));
	*residual_moments = PointerGetDatum(perpca_vector_build(moments, 3));
	return true;
}
