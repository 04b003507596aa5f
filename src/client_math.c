/*
 * client_math.c -- what one client computes from its S_i (see client_math.h)
 *
 * Steps are in the paper's convention: the gradient of f_i is S_i W.
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/memutils.h"

#include "client_math.h"
#include "perpca.h"
#include "eigen.h"
#include "linalg.h"

/* Dimension up to which the best response is always the exact LAPACK solve (d-space; Gram route). */
#define BEST_RESPONSE_EXACT_DIM 96
#define BEST_RESPONSE_EXACT_GRAM 24
/*
 * A small dense S_i whose rank r is at most this fraction of d is solved in
 * its r-dimensional range (the tridiagonal reduction costs r^3): eigenvalues
 * below LOW_RANK_TOL lambda_max, zeros at rounding, are dropped.
 */
#define LOW_RANK_FRACTION 0.9
#define LOW_RANK_TOL 1e-13
/*
 * Dimension above which a best response whose iteration failed keeps its
 * Ritz vectors instead of an exact solve (d = 4096: about a minute); the
 * next round warm-starts from them anyway.
 */
#define BEST_RESPONSE_EXACT_FALLBACK 1024
/*
 * Dimension from which a product S_i X reads only the upper block triangle
 * of a dense S_i (linalg_symm_half, in blocks of HALF_READ_PANEL rows): a
 * dgemm on the whole S_i packs all of it for every product, which for the
 * few columns of a round costs more than the arithmetic (bench/dense_read.c,
 * d = 4096, load 2.3: dgemm 19.7 / 18.1 / 22.2 ms for 5 / 8 / 13 columns,
 * the half read 14.4 / 13.5 / 19.3, cblas_dsymm 21.8 / 20.7 / 24.5; d = 768,
 * load 13, OpenBLAS's Cooperlake kernels: dgemm 0.52 / 0.72 / 0.87 / 1.17
 * ms for 13 / 18 / 26 / 39 columns, the half read in panels of 128 rows
 * 0.30 / 0.28 / 0.46 / 0.58; d = 300-400 alike from 13 columns, up to
 * 15% slower at 5).  Below HALF_READ_WIDE the panels are
 * HALF_READ_PANEL_SMALL rows.
 */
#define HALF_READ_DIM 256
#define HALF_READ_WIDE 1024
#define HALF_READ_PANEL 256
#define HALF_READ_PANEL_SMALL 128
/*
 * Dimension from which a d-space best response carries its last start block
 * into the next round (response_start): where a read of S_i costs more than
 * the step's small products.  Below, on the gauntlet's tuning half (lsa_man,
 * d = 768, the widest), it did not pay: 244 -> 258 rounds, CPU 3.14 -> 3.31 s.
 */
#define CARRY_DIM 1024
/*
 * An eigenvalue of the deflated S_i at most this x lambda_max is zero to
 * rounding: its best-response column lies past the client's rank
 * (complete_response).
 */
#define NULL_RESPONSE_TOL 1e-12
/* LOBPCG iterations of one best response before the exact solve takes over. */
#define BEST_RESPONSE_MAX_ITER 100
/* Restarts of a best response's LOBPCG that failed (d-space, above BEST_RESPONSE_EXACT_FALLBACK) */
#define BEST_RESPONSE_RESTARTS 2
/* The client's spectrum (lambda_max and the starts' local PCs): residual / lambda_max, iterations */
#define SPECTRUM_EXACT_DIM 96
#define SPECTRUM_TOL 1e-6
#define SPECTRUM_MAX_ITER 200
/*
 * LOBPCG on an n x n operator pays only while its block b is at most
 * 1/WIDE_BLOCK_RATIO of n.  One iteration costs the product, 2 n^2 b flops,
 * the Gram matrices of [X, R, P] against it, about 50 n b^2, and two dense
 * eigenproblems of order up to 3b (svqb and Rayleigh-Ritz, dsyev with
 * vectors, about 9 (3b)^3 each: 500 b^3); the exact solve (dsytrd, dstemr,
 * dormtr) about (4/3) n^3 + 2 n^2 b.  At b = n/12 one iteration is 0.8 n^3
 * (0.17 + 0.35 + 0.29), already more than half the exact solve, and no
 * LOBPCG here stops within two (a warm-started best response takes one to
 * two products a round, a spectrum to 1e-6 tens): from there the exact
 * solve is cheaper, by far as b grows (r = 64 + 192 at d = 1536: b = 384,
 * a Rayleigh-Ritz step of order 1152 costs about one exact solve of S_i).
 */
#define WIDE_BLOCK_RATIO 12
/*
 * Steps of a wide block's subspace iteration (wide_iterate) before the
 * exact solve takes over: one step costs about 1/8 of that solve at every d
 * from 256 to 1536 (d = 1536, b = 288: 0.07 against 0.49 s, numpy over the
 * same OpenBLAS), so four failed steps waste half of one.
 */
#define WIDE_MAX_ITER 4

/*
 * make COPT=-DPERPCA_TRACE_READS logs every full read of a dense S_i at LOG
 * (client, columns, READ_SITE), which bench/flat_reads.py counts per round.
 */
#ifdef PERPCA_TRACE_READS
static const char *read_site = "other";

#define READ_SITE(s) (read_site = (s))
#define TRACE_READ(c, cols) \
	elog(LOG, "perpca S_i read: client %u columns %d site %s", \
		 (unsigned) ((c)->seed & 0xffff), (cols), read_site)
#else
#define READ_SITE(s) ((void) 0)
#define TRACE_READ(c, cols) ((void) 0)
#endif

/* ------------------------------------------------------------------------
 * Workspace and blocks
 * ------------------------------------------------------------------------
 */

/* The client's own workspace of at least n doubles (kept between calls). */
static double *
client_work(FitClient *c, int64 n)
{
	if (n > c->worklen)
	{
		if (c->work)
			pfree(c->work);
		c->work = MemoryContextAllocHuge(GetMemoryChunkContext(c->W), sizeof(double) * n);
		c->worklen = n;
	}
	return c->work;
}

/* Orthonormalize A (spans only): Cholesky QR in the client's workspace, else the chosen retraction. */
static void
orthonormalize(FitClient *c, FitRetraction how, int m, int n, double *A, int lda)
{
	eigen_orthonormalize(how, m, n, A, lda, client_work(c, LINALG_CHOL_WORK(n)));
}

/* A <- (I - U U') A = A - U (U'A), U d x r1 (stride ldu), A d x n (stride lda). */
static void
deflate_block(int d, int r1, const double *U, int ldu, int n, double *A, int lda)
{
	double	   *UtA;

	if (r1 == 0 || n == 0)
		return;
	UtA = palloc(sizeof(double) * r1 * n);
	linalg_gemm(true, false, r1, n, d, 1.0, U, ldu, A, lda, 0.0, UtA, n);
	linalg_gemm(false, false, d, n, r1, -1.0, U, ldu, UtA, n, 1.0, A, lda);
	pfree(UtA);
}

/* ------------------------------------------------------------------------
 * S_i
 * ------------------------------------------------------------------------
 */

void
client_setup(FitClient *c, int d, int r1)
{
	c->d = d;
	c->r1 = r1;
	c->k = r1 + c->r2;
	c->lfirst = r1;
	c->W = palloc0(sizeof(double) * d * Max(c->k, 1));
	c->SW = palloc0(sizeof(double) * d * Max(c->k, 1));
	c->Ui = palloc0(sizeof(double) * d * Max(r1, 1));
	c->tmp = palloc0(sizeof(double) * d * Max(c->k, 1));
	c->M = palloc0(sizeof(double) * Max(c->k * c->k, 1));
	c->variance = palloc0(sizeof(double) * Max(c->k, 1));
}

