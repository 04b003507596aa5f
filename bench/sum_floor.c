/*
 * sum_floor.c -- the "reads every value" floor of bench/stats_bench.sh
 *
 * A trivial aggregate, built only for the benchmark: the sum of all
 * elements of float8[] rows.  Like perpca_stats it detoasts every row and
 * reads each of its d values once; unlike it, it keeps nothing per row.
 * bench/stats_bench.sh compiles it against the server's headers, loads it
 * with CREATE FUNCTION ... LANGUAGE C (superuser) and drops it afterwards.
 *
 *   cc -O2 -fPIC -shared -I$(pg_config --includedir-server) -o sum_floor.so sum_floor.c
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(sum_floor_accum);

/* sum_floor_accum(float8 state, float8[] row): state + the sum of the row's elements. */
Datum
sum_floor_accum(PG_FUNCTION_ARGS)
{
	double		acc = PG_GETARG_FLOAT8(0);
	ArrayType  *a = PG_GETARG_ARRAYTYPE_P(1);
	const double *x = (const double *) ARR_DATA_PTR(a);
	int			n = ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a));
	double		s[4] = {0.0, 0.0, 0.0, 0.0};	/* four chains: not bound by add latency */
	int			i;

	if (ARR_HASNULL(a) || ARR_ELEMTYPE(a) != FLOAT8OID)
		elog(ERROR, "sum_floor: float8[] without NULLs expected");
	for (i = 0; i + 4 <= n; i += 4)
		for (int k = 0; k < 4; k++)
			s[k] += x[i + k];
	for (; i < n; i++)
		s[0] += x[i];
	PG_RETURN_FLOAT8(acc + (s[0] + s[1]) + (s[2] + s[3]));
}
