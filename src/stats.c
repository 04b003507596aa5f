/*
 * stats.c -- the perpca_stats type and its aggregates
 *
 * perpca_stats(float8[]) buffers rows into a block, centres the block at its
 * own mean, adds it to M2 with one BLAS rank-k update (dsyrk) and merges it
 * into the running state with the pairwise formula of Chan et al.:
 *   M2 = M2a + M2b + na nb / (na + nb) * delta delta^T,  delta = mean_b - mean_a.
 * Nothing ever forms sum x x^T - n mean mean^T.  Rows are accumulated
 * relative to a reference point (the first row), and the mean is carried as
 * reference + offset, so data far from the origin lose no precision.
 */
#include "postgres.h"

#include <math.h>

#include "common/shortest_dec.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "libpq/pqformat.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "linalg.h"
#include "perpca.h"
#include "stats.h"

/* Rows per BLAS block: large enough for an efficient dsyrk, small enough
 * that many groups' buffers stay cheap (measured best at d = 64 and 784). */
#define BLOCK_ROWS 128

/* Aggregate transition state, kept in the aggregate memory context. */
typedef struct StatsState
{
	int			d;
	int64		n;				/* rows merged into mu and m2 */
	double	   *shift;			/* d: reference point; rows enter as x - shift */
	double	   *mu;				/* d: mean of x - shift (the mean is shift + mu) */
	double	   *m2;				/* d x d, upper triangle valid */
	int			nbuf;			/* rows waiting in buf */
	int			bufcap;			/* rows buf can hold now (up to BLOCK_ROWS) */
	double	   *buf;			/* bufcap x d, row-major, rows minus shift */
	double	   *bsum;			/* d: column sums of the rows in buf */
} StatsState;

PG_FUNCTION_INFO_V1(perpca_stats_in);
PG_FUNCTION_INFO_V1(perpca_stats_out);
PG_FUNCTION_INFO_V1(perpca_stats_recv);
PG_FUNCTION_INFO_V1(perpca_stats_send);
PG_FUNCTION_INFO_V1(perpca_stats_accum);
PG_FUNCTION_INFO_V1(perpca_stats_merge_accum);
PG_FUNCTION_INFO_V1(perpca_stats_combine);
PG_FUNCTION_INFO_V1(perpca_stats_serialize);
PG_FUNCTION_INFO_V1(perpca_stats_deserialize);
PG_FUNCTION_INFO_V1(perpca_stats_final);
PG_FUNCTION_INFO_V1(perpca_count);
PG_FUNCTION_INFO_V1(perpca_dim);
PG_FUNCTION_INFO_V1(perpca_mean);
PG_FUNCTION_INFO_V1(perpca_covariance);

/* ------------------------------------------------------------------------
 * The stored value
 * ------------------------------------------------------------------------
 */

/* Allocate a zeroed value of dimension d. */
static PerpcaStats *
stats_alloc(int d, int64 n)
{
	Size		size = PERPCA_STATS_SIZE(d);
	PerpcaStats *s = (PerpcaStats *) palloc0(size);

	SET_VARSIZE(s, size);
	s->version = PERPCA_STATS_VERSION;
	s->form = PERPCA_FORM_DENSE;
	s->dim = d;
	s->n = n;
	return s;
}

static void
invalid_stats(const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_EXCEPTION),
			 errmsg("invalid perpca_stats value"),
			 errdetail("%s", detail)));
}

/* Reject versions and forms this build does not know. */
static void
check_version(const PerpcaStats *s)
{
	if (s->version != PERPCA_STATS_VERSION || s->form != PERPCA_FORM_DENSE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("unsupported perpca_stats format version %d form %d",
						s->version, s->form),
				 errhint("The value was written by a newer version of perpca.")));
}

void
perpca_stats_validate(const PerpcaStats *s)
{
	int			d = s->dim;
	int64		total;
	const double *m2;
	int64		k = 0;

	check_version(s);
	if (d < 1)
		invalid_stats("The dimension must be positive.");
	perpca_check_dim_limit(d);
	if (s->n < 0)
		invalid_stats("The row count must not be negative.");
	total = PERPCA_STATS_VALUES(d);
	for (int64 i = 0; i < total; i++)
	{
		if (!isfinite(s->data[i]))
			invalid_stats("The mean and co-moment values must be finite.");
		if (s->n == 0 && s->data[i] != 0.0)
			invalid_stats("A value with no rows must have zero mean and co-moments.");
	}
	m2 = PERPCA_STATS_M2(s);
	for (int i = 0; i < d; k += d - i, i++)
		if (m2[k] < 0.0)
			invalid_stats("The co-moment matrix must have a non-negative diagonal.");
}

