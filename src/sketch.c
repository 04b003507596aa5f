/*
 * sketch.c -- Frequent Directions over a group's centred rows: adding rows,
 * shrinking, merging sketches and stored values, the result and the
 * serialized state (the algorithm and its guarantee: sketch.h)
 *
 * A shrink works on the Gram matrix G = Buf Buf^T of the buffer (m <= 2 ell
 * rows): one BLAS rank-k update, a LAPACK eigendecomposition of order m
 * (dsyevd) and one matrix product B = diag(sqrt(1 - c_i / lambda_i))
 * V^T Buf, c_i = delta_t for the bottom s kept rows and 0 above them
 * (alpha-FD, shrink_cut).  Each scale is at most 1, so the small
 * eigenvalues' vectors, which the Gram matrix resolves only to
 * eps lambda_1, enter with weights that do not amplify their error.  The buffer's rows are those of the
 * sketch after any shrink, so the cost per row is O(d ell), amortized.
 */
#include "postgres.h"

#include <limits.h>
#include <math.h>

#include "common/int.h"
#include "utils/memutils.h"

#include "error_kinds.h"
#include "linalg.h"
#include "perpca.h"
#include "sketch.h"

/* Doubles of scratch a shrink of m rows needs: G (m x m), values, W (ell x m), new rows. */
static int64
shrink_work_size(int m, int ell, int d)
{
	return (int64) m * m + m + (int64) ell * m + (int64) ell * d;
}

void
sketch_check_ell(int ell, int d)
{
	if (ell < 1 || ell > PERPCA_SKETCH_MAX_ELL)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("ell must be between 1 and %d, not %d", PERPCA_SKETCH_MAX_ELL, ell)));
	if (ell > d)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("ell (%d) must not exceed the dimension d (%d)", ell, d),
				 errhint("With ell >= d the exact statistics, perpca_stats(x), are no larger than the sketch.")));
	if ((int64) 3 * ell * d > (int64) (MaxAllocSize / sizeof(double)))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("a sketch with ell = %d of dimension %d is too large", ell, d),
				 errdetail("Its buffer of 2 ell rows exceeds the allocation limit.")));
}

SketchState *
sketch_create(MemoryContext cxt, int d, int ell)
{
	SketchState *sk = MemoryContextAllocZero(cxt, sizeof(SketchState));

	perpca_check_sketch_dim(d);
	sk->cxt = cxt;
	sk->d = d;
	sk->ell = ell;
	sk->shift = MemoryContextAllocZero(cxt, sizeof(double) * 2 * d);
	sk->mu = sk->shift + d;
	sk->onorm = MemoryContextAlloc(cxt, sizeof(double) * ell);
	return sk;
}

/* The error for finite rows whose squares overflow. */
static void
too_large(void)
{
	ereport(ERROR,
			(errcode(PERPCA_ERRCODE_OUT_OF_RANGE),
			 errmsg("input rows are too large in magnitude for perpca_sketch"),
			 errdetail("The sum of squared deviations from the mean exceeds the range of float8."),
			 errhint("Divide the rows by a constant (their scale) before aggregating.")));
}

/*
 * G = Buf Buf^T (m = nrows).  The first northo rows are a shrink's result:
 * orthogonal, of squared norms onorm, so their block is diagonal and only
 * the newer rows N need products: N N^T (dsyrk) and N B^T (dgemm), about
 * three quarters of the flops of the whole dsyrk.
 */
static void
buffer_gram(const SketchState *sk, double *G)
{
	int			m = sk->nrows,
				d = sk->d,
				no = Min(sk->northo, m),
				r = m - no;
	const double *N = sk->buf + (int64) no * d;

	if (no == 0)
	{
		linalg_syrk_rows(m, d, 1.0, sk->buf, d, G, m);
		return;
	}
	for (int i = 0; i < no; i++)
	{
		memset(G + (int64) i * m, 0, sizeof(double) * no);
		G[(int64) i * m + i] = sk->onorm[i];
	}
	linalg_syrk_rows(r, d, 1.0, N, d, G + (int64) no * m + no, m);
	linalg_gemm(false, true, r, no, d, 1.0, N, d, sk->buf, d, 0.0, G + (int64) no * m, m);
	for (int i = no; i < m; i++)
		for (int j = 0; j < no; j++)
			G[(int64) j * m + i] = G[(int64) i * m + j];
}

