/*
 * first_touch.c -- what a first touch of fresh memory costs on this machine:
 * the wall time per 4 kB page of writing one byte per cache line into MB
 * megabytes fresh from malloc, then the same again (the pages now mapped).
 * vector_bench.sh prints it beside the page faults of its queries.
 *
 *   cc -O2 -o first_touch first_touch.c && ./first_touch [MB]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double
seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int
main(int argc, char **argv)
{
	size_t		n = (size_t) (argc > 1 ? atoi(argv[1]) : 64) << 20;
	volatile char *p = malloc(n);
	double		t0, t1, t2;

	if (p == NULL)
		return 1;
	t0 = seconds();
	for (size_t i = 0; i < n; i += 64)
		p[i] = 1;
	t1 = seconds();
	for (size_t i = 0; i < n; i += 64)
		p[i] = 2;
	t2 = seconds();
	printf("first touch %.2f us per 4 kB page, mapped %.3f us (%zu MB)\n",
		   (t1 - t0) * 1e6 / (n / 4096), (t2 - t1) * 1e6 / (n / 4096), n >> 20);
	return 0;
}
