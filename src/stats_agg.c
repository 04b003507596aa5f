/*
 * stats_agg.c -- the aggregates perpca_stats(x [, nulls]), perpca_merge(s)
 * and perpca_sketch(x, ell [, nulls]) over float8[] rows, and over vector and
 * halfvec rows through the table of row readers that pgvector_io.c fills
 * when the library loads (this file never calls pgvector_io.c)
 *
 * Rows are buffered into a block; a full block is centred at its own mean,
 * added to M2 with one BLAS rank-k update (dsyrk) and merged into the state
 * with the pairwise formula of Chan et al.:
 *   M2 = M2a + M2b + na nb / (na + nb) * delta delta^T,  delta = mean_b - mean_a.
 * Nothing ever forms sum x x^T - n mean mean^T.  Rows enter relative to a
 * reference point (the first row), so data far from the origin lose no
 * precision.  While a group has at most d/2 rows the state keeps just its
 * rows and the result is a thin value; past that it turns dense for good.
 *
 * A thin group's row that reaches the transition as an on-disk TOAST
 * pointer (float8[] of d >= ~255, vector of d >= ~510) waits in the state as
 * that pointer and is fetched only when needed (final, serialize, densify,
 * combine), in arrival order through the same arithmetic: the bits are the
 * same, and a hash aggregate of thousands of thin groups does not hold every
 * group's rows (holding them made it 2-3x slower than a sorted one:
 * bench/femnist_stats.sh).  The pointers stay valid for the query.
 *
 * The serialized state (parallel query) is the state itself, pending rows
 * as their pointers, so partial aggregation loses nothing and a Finalize
 * aggregate holds no more than the serial plan.  A sketch's state is a
 * SketchState (sketch.c) behind the same state, so perpca_sketch and a
 * perpca_merge that meets a sketch share every support function.
 */
#include "postgres.h"

#include "common/int.h"

#include <float.h>
#include <math.h>
#include <sys/mman.h>
#include <unistd.h>

#include "access/detoast.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/array.h"
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

#include "error_kinds.h"
#include "linalg.h"
#include "perpca.h"
#include "sketch.h"
#include "stats.h"

/* Rows per BLAS block: large enough for an efficient dsyrk, small enough
 * that many groups' buffers stay cheap (measured best at d = 64 and 784). */
#define BLOCK_ROWS 128

/* Matrices from this size ask for transparent huge pages (m2_alloc). */
#define HUGE_MATRIX_BYTES (4 * 1024 * 1024)

/*
 * A row of a thin group waits as the argument arrived, in the state's
 * arena of pending rows, until its values are needed: a row in TOAST as its
 * on-disk pointer, a row stored inline as its own bytes (float8, float4 or
 * binary16 values: the smallest exact form, never widened to doubles twice).
 * Each entry is one varlena.  A row stored inline starts MAXALIGNed (from
 * the start of its block) and takes a multiple of MAXALIGN bytes; a TOAST
 * pointer takes its 18 bytes, at any offset: its first byte (1B_E) tells it
 * from the zero bytes that pad the arena before a row stored inline.  (At
 * 24 bytes a pointer, the arena of a thin group of 192 rows at d = 768 took
 * an 8 kB chunk instead of 4 kB, and 104 such groups kept glibc returning
 * the heap to the kernel after each query.)  The arena is a list of blocks
 * of doubling size, each holding whole entries: it grows without copying
 * what it holds (growing one buffer by reallocation cost a thin d = 384
 * group of inline rows 40% of its CPU time); the first block with its
 * header is a 4 kB chunk.
 */
#define PENDING_SIZE(p)	(VARATT_IS_EXTERNAL(p) ? VARSIZE_ANY(p) : MAXALIGN(VARSIZE_ANY(p)))
#define PENDING_FIRST_BLOCK (4096 - offsetof(PendingBlock, data))
#define PENDING_MAX_BLOCK (1024 * 1024)

typedef struct PendingBlock
{
	struct PendingBlock *next;
	Size		used;			/* bytes of data in use */
	Size		cap;			/* bytes data can hold */
	int			count;			/* entries in data */
	char		data[FLEXIBLE_ARRAY_MEMBER];	/* MAXALIGNed entries */
} PendingBlock;

/*
 * The offset of the entry after the one at offset off of an arena whose
 * first used bytes hold entries (used, or more: the end).
 */
static inline Size
pending_next(const char *arena, Size off, Size used)
{
	off += PENDING_SIZE(arena + off);
	if (off < used && !VARATT_IS_EXTERNAL(arena + off))
		off = MAXALIGN(off);	/* past the padding before a row stored inline */
	return off;
}

