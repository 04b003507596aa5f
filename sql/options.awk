# sql/options.awk -- the fit options' arguments of the SQL functions, written
# from the one option list (FIT_OPTION_LIST in src/fit_types.h).  The
# Makefile runs it as
#   awk -f sql/options.awk src/fit_types.h pass=collect PARTS \
#       pass=released sql/released/perpca--0.4.0.sql pass=emit FILES
# and it prints FILES with these marks replaced:
#   @OPTIONS: a b@       "a TYPE DEFAULT NULL, b TYPE DEFAULT NULL" (TYPE from
#                        the option's kind), arguments in the order written
#                        (a released signature's order: positional calls)
#   @OPTIONS(fn): a b@   the same, then every other option whose row names
#                        SQL_FN (fn: fit, train, federated, ranks), in the
#                        table's order: a new option is one row there
#   @ARGTYPES(fn)@       the argument types of the function tagged fn (for
#                        COMMENT ON, REVOKE, GRANT)
#   @DROP_IF_CHANGED(fn)@  DROP FUNCTION of that function as released when
#                        its arguments (names, types, defaults) differ now
#                        (an upgrade's prologue; CREATE OR REPLACE cannot)
# PARTS (the install parts) are read first to learn each tagged function.

function sqltype(kind)
{
	if (kind == "OPT_INT" || kind == "OPT_RANK")
		return "int"
	if (kind == "OPT_INT64")
		return "bigint"
	if (kind == "OPT_FLOAT")
		return "float8"
	if (kind == "OPT_BOOL")
		return "boolean"
	return "text"
}

function squeeze(s)
{
	gsub(/[ \t\n]+/, " ", s)
	sub(/^ /, "", s)
	sub(/ $/, "", s)
	return s
}

# "a TYPE DEFAULT NULL, ..." for the names in list; tag: then the rest for fn.
function options(list, tag,    n, names, i, out, sep)
{
	n = split(list, names, " ")
	out = ""
	sep = ""
	for (i = 1; i <= n; i++)
	{
		if (!(names[i] in kind))
		{
			print "sql/options.awk: " FILENAME ":" FNR ": no option \"" names[i] "\" in src/fit_types.h" > "/dev/stderr"
			failed = 1
			exit 1
		}
		named[names[i]] = 1
		out = out sep names[i] " " sqltype(kind[names[i]]) " DEFAULT NULL"
		sep = ",\n    "
	}
	if (tag == "")
		return out
	tagged = tag
	for (i = 1; i <= nopts; i++)
		if (!(order[i] in named) && (mask[order[i]] ~ ("SQL_" toupper(tag) "([^A-Z_]|$)") || mask[order[i]] ~ /SQL_ALL/))
		{
			out = out sep order[i] " " sqltype(kind[order[i]]) " DEFAULT NULL"
			sep = ",\n    "
		}
	return out
}

# Replace the marks of one line.
function expand(line,    m, head, tag, body, out)
{
	out = ""
	while (match(line, /@[A-Z_]+(\([a-z_]+\))?(:[^@]*)?@/))
	{
		m = substr(line, RSTART + 1, RLENGTH - 2)
		out = out substr(line, 1, RSTART - 1)
		line = substr(line, RSTART + RLENGTH)
		head = m
		body = ""
		if (index(m, ":"))
		{
			head = substr(m, 1, index(m, ":") - 1)
			body = substr(m, index(m, ":") + 1)
		}
		tag = ""
		if (index(head, "("))
		{
			tag = substr(head, index(head, "(") + 1)
			sub(/\)$/, "", tag)
			head = substr(head, 1, index(head, "(") - 1)
		}
		if (head == "OPTIONS")
			out = out options(body, tag)
		else if (head == "ARGTYPES")
			out = out types[tag]
		else if (head == "DROP_IF_CHANGED")
			out = out drop_if_changed(tag)
		else
			out = out "@" m "@"
	}
	return out line
}

function drop_if_changed(tag)
{
	if (!(fname[tag] in oldargs) || oldargs[fname[tag]] == args[tag])
		return "-- " fname[tag] ": arguments as released"
	return "DROP FUNCTION " fname[tag] "(" oldtypes[fname[tag]] ");"
}

# A CREATE FUNCTION statement, line by line: its name, arguments and types.
function take(line,    i, c, head)
{
	if (!open)
		return
	for (i = 1; i <= length(line); i++)
	{
		c = substr(line, i, 1)
		if (c == "(")
			depth++
		if (c == ")" && --depth == 0)
		{
			stmt = stmt substr(line, 1, i)
			open = 0
			finish()
			return
		}
	}
	stmt = stmt line "\n"
}

function finish(    head, name, list, n, parts, i, w, typelist)
{
	head = substr(stmt, 1, index(stmt, "(") - 1)
	n = split(head, w, " ")
	name = w[n]
	list = squeeze(substr(stmt, index(stmt, "(") + 1))
	sub(/\)$/, "", list)
	n = split(list, parts, ",")
	typelist = ""
	for (i = 1; i <= n; i++)
	{
		split(squeeze(parts[i]), w, " ")
		typelist = typelist (i > 1 ? ", " : "") w[2]
	}
	if (pass == "released")
	{
		oldargs[name] = squeeze(list)
		oldtypes[name] = typelist
	}
	else if (tagged != "")
	{
		fname[tagged] = name
		args[tagged] = squeeze(list)
		types[tagged] = typelist
	}
}

# A mark may run over several lines: they are read as one.
pass != "" {
	if (held != "")
	{
		$0 = held " " squeeze($0)
		held = ""
	}
	if (split($0, at, "@") % 2 == 0 && $0 != "")
	{
		held = $0
		next
	}
}

# The option list: rows X(name, type, OPT_KIND, ..., SQL_...).
pass == "" && /^\tX\([a-z_0-9]+, [^,]+, OPT_[A-Z0-9]+,/ {
	name = $0
	sub(/^\tX\(/, "", name)
	sub(/,.*/, "", name)
	k = $0
	sub(/^[^,]*, [^,]*, /, "", k)
	sub(/,.*/, "", k)
	kind[name] = k
	m = $0
	mask[name] = (match(m, /SQL_[A-Z_| ]*[A-Z]/) ? substr(m, RSTART, RLENGTH) : "")
	order[++nopts] = name
	next
}
pass == "" { next }

/^CREATE (OR REPLACE )?FUNCTION / {
	stmt = ""
	depth = 0
	open = 1
	tagged = ""
	delete named
}
pass == "collect" { take(expand($0)); next }
pass == "released" { take($0); next }
pass == "emit" { line = expand($0); take(line); print line }

END {
	if (!failed && nopts == 0)
	{
		print "sql/options.awk: no option rows found in src/fit_types.h" > "/dev/stderr"
		exit 1
	}
}
