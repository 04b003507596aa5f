/*
 * stats_agg.c -- the aggregates perpca_stats(float8[]) and perpca_merge()
 *
 * Rows are buffered into a block; a full block is centred at its own mean,
 * added to M2 with one BLAS rank-k update (dsyrk) and merged into the state
 * with the pairwise formula of Chan et al.:
 *   M2 = M2a + M2b + na nb / (na + nb) * delta delta^T,  delta = mean_b - mean_a.
 * Nothing ever forms sum x x^T - n mean mean^T.  Rows enter relative to a
 * reference point (the first row) and the mean is carried as reference +
 * offset, so data far from the origin lose no precision.
 *
 * While a group has at most d/2 rows the state keeps just its rows (no d x d
 * matrix at all) and the result is a thin value; past that it switches to
 * the dense form once and for all.
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "utils/array.h"

#include "linalg.h"
#include "perpca.h"
#include "stats.h"

/* Rows per BLAS block: large enough for an efficient dsyrk, small enough
 * that many groups' buffers stay cheap (measured best at d = 64 and 784). */
#define BLOCK_ROWS 128

/* Aggregate transition state, kept in the aggregate memory context. */
typedef struct StatsState
{
	MemoryContext cxt;			/* where the state and its buffers live */
	int			d;
	int64		n;				/* rows merged into mu and m2 */
	double	   *shift;			/* d: reference point; rows enter as x - shift */
	double	   *mu;				/* d: mean of the merged rows minus shift */
	double	   *m2;				/* d x d upper triangle; NULL while thin */
	int			nbuf;			/* rows waiting in buf */
	int			bufcap;			/* rows buf can hold now */
	double	   *buf;			/* bufcap x d, row-major, rows minus shift */
	double	   *bsum;			/* d: column sums of the rows in buf */
} StatsState;

PG_FUNCTION_INFO_V1(perpca_stats_accum);
PG_FUNCTION_INFO_V1(perpca_stats_merge_accum);
PG_FUNCTION_INFO_V1(perpca_stats_combine);
PG_FUNCTION_INFO_V1(perpca_stats_serialize);
PG_FUNCTION_INFO_V1(perpca_stats_deserialize);
PG_FUNCTION_INFO_V1(perpca_stats_final);

static StatsState *
state_create(MemoryContext cxt, int d)
{
	StatsState *st = MemoryContextAllocZero(cxt, sizeof(StatsState));

	st->cxt = cxt;
	st->d = d;
	st->shift = MemoryContextAllocZero(cxt, sizeof(double) * d);
	st->mu = MemoryContextAllocZero(cxt, sizeof(double) * d);
	st->bsum = MemoryContextAllocZero(cxt, sizeof(double) * d);
	return st;
}

/* Does the state hold no rows at all? */
static inline bool
state_empty(const StatsState *st)
{
	return st->n == 0 && st->nbuf == 0;
}

/* Make room for `rows` buffered rows, growing geometrically. */
static void
state_reserve(StatsState *st, int rows)
{
	int			cap;
	Size		bytes;

	if (rows <= st->bufcap)
		return;
	cap = Max(rows, Max(8, st->bufcap * 2));
	bytes = sizeof(double) * cap * st->d;
	st->buf = st->buf ? repalloc_huge(st->buf, bytes)
		: MemoryContextAllocHuge(st->cxt, bytes);
	st->bufcap = cap;
}

/* Append nrows rows src + offset to the buffer (restrict: vectorizable). */
static void
state_append(StatsState *st, const double *restrict src, int nrows,
			 const double *restrict offset)
{
	int			d = st->d;
	double	   *restrict sum = st->bsum;

	state_reserve(st, st->nbuf + nrows);
	for (int i = 0; i < nrows; i++)
	{
		double	   *restrict row = st->buf + (int64) (st->nbuf + i) * d;
		const double *restrict x = src + (int64) i * d;

		for (int j = 0; j < d; j++)
		{
			row[j] = x[j] + offset[j];
			sum[j] += row[j];
		}
	}
	st->nbuf += nrows;
}

/*
 * Fold nb rows with mean shift_b + mu_b (their co-moment already added to
 * m2) into st.  shift_b - st->shift is exact when the two points are close.
 */
