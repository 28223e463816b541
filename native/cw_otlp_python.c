/*
 * cw_otlp_python.c: cutaway._cwotlp, the native nester and counter of the OTLP reader
 * (src/cutaway/probes/spans/otlp.py, stream_otlp).
 *
 * The reader decodes each line in Python (msgspec, or json.loads and the field checks) and
 * hands its spans here: this module holds them by trace (at most the held-span limit, past
 * it the traces whose lines are the oldest go first), nests each trace by parent span id,
 * walks each outermost span depth first into phase paths, and sums each operation into the
 * paths' totals and histograms, as otlp._TraceNester and PhaseAccumulator.add_numbered_tree
 * do in Python (the reference: the tests compare both on hostile input). At the end the
 * reader takes the totals (sums(), roots()) into its PhaseAccumulator.
 *
 * Names and ids stay Python str objects (compared as str compares them, hashed by Python's
 * cached hash), so that nothing is decoded or copied. Times are int64: a time past it raises
 * TooLarge, and the reader reads the file in Python, whose ints have no limit. Sums are 128
 * bits: 2^64 spans of 2^63 ns do not overflow them. Every walk is iterative (spans nest
 * 100,000 deep in hostile files), every size is checked before it is allocated, and memory
 * is the held spans (bounded by the limit, as in Python) and the distinct phase paths.
 *
 * Problems (a parent that is not in the file) are handed to the reader's callable in the
 * words and order of the Python nester.
 */
#include "cw_phases.h"

static PyObject *cw_too_large; /* the exception: a time past int64 */
static PyObject *cw_field_resources, *cw_field_scopes, *cw_field_spans, *cw_field_trace,
    *cw_field_span_id, *cw_field_parent, *cw_field_name, *cw_field_start, *cw_field_end;

/* ---- held spans ---- */

typedef struct {
    PyObject *span_id, *parent_id, *name; /* strong; parent_id NULL for none */
    int64_t start, end;
} cw_span;

typedef struct cw_trace {
    PyObject *trace; /* strong */
    Py_hash_t hash;
    cw_span *spans;
    Py_ssize_t count, capacity;
    struct cw_trace *older, *newer, *next_in_bucket;
    int64_t first_start; /* at the end of the file: its first operation's start */
} cw_trace;

/* ---- nesting scratch: one trace's ids ---- */

typedef struct {
    PyObject *id; /* borrowed from the trace's spans; NULL: an empty slot */
    Py_hash_t hash;
    Py_ssize_t kids_start, kids_count, kids_filled;
    uint64_t visited; /* the walk that reached it last */
} cw_id;

typedef struct {
    Py_ssize_t span;
    Py_ssize_t parent_path;
} cw_pending;

typedef struct {
    CW_READER_HEAD /* report: callable(message) */
    Py_ssize_t held_limit;
    PyObject *source; /* str: problems name the file so */
    /* held traces: a hash table by trace, and a list from the oldest (least recently added) */
    cw_trace **buckets;
    size_t bucket_count;
    Py_ssize_t trace_count, held_spans;
    cw_trace *oldest, *newest, *last;
    Py_ssize_t traces, unnested;
    /* scratch, reused from trace to trace */
    cw_id *ids;
    size_t id_size, id_mask;
    Py_ssize_t *span_entry, *parent_entry, *order, *kids, *roots;
    Py_ssize_t span_capacity, order_capacity, kids_capacity, roots_capacity, parent_capacity;
    cw_pending *stack;
    Py_ssize_t stack_capacity;
    uint64_t walk_stamp;
    /* one line's spans before they are held */
    cw_span *line;
    PyObject **line_traces;
    Py_ssize_t line_count, line_capacity, line_traces_capacity;
} cw_nester;

/* ---- nesting one trace (otlp._TraceNester.trees) ---- */

static int cw_by_start(const void *left, const void *right, void *spans) {
    Py_ssize_t a = *(const Py_ssize_t *)left, b = *(const Py_ssize_t *)right;
    int64_t start_a = ((cw_span *)spans)[a].start, start_b = ((cw_span *)spans)[b].start;
    if (start_a != start_b) return start_a < start_b ? -1 : 1;
    return a < b ? -1 : a > b; /* stable: ties in the order they came */
}