/*
 * What a shrink to keep rows by delta_t takes from the i-th (0-based, by
 * descending eigenvalue) of them: delta_t for the bottom
 * perpca_sketch_shrunk_rows(keep), nothing above them (alpha-FD, sketch.h).
 */
static inline double
shrink_cut(int i, int keep, double delta_t)
{
	return i < keep - perpca_sketch_shrunk_rows(keep) ? 0.0 : delta_t;
}

/* Eigenvectors G (m x m) and ascending eigenvalues w of the buffer's Gram matrix. */
static void
buffer_eigen(SketchState *sk, double *G, double *w)
{
	int			m = sk->nrows;

	buffer_gram(sk, G);
	if (perpca_first_nonfinite(G, m * m) >= 0)
		too_large();
	if (linalg_eigh_all(m, G, w) != 0)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_INTERNAL),
				 errmsg("eigendecomposition failed in a Frequent Directions shrink")));
}

/*
 * Shrink the buffer's m = nrows rows to at most keep rows: delta_t is the
 * (keep + 1)-th eigenvalue of the Gram matrix (0 if there are no more than
 * keep), row i (i < keep) becomes sqrt(1 - c / lambda_i) v_i^T Buf with
 * c = delta_t for the bottom perpca_sketch_shrunk_rows(keep) rows and c = 0
 * above them.  Rows whose eigenvalue is not above c vanish.
 */
static void
sketch_shrink(SketchState *sk, int keep)
{
	int			m = sk->nrows,
				d = sk->d,
				k = 0;
	double	   *G,
			   *w,
			   *W,
			   *out;
	double		dt;

	if (m <= keep)
		return;
	if (sk->work == NULL)
		sk->work = MemoryContextAllocHuge(sk->cxt, sizeof(double) *
										  shrink_work_size(2 * sk->ell, sk->ell, d));
	G = sk->work;
	w = G + (int64) m * m;
	W = w + m;
	out = W + (int64) keep * m;
	buffer_eigen(sk, G, w);
	/* ascending: lambda_i (1-based, descending) is w[m - i] */
	dt = Max(w[m - keep - 1], 0.0);
	for (int i = 0; i < keep; i++)
	{
		double		lambda = w[m - 1 - i];
		double		cut = shrink_cut(i, keep, dt);

		if (!(lambda > cut))
			break;
		for (int j = 0; j < m; j++)
			W[(int64) k * m + j] = sqrt(1.0 - cut / lambda) * G[(int64) (m - 1 - i) * m + j];
		sk->onorm[k++] = lambda - cut;
	}
	linalg_gemm(false, false, k, d, m, 1.0, W, m, sk->buf, d, 0.0, out, d);
	memcpy(sk->buf, out, sizeof(double) * k * d);
	sk->nrows = k;
	sk->northo = k;
	sk->delta += dt;
}

/*
 * Room for rows rows in the buffer: it grows by doubling up to 2 ell rows, so
 * a small group's state stays small.
 */
static void
reserve_rows(SketchState *sk, int rows)
{
	int			cap;

	if (rows <= sk->bufcap)
		return;
	cap = Min(Max(Max(4, 2 * sk->bufcap), rows), 2 * sk->ell);
	cap = Max(cap, rows);
	sk->buf = sk->buf
		? repalloc_huge(sk->buf, sizeof(double) * cap * (Size) sk->d)
		: MemoryContextAllocHuge(sk->cxt, sizeof(double) * cap * (Size) sk->d);
	sk->bufcap = cap;
}

/* Make room for one row in the buffer (a full buffer is shrunk to ell rows). */
static inline double *
next_row(SketchState *sk)
{
	if (sk->nrows >= 2 * sk->ell)
		sketch_shrink(sk, sk->ell);
	if (sk->nrows == sk->bufcap)
		reserve_rows(sk, sk->nrows + 1);
	return sk->buf + (int64) sk->nrows++ * sk->d;
}

