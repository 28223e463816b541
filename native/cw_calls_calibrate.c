/*
 * cw_calls_calibrate.c: what the call interposer costs per call, measured where it runs.
 *
 *   cw_calls_calibrate CALLS
 *
 * Calls close(-1) CALLS times in each of 7 batches and prints the fastest batch's nanoseconds
 * per call. close(-1) fails at once in the kernel (EBADF), so the figure is the call's own floor.
 * The calls probe runs this twice, with libcwcalls.so preloaded and timing `close`, and with
 * nothing preloaded; the difference is the probe's overhead per timed call (a tool that
 * measures must measure itself). Exit status 2 on bad usage.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int64_t cw_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int main(int argc, char **argv) {
    long calls = argc == 2 ? strtol(argv[1], NULL, 10) : 0;
    if (calls <= 0) {
        fprintf(stderr, "usage: cw_calls_calibrate CALLS\n");
        return 2;
    }
    int64_t best = INT64_MAX;
    for (int batch = 0; batch < 7; batch++) {
        int64_t start = cw_now_ns();
        for (long i = 0; i < calls; i++) close(-1);
        int64_t elapsed = cw_now_ns() - start;
        if (elapsed < best) best = elapsed;
    }
    printf("%.3f\n", (double)best / (double)calls);
    return 0;
}
