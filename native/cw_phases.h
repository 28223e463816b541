/*
 * cw_phases.h: the phase counting the native span readers share (cutaway._cwotlp for OTLP
 * JSON lines, cutaway._cwsdk for span SDK records): phase paths numbered in a trie of span
 * names, each step (parent path, name) made once; one operation's tree of paths counted
 * into totals and histograms as phase_tables.PhaseAccumulator.add_tree counts it (the
 * reference: the tests compare both); and the totals handed to the reader's accumulator.
 * Also what both modules' Python types share: the nester's first fields (CW_READER_HEAD), its
 * making and release, the sums() and roots() methods, and the module's making.
 *
 * Totals live in the paths themselves (the reader's accumulator: counter NULL) or in a
 * cw_counter, sparse by path, which the SDK reader keeps for the subtrees waiting at one level
 * of a thread (their operations, if no span around them ends). Names stay Python str objects.
 * Sums are 128 bits; every size is checked before it is allocated. Include once per module:
 * every function is static.
 */
#ifndef CW_PHASES_H
#define CW_PHASES_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef __int128 cw_wide;

#define CW_NO_PHASE ((Py_ssize_t)-1) /* phase_tables.NO_PHASE */
#define CW_MAX_DEPTH 64              /* phase_tables.MAX_DEPTH */

static double cw_log_base; /* log(1.01): phase_tables.HISTOGRAM_BASE (cw_phases_setup) */

static inline void cw_phases_setup(void) { cw_log_base = log(1.01); }

/* ---- memory ---- */

/* Grow `*items` (of `size`-byte elements) to hold at least `wanted`; -1 with MemoryError. */
static inline int cw_reserve(void **items, Py_ssize_t *capacity, Py_ssize_t wanted, size_t size) {
    if (wanted <= *capacity) return 0;
    Py_ssize_t grown = *capacity < 16 ? 16 : *capacity;
    while (grown < wanted) {
        if (grown > PY_SSIZE_T_MAX / 2) {
            grown = wanted;
            break;
        }
        grown *= 2;
    }
    if ((size_t)grown > SIZE_MAX / size) {
        PyErr_NoMemory();
        return -1;
    }
    void *moved = realloc(*items, (size_t)grown * size);
    if (moved == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *items = moved;
    *capacity = grown;
    return 0;
}

#define CW_RESERVE(items, capacity, wanted) \
    cw_reserve((void **)&(items), &(capacity), (wanted), sizeof(*(items)))

/* The smallest power of two >= 2 * count (a table at most half full); 0 if too large. */
static inline size_t cw_table_size(Py_ssize_t count) {
    size_t size = 16;
    while (size < (size_t)count * 2) {
        if (size > SIZE_MAX / 4) return 0;
        size *= 2;
    }
    return size;
}

/* A zeroed array of `count` elements of `size` bytes (count > 0); NULL with MemoryError. */
static inline void *cw_new_array(size_t count, size_t size) {
    if (count > SIZE_MAX / size) {
        PyErr_NoMemory();
        return NULL;
    }
    void *items = calloc(count, size);
    if (items == NULL) PyErr_NoMemory();
    return items;
}

/* ---- numberings: int64 keys numbered in the order first seen ---- */

typedef struct {
    int64_t *keys; /* by number */
    Py_ssize_t count, capacity;
    Py_ssize_t *index; /* open addressing: numbers, -1 empty */
    size_t index_size; /* a power of two, or 0 before the first key */
} cw_numbering;

static inline void cw_numbering_free(cw_numbering *numbering) {
    free(numbering->keys);
    free(numbering->index);
    memset(numbering, 0, sizeof(*numbering));
}

static inline size_t cw_key_hash(int64_t key) {
    return (size_t)((uint64_t)key * 0x9E3779B97F4A7C15ULL >> 16);
}

/* The index twice as large (16 slots at first), every key put back; -1 with MemoryError. */
static inline int cw_numbering_grow(cw_numbering *numbering) {
    size_t size = numbering->index_size ? numbering->index_size * 2 : 16;
    Py_ssize_t *index = cw_new_array(size, sizeof(Py_ssize_t));
    if (index == NULL) return -1;
    for (size_t i = 0; i < size; i++) index[i] = -1;
    for (Py_ssize_t number = 0; number < numbering->count; number++) {
        size_t slot = cw_key_hash(numbering->keys[number]) & (size - 1);
        while (index[slot] >= 0) slot = (slot + 1) & (size - 1);
        index[slot] = number;
    }
    free(numbering->index);
    numbering->index = index;
    numbering->index_size = size;
    return 0;
}

/* The number of `key`, or -1 if it has none yet (then `*slot` is where cw_numbering_add puts
 * it, if nothing is added in between); -2 with MemoryError. */
static inline Py_ssize_t cw_numbering_find(cw_numbering *numbering, int64_t key, size_t *slot) {
    if (((size_t)numbering->count + 1) * 2 > numbering->index_size &&
        cw_numbering_grow(numbering) < 0)
        return -2;
    size_t mask = numbering->index_size - 1;
    size_t at = cw_key_hash(key) & mask;
    while (numbering->index[at] >= 0) {
        if (numbering->keys[numbering->index[at]] == key) return numbering->index[at];
        at = (at + 1) & mask;
    }
    *slot = at;
    return -1;
}

/* Number `key` (not numbered yet) next, at the `slot` cw_numbering_find gave; -1 with
 * MemoryError. */
static inline Py_ssize_t cw_numbering_add(cw_numbering *numbering, int64_t key, size_t slot) {
    if (CW_RESERVE(numbering->keys, numbering->capacity, numbering->count + 1) < 0) return -1;
    numbering->keys[numbering->count] = key;
    numbering->index[slot] = numbering->count;
    return numbering->count++;
}

/* ---- strings ---- */

/* Equal as Python compares two str (both ready: compact strings of the same text have the
 * same kind). */
static inline int cw_equal(PyObject *a, PyObject *b) {
    if (a == b) return 1;
    Py_ssize_t length = PyUnicode_GET_LENGTH(a);
    if (length != PyUnicode_GET_LENGTH(b) || PyUnicode_KIND(a) != PyUnicode_KIND(b)) return 0;
    return memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b), (size_t)length * PyUnicode_KIND(a)) == 0;
}