/* Every pending entry of state st, in arrival order. */
#define foreach_pending(st, blk, entry) \
	for (const PendingBlock *blk = (st)->pend; blk != NULL; blk = blk->next) \
		for (Size entry##_off = 0; entry##_off < blk->used; \
			 entry##_off = pending_next(blk->data, entry##_off, blk->used)) \
			for (const char *entry = blk->data + entry##_off; entry != NULL; entry = NULL)

/* Aggregate transition state, kept in the aggregate memory context (typedef in stats.h). */
struct StatsState
{
	MemoryContext cxt;			/* where the state and its buffers live */
	int			d;
	PerpcaNulls nulls;			/* what a row with a missing value does */
	PerpcaRowType rowtype;		/* the type of the pending rows */
	int64		n;				/* rows merged into mu and m2 */
	int64		skipped;		/* rows left out (missing values) */
	double	   *shift;			/* d: reference point; rows enter as x - shift;
								 * with mu and bsum one allocation, NULL until
								 * needed (state_need_arrays) */
	double	   *mu;				/* d: mean of the merged rows minus shift */
	double	   *m2;				/* d x d upper triangle; NULL while thin */
	int			nbuf;			/* rows waiting in buf */
	int			bufcap;			/* rows buf can hold now */
	double	   *buf;			/* bufcap x d, row-major, rows minus shift */
	double	   *bsum;			/* d: column sums of buf's first nsummed rows */
	int			nsummed;		/* rows of buf in bsum: all but in a dense
								 * state, whose rows are summed per block
								 * (state_sum_block) */
	int			npend;			/* rows after those in buf, waiting in pend */
	Size		pendlen;		/* bytes of the pending entries, each block's
								 * MAXALIGNed: their serialized size */
	PendingBlock *pend;			/* the pending rows, as they arrived: first block */
	PendingBlock *pendtail;		/* its last block */
	double	   *scratch;		/* d: a row of another type converted to double
								 * (perpca_stats_accum_scratch), allocated on
								 * first use; not state */
	SketchState *sketch;		/* perpca_sketch, or perpca_merge once it has
								 * met a sketch: the sketch of everything
								 * (sketch.c); the exact state above is then
								 * unused */
};

/* Argument n of a support function as a state (NULL when it is NULL). */
#define STATE_ARG(n) (PG_ARGISNULL(n) ? NULL : (StatsState *) PG_GETARG_POINTER(n))

/* Return the state st, or NULL (before the first row). */
#define RETURN_STATE(st) \
	do { if ((st) == NULL) PG_RETURN_NULL(); PG_RETURN_POINTER(st); } while (0)

/*
 * The readers of rows of other types than float8[], by PerpcaRowType: filled
 * by their module when the library loads (stats.h), so this file calls
 * pgvector_io.c only through them.
 */
static const PerpcaRowReader *row_readers[PERPCA_ROWTYPE_FLOAT4 + 1];

void
perpca_stats_row_reader(PerpcaRowType type, const PerpcaRowReader *reader)
{
	Assert(type > PERPCA_ROWTYPE_FLOAT8 && type < PERPCA_ROWTYPE_FLOAT4);
	row_readers[type] = reader;
}

/*
 * The rows of a float4 thin value that perpca_merge keeps (PERPCA_ROWTYPE_FLOAT4):
 * each a varlena of d float4 values, made by state_defer_floats.
 */
static const void *
float4_row(Datum row, int *d, const char *what)
{
	const struct varlena *v = (const struct varlena *) DatumGetPointer(row);

	(void) what;				/* made by state_defer_floats: nothing to report */
	Assert(VARATT_IS_4B_U(v) && (VARSIZE(v) - VARHDRSZ) % sizeof(float) == 0);
	*d = (int) ((VARSIZE(v) - VARHDRSZ) / sizeof(float));
	return v;
}

static bool
float4_floats(const void *row, float *out)
{
	memcpy(out, VARDATA(row), VARSIZE(row) - VARHDRSZ);
	return true;				/* a float4 value's rows are finite (validated) */
}

static bool
float4_values(const void *row, double *out)
{
	const float *x = (const float *) VARDATA(row);

	for (Size j = 0; j < (VARSIZE(row) - VARHDRSZ) / sizeof(float); j++)
		out[j] = x[j];
	return true;
}

static const PerpcaRowReader float4_reader = {float4_row, float4_values, float4_floats, VARHDRSZ, sizeof(float)};

static const PerpcaRowReader *
row_reader(PerpcaRowType type)
{
	if (type == PERPCA_ROWTYPE_FLOAT4)
		return &float4_reader;
	if (type <= PERPCA_ROWTYPE_FLOAT8 || type > PERPCA_ROWTYPE_FLOAT4 || row_readers[type] == NULL)
		elog(ERROR, "perpca_stats has no reader of rows of type %d", (int) type);
	return row_readers[type];
}

/* The hint of the error for a row with a missing value (stats.h). */
#define SKIP_HINT PERPCA_SKIP_HINT
#define SKETCH_SKIP_HINT "Use perpca_sketch(x, ell, 'skip') to leave out rows with a NULL, NaN or infinite element and count them (perpca_skipped)."

PG_FUNCTION_INFO_V1(perpca_stats_merge_accum);
PG_FUNCTION_INFO_V1(perpca_stats_combine);
PG_FUNCTION_INFO_V1(perpca_stats_serialize);
PG_FUNCTION_INFO_V1(perpca_stats_deserialize);
PG_FUNCTION_INFO_V1(perpca_stats_final);

static void choose_row_ops(void);
static bool row_ops_chosen = false;	/* has choose_row_ops run? */

static StatsState *
state_create(MemoryContext cxt, int d, PerpcaNulls nulls)
{
	StatsState *st = MemoryContextAllocZero(cxt, sizeof(StatsState));

	if (!row_ops_chosen)
		choose_row_ops();
	st->cxt = cxt;
	st->d = d;
	st->nulls = nulls;
	return st;
}

/* Rows not yet merged into mu and m2: buffered and pending. */
static inline int
state_unmerged(const StatsState *st)
{
	return st->nbuf + st->npend;
}

/* Does the state hold no rows at all? */
static inline bool
state_empty(const StatsState *st)
{
	return st->n == 0 && state_unmerged(st) == 0;
}

/*
 * Dense states' memory: their M2s and blocks, written whole soon.  Fresh
 * memory costs a page fault every 4 kB at its first write (asked for at
 * once with MADV_POPULATE_WRITE, still 1.5-2.5 ms a MB on this virtual
 * machine), and rows spread over many groups' blocks miss the TLB: 100
 * groups at d = 64 hold 9.6 MB of blocks and M2s, faulted in afresh by
 * every query.  So past the first dense state of an aggregate context (a
 * sorted aggregate's context holds one group at a time), its dense memory
 * is carved from slabs of whole 2 MB frames (a multiple for a larger
 * matrix) allocated in that context: freed with it, and counted in its
 * size, which a hash aggregate's spilling reads.  A slab is sized so that
 * the C library maps it on its own, which the kernel aligns to 2 MB, and
 * is made of transparent huge pages at once (slab_alloc): one fault a
 * frame, ~0.2 ms for 2 MB.  Where the system lends no huge pages, or on
 * other systems, the advice is refused or absent and nothing else changes.
 */
#define SLAB_FRAME ((Size) 2 * 1024 * 1024)
#if defined(__linux__) && !defined(MADV_COLLAPSE)
#define MADV_COLLAPSE 25		/* Linux's value, older C libraries lack it */
#endif
/* room left in a slab's whole frames for the allocator's headers */
#define SLAB_HEADROOM ((Size) 4096)
/*
 * Dense allocations of a context made on their own before slabs start: one
 * state's M2 and block.  Nor are slabs used where hash_mem (work_mem x
 * hash_mem_multiplier) is under four frames: the unused tail of a slab
 * counts in a hash aggregate's memory, and would make it spill sooner.
 */
#define SLAB_OWN_ALLOCS 2

typedef struct DenseSlab
{
	MemoryContext cxt;			/* the context whose dense memory this is */
	int			allocs;			/* dense allocations made in cxt so far */
	char	   *next;			/* the current slab's free bytes: next..end */
	char	   *end;
	struct DenseSlab *link;		/* the next in dense_slabs */
	MemoryContextCallback forget;	/* takes it off dense_slabs when cxt goes */
} DenseSlab;

/*
 * The slabs of the contexts that have dense states now: a list, because
 * two aggregates of a query may densify their groups by turns.
 */
static DenseSlab *dense_slabs = NULL;

static void
slab_forget(void *arg)
{
	for (DenseSlab **p = &dense_slabs; *p != NULL; p = &(*p)->link)
		if (*p == arg)
		{
			*p = (*p)->link;
			return;
		}
}

/* The slab of context cxt, created empty on its first dense allocation. */
static DenseSlab *
slab_of(MemoryContext cxt)
{
	DenseSlab  *slab;

	for (slab = dense_slabs; slab != NULL; slab = slab->link)
		if (slab->cxt == cxt)
			return slab;
	slab = MemoryContextAllocZero(cxt, sizeof(DenseSlab));
	slab->cxt = cxt;
	slab->forget.func = slab_forget;
	slab->forget.arg = slab;
	MemoryContextRegisterResetCallback(cxt, &slab->forget);
	slab->link = dense_slabs;
	dense_slabs = slab;
	return slab;
}

/* Apply madvise advice to the pages that [p, p + bytes) touches (a hint). */
static void
advise_pages(void *p, Size bytes, int advice)
{
	uintptr_t	page = (uintptr_t) sysconf(_SC_PAGESIZE);
	uintptr_t	start = TYPEALIGN_DOWN(page, (uintptr_t) p);
	uintptr_t	end = TYPEALIGN(page, (uintptr_t) p + bytes);

	(void) madvise((void *) start, end - start, advice);
}

/*
 * Whether the system's administrator lets processes have transparent huge
 * pages (read once).  MADV_COLLAPSE ignores that setting, so perpca asks
 * it first: a server whose THP are "never" (as PostgreSQL's guides often
 * advise) gets none from perpca either.
 */
static bool
huge_pages_allowed(void)
{
	static int	allowed = -1;

	if (allowed < 0)
	{
		FILE	   *f = AllocateFile("/sys/kernel/mm/transparent_hugepage/enabled", "r");
		char		line[128] = "";

		allowed = f != NULL && fgets(line, sizeof(line), f) != NULL && strstr(line, "[never]") == NULL;
		if (f != NULL)
			FreeFile(f);
	}
	return allowed == 1;
}

/*
 * A slab of `size` bytes, in huge pages where the system lends them.  The
 * allocator's headers have already touched its first 4 kB page, so its
 * first frame would stay in 4 kB pages: it is collapsed into a huge page at
 * once (MADV_COLLAPSE, Linux 6.1), which also gives the other frames theirs
 * (2 MB in ~0.2 ms here, against ~3 ms asked for at once in 4 kB pages
 * and 6-9 ms faulted in by writes).
 */
static void *
slab_alloc(MemoryContext cxt, Size size)
{
	void	   *p = MemoryContextAllocHuge(cxt, size);

#ifdef MADV_HUGEPAGE
	advise_pages(p, size, MADV_HUGEPAGE);
	if (huge_pages_allowed())
		advise_pages(p, size, MADV_COLLAPSE);
#endif
	return p;
}

/* A piece of `bytes` of the context's slabs, cache-line aligned. */
static void *
slab_carve(DenseSlab *slab, Size bytes)
{
	Size		need = TYPEALIGN(PG_CACHE_LINE_SIZE, bytes) + PG_CACHE_LINE_SIZE;
	char	   *p;

	if (slab->next == NULL || need > (Size) (slab->end - slab->next))
	{
		Size		size = TYPEALIGN(SLAB_FRAME, need + SLAB_HEADROOM) - SLAB_HEADROOM;
		char	   *fresh = slab_alloc(slab->cxt, size);

		/* keep carving where more is left: a large matrix's slab may not */
		if (slab->next == NULL || size - need >= (Size) (slab->end - slab->next))
		{
			slab->next = fresh;
			slab->end = fresh + size;
		}
		else
			return (void *) TYPEALIGN(PG_CACHE_LINE_SIZE, fresh);
	}
	p = (char *) TYPEALIGN(PG_CACHE_LINE_SIZE, slab->next);
	slab->next = p + TYPEALIGN(PG_CACHE_LINE_SIZE, bytes);
	return p;
}

/* Memory of a dense state (its M2 or its block), to be written whole soon. */
static void *
dense_alloc(MemoryContext cxt, Size bytes)
{
	DenseSlab  *slab = slab_of(cxt);
	void	   *p;

	if (slab->allocs++ < SLAB_OWN_ALLOCS || get_hash_memory_limit() / 4 < SLAB_FRAME)
	{
		p = MemoryContextAllocHuge(cxt, bytes);
#ifdef MADV_HUGEPAGE
		if (bytes >= HUGE_MATRIX_BYTES)
			advise_pages(p, bytes, MADV_HUGEPAGE);
#endif
	}
	else
		p = slab_carve(slab, bytes);
#ifdef MADV_POPULATE_WRITE
	advise_pages(p, bytes, MADV_POPULATE_WRITE);
#endif
	return p;
}

/*
 * A d x d matrix for M2 whose upper triangle is zero.  Only that triangle
 * is ever written or read (dsyrk, dsyr, merges, the result), so pages of
 * the strict lower triangle of a matrix allocated on its own are never
 * touched; from 4 MB it asks for transparent huge pages (dense_alloc).
 */
static double *
m2_alloc(MemoryContext cxt, int d)
{
	Size		bytes = sizeof(double) * d * d;
	double	   *m2 = dense_alloc(cxt, bytes);

	for (int64 i = 0; i < d; i++)
		memset(m2 + i * d + i, 0, sizeof(double) * (d - i));
	return m2;
}

/*
 * Make room for `rows` buffered rows.  A thin buffer grows by half from
 * one row and never past the thin limit (it holds the group's rows, so a
 * small group's state stays small: no half-empty block); a dense one holds
 * at most a block.
 */
static void
state_reserve(StatsState *st, int rows)
{
	int			cap;
	Size		bytes;

	if (rows <= st->bufcap)
		return;
	cap = st->bufcap + st->bufcap / 2;
	cap = Min(cap, st->m2 == NULL ? PERPCA_STATS_THIN_MAX(st->d) + 1 : BLOCK_ROWS);
	cap = Max(cap, rows);
	bytes = sizeof(double) * cap * st->d;
	st->buf = st->buf ? repalloc_huge(st->buf, bytes)
		: MemoryContextAllocHuge(st->cxt, bytes);
	st->bufcap = cap;
}

/*
 * The loops over every value of a group's rows (a dense group's block; a
 * float4 thin value's rows at its final function), compiled twice where
 * the compiler can: for the baseline of the build and for AVX2, chosen once
 * by what the CPU has.  Each element is computed by the same IEEE operation
 * in either (the loops run across columns: no sum changes its order), so the
 * results are the same bits; four doubles an instruction instead of two
 * halve the instructions that every value costs (d = 64, 300k rows in 100
 * groups: these loops were 290 M of the query's 1.41 G instructions, and
 * are 145 M with AVX2, by cachegrind).
 */

/* row = x - shift; whether an element of x is NaN or infinite. */
static pg_attribute_always_inline bool
shift_checked_body(int d, const double *restrict x, const double *restrict shift,
				   double *restrict row)
{
	uint64		bad = 0;

	for (int j = 0; j < d; j++)
	{
		uint64		bits;

		/* exponent all ones (NaN or infinite): integer lanes, vectorizable */
		memcpy(&bits, x + j, sizeof(bits));
		bad |= (((bits >> 52) & 0x7ff) + 1) >> 11;
		row[j] = x[j] - shift[j];
	}
	return bad != 0;
}

/* sum += each of k rows, in their order. */
static pg_attribute_always_inline void
add_rows_body(int d, int k, const double *restrict rows, double *restrict sum)
{
	for (int i = 0; i < k; i++)
		for (int j = 0; j < d; j++)
			sum[j] += rows[(int64) i * d + j];
}

/* rows[i] -= mean for k rows. */
static pg_attribute_always_inline void
center_block_body(int d, int k, double *restrict rows, const double *restrict mean)
{
	for (int i = 0; i < k; i++)
		for (int j = 0; j < d; j++)
			rows[(int64) i * d + j] -= mean[j];
}

/*
 * out = the d binary32 values at x, and sum += out - shift (the step of
 * perpca_stats_rows4_add, the same bits) in the same pass, while the row is
 * in cache: whether all are finite (if not, sum is spoilt: only for rows
 * whose non-finite value is an error).  An int flag: vectorizable.
 */
static pg_attribute_always_inline bool
copy_sum4_body(int d, const float *restrict x, float *restrict out, const double *restrict shift,
			   double *restrict sum)
{
	int			bad = 0;

	for (int j = 0; j < d; j++)
	{
		out[j] = x[j];
		bad |= !(fabsf(x[j]) <= FLT_MAX);
		sum[j] += (double) x[j] - shift[j];
	}
	return !bad;
}

#define ROW_OPS(suffix, attr) \
static attr bool shift_checked_##suffix(int d, const double *restrict x, \
	const double *restrict shift, double *restrict row) \
{ return shift_checked_body(d, x, shift, row); } \
static attr void add_rows_##suffix(int d, int k, const double *restrict rows, \
	double *restrict sum) \
{ add_rows_body(d, k, rows, sum); } \
static attr void center_block_##suffix(int d, int k, double *restrict rows, \
	const double *restrict mean) \
{ center_block_body(d, k, rows, mean); } \
static attr bool copy_sum4_##suffix(int d, const float *restrict x, float *restrict out, \
	const double *restrict shift, double *restrict sum) \
{ return copy_sum4_body(d, x, out, shift, sum); }

