/* cuts SCALE P1 ... P8: eight named functions of equal work, each made slower on request.
 *
 * Function i runs SCALE * Pi / 1000 steps of a 64-bit linear congruential generator (Knuth's
 * MMIX multiplier; a different increment per function, so the compiler cannot fold them into
 * one). Pi is in per mille: 1000 is the common work, 1010 is 1 % more, 1100 is 10 % more. Every
 * step depends on the previous one and the states go to a volatile sink, so no loop is shortened
 * or dropped. Nothing is printed (printing a different number executes a different number of
 * instructions), and arguments of equal length keep the instructions outside the functions
 * equal: the two commands differ only in the functions made slower.
 *
 * Build: gcc -O2 -fno-omit-frame-pointer -o cuts cuts.c
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static volatile uint64_t sink;

#define CUT(name, increment)                                                                   \
    __attribute__((noinline)) uint64_t name(uint64_t steps) {                                  \
        uint64_t state = 88172645463325252ULL;                                                 \
        for (uint64_t i = 0; i < steps; i++)                                                   \
            state = state * 6364136223846793005ULL + (increment);                              \
        return state;                                                                          \
    }

CUT(cut_alpha, 1ULL)
CUT(cut_bravo, 3ULL)
CUT(cut_charlie, 5ULL)
CUT(cut_delta, 7ULL)
CUT(cut_echo, 9ULL)
CUT(cut_foxtrot, 11ULL)
CUT(cut_golf, 13ULL)
CUT(cut_hotel, 15ULL)

int main(int argc, char **argv) {
    uint64_t (*cuts[8])(uint64_t) = {cut_alpha, cut_bravo, cut_charlie, cut_delta,
                                      cut_echo,  cut_foxtrot, cut_golf, cut_hotel};
    if (argc != 10) {
        fprintf(stderr, "usage: %s SCALE P1 ... P8 (per mille)\n", argv[0]);
        return 2;
    }
    uint64_t scale = strtoull(argv[1], NULL, 10), sum = 0;
    for (int i = 0; i < 8; i++)
        sum ^= cuts[i](scale * strtoull(argv[i + 2], NULL, 10) / 1000);
    sink = sum;
    return 0;
}