/* A str the reader handed over, ready; -1 with TypeError for anything else. */
static inline int cw_text(PyObject *value, const char *what) {
    if (!PyUnicode_Check(value)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a str, got %.100s", what,
                     Py_TYPE(value)->tp_name);
        return -1;
    }
    return PyUnicode_READY(value);
}

/* ---- histograms: bucket -> (count, sum) ---- */

typedef struct {
    cw_wide sum;
    int64_t count;
    int32_t bucket; /* |bucket| <= 1 + log(2^127) / log(1.01), under 9,000 */
    int32_t used;
} cw_bucket;

typedef struct {
    cw_bucket *entries;
    size_t size; /* a power of two, or 0 before the first bucket */
    size_t used;
} cw_histogram;

static inline int cw_histogram_add(cw_histogram *histogram, long bucket, int64_t count, cw_wide sum) {
    if ((histogram->used + 1) * 2 > histogram->size) {
        size_t size = histogram->size ? histogram->size * 2 : 2; /* most paths: one bucket */
        cw_bucket *entries = cw_new_array(size, sizeof(cw_bucket));
        if (entries == NULL) return -1;
        for (size_t i = 0; i < histogram->size; i++) {
            cw_bucket *old = &histogram->entries[i];
            if (!old->used) continue;
            size_t slot = (size_t)old->bucket & (size - 1);
            while (entries[slot].used) slot = (slot + 1) & (size - 1);
            entries[slot] = *old;
        }
        free(histogram->entries);
        histogram->entries = entries;
        histogram->size = size;
    }
    size_t slot = (size_t)bucket & (histogram->size - 1);
    while (histogram->entries[slot].used && histogram->entries[slot].bucket != bucket)
        slot = (slot + 1) & (histogram->size - 1);
    cw_bucket *entry = &histogram->entries[slot];
    if (!entry->used) {
        entry->used = 1;
        entry->bucket = (int32_t)bucket;
        histogram->used++;
    }
    entry->count += count;
    entry->sum += sum;
    return 0;
}