typedef struct RowOps
{
	bool		(*shift_checked) (int, const double *, const double *, double *);
	void		(*add_rows) (int, int, const double *, double *);
	void		(*center_block) (int, int, double *, const double *);
	bool		(*copy_sum4) (int, const float *, float *, const double *, double *);
} RowOps;

ROW_OPS(base, )
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_ROW_OPS_AVX2 1
ROW_OPS(avx2, __attribute__((target("avx2"))))
#endif

/* The loops for this CPU (the baseline's until choose_row_ops has run). */
static RowOps row_ops = {shift_checked_base, add_rows_base, center_block_base, copy_sum4_base};

/* Choose the loops for the CPU we run on (once, from state_create). */
static void
choose_row_ops(void)
{
#ifdef HAVE_ROW_OPS_AVX2
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2"))
		row_ops = (RowOps) {shift_checked_avx2, add_rows_avx2, center_block_avx2, copy_sum4_avx2};
#endif
	row_ops_chosen = true;
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

/*
 * Are the values of a row of the state all finite?  If not, the row is an
 * error naming its first bad element (with the hint of its aggregate), or
 * (skip) false.
 */
static inline bool
row_finite(const StatsState *st, const double *x)
{
	int			j = perpca_first_nonfinite(x, st->d);

	if (j < 0)
		return true;
	if (st->nulls == PERPCA_NULLS_ERROR)
		perpca_row_element_error("input row", j, st->d, false, x[j],
								 st->sketch ? SKETCH_SKIP_HINT : SKIP_HINT);
	return false;
}

/*
 * The values x of a float8[] row of dimension d, or NULL when it has a NULL
 * element and is skipped (else an error naming the element, with hint).
 * Their finiteness is checked by the caller.
 */
static const double *
row_without_nulls(ArrayType *a, const double *x, int d, PerpcaNulls nulls, const char *hint)
{
	int			j;

	if (ARR_HASNULL(a) && (j = perpca_first_null(a)) >= 0)
	{
		if (nulls == PERPCA_NULLS_ERROR)
			perpca_row_element_error("input row", j, d, true, 0.0, hint);
		return NULL;
	}
	return x;
}

/* Rows that wait in TOAST are checked under the state's nulls: one value per state. */
static void
state_set_nulls(StatsState *st, PerpcaNulls nulls)
{
	if (st->nulls == nulls)
		return;
	if (st->npend > 0)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("missing must be the same for every row of a group")));
	st->nulls = nulls;
}

/* ------------------------------------------------------------------------
 * Rows left in TOAST
 * ------------------------------------------------------------------------
 */

/*
 * The row type of the state's pending rows (one per state: a group's rows
 * come from one aggregate); other types than float8[] are converted into
 * the state's `fetched` row when fetched.
 */
static void
state_set_rowtype(StatsState *st, PerpcaRowType type)
{
	if (st->npend > 0 && st->rowtype != type)
		elog(ERROR, "perpca_stats state holds rows of another type");
	st->rowtype = type;
}

/*
 * Can this argument, a row of type `type`, wait in the state as it came?
 * Only a value of the size of a one-dimensional float8[d] without NULLs, or
 * of a vector or halfvec of dimension d, either an on-disk TOAST pointer to
 * one or (when a missing value is an error) one stored inline, uncompressed;
 * anything else is read at once (and a malformed row fails at once).
 */
static bool
row_deferrable(const StatsState *st, PerpcaRowType type, Datum arg)
{
	struct varlena *v = (struct varlena *) DatumGetPointer(arg);
	Size		size;

	if (st->npend > 0 && st->rowtype != type)
		return false;
	size = type == PERPCA_ROWTYPE_FLOAT8
		? ARR_OVERHEAD_NONULLS(1) + sizeof(double) * st->d
		: row_reader(type)->header + row_reader(type)->elemsize * (Size) st->d;
	if (VARATT_IS_EXTERNAL_ONDISK(v))
	{
		varatt_external ptr;

		VARATT_EXTERNAL_GET_POINTER(ptr, v);
		return ptr.va_rawsize == (int32) size;
	}
	/* under 'skip', a row read at once that is left out does not count towards the thin limit */
	if (st->nulls != PERPCA_NULLS_ERROR)
		return false;
	if (VARATT_IS_4B_U(v))
		return VARSIZE(v) == size;
	return VARATT_IS_1B(v) && !VARATT_IS_1B_E(v) &&
		VARSIZE_1B(v) == size - VARHDRSZ + VARHDRSZ_SHORT;
}

/* A new last block of the arena that can hold need bytes: twice the last one's size, or what they need. */
static PendingBlock *
pending_block(StatsState *st, Size need)
{
	PendingBlock *tail = st->pendtail;
	Size		cap = tail == NULL ? PENDING_FIRST_BLOCK : Min(2 * tail->cap, PENDING_MAX_BLOCK);
	PendingBlock *blk;

	cap = Max(cap, need);
	blk = MemoryContextAllocHuge(st->cxt, offsetof(PendingBlock, data) + cap);
	blk->next = NULL;
	blk->used = 0;
	blk->count = 0;
	blk->cap = cap;
	if (tail == NULL)
		st->pend = blk;
	else
		tail->next = blk;
	st->pendtail = blk;
	return blk;
}

/*
 * Append count pending rows, len bytes from rows (whole entries laid out
 * from a MAXALIGNed start, as in a block), to the arena: into its last
 * block if they fit, else into a new one.  A lone TOAST pointer goes
 * right after the last entry; anything else MAXALIGNed, padded with zeros
 * before and after.
 */
static void
state_defer_bytes(StatsState *st, const char *rows, Size len, int count)
{
	PendingBlock *tail = st->pendtail;
	bool		packed = count == 1 && VARATT_IS_EXTERNAL(rows);
	Size		size = packed ? len : MAXALIGN(len);
	Size		start;

	if (len == 0)
		return;
	start = tail == NULL ? 0 : packed ? tail->used : MAXALIGN(tail->used);
	if (tail == NULL || tail->cap < start + size)
	{
		tail = pending_block(st, size);
		start = 0;
	}
	memset(tail->data + tail->used, 0, start - tail->used);
	memcpy(tail->data + start, rows, len);
	memset(tail->data + start + len, 0, size - len);
	st->pendlen += MAXALIGN(start + size) - MAXALIGN(tail->used);
	tail->used = start + size;
	tail->count += count;
	st->npend += count;
}

/* Append b's pending rows to a's arena. */
static void
state_defer_all(StatsState *a, const StatsState *b)
{
	for (const PendingBlock *blk = b->pend; blk != NULL; blk = blk->next)
		state_defer_bytes(a, blk->data, blk->used, blk->count);
}

/* Free the arena: no rows pending. */
static void
state_clear_pending(StatsState *st)
{
	while (st->pend != NULL)
	{
		PendingBlock *next = st->pend->next;

		pfree(st->pend);
		st->pend = next;
	}
	st->pendtail = NULL;
	st->pendlen = 0;
	st->npend = 0;
}

/* The row argument waits in the arena as it came (a TOAST pointer or its bytes). */
static void
state_defer(StatsState *st, Datum arg)
{
	state_defer_bytes(st, DatumGetPointer(arg), VARSIZE_ANY(DatumGetPointer(arg)), 1);
}

/*
 * Fetch the pending row at entry (its detoasted value in *copy: a palloc'd
 * copy, or entry itself when it was stored inline) and check it: its
 * values, or NULL when it is skipped.  A row of another type than float8[]
 * is converted into conv (d doubles).
 */