/* The id table's slot of `id`, or of the empty slot where it would go. */
static size_t cw_id_slot(cw_nester *self, PyObject *id, Py_hash_t hash) {
    size_t mask = self->id_mask;
    size_t slot = (size_t)hash & mask;
    while (self->ids[slot].id != NULL &&
           !(self->ids[slot].hash == hash && cw_equal(self->ids[slot].id, id)))
        slot = (slot + 1) & mask;
    return slot;
}

static int cw_report_orphan(cw_nester *self, PyObject *trace, cw_span *span) {
    PyObject *shown = PyObject_Repr(span->name);
    if (shown == NULL) return -1;
    PyObject *message = PyUnicode_FromFormat(
        "%U: span %U of trace %U: its parent %U is not in the file; taken as outermost",
        self->source, shown, trace, span->parent_id);
    Py_DECREF(shown);
    if (message == NULL) return -1;
    PyObject *result = PyObject_CallOneArg(self->report, message);
    Py_DECREF(message);
    if (result == NULL) return -1;
    Py_DECREF(result);
    return 0;
}

/* Walk one outermost span's operation depth first into the phases' tree (its paths in the order
 * they are first met) and count it. */
static int cw_walk(cw_nester *self, cw_span *spans, Py_ssize_t root, int repeated_ids,
                   Py_ssize_t *nested) {
    uint64_t walk = ++self->walk_stamp;
    cw_tree_begin(&self->phases);
    Py_ssize_t entries = 0, depth = 0;
    self->stack[depth++] = (cw_pending){root, 0};
    while (depth) {
        cw_pending pending = self->stack[--depth];
        cw_span *span = &spans[pending.span];
        cw_id *id = &self->ids[self->span_entry[pending.span]];
        if (repeated_ids) {
            if (id->visited == walk) continue; /* reached again through a repeated id */
            id->visited = walk;
        }
        (*nested)++;
        Py_ssize_t number = CW_NO_PHASE;
        if (pending.parent_path != CW_NO_PHASE) {
            number = cw_step(&self->phases, pending.parent_path, span->name);
            if (number == -2) return -1;
            if (number != CW_NO_PHASE &&
                cw_tree_add(&self->phases, &entries, number,
                            (cw_wide)span->end - (cw_wide)span->start, 1) < 0)
                return -1;
        }
        /* each id's children are pushed once per walk (or each span's, without repeated
         * ids): the stack never holds more than the trace's spans and the root */
        if (id->kids_count > self->stack_capacity - depth) {
            PyErr_SetString(PyExc_RuntimeError, "cutaway._cwotlp: the walk outgrew its stack");
            return -1;
        }
        for (Py_ssize_t kid = id->kids_count; kid-- > 0;)
            self->stack[depth++] = (cw_pending){self->kids[id->kids_start + kid], number};
    }
    return cw_count_tree(&self->phases, NULL, entries);
}

enum { CW_PROBLEMS = 1, CW_COUNT = 2 };

/* Nest one trace: its problems (CW_PROBLEMS), and its operations counted (CW_COUNT); its
 * first operation's start in trace->first_start. */