/* ------------------------------------------------------------------------
 * Text and binary input/output
 * ------------------------------------------------------------------------
 */

static void
syntax_error(const char *str, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
			 errmsg("invalid input syntax for type perpca_stats: \"%.80s%s\"",
					str, strlen(str) > 80 ? "..." : ""),
			 errdetail("%s", detail)));
}

/* Expect the literal token tok at *p; advance past it and any blanks. */
static void
expect_token(const char **p, const char *tok, const char *str)
{
	while (**p == ' ')
		(*p)++;
	if (strncmp(*p, tok, strlen(tok)) != 0)
		syntax_error(str, psprintf("Expected \"%s\".", tok));
	*p += strlen(tok);
}

/* Parse a signed 64-bit integer at *p. */
static int64
parse_int(const char **p, const char *str)
{
	char	   *end;
	long long	v;

	errno = 0;
	v = strtoll(*p, &end, 10);
	if (end == *p || errno != 0)
		syntax_error(str, "Expected an integer.");
	*p = end;
	return (int64) v;
}

/* Parse "{v1,v2,...}" with exactly count finite values into out. */
static void
parse_list(const char **p, double *out, int64 count, const char *str)
{
	expect_token(p, "{", str);
	for (int64 i = 0; i < count; i++)
	{
		char	   *end;

		while (**p == ' ')
			(*p)++;
		if (**p == '}')
			syntax_error(str, psprintf("A list has %lld values where %lld are expected.",
									   (long long) i, (long long) count));
		if (i > 0)
			expect_token(p, ",", str);
		errno = 0;
		out[i] = strtod(*p, &end);
		if (end == *p)
			syntax_error(str, psprintf("Expected %lld numbers in a list.", (long long) count));
		if (!isfinite(out[i]) || errno == ERANGE)
			syntax_error(str, "Values must be finite numbers.");
		*p = end;
	}
	while (**p == ' ')
		(*p)++;
	if (**p == ',')
		syntax_error(str, psprintf("A list has more than the %lld values expected.", (long long) count));
	expect_token(p, "}", str);
}

/* Text form: "v1 n=<n> d=<d> mean={...} mean_lo={...} m2={packed upper triangle}". */
Datum
perpca_stats_in(PG_FUNCTION_ARGS)
{
	const char *str = PG_GETARG_CSTRING(0);
	const char *p = str;
	int64		n,
				d;
	PerpcaStats *s;

	expect_token(&p, "v", str);
	if (parse_int(&p, str) != PERPCA_STATS_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("unsupported perpca_stats format version in \"%.20s\"", str),
				 errhint("The value was written by a newer version of perpca.")));
	expect_token(&p, "n=", str);
	n = parse_int(&p, str);
	expect_token(&p, "d=", str);
	d = parse_int(&p, str);
	if (n < 0)
		syntax_error(str, "The row count n must not be negative.");
	if (d < 1)
		syntax_error(str, "The dimension d must be positive.");
	if (d > PERPCA_MAX_DIM)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("dimension %lld exceeds the limit of %d", (long long) d, PERPCA_MAX_DIM)));
	s = stats_alloc((int) d, n);
	expect_token(&p, "mean=", str);
	parse_list(&p, PERPCA_STATS_MEAN(s), d, str);
	expect_token(&p, "mean_lo=", str);
	parse_list(&p, PERPCA_STATS_MEAN_LO(s), d, str);
	expect_token(&p, "m2=", str);
	parse_list(&p, PERPCA_STATS_M2(s), PERPCA_STATS_PACKED(d), str);
	while (*p == ' ')
		p++;
	if (*p != '\0')
		syntax_error(str, "Unexpected text after the value.");
	perpca_stats_validate(s);
	PG_RETURN_POINTER(s);
}

/* Append "{...}" with each value in shortest exact (round-trip) form. */
static void
append_list(StringInfo buf, const double *x, int64 count)
{
	char		num[DOUBLE_SHORTEST_DECIMAL_LEN];

	appendStringInfoChar(buf, '{');
	for (int64 i = 0; i < count; i++)
	{
		if (i > 0)
			appendStringInfoChar(buf, ',');
		double_to_shortest_decimal_buf(x[i], num);
		appendStringInfoString(buf, num);
	}
	appendStringInfoChar(buf, '}');
}