static const double *
fetch_pending(const StatsState *st, const char *entry, void **copy, double *conv)
{
	int			d;
	const double *x;
	bool		finite = false;	/* known finite without another pass */

	if (st->rowtype == PERPCA_ROWTYPE_FLOAT8)
	{
		ArrayType  *arr = DatumGetArrayTypeP(PointerGetDatum(entry));

		*copy = arr;
		x = perpca_vector_shape_nulls(arr, &d, "input row");
		x = row_without_nulls(arr, x, d, st->nulls, SKIP_HINT);
	}
	else
	{
		*copy = (void *) row_reader(st->rowtype)->row(PointerGetDatum(entry), &d, "input row");
		if (d == st->d)
			finite = row_reader(st->rowtype)->values(*copy, conv);
		x = conv;
	}
	if (d != st->d)
		perpca_dim_mismatch(st->d, d, "input row");
	return x != NULL && (finite || row_finite(st, x)) ? x : NULL;
}

/*
 * All unmerged rows, minus shift, into rows (up to nbuf + npend rows) and
 * their column sums into sum: the buffered rows as they are, then the
 * pending ones fetched, in arrival order.  Returns the number of rows
 * written; pending rows that are skipped are added to *skipped.  The state
 * does not change.
 */
static int
unmerged_rows(const StatsState *st, double *rows, double *sum, int64 *skipped)
{
	int			d = st->d;
	int			k = st->nbuf;
	double	   *conv = st->rowtype == PERPCA_ROWTYPE_FLOAT8 ? NULL : palloc(sizeof(double) * d);

	if (rows != st->buf && st->nbuf > 0)
		memcpy(rows, st->buf, sizeof(double) * st->nbuf * d);
	if (sum != st->bsum)
		memcpy(sum, st->bsum, sizeof(double) * d);
	foreach_pending(st, blk, entry)
	{
		void	   *value;
		const double *x = fetch_pending(st, entry, &value, conv);

		if (x != NULL)
			shift_row(d, x, st->shift, rows + (int64) k++ * d, sum);
		else
			(*skipped)++;
		if (value != (void *) entry)
			pfree(value);
	}
	if (conv != NULL)
		pfree(conv);
	return k;
}

/* The float4 row x is finite; else an error, or false under skip (row_finite on its doubles). */
static bool
row4_finite(const StatsState *st, const float *x)
{
	double	   *wide = palloc(sizeof(double) * st->d);
	bool		finite;

	for (int j = 0; j < st->d; j++)
		wide[j] = x[j];
	finite = row_finite(st, wide);
	pfree(wide);
	return finite;
}

/*
 * The float4 values of the pending row at entry into out, checked: whether
 * it is kept (false: skipped; a NaN or infinity is an error unless skip).
 * With a shift, a kept row's out - shift is added to sum.
 */
static bool
fetch_pending4(const StatsState *st, const char *entry, float *out, const double *shift,
			   double *sum)
{
	int			d;
	const PerpcaRowReader *r = row_reader(st->rowtype);
	const void *row = r->row(PointerGetDatum(entry), &d, "input row");
	bool		fused = shift != NULL && r->elemsize == sizeof(float) &&
		st->nulls == PERPCA_NULLS_ERROR;
	bool		finite;

	if (d != st->d)
		perpca_dim_mismatch(st->d, d, "input row");
	finite = fused ? row_ops.copy_sum4(d, (const float *) ((const char *) row + r->header), out, shift, sum)
		: r->floats(row, out);
	if (row != (const void *) entry)
		pfree((void *) row);
	if (!finite && !row4_finite(st, out))
		return false;
	if (shift != NULL && !fused)
		perpca_stats_rows4_add(out, d, shift, sum);
	return true;
}

/*
 * Does the state keep its rows as float4, as they came: thin, every row
 * pending, none a double (a float8[] row, or a float8 thin value's)?
 */
static inline bool
state_float4(const StatsState *st)
{
	return st->m2 == NULL && st->nbuf == 0 && st->npend > 0 && st->rowtype != PERPCA_ROWTYPE_FLOAT8;
}

/*
 * The reference point of a state whose rows all wait (no row merged or
 * buffered) into shift: the values of its first pending row (read at once
 * and checked by accum_row4, a TOAST pointer checked here by fetch_pending,
 * or a float4 value's first row: state_merge_stats), as the state would
 * have set it had the row been read at once.
 */
static void
pending_reference(const StatsState *st, double *shift)
{
	void	   *value;
	const double *x;

	Assert(st->n == 0 && st->nbuf == 0 && st->npend > 0);
	x = fetch_pending(st, st->pend->data, &value, shift);
	if (x == NULL)
		elog(ERROR, "perpca_stats state's first pending row is not kept");
	if (x != shift)
		memcpy(shift, x, sizeof(double) * st->d);
	if (value != (void *) st->pend->data)
		pfree(value);
}

/*
 * Allocate the state's shift, mu and bsum (one allocation: three of d
 * doubles would each be rounded up to a power of two by the allocator),
 * zeroed, the shift the reference point of the rows already pending.  A
 * group whose rows all wait as they came (state_float4) never needs them:
 * its value's mean comes from its rows (thin_stats4).  Zeroing them for
 * each of 104 thin groups at d = 768 was most of the query's page faults.
 */
static void
state_need_arrays(StatsState *st)
{
	if (st->shift != NULL)
		return;
	st->shift = MemoryContextAllocZero(st->cxt, sizeof(double) * 3 * st->d);
	st->mu = st->shift + st->d;
	st->bsum = st->shift + 2 * st->d;
	if (st->npend > 0)
		pending_reference(st, st->shift);
}

/* Append k float4 rows (a float4 thin value's) to the pending rows, each a PERPCA_ROWTYPE_FLOAT4 entry. */
static void
state_defer_floats(StatsState *st, const float *rows, int64 k)
{
	Size		len = VARHDRSZ + sizeof(float) * st->d;
	Size		entry = MAXALIGN(len);
	char	   *buf = palloc0(entry * k);

	for (int64 i = 0; i < k; i++)
	{
		SET_VARSIZE(buf + i * entry, len);
		memcpy(buf + i * entry + VARHDRSZ, rows + i * st->d, sizeof(float) * st->d);
	}
	state_set_rowtype(st, PERPCA_ROWTYPE_FLOAT4);
	state_defer_bytes(st, buf, entry * k, (int) k);
	pfree(buf);
}

/*
 * Bring bsum up to the buffered rows: a dense state's rows are summed here,
 * a block at a time and in their order (the same sums as row by row), where
 * adding each to the sums as it came read it back (dense_add_row).
 */
static void
state_sum_block(StatsState *st)
{
	if (st->nbuf > st->nsummed)
		row_ops.add_rows(st->d, st->nbuf - st->nsummed,
						 st->buf + (int64) st->nsummed * st->d, st->bsum);
	st->nsummed = st->nbuf;
}

/* Fetch the pending rows into the buffer. */
static void
state_materialize(StatsState *st)
{
	if (st->npend == 0)
		return;
	state_need_arrays(st);
	state_reserve(st, state_unmerged(st));
	state_sum_block(st);
	st->nbuf = st->nsummed = unmerged_rows(st, st->buf, st->bsum, &st->skipped);
	state_clear_pending(st);
}

/* ------------------------------------------------------------------------
 * Buffered rows, blocks and merges
 * ------------------------------------------------------------------------
 */

/* Append nrows rows src + offset to the buffer (restrict: vectorizable). */
static void
state_append(StatsState *st, const double *restrict src, int nrows,
			 const double *restrict offset)
{
	int			d = st->d;
	double	   *restrict sum = st->bsum;

	state_sum_block(st);
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
	st->nsummed = st->nbuf;
}

/*
 * Fold nb rows with mean shift_b + mu_b (their co-moment already added to
 * m2) into st.  shift_b - st->shift is exact when the two points are close.
 */