/* Insert the row scale * x (d values); nothing for a zero scale. */
static void
insert_row(SketchState *sk, double scale, const double *restrict x)
{
	double	   *restrict row;

	if (scale == 0.0)
		return;
	row = next_row(sk);
	for (int j = 0; j < sk->d; j++)
		row[j] = scale * x[j];
}

void
sketch_add_row(SketchState *sk, const double *restrict x)
{
	int			d = sk->d;
	double		n = (double) sk->n;
	double		scale = sqrt(n / (n + 1.0));
	double		inv = 1.0 / (n + 1.0);
	double		ss = 0.0;
	double	   *restrict shift = sk->shift;
	double	   *restrict mu = sk->mu;
	double	   *restrict row;

	if (sk->n == 0)
	{
		memcpy(shift, x, sizeof(double) * d);
		sk->n = 1;
		return;
	}
	row = next_row(sk);
	for (int j = 0; j < d; j++)
	{
		double		diff = (x[j] - shift[j]) - mu[j];

		ss += diff * diff;
		mu[j] += diff * inv;
		row[j] = scale * diff;
	}
	sk->trace += n * inv * ss;
	sk->n++;
}

/*
 * Fold the mean of nb rows, shift_b + mu_b, into the sketch's and insert the
 * rank-one term of the means' difference: sqrt(na nb / n) (mean_b - mean_a).
 * The rows of b (their co-moment) are inserted by the caller.
 */
static void
merge_means(SketchState *sk, int64 nb, const double *shift_b, const double *mu_b,
			double trace_b)
{
	int64		na = sk->n;
	int64		total = na;
	double		w;
	double	   *diff;
	double		ss = 0.0;

	perpca_add_count(&total, nb, "perpca_sketch row count");
	w = (double) nb / (double) total;
	if (na == 0)
	{
		memcpy(sk->shift, shift_b, sizeof(double) * sk->d);
		memcpy(sk->mu, mu_b, sizeof(double) * sk->d);
		sk->n = nb;
		sk->trace = trace_b;
		return;
	}
	diff = palloc(sizeof(double) * sk->d);
	for (int j = 0; j < sk->d; j++)
	{
		diff[j] = (shift_b[j] - sk->shift[j]) + (mu_b[j] - sk->mu[j]);
		ss += diff[j] * diff[j];
	}
	insert_row(sk, sqrt((double) na * w), diff);
	for (int j = 0; j < sk->d; j++)
		sk->mu[j] += w * diff[j];
	sk->trace += trace_b + (double) na * w * ss;
	sk->n = total;
	pfree(diff);
}

/* Insert `rows` rows of d values; then the delta and skipped count of their source. */
static void
insert_rows(SketchState *sk, const double *rows, int64 count)
{
	for (int64 i = 0; i < count; i++)
		insert_row(sk, 1.0, rows + i * sk->d);
}

/* Take the smaller ell (the result's guarantee is the weaker sketch's). */
static void
lower_ell(SketchState *sk, int ell)
{
	if (ell >= sk->ell)
		return;
	sketch_shrink(sk, ell);
	sk->ell = ell;
	if (sk->work != NULL)
	{
		pfree(sk->work);
		sk->work = NULL;
	}
}

void
sketch_merge(SketchState *a, const SketchState *b)
{
	if (a->d != b->d)
		perpca_dim_mismatch(a->d, b->d, "perpca_sketch state");
	perpca_add_count(&a->skipped, b->skipped, "perpca_sketch skipped row count");
	lower_ell(a, b->ell);
	if (b->n == 0)
		return;
	merge_means(a, b->n, b->shift, b->mu, b->trace);
	insert_rows(a, b->buf, b->nrows);
	a->delta += b->delta;
}

/*
 * The FD shrink of a dense value's M2 (d <= PERPCA_MAX_DENSE_DIM): its top
 * ell eigenpairs as rows sqrt(lambda_i - c) v_i into rows (ell x d), c =
 * lambda_{ell+1} for the bottom perpca_sketch_shrunk_rows(ell) and 0 above;
 * the number of rows, and lambda_{ell+1} into *dt.
 */
