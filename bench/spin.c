/* spin N: a CPU-bound workload whose work is exactly proportional to N.
 *
 * Each iteration advances a 64-bit linear congruential generator (Knuth's MMIX constants).
 * Every step depends on the previous one, so the loop cannot be vectorised or shortened,
 * and the final state is printed, so the compiler cannot drop the loop either. The work does
 * not touch memory beyond a register, so its cost is stable and proportional to N; running
 * `spin N` and `spin 1.01*N` gives two commands that differ by exactly 1 % of CPU work.
 *
 * Build: gcc -O2 -o spin spin.c
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s ITERATIONS\n", argv[0]);
        return 2;
    }
    char *end = NULL;
    errno = 0;
    unsigned long long iterations = strtoull(argv[1], &end, 10);
    if (errno != 0 || end == argv[1] || *end != '\0') {
        fprintf(stderr, "spin: not a number of iterations: %s\n", argv[1]);
        return 2;
    }
    uint64_t state = 88172645463325252ULL;
    for (unsigned long long i = 0; i < iterations; i++) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    }
    printf("%" PRIu64 "\n", state);
    return 0;
}