Datum
perpca_stats_out(PG_FUNCTION_ARGS)
{
	PerpcaStats *s = PG_GETARG_PERPCA_STATS(0);
	StringInfoData buf;

	check_version(s);
	initStringInfo(&buf);
	appendStringInfo(&buf, "v%d n=%lld d=%d mean=", s->version, (long long) s->n, s->dim);
	append_list(&buf, PERPCA_STATS_MEAN(s), s->dim);
	appendStringInfoString(&buf, " mean_lo=");
	append_list(&buf, PERPCA_STATS_MEAN_LO(s), s->dim);
	appendStringInfoString(&buf, " m2=");
	append_list(&buf, PERPCA_STATS_M2(s), PERPCA_STATS_PACKED(s->dim));
	PG_RETURN_CSTRING(buf.data);
}

Datum
perpca_stats_recv(PG_FUNCTION_ARGS)
{
	StringInfo	msg = (StringInfo) PG_GETARG_POINTER(0);
	int			version = pq_getmsgbyte(msg);
	int			form = pq_getmsgbyte(msg);
	int32		d = pq_getmsgint(msg, 4);
	int64		n = pq_getmsgint64(msg);
	int64		total;
	PerpcaStats *s;

	if (version != PERPCA_STATS_VERSION || form != PERPCA_FORM_DENSE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("unsupported perpca_stats format version %d form %d", version, form)));
	if (d < 1)
		invalid_stats("The dimension must be positive.");
	perpca_check_dim_limit(d);
	total = PERPCA_STATS_VALUES(d);
	if ((int64) (msg->len - msg->cursor) != total * (int64) sizeof(double))
		invalid_stats("The message length does not match the dimension.");
	s = stats_alloc(d, n);
	for (int64 i = 0; i < total; i++)
		s->data[i] = pq_getmsgfloat8(msg);
	perpca_stats_validate(s);
	PG_RETURN_POINTER(s);
}

Datum
perpca_stats_send(PG_FUNCTION_ARGS)
{
	PerpcaStats *s = PG_GETARG_PERPCA_STATS(0);
	int64		total = PERPCA_STATS_VALUES(s->dim);
	StringInfoData buf;

	check_version(s);
	pq_begintypsend(&buf);
	pq_sendbyte(&buf, s->version);
	pq_sendbyte(&buf, s->form);
	pq_sendint32(&buf, s->dim);
	pq_sendint64(&buf, s->n);
	for (int64 i = 0; i < total; i++)
		pq_sendfloat8(&buf, s->data[i]);
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

/* ------------------------------------------------------------------------
 * Aggregate state: blocked rank-k updates and pairwise merges
 * ------------------------------------------------------------------------
 */

static StatsState *
state_create(MemoryContext aggcxt, int d)
{
	StatsState *st = MemoryContextAllocZero(aggcxt, sizeof(StatsState));

	st->d = d;
	st->shift = MemoryContextAllocZero(aggcxt, sizeof(double) * d);
	st->mu = MemoryContextAllocZero(aggcxt, sizeof(double) * d);
	st->m2 = MemoryContextAllocZero(aggcxt, sizeof(double) * d * d);
	st->bsum = MemoryContextAllocZero(aggcxt, sizeof(double) * d);
	return st;
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

/* row = x - shift and sum += row (restrict lets the compiler vectorize). */
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

/* row -= mean. */
static inline void
center_row(int d, double *restrict row, const double *restrict mean)
{
	for (int j = 0; j < d; j++)
		row[j] -= mean[j];
}

/* Apply the buffered block: one dsyrk on the block centred at its own mean. */
static void
state_flush(StatsState *st)
{
	int			d = st->d;
	int			k = st->nbuf;
	double	   *bm = st->bsum;

	if (k == 0)
		return;
	for (int j = 0; j < d; j++)
	{
		if (!isfinite(bm[j]))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("input row must not contain NaN or infinite values"),
					 errdetail("Column %d of a block of %d rows holds NaN or infinity, or its sum overflows.",
							   j + 1, k)));
		bm[j] /= k;
	}
	for (int i = 0; i < k; i++)
		center_row(d, st->buf + (int64) i * d, bm);
	linalg_syrk_upper(d, k, 1.0, st->buf, st->m2);
	state_merge_moments(st, k, st->shift, bm);
	memset(bm, 0, sizeof(double) * d);
	st->nbuf = 0;
}

