/*
 * cw_sdk_python.c: cutaway._cwsdk, the native nester of the span SDK reader
 * (src/cutaway/probes/spans/records.py, stream_span_file).
 *
 * The reader decodes each chunk of a version 5 span file's records with numpy and hands their
 * columns here (kind, thread, level, name number, begin and end ns, as int64 arrays, and the
 * names as a list of str). This module nests them as cutaway.probes.spans.stream.ThreadNester
 * does in Python (the reference: the tests compare both on hostile records): per thread and
 * level it keeps the subtrees waiting for the record of the span around them, as their sums
 * per phase path (the newest FOLD_AFTER apart, older ones counted as operations into a
 * sparse counter, in case no span around them ever ends), never the spans; a record at level
 * 0 is a whole operation, counted at once. Paths, steps and counting are cw_phases.h's, shared
 * with the OTLP reader's nester (cutaway._cwotlp).
 *
 * Memory grows with the open levels and the distinct phase paths, not with the spans. Nothing
 * recurses (levels go to 65,535), every size is checked before it is allocated. Problems (a
 * begin without its end, an end without its begin) go to the reader's callable as
 * report(thread, message or None, more left out), in ThreadNester's words and order.
 */
#include "cw_phases.h"

#define CW_FOLD_AFTER 32    /* stream.FOLD_AFTER */
#define CW_KEPT_PROBLEMS 60 /* stream.KEPT_PROBLEMS */

typedef struct {
    Py_ssize_t path;
    cw_wide sum;
    int64_t spans;
} cw_member_entry;

typedef struct {
    int64_t time_ns;
    PyObject *name; /* strong */
} cw_begin;

/* stream._Group: the subtrees waiting at one level of a thread. */
typedef struct cw_group {
    Py_ssize_t thread;
    int64_t level;
    struct cw_group *next_in_bucket;
    cw_member_entry *entries; /* the members' paths, oldest member first */
    Py_ssize_t entry_count, entry_capacity;
    Py_ssize_t *member_sizes;
    Py_ssize_t member_count, member_capacity;
    cw_counter *folded; /* older members, counted as operations; NULL for none */
    cw_begin begins[CW_KEPT_PROBLEMS];
    int begin_count;
    int64_t begins_left_out;
} cw_group;

typedef struct {
    CW_READER_HEAD /* report: callable(thread, message or None, more left out) */
    int64_t pid;
    long span_kind, begin_kind, end_kind;
    int busy; /* in add or finish (report must not call back into it) */
    cw_numbering threads; /* thread ids, numbered in the order first seen */
    /* groups by (thread number, level) */
    cw_group **buckets;
    size_t bucket_count;
    Py_ssize_t group_count;
    Py_ssize_t moved_chain[CW_MAX_DEPTH + 2];
} cw_nester;

/* ---- threads ---- */

/* The number of thread `tid`, the next if it is new; -1 with MemoryError. */
static Py_ssize_t cw_thread_of(cw_nester *self, int64_t tid) {
    size_t slot = 0;
    Py_ssize_t thread = cw_numbering_find(&self->threads, tid, &slot);
    if (thread >= 0) return thread;
    if (thread == -2) return -1;
    return cw_numbering_add(&self->threads, tid, slot);
}

/* ---- groups ---- */

static size_t cw_group_hash(Py_ssize_t thread, int64_t level) {
    return (size_t)(((uint64_t)thread * 0x9E3779B97F4A7C15ULL) ^
                    ((uint64_t)level * 0xC2B2AE3D27D4EB4FULL)) >>
           8;
}

static void cw_group_free(cw_group *group) {
    free(group->entries);
    free(group->member_sizes);
    cw_counter_free(group->folded);
    for (int i = 0; i < group->begin_count; i++) Py_DECREF(group->begins[i].name);
    free(group);
}

/* The group at (thread, level), taken out of the table if `pop`; NULL if there is none. */
static cw_group *cw_group_find(cw_nester *self, Py_ssize_t thread, int64_t level, int pop) {
    if (self->bucket_count == 0) return NULL;
    cw_group **link = &self->buckets[cw_group_hash(thread, level) & (self->bucket_count - 1)];
    for (; *link; link = &(*link)->next_in_bucket) {
        cw_group *group = *link;
        if (group->thread != thread || group->level != level) continue;
        if (pop) {
            *link = group->next_in_bucket;
            group->next_in_bucket = NULL;
            self->group_count--;
        }
        return group;
    }
    return NULL;
}

