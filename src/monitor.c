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
 * when the model is written (monitor_client_stats, called by model_store.c)
 * and stored in <model>_clients.score_covariance and .residual_moments: no
 * second pass over the rows.  For sketched statistics they are the
 * sketch's (M2 taken as B'B), computed in blocks of its rows, never as a
 * d x d matrix.
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
 * out of control exactly when s > c.  The stored top scores are read by
 * model_read.c, once per model version.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "error_kinds.h"
#include "linalg.h"
#include "missing.h"
#include "model_bind.h"
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

/* Client c's entry of the per-version figures kept with m's data (in its context). */
static MonitorClient *
monitor_entry(const ModelData *m, const ModelClient *c)
{
	ModelData  *data = (ModelData *) m;	/* a cache of figures derived from it */

	if (data->monitor == NULL)
		data->monitor = MemoryContextAllocZero(data->cxt, sizeof(MonitorClient) * Max(m->nclients, 1));
	return &((MonitorClient *) data->monitor)[c - m->clients];
}

/* Fill e for client c of m (k = r1 + r2 scores) at level a. */
static void
monitor_prepare(const ModelData *m, MonitorClient *e, const ModelClient *c, int k, double alpha, double a)
{
	double	   *C = palloc(sizeof(double) * k * k);
	double	   *Z = palloc(sizeof(double) * k * k);
	double	   *values = palloc(sizeof(double) * k);
	double	   *work = palloc(sizeof(double) * LINALG_EIGH_SMALL_WORK(k));

	if (e->B == NULL)
		e->B = MemoryContextAlloc(m->cxt, sizeof(double) * Max(k * k, 1));
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
	const double *centre = c != NULL ? c->mean : m->center == CENTER_NONE ? NULL : m->global_mean;

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
		monitor_prepare(m, e, c, k, alpha, 1.0 - sqrt(1.0 - alpha));	/* Sidak: each of the two */
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

/* The calibrated threshold on a row's score for client c at alpha: its own scores' when it has them, else the pooled. */
static double
calibrated_threshold(FunctionCallInfo fcinfo, ModelData *m, const ModelClient *c, double alpha)
{
	const ModelCalibration *cal = &m->calibration;
	const char *model = text_to_cstring(PG_GETARG_TEXT_PP(ARG_MODEL));
	double		thr;

	model_read_calibration(m, model);
	if (!cal->present)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NOT_READY),
				 errmsg("model \"%s\" has no calibrated control limits", model),
				 errdetail("It was trained without held-out rows."),
				 errhint("Train it with perpca_train(..., calibration => 0.2, replace => true) to hold out a fifth of its rows for them, or pass limits => 'gaussian'.")));
	if (c->calibration.n > 0)
		return monitor_conformal_threshold(c->calibration.scores, c->calibration.n, c->calibration.rows, alpha);
	thr = monitor_conformal_threshold(cal->scores, cal->n, cal->rows, alpha);
	if (isinf(thr))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("model \"%s\" has too few held-out rows for calibrated limits at alpha = %g", model, alpha),
				 errdetail("Split-conformal limits at alpha need at least ceil(1 / alpha) - 1 held-out rows; the model has " INT64_FORMAT ".",
						   cal->rows),
				 errhint("Pass alpha >= %g, or train with a larger calibration share.",
						 1.0 / (double) (cal->rows + 1))));
	return thr;
}

/* The record (t2, t2_limit, q, q_limit, out_of_control) of perpca_model_monitor; NaN is NULL. */
static Datum
monitor_result(FunctionCallInfo fcinfo, MonitorRow r)
{
	Datum		values[5] = {Float8GetDatum(r.t2), Float8GetDatum(r.t2_limit), Float8GetDatum(r.q),
	Float8GetDatum(r.q_limit)};
	bool		nulls[5] = {isnan(r.t2), isnan(r.t2_limit), isnan(r.q), isnan(r.q_limit)};
	bool		t2_out = !nulls[0] && !nulls[1] && r.t2 > r.t2_limit;
	bool		q_out = !nulls[2] && !nulls[3] && r.q > r.q_limit;

	values[4] = BoolGetDatum(t2_out || q_out);
	nulls[4] = !t2_out && !q_out && nulls[1] && nulls[3];	/* no limit to judge by */
	return model_result_record(fcinfo, values, nulls);
}