/* A time's double as Python's math.log takes an int (correctly rounded). */
static inline double cw_double(cw_wide value) {
    if (value >= INT64_MIN && value <= INT64_MAX) return (double)(int64_t)value;
    return (double)value;
}

/* phase_tables.bucket_of: 1 + int(log(|value|) / log(1.01)), negative for a negative value. */
static inline long cw_bucket_of(cw_wide value) {
    cw_wide magnitude = value < 0 ? -value : value;
    long index = 1 + (long)(log(cw_double(magnitude)) / cw_log_base);
    return value > 0 ? index : -index;
}

/* A 128-bit sum as a Python int. */
static inline PyObject *cw_long(cw_wide value) {
    if (value >= INT64_MIN && value <= INT64_MAX) return PyLong_FromLongLong((long long)value);
    PyObject *high = PyLong_FromLongLong((long long)(value >> 64));
    PyObject *low = PyLong_FromUnsignedLongLong((unsigned long long)(uint64_t)value);
    PyObject *bits = PyLong_FromLong(64);
    PyObject *shifted = high && bits ? PyNumber_Lshift(high, bits) : NULL;
    PyObject *sum = shifted && low ? PyNumber_Add(shifted, low) : NULL;
    Py_XDECREF(high);
    Py_XDECREF(low);
    Py_XDECREF(bits);
    Py_XDECREF(shifted);
    return sum;
}

/* Append `item` (a new reference, or NULL after an error) to `list`, giving the reference up;
 * -1 on error. */
static inline int cw_append(PyObject *list, PyObject *item) {
    if (item == NULL) return -1;
    int failed = PyList_Append(list, item);
    Py_DECREF(item);
    return failed;
}

/* [(bucket, count, sum), ...] */
static inline PyObject *cw_histogram_list(const cw_histogram *histogram) {
    PyObject *list = PyList_New(0);
    if (list == NULL) return NULL;
    for (size_t i = 0; i < histogram->size; i++) {
        const cw_bucket *entry = &histogram->entries[i];
        if (!entry->used) continue;
        PyObject *sum = cw_long(entry->sum);
        PyObject *item = sum ? Py_BuildValue("lLN", (long)entry->bucket, (long long)entry->count, sum)
                             : NULL;
        if (cw_append(list, item) < 0) {
            Py_DECREF(list);
            return NULL;
        }
    }
    return list;
}

/* ---- phase paths and their totals ---- */

typedef struct {
    cw_wide total_ns, children_ns;
    int64_t spans, operations; /* operations: of a root path */
    cw_histogram histogram, rest_change;
    int has_rest;
    long bucket; /* of its time in the operation being counted, where that is > 0 */
} cw_totals;

typedef struct {
    Py_ssize_t parent; /* its parent path's number; -1 for path 0, above the outermost spans */
    PyObject *name;    /* the last name (NULL for path 0) */
    int depth;         /* names in the path */
    int counted;       /* has totals in the reader's accumulator: in `counted`, in that order */
    cw_totals totals;  /* the reader's accumulator's */
    uint64_t tree_stamp; /* the operation whose tree holds it at `slot` */
    Py_ssize_t slot;
    uint64_t moved_stamp; /* the move (cw_phases.moved_stamp) that gave it `moved` */
    Py_ssize_t moved;     /* its path under another name (cw_phases_under) */
} cw_path;

typedef struct {
    Py_ssize_t parent; /* -1: an empty slot */
    PyObject *name;    /* strong */
    Py_hash_t hash;
    Py_ssize_t number; /* the path under parent, or CW_NO_PHASE */
} cw_step_entry;

typedef struct {
    Py_ssize_t path;
    cw_wide sum, children_ns;
    int64_t spans;
    int has_children;
} cw_tree_entry;

/* Totals sparse by path (PhaseAccumulator.absorb's other side): in the order first counted. */
typedef struct {
    cw_numbering paths; /* entry numbers: the totals' */
    cw_totals *totals;
    Py_ssize_t totals_capacity;
} cw_counter;