static void
state_merge_moments(StatsState *st, int64 nb, const double *shift_b, const double *mu_b)
{
	int64		na = st->n;
	double		w;
	double	   *delta;

	int64		total = na;

	perpca_add_count(&total, nb, "perpca_stats row count");
	w = (double) nb / (double) total;
	if (na == 0)
	{
		if (shift_b != st->shift)
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
	st->n = total;
	pfree(delta);
}

/* The error for finite rows whose sums overflow. */
static void
too_large(int j, const char *detail)
{
	ereport(ERROR,
			(errcode(PERPCA_ERRCODE_OUT_OF_RANGE),
			 errmsg("input rows are too large in magnitude for perpca_stats"),
			 errdetail("In column %d, %s exceeds the range of float8.", j + 1, detail),
			 errhint("Divide the column by a constant (its scale) before aggregating.")));
}

/*
 * mean = sum / k for k rows.  The rows are finite (checked on entry), so a
 * non-finite sum is an overflow: of a row's difference from the reference
 * row or of the sum.
 */
static void
column_mean(int d, const double *sum, int64 k, double *mean)
{
	for (int j = 0; j < d; j++)
	{
		if (!isfinite(sum[j]))
			too_large(j, psprintf("the rows' differences from the first row, or their sum over %lld rows,",
								  (long long) k));
		mean[j] = sum[j] / k;
	}
}

/* Apply the buffered block: one dsyrk on the block centred at its own mean. */
static void
state_flush(StatsState *st)
{
	int			d = st->d;
	int			k = st->nbuf;
	double	   *bm;

	Assert(st->npend == 0);
	if (k == 0)
		return;
	Assert(st->m2 != NULL);
	state_sum_block(st);
	bm = palloc(sizeof(double) * d);
	column_mean(d, st->bsum, k, bm);
	row_ops.center_block(d, k, st->buf, bm);
	linalg_syrk_upper(d, k, 1.0, st->buf, st->m2);
	state_merge_moments(st, k, st->shift, bm);
	memset(st->bsum, 0, sizeof(double) * d);
	st->nbuf = st->nsummed = 0;
	pfree(bm);
}

/* Switch a thin state to the dense form: allocate M2, apply the rows. */
static void
state_densify(StatsState *st)
{
	if (st->m2 != NULL)
		return;
	state_materialize(st);
	state_need_arrays(st);
	st->m2 = m2_alloc(st->cxt, st->d);
	state_flush(st);
	/*
	 * a dense state buffers a block: the thin rows' buffer (up to d/2 + 1
	 * rows) is replaced by one of a block at once, not grown to it by
	 * copies
	 */
	if (st->bufcap != BLOCK_ROWS)
	{
		if (st->buf != NULL)
			pfree(st->buf);
		st->buf = dense_alloc(st->cxt, sizeof(double) * BLOCK_ROWS * st->d);
		st->bufcap = BLOCK_ROWS;
	}
}

/*
 * Ask the cache for the slot of the group's next row, which will be
 * written.  With rows interleaved across groups, the next row of this group
 * comes after those of the others, which push its block out of the cache
 * (100 groups' blocks at d = 64 are 6.4 MB), and its stores then wait on
 * memory: requested now, the lines are there when it comes (at d = 64,
 * ~6% of the aggregate's time with 100 groups interleaved).
 */
static inline void
prefetch_next_row(const StatsState *st)
{
	const double *next = st->buf + (int64) st->nbuf * st->d;

	if (st->nbuf < st->bufcap)
		for (int j = 0; j < st->d; j += 64 / sizeof(double))
			__builtin_prefetch(next + j, 1, 3);
}

/*
 * Add a row of a dense state, x - shift, checking in the same pass that x
 * is finite (an error, or under 'skip' false: the row is left out).  Its
 * values join the block's column sums when the block is applied.
 */
static bool
dense_add_row(StatsState *st, const double *restrict x)
{
	double	   *row;

	if (st->nbuf >= BLOCK_ROWS)
		state_flush(st);
	state_reserve(st, st->nbuf + 1);	/* a block once densified; a copy may hold less */
	row = st->buf + (int64) st->nbuf * st->d;
	if (row_ops.shift_checked(st->d, x, st->shift, row) && !row_finite(st, x))
		return false;
	st->nbuf++;
	prefetch_next_row(st);
	return true;
}

/* Add one input row (its values, finite); it enters as x - shift. */
static void
state_add_row(StatsState *st, const double *x)
{
	state_need_arrays(st);
	if (state_empty(st))
		memcpy(st->shift, x, sizeof(double) * st->d);
	if (st->m2 == NULL && state_unmerged(st) >= PERPCA_STATS_THIN_MAX(st->d))
		state_densify(st);
	else if (st->m2 != NULL && st->nbuf >= BLOCK_ROWS)
		state_flush(st);
	state_materialize(st);
	state_reserve(st, st->nbuf + 1);
	state_sum_block(st);
	shift_row(st->d, x, st->shift, st->buf + (int64) st->nbuf * st->d, st->bsum);
	st->nsummed = ++st->nbuf;
}

/* Add a stored value's M2 (either form) into the dense state's m2. */
static void
add_comoment(StatsState *st, const PerpcaStats *s)
{
	const double *body = PERPCA_STATS_BODY(s);
	int64		d = st->d;

	if (s->form == PERPCA_FORM_THIN)
	{
		const double *Y = perpca_stats_thin_rows(s);

		linalg_syrk_upper(st->d, (int) s->n, 1.0, Y, st->m2);
		if (Y != body)
			pfree((void *) Y);
		return;
	}
	for (int64 i = 0, k = 0; i < d; i++)
		for (int64 j = i; j < d; j++)
			st->m2[i * d + j] += body[k++];
}

static PerpcaStats *state_to_stats(StatsState *st);

/* Merge a stored value into the state. */
static void
state_merge_stats(StatsState *st, const PerpcaStats *s)
{
	perpca_add_count(&st->skipped, perpca_stats_skipped(s), "perpca_stats skipped row count");
	if (s->n == 0)
		return;
	if (perpca_stats_float4(s) && st->m2 == NULL && st->nbuf == 0 &&
		(st->npend == 0 || st->rowtype == PERPCA_ROWTYPE_FLOAT4) &&
		st->npend + s->n <= PERPCA_STATS_THIN_MAX(st->d))
	{
		/* float4 rows join float4 rows as they are: the result stays float4 thin */
		if (state_empty(st) && st->shift != NULL)
			for (int j = 0; j < st->d; j++)
				st->shift[j] = PERPCA_STATS_ROWS4(s)[j];
		state_defer_floats(st, PERPCA_STATS_ROWS4(s), s->n);
		return;
	}
	state_materialize(st);
	state_need_arrays(st);
	if (s->form == PERPCA_FORM_THIN && st->m2 == NULL &&
		st->nbuf + s->n <= PERPCA_STATS_THIN_MAX(st->d))
	{
		/* rows y centred at mean + mean_lo enter as y + (mean - shift) + mean_lo */
		double	   *offset = palloc(sizeof(double) * st->d);
		const double *Y = perpca_stats_thin_rows(s);

		if (state_empty(st))
			memcpy(st->shift, PERPCA_STATS_MEAN(s), sizeof(double) * st->d);
		perpca_stats_offset(s, st->shift, offset);
		state_append(st, Y, (int) s->n, offset);
		if (Y != PERPCA_STATS_BODY(s))
			pfree((void *) Y);
		pfree(offset);
		return;
	}
	state_densify(st);
	state_flush(st);
	add_comoment(st, s);
	state_merge_moments(st, s->n, PERPCA_STATS_MEAN(s), PERPCA_STATS_MEAN_LO(s));
}

/* Make the empty state a an exact copy of b (combine into nothing). */
static void
state_copy(StatsState *a, const StatsState *b)
{
	int			d = a->d;

	Assert(state_empty(a) && a->m2 == NULL && b->nsummed == b->nbuf);
	a->n = b->n;
	if (b->shift != NULL)
	{
		state_need_arrays(a);
		memcpy(a->shift, b->shift, sizeof(double) * 3 * d);	/* shift, mu, bsum */
	}
	else if (a->shift != NULL)
	{
		/* b's reference point is its first pending row, and so a's will be */
		pfree(a->shift);
		a->shift = a->mu = a->bsum = NULL;
	}
	if (b->m2 != NULL)
	{
		a->m2 = m2_alloc(a->cxt, d);
		for (int64 i = 0; i < d; i++)
			memcpy(a->m2 + i * d + i, b->m2 + i * d + i, sizeof(double) * (d - i));
	}
	if (b->nbuf > 0)
	{
		state_reserve(a, b->nbuf);
		memcpy(a->buf, b->buf, sizeof(double) * b->nbuf * d);
		a->nbuf = a->nsummed = b->nbuf;
	}
	a->nulls = b->nulls;
	state_set_rowtype(a, b->rowtype);
	state_defer_all(a, b);
}

/*
 * Two thin states whose union stays thin: b's buffered rows join a's
 * buffer, b's pending rows a's pending ones, and nothing is fetched from
 * TOAST, so a parallel plan's Finalize holds no more than the serial plan
 * even when a group's rows are spread over its processes.  (Their order is
 * a's buffered, b's buffered, a's pending, b's pending: a group split over
 * processes meets in an order that depends on the processes anyway.)
 */
static void
state_merge_thin(StatsState *a, StatsState *b)
{
	if (b->nbuf > 0)
	{
		double	   *offset = palloc(sizeof(double) * a->d);

		state_need_arrays(a);
		for (int j = 0; j < a->d; j++)
			offset[j] = b->shift[j] - a->shift[j];
		state_append(a, b->buf, b->nbuf, offset);
		pfree(offset);
	}
	if (b->npend > 0)
	{
		state_set_nulls(a, b->nulls);
		state_set_rowtype(a, b->rowtype);
	}
	state_defer_all(a, b);
}

/*
 * perpca_merge has met a sketch: from now on the state is a sketch with
 * (at most) ell rows, and what the exact state holds enters it as a value
 * (sketch.c: a thin value's rows; a dense value's top eigenpairs, FD-shrunk).
 */
static void
state_to_sketch(StatsState *st, int ell)
{
	if (st->sketch != NULL)
		return;
	st->sketch = sketch_create(st->cxt, st->d, ell);
	if (!state_empty(st) || st->skipped > 0)
		sketch_merge_stats(st->sketch, state_to_stats(st));
}

/* Merge state b into state a. */
static void
state_merge_state(StatsState *a, StatsState *b)
{
	if (a->sketch != NULL || b->sketch != NULL)
	{
		state_to_sketch(a, b->sketch != NULL ? b->sketch->ell : a->sketch->ell);
		if (b->sketch != NULL)
			sketch_merge(a->sketch, b->sketch);
		else if (!state_empty(b) || b->skipped > 0)
			sketch_merge_stats(a->sketch, state_to_stats(b));
		return;
	}
	perpca_add_count(&a->skipped, b->skipped, "perpca_stats skipped row count");
	if (state_empty(b))
		return;
	if (state_empty(a) && a->m2 == NULL)
	{
		state_sum_block(b);
		state_copy(a, b);
		return;
	}
	if (b->npend > 0 && a->npend > 0 && a->rowtype != b->rowtype)
		state_materialize(b);	/* one type of pending rows per state */
	if (a->m2 == NULL && b->m2 == NULL &&
		state_unmerged(a) + state_unmerged(b) <= PERPCA_STATS_THIN_MAX(a->d))
	{
		state_merge_thin(a, b);
		return;
	}
	state_materialize(a);
	state_materialize(b);
	state_densify(a);
	state_flush(a);
	state_densify(b);
	state_flush(b);
	for (int64 i = 0, d = a->d; i < d; i++)	/* the upper triangles */
		linalg_axpy(d - i, 1.0, b->m2 + i * d + i, a->m2 + i * d + i);
	state_merge_moments(a, b->n, b->shift, b->mu);
}

/* ------------------------------------------------------------------------
 * The result
 * ------------------------------------------------------------------------
 */

/* rows[i] -= mu for k rows; whether all results are finite (one pass). */
static bool
center_rows(int d, int64 k, double *restrict rows, const double *restrict mu)
{
	int			bad = 0;

	for (int64 i = 0; i < k; i++)
		for (int j = 0; j < d; j++)
		{
			double		v = rows[i * d + j] - mu[j];

			rows[i * d + j] = v;
			bad |= !(fabs(v) <= DBL_MAX);
		}
	return !bad;
}

/*
 * The co-moments of k centred rows (the diagonal of M2 = Y'Y) are finite,
 * as input requires of a thin value: else the error of a dense value's.
 */
static void
check_row_squares(int d, int64 k, const double *rows)
{
	double	   *sq = palloc0(sizeof(double) * d);

	for (int64 i = 0; i < k; i++)
		for (int j = 0; j < d; j++)
			sq[j] += rows[i * d + j] * rows[i * d + j];
	for (int j = 0; j < d; j++)
		if (!isfinite(sq[j]))
			too_large(j, "the sum of squared deviations from the mean");
	pfree(sq);
}

/* A float4 thin value of the first k rows of s (k < s->n) and skipped rows left out; s freed. */
static PerpcaStats *
float4_first_rows(PerpcaStats *s, int64 k, int64 skipped)
{
	PerpcaStats *fewer = perpca_stats_alloc_float4(s->dim, k, skipped);

	memcpy(PERPCA_STATS_ROWS4(fewer), PERPCA_STATS_ROWS4(s), sizeof(float) * k * s->dim);
	pfree(s);
	return fewer;
}

/*
 * A float4 thin value from a state whose rows all wait as they came
 * (state_float4): their float4 values written straight into the value, its
 * mean theirs (perpca_stats_rows4_center: the float8[] path's arithmetic,
 * so its centred rows are that path's bits).  If some pending rows are
 * skipped, the value is copied into one of the right size (none left:
 * thin_stats' empty value); the state does not change.  No sum of float4
 * values overflows a double: nothing here is too large.
 */
static PerpcaStats *
thin_stats4(const StatsState *st)
{
	int			d = st->d;
	int64		skipped = st->skipped;
	PerpcaStats *s = perpca_stats_alloc_float4(d, st->npend, skipped);
	float	   *rows = PERPCA_STATS_ROWS4(s);
	double	   *shift = palloc0(sizeof(double) * 2 * d);
	double	   *mu = shift + d;
	int64		k = 0;

	/*
	 * each row summed as it is written, while in cache: the steps of
	 * perpca_stats_rows4_center (the first row's is zero: it is the shift)
	 */
	foreach_pending(st, blk, entry)
	{
		if (!fetch_pending4(st, entry, rows + k * d, k > 0 ? shift : NULL, mu))
		{
			skipped++;
			continue;
		}
		if (k == 0)
			for (int j = 0; j < d; j++)
				shift[j] = rows[j];
		k++;
	}
	if (k == 0)
		return perpca_stats_alloc(PERPCA_FORM_THIN, d, 0, skipped, 0, 0, true);
	if (k < st->npend)
		s = float4_first_rows(s, k, skipped);
	for (int j = 0; j < d; j++)
		mu[j] = mu[j] / k;
	perpca_stats_set_mean(s, shift, mu);
	pfree(shift);
	return s;
}

/*
 * A thin value from a thin state: its rows centred at their mean, written
 * straight into the value (pending rows fetched there; if some of them are
 * skipped, the value is copied into one of the right size); the state does
 * not change.
 */
static PerpcaStats *
thin_stats(const StatsState *st)
{
	int			d = st->d;
	int			n = state_unmerged(st);
	int64		skipped = st->skipped;
	PerpcaStats *s = perpca_stats_alloc(PERPCA_FORM_THIN, d, n, skipped, 0, 0, false);
	double	   *rows = PERPCA_STATS_BODY(s);
	double	   *mu;
	int			k;

	if (n == 0)
		return s;
	mu = palloc(sizeof(double) * d);
	k = unmerged_rows(st, rows, mu, &skipped);
	if (k < n)
	{
		PerpcaStats *fewer = perpca_stats_alloc(PERPCA_FORM_THIN, d, k, skipped, 0, 0, false);

		memcpy(PERPCA_STATS_BODY(fewer), rows, sizeof(double) * k * d);
		pfree(s);
		s = fewer;
		rows = PERPCA_STATS_BODY(s);
		if (k == 0)
			return s;
	}
	column_mean(d, mu, k, mu);
	perpca_stats_set_mean(s, st->shift, mu);
	if (!center_rows(d, k, rows, mu))
		for (int64 i = 0; i < k; i++)
		{
			int			j = perpca_first_nonfinite(rows + i * d, d);

			if (j >= 0)
				too_large(j, "a row's deviation from the mean");
		}
	check_row_squares(d, k, rows);
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
	s = perpca_stats_alloc(PERPCA_FORM_DENSE, st->d, st->n, st->skipped, 0, 0, false);
	perpca_stats_set_mean(s, st->shift, st->mu);
	m2 = PERPCA_STATS_BODY(s);
	/*
	 * |M2_ij| <= sqrt(M2_ii M2_jj) bounds a row by a finite diagonal, but
	 * rounding at the edge of the range can still overflow: what input would
	 * refuse is an error here, never a value.
	 */
	for (int64 i = 0, k = 0; i < d; i++)
	{
		if (!isfinite(st->m2[i * d + i]))
			too_large(i, "the sum of squared deviations from the mean");
		for (int64 j = i; j < d; j++)
			if (!isfinite(m2[k++] = st->m2[i * d + j]))
				too_large(i, psprintf("the sum of its deviations times those of column %d", (int) j + 1));
	}
	for (int j = 0; j < d; j++)
		if (!isfinite(PERPCA_STATS_MEAN(s)[j] + PERPCA_STATS_MEAN_LO(s)[j]))
			too_large(j, "the mean");
	return s;
}

/* Build the stored value from the state, in the form the state is in. */
static PerpcaStats *
state_to_stats(StatsState *st)
{
	if (state_float4(st))
		return thin_stats4(st);
	if (st->m2 != NULL)
		return dense_stats(st);
	if (state_unmerged(st) > 0)
		state_need_arrays(st);
	return thin_stats(st);
}

/* ------------------------------------------------------------------------
 * Serialized state (partial aggregation): the state itself, exactly
 * ------------------------------------------------------------------------
 */

/*
 * 4 since 0.5.0 (pending TOAST pointers take 18 bytes in the arena). A
 * parallel worker can load a newer build of the library than its leader's
 * (the library file replaced while the leader runs); the number tells them
 * apart.
 */
#define STATE_FORMAT 4

/*
 * Layout: this header, then shift, mu, bsum (d each), the nbuf buffered
 * rows (minus shift), for a dense state the packed upper M2, and the arena
 * of the npend pending rows (pendlen bytes: TOAST pointers and inline rows).
 * The pointers stay valid in the process that deserializes: partial
 * aggregation runs in workers of the same query, which share its snapshot
 * (as tuples with TOAST pointers travel from workers to the leader through
 * Gather).
 */
typedef struct SerialState
{
	int32		vl_len_;		/* varlena header (do not touch directly) */
	uint8		format;			/* STATE_FORMAT */
	uint8		dense;			/* 1 if the state holds M2 */
	uint8		nulls;			/* PerpcaNulls */
	uint8		rowtype;		/* PerpcaRowType of the pending rows */
	int32		d;
	int32		nbuf;
	int32		npend;
	int64		n;
	int64		skipped;
	int64		pendlen;
	double		data[FLEXIBLE_ARRAY_MEMBER];
} SerialState;

static int64
serial_doubles(bool dense, int d, int nbuf)
{
	return 3 * (int64) d + (int64) nbuf * d + (dense ? PERPCA_STATS_PACKED(d) : 0);
}

static Size
serial_size(bool dense, int d, int nbuf, Size pendlen)
{
	return offsetof(SerialState, data) + sizeof(double) * serial_doubles(dense, d, nbuf) +
		pendlen;
}

/* Does the arena of pendlen bytes at p hold exactly npend whole entries (and padding)? */
static bool
pending_well_formed(const char *p, Size pendlen, int npend)
{
	Size		off = 0;
	int			count = 0;

	while (off < pendlen)
	{
		if (pendlen - off < VARHDRSZ_SHORT || VARSIZE_ANY(p + off) < VARHDRSZ_SHORT ||
			PENDING_SIZE(p + off) > pendlen - off)
			return false;
		off = pending_next(p, off, pendlen);
		count++;
	}
	return off == pendlen && count == npend;
}

/* shift, mu and bsum into p (zeroed), those of a state without them as state_need_arrays would make them. */
static void
serial_arrays(const StatsState *st, double *p)
{
	if (st->shift != NULL)
		memcpy(p, st->shift, sizeof(double) * 3 * st->d);
	else if (st->npend > 0)
		pending_reference(st, p);
}

static bytea *
state_serialize(StatsState *st)
{
	int64		d = st->d;
	Size		size;
	SerialState *ss;
	double	   *p;

	if (st->sketch != NULL)
		return sketch_serialize(st->sketch);	/* perpca_merge of sketches */
	state_sum_block(st);		/* bsum of every buffered row, as before */
	size = serial_size(st->m2 != NULL, st->d, st->nbuf, st->pendlen);
	ss = palloc0(size);
	p = ss->data;

	SET_VARSIZE(ss, size);
	ss->format = STATE_FORMAT;
	ss->dense = st->m2 != NULL;
	ss->d = st->d;
	ss->nbuf = st->nbuf;
	ss->npend = st->npend;
	ss->pendlen = st->pendlen;
	ss->n = st->n;
	ss->skipped = st->skipped;
	ss->nulls = st->nulls;
	ss->rowtype = st->rowtype;
	serial_arrays(st, p);
	if (st->nbuf > 0)
		memcpy(p + 3 * d, st->buf, sizeof(double) * st->nbuf * d);
	p += 3 * d + st->nbuf * d;
	if (st->m2 != NULL)
		for (int64 i = 0; i < d; i++)
			for (int64 j = i; j < d; j++)
				*p++ = st->m2[i * d + j];
	for (const PendingBlock *blk = st->pend; blk != NULL; blk = blk->next)
	{
		memcpy(p, blk->data, blk->used);	/* then zeros to MAXALIGN (palloc0) */
		p = (double *) ((char *) p + MAXALIGN(blk->used));
	}
	return (bytea *) ss;
}

/* A state that is the sketch sk: perpca_sketch's, or perpca_merge's once it has met a sketch. */
static StatsState *
state_of_sketch(MemoryContext cxt, SketchState *sk, PerpcaNulls nulls)
{
	StatsState *st = MemoryContextAllocZero(cxt, sizeof(StatsState));

	st->cxt = cxt;
	st->d = sk->d;
	st->nulls = nulls;
	st->sketch = sk;
	return st;
}

/* Does the header of a serialized exact state agree with itself and its size? */
static bool
serial_header_valid(const SerialState *ss)
{
	return VARSIZE(ss) >= offsetof(SerialState, data) && ss->format == STATE_FORMAT &&
		ss->d >= 1 && ss->d <= PERPCA_MAX_DENSE_DIM && ss->nbuf >= 0 && ss->npend >= 0 &&
		ss->n >= 0 && ss->skipped >= 0 && !(ss->dense && ss->npend > 0) &&
		(ss->nulls == PERPCA_NULLS_ERROR || ss->nulls == PERPCA_NULLS_SKIP) &&
		ss->rowtype <= PERPCA_ROWTYPE_FLOAT4 && ss->pendlen >= 0 &&
		ss->pendlen <= (int64) VARSIZE(ss) &&
		VARSIZE(ss) == serial_size(ss->dense, ss->d, ss->nbuf, (Size) ss->pendlen);
}

static StatsState *
state_deserialize(MemoryContext cxt, const SerialState *ss)
{
	StatsState *st;
	const double *p = ss->data;
	int64		d;

	if (sketch_is_serialized((const bytea *) ss))
		return state_of_sketch(cxt, sketch_deserialize(cxt, (const bytea *) ss), PERPCA_NULLS_ERROR);
	if (VARSIZE(ss) >= offsetof(SerialState, data) && ss->format != STATE_FORMAT)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_STATS_CORRUPTED),
				 errmsg("serialized perpca_stats state has format %d, this build of perpca reads %d",
						ss->format, STATE_FORMAT),
				 errhint("The processes of one query loaded different builds of perpca's library: reconnect after installing a new one.")));
	if (!serial_header_valid(ss))
		elog(ERROR, "serialized perpca_stats state is malformed");
	d = ss->d;
	st = state_create(cxt, ss->d, (PerpcaNulls) ss->nulls);
	st->n = ss->n;
	st->skipped = ss->skipped;
	state_need_arrays(st);
	memcpy(st->shift, p, sizeof(double) * 3 * d);	/* shift, mu, bsum */
	p += 3 * d;
	if (ss->dense)
		st->m2 = m2_alloc(cxt, d);
	if (ss->nbuf > 0)
	{
		state_reserve(st, ss->nbuf);
		memcpy(st->buf, p, sizeof(double) * ss->nbuf * d);
		st->nbuf = st->nsummed = ss->nbuf;
		p += ss->nbuf * d;
	}
	if (ss->dense)
		for (int64 i = 0; i < d; i++)
			for (int64 j = i; j < d; j++)
				st->m2[i * d + j] = *p++;
	state_set_rowtype(st, (PerpcaRowType) ss->rowtype);
	if (!pending_well_formed((const char *) p, ss->pendlen, ss->npend))
		elog(ERROR, "serialized perpca_stats state is malformed");
	if (ss->pendlen > 0)
		state_defer_bytes(st, (const char *) p, ss->pendlen, ss->npend);
	return st;
}