/* The group at (thread, level), made if there is none; NULL with MemoryError. */
static cw_group *cw_group_at(cw_nester *self, Py_ssize_t thread, int64_t level) {
    cw_group *group = cw_group_find(self, thread, level, 0);
    if (group != NULL) return group;
    if ((size_t)self->group_count + 1 > self->bucket_count) {
        size_t size = self->bucket_count ? self->bucket_count * 2 : 64;
        cw_group **buckets = cw_new_array(size, sizeof(cw_group *));
        if (buckets == NULL) return NULL;
        for (size_t i = 0; i < self->bucket_count; i++) {
            while (self->buckets[i]) {
                cw_group *moved = self->buckets[i];
                self->buckets[i] = moved->next_in_bucket;
                size_t slot = cw_group_hash(moved->thread, moved->level) & (size - 1);
                moved->next_in_bucket = buckets[slot];
                buckets[slot] = moved;
            }
        }
        free(self->buckets);
        self->buckets = buckets;
        self->bucket_count = size;
    }
    group = calloc(1, sizeof(cw_group));
    if (group == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    group->thread = thread;
    group->level = level;
    size_t slot = cw_group_hash(thread, level) & (self->bucket_count - 1);
    group->next_in_bucket = self->buckets[slot];
    self->buckets[slot] = group;
    self->group_count++;
    return group;
}

/* Append a subtree of `count` entries (copied) as the group's newest member. */
static int cw_group_append(cw_group *group, const cw_member_entry *entries, Py_ssize_t count) {
    if (group->entry_count > PY_SSIZE_T_MAX - count ||
        CW_RESERVE(group->entries, group->entry_capacity, group->entry_count + count) < 0 ||
        CW_RESERVE(group->member_sizes, group->member_capacity, group->member_count + 1) < 0)
        return -1;
    memcpy(&group->entries[group->entry_count], entries, (size_t)count * sizeof(*entries));
    group->entry_count += count;
    group->member_sizes[group->member_count++] = count;
    return 0;
}

/* The group's counter of folded members, made if it has none; NULL with MemoryError. */
static cw_counter *cw_group_folded(cw_group *group) {
    if (group->folded == NULL) {
        group->folded = calloc(1, sizeof(cw_counter));
        if (group->folded == NULL) PyErr_NoMemory();
    }
    return group->folded;
}

/* Count one subtree as an operation into `counter` (NULL: the reader's accumulator). */
static int cw_count_member(cw_nester *self, cw_counter *counter, const cw_member_entry *entries,
                           Py_ssize_t count) {
    Py_ssize_t tree_entries = 0;
    cw_tree_begin(&self->phases);
    for (Py_ssize_t i = 0; i < count; i++)
        if (cw_tree_add(&self->phases, &tree_entries, entries[i].path, entries[i].sum,
                        entries[i].spans) < 0)
            return -1;
    return cw_count_tree(&self->phases, counter, tree_entries);
}

/* _Group._fold: the `count` oldest members counted as operations into the group's counter. */
static int cw_group_fold(cw_nester *self, cw_group *group, Py_ssize_t count) {
    if (count <= 0) return 0;
    if (cw_group_folded(group) == NULL) return -1;
    Py_ssize_t offset = 0;
    for (Py_ssize_t m = 0; m < count; m++) {
        if (cw_count_member(self, group->folded, &group->entries[offset],
                            group->member_sizes[m]) < 0)
            return -1;
        offset += group->member_sizes[m];
    }
    memmove(group->entries, &group->entries[offset],
            (size_t)(group->entry_count - offset) * sizeof(cw_member_entry));
    group->entry_count -= offset;
    memmove(group->member_sizes, &group->member_sizes[count],
            (size_t)(group->member_count - count) * sizeof(Py_ssize_t));
    group->member_count -= count;
    return 0;
}

/* _Group.count_into: every subtree an operation of the reader's accumulator. */
static int cw_group_count(cw_nester *self, cw_group *group) {
    if (group->folded != NULL) {
        if (cw_counter_absorb(&self->phases, NULL, group->folded) < 0) return -1;
        cw_counter_free(group->folded);
        group->folded = NULL;
    }
    Py_ssize_t offset = 0;
    for (Py_ssize_t m = 0; m < group->member_count; m++) {
        if (cw_count_member(self, NULL, &group->entries[offset], group->member_sizes[m]) < 0)
            return -1;
        offset += group->member_sizes[m];
    }
    group->entry_count = 0;
    group->member_count = 0;
    return 0;
}

/* _Group.add_begins: `later`'s begins after these (the first KEPT_PROBLEMS kept), taken. */
static void cw_group_take_begins(cw_group *group, cw_group *later) {
    for (int i = 0; i < later->begin_count; i++) {
        if (group->begin_count < CW_KEPT_PROBLEMS) {
            group->begins[group->begin_count++] = later->begins[i];
        } else {
            Py_DECREF(later->begins[i].name);
            group->begins_left_out++;
        }
    }
    later->begin_count = 0;
    group->begins_left_out += later->begins_left_out;
    later->begins_left_out = 0;
}

/* _Group.absorb: `later`'s subtrees (begun after these) as siblings of these. */
static int cw_group_absorb(cw_nester *self, cw_group *group, cw_group *later) {
    if (later->folded != NULL) {
        if (cw_group_fold(self, group, group->member_count) < 0 || cw_group_folded(group) == NULL)
            return -1;
        if (cw_counter_absorb(&self->phases, group->folded, later->folded) < 0) return -1;
    }
    Py_ssize_t offset = 0;
    for (Py_ssize_t m = 0; m < later->member_count; m++) {
        if (cw_group_append(group, &later->entries[offset], later->member_sizes[m]) < 0)
            return -1;
        offset += later->member_sizes[m];
    }
    if (cw_group_fold(self, group, group->member_count - CW_FOLD_AFTER) < 0) return -1;
    cw_group_take_begins(group, later);
    return 0;
}

/* ---- problems ---- */

static int cw_report(cw_nester *self, Py_ssize_t thread, PyObject *message, int64_t more) {
    PyObject *result =
        PyObject_CallFunction(self->report, "LOL", (long long)self->threads.keys[thread],
                              message ? message : Py_None, (long long)more);
    if (result == NULL) return -1;
    Py_DECREF(result);
    return 0;
}

/* A group's begins without an end, in ThreadNester's words (`enclosing`: the span whose end
 * came first, or NULL: still open when the records end), and those left out. */
static int cw_report_begins(cw_nester *self, cw_group *group, PyObject *enclosing) {
    PyObject *enclosing_shown = enclosing ? PyObject_Repr(enclosing) : NULL;
    if (enclosing && enclosing_shown == NULL) return -1;
    int failed = 0;
    for (int i = 0; i < group->begin_count && !failed; i++) {
        PyObject *shown = PyObject_Repr(group->begins[i].name);
        PyObject *message = NULL;
        if (shown && enclosing_shown)
            message = PyUnicode_FromFormat(
                "process %lld, thread %lld, at %lld ns: begin of %U without an end (the end of "
                "the enclosing %U came first)",
                (long long)self->pid, (long long)self->threads.keys[group->thread],
                (long long)group->begins[i].time_ns, shown, enclosing_shown);
        else if (shown)
            message = PyUnicode_FromFormat(
                "process %lld, thread %lld, at %lld ns: begin of %U without an end (still open "
                "when the records end)",
                (long long)self->pid, (long long)self->threads.keys[group->thread],
                (long long)group->begins[i].time_ns, shown);
        Py_XDECREF(shown);
        failed = message == NULL || cw_report(self, group->thread, message, 0) < 0;
        Py_XDECREF(message);
    }
    Py_XDECREF(enclosing_shown);
    if (!failed && group->begins_left_out)
        failed = cw_report(self, group->thread, NULL, group->begins_left_out) < 0;
    return failed ? -1 : 0;
}

/* ---- records ---- */

/* The path of relative path `relative` (a subtree's, from its outermost span down) under the
 * path `root` (a span around it): each name added in turn, as cw_step adds it (CW_NO_PHASE
 * where the span's name is in it or it grows past MAX_DEPTH); -2 on error. Made once per
 * path per adoption (phases.moved_stamp). */
static Py_ssize_t cw_under(cw_nester *self, Py_ssize_t root, Py_ssize_t relative) {
    cw_phases *phases = &self->phases;
    int chain = 0;
    Py_ssize_t at = relative;
    while (at > 0 && phases->paths[at].moved_stamp != phases->moved_stamp) {
        if (chain >= CW_MAX_DEPTH + 1) {
            PyErr_SetString(PyExc_RuntimeError, "cutaway._cwsdk: a path deeper than MAX_DEPTH");
            return -2;
        }
        self->moved_chain[chain++] = at;
        at = phases->paths[at].parent;
    }
    Py_ssize_t above = at > 0 ? phases->paths[at].moved : root;
    while (chain-- > 0) {
        cw_path *path = &phases->paths[self->moved_chain[chain]];
        Py_ssize_t moved = CW_NO_PHASE;
        if (above != CW_NO_PHASE) {
            moved = cw_step(phases, above, path->name);
            if (moved == -2) return -2;
            path = &phases->paths[self->moved_chain[chain]]; /* cw_step may move the paths */
        }
        path->moved_stamp = phases->moved_stamp;
        path->moved = moved;
        above = moved;
    }
    return above;
}

/* ThreadNester.span: a span that ended adopts what waits one level deeper. */
static int cw_span_record(cw_nester *self, Py_ssize_t thread, PyObject *name, int64_t level,
                          int64_t begin_ns, int64_t end_ns) {
    cw_phases *phases = &self->phases;
    Py_ssize_t root = cw_step(phases, 0, name);
    if (root < 0) return -1; /* a step from path 0 is always a phase */
    cw_group *inner = cw_group_find(self, thread, level + 1, 1);
    Py_ssize_t entries = 0;
    cw_tree_begin(phases);
    int failed = cw_tree_add(phases, &entries, root, (cw_wide)end_ns - (cw_wide)begin_ns, 1) < 0;
    if (inner != NULL && !failed) {
        failed = cw_report_begins(self, inner, name) < 0;
        phases->moved_stamp++;
        for (Py_ssize_t i = 0; inner->folded && i < inner->folded->paths.count && !failed; i++) {
            Py_ssize_t moved = cw_under(self, root, inner->folded->paths.keys[i]);
            failed = moved == -2 ||
                     (moved != CW_NO_PHASE &&
                      cw_tree_add(phases, &entries, moved, inner->folded->totals[i].total_ns,
                                  inner->folded->totals[i].spans) < 0);
        }
        for (Py_ssize_t i = 0; i < inner->entry_count && !failed; i++) {
            Py_ssize_t moved = cw_under(self, root, inner->entries[i].path);
            failed = moved == -2 ||
                     (moved != CW_NO_PHASE &&
                      cw_tree_add(phases, &entries, moved, inner->entries[i].sum,
                                  inner->entries[i].spans) < 0);
        }
    }
    if (inner != NULL) cw_group_free(inner);
    if (failed) return -1;
    if (level == 0) return cw_count_tree(phases, NULL, entries);
    cw_group *group = cw_group_at(self, thread, level);
    if (group == NULL) return -1;
    /* the tree, copied out of the scratch before a fold reuses it */
    if (group->entry_count > PY_SSIZE_T_MAX - entries ||
        CW_RESERVE(group->entries, group->entry_capacity, group->entry_count + entries) < 0 ||
        CW_RESERVE(group->member_sizes, group->member_capacity, group->member_count + 1) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < entries; i++)
        group->entries[group->entry_count + i] =
            (cw_member_entry){phases->tree[i].path, phases->tree[i].sum, phases->tree[i].spans};
    group->entry_count += entries;
    group->member_sizes[group->member_count++] = entries;
    return cw_group_fold(self, group, group->member_count - CW_FOLD_AFTER);
}

/* ThreadNester.begin_without_end: it encloses nothing; what waits inside takes its place. */
static int cw_begin_record(cw_nester *self, Py_ssize_t thread, PyObject *name, int64_t level,
                           int64_t begin_ns) {
    cw_group *group = cw_group_at(self, thread, level);
    if (group == NULL) return -1;
    if (group->begin_count < CW_KEPT_PROBLEMS)
        group->begins[group->begin_count++] = (cw_begin){begin_ns, Py_NewRef(name)};
    else
        group->begins_left_out++;
    cw_group *inner = cw_group_find(self, thread, level + 1, 1);
    if (inner != NULL) {
        int failed = cw_group_absorb(self, group, inner) < 0;
        cw_group_free(inner);
        if (failed) return -1;
    }
    if (level == 0) return cw_group_count(self, group);
    return 0;
}

static int cw_end_record(cw_nester *self, Py_ssize_t thread, PyObject *name, int64_t time_ns) {
    PyObject *shown = PyObject_Repr(name);
    if (shown == NULL) return -1;
    PyObject *message =
        PyUnicode_FromFormat("process %lld, thread %lld, at %lld ns: end of %U without a begin",
                             (long long)self->pid, (long long)self->threads.keys[thread],
                             (long long)time_ns, shown);
    Py_DECREF(shown);
    if (message == NULL) return -1;
    int failed = cw_report(self, thread, message, 0) < 0;
    Py_DECREF(message);
    return failed ? -1 : 0;
}

/* ---- the type ---- */

static PyObject *cw_nester_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"pid", "span_kind", "begin_kind", "end_kind", "report", NULL};
    long long pid;
    long span_kind, begin_kind, end_kind;
    PyObject *report;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "LlllO:Nester", keywords, &pid, &span_kind,
                                     &begin_kind, &end_kind, &report))
        return NULL;
    cw_nester *self = (cw_nester *)cw_reader_new(type, report);
    if (self == NULL) return NULL;
    self->pid = pid;
    self->span_kind = span_kind;
    self->begin_kind = begin_kind;
    self->end_kind = end_kind;
    return (PyObject *)self;
}