/*
 * out (d x k) = S_i W: one product with a dense S_i, or yscale Y'(Y W) +
 * delta (delta'W) with a thin one.  With client_add_dense and
 * thin_factor, the only functions that read S_i.
 */
void
client_apply(FitClient *c, const double *W, int k, double *out)
{
	int			d = c->d;
	double	   *YW;

	c->products++;
	if (c->S != NULL)
	{
		TRACE_READ(c, k);
		/* S_i W: half of S_i read (HALF_READ_DIM), else dgemm on the whole */
		if (d >= HALF_READ_DIM)
			linalg_symm_half(d, k, c->S, W, out,
							 d >= HALF_READ_WIDE ? HALF_READ_PANEL : HALF_READ_PANEL_SMALL);
		else
			/* (S_i symmetric: OpenBLAS packs the untransposed A faster, 1.3x at d = 800-4096) */
			linalg_gemm(false, false, d, k, d, 1.0, c->S, d, W, k, 0.0, out, k);
		return;
	}
	YW = palloc(sizeof(double) * Max(c->nrows + 1, 1) * Max(k, 1));
	linalg_gemm(false, false, c->nrows, k, d, 1.0, c->Y, d, W, k, 0.0, YW, k);
	linalg_gemm(true, false, d, k, c->nrows, c->yscale, c->Y, d, YW, k, 0.0, out, k);
	if (c->delta != NULL)
	{
		linalg_gemm(false, false, 1, k, d, 1.0, c->delta, d, W, k, 0.0, YW, k);
		linalg_gemm(false, false, d, k, 1, 1.0, c->delta, 1, YW, k, 1.0, out, k);
	}
	pfree(YW);
}

void
client_add_dense(FitClient *c, double alpha, double *A)
{
	int			d = c->d;
	double	   *T;

	if (c->S != NULL)
	{
		TRACE_READ(c, 0);
		linalg_axpy((int64) d * d, alpha, c->S, A);
		return;
	}
	/* the guard that keeps a wide thin or sketched client from being densified by accident */
	perpca_check_dense_dim_limit(d, "Densifying a thin or sketched client");
	T = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * d * d);
	memset(T, 0, sizeof(double) * d * d);
	linalg_syrk_upper(d, c->nrows, c->yscale, c->Y, T);
	if (c->delta != NULL)
		linalg_syr_upper(d, 1.0, c->delta, T);
	linalg_symmetrize_upper(d, T);
	linalg_axpy((int64) d * d, alpha, T, A);
	pfree(T);
}

/* Columns of the thin factor F (d x m) with S_i = F F'. */
static int
thin_width(const FitClient *c)
{
	return c->nrows + (c->delta != NULL ? 1 : 0);
}

/* F (d x m) with S_i = F F': sqrt(yscale) Y' and delta. */
static double *
thin_factor(const FitClient *c)
{
	int			d = c->d,
				m = thin_width(c);
	double		scale = sqrt(c->yscale);
	double	   *F = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * d * m);

	for (int j = 0; j < d; j++)
	{
		for (int r = 0; r < c->nrows; r++)
			F[(int64) j * m + r] = scale * c->Y[(int64) r * d + j];
		if (c->delta != NULL)
			F[(int64) j * m + c->nrows] = c->delta[j];
	}
	return F;
}

/* L (d x q) = F Z for Z m x q: sqrt(yscale) Y'Z plus delta times Z's last row. */
static void
thin_times(const FitClient *c, const double *Z, int ldz, int q, double *L, int ldl)
{
	int			n = c->nrows;

	linalg_gemm(true, false, c->d, q, n, sqrt(c->yscale), c->Y, c->d, Z, ldz, 0.0, L, ldl);
	if (c->delta != NULL)
		linalg_gemm(false, false, c->d, q, 1, 1.0, c->delta, 1, Z + (int64) n * ldz, ldz, 1.0,
					L, ldl);
}

/* F'F of a thin client, computed once (with the best response, below). */
static const double *thin_gram(FitClient *c);

/* The top eigenpairs of S_i, once (below); false where another route applies. */
static bool client_spectrum(FitClient *c);

double
client_lambda_max(FitClient *c)
{
	if (c->lambda_max <= 0.0 && client_spectrum(c))
		c->lambda_max = c->pc_lambda[0];
	else if (c->lambda_max <= 0.0)
	{
		double	   *z = palloc(sizeof(double) * c->d);

		client_top_eigen(c, NULL, 1, &c->lambda_max, z, 1);
		pfree(z);
	}
	return c->lambda_max;
}

double
client_trace(const FitClient *c)
{
	int			d = c->d;
	double		t = 0.0;

	if (c->S != NULL)
	{
		for (int j = 0; j < d; j++)
			t += c->S[(int64) j * d + j];
		return t;
	}
	t = c->yscale * linalg_dot((int64) c->nrows * d, c->Y, c->Y) + c->trace_extra;
	if (c->delta != NULL)
		t += linalg_dot(d, c->delta, c->delta);
	return t;
}

/* Doubles of workspace that dense_top_eigen needs. */
static int64
dense_eigen_work(int d, int r1, int k)
{
	return (int64) d * d + 4 * (int64) d * r1 + (int64) r1 * r1 + LINALG_EIGH_WORK(d, k);
}

/* D = S_i as a full d x d matrix: a dense S copied (every round: cheaper than added to zeros), a thin one formed. */
static void
client_copy_dense(FitClient *c, double *D)
{
	int			d = c->d;

	if (c->S != NULL)
	{
		TRACE_READ(c, 0);
		memcpy(D, c->S, sizeof(double) * d * d);
		return;
	}
	memset(D, 0, sizeof(double) * d * d);
	client_add_dense(c, 1.0, D);
}

/*
 * Exact eigenpairs of the d x d matrix S_i, deflated by U when given, in
 * work (dense_eigen_work doubles); S U (one product) into SU when given.
 */
static void
dense_top_eigen(FitClient *c, const double *U, int k, double *values, double *Z, int ldz,
				double *SU, double *work)
{
	int			d = c->d,
				r1 = c->r1;
	double	   *D = work,				/* d x d */
			   *A = D + (int64) d * d,	/* d x 2 r1 */
			   *B = A + 2 * (int64) d * r1, /* d x 2 r1 */
			   *G = B + 2 * (int64) d * r1, /* r1 x r1 */
			   *eigwork = G + (int64) r1 * r1;	/* LINALG_EIGH_WORK(d, k) */

	client_copy_dense(c, D);
	if (U != NULL && r1 > 0)
	{
		/*
		 * D = S - U Y' - Y U' + U (U'Y) U' with Y = S U, as D -= [U, Y2] [Y2, U]'
		 * (one product), Y2 = Y - U (U'Y)/2
		 */
		client_apply(c, U, r1, B);
		if (SU != NULL)
			linalg_copy(d, r1, B, r1, SU, r1);
		linalg_gemm(true, false, r1, r1, d, 1.0, U, r1, B, r1, 0.0, G, r1);
		linalg_gemm(false, false, d, r1, r1, -0.5, U, r1, G, r1, 1.0, B, r1);
		linalg_copy(d, r1, U, r1, A, 2 * r1);
		linalg_copy(d, r1, B, r1, A + r1, 2 * r1);
		linalg_copy(d, r1, A + r1, 2 * r1, B, 2 * r1);
		linalg_copy(d, r1, U, r1, B + r1, 2 * r1);
		linalg_gemm(false, true, d, d, 2 * r1, -1.0, A, 2 * r1, B, 2 * r1, 1.0, D, d);
	}
	if (linalg_eigh_top(d, D, k, values, Z, ldz, eigwork) != 0)
		elog(ERROR, "symmetric eigensolver failed on a %d x %d matrix", d, d);
}

