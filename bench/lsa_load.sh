# bench/lsa_load.sh -- sourced by pgvector_recall.sh and sketch_accuracy.sh: the Debian LSA
# corpus (bench/debian_lsa.py) in directory $1 into lsa_docs (id, tenant, package,
# half, v vector(d)) and its exact statistics into lsa_stats (tenant, stats), unless
# they are there with the corpus's documents; makes the corpus when missing.
# Sets LSA_D (the dimension) and prints a line about the corpus.
lsa_load() {
	local corpus=$1 here meta docs
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	[ -f "$corpus/docs.pgcopy" ] || /usr/bin/python3 "$here/debian_lsa.py" "$corpus"
	meta() { /usr/bin/python3 -c "import json,sys; m = json.load(open(sys.argv[1])); print($1)" "$corpus/meta.json"; }
	LSA_D=$(meta "m['dim']")
	docs=$(meta "m['documents']")
	psql -X -q -v ON_ERROR_STOP=1 -c 'SET client_min_messages = warning' -c 'CREATE EXTENSION IF NOT EXISTS perpca_vector CASCADE'
	if [ "$(psql -X -At -c "SELECT count(*) FROM pg_class WHERE relname IN ('lsa_docs', 'lsa_stats') AND relkind = 'r'")" != 2 ] ||
		[ "$(psql -X -At -c "SELECT count(*) FROM lsa_docs")" != "$docs" ]; then
		psql -X -q -v ON_ERROR_STOP=1 -c "SET client_min_messages = warning" -c "DROP TABLE IF EXISTS lsa_docs, lsa_stats" \
			-c "CREATE TABLE lsa_docs (id int PRIMARY KEY, tenant text NOT NULL, package text, half text, v vector($LSA_D) NOT NULL)" \
			-c "\\copy lsa_docs FROM '$corpus/docs.pgcopy' (FORMAT binary)" \
			-c "SET max_parallel_workers_per_gather = 0" -c "SET jit = off" \
			-c "CREATE TABLE lsa_stats AS SELECT tenant, perpca_stats(v) AS stats FROM lsa_docs GROUP BY tenant" \
			-c "ANALYZE lsa_docs, lsa_stats"
	fi
	echo "corpus: $docs documents of Debian's package descriptions (bookworm/main), $(meta "m['tenants']") tenants (sections), d = $LSA_D, $(meta "m['vocabulary']") terms; the SVD keeps $(meta "'%.3f' % m['svd_share']") of the TF-IDF mass"
	echo "statistics: $(psql -X -At -c "SELECT string_agg(f || ' ' || c, ', ') FROM (SELECT perpca_stats_form(stats) f, count(*) c FROM lsa_stats GROUP BY 1) s")"
	echo "server $(psql -X -At -c 'SHOW server_version'), pgvector $(psql -X -At -c "SELECT extversion FROM pg_extension WHERE extname = 'vector'"), perpca $(psql -X -At -c "SELECT extversion FROM pg_extension WHERE extname = 'perpca'"), $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
}