/* The key of the call's client, for the error of a row with a gap. */
static const char *
monitor_client_name(FunctionCallInfo fcinfo)
{
	return model_key_name(fcinfo, false);
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
 * split-conformal threshold at alpha, so that a row is out of control
 * exactly when its score exceeds the threshold.
 */
Datum
perpca_model_monitor(PG_FUNCTION_ARGS)
{
	ModelBinding *b = model_bind(fcinfo, PG_GETARG_TEXT_PP(ARG_MODEL));
	double		alpha = PG_GETARG_FLOAT8(ARG_ALPHA);
	PerpcaMissing mode = monitor_args(fcinfo, alpha);
	bool		calibrated = monitor_limits_arg(fcinfo, alpha);
	const ModelClient *c = model_bound_client(fcinfo, b, false);
	const double *x;
	const bool *obs;
	int			d;
	MonitorRow	r;

	(void) missing_read_client_row(fcinfo, PG_GETARG_ARRAYTYPE_P(ARG_X), mode, monitor_client_name,
								   MONITOR_MISSING_HINT, &d, &x, &obs);
	if (d != b->data->d)
		perpca_dim_mismatch(b->data->d, d, "x");
	if (obs != NULL)
	{
		missing_skip_row(fcinfo, &b->too_few);
		PG_RETURN_NULL();
	}
	monitor_check_client(fcinfo, b->data, c);
	r = monitor_row(b->data, c, x, calibrated ? MONITOR_REF_ALPHA : alpha, b->y, b->s);
	if (calibrated && c != NULL)
	{
		double		thr = calibrated_threshold(fcinfo, b->data, c, alpha);

		r.t2_limit *= thr;
		r.q_limit *= thr;
	}
	PG_RETURN_DATUM(monitor_result(fcinfo, r));
}

/* In the model's units; a sketch's statistics through its rows. */
bool
monitor_client_stats(const PerpcaStats *s, const double *U, int r1, const double *V, int r2,
					 Datum *score_covariance, Datum *residual_moments)
{
	int			k = r1 + r2,
				d = s->dim,
				rows;
	double		moments[3] = {0, 0, 0};
	double	   *C,
			   *W;
	const double *B;

	if (s->n == 0 || k == 0)
		return false;
	C = palloc(sizeof(double) * k * k);
	W = palloc(sizeof(double) * k * d);
	if (r1 > 0)
		memcpy(W, U, sizeof(double) * r1 * d);
	if (r2 > 0)
		memcpy(W + (int64) r1 * d, V, sizeof(double) * r2 * d);
	if (s->form != PERPCA_FORM_SKETCH)
		monitor_moments(s, W, k, C, moments);
	else
	{
		B = perpca_stats_sketch_rows(s, &rows);
		monitor_moments_rows(B, B != NULL ? rows : 0, (double) s->n, d, W, k, C, moments);
	}
	*score_covariance = PointerGetDatum(perpca_matrix_build(C, k, k));
	*residual_moments = PointerGetDatum(perpca_vector_build(moments, 3));
	return true;
}

/*
 * perpca_internal.client_monitor_stats(s, u, v) of the SQL of 0.3.0 and
 * 0.4.0 (sql/released), which runs until ALTER EXTENSION UPDATE:
 * monitor_client_stats as a record, NULLs for NULL or empty statistics.
 */
Datum
perpca_client_monitor_stats(PG_FUNCTION_ARGS)
{
	Datum		values[2] = {0, 0};
	bool		nulls[2] = {true, true};

	if (!PG_ARGISNULL(0))
	{
		PerpcaStats *s = PG_GETARG_PERPCA_STATS(0);
		int			r1,
					r2;
		double	   *U,
				   *V;

		perpca_stats_validate(s);
		U = perpca_components_arg(fcinfo, 1, s->dim, &r1, "global components");
		V = perpca_components_arg(fcinfo, 2, s->dim, &r2, "local components");
		nulls[0] = nulls[1] = !monitor_client_stats(s, U, r1, V, r2, &values[0], &values[1]);
	}
	PG_RETURN_DATUM(model_result_record(fcinfo, values, nulls));
}