/* ------------------------------------------------------------------------
 * Aggregate support functions
 * ------------------------------------------------------------------------
 */

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

/*
 * The transition state (argument 0) for a row of dimension d: created in the
 * aggregate context on the first row, its dimension checked after that.
 */
static StatsState *
accum_state(FunctionCallInfo fcinfo, MemoryContext aggcxt, int d, PerpcaNulls nulls)
{
	StatsState *st = STATE_ARG(0);

	if (st == NULL)
	{
		perpca_check_dense_dim_limit(d, NULL);
		return state_create(aggcxt, d, nulls);
	}
	if (d != st->d)
		perpca_dim_mismatch(st->d, d, "input row");
	state_set_nulls(st, nulls);
	return st;
}

/*
 * perpca_sketch's state for a row of dimension d: a sketch of ell (argument
 * 2) rows, created on the first row; the same d, ell and nulls after that.
 */
static StatsState *
sketch_state(FunctionCallInfo fcinfo, MemoryContext aggcxt, int d, PerpcaNulls nulls)
{
	StatsState *st = STATE_ARG(0);
	int			ell;

	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NULL),
				 errmsg("ell must not be NULL")));
	ell = PG_GETARG_INT32(2);
	sketch_check_ell(ell, d);
	if (st == NULL)
		return state_of_sketch(aggcxt, sketch_create(aggcxt, d, ell), nulls);
	if (d != st->d)
		perpca_dim_mismatch(st->d, d, "input row");
	if (ell != st->sketch->ell)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("ell must be the same for every row of a group (%d, then %d)",
						st->sketch->ell, ell)));
	if (nulls != st->nulls)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("missing must be the same for every row of a group")));
	return st;
}