/* Exact eigenpairs of a thin S_i (deflated by U when given): SVD of its d x m factor. */
static void
thin_top_eigen(FitClient *c, const double *U, int k, double *values, double *Z, int ldz)
{
	int			m = thin_width(c);
	double	   *F = thin_factor(c);

	if (U != NULL)
		deflate_block(c->d, c->r1, U, c->r1, m, F, m);
	fit_left_singular(c->d, m, F, k, Z, ldz, values);
	for (int j = 0; j < k; j++)
		values[j] *= values[j];
	pfree(F);
}

/*
 * Columns m.. of Z (k - m of them, stride ldz) <- a seeded orthonormal basis
 * orthogonal to U (when given) and to Z's first m columns (twice, for
 * rounding); their eigenvalues 0.
 */
static void
complete_block(FitClient *c, uint64 salt, const double *U, int m, int k, double *values,
			   double *Z, int ldz)
{
	int			d = c->d,
				r1 = U != NULL ? c->r1 : 0;
	double	   *Q = palloc(sizeof(double) * d * Max(r1 + m, 1)),
			   *X = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * d * (k - m));
	uint64		state = c->seed ^ salt;

	linalg_copy(d, r1, U, Max(r1, 1), Q, r1 + m);
	linalg_copy(d, m, Z, ldz, Q + r1, r1 + m);
	fit_fill_gaussian(&state, d, k - m, X, k - m);
	for (int pass = 0; pass < 2; pass++)
	{
		deflate_block(d, r1 + m, Q, r1 + m, k - m, X, k - m);
		fit_retract(FIT_RETRACT_QR, d, k - m, X, k - m);
	}
	linalg_copy(d, k - m, X, k - m, Z + m, ldz);
	for (int j = m; j < k; j++)
		values[j] = 0.0;
	pfree(Q);
	pfree(X);
}

/*
 * The columns of V_i past the rank of the deflated S_i (k columns of Z,
 * stride ldz, their eigenvalues in values): where its k-th eigenvalue is
 * zero (a client with fewer dimensions than local components), an
 * eigensolver returns for the zero eigenvalues any vectors of its null
 * space, which contains span U: V_i is then not orthogonal to U, the
 * gradient (I - V V')S U loses a part of S U that f keeps, and the line
 * search finds no step along an ascent direction.  The local block of such
 * a client is its whole range plus a seeded completion orthogonal to U and
 * to the range: f does not change (the completion's variance is 0) and the
 * client's gradient term is S U's part along U, as f's derivative says.  A
 * column counts as past the rank when its eigenvalue is at most
 * NULL_RESPONSE_TOL x lambda_max, rounding; returns whether any did (else
 * nothing changed).
 */
static bool
complete_past_rank(FitClient *c, const double *U, int k, double *values, double *Z, int ldz)
{
	int			m = 0;
	double		top = c->lambda_max > 0.0 ? c->lambda_max : values[0];

	while (m < k && values[m] > NULL_RESPONSE_TOL * top)
		m++;
	if (m == k || !(top > 0.0))
		return false;
	complete_block(c, UINT64CONST(0x6A09E667F3BCC909), U, m, k, values, Z, ldz);
	return true;
}

void
client_top_eigen(FitClient *c, const double *U, int k, double *values, double *Z, int ldz)
{
	double	   *work;

	if (k == 0)
		return;
	if (c->S == NULL && k <= Min(c->d, thin_width(c)))
	{
		thin_top_eigen(c, U, k, values, Z, ldz);
		return;
	}
	if (c->S == NULL && c->d > PERPCA_MAX_DENSE_DIM)
	{
		/* more pairs than the factor's m columns, where S_i is never formed: m, then a completion */
		int			m = Min(thin_width(c), k);

		if (m > 0)
			thin_top_eigen(c, U, m, values, Z, ldz);
		complete_block(c, UINT64CONST(0x2545F4914F6CDD1D), U, m, k, values, Z, ldz);
		return;
	}
	work = eigen_work(dense_eigen_work(c->d, c->r1, k));
	dense_top_eigen(c, U, k, values, Z, ldz, NULL, work);
	pfree(work);
	if (U != NULL && c->r1 > 0)
		complete_past_rank(c, U, k, values, Z, ldz);
}

/* ------------------------------------------------------------------------
 * S_i as an operator of eigen.c's iterative solvers: the deflated S_i in
 * d-space, or a thin client's deflated Gram matrix in m-space (m = rows + 1)
 * ------------------------------------------------------------------------
 */

/* The state of the d-space operator: the client, and U (d x r1) to deflate against, or NULL. */
typedef struct SpaceOp
{
	FitClient  *c;
	const double *U;
} SpaceOp;

/* Y (d x b) = (I - UU') S_i X, or S_i X without U. */
static void
space_apply(void *arg, const double *X, int b, double *Y)
{
	SpaceOp    *s = (SpaceOp *) arg;

	client_apply(s->c, X, b, Y);
	if (s->U != NULL)
		deflate_block(s->c->d, s->c->r1, s->U, s->c->r1, b, Y, b);
}

/* X (d x b) <- (I - UU') X. */
static void
space_deflate(void *arg, double *X, int b)
{
	SpaceOp    *s = (SpaceOp *) arg;

	deflate_block(s->c->d, s->c->r1, s->U, s->c->r1, b, X, b);
}

/* S_i in d-space, deflated against U when U is given; s holds its state. */
static EigenOp
space_op(FitClient *c, const double *U, SpaceOp *s)
{
	EigenOp		op = {c->d, space_apply, U != NULL ? space_deflate : NULL, s,
	NULL, NULL, 0, &c->products, &c->iterations};

	s->c = c;
	s->U = U;
	return op;
}

/* The m x m operator G - L L' (L m x r, or NULL) of a thin client's Gram route. */
static EigenOp
gram_op(FitClient *c, int m, const double *G, const double *L, int r)
{
	EigenOp		op = {m, NULL, NULL, NULL, G, L, r, &c->products, &c->iterations};

	return op;
}

/* Block size of a best response's LOBPCG: r plus a few guard columns, within n. */
static int
response_block(int n, int r)
{
	return Min(n, r + Max(2, (r + 1) / 2));
}

/* Whether LOBPCG with a block of b beats the exact solve on an n x n operator (WIDE_BLOCK_RATIO). */
static bool
block_is_narrow(int n, int b)
{
	return (int64) WIDE_BLOCK_RATIO * b <= n;
}

/*
 * Whether LOBPCG beats the exact solve on a thin client's m x m Gram
 * matrix: its Rayleigh-Ritz problem has order 3 b, so once that reaches m
 * one iteration costs more than the whole solve.  (The ratio of the d-space
 * route, WIDE_BLOCK_RATIO, would send blocks of a few columns to the exact
 * solve on every small thin client, which costs more a round there.)
 */
static bool
gram_block_is_narrow(int m, int b)
{
	return (int64) 3 * b < m;
}

/*
 * A thin client's eigenvectors L (d x kk) from the Gram matrix's Z (m x kk,
 * stride b; scaled in place): L = F z / sqrt(theta), then QR (order kept)
 * for orthonormality to rounding.
 */