typedef struct {
    cw_path *paths;
    Py_ssize_t path_count, path_capacity;
    cw_step_entry *steps;
    size_t step_size, step_used;
    Py_ssize_t *counted; /* paths with totals in the reader's accumulator, first counted first */
    Py_ssize_t counted_count, counted_capacity;
    cw_tree_entry *tree; /* the operation being counted */
    Py_ssize_t tree_capacity;
    uint64_t tree_stamp, moved_stamp;
} cw_phases;

/* Path 0, above the outermost spans; -1 with MemoryError. */
static inline int cw_phases_init(cw_phases *phases) {
    memset(phases, 0, sizeof(*phases));
    if (CW_RESERVE(phases->paths, phases->path_capacity, 1) < 0) return -1;
    memset(&phases->paths[0], 0, sizeof(cw_path));
    phases->paths[0].parent = -1;
    phases->path_count = 1;
    return 0;
}

static inline void cw_histogram_release(cw_histogram *histogram) {
    free(histogram->entries);
    *histogram = (cw_histogram){NULL, 0, 0};
}

static inline void cw_totals_release(cw_totals *totals) {
    cw_histogram_release(&totals->histogram);
    cw_histogram_release(&totals->rest_change);
}

static inline void cw_phases_free(cw_phases *phases) {
    for (Py_ssize_t i = 0; i < phases->path_count; i++) {
        Py_XDECREF(phases->paths[i].name);
        cw_totals_release(&phases->paths[i].totals);
    }
    free(phases->paths);
    for (size_t i = 0; i < phases->step_size; i++)
        if (phases->steps[i].parent >= 0) Py_DECREF(phases->steps[i].name);
    free(phases->steps);
    free(phases->counted);
    free(phases->tree);
    memset(phases, 0, sizeof(*phases));
}

static inline Py_hash_t cw_step_hash(Py_ssize_t parent, Py_hash_t name_hash) {
    return (Py_hash_t)((uint64_t)name_hash ^ ((uint64_t)parent * 0x9E3779B97F4A7C15ULL));
}

static inline int cw_steps_grow(cw_phases *phases) {
    size_t size = phases->step_size ? phases->step_size * 2 : 64;
    cw_step_entry *steps = cw_new_array(size, sizeof(cw_step_entry));
    if (steps == NULL) return -1;
    for (size_t i = 0; i < size; i++) steps[i].parent = -1;
    for (size_t i = 0; i < phases->step_size; i++) {
        cw_step_entry *old = &phases->steps[i];
        if (old->parent < 0) continue;
        size_t slot = (size_t)cw_step_hash(old->parent, old->hash) & (size - 1);
        while (steps[slot].parent >= 0) slot = (slot + 1) & (size - 1);
        steps[slot] = *old;
    }
    free(phases->steps);
    phases->steps = steps;
    phases->step_size = size;
    return 0;
}

/* PhaseAccumulator.step_number: the path of a span `name` (a ready str) under path `parent`,
 * made once: CW_NO_PHASE inside a span of the same name (recursion) or MAX_DEPTH deep. -2 on
 * error. */
static inline Py_ssize_t cw_step(cw_phases *phases, Py_ssize_t parent, PyObject *name) {
    Py_hash_t name_hash = PyObject_Hash(name);
    if (name_hash == -1) return -2;
    if ((phases->step_used + 1) * 2 > phases->step_size && cw_steps_grow(phases) < 0) return -2;
    size_t mask = phases->step_size - 1;
    size_t slot = (size_t)cw_step_hash(parent, name_hash) & mask;
    for (;; slot = (slot + 1) & mask) {
        cw_step_entry *step = &phases->steps[slot];
        if (step->parent < 0) break;
        if (step->parent == parent && step->hash == name_hash && cw_equal(step->name, name))
            return step->number;
    }
    Py_ssize_t number = CW_NO_PHASE;
    int recursive = 0;
    for (Py_ssize_t above = parent; above > 0; above = phases->paths[above].parent) {
        if (cw_equal(phases->paths[above].name, name)) {
            recursive = 1;
            break;
        }
    }
    if (!recursive && phases->paths[parent].depth < CW_MAX_DEPTH) {
        if (CW_RESERVE(phases->paths, phases->path_capacity, phases->path_count + 1) < 0)
            return -2;
        number = phases->path_count++;
        cw_path *path = &phases->paths[number];
        memset(path, 0, sizeof(*path));
        path->parent = parent;
        path->name = Py_NewRef(name);
        path->depth = phases->paths[parent].depth + 1;
    }
    cw_step_entry *step = &phases->steps[slot];
    step->parent = parent;
    step->name = Py_NewRef(name);
    step->hash = name_hash;
    step->number = number;
    phases->step_used++;
    return number;
}