static int cw_nest(cw_nester *self, cw_trace *trace, int what) {
    Py_ssize_t count = trace->count;
    cw_span *spans = trace->spans;
    size_t id_size = cw_table_size(count);
    if (id_size == 0 || id_size > SIZE_MAX / sizeof(cw_id)) {
        PyErr_NoMemory();
        return -1;
    }
    if (id_size > self->id_size) {
        free(self->ids);
        self->ids = malloc(id_size * sizeof(cw_id));
        self->id_size = self->ids ? id_size : 0;
        if (self->ids == NULL) {
            PyErr_NoMemory();
            return -1;
        }
    }
    if (count >= PY_SSIZE_T_MAX - 1 ||
        CW_RESERVE(self->span_entry, self->span_capacity, count) < 0 ||
        CW_RESERVE(self->parent_entry, self->parent_capacity, count) < 0 ||
        CW_RESERVE(self->order, self->order_capacity, count) < 0 ||
        CW_RESERVE(self->kids, self->kids_capacity, count) < 0 ||
        CW_RESERVE(self->roots, self->roots_capacity, count) < 0 ||
        CW_RESERVE(self->stack, self->stack_capacity, count + 1) < 0)
        return -1;
    /* only the part this trace uses: a trace of 10 spans after one of 100,000 */
    self->id_mask = id_size - 1;
    for (size_t i = 0; i <= self->id_mask; i++) self->ids[i].id = NULL;
    Py_ssize_t distinct = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_hash_t hash = PyObject_Hash(spans[i].span_id);
        if (hash == -1) return -1;
        size_t slot = cw_id_slot(self, spans[i].span_id, hash);
        cw_id *id = &self->ids[slot];
        if (id->id == NULL) {
            *id = (cw_id){spans[i].span_id, hash, 0, 0, 0, 0};
            distinct++;
        }
        self->span_entry[i] = (Py_ssize_t)slot;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        self->parent_entry[i] = -1; /* outermost: no parent, or one not in the trace */
        PyObject *parent = spans[i].parent_id;
        if (parent == NULL) continue;
        Py_hash_t hash = PyObject_Hash(parent);
        if (hash == -1) return -1;
        size_t slot = cw_id_slot(self, parent, hash);
        /* a parent id that is its own id is no parent */
        if (self->ids[slot].id != NULL && (Py_ssize_t)slot != self->span_entry[i])
            self->parent_entry[i] = (Py_ssize_t)slot;
    }
    for (Py_ssize_t i = 0; i < count; i++) self->order[i] = i;
    qsort_r(self->order, (size_t)count, sizeof(Py_ssize_t), cw_by_start, spans);
    Py_ssize_t roots = 0;
    for (Py_ssize_t k = 0; k < count; k++) {
        Py_ssize_t i = self->order[k];
        if (self->parent_entry[i] >= 0)
            self->ids[self->parent_entry[i]].kids_count++;
        else
            self->roots[roots++] = i;
    }
    Py_ssize_t kids_start = 0; /* each id's children, in start order, one after another */
    for (size_t slot = 0; slot <= self->id_mask; slot++) {
        cw_id *id = &self->ids[slot];
        if (id->id == NULL || !id->kids_count) continue;
        id->kids_start = kids_start;
        kids_start += id->kids_count;
    }
    for (Py_ssize_t k = 0; k < count; k++) {
        Py_ssize_t i = self->order[k];
        if (self->parent_entry[i] < 0) continue;
        cw_id *parent = &self->ids[self->parent_entry[i]];
        self->kids[parent->kids_start + parent->kids_filled++] = i;
    }
    trace->first_start = roots ? spans[self->roots[0]].start : 0;
    if (what & CW_PROBLEMS) { /* in the order the spans came */
        for (Py_ssize_t i = 0; i < count; i++) {
            if (spans[i].parent_id != NULL && self->parent_entry[i] < 0 &&
                cw_report_orphan(self, trace->trace, &spans[i]) < 0)
                return -1;
        }
    }
    if (!(what & CW_COUNT)) return 0;
    Py_ssize_t nested = 0;
    int repeated_ids = distinct < count;
    for (Py_ssize_t r = 0; r < roots; r++)
        if (cw_walk(self, spans, self->roots[r], repeated_ids, &nested) < 0) return -1;
    if (nested < count) self->unnested += count - nested; /* in a cycle of parent ids */
    return 0;
}

/* ---- held traces ---- */

static void cw_trace_free(cw_trace *trace) {
    for (Py_ssize_t i = 0; i < trace->count; i++) {
        Py_DECREF(trace->spans[i].span_id);
        Py_XDECREF(trace->spans[i].parent_id);
        Py_DECREF(trace->spans[i].name);
    }
    free(trace->spans);
    Py_DECREF(trace->trace);
    free(trace);
}

static void cw_unlink(cw_nester *self, cw_trace *trace) {
    cw_trace **link = &self->buckets[(size_t)trace->hash & (self->bucket_count - 1)];
    while (*link != trace) link = &(*link)->next_in_bucket;
    *link = trace->next_in_bucket;
    if (trace->older) trace->older->newer = trace->newer;
    else self->oldest = trace->newer;
    if (trace->newer) trace->newer->older = trace->older;
    else self->newest = trace->older;
    if (self->last == trace) self->last = NULL;
    self->trace_count--;
    self->held_spans -= trace->count;
}

static int cw_buckets_grow(cw_nester *self) {
    size_t count = self->bucket_count ? self->bucket_count * 2 : 1024;
    cw_trace **buckets = cw_new_array(count, sizeof(cw_trace *));
    if (buckets == NULL) return -1;
    for (cw_trace *trace = self->oldest; trace; trace = trace->newer) {
        size_t slot = (size_t)trace->hash & (count - 1);
        trace->next_in_bucket = buckets[slot];
        buckets[slot] = trace;
    }
    free(self->buckets);
    self->buckets = buckets;
    self->bucket_count = count;
    return 0;
}