static int
dense_rows(const PerpcaStats *s, int ell, double *rows, double *dt)
{
	int			d = s->dim;
	int			k = Min(ell + 1, d);
	double	   *A = palloc(sizeof(double) * ((Size) d * d + k + (Size) d * k + LINALG_EIGH_WORK(d, k)));
	double	   *values = A + (Size) d * d;
	double	   *Z = values + k;
	double	   *work = Z + (Size) d * k;
	const double *m2 = PERPCA_STATS_BODY(s);
	int			r = 0;

	for (int64 i = 0, p = 0; i < d; i++)
		for (int64 j = i; j < d; j++, p++)
			A[i * d + j] = A[j * d + i] = m2[p];
	if (linalg_eigh_top(d, A, k, values, Z, k, work) != 0)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_INTERNAL),
				 errmsg("eigendecomposition of a dense perpca_stats value failed")));
	*dt = k > ell ? Max(values[ell], 0.0) : 0.0;
	for (int i = 0; i < Min(k, ell); i++, r++)
	{
		double		cut = shrink_cut(i, ell, *dt);

		if (!(values[i] > cut))
			break;
		for (int j = 0; j < d; j++)
			rows[(int64) r * d + j] = sqrt(values[i] - cut) * Z[(int64) j * k + i];
	}
	pfree(A);
	return r;
}

void
sketch_merge_stats(SketchState *sk, const PerpcaStats *s)
{
	int			rows;
	const double *B = perpca_stats_sketch_rows(s, &rows);

	if (s->dim != sk->d)
		perpca_dim_mismatch(sk->d, s->dim, "perpca_stats value");
	if (perpca_first_nonfinite(s->data, (int) Min(perpca_stats_value_count(s), INT_MAX)) >= 0)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_BAD_VALUE),
				 errmsg("invalid perpca_stats value"),
				 errdetail("The mean and co-moment values must be finite.")));
	perpca_add_count(&sk->skipped, perpca_stats_skipped(s), "perpca_sketch skipped row count");
	if (s->form == PERPCA_FORM_SKETCH)
		lower_ell(sk, s->ell);
	if (s->n == 0)
		return;
	merge_means(sk, s->n, PERPCA_STATS_MEAN(s), PERPCA_STATS_MEAN_LO(s), perpca_stats_trace(s));
	if (s->form == PERPCA_FORM_SKETCH)
	{
		insert_rows(sk, B, rows);
		sk->delta += perpca_stats_sketch_delta(s);
	}
	else if (s->form == PERPCA_FORM_THIN)
	{
		const double *Y = perpca_stats_thin_rows(s);

		insert_rows(sk, Y, s->n);
		if (Y != PERPCA_STATS_BODY(s))
			pfree((void *) Y);
	}
	else
	{
		double	   *top = palloc(sizeof(double) * sk->ell * sk->d);
		double		dt;
		int			r = dense_rows(s, sk->ell, top, &dt);

		insert_rows(sk, top, r);
		sk->delta += dt;
		pfree(top);
	}
}

/* The error for finite rows whose sums overflow. */
static void
check_finite_result(const SketchState *sk, const PerpcaStats *s)
{
	if (!isfinite(sk->trace) || !isfinite(sk->delta) ||
		perpca_first_nonfinite(s->data, (int) Min(perpca_stats_value_count(s), INT_MAX)) >= 0)
		too_large();
}