static void
thin_vectors(FitClient *c, double *Z, int b, const double *theta, int kk, double *L)
{
	for (int j = 0; j < kk; j++)
		linalg_scale_column(thin_width(c), Z, b, j, 1.0 / sqrt(Max(theta[j], 1e-300)));
	thin_times(c, Z, b, kk, L, kk);
	orthonormalize(c, FIT_RETRACT_QR, c->d, kk, L, kk);
}

/*
 * The client's top max(k, 1) eigenpairs to a residual of SPECTRUM_TOL x
 * lambda_max, computed once per fit (cached in c->pc_L, c->pc_lambda):
 * both lambda_max (then exact to ~1e-12) and the approximate local PCs of
 * the L-BFGS starts come from it.  Dense S_i: block LOBPCG in d-space;
 * thin S_i: LOBPCG on the m x m Gram matrix F'F (cached for the best
 * responses), L = F z / sqrt(theta): no pass over the rows per iteration.
 * Returns false (nothing cached) where the exact solve is used instead:
 * small d, a dense S_i with a wide block, and thin clients with fewer rows
 * than the block.
 */
static bool
client_spectrum(FitClient *c)
{
	int			d = c->d,
				kk = Max(c->k, 1),
				n = c->S != NULL ? d : thin_width(c),
				b = response_block(n, kk);
	SpaceOp		space;
	EigenOp		op;
	double	   *X,
			   *theta;
	bool		found;

	if (c->pc_L != NULL)
		return true;
	/* theta[kk - 1] below needs a block of kk (a thin client without rows has none) */
	if (b < kk || (c->S != NULL ? d <= SPECTRUM_EXACT_DIM || !block_is_narrow(d, b) :
				   (2 * b > n || kk > d)))
		return false;
	op = c->S != NULL ? space_op(c, NULL, &space) : gram_op(c, n, thin_gram(c), NULL, 0);
	X = palloc(sizeof(double) * n * b);
	theta = palloc(sizeof(double) * b);
	READ_SITE("spectrum");
	eigen_top_pairs(&op, c->seed ^ UINT64CONST(0x5DEECE66D), X, b, theta, kk, SPECTRUM_TOL,
					SPECTRUM_MAX_ITER);
	READ_SITE("other");
	/* a thin client with fewer nonzero eigenvalues than kk: F z / sqrt(theta) is undefined */
	found = c->S != NULL || theta[kk - 1] > 1e-10 * theta[0];
	if (found)
	{
		c->pc_L = MemoryContextAllocHuge(GetMemoryChunkContext(c->W), sizeof(double) * d * kk);
		c->pc_lambda = MemoryContextAlloc(GetMemoryChunkContext(c->W), sizeof(double) * kk);
		memcpy(c->pc_lambda, theta, sizeof(double) * kk);
		if (c->S != NULL)
			linalg_copy(d, kk, X, b, c->pc_L, kk);
		else
			thin_vectors(c, X, b, theta, kk, c->pc_L);
	}
	pfree(X);
	pfree(theta);
	return found;
}

void
client_local_pcs(FitClient *c, bool exact, FitLocalPCs *pcs)
{
	int			d = c->d,
				k = c->k;

	CHECK_FOR_INTERRUPTS();
	pcs->L = palloc(sizeof(double) * d * Max(k, 1));
	pcs->lambda = palloc(sizeof(double) * Max(k, 1));
	if (!exact && d > SPECTRUM_EXACT_DIM && k > 0 && client_spectrum(c))
	{
		memcpy(pcs->L, c->pc_L, sizeof(double) * d * k);
		memcpy(pcs->lambda, c->pc_lambda, sizeof(double) * k);
	}
	else
		client_top_eigen(c, NULL, k, pcs->lambda, pcs->L, Max(k, 1));
}

/* ------------------------------------------------------------------------
 * The paper's client step (Algorithm 2)
 * ------------------------------------------------------------------------
 */

/* V_i <- GR(V_i - U U'V_i) against the U in W's first r1 columns. */
static void
client_deflate(FitClient *c, FitRetraction retraction)
{
	if (c->r2 == 0)
		return;
	deflate_block(c->d, c->r1, c->W, c->k, c->r2, c->W + c->r1, c->k);
	fit_retract(retraction, c->d, c->r2, c->W + c->r1, c->k);
}

/* client_deflate inside a round: one Cholesky QR of [U, V_i], the explicit route when ill-conditioned. */
static void
client_deflate_fast(FitClient *c, FitRetraction retraction)
{
	if (linalg_deflate_orth(c->d, c->r1, c->r2, c->W, c->k,
							client_work(c, LINALG_CHOL_WORK(c->k))) != 0)
		client_deflate(c, retraction);
}

void
client_feasible(FitClient *c, const double *U)
{
	linalg_copy(c->d, c->r1, U, c->r1, c->W, c->k);
	if (c->sw_ready)
		return;					/* the final response's W: feasible to rounding, S W known */
	client_deflate(c, FIT_RETRACT_POLAR);
	client_deflate(c, FIT_RETRACT_POLAR);
}

double
client_gradient(FitClient *c)
{
	int			d = c->d,
				k = c->k;
	double		trace = 0.0;

	READ_SITE("gradient");
	if (!c->sw_ready)
		client_apply(c, c->W, k, c->SW);
	READ_SITE("other");
	c->sw_ready = false;
	linalg_gemm(true, false, k, k, d, 1.0, c->W, k, c->SW, k, 0.0, c->M, k);
	for (int j = 0; j < k; j++)
		trace += c->M[j * k + j];
	linalg_gemm(false, false, d, k, k, -1.0, c->W, k, c->M, k, 1.0, c->SW, k);
	return 0.5 * trace;
}

/*
 * Choice 1: U_i = U + step G_U (unretracted), V_i = GR(V_i + step G_V).
 * The change of P_V follows from G_V alone (V_i'G_V = 0).  With lazy_local
 * V_i + step G_V stays unretracted, as the next deflation retracts its span.
 */
static void
client_stgd(FitClient *c, const double *U, FitRetraction retraction, double step)
{
	int			d = c->d,
				r1 = c->r1,
				k = c->k;

	c->change = 0.0;
	if (!c->skip_change)
		c->change = linalg_step_change(d, c->r2, step, c->SW + r1, k,
									   client_work(c, LINALG_STEP_CHANGE_WORK(c->r2)));
	if (c->change < 0.0)
		elog(ERROR, "projector change failed (I + step^2 G'G not positive definite)");
	linalg_axpy((int64) d * k, step, c->SW, c->W);
	linalg_copy(d, r1, c->W, k, c->Ui, r1);
	if (!c->lazy_local)
	{
		orthonormalize(c, retraction, d, c->r2, c->W + r1, k);
		linalg_copy(d, r1, U, r1, c->W, k);
	}
}

/* Choice 2: [U_i, V_i] = polar(W + step S W), with S W = G + W M. */
static void
client_polar_step(FitClient *c, double step)
{
	int			d = c->d,
				r1 = c->r1,
				r2 = c->r2,
				k = c->k;
	double	   *T = c->tmp;

	linalg_copy(d, k, c->W, k, T, k);
	linalg_axpy((int64) d * k, step, c->SW, T);
	linalg_gemm(false, false, d, k, k, step, c->W, k, c->M, k, 1.0, T, k);
	fit_retract(FIT_RETRACT_POLAR, d, k, T, k);
	linalg_copy(d, r1, T, k, c->Ui, r1);
	c->change = c->skip_change ? 0.0 :
		fit_projector_distance(d, r2, c->W + r1, k, T + r1, k);
	linalg_copy(d, r2, T + r1, k, c->W + r1, k);
}

