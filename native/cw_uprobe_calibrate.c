/*
 * cw_uprobe_calibrate.c: what a uprobe costs per hit, measured where it runs, and the marker
 * the uprobes probe uses to know that its tracer has caught up.
 *
 *   cw_uprobe_calibrate CALLS [BATCHES]  calls cw_uprobe_target() CALLS times in each of
 *                                        BATCHES batches (default 3) and prints the fastest
 *                                        batch's nanoseconds per call (CALLS may be 0: a
 *                                        process that only starts, for the cost per process)
 *   cw_uprobe_calibrate --mark N         calls cw_uprobe_mark(N) once
 *
 * The uprobes probe runs the first form with a uprobe and a uretprobe on cw_uprobe_target
 * (recorded exactly as a measured function's are) and without; the difference is its cost per
 * recorded span. Its tracer puts a uprobe on cw_uprobe_mark: seeing mark N in the tracer's
 * output, written after a run ended, says every event of that run has been read. Both
 * functions are exported and never inlined, so that they keep a symbol and a call site.
 * Exit status 2 on bad usage.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

__attribute__((noinline, used, visibility("default"))) void cw_uprobe_target(void) {
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline, used, visibility("default"))) long cw_uprobe_mark(long number) {
    __asm__ volatile("" : "+r"(number)::"memory");
    return number;
}

static int64_t cw_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cw_usage(void) {
    fprintf(stderr, "usage: cw_uprobe_calibrate CALLS [BATCHES] | --mark N\n");
    return 2;
}

int main(int argc, char **argv) {
    char *end = NULL;
    if (argc == 3 && strcmp(argv[1], "--mark") == 0) {
        long number = strtol(argv[2], &end, 10);
        if (*argv[2] == '\0' || *end != '\0') return cw_usage();
        return cw_uprobe_mark(number) == number ? 0 : 1;
    }
    if (argc != 2 && argc != 3) return cw_usage();
    long calls = strtol(argv[1], &end, 10);
    if (*argv[1] == '\0' || *end != '\0' || calls < 0) return cw_usage();
    long batches = 3;
    if (argc == 3) {
        batches = strtol(argv[2], &end, 10);
        if (*argv[2] == '\0' || *end != '\0' || batches < 1) return cw_usage();
    }
    if (calls == 0) return 0;
    int64_t best = INT64_MAX;
    for (long batch = 0; batch < batches; batch++) {
        int64_t start = cw_now_ns();
        for (long i = 0; i < calls; i++) cw_uprobe_target();
        int64_t elapsed = cw_now_ns() - start;
        if (elapsed < best) best = elapsed;
    }
    printf("%.3f\n", (double)best / (double)calls);
    return 0;
}
