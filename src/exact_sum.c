/*
 * exact_sum.c -- order-independent sums: a long accumulator per entry (see
 * exact_sum.h)
 *
 * A finite double is m 2^(p - 1074) with m < 2^53 an integer and 0 <= p <=
 * 2045.  The accumulator keeps, per entry, EXACT_CHUNKS signed 64-bit
 * digits of 32 bits each, digit j worth 2^(32 j - 1074): adding x adds the
 * three 32-bit pieces of m 2^(p mod 32) into digits p / 32 .. p / 32 + 2,
 * so a digit absorbs 2^31 terms before it could overflow and no carry is
 * needed while adding (the idea of Neal's "small superaccumulator", 2015).
 * Reading carries the digits into canonical form (0 <= digit < 2^32,
 * the sign in the top digit) and rounds to nearest, ties to even.  The sum
 * is exact, so the order and grouping of the terms cannot change it.
 */
#include "postgres.h"

#include <math.h>

#include "exact_sum.h"

#define DIGIT 4294967296.0		/* 2^32 */

/* c += sign * |x| for finite nonzero x, in digits. */
static inline void
add_digits(int64 *c, double x, bool negate)
{
	uint64		bits;
	int			e,
				p;
	uint64		m;
	unsigned __int128 v;
	int64		d0,
				d1,
				d2;

	memcpy(&bits, &x, sizeof(bits));
	e = (int) ((bits >> 52) & 0x7FF);
	m = bits & ((UINT64CONST(1) << 52) - 1);
	if (e != 0)
		m |= UINT64CONST(1) << 52;
	else
		e = 1;
	p = e - 1;
	v = (unsigned __int128) m << (p & 31);
	d0 = (int64) ((uint64) v & 0xFFFFFFFF);
	d1 = (int64) ((uint64) (v >> 32) & 0xFFFFFFFF);
	d2 = (int64) (uint64) (v >> 64);
	if ((bits >> 63) != (uint64) negate)
	{
		d0 = -d0;
		d1 = -d1;
		d2 = -d2;
	}
	c += p >> 5;
	c[0] += d0;
	c[1] += d1;
	c[2] += d2;
}

/* Carry the digits: each in [0, 2^32) but the top one, which keeps the sign. */
static void
carry(int64 *c)
{
	int64		k = 0;

	for (int j = 0; j < EXACT_CHUNKS - 1; j++)
	{
		int64		v = c[j] + k;

		k = v >> 32;			/* arithmetic shift: floor */
		c[j] = v - k * (int64) DIGIT;
	}
	c[EXACT_CHUNKS - 1] += k;
}

/* Canonical magnitude in c; returns whether the value is negative. */
static bool
canonical(int64 *c)
{
	carry(c);
	if (c[EXACT_CHUNKS - 1] >= 0)
		return false;
	for (int j = 0; j < EXACT_CHUNKS; j++)
		c[j] = -c[j];
	carry(c);
	return true;
}

/* The canonical magnitude c rounded to nearest (ties to even), with its sign. */
static double
round_digits(const int64 *c, bool negative)
{
	int			top = EXACT_CHUNKS - 1,
				length,
				shift = 0;
	unsigned __int128 hi;
	bool		sticky = false;
	uint64		mant;
	double		r;

	while (top >= 0 && c[top] == 0)
		top--;
	if (top < 0)
		return 0.0;
	hi = (unsigned __int128) (uint64) c[top] << 64;
	if (top >= 1)
		hi |= (unsigned __int128) (uint64) c[top - 1] << 32;
	if (top >= 2)
		hi |= (uint64) c[top - 2];
	for (int j = 0; j < top - 2 && !sticky; j++)
		sticky = c[j] != 0;
	length = (hi >> 64) != 0 ? 128 - __builtin_clzll((uint64) (hi >> 64))
		: 64 - __builtin_clzll((uint64) hi);
	if (length > 53)
	{
		unsigned __int128 rem,
					half;

		shift = length - 53;
		rem = hi & (((unsigned __int128) 1 << shift) - 1);
		half = (unsigned __int128) 1 << (shift - 1);
		hi >>= shift;
		if (rem > half || (rem == half && (sticky || (hi & 1))))
			hi++;
	}
	mant = (uint64) hi;
	r = ldexp((double) mant, 32 * (top - 2) - 1074 + shift);
	return negative ? -r : r;
}