/*
 * Buffer one row (relative to the reference point), one block at a time.
 * A NaN or infinite entry makes its column sum non-finite, which
 * state_flush rejects before the block touches the state.
 */
static void
state_add_row(MemoryContext aggcxt, StatsState *st, const double *x)
{
	double	   *row;

	if (st->n == 0 && st->nbuf == 0)
		memcpy(st->shift, x, sizeof(double) * st->d);
	if (st->nbuf == st->bufcap)
	{
		if (st->bufcap == BLOCK_ROWS)
			state_flush(st);
		else
		{
			int			cap = Min(BLOCK_ROWS, Max(8, st->bufcap * 2));
			Size		bytes = sizeof(double) * cap * st->d;

			st->buf = st->buf ? repalloc(st->buf, bytes) : MemoryContextAlloc(aggcxt, bytes);
			st->bufcap = cap;
		}
	}
	row = st->buf + (int64) st->nbuf * st->d;
	shift_row(st->d, x, st->shift, row, st->bsum);
	st->nbuf++;
}

/* Merge a stored value (mean + mean_lo, packed M2) into the state. */
static void
state_merge_stats(StatsState *st, const PerpcaStats *s)
{
	const double *m2 = PERPCA_STATS_M2(s);
	int			d = st->d;
	int64		k = 0;

	if (s->n == 0)
		return;
	state_flush(st);
	for (int i = 0; i < d; i++)
		for (int j = i; j < d; j++)
			st->m2[(int64) i * d + j] += m2[k++];
	state_merge_moments(st, s->n, PERPCA_STATS_MEAN(s), PERPCA_STATS_MEAN_LO(s));
}

/* Merge state b into state a (both flushed). */
static void
state_merge_state(StatsState *a, StatsState *b)
{
	state_flush(a);
	state_flush(b);
	if (b->n == 0)
		return;
	linalg_axpy((int64) a->d * a->d, 1.0, b->m2, a->m2);
	state_merge_moments(a, b->n, b->shift, b->mu);
}

/* Fetch the aggregate context or complain about a direct call. */
static MemoryContext
agg_context(FunctionCallInfo fcinfo, const char *fname)
{
	MemoryContext aggcxt;

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "%s called in non-aggregate context", fname);
	return aggcxt;
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
	state_add_row(aggcxt, st, x);
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
	check_version(s);
	if (st == NULL)
		st = state_create(aggcxt, s->dim);
	else if (s->dim != st->d)
		perpca_dim_mismatch(st->d, s->dim, "perpca_stats value");
	state_merge_stats(st, s);
	PG_RETURN_POINTER(st);
}