void
client_paper_step(FitClient *c, const double *U, FitUpdate update, FitRetraction retraction,
				  double step)
{
	linalg_copy(c->d, c->r1, U, c->r1, c->W, c->k);
	client_deflate_fast(c, retraction);
	c->objective = client_gradient(c);
	if (update == FIT_UPDATE_STGD)
		client_stgd(c, U, retraction, step);
	else
		client_polar_step(c, step);
}

/*
 * V_i from the client's own PCs, given U: top r2_i left singular vectors of
 * (I - P_U) L_i D_i, where D_i = sqrt(lambda_ij) plus a tiny floor so that no
 * column vanishes; (I - P_U) L_i has rank >= r2_i, so V_i is well defined.
 */
void
client_init_local(FitClient *c, const double *U, const FitLocalPCs *pcs)
{
	int			d = c->d,
				r1 = c->r1;
	double	   *T = c->tmp;
	double		floor = 1e-8 * sqrt(Max(pcs->lambda[0], 0.0)) + 1e-300;

	if (c->r2 == 0)
		return;
	linalg_copy(d, c->k, pcs->L, c->k, T, c->k);
	for (int j = 0; j < c->k; j++)
		linalg_scale_column(d, T, c->k, j, sqrt(Max(pcs->lambda[j], 0.0)) + floor);
	deflate_block(d, r1, U, r1, c->k, T, c->k);
	fit_left_singular(d, c->k, T, c->r2, c->W + r1, c->k, NULL);
}

void
client_init_random(FitClient *c)
{
	uint64		state = c->seed;

	fit_fill_gaussian(&state, c->d, c->r2, c->W + c->r1, c->k);
}

/* ------------------------------------------------------------------------
 * The best response (L-BFGS)
 * ------------------------------------------------------------------------
 */

/* Whether the best response works on the client's m x m Gram matrix (thin, and m > block). */
static bool
uses_gram(const FitClient *c)
{
	return c->S == NULL && response_block(c->d - c->r1, c->r2) < thin_width(c);
}

/* F'F (m x m) of a thin client, computed once: [ys Y Y', sqrt(ys) Y delta; ., delta'delta]. */
static const double *
thin_gram(FitClient *c)
{
	int			d = c->d,
				n = c->nrows,
				m = thin_width(c);
	double	   *G;

	if (c->FtF != NULL)
		return c->FtF;
	G = MemoryContextAllocHuge(GetMemoryChunkContext(c->W), sizeof(double) * m * m);
	linalg_syrk_rows(n, d, c->yscale, c->Y, d, G, m);
	if (c->delta != NULL)
	{
		double	   *Yd = palloc(sizeof(double) * Max(n, 1));

		linalg_gemm(false, false, n, 1, d, sqrt(c->yscale), c->Y, d, c->delta, 1, 0.0, Yd, 1);
		for (int i = 0; i < n; i++)
			G[(int64) i * m + n] = G[(int64) n * m + i] = Yd[i];
		G[(int64) n * m + n] = linalg_dot(d, c->delta, c->delta);
		pfree(Yd);
	}
	c->FtF = G;
	return G;
}

/* F'U (m x r1) of a thin client: [sqrt(ys) Y U; delta'U]. */
static double *
thin_factor_t_u(FitClient *c, const double *U)
{
	int			d = c->d,
				n = c->nrows,
				r1 = c->r1,
				m = thin_width(c);
	double	   *FtU = palloc0(sizeof(double) * m * Max(r1, 1));

	if (r1 == 0)
		return FtU;
	linalg_gemm(false, false, n, r1, d, sqrt(c->yscale), c->Y, d, U, r1, 0.0, FtU, r1);
	if (c->delta != NULL)
		linalg_gemm(false, false, 1, r1, d, 1.0, c->delta, d, U, r1, 0.0, FtU + (int64) n * r1, r1);
	return FtU;
}

/* The deflated Gram F'(I - UU')F = F'F - (F'U)(F'U)' (m x m), explicitly (for LAPACK). */
static double *
thin_deflated_gram(FitClient *c, const double *FtU)
{
	int			m = thin_width(c);
	double	   *G = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * m * m);

	memcpy(G, thin_gram(c), sizeof(double) * m * m);
	if (c->r1 > 0)
		linalg_gemm(false, true, m, m, c->r1, -1.0, FtU, c->r1, FtU, c->r1, 1.0, G, m);
	return G;
}

/*
 * The m x q right-hand side C of thin_local_and_su's one pass: columns
 * [Z_j / sqrt(theta_j) (r2), F'U (r1), AZ_j / sqrt(theta_j) (r2, with AZ)].
 */
static double *
thin_pass_columns(FitClient *c, const double *Z, int ldz, const double *FtU, const double *AZ,
				  int q)
{
	int			r1 = c->r1,
				r2 = c->r2,
				m = thin_width(c);
	double	   *C = palloc(sizeof(double) * m * q);

	linalg_copy(m, r2, Z, ldz, C, q);
	linalg_copy(m, r1, FtU, r1, C + r2, q);
	if (AZ != NULL)
		linalg_copy(m, r2, AZ, ldz, C + r2 + r1, q);
	for (int j = 0; j < r2; j++)
	{
		double		s = 1.0 / sqrt(Max(c->ritz[j], 1e-300));

		linalg_scale_column(m, C, q, j, s);
		if (AZ != NULL)
			linalg_scale_column(m, C, q, r2 + r1 + j, s);
	}
	return C;
}

/*
 * T = [V, S U, S V] (d x q, stride q) with V orthogonal to U: V once more
 * orthogonal to U (S V along: S U (U'V)), then V R^-1 and S V R^-1 by
 * Cholesky QR; returns whether that succeeded (else V is only deflated).
 */
static bool
thin_orthonormal_pair(FitClient *c, const double *U, double *T, int q)
{
	int			d = c->d,
				r1 = c->r1,
				r2 = c->r2;
	double	   *UtV = palloc(sizeof(double) * Max(r1, 1) * r2);

	if (r1 > 0)
	{
		linalg_gemm(true, false, r1, r2, d, 1.0, U, r1, T, q, 0.0, UtV, r2);
		linalg_gemm(false, false, d, r2, r1, -1.0, U, r1, UtV, r2, 1.0, T, q);
		linalg_gemm(false, false, d, r2, r1, -1.0, T + r2, q, UtV, r2, 1.0, T + r2 + r1, q);
	}
	pfree(UtV);
	return linalg_chol_orth(d, r2, T, q, T + r2 + r1, q,
								 client_work(c, LINALG_CHOL_WORK(r2))) == 0;
}

/*
 * From m-space vectors Z (ldz) and F'U, in one pass over the rows: V
 * (columns r1.. of W) = (I - UU') F Z_j / sqrt(theta_j), j < r2, and S U =
 * F (F'U) into SU (d x r1).  With AZ (the deflated Gram matrix times Z,
 * ldz) the same pass also gives S V: F'(I - UU')F Z = AZ, so S (I - UU') F Z
 * = F AZ; then W = [U, V] is feasible to rounding and S W is left in SW
 * (c->sw_ready) for client_gradient.
 */
