/*
 * cw_hdr_vectors.c: test vectors of cw_hdr.h, the load generator's HdrHistogram, for the
 * Python twin (src/cutaway/probes/load/hdr.py) to match.
 *
 * Usage: cw_hdr_vectors
 * Reads lines "NAME v1 v2 ..." (values in nanoseconds; negative and over-an-hour values are
 * clamped, as cw_load's recording clamps them) from standard input and writes, for each, one
 * line "NAME count min max mean stdev p0 p50 p90 p99 p99.9 p100 ENCODING" on standard output:
 * exactly what hdr.Histogram must answer for the same values.
 * tests/integration/test_load_generator_sanitized.py builds it under AddressSanitizer and
 * UndefinedBehaviorSanitizer and compares.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cw_hdr.h"

int main(void) {
    static cw_hdr histogram;
    static char line[1 << 20];
    static const double percentiles[] = {0, 50, 90, 99, 99.9, 100};
    while (fgets(line, sizeof line, stdin)) {
        cw_hdr_reset(&histogram);
        char *save = NULL;
        char *name = strtok_r(line, " \n", &save);
        if (!name) continue;
        for (char *token; (token = strtok_r(NULL, " \n", &save));)
            cw_hdr_record(&histogram, strtoll(token, NULL, 10));
        double mean, stdev;
        cw_hdr_moments(&histogram, &mean, &stdev);
        printf("%s %" PRId64 " %" PRId64 " %" PRId64 " %.17g %.17g", name, histogram.total,
               cw_hdr_min(&histogram), cw_hdr_max(&histogram), mean, stdev);
        for (size_t i = 0; i < sizeof percentiles / sizeof *percentiles; i++)
            printf(" %" PRId64, cw_hdr_percentile(&histogram, percentiles[i]));
        char *encoded = cw_hdr_encode(&histogram);
        if (!encoded) return 1;
        printf(" %s\n", encoded);
        free(encoded);
    }
    return 0;
}