/* The held trace `name`, made the most recently added (a new one if none). */
static cw_trace *cw_trace_of(cw_nester *self, PyObject *name) {
    cw_trace *trace = self->last;
    if (trace == NULL || !cw_equal(trace->trace, name)) {
        Py_hash_t hash = PyObject_Hash(name);
        if (hash == -1) return NULL;
        if ((size_t)self->trace_count >= self->bucket_count && cw_buckets_grow(self) < 0)
            return NULL;
        trace = self->buckets[(size_t)hash & (self->bucket_count - 1)];
        while (trace && !(trace->hash == hash && cw_equal(trace->trace, name)))
            trace = trace->next_in_bucket;
        if (trace == NULL) {
            trace = calloc(1, sizeof(cw_trace));
            if (trace == NULL) {
                PyErr_NoMemory();
                return NULL;
            }
            trace->trace = Py_NewRef(name);
            trace->hash = hash;
            size_t slot = (size_t)hash & (self->bucket_count - 1);
            trace->next_in_bucket = self->buckets[slot];
            self->buckets[slot] = trace;
            trace->older = self->newest;
            if (self->newest) self->newest->newer = trace;
            else self->oldest = trace;
            self->newest = trace;
            self->trace_count++;
        }
        self->last = trace;
    }
    if (trace != self->newest) { /* now the most recently added */
        if (trace->older) trace->older->newer = trace->newer;
        else self->oldest = trace->newer;
        trace->newer->older = trace->older;
        trace->older = self->newest;
        trace->newer = NULL;
        self->newest->newer = trace;
        self->newest = trace;
    }
    return trace;
}

/* Let the oldest trace go: nested, its operations counted. */
static int cw_let_go_oldest(cw_nester *self) {
    cw_trace *trace = self->oldest;
    cw_unlink(self, trace);
    self->traces++;
    int failed = cw_nest(self, trace, CW_PROBLEMS | CW_COUNT);
    cw_trace_free(trace);
    return failed;
}

/* Empty self->line, releasing the references of its spans from the `first` on (those before
 * it are held). */
static void cw_line_clear(cw_nester *self, Py_ssize_t first) {
    for (Py_ssize_t i = first; i < self->line_count; i++) {
        Py_DECREF(self->line[i].span_id);
        Py_XDECREF(self->line[i].parent_id);
        Py_DECREF(self->line[i].name);
        Py_DECREF(self->line_traces[i]);
    }
    self->line_count = 0;
}

/* Hold self->line's spans (references taken), then let the oldest traces go while more than
 * the limit are held; the line's references are released in any case. */
static int cw_hold_line(cw_nester *self) {
    int failed = 0;
    Py_ssize_t i = 0;
    for (; i < self->line_count && !failed; i++) {
        cw_trace *trace = cw_trace_of(self, self->line_traces[i]);
        if (trace == NULL || CW_RESERVE(trace->spans, trace->capacity, trace->count + 1) < 0) {
            failed = -1;
            break;
        }
        trace->spans[trace->count++] = self->line[i]; /* the references move */
        self->held_spans++;
        Py_DECREF(self->line_traces[i]);
    }
    cw_line_clear(self, i);
    while (!failed && self->held_spans > self->held_limit && self->trace_count > 1)
        failed = cw_let_go_oldest(self);
    return failed;
}

/* Append a span to self->line, taking the references given (NULL parent: none). */
static int cw_line_append(cw_nester *self, PyObject *trace, PyObject *span_id, PyObject *parent,
                          PyObject *name, int64_t start, int64_t end) {
    if (CW_RESERVE(self->line, self->line_capacity, self->line_count + 1) < 0 ||
        CW_RESERVE(self->line_traces, self->line_traces_capacity, self->line_count + 1) < 0) {
        Py_DECREF(trace);
        Py_DECREF(span_id);
        Py_XDECREF(parent);
        Py_DECREF(name);
        return -1;
    }
    self->line[self->line_count] = (cw_span){span_id, parent, name, start, end};
    self->line_traces[self->line_count++] = trace;
    return 0;
}

/* ---- times ---- */

enum { CW_TIME_OK = 0, CW_TIME_BAD = 1, CW_TIME_ERROR = -1 };

/* A time as the typed decoder took it (a str of ASCII digits, or an int >= 0): CW_TIME_BAD
 * for anything else (the line goes to json.loads and the field checks), TooLarge past int64. */
