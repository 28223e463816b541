/*
 * cw_calls_vectors.c: writes the test vectors of the call file format (cw_calls_format.h),
 * shared by the C and the Python side:
 *   tests/vectors/calls_v1.bin   a version 1 file built from the records below
 *   tests/vectors/calls_v1.json  what a reader must decode from it: the header's meaning and
 *                                the records in overall_index order, unused space left out
 *
 * Usage: cw_calls_vectors BIN_PATH JSON_PATH
 *
 * tests/integration/test_calls_native.py builds this program and checks that it regenerates
 * both committed files byte for byte; tests/unit/test_calls_format.py checks that the Python
 * reader decodes the .bin to exactly the .json. To change the vectors (a new format version
 * gets new files), edit the records here and run the program on the committed paths.
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
#define CW_T0 1000000000000 /* a start time above 2^32 ns */

/* In file order, as two threads would leave them: thread 4242's chunk (ending in unused
 * space), then thread 4250's. Not in overall_index order. */
static const struct cw_calls_record cw_records[] = {
    {CW_FN_getpwnam, 0, 4242, 0, 0, 1, 1, CW_T0 + 100000, 250000, 120000, 0},
    {CW_FN_getpwnam, 0, 4242, 0, CW_CALL_FAILED, 2, 3, CW_T0 + 400000, 40000, 39000, 0},
    {CW_FN_open, 0, 4242, ENOENT, CW_CALL_FAILED, 1, 4, CW_T0 + 500000, 3100, 3000, 0},
    {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, /* unused space */
    {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, /* unused space */
    {CW_FN_close, 0, 4250, 0, 0, 1, 2, CW_T0 + 200000, 900, 0, 0},
    {CW_FN_fsync, 1, 4250, EIO, CW_CALL_FAILED, 1, 5, CW_T0 + 600000, 8000000, 15000, 0},
    {CW_FN_close, 0, 4250, 0, 0, 2, 6, CW_T0 + 9000000, 1200, 1100, 0},
    {CW_FN_getaddrinfo, 0, 4250, -2, CW_CALL_FAILED, 1, 7, CW_T0 + 9500000, 77000, 50000, 0},
};
#define CW_RECORD_COUNT (sizeof cw_records / sizeof cw_records[0])

static const struct cw_calls_header cw_header = {
    .magic = CW_CALLS_MAGIC,
    .version = CW_CALLS_VERSION,
    .record_bytes = sizeof(struct cw_calls_record),
    .header_bytes = CW_CALLS_HEADER_BYTES,
    .catalog_size = CW_CALLS_CATALOG_SIZE,
    .pid = 4242,
    .ppid = 4241,
    .flags = CW_CALLS_FLAG_THREAD_CPU,
    .sequence = 1,
    .selected = CW_BIT(CW_FN_getpwnam) | CW_BIT(CW_FN_getaddrinfo) | CW_BIT(CW_FN_open) |
                CW_BIT(CW_FN_close) | CW_BIT(CW_FN_fsync),
    .created_ns = CW_T0,
    .dropped_records = 3,
    .exe_bytes = sizeof CW_EXE - 1,
};

static int cw_write_bin(const char *path) {
    static char page[CW_CALLS_HEADER_BYTES];
    memcpy(page, &cw_header, sizeof cw_header);
    memcpy(page + sizeof cw_header, CW_EXE, sizeof CW_EXE);
    FILE *file = fopen(path, "wb");
    if (file == NULL) return -1;
    int ok = fwrite(page, sizeof page, 1, file) == 1 &&
             fwrite(cw_records, sizeof cw_records, 1, file) == 1;
    return fclose(file) == 0 && ok ? 0 : -1;
}

static void cw_write_record(FILE *file, const struct cw_calls_record *r, const char *separator) {
    fprintf(file,
            "    {\"function\": \"%s\", \"function_id\": %u, \"call_index\": %llu, "
            "\"overall_index\": %llu, \"thread_id\": %d, \"depth\": %u, \"start_ns\": %lld, "
            "\"duration_ns\": %lld, \"thread_cpu_ns\": %lld, \"error\": %d, \"failed\": %s}%s\n",
            cw_names[r->function_id], r->function_id, (unsigned long long)r->call_index,
            (unsigned long long)r->overall_index, r->thread_id, r->depth,
            (long long)r->start_ns, (long long)r->duration_ns, (long long)r->thread_cpu_ns,
            r->error, r->flags & CW_CALL_FAILED ? "true" : "false", separator);
}

static int cw_write_json(const char *path) {
    FILE *file = fopen(path, "w");
    if (file == NULL) return -1;
    fprintf(file, "{\n  \"pid\": %d,\n  \"ppid\": %d,\n  \"exe\": \"%s\",\n  \"sequence\": %u,\n",
            cw_header.pid, cw_header.ppid, CW_EXE, cw_header.sequence);
    fprintf(file, "  \"selected\": [");
    const char *separator = "";
    for (unsigned id = 1; id <= CW_CALLS_CATALOG_SIZE; id++) {
        if (cw_header.selected & CW_BIT(id)) fprintf(file, "%s\"%s\"", separator, cw_names[id]);
        if (cw_header.selected & CW_BIT(id)) separator = ", ";
    }
    fprintf(file, "],\n  \"thread_cpu_measured\": %s,\n  \"dropped_records\": %llu,\n",
            cw_header.flags & CW_CALLS_FLAG_THREAD_CPU ? "true" : "false",
            (unsigned long long)cw_header.dropped_records);
    fprintf(file, "  \"truncated_bytes\": 0,\n  \"records\": [\n");
    size_t used = 0, written = 0;
    for (size_t i = 0; i < CW_RECORD_COUNT; i++) used += cw_records[i].function_id != 0;
    for (uint64_t overall = 1; written < used; overall++) /* reading order: overall_index */
        for (size_t i = 0; i < CW_RECORD_COUNT; i++)
            if (cw_records[i].function_id != 0 && cw_records[i].overall_index == overall) {
                written++;
                cw_write_record(file, &cw_records[i], written < used ? "," : "");
            }
    fprintf(file, "  ]\n}\n");
    return fclose(file) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: cw_calls_vectors BIN_PATH JSON_PATH\n");
        return 2;
    }
    if (cw_write_bin(argv[1]) != 0 || cw_write_json(argv[2]) != 0) {
        perror("cw_calls_vectors");
        return 1;
    }
    return 0;
}