/* A tree under construction: cw_tree_begin, then cw_tree_add per span (or per path's sums). */
static inline void cw_tree_begin(cw_phases *phases) { ++phases->tree_stamp; }

/* Add `sum` and `spans` to path `number` in the tree of `*entries` entries; -1 on error. */
static inline int cw_tree_add(cw_phases *phases, Py_ssize_t *entries, Py_ssize_t number, cw_wide sum,
                       int64_t spans) {
    cw_path *path = &phases->paths[number];
    if (path->tree_stamp != phases->tree_stamp) {
        if (CW_RESERVE(phases->tree, phases->tree_capacity, *entries + 1) < 0) return -1;
        path->tree_stamp = phases->tree_stamp;
        path->slot = *entries;
        phases->tree[(*entries)++] = (cw_tree_entry){number, sum, 0, spans, 0};
    } else {
        phases->tree[path->slot].sum += sum;
        phases->tree[path->slot].spans += spans;
    }
    return 0;
}

/* ---- sparse counters ---- */

static inline void cw_counter_free(cw_counter *counter) {
    if (counter == NULL) return;
    for (Py_ssize_t i = 0; i < counter->paths.count; i++) cw_totals_release(&counter->totals[i]);
    cw_numbering_free(&counter->paths);
    free(counter->totals);
    free(counter);
}

/* The totals of path `number` in `counter` (NULL: the reader's accumulator, in the paths),
 * made if new (last in the order first counted); NULL with MemoryError. */
static inline cw_totals *cw_totals_of(cw_phases *phases, cw_counter *counter, Py_ssize_t number) {
    if (counter == NULL) {
        cw_path *path = &phases->paths[number];
        if (!path->counted) {
            if (CW_RESERVE(phases->counted, phases->counted_capacity,
                           phases->counted_count + 1) < 0)
                return NULL;
            phases->counted[phases->counted_count++] = number;
            path->counted = 1;
        }
        return &path->totals;
    }
    size_t slot = 0;
    Py_ssize_t entry = cw_numbering_find(&counter->paths, number, &slot);
    if (entry >= 0) return &counter->totals[entry];
    if (entry == -2 ||
        CW_RESERVE(counter->totals, counter->totals_capacity, counter->paths.count + 1) < 0)
        return NULL;
    entry = cw_numbering_add(&counter->paths, number, slot);
    if (entry < 0) return NULL;
    memset(&counter->totals[entry], 0, sizeof(cw_totals));
    return &counter->totals[entry];
}

/* ---- counting one operation (PhaseAccumulator.add_tree) ---- */

/* Count the tree of `entries` entries in phases->tree (each path's parent in it before it)
 * into `counter` (NULL: the reader's accumulator). */
