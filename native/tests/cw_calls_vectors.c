/*
 * cw_calls_vectors.c: writes the test vectors of the call file format (cw_calls_format.h),
 * shared by the C and the Python side, into DIR:
 *   calls_v2_tsc.bin         a version 2 file on the TSC clock with thread CPU time (40-byte
 *                            records): two threads' chunks, unused space, a saturated depth
 *                            and a duration too long for 48 bits
 *   calls_v2_monotonic.bin   a version 2 file on CLOCK_MONOTONIC without thread CPU time
 *                            (32-byte records)
 *   calls_v3_monotonic.bin   a version 3 file on CLOCK_MONOTONIC: an enumeration (setpwent,
 *                            getpwent until it ends, endpwent) and getservent_r, catalog ids
 *                            above 32 (selection bits in the upper half of the mask)
 *   calls_v*.json            what a reader must decode from each: the header's meaning and the
 *                            records in overall_index order, unused space left out, times in
 *                            CLOCK_MONOTONIC nanoseconds
 *
 * Usage: cw_calls_vectors DIR
 *
 * tests/integration/test_calls_native.py builds this program and checks that it regenerates
 * the committed files byte for byte; tests/unit/test_calls_format.py checks that the Python
 * reader decodes each .bin to exactly its .json. To change the vectors (a new format version
 * gets new files), edit the records here and run the program on tests/vectors.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../cw_calls_format.h"

#define CW_NAME_ENTRY(id, name) [id] = #name,
static const char *const cw_names[CW_CALLS_CATALOG_SIZE + 1] = {CW_CALLS_CATALOG(CW_NAME_ENTRY)};
#undef CW_NAME_ENTRY

#define CW_BIT(id) (UINT64_C(1) << ((id) - 1))
#define CW_EXE "/usr/sbin/example daemon"
#define CW_T0 1000000000000         /* created_ns: above 2^32 ns */
#define CW_TSC_HZ 2500000000u       /* 2.5 GHz: a tick is 0.4 ns, so 5 ticks are 2 ns */
#define CW_TSC0 INT64_C(7000000000000) /* created_ticks */
#define CW_MAX48 ((UINT64_C(1) << 48) - 1)

/* One record as the vectors describe it; durations and starts in ticks of the file's clock. */
struct cw_vector {
    uint16_t function_id;
    uint8_t depth;
    uint8_t flags;
    int32_t thread_id;
    uint32_t call_index;
    uint32_t overall_index;
    int64_t start;
    uint64_t duration;
    int16_t error;
    int64_t thread_cpu_ns;
};

/* In file order, as two threads would leave them: thread 4242's chunk (ending in unused
 * space), then thread 4250's. Not in overall_index order. Ticks are multiples of 5. */
