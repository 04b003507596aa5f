# limits_panel.R -- the real panel of bench/limits_bench.sh: the
# Summers-Heston data of Debian's r-cran-plm (plm::SumHes: 125 countries,
# 1960-1985), one row per country and year from 1961 on:
#   x = (log GDP per head, its growth, population growth, savings rate),
# growth as the difference of logs from the year before.
# Usage: Rscript bench/limits_panel.R OUT.csv   (writes country,year,x)
args <- commandArgs(trailingOnly = TRUE)
data(SumHes, package = "plm")
d <- SumHes[order(SumHes$country, SumHes$year), ]
out <- NULL
for (cty in unique(as.character(d$country))) {
	s <- d[d$country == cty, ]
	n <- nrow(s)
	lg <- log(s$gdp)
	lp <- log(s$pop)
	x <- sprintf("{%.9g,%.9g,%.9g,%.9g}", lg[-1], diff(lg), diff(lp), s$sr[-1])
	out <- rbind(out, data.frame(country = cty, year = s$year[-1], x = x))
}
write.csv(out, args[1], row.names = FALSE)