static void
thin_local_and_su(FitClient *c, const double *U, const double *Z, int ldz, const double *FtU,
				  double *SU, const double *AZ)
{
	int			d = c->d,
				r1 = c->r1,
				r2 = c->r2,
				k = c->k,
				q = r1 + r2 + (AZ != NULL ? r2 : 0);
	double	   *C = thin_pass_columns(c, Z, ldz, FtU, AZ, q),
			   *T = palloc(sizeof(double) * d * q);

	thin_times(c, C, q, q, T, q);
	deflate_block(d, r1, U, r1, r2, T, q);
	c->sw_ready = AZ != NULL && thin_orthonormal_pair(c, U, T, q);
	if (!c->sw_ready)
		orthonormalize(c, FIT_RETRACT_QR, d, r2, T, q);
	linalg_copy(d, r2, T, q, c->W + r1, k);
	if (r1 > 0)
		linalg_copy(d, r1, T + r2, q, SU, r1);
	if (c->sw_ready)
	{
		linalg_copy(d, r1, U, r1, c->W, k);
		linalg_copy(d, r1, T + r2, q, c->SW, k);
		linalg_copy(d, r2, T + r2 + r1, q, c->SW + r1, k);
	}
	pfree(C);
	pfree(T);
}

/* A first block for the best response (n x b): seeded Gaussian. */
static void
best_response_block(FitClient *c, int n)
{
	uint64		state = c->seed ^ UINT64CONST(0xB5AD4ECEDA1CE2A9);
	MemoryContext cxt = GetMemoryChunkContext(c->W);

	c->b = response_block(uses_gram(c) ? n : c->d - c->r1, c->r2);
	c->X = MemoryContextAllocHuge(cxt, sizeof(double) * n * c->b);
	c->ritz = MemoryContextAlloc(cxt, sizeof(double) * c->b);
	fit_fill_gaussian(&state, n, c->b, c->X, c->b);
}

void
client_seed_response(FitClient *c, const FitLocalPCs *pcs)
{
	int			k = Min(c->k, c->d - c->r1);

	if (c->X != NULL || c->r2 == 0 || uses_gram(c))
		return;
	best_response_block(c, c->d);
	/* the client's own top components span most of the best response's start */
	linalg_copy(c->d, Min(k, c->b), pcs->L, c->k, c->X, c->b);
}

/*
 * The iterative best response on the Gram operator op (m x m) from c->X by
 * LOBPCG.  Returns whether the exact solve must follow (the iteration failed, and m
 * is small enough for it).
 */
static bool
gram_iterate(FitClient *c, const EigenOp *op, double tol)
{
	int			m = op->n;
	double	   *AX = palloc(sizeof(double) * m * c->b);
	bool		exact;

	eigen_orthonormalize_block(op, c->X, c->b);
	eigen_apply(op, c->X, c->b, AX);
	exact = !eigen_lobpcg(op, c->X, AX, c->b, c->ritz, c->r2, tol, BEST_RESPONSE_MAX_ITER) &&
		m <= BEST_RESPONSE_EXACT_FALLBACK;
	pfree(AX);
	return exact;
}

/*
 * V_i of a thin client from its deflated Gram matrix F'F - (F'U)(F'U)':
 * iterated on the implicit operator, or exact (LAPACK on the explicit
 * matrix) when m is small, the block wide or the iteration fails; S U into SU.
 */
static bool
best_response_gram(FitClient *c, const double *U, double tol, double *SU)
{
	int			m = thin_width(c);
	double	   *FtU = thin_factor_t_u(c, U);
	EigenOp		op = gram_op(c, m, thin_gram(c), FtU, c->r1);
	bool		exact;
	double	   *AX;

	if (c->X == NULL)
		best_response_block(c, m);
	exact = m <= BEST_RESPONSE_EXACT_GRAM || !gram_block_is_narrow(m, c->b);
	if (!exact)
		exact = gram_iterate(c, &op, tol);
	if (exact)
	{
		double	   *G = thin_deflated_gram(c, FtU);

		fit_eigh_top(m, G, c->b, c->ritz, c->X, c->b);
		pfree(G);
	}
	/* the final response: S W from the same pass (F'(I - UU')F X costs no pass) */
	AX = c->final_response ? palloc(sizeof(double) * m * c->b) : NULL;
	if (AX != NULL)
		eigen_apply(&op, c->X, c->b, AX);
	thin_local_and_su(c, U, c->X, c->b, FtU, SU, AX);
	if (AX != NULL)
		pfree(AX);
	pfree(FtU);
	return exact;
}

/*
 * The factor S_i = Lt'Lt of a small dense S_i of low rank, from its exact
 * eigenpairs once per fit: Lt = Lambda_r^(1/2) Q_r' (r x d) over the r
 * eigenvalues above LOW_RANK_TOL lambda_max.  Returns whether the client
 * has one.
 */
static bool
dense_low_rank(FitClient *c)
{
	int			d = c->d,
				r = 0;
	MemoryContext cxt = GetMemoryChunkContext(c->W);
	double	   *A,
			   *Q,
			   *lam;

	if (c->lrank != 0)
		return c->lrank > 0;
	c->lrank = -1;
	A = palloc(sizeof(double) * d * d);
	Q = palloc(sizeof(double) * d * d);
	lam = MemoryContextAlloc(cxt, sizeof(double) * d);
	memcpy(A, c->S, sizeof(double) * d * d);
	fit_eigh_top(d, A, d, lam, Q, d);
	while (r < d && lam[r] > LOW_RANK_TOL * lam[0])
		r++;
	if (r >= c->r1 + c->r2 && r <= LOW_RANK_FRACTION * d)
	{
		c->lrank = r;
		c->Llambda = lam;
		c->Lt = MemoryContextAlloc(cxt, sizeof(double) * r * d);
		for (int j = 0; j < r; j++)
			for (int i = 0; i < d; i++)
				c->Lt[(int64) j * d + i] = sqrt(lam[j]) * Q[(int64) i * d + j];
	}
	else
		pfree(lam);
	pfree(A);
	pfree(Q);
	return c->lrank > 0;
}

/*
 * The exact best response of a small dense S_i = Lt'Lt of rank r, in its
 * range: with F = Lt' (d x r) and B = F'U = Lt U, the nonzero spectrum of
 * (I - UU')S_i(I - UU') is that of the r x r M = diag(lambda) - B B', and
 * V_i = (I - UU') F z / sqrt(theta) for its top eigenpairs (z, theta); S U =
 * F B.  V_i into c->X, theta into c->ritz, S U into SU.  Returns false
 * (nothing changed) when M has fewer than r2 nonzero eigenvalues.
 */
static bool
dense_low_rank_response(FitClient *c, const double *U, double *SU)
{
	int			d = c->d,
				r1 = c->r1,
				r2 = c->r2,
				r = c->lrank,
				b = c->b;
	double	   *work = client_work(c, (int64) r * r1 + (int64) r * r + (int64) r * r2 + r2 +
								   LINALG_EIGH_WORK(r, r2)),
			   *B = work,
			   *M = B + (int64) r * r1,
			   *z = M + (int64) r * r,
			   *theta = z + (int64) r * r2;

	c->products++;
	linalg_gemm(false, false, r, r1, d, 1.0, c->Lt, d, U, r1, 0.0, B, r1);
	linalg_gemm(false, true, r, r, r1, -1.0, B, r1, B, r1, 0.0, M, r);
	for (int j = 0; j < r; j++)
		M[(int64) j * r + j] += c->Llambda[j];
	if (linalg_eigh_top(r, M, r2, theta, z, r2, theta + r2) != 0)
		elog(ERROR, "symmetric eigensolver failed on a %d x %d matrix", r, r);
	if (!(theta[r2 - 1] > 1e-10 * theta[0]))
		return false;
	for (int j = 0; j < r2; j++)
	{
		c->ritz[j] = theta[j];
		linalg_scale_column(r, z, r2, j, 1.0 / sqrt(theta[j]));
	}
	/* V = (I - UU') F z (twice: orthogonal to U to rounding), orthonormalized; S U = F B */
	linalg_gemm(true, false, d, r2, r, 1.0, c->Lt, d, z, r2, 0.0, c->X, b);
	deflate_block(d, r1, U, r1, r2, c->X, b);
	deflate_block(d, r1, U, r1, r2, c->X, b);
	if (linalg_chol_orth(d, r2, c->X, b, NULL, 0, z) != 0)
		fit_retract(FIT_RETRACT_QR, d, r2, c->X, b);
	if (r1 > 0)
		linalg_gemm(true, false, d, r1, r, 1.0, c->Lt, d, B, r1, 0.0, SU, r1);
	return true;
}

