#!/usr/bin/python3
"""planted_vectors.py -- synthetic tenants of vector(d) rows, as COPY (FORMAT binary) on stdout

  /usr/bin/python3 bench/planted_vectors.py TENANTS ROWS D [FIRST] | psql -c "COPY t (tenant, v) FROM STDIN (FORMAT binary)"

Planted structure plus noise (not real data): 5 directions shared by all
tenants (standard deviations 4, 3.5, 3, 2.5, 2), 5 directions of each
tenant's own (3, 2.5, 2, 1.5, 1), a per-tenant offset of the mean, and
independent noise of standard deviation 0.05 in every coordinate.  Rows are
float4 (pgvector's vector), tenant ids FIRST .. FIRST + TENANTS - 1 (default
FIRST 0); each tenant's rows come from its own seeded generator, so a tenant
is the same whatever TENANTS is.
"""
import sys

import numpy as np

tenants, rows, d = (int(a) for a in sys.argv[1:4])
first = int(sys.argv[4]) if len(sys.argv) > 4 else 0
shared = np.linalg.qr(np.random.default_rng(1).standard_normal((d, 5)))[0] * [4, 3.5, 3, 2.5, 2]
row = np.dtype([("nf", ">i2"), ("l1", ">i4"), ("t", ">i4"), ("l2", ">i4"),
                ("dim", ">i2"), ("unused", ">i2"), ("v", ">f4", (d,))])
out = sys.stdout.buffer
out.write(b"PGCOPY\n\xff\r\n\0" + np.array([0, 0], ">i4").tobytes())
for t in range(first, first + tenants):
    g = np.random.default_rng(1000 + t)
    own = np.linalg.qr(g.standard_normal((d, 5)))[0] * [3, 2.5, 2, 1.5, 1]
    x = (g.standard_normal((rows, 5)) @ shared.T + g.standard_normal((rows, 5)) @ own.T
         + 0.05 * g.standard_normal((rows, d)) + 0.2 * g.standard_normal(d))
    block = np.zeros(rows, row)
    block["nf"], block["l1"], block["t"], block["l2"] = 2, 4, t, 4 + 4 * d
    block["dim"], block["v"] = d, x
    out.write(block.tobytes())
out.write(np.array([-1], ">i2").tobytes())
