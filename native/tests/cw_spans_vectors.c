/*
 * cw_spans_vectors.c: writes the test vectors of span files (format versions 4 and 5,
 * cw_calls_format.h), shared by the C and the Python side, into DIR:
 *   spans_v4_tsc.bin   a span file on the TSC clock (2.5 GHz): two threads' chunks with unused
 *                      space between them; names defined before use, one name in two text
 *                      parts written out of order, one text defined under two ids (two copies
 *                      of a literal), a name cut at the maximum, and an event whose name was
 *                      never defined
 *   spans_v5_tsc.bin   the same clock in version 5 (a span is one record, written at its end,
 *                      with its level): thread 7070 in two chunks with thread 7071's between
 *                      them, spans of zero duration at one instant (their order comes from the
 *                      records, not the times), and in 7071 an end without a begin and a
 *                      begin without an end (the end of the span around it came first)
 * tests/vectors/spans_v<N>_tsc.json holds what a reader must decode from each (written by
 * hand: names, and the events in the order they happened with times in CLOCK_MONOTONIC
 * nanoseconds).
 *
 * Usage: cw_spans_vectors DIR
 *
 * tests/integration/test_spans_native.py builds this program and checks that it regenerates
 * the committed file byte for byte; tests/unit/test_spans_records.py checks that the Python
 * reader decodes it to exactly its .json.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../cw_calls_format.h"

#define CW_EXE "/usr/sbin/example daemon"
#define CW_T0 1000000000000         /* created_ns */
#define CW_TSC_HZ 2500000000u       /* a tick is 0.4 ns: 5 ticks are 2 ns */
#define CW_TSC0 INT64_C(7000000000000)
#define CW_LONG_NAME "twenty-four bytes, then the rest"

static char cw_page[CW_CALLS_HEADER_BYTES];

static int cw_event(FILE *out, uint16_t kind, uint8_t depth, int32_t tid, uint32_t name_id,
                    uint32_t position, int64_t ticks) {
    struct cw_calls_record record = {
        .function_id = kind,
        .depth = depth,
        .thread_id = tid,
        .call_index = name_id,
        .overall_index = position,
        .start = CW_TSC0 + ticks,
    };
    return fwrite(&record, sizeof record, 1, out) == 1 ? 0 : -1;
}

static int cw_name(FILE *out, int32_t tid, uint32_t name_id, uint32_t length, uint8_t flags) {
    struct cw_calls_record record = {
        .function_id = CW_SPAN_NAME,
        .flags = flags,
        .thread_id = tid,
        .call_index = name_id,
        .overall_index = length,
    };
    return fwrite(&record, sizeof record, 1, out) == 1 ? 0 : -1;
}

static int cw_text(FILE *out, uint32_t name_id, uint16_t part, const char *text) {
    struct cw_span_name_text record = {
        .function_id = CW_SPAN_NAME_TEXT,
        .part = part,
        .name_id = name_id,
    };
    size_t length = strlen(text);
    memcpy(record.text, text, length < CW_SPAN_TEXT_BYTES ? length : CW_SPAN_TEXT_BYTES);
    return fwrite(&record, sizeof record, 1, out) == 1 ? 0 : -1;
}

/* A version 5 record: a whole span (CW_SPAN), or an unbalanced begin or end. */
static int cw_span(FILE *out, uint16_t kind, int32_t tid, uint32_t name_id, uint16_t level,
                   uint32_t position, int64_t ticks, uint32_t duration) {
    struct cw_calls_record record = {
        .function_id = kind,
        .depth = (uint8_t)level,
        .thread_id = tid,
        .call_index = name_id,
        .overall_index = position,
        .start = CW_TSC0 + ticks,
        .duration_low = duration,
        .error = (int16_t)level,
    };
    return fwrite(&record, sizeof record, 1, out) == 1 ? 0 : -1;
}

static int cw_unused(FILE *out, int records) {
    static const struct cw_calls_record zero;
    for (int i = 0; i < records; i++)
        if (fwrite(&zero, sizeof zero, 1, out) != 1) return -1;
    return 0;
}

static int cw_header(FILE *out, uint16_t version) {
    struct cw_calls_header header = {
        .magic = CW_CALLS_MAGIC,
        .version = version,
        .record_bytes = sizeof(struct cw_calls_record),
        .header_bytes = CW_CALLS_HEADER_BYTES,
        .catalog_size = CW_CALLS_CATALOG_SIZE,
        .pid = 7070,
        .ppid = 7069,
        .flags = CW_CALLS_FLAG_SPANS,
        .sequence = 2,
        .created_ns = CW_T0,
        .dropped_records = 1,
        .exe_bytes = sizeof CW_EXE - 1,
        .clock = CW_CALLS_CLOCK_TSC,
        .ticks_per_second = CW_TSC_HZ,
        .created_ticks = CW_TSC0,
    };
    memset(cw_page, 0, sizeof cw_page);
    memcpy(cw_page, &header, sizeof header);
    memcpy(cw_page + sizeof header, CW_EXE, sizeof CW_EXE);
    return fwrite(cw_page, sizeof cw_page, 1, out) != 1;
}