static const struct cw_vector cw_tsc_records[] = {
    {CW_FN_getpwnam, 0, 0, 4242, 1, 1, CW_TSC0 + 250000, 625000, 0, 120000},
    {CW_FN_getpwnam, 0, CW_CALL_FAILED, 4242, 2, 3, CW_TSC0 + 1000000, 100000, 0, 39000},
    {CW_FN_open, 255, CW_CALL_FAILED, 4242, 1, 4, CW_TSC0 + 1250000, 7750, ENOENT, 3000},
    {0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, /* unused space */
    {0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, /* unused space */
    {CW_FN_close, 0, 0, 4250, 1, 2, CW_TSC0 + 500000, 2250, 0, 0},
    {CW_FN_fsync, 1, CW_CALL_FAILED, 4250, 1, 5, CW_TSC0 + 1500000, 20000000, EIO, 15000},
    {CW_FN_accept, 0, CW_CALL_LONG_DURATION, 4250, 1, 6, CW_TSC0 + 22500000, CW_MAX48, 0, 900},
    {CW_FN_getaddrinfo, 0, CW_CALL_FAILED, 4250, 4294967295u, 4294967295u, CW_TSC0 + 23750000,
     192500, -2, 50000},
};

/* getent passwd on a two-user system: the third getpwent ends the enumeration. */
static const struct cw_vector cw_enumeration_records[] = {
    {CW_FN_setpwent, 0, 0, 6161, 1, 1, CW_T0 + 2000, 4000, 0, -1},
    {CW_FN_getpwent, 0, 0, 6161, 1, 2, CW_T0 + 7000, 52000, 0, -1},
    {CW_FN_getpwent, 0, 0, 6161, 2, 3, CW_T0 + 60000, 1500, 0, -1},
    {CW_FN_getpwent, 0, CW_CALL_FAILED, 6161, 3, 4, CW_T0 + 62000, 310000, 0, -1},
    {CW_FN_endpwent, 0, 0, 6161, 1, 5, CW_T0 + 373000, 2500, 0, -1},
    {CW_FN_getservent_r, 0, CW_CALL_FAILED, 6161, 1, 6, CW_T0 + 380000, 900, ENOENT, -1},
    {CW_FN_getpwnam, 0, 0, 6161, 1, 7, CW_T0 + 390000, 20000, 0, -1},
};

static const struct cw_vector cw_monotonic_records[] = {
    {CW_FN_getservbyname, 0, 0, 5151, 1, 1, CW_T0 + 1000, 350000, 0, -1},
    {CW_FN_getservbyname, 0, 0, 5151, 2, 2, CW_T0 + 400000, 21000, 0, -1},
    {CW_FN_connect, 0, CW_CALL_FAILED, 5151, 1, 3, CW_T0 + 500000, 9000, ECONNREFUSED, -1},
};

struct cw_file {
    const char *name;
    struct cw_calls_header header;
    const struct cw_vector *records;
    size_t count;
};

static const struct cw_file cw_files[] = {
    {"calls_v2_tsc",
     {
         .magic = CW_CALLS_MAGIC,
         .version = 2, /* version 2 files as that version wrote them (catalog of 32) */
         .record_bytes = sizeof(struct cw_calls_record_cpu),
         .header_bytes = CW_CALLS_HEADER_BYTES,
         .catalog_size = 32,
         .pid = 4242,
         .ppid = 4241,
         .flags = CW_CALLS_FLAG_THREAD_CPU,
         .sequence = 1,
         .selected = CW_BIT(CW_FN_getpwnam) | CW_BIT(CW_FN_getaddrinfo) | CW_BIT(CW_FN_open) |
                     CW_BIT(CW_FN_close) | CW_BIT(CW_FN_fsync) | CW_BIT(CW_FN_accept),
         .created_ns = CW_T0,
         .dropped_records = 3,
         .exe_bytes = sizeof CW_EXE - 1,
         .clock = CW_CALLS_CLOCK_TSC,
         .ticks_per_second = CW_TSC_HZ,
         .created_ticks = CW_TSC0,
     },
     cw_tsc_records,
     sizeof cw_tsc_records / sizeof cw_tsc_records[0]},
    {"calls_v2_monotonic",
     {
         .magic = CW_CALLS_MAGIC,
         .version = 2,
         .record_bytes = sizeof(struct cw_calls_record),
         .header_bytes = CW_CALLS_HEADER_BYTES,
         .catalog_size = 32,
         .pid = 5151,
         .ppid = 5150,
         .flags = 0,
         .sequence = 0,
         .selected = CW_BIT(CW_FN_getservbyname) | CW_BIT(CW_FN_connect),
         .created_ns = CW_T0,
         .dropped_records = 0,
         .exe_bytes = sizeof CW_EXE - 1,
         .clock = CW_CALLS_CLOCK_MONOTONIC,
         .ticks_per_second = 1000000000u,
         .created_ticks = CW_T0,
     },
     cw_monotonic_records,
     sizeof cw_monotonic_records / sizeof cw_monotonic_records[0]},
    {"calls_v3_monotonic",
     {
         .magic = CW_CALLS_MAGIC,
         .version = 3,
         .record_bytes = sizeof(struct cw_calls_record),
         .header_bytes = CW_CALLS_HEADER_BYTES,
         .catalog_size = CW_CALLS_CATALOG_SIZE,
         .pid = 6161,
         .ppid = 6160,
         .flags = 0,
         .sequence = 0,
         .selected = CW_BIT(CW_FN_getpwnam) | CW_BIT(CW_FN_setpwent) | CW_BIT(CW_FN_getpwent) |
                     CW_BIT(CW_FN_endpwent) | CW_BIT(CW_FN_getservent_r),
         .created_ns = CW_T0,
         .dropped_records = 0,
         .exe_bytes = sizeof CW_EXE - 1,
         .clock = CW_CALLS_CLOCK_MONOTONIC,
         .ticks_per_second = 1000000000u,
         .created_ticks = CW_T0,
     },
     cw_enumeration_records,
     sizeof cw_enumeration_records / sizeof cw_enumeration_records[0]},
};

/* Ticks of `file`'s clock to nanoseconds, exactly (the vectors' ticks are chosen so). */
static int64_t cw_ns(const struct cw_file *file, int64_t ticks) {
    return file->header.clock == CW_CALLS_CLOCK_TSC ? ticks * 2 / 5 : ticks;
}

static int cw_write_bin(const struct cw_file *file, const char *path) {
    static char page[CW_CALLS_HEADER_BYTES];
    memset(page, 0, sizeof page);
    memcpy(page, &file->header, sizeof file->header);
    memcpy(page + sizeof file->header, CW_EXE, sizeof CW_EXE);
    FILE *out = fopen(path, "wb");
    if (out == NULL) return -1;
    int ok = fwrite(page, sizeof page, 1, out) == 1;
    for (size_t i = 0; i < file->count; i++) {
        const struct cw_vector *v = &file->records[i];
        struct cw_calls_record_cpu record = {
            .call = {
                .function_id = v->function_id,
                .depth = v->depth,
                .flags = v->flags,
                .thread_id = v->thread_id,
                .call_index = v->call_index,
                .overall_index = v->overall_index,
                .start = v->start,
                .duration_low = (uint32_t)v->duration,
                .duration_high = (uint16_t)(v->duration >> 32),
                .error = v->error,
            },
            .thread_cpu_ns = v->function_id != 0 ? v->thread_cpu_ns : 0,
        };
        ok = ok && fwrite(&record, file->header.record_bytes, 1, out) == 1;
    }
    return fclose(out) == 0 && ok ? 0 : -1;
}

static void cw_write_record(FILE *out, const struct cw_file *file, const struct cw_vector *v,
                            const char *separator) {
    int64_t start_ns = file->header.created_ns + cw_ns(file, v->start - file->header.created_ticks);
    fprintf(out,
            "    {\"function\": \"%s\", \"function_id\": %u, \"call_index\": %u, "
            "\"overall_index\": %u, \"thread_id\": %d, \"depth\": %u, \"start_ns\": %lld, "
            "\"duration_ns\": %lld, \"thread_cpu_ns\": %lld, \"error\": %d, \"failed\": %s, "
            "\"long_duration\": %s}%s\n",
            cw_names[v->function_id], v->function_id, v->call_index, v->overall_index,
            v->thread_id, v->depth, (long long)start_ns,
            (long long)cw_ns(file, (int64_t)v->duration), (long long)v->thread_cpu_ns,
            v->error, v->flags & CW_CALL_FAILED ? "true" : "false",
            v->flags & CW_CALL_LONG_DURATION ? "true" : "false", separator);
}

static int cw_write_json(const struct cw_file *file, const char *path) {
    const struct cw_calls_header *h = &file->header;
    FILE *out = fopen(path, "w");
    if (out == NULL) return -1;
    fprintf(out, "{\n  \"pid\": %d,\n  \"ppid\": %d,\n  \"exe\": \"%s\",\n  \"sequence\": %u,\n",
            h->pid, h->ppid, CW_EXE, h->sequence);
    fprintf(out, "  \"clock\": %u,\n  \"selected\": [", h->clock);
    const char *separator = "";
    for (unsigned id = 1; id <= CW_CALLS_CATALOG_SIZE; id++) {
        if (h->selected & CW_BIT(id)) fprintf(out, "%s\"%s\"", separator, cw_names[id]);
        if (h->selected & CW_BIT(id)) separator = ", ";
    }
    fprintf(out, "],\n  \"thread_cpu_measured\": %s,\n  \"dropped_records\": %llu,\n",
            h->flags & CW_CALLS_FLAG_THREAD_CPU ? "true" : "false",
            (unsigned long long)h->dropped_records);
    fprintf(out, "  \"truncated_bytes\": 0,\n  \"records\": [\n");
    size_t used = 0, written = 0;
    for (size_t i = 0; i < file->count; i++) used += file->records[i].function_id != 0;
    uint64_t previous = 0; /* reading order: overall_index (distinct), smallest first */
    for (const struct cw_vector *next = NULL; written < used; previous = next->overall_index) {
        next = NULL;
        for (size_t i = 0; i < file->count; i++) {
            const struct cw_vector *v = &file->records[i];
            if (v->function_id != 0 && v->overall_index > previous &&
                (next == NULL || v->overall_index < next->overall_index))
                next = v;
        }
        written++;
        cw_write_record(out, file, next, written < used ? "," : "");
    }
    fprintf(out, "  ]\n}\n");
    return fclose(out) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: cw_calls_vectors DIR\n");
        return 2;
    }
    for (size_t i = 0; i < sizeof cw_files / sizeof cw_files[0]; i++) {
        char bin[4096], json[4096];
        snprintf(bin, sizeof bin, "%s/%s.bin", argv[1], cw_files[i].name);
        snprintf(json, sizeof json, "%s/%s.json", argv[1], cw_files[i].name);
        if (cw_write_bin(&cw_files[i], bin) != 0 || cw_write_json(&cw_files[i], json) != 0) {
            perror("cw_calls_vectors");
            return 1;
        }
    }
    return 0;
}