PerpcaStats *
sketch_to_stats(const SketchState *sk)
{
	SketchState tmp = *sk;
	PerpcaStats *s;

	/*
	 * At most ell rows, and at most n (merged thin rows and the means' rows
	 * can outnumber the rows of the group by one; the co-moment of n rows
	 * has rank below n, so that shrink removes rounding only).  Shrink a
	 * copy of the buffer: the state goes on unchanged (windows).
	 */
	int			keep = (int) Min((int64) sk->ell, Max(sk->n, 1));

	if (sk->nrows > keep)
	{
		tmp.buf = palloc(sizeof(double) * sk->nrows * (Size) sk->d);
		memcpy(tmp.buf, sk->buf, sizeof(double) * sk->nrows * (Size) sk->d);
		tmp.work = palloc(sizeof(double) * shrink_work_size(2 * sk->ell, sk->ell, sk->d));
		tmp.onorm = palloc(sizeof(double) * sk->ell);
		memcpy(tmp.onorm, sk->onorm, sizeof(double) * Min(sk->northo, sk->ell));
		tmp.cxt = CurrentMemoryContext;
		sketch_shrink(&tmp, keep);
	}
	if (sk->n <= 1)
		tmp.nrows = 0;			/* a thin value's one centred row is zero */
	s = perpca_stats_alloc(PERPCA_FORM_SKETCH, sk->d, sk->n, sk->skipped, sk->ell, tmp.nrows, true);
	if (sk->n > 0)
		perpca_stats_set_mean(s, sk->shift, sk->mu);
	PERPCA_STATS_BODY(s)[0] = sk->n > 1 ? tmp.delta : 0.0;
	PERPCA_STATS_BODY(s)[1] = sk->n > 1 ? sk->trace : 0.0;
	if (tmp.nrows > 0)
		memcpy(PERPCA_STATS_BODY(s) + 2, tmp.buf, sizeof(double) * tmp.nrows * (Size) sk->d);
	check_finite_result(&tmp, s);
	return s;
}

/* ------------------------------------------------------------------------
 * Serialized state: the state exactly (buffer as it is)
 * ------------------------------------------------------------------------
 */

typedef struct SerialSketch
{
	int32		vl_len_;		/* varlena header (do not touch directly) */
	uint8		format;			/* SKETCH_STATE_FORMAT */
	uint8		unused[3];
	int32		d;
	int32		ell;
	int32		nrows;
	int64		n;
	int64		skipped;
	double		trace;
	double		delta;
	double		data[FLEXIBLE_ARRAY_MEMBER];	/* shift, mu (d each), nrows x d */
} SerialSketch;

static Size
serial_size(int d, int nrows)
{
	return offsetof(SerialSketch, data) + sizeof(double) * (2 + (Size) nrows) * d;
}

bytea *
sketch_serialize(const SketchState *sk)
{
	Size		size = serial_size(sk->d, sk->nrows);
	SerialSketch *ss = palloc0(size);

	SET_VARSIZE(ss, size);
	ss->format = SKETCH_STATE_FORMAT;
	ss->d = sk->d;
	ss->ell = sk->ell;
	ss->nrows = sk->nrows;
	ss->n = sk->n;
	ss->skipped = sk->skipped;
	ss->trace = sk->trace;
	ss->delta = sk->delta;
	memcpy(ss->data, sk->shift, sizeof(double) * 2 * sk->d);	/* shift, mu */
	if (sk->nrows > 0)
		memcpy(ss->data + 2 * sk->d, sk->buf, sizeof(double) * sk->nrows * (Size) sk->d);
	return (bytea *) ss;
}

bool
sketch_is_serialized(const bytea *b)
{
	return VARSIZE(b) >= offsetof(SerialSketch, data) &&
		((const SerialSketch *) b)->format == SKETCH_STATE_FORMAT;
}

SketchState *
sketch_deserialize(MemoryContext cxt, const bytea *b)
{
	const SerialSketch *ss = (const SerialSketch *) b;
	SketchState *sk;

	if (!sketch_is_serialized(b) || ss->d < 1 || ss->d > PERPCA_SKETCH_MAX_DIM ||
		ss->ell < 1 || ss->ell > PERPCA_SKETCH_MAX_ELL || ss->nrows < 0 ||
		ss->nrows > 2 * ss->ell || ss->n < 0 || ss->skipped < 0 ||
		VARSIZE(b) != serial_size(ss->d, ss->nrows))
		elog(ERROR, "serialized perpca_sketch state is malformed");
	sk = sketch_create(cxt, ss->d, ss->ell);
	reserve_rows(sk, ss->nrows);
	sk->nrows = ss->nrows;
	sk->n = ss->n;
	sk->skipped = ss->skipped;
	sk->trace = ss->trace;
	sk->delta = ss->delta;
	memcpy(sk->shift, ss->data, sizeof(double) * 2 * ss->d);
	if (ss->nrows > 0)
		memcpy(sk->buf, ss->data + 2 * ss->d, sizeof(double) * ss->nrows * (Size) ss->d);
	return sk;
}
