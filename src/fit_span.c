/*
 * fit_span.c -- a fit of thin and sketched clients in the span of their rows
 *
 * The stacked rows R (m x d: each client's Y_i rows, then its offset
 * delta_i when it has one) span every S_i.  Their Gram matrix, with each
 * row divided by its norm so that its conditioning reflects only how
 * nearly the rows depend on each other (not their scales), is G~ = D^-1 R
 * R' D^-1 = Q L Q' (D the rows' norms).  The p directions of L above
 * SPAN_RANK_TOL of its largest give the orthonormal basis E = R' D^-1 Q_p
 * L_p^-1/2 (d x p), never formed: a row's coordinates are its row of D Q_p
 * L_p^1/2, and a p-dimensional component X lifts to E X = R' (K X) with K
 * = D^-1 Q_p L_p^-1/2 (one pass over the rows).  G is formed a panel of
 * rows at a time (SPAN_HOLD_BYTES, SPAN_STREAM_BYTES), and rows left in
 * storage are read a panel at a time, so the rows are never held whole.
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/guc.h"

#include "eigen.h"
#include "fit_span.h"
#include "linalg.h"

/* The span is used when its m stacked rows are at most d / SPAN_PAYS: below, a fit in d costs about as much. */
#define SPAN_PAYS 4

/*
 * Directions of the normalized Gram matrix below this share of its
 * largest eigenvalue are left out: repeated rows, and rows that depend on
 * others to rounding.  A kept direction's basis vector is orthonormal to
 * about eps / SPAN_RANK_TOL (the Gram matrix squares the rows' condition),
 * and fit_span_lift orthonormalizes the lifted components again.
 */
#define SPAN_RANK_TOL 1e-10

/*
 * Rows held at once while G is formed: a panel of SPAN_HOLD_BYTES against
 * each panel of SPAN_STREAM_BYTES after it (the lift reads those too).  A
 * client whose rows were left in storage (ClientInput.stored) is read a
 * panel at a time, so the fit holds these bytes of rows, not all of them;
 * G reads the rows after the first held panel again for each held panel
 * (bench/README.md: span_fit.sh measures what that costs).
 */
#define SPAN_HOLD_BYTES (32 * 1024 * 1024)
#define SPAN_STREAM_BYTES (8 * 1024 * 1024)

bool		perpca_fit_span = true;

void
fit_span_init(void)
{
	DefineCustomBoolVariable("perpca.fit_span",
							 "Fit thin and sketched clients in the span of their rows.",
							 "A diagnostic: off fits them in all d dimensions; the objective and its optimum are the same.",
							 &perpca_fit_span, true, PGC_USERSET, 0, NULL, NULL, NULL);
}

/* Consecutive stacked rows of one source: a client's Y (in memory or in storage), or its delta. */
typedef struct SpanRun
{
	const double *rows;			/* count x d in memory (the client's own), or NULL: in storage */
	const ClientInput *in;		/* rows NULL: the client whose rows these are (client_rows) */
	int			count;
	int			first;			/* its first row among the stacked rows */
} SpanRun;

struct FitSpan
{
	int			d;
	int			m;				/* stacked rows */
	int			p;				/* the span's dimension */
	int			nruns;
	SpanRun    *runs;
	double	   *K;				/* m x p: E = R' K */
};

/* The runs of the clients' rows, in client order; false when one is dense (the span does not apply). */
static bool
span_runs(FitSpan *s, const FitClient *clients, const ClientInput *in, int n)
{
	s->runs = palloc(sizeof(SpanRun) * Max(2 * n, 1));
	s->nruns = 0;
	s->m = 0;
	for (int i = 0; i < n; i++)
	{
		const FitClient *c = &clients[i];

		if (c->S != NULL)
			return false;
		if (c->nrows > 0)
			s->runs[s->nruns++] = (SpanRun) {c->Y, c->Y != NULL ? NULL : &in[i], c->nrows, s->m};
		s->m += c->nrows;
		if (c->delta != NULL)
			s->runs[s->nruns++] = (SpanRun) {c->delta, NULL, 1, s->m++};
	}
	return true;
}

/* Rows lo .. lo + count - 1 of run j (0-based within it) into P (count x d). */
static void
span_run_rows(const FitSpan *s, const SpanRun *run, int lo, int count, double *P)
{
	if (run->rows != NULL)
		memcpy(P, run->rows + (int64) lo * s->d, sizeof(double) * s->d * count);
	else
		client_rows(run->in, lo, count, P);
}

/* Rows first .. first + count - 1 of R packed into P (count x d), read from storage where they are. */
static void
span_pack(const FitSpan *s, int first, int count, double *P)
{
	for (int j = 0; j < s->nruns; j++)
	{
		const SpanRun *run = &s->runs[j];
		int			lo = Max(first, run->first),
					hi = Min(first + count, run->first + run->count);

		if (lo < hi)
			span_run_rows(s, run, lo - run->first, hi - lo, P + (int64) (lo - first) * s->d);
	}
}