static int cw_time(PyObject *value, int64_t *time) {
    if (PyUnicode_Check(value)) {
        if (PyUnicode_READY(value) < 0) return CW_TIME_ERROR;
        Py_ssize_t length = PyUnicode_GET_LENGTH(value);
        if (length == 0 || PyUnicode_KIND(value) != PyUnicode_1BYTE_KIND) return CW_TIME_BAD;
        const Py_UCS1 *digits = PyUnicode_1BYTE_DATA(value);
        uint64_t number = 0;
        for (Py_ssize_t i = 0; i < length; i++) {
            if (digits[i] < '0' || digits[i] > '9') return CW_TIME_BAD;
        }
        for (Py_ssize_t i = 0; i < length; i++) {
            unsigned digit = digits[i] - '0';
            if (number > ((uint64_t)INT64_MAX - digit) / 10) {
                PyErr_SetString(cw_too_large, "a time past int64");
                return CW_TIME_ERROR;
            }
            number = number * 10 + digit;
        }
        *time = (int64_t)number;
        return CW_TIME_OK;
    }
    if (PyLong_Check(value) && !PyBool_Check(value)) {
        int overflow = 0;
        long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (overflow > 0) {
            PyErr_SetString(cw_too_large, "a time past int64");
            return CW_TIME_ERROR;
        }
        if (number == -1 && PyErr_Occurred()) return CW_TIME_ERROR;
        if (overflow < 0 || number < 0) return CW_TIME_BAD;
        *time = number;
        return CW_TIME_OK;
    }
    return CW_TIME_BAD;
}

/* ---- the type ---- */

static PyObject *cw_nester_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"held_spans", "source", "report", NULL};
    Py_ssize_t held_limit;
    PyObject *source, *report;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "nUO:Nester", keywords, &held_limit, &source,
                                     &report))
        return NULL;
    cw_nester *self = (cw_nester *)cw_reader_new(type, report);
    if (self == NULL) return NULL;
    self->held_limit = held_limit;
    self->source = Py_NewRef(source);
    return (PyObject *)self;
}

static void cw_nester_dealloc(cw_nester *self) {
    cw_line_clear(self, 0);
    while (self->oldest) {
        cw_trace *trace = self->oldest;
        cw_unlink(self, trace);
        cw_trace_free(trace);
    }
    free(self->buckets);
    free(self->ids);
    free(self->span_entry);
    free(self->parent_entry);
    free(self->order);
    free(self->kids);
    free(self->roots);
    free(self->stack);
    free(self->line);
    free(self->line_traces);
    Py_XDECREF(self->source);
    cw_reader_dealloc((cw_reader *)self);
}

static int cw_not_finished(cw_nester *self) {
    if (!self->finished) return 1;
    PyErr_SetString(PyExc_RuntimeError, "the nester has finished");
    return 0;
}

/* A field of a decoded struct, as a new reference; NULL with an exception. */
static PyObject *cw_field(PyObject *item, PyObject *field) {
    return PyObject_GetAttr(item, field);
}

/* Collect one scope's spans into self->line: 1 taken, 0 not taken (a time the typed decoder
 * passes but the reader does not: the line goes to the field checks), -1 on error. */
static int cw_scope_spans(cw_nester *self, PyObject *spans) {
    if (!PyList_Check(spans)) return 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(spans); i++) {
        PyObject *span = PyList_GET_ITEM(spans, i);
        int64_t start = 0, end = 0;
        PyObject *value = cw_field(span, cw_field_start);
        if (value == NULL) return -1;
        int found = cw_time(value, &start);
        Py_DECREF(value);
        if (found != CW_TIME_OK) return found == CW_TIME_BAD ? 0 : -1;
        value = cw_field(span, cw_field_end);
        if (value == NULL) return -1;
        found = cw_time(value, &end);
        Py_DECREF(value);
        if (found != CW_TIME_OK) return found == CW_TIME_BAD ? 0 : -1;
        if (end < start) return 0; /* ends before it starts: the checks word it */
        PyObject *trace = cw_field(span, cw_field_trace);
        PyObject *span_id = trace ? cw_field(span, cw_field_span_id) : NULL;
        PyObject *name = span_id ? cw_field(span, cw_field_name) : NULL;
        PyObject *parent = name ? cw_field(span, cw_field_parent) : NULL;
        if (parent == NULL) {
            Py_XDECREF(trace);
            Py_XDECREF(span_id);
            Py_XDECREF(name);
            return -1;
        }
        int strings = PyUnicode_Check(trace) && PyUnicode_Check(span_id) &&
                      PyUnicode_Check(name) && (parent == Py_None || PyUnicode_Check(parent));
        if (!strings || PyUnicode_READY(trace) < 0 || PyUnicode_READY(span_id) < 0 ||
            PyUnicode_READY(name) < 0 || (parent != Py_None && PyUnicode_READY(parent) < 0)) {
            Py_DECREF(trace);
            Py_DECREF(span_id);
            Py_DECREF(name);
            Py_DECREF(parent);
            return strings ? -1 : 0;
        }
        if (parent == Py_None || PyUnicode_GET_LENGTH(parent) == 0) Py_CLEAR(parent);
        if (cw_line_append(self, trace, span_id, parent, name, start, end) < 0) return -1;
    }
    return 1;
}