/*
 * Add the row x (d doubles) to the state, or NULL: a row with a NULL
 * element, left out and counted (so is, under 'skip', a row with a NaN or
 * infinite value; else that is an error).
 */
static void
accum_add(StatsState *st, const double *x)
{
	if (x != NULL && st->m2 != NULL && st->sketch == NULL)
	{
		if (!dense_add_row(st, x))
			st->skipped++;
	}
	else if (x == NULL || !row_finite(st, x))
	{
		if (st->sketch != NULL)
			st->sketch->skipped++;
		else
			st->skipped++;
	}
	else if (st->sketch != NULL)
		sketch_add_row(st->sketch, x);
	else
		state_add_row(st, x);
	if (perpca_progress_rows > 0 && st->sketch == NULL)
		report_progress(st->cxt);
}

/*
 * Defer the row (leave it in TOAST, to be checked when fetched) when the
 * state is a thin group of a plain aggregate that can take it; whether it was.
 */
static bool
defer_row(StatsState *st, int kind, PerpcaRowType type, Datum row, MemoryContext aggcxt)
{
	if (!(st != NULL && kind == AGG_CONTEXT_AGGREGATE && st->m2 == NULL &&
		  !state_empty(st) && state_unmerged(st) < PERPCA_STATS_THIN_MAX(st->d) &&
		  row_deferrable(st, type, row)))
		return false;
	state_set_rowtype(st, type);
	state_defer(st, row);
	if (perpca_progress_rows > 0)
		report_progress(aggcxt);
	return true;
}

/*
 * The first row of a group of a plain aggregate over vector or halfvec rows
 * whose missing values are errors, when it is an on-disk TOAST pointer:
 * the state is created for the dimension the pointer's size gives, and the
 * row waits as its pointer, read and checked when fetched like the rows
 * after it (until then the first pending row is the reference point:
 * state_need_arrays).  The new state, or NULL (the row is read at once).
 */
static StatsState *
defer_first_row(FunctionCallInfo fcinfo, MemoryContext aggcxt, int kind, PerpcaRowType type,
				PerpcaNulls nulls)
{
	struct varlena *v = (struct varlena *) DatumGetPointer(PG_GETARG_DATUM(1));
	const PerpcaRowReader *r;
	varatt_external ptr;
	int			d;
	StatsState *st;

	if (kind != AGG_CONTEXT_AGGREGATE || type == PERPCA_ROWTYPE_FLOAT8 ||
		nulls != PERPCA_NULLS_ERROR || !VARATT_IS_EXTERNAL_ONDISK(v))
		return NULL;
	r = row_reader(type);
	VARATT_EXTERNAL_GET_POINTER(ptr, v);
	if (ptr.va_rawsize <= (int32) r->header || (ptr.va_rawsize - r->header) % r->elemsize != 0)
		return NULL;
	d = (int) ((ptr.va_rawsize - r->header) / r->elemsize);
	if (PERPCA_STATS_THIN_MAX(d) < 1)
		return NULL;
	perpca_check_dim_limit(d);
	st = accum_state(fcinfo, aggcxt, d, nulls);
	state_set_rowtype(st, type);
	state_defer(st, PG_GETARG_DATUM(1));
	if (perpca_progress_rows > 0)
		report_progress(aggcxt);
	return st;
}

/*
 * The row (argument 1) as doubles, NULL when it has a NULL element and is
 * skipped, with *st created or checked for its dimension: a sketch's before
 * the row's NULL elements are looked at, an exact state's after.
 */
static const double *
row_doubles(FunctionCallInfo fcinfo, MemoryContext aggcxt, PerpcaRowType type,
			PerpcaNulls nulls, bool sketch, StatsState **st)
{
	int			d;
	const double *x;
	const void *row;

	if (type == PERPCA_ROWTYPE_FLOAT8)
	{
		ArrayType  *a = PG_GETARG_ARRAYTYPE_P(1);

		x = perpca_vector_shape_nulls(a, &d, "input row");
		if (sketch)
			*st = sketch_state(fcinfo, aggcxt, d, nulls);
		x = row_without_nulls(a, x, d, nulls, sketch ? SKETCH_SKIP_HINT : SKIP_HINT);
		if (!sketch)
			*st = accum_state(fcinfo, aggcxt, d, nulls);
		return x;
	}
	row = row_reader(type)->row(PG_GETARG_DATUM(1), &d, "input row");
	*st = sketch ? sketch_state(fcinfo, aggcxt, d, nulls) : accum_state(fcinfo, aggcxt, d, nulls);
	if ((*st)->scratch == NULL)
		(*st)->scratch = MemoryContextAlloc((*st)->cxt, sizeof(double) * d);
	(void) row_reader(type)->values(row, (*st)->scratch);	/* checked when added */
	return (*st)->scratch;
}

/*
 * May a vector or halfvec row read at once (the first of its group, in a
 * window, under 'skip', compressed) join the state's pending rows as its
 * bytes, so that the group keeps its rows as float4 (state_float4)?  While
 * the state is thin, holds no double rows, and has room.
 */
static inline bool
row4_keepable(const StatsState *st, PerpcaRowType type)
{
	return type != PERPCA_ROWTYPE_FLOAT8 &&
		(st == NULL || (st->sketch == NULL && st->m2 == NULL && st->nbuf == 0 &&
						state_unmerged(st) < PERPCA_STATS_THIN_MAX(st->d) &&
						(st->npend == 0 || st->rowtype == type)));
}

/*
 * Are the d values of a row of reader r, as stored (IEEE binary32 or
 * binary16 after r's header: PerpcaRowReader), all finite?  An exponent of
 * all ones is NaN or infinite; read without converting them (pgvector's
 * types hold none, so this pass is pure overhead of a thin group's row).
 * An int flag: with a bool GCC 12 does not vectorize the loop.
 */