static void cw_groups_free(cw_nester *self) {
    for (size_t i = 0; i < self->bucket_count; i++) {
        while (self->buckets[i]) {
            cw_group *group = self->buckets[i];
            self->buckets[i] = group->next_in_bucket;
            cw_group_free(group);
        }
    }
    free(self->buckets);
    self->buckets = NULL;
    self->bucket_count = 0;
    self->group_count = 0;
}

static void cw_nester_dealloc(cw_nester *self) {
    cw_groups_free(self);
    cw_numbering_free(&self->threads);
    cw_reader_dealloc((cw_reader *)self);
}

typedef struct {
    Py_buffer view;
    int held;
} cw_column;

static void cw_columns_release(cw_column *columns, int count) {
    for (int i = 0; i < count; i++)
        if (columns[i].held) PyBuffer_Release(&columns[i].view);
}

/* add(kinds, threads, levels, names, begin_ns, end_ns, texts): one chunk's span records, in
 * file order: six int64 arrays of one length (names: numbers into the list `texts`). */
static PyObject *cw_add(cw_nester *self, PyObject *args) {
    PyObject *objects[6], *texts;
    if (!PyArg_ParseTuple(args, "OOOOOOO!:add", &objects[0], &objects[1], &objects[2],
                          &objects[3], &objects[4], &objects[5], &PyList_Type, &texts))
        return NULL;
    if (self->finished || self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the nester has finished, or is busy");
        return NULL;
    }
    cw_column columns[6] = {0};
    Py_ssize_t length = -1;
    for (int i = 0; i < 6; i++) {
        if (PyObject_GetBuffer(objects[i], &columns[i].view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) <
            0) {
            cw_columns_release(columns, i);
            return NULL;
        }
        columns[i].held = 1;
        const char *format = columns[i].view.format;
        int wide = columns[i].view.itemsize == 8 && format != NULL &&
                   (strcmp(format, "q") == 0 || strcmp(format, "l") == 0 ||
                    strcmp(format, "=q") == 0 || strcmp(format, "<q") == 0);
        Py_ssize_t count = columns[i].view.len / 8;
        if (!wide || (length >= 0 && count != length)) {
            cw_columns_release(columns, i + 1);
            PyErr_SetString(PyExc_ValueError, "add: expected six int64 arrays of one length");
            return NULL;
        }
        length = count;
    }
    const int64_t *kinds = columns[0].view.buf, *tids = columns[1].view.buf,
                  *levels = columns[2].view.buf, *names = columns[3].view.buf,
                  *begins = columns[4].view.buf, *ends = columns[5].view.buf;
    int failed = 0;
    self->busy = 1;
    Py_ssize_t last_thread = -1;
    int64_t last_tid = 0;
    for (Py_ssize_t i = 0; i < length && !failed; i++) {
        if (names[i] < 0 || names[i] >= PyList_GET_SIZE(texts)) {
            PyErr_SetString(PyExc_IndexError, "add: a name number beyond the texts");
            failed = 1;
            break;
        }
        /* held: report runs Python, which could change the list */
        PyObject *name = Py_NewRef(PyList_GET_ITEM(texts, names[i]));
        if (cw_text(name, "name") < 0 || levels[i] < 0 || levels[i] >= INT64_MAX) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "add: a negative level");
            Py_DECREF(name);
            failed = 1;
            break;
        }
        Py_ssize_t thread = last_thread;
        if (thread < 0 || tids[i] != last_tid) {
            thread = cw_thread_of(self, tids[i]);
            if (thread < 0) {
                Py_DECREF(name);
                failed = 1;
                break;
            }
            last_thread = thread;
            last_tid = tids[i];
        }
        if (kinds[i] == self->span_kind)
            failed = cw_span_record(self, thread, name, levels[i], begins[i], ends[i]) < 0;
        else if (kinds[i] == self->begin_kind)
            failed = cw_begin_record(self, thread, name, levels[i], begins[i]) < 0;
        else if (kinds[i] == self->end_kind)
            failed = cw_end_record(self, thread, name, begins[i]) < 0;
        Py_DECREF(name);
    }
    self->busy = 0;
    cw_columns_release(columns, 6);
    if (failed) return NULL;
    Py_RETURN_NONE;
}

