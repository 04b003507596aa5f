-- Shared comparison helpers (\i test/include/compare.sql once the test's own
-- schema is first in search_path: they are created there, dropped with it).

-- True when a and b have the same shape and max|a - b| <= tol * greatest(max|b|, floor_b):
-- floor_b = 1 (default) is relative for large entries, absolute near zero;
-- floor_b = 1e-300 is norm-wise relative, so entries near zero need no special care.
CREATE FUNCTION arrays_close(a float8[], b float8[], tol float8, floor_b float8 DEFAULT 1) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT array_dims(a) = array_dims(b)
       AND (SELECT max(abs(u.x - u.y)) <= tol * greatest(max(abs(u.y)), floor_b)
              FROM unnest(a, b) AS u(x, y))
$$;

-- Same row count, same dimension, mean, covariance and raw second moment within tol (norm-wise relative).
CREATE FUNCTION stats_close(a perpca_stats, b perpca_stats, tol float8) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT perpca_count(a) = perpca_count(b)
       AND perpca_dim(a) = perpca_dim(b)
       AND arrays_close(perpca_mean(a), perpca_mean(b), tol, 1e-300)
       AND arrays_close(perpca_covariance(a), perpca_covariance(b), tol, 1e-300)
       AND arrays_close(perpca_covariance(a, false), perpca_covariance(b, false), tol, 1e-300)
$$;

-- ||P_A - P_B||_F^2 for two sets of orthonormal rows (k x d arrays): k_A + k_B - 2 ||A B^T||_F^2.
CREATE FUNCTION projector_distance(a float8[], b float8[]) RETURNS float8
LANGUAGE sql IMMUTABLE AS $$
    SELECT array_length(a, 1) + array_length(b, 1) - 2 * sum(s * s)
      FROM generate_subscripts(b, 1) AS i,
           LATERAL unnest(perpca_scores(ARRAY(SELECT b[i][j] FROM generate_subscripts(b, 2) AS j), a)) AS s
$$;

-- a with its largest-|entry| (first on ties) positive, as the fixtures sign loadings
CREATE FUNCTION signed(a float8[]) RETURNS float8[]
LANGUAGE sql IMMUTABLE AS $$
    SELECT array_agg(v * s ORDER BY i)
      FROM unnest(a) WITH ORDINALITY AS u(v, i),
           (SELECT sign(v) AS s FROM unnest(a) WITH ORDINALITY AS w(v, j) ORDER BY abs(v) DESC, j LIMIT 1) AS m
$$;