/* Rows of d doubles in bytes, at least one. */
static int
span_rows_in(int64 bytes, int d, int m)
{
	return (int) Max(1, Min(m, bytes / ((int64) sizeof(double) * d)));
}

/* G = R R' (m x m, full): a held panel of rows against each streamed panel after it. */
static double *
span_gram(const FitSpan *s)
{
	int			m = s->m,
				d = s->d,
				hold = span_rows_in(SPAN_HOLD_BYTES, d, m),
				stream = span_rows_in(SPAN_STREAM_BYTES, d, m);
	double	   *G = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * m * m);
	double	   *A = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * hold * d);
	double	   *B = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * stream * d);

	for (int a = 0; a < m; a += hold)
	{
		int			na = Min(hold, m - a);

		span_pack(s, a, na, A);
		linalg_syrk_rows(na, d, 1.0, A, d, G + (int64) a * m + a, m);
		for (int b = a + na; b < m; b += stream)
		{
			int			nb = Min(stream, m - b);

			CHECK_FOR_INTERRUPTS();
			span_pack(s, b, nb, B);
			linalg_gemm(false, true, na, nb, d, 1.0, A, d, B, d, 0.0, G + (int64) a * m + b, m);
		}
	}
	/* the blocks above the diagonal, mirrored */
	for (int i = 0; i < m; i++)
		for (int j = 0; j < i; j++)
			G[(int64) i * m + j] = G[(int64) j * m + i];
	pfree(A);
	pfree(B);
	return G;
}

/*
 * The basis of the span from G = R R' (destroyed): the rows' norms, the
 * eigenpairs of the normalized G, the p directions kept; the stacked rows'
 * coordinates (m x p) returned, the lift's coefficients into s->K.
 */
static double *
span_basis(FitSpan *s, double *G)
{
	int			m = s->m,
				p = 0;
	double	   *norm = palloc(sizeof(double) * Max(m, 1));
	double	   *w = palloc(sizeof(double) * Max(m, 1));
	double	   *C;

	for (int r = 0; r < m; r++)
		norm[r] = sqrt(G[(int64) r * m + r]);
	for (int i = 0; i < m; i++)
		for (int j = 0; j < m; j++)
			G[(int64) i * m + j] = norm[i] > 0.0 && norm[j] > 0.0 ?
				G[(int64) i * m + j] / norm[i] / norm[j] : 0.0;
	if (linalg_eigh_all(m, G, w) != 0)
		elog(ERROR, "eigendecomposition of the rows' Gram matrix failed");
	while (p < m && w[m - 1 - p] > SPAN_RANK_TOL * w[m - 1])
		p++;
	s->p = p;
	C = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * m * Max(p, 1));
	s->K = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * m * Max(p, 1));
	for (int t = 0; t < p; t++)
	{
		const double *q = G + (int64) (m - 1 - t) * m;	/* eigenvector of the t-th largest */
		double		root = sqrt(w[m - 1 - t]);

		for (int r = 0; r < m; r++)
		{
			C[(int64) r * p + t] = norm[r] * q[r] * root;
			s->K[(int64) r * p + t] = norm[r] > 0.0 ? q[r] / root / norm[r] : 0.0;
		}
	}
	pfree(norm);
	pfree(w);
	pfree(G);
	return C;
}

/* Whether the fit is one the span covers, before any arithmetic. */
static bool
span_applies(const FitOptions *opts, int n)
{
	return perpca_fit_span && n > 0 && opts->method == FIT_METHOD_PERPCA &&
		opts->start == NULL && opts->U0 == NULL;
}

bool
fit_span_rows_stored(const FitOptions *opts)
{
	return span_applies(opts, 1) && opts->scale == FIT_SCALE_NONE;
}

/* Each client's rows and delta replaced by their coordinates (rows of C, m x p). */
static void
span_clients(const FitSpan *s, FitClient *clients, int n, const double *C)
{
	int			first = 0;

	for (int i = 0; i < n; i++)
	{
		FitClient  *c = &clients[i];

		if (c->nrows > 0)
			c->Y = C + (int64) first * s->p;
		first += c->nrows;
		if (c->delta != NULL)
			c->delta = C + (int64) (first++) * s->p;
	}
}

