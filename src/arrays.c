/*
 * arrays.c -- validating and building float8[] values
 *
 * Every function that takes a float8[] from SQL checks it here once
 * (element type, shape, NULLs, finiteness) and then reads ARR_DATA_PTR.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "error_kinds.h"
#include "perpca.h"

/*
 * Reject arrays whose element type is not float8 (can only happen via casts
 * in C) and, unless nulls, arrays with NULL elements.
 */
static void
check_float8_array(ArrayType *a, bool nulls, const char *what)
{
	if (ARR_ELEMTYPE(a) != FLOAT8OID)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_WRONG_TYPE),
				 errmsg("%s must be a float8[] array", what)));
	if (!nulls && array_contains_nulls(a))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NULL),
				 errmsg("%s must not contain NULL elements", what)));
}

/* Reject NaN and infinite entries. */
static void
check_finite(const double *x, int64 n, const char *what)
{
	for (int64 i = 0; i < n; i++)
		if (!isfinite(x[i]))
			ereport(ERROR,
					(errcode(PERPCA_ERRCODE_BAD_VALUE),
					 errmsg("%s must not contain NaN or infinite values", what)));
}

void
perpca_check_dim_limit(int d)
{
	if (d > PERPCA_MAX_DIM)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_DIM_LIMIT),
				 errmsg("dimension %d exceeds the limit of %d", d, PERPCA_MAX_DIM)));
}

void
perpca_check_dense_dim_limit(int d, const char *what)
{
	if (d > PERPCA_MAX_DENSE_DIM)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_DIM_LIMIT),
				 errmsg("dimension %d exceeds the limit of %d", d, PERPCA_MAX_DENSE_DIM),
				 what ? errdetail("%s forms a d x d matrix.", what) :
				 errdetail("Exact statistics (dense or thin) are limited to %d dimensions.",
						   PERPCA_MAX_DENSE_DIM),
				 what ? 0 : errhint("Sketched statistics, perpca_sketch(x, ell), go up to %d dimensions.",
									PERPCA_MAX_DIM)));
}

void
perpca_dim_mismatch(int expected, int got, const char *what)
{
	ereport(ERROR,
			(errcode(PERPCA_ERRCODE_DIMENSION),
			 errmsg("%s has dimension %d, expected %d", what, got, expected)));
}

double *
perpca_vector_arg(ArrayType *a, int *dim, const char *what)
{
	double	   *x = perpca_vector_shape(a, dim, what);

	check_finite(x, *dim, what);
	return x;
}

double *
perpca_vector_shape(ArrayType *a, int *dim, const char *what)
{
	check_float8_array(a, false, what);
	return perpca_vector_shape_nulls(a, dim, what);
}

double *
perpca_vector_shape_nulls(ArrayType *a, int *dim, const char *what)
{
	int			n;

	check_float8_array(a, true, what);
	if (ARR_NDIM(a) == 0)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_BAD_VALUE),
				 errmsg("%s must not be empty", what)));
	if (ARR_NDIM(a) != 1)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARRAY_SHAPE),
				 errmsg("%s must be a one-dimensional array, not %d-dimensional",
						what, ARR_NDIM(a))));
	n = ARR_DIMS(a)[0];
	perpca_check_dim_limit(n);
	*dim = n;
	return (double *) ARR_DATA_PTR(a);
}

int
perpca_first_null(ArrayType *a)
{
	const bits8 *bitmap = ARR_NULLBITMAP(a);
	int			n = ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a));

	if (bitmap == NULL)
		return -1;
	for (int i = 0; i < n; i++)
		if (!(bitmap[i / 8] & (1 << (i % 8))))
			return i;
	return -1;
}

double *
perpca_matrix_arg(ArrayType *a, int *rows, int *cols, const char *what)
{
	check_float8_array(a, false, what);
	if (ARR_NDIM(a) != 2)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARRAY_SHAPE),
				 errmsg("%s must be a two-dimensional array, not %d-dimensional",
						what, ARR_NDIM(a))));
	*rows = ARR_DIMS(a)[0];
	*cols = ARR_DIMS(a)[1];
	perpca_check_dim_limit(*cols);
	check_finite((double *) ARR_DATA_PTR(a), (int64) (*rows) * (*cols), what);
	return (double *) ARR_DATA_PTR(a);
}

double *
perpca_components_arg(FunctionCallInfo fcinfo, int argno, int d, int *k, const char *what)
{
	ArrayType  *a;
	int			cols;
	double	   *x;

	*k = 0;
	if (PG_ARGISNULL(argno))
		return NULL;
	a = PG_GETARG_ARRAYTYPE_P(argno);
	if (ARR_NDIM(a) == 0)
		return NULL;
	x = perpca_matrix_arg(a, k, &cols, what);
	if (cols != d)
		perpca_dim_mismatch(d, cols, what);
	return x;
}

ArrayType *
perpca_vector_build(const double *x, int n)
{
	if (n == 0)
		return construct_empty_array(FLOAT8OID);
	return perpca_matrix_build(x, -1, n);
}

/* rows < 0 builds a 1-D array of cols elements. */
ArrayType *
perpca_matrix_build(const double *x, int rows, int cols)
{
	int			ndim = rows < 0 ? 1 : 2;
	int			dims[2] = {rows < 0 ? cols : rows, cols};
	int			lbs[2] = {1, 1};
	int64		count = (int64) (rows < 0 ? 1 : rows) * cols;
	Size		nbytes = ARR_OVERHEAD_NONULLS(ndim) + count * sizeof(double);
	ArrayType  *a = (ArrayType *) palloc0(nbytes);

	SET_VARSIZE(a, nbytes);
	a->ndim = ndim;
	a->dataoffset = 0;
	a->elemtype = FLOAT8OID;
	memcpy(ARR_DIMS(a), dims, ndim * sizeof(int));
	memcpy(ARR_LBOUND(a), lbs, ndim * sizeof(int));
	memcpy(ARR_DATA_PTR(a), x, count * sizeof(double));
	return a;
}

/*
 * The value of an integer column (smallint, integer or bigint, or a domain
 * over one) of type; another type is a 42804 error naming the column what.
 */
int64
perpca_integer_value(Datum v, Oid type, const char *what)
{
	switch (getBaseType(type))
	{
		case INT2OID:
			return DatumGetInt16(v);
		case INT4OID:
			return DatumGetInt32(v);
		case INT8OID:
			return DatumGetInt64(v);
		default:
			ereport(ERROR,
					(errcode(PERPCA_ERRCODE_WRONG_TYPE),
					 errmsg("%s must be an integer", what),
					 errdetail("It is of type %s.", format_type_be(type)),
					 errhint("Return each client's number of local components as smallint, integer or bigint, or leave the column out.")));
	}
	return 0;					/* keep the compiler quiet */
}
