/*
 * quantiles.c -- upper quantiles of the F and normal distributions, for the
 * control limits of perpca_model_monitor (monitor.c)
 *
 * No BLAS/LAPACK routine computes these, and the libraries that do (GSL,
 * Rmath) are GPL, so they are computed here from libm:
 *
 *   regularized incomplete beta I_x(a, b): the continued fraction of DLMF
 *   8.17.22, evaluated by the modified Lentz method (Lentz 1976; Thompson
 *   and Barnett 1986), on the side x < (a + 1) / (a + b + 2) where it
 *   converges fast, with I_x(a, b) = 1 - I_{1-x}(b, a) on the other;
 *
 *   its inverse: safeguarded Newton steps on the bracket [0, 1] (a step
 *   that leaves the bracket is replaced by bisection), with the density
 *   x^(a-1) (1-x)^(b-1) / B(a, b) as derivative.  The upper tail is solved
 *   directly (I_y(b, a) = alpha for y = 1 - x), so small alpha keeps its
 *   relative precision;
 *
 *   F upper quantile: if X ~ F(d1, d2) then d2 / (d2 + d1 X) ~ Beta(d2/2,
 *   d1/2) (DLMF 8.17 and the F distribution's definition), so
 *   F_{1-alpha}(d1, d2) = d2 (1 - y) / (d1 y) with I_y(d2/2, d1/2) = alpha;
 *
 *   normal upper quantile: safeguarded Newton on 0.5 erfc(z / sqrt 2) = alpha.
 *
 * The tests compare these with scipy.stats (test/fixtures/gen_monitor.py).
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"

#include "error_kinds.h"
#include "quantiles.h"

PG_FUNCTION_INFO_V1(perpca_f_upper_quantile);

#define MAX_ITER 300
#define EPS 1e-15
#define TINY 1e-300

/* One modified-Lentz step with partial numerator coef: updates c and d, returns the factor of h. */
static double
lentz_step(double coef, double *c, double *d)
{
	*d = 1.0 + coef * *d;
	*c = 1.0 + coef / *c;
	*d = fabs(*d) < TINY ? 1.0 / TINY : 1.0 / *d;
	if (fabs(*c) < TINY)
		*c = TINY;
	return *d * *c;
}

/* The continued fraction of I_x(a, b) (DLMF 8.17.22), by the modified Lentz method. */
static double
beta_fraction(double a, double b, double x)
{
	double		c = 1.0,
				d = 1.0 - (a + b) * x / (a + 1.0),
				h;

	if (fabs(d) < TINY)
		d = TINY;
	d = 1.0 / d;
	h = d;
	for (int m = 1; m <= MAX_ITER; m++)
	{
		int			m2 = 2 * m;
		double		last;

		/* even step d_{2m}, then odd step d_{2m+1} */
		h *= lentz_step(m * (b - m) * x / ((a + m2 - 1.0) * (a + m2)), &c, &d);
		last = lentz_step(-(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0)), &c, &d);
		h *= last;
		if (fabs(last - 1.0) < EPS)
			break;
	}
	return h;
}

/* log B(a, b) */
static double
log_beta(double a, double b)
{
	return lgamma(a) + lgamma(b) - lgamma(a + b);
}

/* Regularized incomplete beta function I_x(a, b), a, b > 0. */
static double
incbeta(double x, double a, double b)
{
	double		front;

	if (x <= 0.0)
		return 0.0;
	if (x >= 1.0)
		return 1.0;
	front = exp(a * log(x) + b * log1p(-x) - log_beta(a, b));
	if (x < (a + 1.0) / (a + b + 2.0))
		return front * beta_fraction(a, b, x) / a;
	return 1.0 - front * beta_fraction(b, a, 1.0 - x) / b;
}

/* The x in (0, 1) with I_x(a, b) = p: safeguarded Newton on the bracket. */
static double
incbeta_inverse(double p, double a, double b)
{
	double		lo = 0.0,
				hi = 1.0,
				x = a / (a + b),	/* the mean: a start inside the bracket */
				lb = log_beta(a, b);

	for (int it = 0; it < MAX_ITER; it++)
	{
		double		f = incbeta(x, a, b) - p;
		double		dens,
					next;

		if (f == 0.0)
			return x;
		if (f < 0.0)
			lo = x;
		else
			hi = x;
		dens = exp((a - 1.0) * log(x) + (b - 1.0) * log1p(-x) - lb);
		next = dens > 0.0 && isfinite(dens) ? x - f / dens : -1.0;
		if (!(next > lo && next < hi))
			next = 0.5 * (lo + hi);
		if (fabs(next - x) <= EPS * fabs(x) || hi - lo <= EPS * hi)
			return next;
		x = next;
	}
	return x;
}

double
quantile_f_upper(double alpha, double d1, double d2)
{
	double		y;

	if (!(alpha > 0.0 && alpha < 1.0) || !(d1 > 0.0) || !(d2 > 0.0))
		return NAN;
	/* y = d2 / (d2 + d1 X) ~ Beta(d2/2, d1/2); X large <=> y small. */
	y = incbeta_inverse(alpha, d2 / 2.0, d1 / 2.0);
	return d2 * (1.0 - y) / (d1 * y);
}

double
quantile_normal_upper(double alpha)
{
	double		lo = -40.0,
				hi = 40.0,
				z = 0.0;

	if (!(alpha > 0.0 && alpha < 1.0))
		return NAN;
	for (int it = 0; it < MAX_ITER; it++)
	{
		double		f = 0.5 * erfc(z / M_SQRT2) - alpha;	/* decreasing in z */
		double		dens = exp(-0.5 * z * z) / sqrt(2.0 * M_PI);
		double		next;

		if (f == 0.0)
			return z;
		if (f > 0.0)
			lo = z;
		else
			hi = z;
		next = dens > 0.0 ? z + f / dens : 0.5 * (lo + hi);
		if (!(next > lo && next < hi))
			next = 0.5 * (lo + hi);
		if (fabs(next - z) <= EPS * Max(fabs(z), 1.0))
			return next;
		z = next;
	}
	return z;
}

/* perpca_internal.f_upper_quantile(alpha, d1, d2): F_{1-alpha}(d1, d2) (for the tests). */
Datum
perpca_f_upper_quantile(PG_FUNCTION_ARGS)
{
	double		q = quantile_f_upper(PG_GETARG_FLOAT8(0), PG_GETARG_FLOAT8(1), PG_GETARG_FLOAT8(2));

	if (isnan(q))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("alpha must be between 0 and 1 (exclusive) and the degrees of freedom positive")));
	PG_RETURN_FLOAT8(q);
}