static inline int cw_count_tree(cw_phases *phases, cw_counter *counter, Py_ssize_t entries) {
    for (Py_ssize_t i = 0; i < entries; i++) {
        cw_tree_entry *entry = &phases->tree[i];
        Py_ssize_t parent = phases->paths[entry->path].parent;
        cw_totals *totals = cw_totals_of(phases, counter, entry->path);
        if (totals == NULL) return -1;
        totals->spans += entry->spans;
        totals->total_ns += entry->sum;
        if (entry->sum > 0) {
            totals->bucket = cw_bucket_of(entry->sum);
            if (cw_histogram_add(&totals->histogram, totals->bucket, 1, entry->sum) < 0)
                return -1;
        } else if (entry->sum) {
            if (cw_histogram_add(&totals->histogram, cw_bucket_of(entry->sum), 1, entry->sum) <
                0)
                return -1;
        }
        if (parent > 0) {
            cw_tree_entry *above = &phases->tree[phases->paths[parent].slot];
            above->children_ns += entry->sum;
            above->has_children = 1;
        } else {
            totals->operations++;
        }
    }
    for (Py_ssize_t i = 0; i < entries; i++) {
        cw_tree_entry *entry = &phases->tree[i];
        if (!entry->has_children) continue;
        cw_totals *totals = cw_totals_of(phases, counter, entry->path);
        if (totals == NULL) return -1;
        cw_wide whole = entry->sum;
        totals->children_ns += entry->children_ns;
        totals->has_rest = 1;
        if (whole > 0) {
            if (cw_histogram_add(&totals->rest_change, totals->bucket, -1, -whole) < 0)
                return -1;
        } else if (whole) {
            if (cw_histogram_add(&totals->rest_change, cw_bucket_of(whole), -1, -whole) < 0)
                return -1;
        }
        cw_wide rest = whole - entry->children_ns;
        if (rest && cw_histogram_add(&totals->rest_change, cw_bucket_of(rest), 1, rest) < 0)
            return -1;
    }
    return 0;
}

static inline int cw_histogram_absorb(cw_histogram *into, const cw_histogram *from) {
    for (size_t i = 0; i < from->size; i++) {
        const cw_bucket *entry = &from->entries[i];
        if (entry->used && cw_histogram_add(into, entry->bucket, entry->count, entry->sum) < 0)
            return -1;
    }
    return 0;
}

/* PhaseAccumulator.absorb: every operation `from` counted, into `into` (NULL: the reader's
 * accumulator), its new paths last. */
static inline int cw_counter_absorb(cw_phases *phases, cw_counter *into, const cw_counter *from) {
    for (Py_ssize_t i = 0; i < from->paths.count; i++) {
        cw_totals *ours = cw_totals_of(phases, into, from->paths.keys[i]);
        if (ours == NULL) return -1;
        const cw_totals *theirs = &from->totals[i];
        ours->total_ns += theirs->total_ns;
        ours->spans += theirs->spans;
        ours->children_ns += theirs->children_ns;
        ours->operations += theirs->operations;
        if (cw_histogram_absorb(&ours->histogram, &theirs->histogram) < 0) return -1;
        if (theirs->has_rest) {
            ours->has_rest = 1;
            if (cw_histogram_absorb(&ours->rest_change, &theirs->rest_change) < 0) return -1;
        }
    }
    return 0;
}

/* ---- handing the totals over ---- */

static inline PyObject *cw_path_tuple(cw_phases *phases, Py_ssize_t number) {
    PyObject *path = PyTuple_New(phases->paths[number].depth);
    if (path == NULL) return NULL;
    for (Py_ssize_t at = number; at > 0; at = phases->paths[at].parent)
        PyTuple_SET_ITEM(path, phases->paths[at].depth - 1, Py_NewRef(phases->paths[at].name));
    return path;
}

/* sums(first, count) of a finished reader: per path counted, in the order first counted,
 * from the `first` on (at most `count`): (path, total ns, spans, children ns, histogram, rest
 * change or None), histograms as [(bucket, count, sum), ...]. A few at a time, each path's
 * histograms released as they are handed over: 100,000 distinct phases are not held three
 * times over. */
static inline PyObject *cw_phases_sums(cw_phases *phases, PyObject *args) {
    Py_ssize_t first, count;
    if (!PyArg_ParseTuple(args, "nn:sums", &first, &count)) return NULL;
    if (first < 0 || count < 0) {
        PyErr_SetString(PyExc_ValueError, "sums: first and count must be >= 0");
        return NULL;
    }
    Py_ssize_t stop =
        first > phases->counted_count - count ? phases->counted_count : first + count;
    PyObject *rows = PyList_New(0);
    if (rows == NULL) return NULL;
    for (Py_ssize_t i = first; i < stop; i++) {
        cw_totals *totals = &phases->paths[phases->counted[i]].totals;
        PyObject *row = NULL;
        PyObject *names = cw_path_tuple(phases, phases->counted[i]);
        PyObject *total = names ? cw_long(totals->total_ns) : NULL;
        PyObject *children = total ? cw_long(totals->children_ns) : NULL;
        PyObject *histogram = children ? cw_histogram_list(&totals->histogram) : NULL;
        PyObject *rest = NULL;
        if (histogram)
            rest = totals->has_rest ? cw_histogram_list(&totals->rest_change)
                                    : Py_NewRef(Py_None);
        if (rest)
            row = Py_BuildValue("NNLNNN", names, total, (long long)totals->spans, children,
                                histogram, rest);
        else {
            Py_XDECREF(names);
            Py_XDECREF(total);
            Py_XDECREF(children);
            Py_XDECREF(histogram);
        }
        if (cw_append(rows, row) < 0) {
            Py_DECREF(rows);
            return NULL;
        }
        cw_totals_release(totals);
    }
    return rows;
}