ExactSum *
exact_sum_create(int64 n)
{
	ExactSum   *s = palloc0(sizeof(ExactSum));

	s->n = n;
	s->chunk = MemoryContextAllocHuge(CurrentMemoryContext,
									  sizeof(int64) * EXACT_CHUNKS * Max(n, 1));
	s->special = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * Max(n, 1));
	exact_sum_zero(s);
	return s;
}

void
exact_sum_zero(ExactSum *s)
{
	memset(s->chunk, 0, sizeof(int64) * EXACT_CHUNKS * Max(s->n, 1));
	memset(s->special, 0, sizeof(double) * Max(s->n, 1));
	s->any_special = false;
}

void
exact_sum_free(ExactSum *s)
{
	pfree(s->chunk);
	pfree(s->special);
	pfree(s);
}

void
exact_sum_add(ExactSum *s, int64 i, double x)
{
	Assert(i >= 0 && i < s->n);
	if (x == 0.0)
		return;
	if (!isfinite(x))
	{
		/* Inf + Inf, Inf - Inf = NaN, NaN + anything: the same in any order */
		s->special[i] += x;
		s->any_special = true;
		return;
	}
	add_digits(s->chunk + i * EXACT_CHUNKS, x, false);
}

void
exact_sum_add_scaled(ExactSum *s, int64 from, int64 n, double scale, const double *x)
{
	for (int64 j = 0; j < n; j++)
		exact_sum_add(s, from + j, scale * x[j]);
}

double
exact_sum_value(ExactSum *s, int64 i)
{
	int64		c[EXACT_CHUNKS];
	bool		negative;

	if (s->any_special && s->special[i] != 0.0)
		return s->special[i];
	if (s->any_special && isnan(s->special[i]))
		return s->special[i];
	memcpy(c, s->chunk + i * EXACT_CHUNKS, sizeof(c));
	negative = canonical(c);
	return round_digits(c, negative);
}

void
exact_sum_values(ExactSum *s, int64 from, int64 n, double *out)
{
	for (int64 j = 0; j < n; j++)
		out[j] = exact_sum_value(s, from + j);
}

/* The terms of entry i's expansion into out[k * stride], largest first; returns their number. */
static int
expand_entry(ExactSum *s, int64 i, double *out, int64 stride, int max_layers)
{
	int64		c[EXACT_CHUNKS];
	bool		negative;
	int			k = 0;

	if (s->any_special && (s->special[i] != 0.0 || isnan(s->special[i])))
	{
		out[0] = s->special[i];
		return 1;
	}
	memcpy(c, s->chunk + i * EXACT_CHUNKS, sizeof(c));
	negative = canonical(c);
	while (k < max_layers)
	{
		double		t = round_digits(c, false);

		if (t == 0.0)
			break;
		out[k++ * stride] = negative ? -t : t;
		/* what is left: |sum| - t, which may change sign */
		add_digits(c, t, true);
		if (canonical(c))
			negative = !negative;
	}
	if (k == max_layers && round_digits(c, false) != 0.0)
		elog(ERROR, "exact sum needs more than %d terms", max_layers);
	return k;
}

int
exact_sum_expansion(ExactSum *s, int64 from, int64 n, double *out, int max_layers)
{
	int			layers = 1;

	memset(out, 0, sizeof(double) * n * max_layers);
	for (int64 j = 0; j < n; j++)
		layers = Max(layers, expand_entry(s, from + j, out + j, n, max_layers));
	return layers;
}

void
exact_sum_add_expansion(ExactSum *s, int64 from, int64 n, const double *terms, int layers)
{
	for (int k = 0; k < layers; k++)
		for (int64 j = 0; j < n; j++)
			exact_sum_add(s, from + j, terms[k * n + j]);
}