static void
state_merge_moments(StatsState *st, int64 nb, const double *shift_b, const double *mu_b)
{
	int64		na = st->n;
	double		w = (double) nb / (double) (na + nb);
	double	   *delta;

	if (na == 0)
	{
		memcpy(st->shift, shift_b, sizeof(double) * st->d);
		memcpy(st->mu, mu_b, sizeof(double) * st->d);
		st->n = nb;
		return;
	}
	delta = palloc(sizeof(double) * st->d);
	for (int j = 0; j < st->d; j++)
		delta[j] = (shift_b[j] - st->shift[j]) + (mu_b[j] - st->mu[j]);
	linalg_syr_upper(st->d, (double) na * w, delta, st->m2);
	for (int j = 0; j < st->d; j++)
		st->mu[j] += w * delta[j];
	st->n = na + nb;
	pfree(delta);
}

/* Mean of the buffered rows (minus shift) into mean; rejects non-finite sums. */
static void
buffer_mean(const StatsState *st, double *mean)
{
	for (int j = 0; j < st->d; j++)
	{
		if (!isfinite(st->bsum[j]))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("input row must not contain NaN or infinite values"),
					 errdetail("Column %d of a block of %d rows holds NaN or infinity, or its sum overflows.",
							   j + 1, st->nbuf)));
		mean[j] = st->bsum[j] / st->nbuf;
	}
}

/* Apply the buffered block: one dsyrk on the block centred at its own mean. */
static void
state_flush(StatsState *st)
{
	int			d = st->d;
	int			k = st->nbuf;
	double	   *bm;

	if (k == 0)
		return;
	Assert(st->m2 != NULL);
	bm = palloc(sizeof(double) * d);
	buffer_mean(st, bm);
	for (int i = 0; i < k; i++)
	{
		double	   *restrict row = st->buf + (int64) i * d;

		for (int j = 0; j < d; j++)
			row[j] -= bm[j];
	}
	linalg_syrk_upper(d, k, 1.0, st->buf, st->m2);
	state_merge_moments(st, k, st->shift, bm);
	memset(st->bsum, 0, sizeof(double) * d);
	st->nbuf = 0;
	pfree(bm);
}

/* Switch a thin state to the dense form: allocate M2, apply the buffer. */
static void
state_densify(StatsState *st)
{
	if (st->m2 != NULL)
		return;
	st->m2 = MemoryContextAllocZero(st->cxt, sizeof(double) * st->d * st->d);
	state_flush(st);
}

/* row = x - shift and sum += row: the per-row hot loop (restrict: vectorizable). */
static inline void
shift_row(int d, const double *restrict x, const double *restrict shift,
		  double *restrict row, double *restrict sum)
{
	for (int j = 0; j < d; j++)
	{
		row[j] = x[j] - shift[j];
		sum[j] += row[j];
	}
}

/* Add one input row; it enters as x - shift. */
static void
state_add_row(StatsState *st, const double *x)
{
	if (state_empty(st))
		memcpy(st->shift, x, sizeof(double) * st->d);
	if (st->m2 == NULL && st->nbuf >= PERPCA_STATS_THIN_MAX(st->d))
		state_densify(st);
	else if (st->m2 != NULL && st->nbuf >= BLOCK_ROWS)
		state_flush(st);
	if (st->nbuf == st->bufcap)
		state_reserve(st, st->nbuf + 1);
	shift_row(st->d, x, st->shift, st->buf + (int64) st->nbuf * st->d, st->bsum);
	st->nbuf++;
}

/* Add a stored value's M2 (either form) into the dense state's m2. */
static void
add_comoment(StatsState *st, const PerpcaStats *s)
{
	const double *body = PERPCA_STATS_BODY(s);
	int64		d = st->d;

	if (s->form == PERPCA_FORM_THIN)
	{
		linalg_syrk_upper(st->d, (int) s->n, 1.0, body, st->m2);
		return;
	}
	for (int64 i = 0, k = 0; i < d; i++)
		for (int64 j = i; j < d; j++)
			st->m2[i * d + j] += body[k++];
}