FitSpan *
fit_span_enter(FitClient *clients, const ClientInput *in, int n, int d, int n_global,
			   const FitOptions *opts, int *p)
{
	FitSpan    *s;
	double	   *C;
	int			kmax = 0;

	if (!span_applies(opts, n))
		return NULL;
	s = palloc0(sizeof(FitSpan));
	s->d = d;
	if (!span_runs(s, clients, in, n) || s->m == 0 || s->m > d / SPAN_PAYS)
	{
		pfree(s->runs);
		pfree(s);
		return NULL;
	}
	C = span_basis(s, span_gram(s));
	for (int i = 0; i < n; i++)
		kmax = Max(kmax, n_global + clients[i].r2);
	/* a client's components cannot all lie in a span smaller than them: fit in d */
	if (kmax > s->p)
	{
		pfree(C);
		pfree(s->K);
		pfree(s->runs);
		pfree(s);
		return NULL;
	}
	span_clients(s, clients, n, C);
	if (opts->verbose)
		ereport(NOTICE,
				(errmsg("fit in the span of the clients' rows: %d dimensions of %d (%d stacked rows)",
						s->p, d, s->m)));
	*p = s->p;
	return s;
}

/* X (d x q) = E Xp for Xp p x q: R' (K Xp), a run of rows (or a streamed panel of one) at a time. */
static double *
span_lift_block(const FitSpan *s, const double *Xp, int q)
{
	int			stream = span_rows_in(SPAN_STREAM_BYTES, s->d, s->m);
	double	   *Z = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * s->m * Max(q, 1));
	double	   *X = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * s->d * Max(q, 1));
	double	   *P = NULL;

	memset(X, 0, sizeof(double) * s->d * Max(q, 1));
	if (q == 0 || s->p == 0)
		return X;
	linalg_gemm(false, false, s->m, q, s->p, 1.0, s->K, s->p, Xp, q, 0.0, Z, q);
	for (int j = 0; j < s->nruns; j++)
	{
		const SpanRun *run = &s->runs[j];

		for (int r = 0; r < run->count; r += stream)
		{
			int			count = Min(stream, run->count - r);
			const double *rows = run->rows != NULL ? run->rows + (int64) r * s->d : NULL;

			CHECK_FOR_INTERRUPTS();
			if (rows == NULL)
			{
				if (P == NULL)
					P = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * stream * s->d);
				span_run_rows(s, run, r, count, P);
				rows = P;
			}
			linalg_gemm(true, false, s->d, q, count, 1.0, rows, s->d,
						Z + (int64) (run->first + r) * q, q, 1.0, X, q);
		}
	}
	if (P != NULL)
		pfree(P);
	pfree(Z);
	return X;
}

/* A (d x r, stride lda) <- (I - UU')A for the d x r1 U, then orthonormal, signs fixed. */
static void
span_polish(int d, const double *U, int r1, double *A, int r, int lda)
{
	double	   *work;

	if (r == 0)
		return;
	work = palloc(sizeof(double) * LINALG_CHOL_WORK(r));
	if (U != NULL && r1 > 0)
	{
		double	   *UtA = palloc(sizeof(double) * r1 * r);

		linalg_gemm(true, false, r1, r, d, 1.0, U, r1, A, lda, 0.0, UtA, r);
		linalg_gemm(false, false, d, r, r1, -1.0, U, r1, UtA, r, 1.0, A, lda);
		pfree(UtA);
	}
	eigen_orthonormalize(FIT_RETRACT_POLAR, d, r, A, lda, work);
	linalg_fix_signs(d, r, A, lda);
	pfree(work);
}

void
fit_span_lift(const FitSpan *s, FitNode *node, FitResult *res)
{
	int			d = s->d,
				q = res->rU,
				col;
	double	   *Xp,
			   *X;

	for (int i = 0; i < node->n; i++)
		q += node->clients[i].k - node->clients[i].lfirst;
	Xp = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * s->p * Max(q, 1));
	linalg_copy(s->p, res->rU, res->U, res->rU, Xp, q);
	col = res->rU;
	for (int i = 0; i < node->n; i++)
	{
		FitClient  *c = &node->clients[i];

		linalg_copy(s->p, c->k - c->lfirst, c->W + c->lfirst, c->k, Xp + col, q);
		col += c->k - c->lfirst;
	}
	X = span_lift_block(s, Xp, q);
	res->U = palloc(sizeof(double) * d * Max(res->rU, 1));
	linalg_copy(d, res->rU, X, q, res->U, res->rU);
	span_polish(d, NULL, 0, res->U, res->rU, res->rU);
	col = res->rU;
	for (int i = 0; i < node->n; i++)
	{
		FitClient  *c = &node->clients[i];

		c->W = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * d * Max(c->k, 1));
		linalg_copy(d, c->lfirst, res->U, res->rU, c->W, c->k);
		linalg_copy(d, c->k - c->lfirst, X + col, q, c->W + c->lfirst, c->k);
		span_polish(d, res->U, res->rU, c->W + c->lfirst, c->k - c->lfirst, c->k);
		col += c->k - c->lfirst;
		c->d = d;
	}
	node->d = d;
	pfree(Xp);
	pfree(X);
}