/*
 * The exact best response in d-space: V_i into c->X, its variances into
 * c->ritz, S U into SU.  A small dense S_i of low rank is solved in its
 * range; another dense S_i by LAPACK on the deflated matrix, after one
 * product S U for the deflation and the gradient (small d: only the r2
 * pairs V_i needs, since no later LOBPCG uses the guard columns, in the
 * client's own workspace); a thin one by the SVD of its factor.
 */
static void
exact_response_space(FitClient *c, const double *U, double *SU)
{
	int			d = c->d,
				r1 = c->r1,
				b = c->b;
	bool		small = d <= BEST_RESPONSE_EXACT_DIM;

	if (c->S != NULL && small && dense_low_rank(c) && dense_low_rank_response(c, U, SU))
		return;
	if (c->S != NULL)
	{
		int64		need = dense_eigen_work(d, r1, b);
		double	   *work = small ? client_work(c, need) : eigen_work(need);

		dense_top_eigen(c, r1 > 0 ? U : NULL, small ? c->r2 : b, c->ritz, c->X, b, SU, work);
		if (work != c->work)
			pfree(work);
		return;
	}
	client_top_eigen(c, r1 > 0 ? U : NULL, b, c->ritz, c->X, b);
	if (r1 > 0)
		client_apply(c, U, r1, SU);
}

/*
 * LOBPCG of a best response in d-space on op from c->X (AX = op X); on a
 * failure above BEST_RESPONSE_EXACT_FALLBACK, restarted from its own Ritz
 * vectors with AX = op X recomputed, up to BEST_RESPONSE_RESTARTS times,
 * then one Rayleigh-Ritz step on a fresh product, so that the Ritz values
 * kept are Rayleigh quotients of the V_i kept.  LOBPCG updates AX by
 * recurrence, which on a long run to a tight tolerance drifts from op X
 * (the LSA corpus's java, d = 1536: |op X - AX| 8.8e-7 at |op X| 9.5e-3)
 * until the residuals stall; below the fallback dimension the exact solve
 * repairs that.  Returns whether it reached tol.
 */
static bool
response_lobpcg(FitClient *c, const EigenOp *op, double *AX, double tol)
{
	bool		done = eigen_lobpcg(op, c->X, AX, c->b, c->ritz, c->r2, tol, BEST_RESPONSE_MAX_ITER);
	int			restarts = c->d > BEST_RESPONSE_EXACT_FALLBACK ? BEST_RESPONSE_RESTARTS : -1;

	for (int restart = 0; !done && restart <= restarts; restart++)
	{
		eigen_orthonormalize_block(op, c->X, c->b);
		eigen_apply(op, c->X, c->b, AX);
		done = eigen_lobpcg(op, c->X, AX, c->b, c->ritz, c->r2, tol,
							restart < restarts ? BEST_RESPONSE_MAX_ITER : 0);
	}
	return done;
}

/* response_start's Rayleigh-Ritz on [X, Y]: SU = S_i U is ST's first r1 columns (stride w). */
static void
response_carry(FitClient *c, const EigenOp *op, const double *U, const double *ST, int w,
			   double *AX, double min_norm)
{
	int			d = c->d,
				r1 = c->r1,
				b = c->b;
	double	   *Y = palloc(sizeof(double) * d * b),
			   *AY = palloc(sizeof(double) * d * b),
			   *C = palloc(sizeof(double) * Max(r1, 1) * b);

	linalg_copy(d, b, c->Xprev, b, Y, b);
	linalg_copy(d, b, c->SXprev, b, AY, b);
	if (r1 > 0)
	{
		linalg_gemm(true, false, r1, b, d, 1.0, U, r1, Y, b, 0.0, C, b);
		linalg_gemm(false, false, d, b, r1, -1.0, U, r1, C, b, 1.0, Y, b);
		linalg_gemm(false, false, d, b, r1, -1.0, ST, w, C, b, 1.0, AY, b);
		deflate_block(d, r1, U, r1, b, AY, b);
	}
	eigen_ritz_extend(op, c->X, AX, b, Y, AY, b, c->ritz, min_norm);
	pfree(Y);
	pfree(AY);
	pfree(C);
}

/*
 * LOBPCG's last step carried from one round to the next, at no read: the
 * previous round's start block Y = c->Xprev came with its product SY =
 * c->SXprev = S_i Y (that round's first product), so this round's operator
 * takes (I - UU')Y to (I - UU')(SY - (S_i U)(U'Y)) without touching S_i, and
 * a Rayleigh-Ritz step on [X, Y] starts LOBPCG from X extrapolated along the
 * step between the rounds (bench/flat_bench.sh: 417 -> 363 rounds, 1.90 ->
 * 1.30 LOBPCG products per client-round).  Columns of Y within min_norm of
 * span X are dropped, where the difference of two nearly equal images would
 * be more rounding than signal at tol: a tight response (the final one,
 * 1e-13 lambda_max) uses none.  Then this round's X and its product (T, ST:
 * [U, X] and S_i [U, X], d x (r1 + b)) become the next Y, SY.  Below
 * CARRY_DIM nothing is carried.  AX (d x b) = op X from ST, then updated.
 */
static void
response_start(FitClient *c, const EigenOp *op, const double *U, double *T,
			   double *ST, double tol, double *AX)
{
	int			d = c->d,
				r1 = c->r1,
				b = c->b,
				w = r1 + b;
	double		scale = c->lambda_max > 0.0 ? c->lambda_max : fabs(c->ritz[0]),
				min_norm = tol > 0.0 ? Max(1e-6, 1e-12 * scale / tol) : INFINITY;

	linalg_copy(d, b, ST + r1, w, AX, b);
	if (r1 > 0)
		deflate_block(d, r1, U, r1, b, AX, b);
	if (d < CARRY_DIM)
		return;
	if (c->Xprev == NULL)
	{
		MemoryContext cxt = GetMemoryChunkContext(c->X);

		c->Xprev = MemoryContextAllocHuge(cxt, sizeof(double) * d * b);
		c->SXprev = MemoryContextAllocHuge(cxt, sizeof(double) * d * b);
	}
	else if (min_norm < 1.0)
		response_carry(c, op, U, ST, w, AX, min_norm);
	linalg_copy(d, b, T + r1, w, c->Xprev, b);
	linalg_copy(d, b, ST + r1, w, c->SXprev, b);
}

/*
 * LOBPCG on the deflated S_i from the last round's block and the one before
 * (response_start), whose first product S_i [U, X] also gives S U (into SU);
 * false when it did not converge.
 */
