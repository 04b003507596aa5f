-- Helpers of the row-wise model tests (model, scale): \i after compare.sql,
-- with the test's own schema first in search_path.
CREATE FUNCTION close(a float8, b float8, tol float8) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$ SELECT abs(a - b) <= tol * greatest(abs(b), 1) $$;
CREATE FUNCTION add(a float8[], b float8[]) RETURNS float8[]
LANGUAGE sql IMMUTABLE AS $$ SELECT array_agg(x + y) FROM unnest(a, b) AS u(x, y) $$;
CREATE FUNCTION absolute(a float8[]) RETURNS float8[]
LANGUAGE sql IMMUTABLE AS $$ SELECT array_agg(abs(x)) FROM unnest(a) AS u(x) $$;