/* add_line(line): a line as the typed decoder gave it (resourceSpans[].scopeSpans[].spans[],
 * each span's traceId, spanId, parentSpanId, name, startTimeUnixNano, endTimeUnixNano); True
 * when its spans are held, False when the reader must read it by the field checks. */
static PyObject *cw_add_line(cw_nester *self, PyObject *line) {
    if (!cw_not_finished(self)) return NULL;
    PyObject *resources = cw_field(line, cw_field_resources);
    if (resources == NULL) return NULL;
    int taken = PyList_Check(resources);
    for (Py_ssize_t r = 0; taken == 1 && r < PyList_GET_SIZE(resources); r++) {
        PyObject *scopes = cw_field(PyList_GET_ITEM(resources, r), cw_field_scopes);
        if (scopes == NULL) {
            taken = -1;
            break;
        }
        taken = PyList_Check(scopes);
        for (Py_ssize_t s = 0; taken == 1 && s < PyList_GET_SIZE(scopes); s++) {
            PyObject *spans = cw_field(PyList_GET_ITEM(scopes, s), cw_field_spans);
            if (spans == NULL) {
                taken = -1;
                break;
            }
            taken = cw_scope_spans(self, spans);
            Py_DECREF(spans);
        }
        Py_DECREF(scopes);
    }
    Py_DECREF(resources);
    if (taken != 1) {
        cw_line_clear(self, 0);
        if (taken < 0) return NULL;
        Py_RETURN_FALSE;
    }
    if (cw_hold_line(self) < 0) return NULL;
    Py_RETURN_TRUE;
}

/* add_spans(spans): a line's spans as the field checks gave them, each a tuple (trace, span
 * id, parent id or "", name, start ns, end ns). */
static PyObject *cw_add_spans(cw_nester *self, PyObject *spans) {
    if (!cw_not_finished(self)) return NULL;
    if (!PyList_Check(spans)) {
        PyErr_SetString(PyExc_TypeError, "add_spans: expected a list");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(spans); i++) {
        PyObject *span = PyList_GET_ITEM(spans, i);
        if (!PyTuple_Check(span) || PyTuple_GET_SIZE(span) != 6) {
            cw_line_clear(self, 0);
            PyErr_SetString(PyExc_TypeError, "add_spans: expected tuples of 6");
            return NULL;
        }
        PyObject *trace = PyTuple_GET_ITEM(span, 0), *span_id = PyTuple_GET_ITEM(span, 1);
        PyObject *parent = PyTuple_GET_ITEM(span, 2), *name = PyTuple_GET_ITEM(span, 3);
        int64_t start = 0, end = 0;
        int start_found = CW_TIME_BAD, end_found = CW_TIME_BAD;
        if (cw_text(trace, "trace") < 0 || cw_text(span_id, "span id") < 0 ||
            cw_text(parent, "parent id") < 0 || cw_text(name, "name") < 0 ||
            (start_found = cw_time(PyTuple_GET_ITEM(span, 4), &start)) == CW_TIME_ERROR ||
            (end_found = cw_time(PyTuple_GET_ITEM(span, 5), &end)) == CW_TIME_ERROR) {
            cw_line_clear(self, 0);
            return NULL;
        }
        if (start_found != CW_TIME_OK || end_found != CW_TIME_OK || end < start) {
            cw_line_clear(self, 0);
            PyErr_SetString(PyExc_ValueError, "add_spans: times must be ints, start <= end");
            return NULL;
        }
        PyObject *held_parent = PyUnicode_GET_LENGTH(parent) ? Py_NewRef(parent) : NULL;
        if (cw_line_append(self, Py_NewRef(trace), Py_NewRef(span_id), held_parent,
                           Py_NewRef(name), start, end) < 0) {
            cw_line_clear(self, 0);
            return NULL;
        }
    }
    if (cw_hold_line(self) < 0) return NULL;
    Py_RETURN_NONE;
}