/* Merge a stored value into the state. */
static void
state_merge_stats(StatsState *st, const PerpcaStats *s)
{
	if (s->n == 0)
		return;
	if (s->form == PERPCA_FORM_THIN && st->m2 == NULL &&
		st->nbuf + s->n <= PERPCA_STATS_THIN_MAX(st->d))
	{
		/* rows y centred at mean + mean_lo enter as y + (mean - shift) + mean_lo */
		double	   *offset = palloc(sizeof(double) * st->d);

		if (state_empty(st))
			memcpy(st->shift, PERPCA_STATS_MEAN(s), sizeof(double) * st->d);
		perpca_stats_offset(s, st->shift, offset);
		state_append(st, PERPCA_STATS_BODY(s), (int) s->n, offset);
		pfree(offset);
		return;
	}
	state_densify(st);
	state_flush(st);
	add_comoment(st, s);
	state_merge_moments(st, s->n, PERPCA_STATS_MEAN(s), PERPCA_STATS_MEAN_LO(s));
}

/* Merge state b into state a. */
static void
state_merge_state(StatsState *a, StatsState *b)
{
	if (state_empty(b))
		return;
	if (a->m2 == NULL && b->m2 == NULL &&
		a->nbuf + b->nbuf <= PERPCA_STATS_THIN_MAX(a->d))
	{
		double	   *offset = palloc(sizeof(double) * a->d);

		if (state_empty(a))
			memcpy(a->shift, b->shift, sizeof(double) * a->d);
		for (int j = 0; j < a->d; j++)
			offset[j] = b->shift[j] - a->shift[j];
		state_append(a, b->buf, b->nbuf, offset);
		pfree(offset);
		return;
	}
	state_densify(a);
	state_flush(a);
	state_densify(b);
	state_flush(b);
	linalg_axpy((int64) a->d * a->d, 1.0, b->m2, a->m2);
	state_merge_moments(a, b->n, b->shift, b->mu);
}

/* hi + lo = a + b exactly, hi = fl(a + b) (Knuth's TwoSum). */
static void
two_sum(double a, double b, double *hi, double *lo)
{
	double		s = a + b;
	double		bb = s - a;

	*hi = s;
	*lo = (a - (s - bb)) + (b - bb);
}

/* The stored mean (mean, mean_lo) = shift + mu. */
static void
store_mean(PerpcaStats *s, const double *shift, const double *mu)
{
	for (int j = 0; j < s->dim; j++)
		two_sum(shift[j], mu[j], &PERPCA_STATS_MEAN(s)[j], &PERPCA_STATS_MEAN_LO(s)[j]);
}

/* A thin value from a thin state: its rows centred at their mean. */
static PerpcaStats *
thin_stats(StatsState *st)
{
	int			d = st->d;
	PerpcaStats *s = perpca_stats_alloc(PERPCA_FORM_THIN, d, st->nbuf);
	double	   *rows = PERPCA_STATS_BODY(s);
	double	   *mu;

	if (st->nbuf == 0)
		return s;
	mu = palloc(sizeof(double) * d);
	buffer_mean(st, mu);
	store_mean(s, st->shift, mu);
	for (int64 i = 0; i < st->nbuf; i++)
		for (int j = 0; j < d; j++)
			rows[i * d + j] = st->buf[i * d + j] - mu[j];
	pfree(mu);
	return s;
}

/* A dense value from a dense state. */
static PerpcaStats *
dense_stats(StatsState *st)
{
	int64		d = st->d;
	PerpcaStats *s;
	double	   *m2;

	state_flush(st);
	s = perpca_stats_alloc(PERPCA_FORM_DENSE, st->d, st->n);
	store_mean(s, st->shift, st->mu);
	m2 = PERPCA_STATS_BODY(s);
	for (int64 i = 0, k = 0; i < d; i++)
		for (int64 j = i; j < d; j++)
			m2[k++] = st->m2[i * d + j];
	return s;
}

/* Build the stored value from the state, in the form the state is in. */
static PerpcaStats *
state_to_stats(StatsState *st)
{
	return st->m2 == NULL ? thin_stats(st) : dense_stats(st);
}

/* ------------------------------------------------------------------------
 * Aggregate support functions
 * ------------------------------------------------------------------------
 */

/* Fetch the aggregate context or complain about a direct call. */
static MemoryContext
agg_context(FunctionCallInfo fcinfo, const char *fname)
{
	MemoryContext aggcxt;

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "%s called in non-aggregate context", fname);
	return aggcxt;
}

/*
 * Progress of a long scan (perpca.progress_rows > 0): every that many rows
 * this process has aggregated for the current aggregate context, a NOTICE
 * and the count in pg_stat_activity.query; the final function puts the
 * statement text back.
 */