/* roots(): [(outermost span's name, operations), ...] */
static inline PyObject *cw_phases_roots(cw_phases *phases) {
    PyObject *rows = PyList_New(0);
    if (rows == NULL) return NULL;
    for (Py_ssize_t i = 0; i < phases->counted_count; i++) {
        cw_path *path = &phases->paths[phases->counted[i]];
        if (path->parent != 0 || !path->totals.operations) continue;
        PyObject *row = Py_BuildValue("OL", path->name, (long long)path->totals.operations);
        if (cw_append(rows, row) < 0) {
            Py_DECREF(rows);
            return NULL;
        }
    }
    return rows;
}

/* ---- the nester as a Python object ---- */

/* The fields each module's nester type starts with, as PyObject_HEAD starts every object: the
 * life cycle and the methods below take any nester as a cw_reader. */
#define CW_READER_HEAD                                                                          \
    PyObject_HEAD                                                                               \
    PyObject *report; /* the reader's callable, handed the problems */                         \
    int finished;     /* finish() has run: sums() may hand the totals over */                  \
    cw_phases phases; /* the paths, their steps and totals */

typedef struct {
    CW_READER_HEAD
} cw_reader;

/* A new nester of `type` (its own fields zero) reporting to `report`, path 0 made; NULL with
 * an exception (TypeError if `report` is not callable). */
static inline cw_reader *cw_reader_new(PyTypeObject *type, PyObject *report) {
    if (!PyCallable_Check(report)) {
        PyErr_SetString(PyExc_TypeError, "report must be callable");
        return NULL;
    }
    cw_reader *self = (cw_reader *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->report = Py_NewRef(report);
    if (cw_phases_init(&self->phases) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return self;
}

/* The end of a nester's tp_dealloc, after its own fields are released. */
static inline void cw_reader_dealloc(cw_reader *self) {
    cw_phases_free(&self->phases);
    Py_XDECREF(self->report);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* sums(first, count): cw_phases_sums, once finished. */
static inline PyObject *cw_reader_sums(PyObject *object, PyObject *args) {
    cw_reader *self = (cw_reader *)object;
    if (!self->finished) {
        PyErr_SetString(PyExc_RuntimeError, "sums: the nester has not finished");
        return NULL;
    }
    return cw_phases_sums(&self->phases, args);
}

/* roots(): cw_phases_roots. */
static inline PyObject *cw_reader_roots(PyObject *object, PyObject *unused) {
    (void)unused;
    return cw_phases_roots(&((cw_reader *)object)->phases);
}

/* The method table's entries of the methods every nester has. */
#define CW_READER_METHODS                                                                       \
    {"sums", cw_reader_sums, METH_VARARGS,                                                      \
     "sums(first, count): paths' totals in first-counted order (each handed over once)."},      \
    {"roots", cw_reader_roots, METH_NOARGS, "Operations per outermost span's name."}

/* The module of `definition`, with the nester type `nester` in it as Nester, the counting set
 * up; NULL with an exception. */
static inline PyObject *cw_reader_module(PyModuleDef *definition, PyTypeObject *nester) {
    if (PyType_Ready(nester) < 0) return NULL;
    cw_phases_setup();
    PyObject *module = PyModule_Create(definition);
    if (module == NULL) return NULL;
    if (PyModule_AddObjectRef(module, "Nester", (PyObject *)nester) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}

#endif /* CW_PHASES_H */
