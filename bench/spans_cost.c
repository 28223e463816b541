/*
 * spans_cost.c: what one span costs in C, for bench/spans_cost.py. Usage:
 *   spans_cost MODE N
 * runs N iterations in each of 7 batches and prints the fastest batch's nanoseconds per
 * iteration. Every iteration ends with a compiler barrier (as any real work between spans
 * would be), so the loop and the load of cw_span_hook cannot be hoisted or removed. Modes:
 *   plain     the loop alone
 *   span      cw_span_begin("bench") + cw_span_end("bench") (off or on: the environment says)
 *   clock     what seed 001's author did by hand: two clock_gettime(CLOCK_MONOTONIC) around
 *             the work and the difference stored into a ring of 4096 slots
 *   function  a call of bench_function(), an empty non-inlined function: with -pg, what
 *             uftrace traces (the driver builds this mode twice, with and without -pg)
 */
#define CUTAWAY_SPAN_IMPLEMENTATION
#include "cutaway/span.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BARRIER() __asm__ volatile("" ::: "memory")

static long long cw_ring[4096];

__attribute__((noinline)) void bench_function(void) { BARRIER(); }

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void run(const char *mode, long n) {
    if (strcmp(mode, "plain") == 0) {
        for (long i = 0; i < n; i++) BARRIER();
    } else if (strcmp(mode, "span") == 0) {
        for (long i = 0; i < n; i++) {
            cw_span_begin("bench");
            BARRIER();
            cw_span_end("bench");
        }
    } else if (strcmp(mode, "clock") == 0) {
        for (long i = 0; i < n; i++) {
            long long start = now_ns();
            BARRIER();
            cw_ring[i & 4095] = now_ns() - start;
        }
    } else {
        for (long i = 0; i < n; i++) bench_function();
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s plain|span|clock|function N\n", argv[0]);
        return 2;
    }
    long n = atol(argv[2]);
    double best = 0;
    for (int batch = 0; batch < 7; batch++) {
        long long start = now_ns();
        run(argv[1], n);
        double per = (double)(now_ns() - start) / (double)n;
        if (batch == 0 || per < best) best = per;
    }
    printf("%.3f\n", best);
    return 0;
}