static bool
row4_stored_finite(const PerpcaRowReader *r, const void *row, int d)
{
	const char *values = (const char *) row + r->header;
	int			bad = 0;

	if (r->elemsize == sizeof(uint32))
	{
		const uint32 *restrict x = (const uint32 *) values;

		for (int j = 0; j < d; j++)
			bad |= (x[j] & 0x7f800000) == 0x7f800000;
	}
	else
	{
		const uint16 *restrict x = (const uint16 *) values;

		Assert(r->elemsize == sizeof(uint16));
		for (int j = 0; j < d; j++)
			bad |= (x[j] & 0x7c00) == 0x7c00;
	}
	return !bad;
}

/*
 * The transition of a row4_keepable row: read at once and checked, its
 * detoasted bytes join the pending rows, unconverted (the first one is the
 * state's reference point: state_need_arrays); a row with a NaN or
 * infinite value goes to accum_add as doubles (an error, or skipped and
 * counted), as does every row of d = 1 (no row is thin there).
 */
static StatsState *
accum_row4(FunctionCallInfo fcinfo, MemoryContext aggcxt, PerpcaRowType type, PerpcaNulls nulls)
{
	int			d;
	const PerpcaRowReader *reader = row_reader(type);
	const void *row = reader->row(PG_GETARG_DATUM(1), &d, "input row");
	StatsState *st = accum_state(fcinfo, aggcxt, d, nulls);

	if (!row4_stored_finite(reader, row, d) || PERPCA_STATS_THIN_MAX(d) < 1)
	{
		if (st->scratch == NULL)
			st->scratch = MemoryContextAlloc(st->cxt, sizeof(double) * d);
		(void) reader->values(row, st->scratch);
		accum_add(st, st->scratch);
		return st;
	}
	if (state_empty(st) && st->shift != NULL)
		(void) reader->values(row, st->shift);	/* a state that has its arrays keeps its shift */
	state_set_rowtype(st, type);
	state_defer_bytes(st, row, VARSIZE(row), 1);
	if (perpca_progress_rows > 0)
		report_progress(aggcxt);
	return st;
}

/*
 * The transition of perpca_stats(x [, nulls]) (sketch: perpca_sketch(x, ell
 * [, nulls])) for rows of the given type: NULL rows are ignored, rows with a
 * missing value are an error or skipped.  A row in TOAST waits there while
 * its exact group is thin (not in a window, whose final function runs after
 * every row) and is checked when fetched.
 */
static Datum
accum_rows(FunctionCallInfo fcinfo, PerpcaRowType type, PerpcaNulls nulls, bool sketch)
{
	int			kind;
	MemoryContext aggcxt = perpca_agg_context(fcinfo, sketch ? "perpca_sketch_accum" : "perpca_stats_accum",
											  &kind);
	StatsState *st = STATE_ARG(0);
	const double *x;

	if (PG_ARGISNULL(1))
		RETURN_STATE(st);
	if (st != NULL && !sketch)
		state_set_nulls(st, nulls);
	if (!sketch && defer_row(st, kind, type, PG_GETARG_DATUM(1), aggcxt))
		PG_RETURN_POINTER(st);
	if (!sketch && st == NULL && (st = defer_first_row(fcinfo, aggcxt, kind, type, nulls)) != NULL)
		PG_RETURN_POINTER(st);
	if (!sketch && row4_keepable(st, type))
		PG_RETURN_POINTER(accum_row4(fcinfo, aggcxt, type, nulls));
	x = row_doubles(fcinfo, aggcxt, type, nulls, sketch, &st);
	accum_add(st, x);
	PG_RETURN_POINTER(st);
}

/* perpca_merge(perpca_stats) transition. */
Datum
perpca_stats_merge_accum(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = perpca_agg_context(fcinfo, "perpca_stats_merge_accum", NULL);
	StatsState *st = STATE_ARG(0);
	PerpcaStats *s;

	if (PG_ARGISNULL(1))
		RETURN_STATE(st);
	s = PG_GETARG_PERPCA_STATS(1);
	perpca_stats_validate(s);
	if (st == NULL)
		st = state_create(aggcxt, s->dim, PERPCA_NULLS_ERROR);
	else if (s->dim != st->d)
		perpca_dim_mismatch(st->d, s->dim, "perpca_stats value");
	if (s->form == PERPCA_FORM_SKETCH || st->sketch != NULL)
	{
		state_to_sketch(st, s->form == PERPCA_FORM_SKETCH ? s->ell : st->sketch->ell);
		sketch_merge_stats(st->sketch, s);
	}
	else
		state_merge_stats(st, s);
	PG_RETURN_POINTER(st);
}

/* The combine function of perpca_stats, perpca_merge and perpca_sketch. */
Datum
perpca_stats_combine(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = perpca_agg_context(fcinfo, "perpca_stats_combine", NULL);
	StatsState *a = STATE_ARG(0);
	StatsState *b = STATE_ARG(1);

	if (b == NULL)
		RETURN_STATE(a);
	if (a == NULL)				/* a copy of b in our context */
		a = b->sketch != NULL
			? state_of_sketch(aggcxt, sketch_create(aggcxt, b->d, b->sketch->ell), b->nulls)
			: state_create(aggcxt, b->d, b->nulls);
	if (a->d != b->d)
		perpca_dim_mismatch(a->d, b->d, "input row");
	state_merge_state(a, b);
	PG_RETURN_POINTER(a);
}

/* The serialized state: the state exactly (pending rows as pointers), as bytea. */
Datum
perpca_stats_serialize(PG_FUNCTION_ARGS)
{
	perpca_agg_context(fcinfo, "perpca_stats_serialize", NULL);
	PG_RETURN_BYTEA_P(state_serialize((StatsState *) PG_GETARG_POINTER(0)));
}

/*
 * The state in the current (per-input-tuple) memory context, as the
 * executor calls it there: the combine function copies what it keeps into
 * the aggregate context, so a Finalize aggregate does not hold every
 * partial state it has received until the end of the query.
 */
Datum
perpca_stats_deserialize(PG_FUNCTION_ARGS)
{
	perpca_agg_context(fcinfo, "perpca_stats_deserialize", NULL);
	PG_RETURN_POINTER(state_deserialize(CurrentMemoryContext,
										(SerialState *) PG_DETOAST_DATUM(PG_GETARG_DATUM(0))));
}

PerpcaStats *
perpca_stats_state_final(StatsState *st)
{
	perpca_restore_activity();
	return st->sketch != NULL ? sketch_to_stats(st->sketch) : state_to_stats(st);
}

Datum
perpca_stats_final(PG_FUNCTION_ARGS)
{
	perpca_agg_context(fcinfo, "perpca_stats_final", NULL);
	if (PG_ARGISNULL(0))
	{
		perpca_restore_activity();
		PG_RETURN_NULL();
	}
	PG_RETURN_POINTER(perpca_stats_state_final((StatsState *) PG_GETARG_POINTER(0)));
}

/* perpca_sketch's support functions but the transition are perpca_stats' (one state serves both). */
#define SAME_FUNCTION(name, fn) \
PG_FUNCTION_INFO_V1(name); \
Datum name(PG_FUNCTION_ARGS) { return fn(fcinfo); }

SAME_FUNCTION(perpca_sketch_combine, perpca_stats_combine)
SAME_FUNCTION(perpca_sketch_serialize, perpca_stats_serialize)
SAME_FUNCTION(perpca_sketch_deserialize, perpca_stats_deserialize)
SAME_FUNCTION(perpca_sketch_final, perpca_stats_final)

/* perpca_stats(x [, nulls]) and perpca_sketch(x, ell [, nulls]) transitions of float8[], vector and halfvec rows. */
#define ACCUM_FUNCTION(name, type, nulls, sketch) \
PG_FUNCTION_INFO_V1(name); \
Datum name(PG_FUNCTION_ARGS) { return accum_rows(fcinfo, type, nulls, sketch); }

ACCUM_FUNCTION(perpca_stats_accum, PERPCA_ROWTYPE_FLOAT8, PERPCA_NULLS_ERROR, false)
ACCUM_FUNCTION(perpca_stats_accum_nulls, PERPCA_ROWTYPE_FLOAT8, perpca_nulls_fcinfo_arg(fcinfo, 2), false)
ACCUM_FUNCTION(perpca_vector_stats_accum, PERPCA_ROWTYPE_VECTOR, PERPCA_NULLS_ERROR, false)
ACCUM_FUNCTION(perpca_vector_stats_accum_nulls, PERPCA_ROWTYPE_VECTOR, perpca_nulls_fcinfo_arg(fcinfo, 2), false)
ACCUM_FUNCTION(perpca_halfvec_stats_accum, PERPCA_ROWTYPE_HALFVEC, PERPCA_NULLS_ERROR, false)
ACCUM_FUNCTION(perpca_halfvec_stats_accum_nulls, PERPCA_ROWTYPE_HALFVEC, perpca_nulls_fcinfo_arg(fcinfo, 2), false)
ACCUM_FUNCTION(perpca_sketch_accum, PERPCA_ROWTYPE_FLOAT8, PERPCA_NULLS_ERROR, true)
ACCUM_FUNCTION(perpca_sketch_accum_nulls, PERPCA_ROWTYPE_FLOAT8, perpca_nulls_fcinfo_arg(fcinfo, 3), true)
ACCUM_FUNCTION(perpca_vector_sketch_accum, PERPCA_ROWTYPE_VECTOR, PERPCA_NULLS_ERROR, true)
ACCUM_FUNCTION(perpca_vector_sketch_accum_nulls, PERPCA_ROWTYPE_VECTOR, perpca_nulls_fcinfo_arg(fcinfo, 3), true)
ACCUM_FUNCTION(perpca_halfvec_sketch_accum, PERPCA_ROWTYPE_HALFVEC, PERPCA_NULLS_ERROR, true)
ACCUM_FUNCTION(perpca_halfvec_sketch_accum_nulls, PERPCA_ROWTYPE_HALFVEC, perpca_nulls_fcinfo_arg(fcinfo, 3), true)