static void
report_progress(MemoryContext aggcxt)
{
	static MemoryContext counting = NULL;
	static int64 rows = 0;

	if (aggcxt != counting)
	{
		counting = aggcxt;
		rows = 0;
	}
	if (++rows % perpca_progress_rows != 0)
		return;
	ereport(NOTICE,
			(errmsg("perpca_stats: %lld rows aggregated by this process", (long long) rows)));
	perpca_report_phase("perpca_stats: %lld rows aggregated", (long long) rows);
}

/* perpca_stats(float8[]) transition: NULL rows are skipped. */
Datum
perpca_stats_accum(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = agg_context(fcinfo, "perpca_stats_accum");
	StatsState *st = PG_ARGISNULL(0) ? NULL : (StatsState *) PG_GETARG_POINTER(0);
	double	   *x;
	int			d;

	if (PG_ARGISNULL(1))
	{
		if (st == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(st);
	}
	x = perpca_vector_shape(PG_GETARG_ARRAYTYPE_P(1), &d, "input row");
	if (st == NULL)
		st = state_create(aggcxt, d);
	else if (d != st->d)
		perpca_dim_mismatch(st->d, d, "input row");
	state_add_row(st, x);
	if (perpca_progress_rows > 0)
		report_progress(aggcxt);
	PG_RETURN_POINTER(st);
}

/* perpca_merge(perpca_stats) transition. */
Datum
perpca_stats_merge_accum(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = agg_context(fcinfo, "perpca_stats_merge_accum");
	StatsState *st = PG_ARGISNULL(0) ? NULL : (StatsState *) PG_GETARG_POINTER(0);
	PerpcaStats *s;

	if (PG_ARGISNULL(1))
	{
		if (st == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(st);
	}
	s = PG_GETARG_PERPCA_STATS(1);
	perpca_stats_check_version(s);
	if (st == NULL)
		st = state_create(aggcxt, s->dim);
	else if (s->dim != st->d)
		perpca_dim_mismatch(st->d, s->dim, "perpca_stats value");
	state_merge_stats(st, s);
	PG_RETURN_POINTER(st);
}

Datum
perpca_stats_combine(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = agg_context(fcinfo, "perpca_stats_combine");
	StatsState *a = PG_ARGISNULL(0) ? NULL : (StatsState *) PG_GETARG_POINTER(0);
	StatsState *b = PG_ARGISNULL(1) ? NULL : (StatsState *) PG_GETARG_POINTER(1);

	if (b == NULL)
	{
		if (a == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(a);
	}
	if (a == NULL)
		a = state_create(aggcxt, b->d);	/* a copy of b in our context */
	else if (a->d != b->d)
		perpca_dim_mismatch(a->d, b->d, "input row");
	state_merge_state(a, b);
	PG_RETURN_POINTER(a);
}

/* The serialized state is the stored value itself, as bytea. */
Datum
perpca_stats_serialize(PG_FUNCTION_ARGS)
{
	agg_context(fcinfo, "perpca_stats_serialize");
	PG_RETURN_POINTER(state_to_stats((StatsState *) PG_GETARG_POINTER(0)));
}

Datum
perpca_stats_deserialize(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = agg_context(fcinfo, "perpca_stats_deserialize");
	PerpcaStats *s = (PerpcaStats *) PG_DETOAST_DATUM(PG_GETARG_DATUM(0));
	StatsState *st;

	if (VARSIZE(s) < offsetof(PerpcaStats, data))
		elog(ERROR, "serialized perpca_stats state is too short");
	perpca_stats_check_version(s);
	if (s->dim < 1 || s->dim > PERPCA_MAX_DIM || s->n < 0 ||
		VARSIZE(s) != offsetof(PerpcaStats, data) +
		sizeof(double) * perpca_stats_nvalues(s->form, s->dim, s->n))
		elog(ERROR, "serialized perpca_stats state has the wrong length");
	st = state_create(aggcxt, s->dim);
	state_merge_stats(st, s);
	PG_RETURN_POINTER(st);
}

Datum
perpca_stats_final(PG_FUNCTION_ARGS)
{
	agg_context(fcinfo, "perpca_stats_final");
	perpca_restore_activity();
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	PG_RETURN_POINTER(state_to_stats((StatsState *) PG_GETARG_POINTER(0)));
}