static int cw_cut_name(FILE *out, int32_t tid, uint32_t name_id) {
    char cut[CW_SPAN_NAME_MAX + 1];
    memset(cut, 'x', sizeof cut - 1);
    cut[sizeof cut - 1] = '\0';
    int failed = 0;
    for (uint16_t part = 0; (size_t)part * CW_SPAN_TEXT_BYTES < CW_SPAN_NAME_MAX; part++)
        failed |= cw_text(out, name_id, part, cut + (size_t)part * CW_SPAN_TEXT_BYTES);
    failed |= cw_name(out, tid, name_id, CW_SPAN_NAME_MAX, CW_SPAN_NAME_CUT);
    return failed;
}

static int cw_version_4(const char *directory) {
    char path[4096];
    snprintf(path, sizeof path, "%s/spans_v4_tsc.bin", directory);
    FILE *out = fopen(path, "wb");
    if (out == NULL) return 1;
    int failed = cw_header(out, 4);
    /* Thread 7070's chunk: an operation "op" holding "decode" and the long name. */
    failed |= cw_text(out, 1, 0, "op");
    failed |= cw_name(out, 7070, 1, 2, 0);
    failed |= cw_event(out, CW_SPAN_BEGIN, 0, 7070, 1, 1, 1000);
    failed |= cw_text(out, 2, 0, "decode");
    failed |= cw_name(out, 7070, 2, 6, 0);
    failed |= cw_event(out, CW_SPAN_BEGIN, 1, 7070, 2, 2, 2500);
    failed |= cw_event(out, CW_SPAN_END, 1, 7070, 2, 3, 7500);
    failed |= cw_text(out, 3, 1, CW_LONG_NAME + CW_SPAN_TEXT_BYTES); /* parts out of order */
    failed |= cw_text(out, 3, 0, CW_LONG_NAME);
    failed |= cw_name(out, 7070, 3, (uint32_t)strlen(CW_LONG_NAME), 0);
    failed |= cw_event(out, CW_SPAN_BEGIN, 1, 7070, 3, 4, 10000);
    failed |= cw_event(out, CW_SPAN_END, 1, 7070, 3, 6, 20000);
    failed |= cw_event(out, CW_SPAN_END, 0, 7070, 1, 8, 25000);
    failed |= cw_unused(out, 3);
    /* Thread 7071's chunk: "op" again under its own id 4, a cut name, an undefined id. */
    failed |= cw_text(out, 4, 0, "op");
    failed |= cw_name(out, 7071, 4, 2, 0);
    failed |= cw_event(out, CW_SPAN_BEGIN, 0, 7071, 4, 5, 12500);
    failed |= cw_cut_name(out, 7071, 5);
    failed |= cw_event(out, CW_SPAN_BEGIN, 1, 7071, 5, 7, 15000);
    failed |= cw_event(out, CW_SPAN_END, 1, 7071, 5, 9, 30000);
    failed |= cw_event(out, CW_SPAN_END, 0, 7071, 9, 10, 35000); /* name 9 was never defined */
    failed |= cw_event(out, CW_SPAN_END, 0, 7071, 4, 11, 37500);
    failed |= fclose(out) != 0;
    return failed;
}

static int cw_version_5(const char *directory) {
    char path[4096];
    snprintf(path, sizeof path, "%s/spans_v5_tsc.bin", directory);
    FILE *out = fopen(path, "wb");
    if (out == NULL) return 1;
    int failed = cw_header(out, 5);
    /* Thread 7070's first chunk: inside "op" (its record comes last, in the next chunk),
     * "decode", then the long name and "decode" again, both of zero duration at one instant. */
    failed |= cw_text(out, 1, 0, "op");
    failed |= cw_name(out, 7070, 1, 2, 0);
    failed |= cw_text(out, 2, 0, "decode");
    failed |= cw_name(out, 7070, 2, 6, 0);
    failed |= cw_span(out, CW_SPAN, 7070, 2, 1, 1, 2500, 5000);
    failed |= cw_text(out, 3, 1, CW_LONG_NAME + CW_SPAN_TEXT_BYTES); /* parts out of order */
    failed |= cw_text(out, 3, 0, CW_LONG_NAME);
    failed |= cw_name(out, 7070, 3, (uint32_t)strlen(CW_LONG_NAME), 0);
    failed |= cw_span(out, CW_SPAN, 7070, 3, 1, 2, 10000, 0);
    failed |= cw_span(out, CW_SPAN, 7070, 2, 1, 3, 10000, 0);
    failed |= cw_unused(out, 3);
    /* Thread 7071's chunk: "op" under its own id 4; inside it the cut name, still open when
     * an end of the undefined name 9 comes (with two spans open: level 2), then the end of
     * "op", which leaves the cut name as a begin without an end (level 1). */
    failed |= cw_text(out, 4, 0, "op");
    failed |= cw_name(out, 7071, 4, 2, 0);
    failed |= cw_cut_name(out, 7071, 5);
    failed |= cw_span(out, CW_SPAN_END, 7071, 9, 2, 1, 35000, 0); /* never defined */
    failed |= cw_span(out, CW_SPAN_BEGIN, 7071, 5, 1, 2, 15000, 0);
    failed |= cw_span(out, CW_SPAN, 7071, 4, 0, 3, 12500, 25000);
    failed |= cw_unused(out, 2);
    /* Thread 7070's second chunk: the end of "op". */
    failed |= cw_span(out, CW_SPAN, 7070, 1, 0, 4, 1000, 24000);
    failed |= fclose(out) != 0;
    return failed;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    int failed = cw_version_4(argv[1]);
    failed |= cw_version_5(argv[1]);
    return failed ? 1 : 0;
}