static int cw_by_first_start(const void *left, const void *right) {
    const cw_trace *a = *(cw_trace *const *)left, *b = *(cw_trace *const *)right;
    if (a->first_start != b->first_start) return a->first_start < b->first_start ? -1 : 1;
    /* then by trace as Python orders str (by code point); two held traces never compare
     * equal */
    return PyUnicode_Compare(a->trace, b->trace);
}

/* finish(): nest the traces still held (each one's problems in the order they were held,
 * then their operations counted in the order of their first start, then trace); returns
 * (traces, spans not reached from an outermost span). */
static PyObject *cw_finish(cw_nester *self, PyObject *unused) {
    (void)unused;
    if (!cw_not_finished(self)) return NULL;
    self->finished = 1;
    Py_ssize_t count = self->trace_count;
    if ((size_t)count > SIZE_MAX / sizeof(cw_trace *)) return PyErr_NoMemory();
    cw_trace **traces = malloc((size_t)(count ? count : 1) * sizeof(cw_trace *));
    if (traces == NULL) return PyErr_NoMemory();
    Py_ssize_t i = 0;
    for (cw_trace *trace = self->oldest; trace; trace = trace->newer) traces[i++] = trace;
    int failed = 0;
    for (i = 0; i < count && !failed; i++) {
        self->traces++;
        failed = cw_nest(self, traces[i], CW_PROBLEMS);
    }
    if (!failed) qsort(traces, (size_t)count, sizeof(cw_trace *), cw_by_first_start);
    for (i = 0; i < count && !failed; i++) failed = cw_nest(self, traces[i], CW_COUNT);
    free(traces);
    while (self->oldest) {
        cw_trace *trace = self->oldest;
        cw_unlink(self, trace);
        cw_trace_free(trace);
    }
    if (failed) return NULL;
    return Py_BuildValue("nn", self->traces, self->unnested);
}

static PyMethodDef cw_nester_methods[] = {
    {"add_line", (PyCFunction)cw_add_line, METH_O,
     "Hold a typed line's spans; False when the line must be read by the field checks."},
    {"add_spans", (PyCFunction)cw_add_spans, METH_O,
     "Hold a line's spans: tuples (trace, id, parent id or '', name, start, end)."},
    {"finish", (PyCFunction)cw_finish, METH_NOARGS,
     "Nest and count the traces still held: (traces, spans in a cycle or repeating an id)."},
    CW_READER_METHODS,
    {NULL, NULL, 0, NULL},
};

static PyTypeObject cw_nester_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cutaway._cwotlp.Nester",
    .tp_basicsize = sizeof(cw_nester),
    .tp_dealloc = (destructor)cw_nester_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Nester(held_spans, source, report): an OTLP file's spans into phase sums.",
    .tp_methods = cw_nester_methods,
    .tp_new = cw_nester_new,
};

static struct PyModuleDef cw_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "cutaway._cwotlp",
    .m_doc = "The OTLP reader's native nester and counter (otlp.stream_otlp).",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__cwotlp(void) {
    const char *names[] = {"resourceSpans", "scopeSpans", "spans", "traceId",
                           "spanId", "parentSpanId", "name", "startTimeUnixNano",
                           "endTimeUnixNano"};
    PyObject **fields[] = {&cw_field_resources, &cw_field_scopes, &cw_field_spans,
                           &cw_field_trace, &cw_field_span_id, &cw_field_parent,
                           &cw_field_name, &cw_field_start, &cw_field_end};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        *fields[i] = PyUnicode_InternFromString(names[i]);
        if (*fields[i] == NULL) return NULL;
    }
    PyObject *module = cw_reader_module(&cw_module, &cw_nester_type);
    if (module == NULL) return NULL;
    cw_too_large = PyErr_NewException("cutaway._cwotlp.TooLarge", PyExc_OverflowError, NULL);
    if (cw_too_large == NULL || PyModule_AddObjectRef(module, "TooLarge", cw_too_large) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