/* Copy a state into another memory context (combine with a NULL first input). */
static StatsState *
state_copy(MemoryContext aggcxt, StatsState *src)
{
	StatsState *st = state_create(aggcxt, src->d);

	state_flush(src);
	st->n = src->n;
	memcpy(st->shift, src->shift, sizeof(double) * src->d);
	memcpy(st->mu, src->mu, sizeof(double) * src->d);
	memcpy(st->m2, src->m2, sizeof(double) * src->d * src->d);
	return st;
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
		PG_RETURN_POINTER(state_copy(aggcxt, b));
	if (a->d != b->d)
		perpca_dim_mismatch(a->d, b->d, "input row");
	state_merge_state(a, b);
	PG_RETURN_POINTER(a);
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

/* Build the stored value from the state. */
static PerpcaStats *
state_to_stats(StatsState *st)
{
	PerpcaStats *s;
	double	   *m2;
	int			d = st->d;
	int64		k = 0;

	state_flush(st);
	s = stats_alloc(d, st->n);
	if (st->n > 0)
		for (int j = 0; j < d; j++)
			two_sum(st->shift[j], st->mu[j], &PERPCA_STATS_MEAN(s)[j], &PERPCA_STATS_MEAN_LO(s)[j]);
	m2 = PERPCA_STATS_M2(s);
	for (int i = 0; i < d; i++)
		for (int j = i; j < d; j++)
			m2[k++] = st->m2[(int64) i * d + j];
	return s;
}

/* The serialized state is the stored value itself, as bytea. */
Datum
perpca_stats_serialize(PG_FUNCTION_ARGS)
{
	StatsState *st;

	agg_context(fcinfo, "perpca_stats_serialize");
	st = (StatsState *) PG_GETARG_POINTER(0);
	PG_RETURN_POINTER(state_to_stats(st));
}

Datum
perpca_stats_deserialize(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = agg_context(fcinfo, "perpca_stats_deserialize");
	bytea	   *b = PG_GETARG_BYTEA_PP(0);
	PerpcaStats *s;
	StatsState *st;

	if (VARSIZE_ANY(b) < offsetof(PerpcaStats, data))
		invalid_stats("The serialized state is too short.");
	s = (PerpcaStats *) PG_DETOAST_DATUM_COPY(PG_GETARG_DATUM(0));
	check_version(s);
	if (s->dim < 1 || s->dim > PERPCA_MAX_DIM || VARSIZE(s) != PERPCA_STATS_SIZE(s->dim))
		invalid_stats("The serialized state has the wrong length.");
	st = state_create(aggcxt, s->dim);
	state_merge_stats(st, s);
	PG_RETURN_POINTER(st);
}

Datum
perpca_stats_final(PG_FUNCTION_ARGS)
{
	StatsState *st;

	agg_context(fcinfo, "perpca_stats_final");
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	st = (StatsState *) PG_GETARG_POINTER(0);
	PG_RETURN_POINTER(state_to_stats(st));
}

/* ------------------------------------------------------------------------
 * Accessors
 * ------------------------------------------------------------------------
 */

void
perpca_stats_moment(const PerpcaStats *s, const double *center, double *out)
{
	int			d = s->dim;
	const double *mean = PERPCA_STATS_MEAN(s);
	const double *mean_lo = PERPCA_STATS_MEAN_LO(s);
	const double *m2 = PERPCA_STATS_M2(s);
	double		inv = 1.0 / (double) s->n;
	int64		k = 0;

	Assert(s->n > 0);
	for (int i = 0; i < d; i++)
		for (int j = i; j < d; j++)
			out[(int64) i * d + j] = m2[k++] * inv;
	if (center != NULL)
	{
		double	   *delta = palloc(sizeof(double) * d);

		for (int j = 0; j < d; j++)
			delta[j] = (mean[j] - center[j]) + mean_lo[j];
		linalg_syr_upper(d, 1.0, delta, out);
		pfree(delta);
	}
	linalg_symmetrize_upper(d, out);
}

Datum
perpca_count(PG_FUNCTION_ARGS)
{
	PerpcaStats *s = PG_GETARG_PERPCA_STATS(0);

	PG_RETURN_INT64(s->n);
}

Datum
perpca_dim(PG_FUNCTION_ARGS)
{
	PerpcaStats *s = PG_GETARG_PERPCA_STATS(0);

	PG_RETURN_INT32(s->dim);
}

/* Mean vector; NULL for a value with no rows. */
Datum
perpca_mean(PG_FUNCTION_ARGS)
{
	PerpcaStats *s = PG_GETARG_PERPCA_STATS(0);

	double	   *mean;

	check_version(s);
	if (s->n == 0)
		PG_RETURN_NULL();
	mean = palloc(sizeof(double) * s->dim);
	for (int j = 0; j < s->dim; j++)
		mean[j] = PERPCA_STATS_MEAN(s)[j] + PERPCA_STATS_MEAN_LO(s)[j];
	PG_RETURN_ARRAYTYPE_P(perpca_vector_build(mean, s->dim));
}

/* Covariance (1/n) M2, or the uncentered (1/n) sum x x^T; NULL with no rows. */
Datum
perpca_covariance(PG_FUNCTION_ARGS)
{
	PerpcaStats *s = PG_GETARG_PERPCA_STATS(0);
	bool		centered = PG_GETARG_BOOL(1);
	double	   *cov;
	double	   *zero;

	check_version(s);
	if (s->n == 0)
		PG_RETURN_NULL();
	cov = palloc(sizeof(double) * s->dim * s->dim);
	zero = palloc0(sizeof(double) * s->dim);
	perpca_stats_moment(s, centered ? NULL : zero, cov);
	PG_RETURN_ARRAYTYPE_P(perpca_matrix_build(cov, s->dim, s->dim));
}