static bool
response_iterate(FitClient *c, const EigenOp *op, const double *U, double tol, double *SU)
{
	int			d = c->d,
				r1 = c->r1,
				b = c->b;
	double	   *T = palloc(sizeof(double) * d * (r1 + b)),
			   *ST = palloc(sizeof(double) * d * (r1 + b)),
			   *AX = palloc(sizeof(double) * d * b);
	bool		converged;

	eigen_orthonormalize_block(op, c->X, b);
	linalg_copy(d, r1, U, Max(r1, 1), T, r1 + b);
	linalg_copy(d, b, c->X, b, T + r1, r1 + b);
	READ_SITE("response_first");
	client_apply(c, T, r1 + b, ST);
	READ_SITE("response_lobpcg");
	linalg_copy(d, r1, ST, r1 + b, SU, Max(r1, 1));
	response_start(c, op, U, T, ST, tol, AX);
	converged = response_lobpcg(c, op, AX, tol);
	READ_SITE("other");
	pfree(T);
	pfree(ST);
	pfree(AX);
	return converged;
}

/*
 * The exact best response of a thin client whose block is wide: its m pairs
 * by the SVD of its deflated factor, the rest of the b columns a seeded
 * completion orthogonal to U and to them (eigenvalue 0), as client_top_eigen
 * does past m where S_i is never formed.  LOBPCG with such a block (m <= b:
 * the d-space route) costs more in one iteration's Rayleigh-Ritz problem
 * than this whole solve.  S U into SU.
 */
static void
thin_wide_response(FitClient *c, const double *U, double *SU)
{
	int			m = Min(thin_width(c), c->b);
	const double *Ud = c->r1 > 0 ? U : NULL;

	if (m > 0)
		thin_top_eigen(c, Ud, m, c->ritz, c->X, c->b);
	if (m < c->b)
		complete_block(c, UINT64CONST(0x2545F4914F6CDD1D), Ud, m, c->b, c->ritz, c->X, c->b);
	if (c->r1 > 0)
		client_apply(c, U, c->r1, SU);
}

/*
 * The best response of a dense S_i whose block is wide, from the client's
 * earlier answer in c->X (an exact solve's or this route's): subspace
 * iteration on the deflated S_i, whose first product S_i [U, X] also gives
 * S U (into SU).  Between two evaluations V_i moves little: on the LSA
 * corpus at 64 + 192 (d = 1536, b = 288) a step of U of 1e-2 leaves the
 * old block 5e-5 lambda_max from the new pairs after the first
 * Rayleigh-Ritz step, the next step divides that by 8-40, later ones by
 * 1.5-2 (numpy, four dense tenants).  Returns false
 * (the exact solve follows) without an earlier answer, for the fit's final
 * response (1e-13 lambda_max: the exact maximizer), or when WIDE_MAX_ITER
 * steps would not reach tol.
 */
static bool
wide_iterate(FitClient *c, const EigenOp *op, const double *U, double tol, double *SU)
{
	int			d = c->d,
				r1 = c->r1,
				b = c->b;
	double	   *T,
			   *ST,
			   *AX;
	bool		converged;

	if (!c->warm || c->final_response)
		return false;
	T = palloc(sizeof(double) * d * (r1 + b));
	ST = palloc(sizeof(double) * d * (r1 + b));
	AX = palloc(sizeof(double) * d * b);
	eigen_orthonormalize_block(op, c->X, b);
	linalg_copy(d, r1, U, Max(r1, 1), T, r1 + b);
	linalg_copy(d, b, c->X, b, T + r1, r1 + b);
	client_apply(c, T, r1 + b, ST);
	linalg_copy(d, r1, ST, r1 + b, SU, Max(r1, 1));
	linalg_copy(d, b, ST + r1, r1 + b, AX, b);
	if (r1 > 0)
		deflate_block(d, r1, U, r1, b, AX, b);
	converged = eigen_subspace_iterate(op, c->X, AX, b, c->ritz, c->r2, tol, WIDE_MAX_ITER);
	pfree(T);
	pfree(ST);
	pfree(AX);
	return converged;
}

/*
 * V_i of a client in d-space: iterated by LOBPCG while the block is narrow;
 * a wide block's is exact (a thin client's, and a dense one's first), or
 * iterated from the last answer; exact when d is small or the iteration
 * fails.  S U into SU.
 */
static bool
best_response_space(FitClient *c, const double *U, double tol, double *SU)
{
	SpaceOp		space;
	EigenOp		op = space_op(c, c->r1 > 0 ? U : NULL, &space);
	bool		small = c->d <= BEST_RESPONSE_EXACT_DIM,
				wide,
				exact = true;

	if (c->X == NULL)
		best_response_block(c, c->d);
	wide = !small && !block_is_narrow(c->d - c->r1, c->b);
	if (!small && !wide)
		exact = !response_iterate(c, &op, U, tol, SU) && c->d <= BEST_RESPONSE_EXACT_FALLBACK;
	else if (wide && c->S != NULL)
		exact = !wide_iterate(c, &op, U, tol, SU);
	if (exact)
	{
		READ_SITE("response_exact");
		if (wide && c->S == NULL)
			thin_wide_response(c, U, SU);
		else
			exact_response_space(c, U, SU);
		READ_SITE("other");
	}
	c->warm = wide;
	linalg_copy(c->d, c->r2, c->X, c->b, c->W + c->r1, c->k);
	return exact;
}

double
client_best_response(FitClient *c, const double *U, double tol, double scale, double *G,
					 bool *exact)
{
	int			d = c->d,
				r1 = c->r1,
				r2 = c->r2;
	double	   *SU = palloc0(sizeof(double) * d * Max(r1, 1));
	double		f = 0.0;

	*exact = false;
	if (r2 > 0 && uses_gram(c))
		*exact = best_response_gram(c, U, tol, SU);
	else if (r2 > 0)
		*exact = best_response_space(c, U, tol, SU);
	else if (r1 > 0)
	{
		READ_SITE("response_su");
		client_apply(c, U, r1, SU);
		READ_SITE("other");
	}
	/* S W, if the response left it, is of the columns the completion replaced */
	if (r2 > 0 && r1 > 0 && complete_past_rank(c, U, r2, c->ritz, c->W + r1, c->k))
		c->sw_ready = false;
	/* W = [U, V_i]; f_i and the gradient (I - V V')S U */
	linalg_copy(d, r1, U, r1, c->W, c->k);
	for (int j = 0; j < r2; j++)
		f += c->ritz[j];
	f += linalg_dot((int64) d * r1, U, SU);
	/* the gradient term (I - V_i V_i') S U */
	deflate_block(d, r2, c->W + r1, c->k, r1, SU, r1);
	linalg_axpy((int64) d * r1, scale, SU, G);
	pfree(SU);
	c->objective = 0.5 * f;
	return c->objective;
}

/* ------------------------------------------------------------------------
 * Output
 * ------------------------------------------------------------------------
 */

/*
 * Rotate the local components W[:, lfirst:k] to the eigenvectors of their
 * W'S_iW block, which client_gradient left in M (no product with S_i);
 * variances into c->variance.
 */
void
client_order_local(FitClient *c)
{
	int			d = c->d,
				k = c->k,
				f = c->lfirst,
				m = k - f;
	double	   *X,
			   *B,
			   *Q;

	if (m <= 0)
		return;
	X = palloc(sizeof(double) * d * m);
	B = palloc(sizeof(double) * m * m);
	Q = palloc(sizeof(double) * m * m);
	linalg_copy(d, m, c->W + f, k, X, m);
	linalg_copy(m, m, c->M + (int64) f * k + f, k, B, m);
	fit_eigh_top(m, B, m, c->variance + f, Q, m);
	linalg_gemm(false, false, d, m, m, 1.0, X, m, Q, m, 0.0, c->W + f, k);
	linalg_fix_signs(d, m, c->W + f, k);
	pfree(X);
	pfree(B);
	pfree(Q);
}