static int cw_by_thread_level(const void *left, const void *right) {
    const cw_group *a = *(cw_group *const *)left, *b = *(cw_group *const *)right;
    if (a->thread != b->thread) return a->thread < b->thread ? -1 : 1;
    return a->level < b->level ? -1 : a->level > b->level;
}

/* finish(): ThreadNester.finish for every thread, in the order first seen. */
static PyObject *cw_finish(cw_nester *self, PyObject *unused) {
    (void)unused;
    if (self->finished || self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the nester has finished, or is busy");
        return NULL;
    }
    self->finished = 1;
    Py_ssize_t count = self->group_count;
    if ((size_t)count > SIZE_MAX / sizeof(cw_group *)) return PyErr_NoMemory();
    cw_group **groups = malloc((size_t)(count ? count : 1) * sizeof(cw_group *));
    if (groups == NULL) return PyErr_NoMemory();
    Py_ssize_t found = 0;
    for (size_t i = 0; i < self->bucket_count; i++)
        for (cw_group *group = self->buckets[i]; group; group = group->next_in_bucket)
            groups[found++] = group;
    qsort(groups, (size_t)found, sizeof(cw_group *), cw_by_thread_level);
    int failed = 0;
    for (Py_ssize_t i = 0; i < found && !failed; i++)
        failed = cw_report_begins(self, groups[i], NULL) < 0 ||
                 cw_group_count(self, groups[i]) < 0;
    free(groups);
    cw_groups_free(self);
    if (failed) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef cw_nester_methods[] = {
    {"add", (PyCFunction)cw_add, METH_VARARGS,
     "add(kinds, threads, levels, names, begin_ns, end_ns, texts): a chunk's span records."},
    {"finish", (PyCFunction)cw_finish, METH_NOARGS,
     "The records ended: count what still waits, report the begins still open."},
    CW_READER_METHODS,
    {NULL, NULL, 0, NULL},
};

static PyTypeObject cw_nester_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cutaway._cwsdk.Nester",
    .tp_basicsize = sizeof(cw_nester),
    .tp_dealloc = (destructor)cw_nester_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Nester(pid, span_kind, begin_kind, end_kind, report): a span file's records "
              "into phase sums.",
    .tp_methods = cw_nester_methods,
    .tp_new = cw_nester_new,
};

static struct PyModuleDef cw_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "cutaway._cwsdk",
    .m_doc = "The span SDK reader's native nester and counter (records.stream_span_file).",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__cwsdk(void) { return cw_reader_module(&cw_module, &cw_nester_type); }
