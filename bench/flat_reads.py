#!/usr/bin/env python3
"""bench/flat_reads.py -- how often a fit reads each dense S_i, and with how many columns

For a server whose perpca was built with the read trace
(make COPT=-DPERPCA_TRACE_READS; src/client_math.c logs every full read of
a dense S_i at LOG, src/solver_lbfgs.c every round), run one fit (say
bench/flat_bench.sh's) and pass the server log:

    python3 bench/flat_reads.py server.log [clients]

Prints the reads before the first round (setup: each client's spectrum),
the reads in and after the rounds by site and width, per round and per
client-round (clients: 3, flat_bench.sh's), and how many rounds took how
many reads.  Counting is noise-free where timing on a shared machine is not.
"""
import collections
import re
import sys

rounds = 0
setup = collections.Counter()
inround = collections.Counter()
per_round = []
for line in open(sys.argv[1]):
    if re.search(r'perpca round \d+', line):
        rounds += 1
        per_round.append(0)
        continue
    m = re.search(r'perpca S_i read: client (\d+) columns (\d+) site (\S+)', line)
    if not m:
        continue
    key = (m.group(3), int(m.group(2)))
    if rounds == 0:
        setup[key] += 1
    else:
        inround[key] += 1
        per_round[-1] += 1
clients = int(sys.argv[2]) if len(sys.argv) > 2 else 3
print("setup reads (before the first round): %d" % sum(setup.values()))
for (site, cols), n in sorted(setup.items()):
    print("  %-16s %3d columns: %d" % (site, cols, n))
total = sum(inround.values())
print("rounds: %d; reads in and after them: %d (%.2f a round, %.2f a client-round)"
      % (rounds, total, total / max(rounds, 1), total / max(rounds, 1) / clients))
for (site, cols), n in sorted(inround.items()):
    print("  %-16s %3d columns: %d" % (site, cols, n))
print("rounds by reads (reads: rounds):",
      ", ".join("%d: %d" % kv for kv in sorted(collections.Counter(per_round).items())))
