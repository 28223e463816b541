/* cw_fold: folds `perf script` output into FlameGraph's folded stacks, byte for byte as
 * cutaway's Python folder does (src/cutaway/probes/profile/fold.py: fold_lines, the reference,
 * itself inferno-collapse-perf 0.12's rules), only faster.
 *
 * Usage: cw_fold [--kernel] [--jit] [FILE]   (standard input without FILE)
 * Writes "stack weight\n" lines sorted by their bytes on standard output; exit 0. Exit 2 with
 * a message on standard error when the input cannot be read, 1 when memory runs out or the
 * output cannot be written.
 *
 * Input is read as UTF-8 the way Python's bytes.decode("utf-8", errors="replace") reads it:
 * every maximal ill-formed subsequence becomes U+FFFD, so the output equals the Python
 * folder's on the decoded text for any bytes at all. All text is handled as (pointer, length)
 * spans: a NUL byte is data. Whitespace is Rust's char::is_whitespace, as inferno trims. */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned __int128 cw_weight;

typedef struct {
    const char *p;
    size_t n;
} span;

typedef struct {
    char *p;
    size_t n, cap;
} buffer;

static void die_memory(void) {
    fputs("cw_fold: out of memory\n", stderr);
    exit(1);
}

static void buf_reserve(buffer *b, size_t more) {
    if (b->n + more <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + more) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) die_memory();
    b->p = p;
    b->cap = cap;
}

static void buf_add(buffer *b, const char *p, size_t n) {
    buf_reserve(b, n);
    if (n) memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void buf_addc(buffer *b, char c) {
    buf_reserve(b, 1);
    b->p[b->n++] = c;
}

/* ---- spans ------------------------------------------------------------------------------- */

static span sub(span s, size_t from, size_t to) {
    span r = {s.p + from, to - from};
    return r;
}

static int starts(span s, const char *prefix) {
    size_t n = strlen(prefix);
    return s.n >= n && memcmp(s.p, prefix, n) == 0;
}

static int ends(span s, const char *suffix) {
    size_t n = strlen(suffix);
    return s.n >= n && memcmp(s.p + s.n - n, suffix, n) == 0;
}

static int equals(span s, const char *text) {
    return s.n == strlen(text) && memcmp(s.p, text, s.n) == 0;
}

static long find(span s, const char *needle, size_t from) {
    size_t n = strlen(needle);
    for (size_t i = from; i + n <= s.n; i++)
        if (s.p[i] == needle[0] && memcmp(s.p + i, needle, n) == 0) return (long)i;
    return -1;
}

static long rfind(span s, const char *needle) {
    size_t n = strlen(needle);
    if (s.n < n) return -1;
    for (size_t i = s.n - n + 1; i-- > 0;)
        if (memcmp(s.p + i, needle, n) == 0) return (long)i;
    return -1;
}

static long find_char(span s, char c, size_t from) {
    if (from >= s.n) return -1;
    const char *hit = memchr(s.p + from, c, s.n - from);
    return hit ? hit - s.p : -1;
}

static long rfind_char(span s, char c) {
    for (size_t i = s.n; i-- > 0;)
        if (s.p[i] == c) return (long)i;
    return -1;
}

/* Length of the whitespace character starting at s.p[i], or 0. */
static size_t space_at(span s, size_t i) {
    const unsigned char *u = (const unsigned char *)s.p + i;
    size_t left = s.n - i;
    if (left == 0) return 0;
    if (u[0] == ' ' || (u[0] >= '\t' && u[0] <= '\r')) return 1;
    if (u[0] < 0xC2 || left < 2) return 0;
    if (u[0] == 0xC2) return (u[1] == 0x85 || u[1] == 0xA0) ? 2 : 0;
    if (left < 3) return 0;
    if (u[0] == 0xE1) return (u[1] == 0x9A && u[2] == 0x80) ? 3 : 0;
    if (u[0] == 0xE2 && u[1] == 0x80)
        return (u[2] <= 0x8A || u[2] == 0xA8 || u[2] == 0xA9 || u[2] == 0xAF) && u[2] >= 0x80 ? 3 : 0;
    if (u[0] == 0xE2) return (u[1] == 0x81 && u[2] == 0x9F) ? 3 : 0;
    if (u[0] == 0xE3) return (u[1] == 0x80 && u[2] == 0x80) ? 3 : 0;
    return 0;
}

/* Length of the whitespace character ending at s.p[s.n], or 0 (valid UTF-8 assumed). */
static size_t space_before(span s) {
    const unsigned char *u = (const unsigned char *)s.p;
    size_t n = s.n;
    if (n == 0) return 0;
    if (u[n - 1] == ' ' || (u[n - 1] >= '\t' && u[n - 1] <= '\r')) return 1;
    if (u[n - 1] < 0x80) return 0;
    if (n >= 2 && u[n - 2] == 0xC2) return (u[n - 1] == 0x85 || u[n - 1] == 0xA0) ? 2 : 0;
    if (n >= 3 && u[n - 3] >= 0xE0 && u[n - 3] <= 0xEF) return space_at(s, n - 3) == 3 ? 3 : 0;
    return 0;
}

static span lstrip(span s) {
    size_t k;
    while ((k = space_at(s, 0)) > 0) {
        s.p += k;
        s.n -= k;
    }
    return s;
}

static span rstrip(span s) {
    size_t k;
    while ((k = space_before(s)) > 0) s.n -= k;
    return s;
}

static span strip(span s) { return rstrip(lstrip(s)); }

static int is_hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* ---- the event line ---------------------------------------------------------------------- */

typedef struct {
    span comm;
    int has_event;
    span event;
    int has_period;
    uint64_t period;
    int has_inline;
    span inline_frame;
} header;

/* Rust's u64 parse of "+?[0-9]+": 1 and the value when it fits. */
static int parse_period(span s, uint64_t *out) {
    size_t i = 0;
    if (s.n && s.p[0] == '+') i = 1;
    if (i == s.n) return 0;
    uint64_t value = 0;
    for (; i < s.n; i++) {
        if (s.p[i] < '0' || s.p[i] > '9') return 0;
        unsigned digit = (unsigned)(s.p[i] - '0');
        if (value > (UINT64_MAX - digit) / 10) return 0;
        value = value * 10 + digit;
    }
    *out = value;
    return 1;
}

static int is_tid_char(char c) { return (c >= '0' && c <= '9') || c == '/'; }

/* fold.py's parse_event_line: 0 for a line that is not an event line. */
static int parse_header(span line, header *h) {
    size_t start = 0, end = 0;
    int found = 0;
    for (size_t i = 1; i < line.n; i++) {
        if (line.p[i - 1] != ' ' || !is_tid_char(line.p[i])) continue;
        size_t j = i;
        while (j < line.n && is_tid_char(line.p[j])) j++;
        if (j < line.n && line.p[j] == ' ') {
            start = i;
            end = j;
            found = 1;
            break;
        }
        i = j;
    }
    if (!found) return 0;
    memset(h, 0, sizeof *h);
    h->comm = strip(sub(line, 0, start - 1));
    span after = sub(line, end + 1, line.n);
    long c1 = find_char(after, ':', 0);
    if (c1 < 0) return 1;
    long c2 = find_char(after, ':', (size_t)c1 + 1);
    span part1 = sub(after, (size_t)c1 + 1, c2 < 0 ? after.n : (size_t)c2);
    long space = rfind_char(part1, ' ');
    h->has_event = 1;
    if (space < 0) {
        h->event = part1;
    } else {
        h->event = sub(part1, (size_t)space + 1, part1.n);
        span before = sub(part1, 0, (size_t)space);
        long previous = rfind_char(before, ' ');
        span candidate = previous < 0 ? before : sub(before, (size_t)previous + 1, before.n);
        h->has_period = parse_period(candidate, &h->period);
    }
    if (c2 >= 0) {
        span post = sub(after, (size_t)c2 + 1, after.n);
        long colon = find_char(post, ':', 0), blank = find_char(post, ' ', 0);
        long cut = colon < 0 ? blank : (blank < 0 ? colon : (colon < blank ? colon : blank));
        post = strip(sub(post, (size_t)(cut + 1), post.n));
        if (post.n) {
            h->has_inline = 1;
            h->inline_frame = post;
        }
    }
    return 1;
}

/* ---- one stack line ---------------------------------------------------------------------- */

typedef struct {
    int annotate_kernel, annotate_jit;
} options;

static int is_kernel_module(span module) {
    if (equals(module, "[unknown]")) return 0;
    if (starts(module, "[") || ends(module, ".ko")) return 1;
    long at = rfind(module, "vmlinux");
    if (at < 0) return 0;
    for (size_t i = (size_t)at + 7; i < module.n; i++) {
        char c = module.p[i];
        int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == '-';
        if (!ok) return 0;
    }
    return 1;
}

static int is_jit_module(span module) {
    return (starts(module, "/tmp/perf-") && ends(module, ".map")) ||
           (find(module, "/jitted-", 0) >= 0 && ends(module, ".so"));
}

static const char *const RUST_ESCAPES[][2] = {
    {"$SP$", "@"},  {"$BP$", "*"},  {"$RF$", "&"},  {"$LT$", "<"},   {"$GT$", ">"},
    {"$LP$", "("},  {"$RP$", ")"},  {"$C$", ","},   {"$u7e$", "~"},  {"$u20$", " "},
    {"$u27$", "'"}, {"$u3d$", "="}, {"$u5b$", "["}, {"$u5d$", "]"},  {"$u7b$", "{"},
    {"$u7d$", "}"}, {"$u3b$", ";"}, {"$u2b$", "+"}, {"$u21$", "!"},  {"$u22$", "\""},
};

/* fold.py's demangle_rust_leftovers into out (which it clears); 0 when the symbol is not one
 * (then out is untouched and the symbol stays as it is). */
static int demangle_rust(span symbol, buffer *out) {
    if (symbol.n < 17 || symbol.p[symbol.n - 17] != 'h') return 0;
    for (size_t i = symbol.n - 16; i < symbol.n; i++)
        if (!is_hex(symbol.p[i])) return 0;
    span rest = sub(symbol, 0, symbol.n - 17);
    if (ends(rest, "::")) rest.n -= 2;
    if (starts(rest, "_$")) rest = sub(rest, 1, rest.n);
    out->n = 0;
    while (rest.n) {
        if (rest.p[0] == '.') {
            if (rest.n > 1 && rest.p[1] == '.') {
                buf_add(out, "::", 2);
                rest = sub(rest, 2, rest.n);
            } else {
                buf_addc(out, '.');
                rest = sub(rest, 1, rest.n);
            }
        } else if (rest.p[0] == '$') {
            size_t k, count = sizeof RUST_ESCAPES / sizeof RUST_ESCAPES[0];
            for (k = 0; k < count; k++)
                if (starts(rest, RUST_ESCAPES[k][0])) break;
            if (k == count) {
                buf_add(out, rest.p, rest.n);
                break;
            }
            buf_add(out, RUST_ESCAPES[k][1], strlen(RUST_ESCAPES[k][1]));
            rest = sub(rest, strlen(RUST_ESCAPES[k][0]), rest.n);
        } else {
            size_t cut = 0;
            while (cut < rest.n && rest.p[cut] != '$' && rest.p[cut] != '.') cut++;
            buf_add(out, rest.p, cut);
            rest = sub(rest, cut, rest.n);
        }
    }
    return 1;
}

/* fold.py's tidy_function: the length of name to keep (';' is replaced by the caller). */
static size_t tidy_length(span name) {
    long depth = 0, last_dot = -1;
    for (size_t i = 0; i < name.n; i++) {
        char c = name.p[i];
        if (c == '<' || c == '{' || c == '[') {
            depth++;
        } else if (c == '>' || c == '}' || c == ']' || c == ')') {
            depth--;
        } else if (c == '(') {
            if (depth == 0) {
                int go_method = last_dot == (long)i;
                if (!go_method && !starts(sub(name, i, name.n), "(anonymous namespace)")) return i;
            }
            depth++;
        } else if (c == '.') {
            last_dot = (long)i + 1;
        }
    }
    return name.n;
}

typedef struct {
    buffer text;     /* the frames of the current event, one after another */
    buffer ends;     /* size_t offsets into text where each frame ends */
    buffer groups;   /* size_t: number of frames in each stack line's group, leaf first */
    buffer scratch;  /* demangling, the [module] name */
} stack;

static void add_frame(stack *st, span part, span module, int java, int first, const options *o) {
    size_t begin = st->text.n;
    size_t keep = tidy_length(part);
    buf_add(&st->text, part.p, keep);
    char *p = st->text.p + begin;
    for (size_t i = 0; i < keep; i++)
        if (p[i] == ';') p[i] = ':';
    span func = {st->text.p + begin, keep};
    if (java && starts(func, "L") && memchr(func.p, '/', func.n)) {
        memmove(st->text.p + begin, st->text.p + begin + 1, keep - 1);
        st->text.n--;
        func.n--;
    }
    if (!first) {
        if (find(func, "_[i]", 0) < 0) buf_add(&st->text, "_[i]", 4);
    } else if (o->annotate_kernel && is_kernel_module(module)) {
        buf_add(&st->text, "_[k]", 4);
    } else if (o->annotate_jit && is_jit_module(module) && find(func, "_[j]", 0) < 0) {
        buf_add(&st->text, "_[j]", 4);
    }
    size_t end = st->text.n;
    buf_add(&st->ends, (const char *)&end, sizeof end);
}

/* fold.py's fold_stack_line, appending the line's frames (a group) to st. */
static void fold_stack_line(stack *st, span line, int java, const options *o) {
    line = lstrip(line);
    long space = find_char(line, ' ', 0);
    if (space < 0) return;
    span rest = sub(line, (size_t)space + 1, line.n);
    long last = rfind_char(rest, ' ');
    if (last < 0) return;
    span module = sub(rest, (size_t)last + 1, rest.n);
    if (module.n < 2 || module.p[0] != '(' || module.p[module.n - 1] != ')') return;
    module = sub(module, 1, module.n - 1);
    span raw = strip(sub(rest, 0, (size_t)last));
    if (raw.n == 0) raw = (span){" ", 1};
    long offset = rfind(raw, "+0x");
    if (offset >= 0) {
        size_t i = (size_t)offset + 3;
        while (i < raw.n && is_hex(raw.p[i])) i++;
        if (i == raw.n) raw.n = (size_t)offset;
    }
    if (starts(raw, "(")) return;
    buffer demangled = {0};
    if (demangle_rust(raw, &st->scratch)) {
        /* frames are written into st->text; keep the demangled copy apart from scratch, which
         * the [module] name below reuses */
        buf_add(&demangled, st->scratch.p, st->scratch.n);
        raw = (span){demangled.p ? demangled.p : "", demangled.n};
    }
    size_t count = 0, from = 0;
    for (;;) {
        long arrow = find(raw, "->", from);
        size_t to = arrow < 0 ? raw.n : (size_t)arrow;
        span part = sub(raw, from, to);
        if (equals(part, "[unknown]") && !equals(module, "[unknown]")) {
            long slash = rfind_char(module, '/');
            st->scratch.n = 0;
            buf_addc(&st->scratch, '[');
            buf_add(&st->scratch, module.p + slash + 1, module.n - (size_t)(slash + 1));
            buf_addc(&st->scratch, ']');
            part = (span){st->scratch.p, st->scratch.n};
        }
        add_frame(st, part, module, java, count == 0, o);
        count++;
        if (arrow < 0) break;
        from = (size_t)arrow + 2;
    }
    free(demangled.p);
    buf_add(&st->groups, (const char *)&count, sizeof count);
}

/* ---- the table of stacks ----------------------------------------------------------------- */

typedef struct {
    uint64_t hash;
    size_t offset, length; /* the key in keys */
    cw_weight weight;
    int used;
} slot;

typedef struct {
    slot *slots;
    size_t capacity, count;
    buffer keys;
} table;

static uint64_t hash_bytes(const char *p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 32;
        p += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, p, n);
    h = (h ^ w) * 0xC4CEB9FE1A85EC53ull;
    return h ^ (h >> 29);
}

static void table_grow(table *t) {
    size_t capacity = t->capacity ? t->capacity * 2 : 1024;
    slot *slots = calloc(capacity, sizeof *slots);
    if (!slots) die_memory();
    for (size_t i = 0; i < t->capacity; i++) {
        if (!t->slots[i].used) continue;
        size_t j = t->slots[i].hash & (capacity - 1);
        while (slots[j].used) j = (j + 1) & (capacity - 1);
        slots[j] = t->slots[i];
    }
    free(t->slots);
    t->slots = slots;
    t->capacity = capacity;
}

static void table_add(table *t, const char *key, size_t n, cw_weight weight) {
    if ((t->count + 1) * 2 > t->capacity) table_grow(t);
    uint64_t h = hash_bytes(key, n);
    size_t j = h & (t->capacity - 1);
    for (;;) {
        slot *s = &t->slots[j];
        if (!s->used) break;
        if (s->hash == h && s->length == n && memcmp(t->keys.p + s->offset, key, n) == 0) {
            s->weight += weight;
            return;
        }
        j = (j + 1) & (t->capacity - 1);
    }
    slot *s = &t->slots[j];
    s->used = 1;
    s->hash = h;
    s->offset = t->keys.n;
    s->length = n;
    s->weight = weight;
    buf_add(&t->keys, key, n);
    t->count++;
}

/* ---- the state machine (fold.py's fold_lines) -------------------------------------------- */

typedef struct {
    options opt;
    table counts;
    int has_event;
    buffer event; /* the event type folded: the first one seen */
    int in_event, skipping, has_period;
    uint64_t period;
    buffer name; /* the process name, spaces as '_' */
    stack st;
    buffer key;
} folder;

static void emit(folder *f) {
    stack *st = &f->st;
    size_t groups = st->groups.n / sizeof(size_t);
    if (groups) {
        const size_t *sizes = (const size_t *)st->groups.p;
        const size_t *ends_at = (const size_t *)st->ends.p;
        size_t frames = st->ends.n / sizeof(size_t);
        f->key.n = 0;
        buf_add(&f->key, f->name.p, f->name.n);
        /* groups were added leaf first: walk them back, each group's frames in order */
        size_t last = frames;
        for (size_t g = groups; g-- > 0;) {
            size_t first = last - sizes[g];
            for (size_t k = first; k < last; k++) {
                size_t begin = k ? ends_at[k - 1] : 0;
                buf_addc(&f->key, ';');
                buf_add(&f->key, st->text.p + begin, ends_at[k] - begin);
            }
            last = first;
        }
        table_add(&f->counts, f->key.p, f->key.n, f->has_period ? f->period : 1);
    }
    f->in_event = f->skipping = f->has_period = 0;
    st->text.n = st->ends.n = st->groups.n = 0;
}

static void on_stack_line(folder *f, span line) {
    if (!f->skipping) {
        span name = {f->name.p, f->name.n};
        fold_stack_line(&f->st, line, starts(name, "java"), &f->opt);
    }
}

static void on_line(folder *f, span raw) {
    if (raw.n && raw.p[0] == '#') return;
    span line = rstrip(raw);
    if (line.n == 0) {
        emit(f);
    } else if (f->in_event) {
        on_stack_line(f, line);
    } else {
        header h;
        f->in_event = 1;
        if (!parse_header(line, &h)) {
            f->in_event = 0;
            return;
        }
        if (h.has_event) {
            f->has_period = h.has_period;
            f->period = h.period;
            if (!f->has_event) {
                f->has_event = 1;
                buf_add(&f->event, h.event.p, h.event.n);
            } else if (h.event.n != f->event.n ||
                       (h.event.n && memcmp(h.event.p, f->event.p, h.event.n))) {
                f->skipping = 1;
                return;
            }
        }
        f->name.n = 0;
        for (size_t i = 0; i < h.comm.n; i++) buf_addc(&f->name, h.comm.p[i] == ' ' ? '_' : h.comm.p[i]);
        if (h.has_inline) {
            on_stack_line(f, h.inline_frame);
            f->in_event = 0;
            if (f->st.groups.n) emit(f);
        }
    }
}

/* ---- input: UTF-8 as Python's errors="replace" reads it ---------------------------------- */

/* Length of the well-formed UTF-8 character at p, or 0; *bad gets the length of the maximal
 * ill-formed subpart to replace (at least 1) when it is 0. */
static size_t utf8_char(const unsigned char *p, size_t left, size_t *bad) {
    unsigned c = p[0];
    size_t need;
    unsigned low = 0x80, high = 0xBF;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0) low = 0xA0;
        if (c == 0xED) high = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0) low = 0x90;
        if (c == 0xF4) high = 0x8F;
    } else {
        *bad = 1;
        return 0;
    }
    size_t i = 1;
    for (; i < need && i < left; i++) {
        unsigned lo = i == 1 ? low : 0x80, hi = i == 1 ? high : 0xBF;
        if (p[i] < lo || p[i] > hi) break;
    }
    if (i == need) return need;
    *bad = i;
    return 0;
}

/* The input with ill-formed sequences replaced, in *out when any was (else *out is NULL). */
static void sanitize(const char *data, size_t n, buffer *out) {
    const unsigned char *u = (const unsigned char *)data;
    size_t i = 0, copied = 0, bad = 0;
    out->p = NULL;
    out->n = out->cap = 0;
    while (i < n) {
        if (u[i] < 0x80) {
            i++;
            continue;
        }
        size_t k = utf8_char(u + i, n - i, &bad);
        if (k) {
            i += k;
            continue;
        }
        buf_add(out, data + copied, i - copied);
        buf_add(out, "\xEF\xBF\xBD", 3);
        i += bad;
        copied = i;
    }
    if (out->p) buf_add(out, data + copied, n - copied);
}

static int read_all(FILE *in, buffer *b) {
    for (;;) {
        buf_reserve(b, 1 << 20);
        size_t got = fread(b->p + b->n, 1, b->cap - b->n, in);
        b->n += got;
        if (got == 0) return ferror(in) ? -1 : 0;
    }
}

/* ---- output ------------------------------------------------------------------------------ */

static const char *sort_keys;

static int by_key(const void *a, const void *b) {
    const slot *x = a, *y = b;
    size_t n = x->length < y->length ? x->length : y->length;
    int c = memcmp(sort_keys + x->offset, sort_keys + y->offset, n);
    if (c) return c;
    return x->length < y->length ? -1 : x->length > y->length;
}

static void write_weight(buffer *out, cw_weight w) {
    char digits[48];
    size_t n = 0;
    do {
        digits[n++] = (char)('0' + (int)(w % 10));
        w /= 10;
    } while (w);
    while (n) buf_addc(out, digits[--n]);
}

int main(int argc, char **argv) {
    folder f;
    memset(&f, 0, sizeof f);
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--kernel") == 0) {
            f.opt.annotate_kernel = 1;
        } else if (strcmp(argv[i], "--jit") == 0) {
            f.opt.annotate_jit = 1;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "cw_fold: unknown option %s\nusage: cw_fold [--kernel] [--jit] [FILE]\n", argv[i]);
            return 2;
        } else if (path) {
            fputs("cw_fold: one input file at most\n", stderr);
            return 2;
        } else {
            path = argv[i];
        }
    }
    FILE *in = path && strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!in) {
        fprintf(stderr, "cw_fold: %s: %s\n", path, strerror(errno));
        return 2;
    }
    buffer input = {0};
    if (read_all(in, &input) < 0) {
        fprintf(stderr, "cw_fold: %s: read error\n", path ? path : "standard input");
        return 2;
    }
    buffer clean;
    sanitize(input.p ? input.p : "", input.n, &clean);
    span text = clean.p ? (span){clean.p, clean.n} : (span){input.p ? input.p : "", input.n};

    size_t from = 0;
    for (;;) {
        long newline = find_char(text, '\n', from);
        size_t to = newline < 0 ? text.n : (size_t)newline;
        on_line(&f, sub(text, from, to));
        if (newline < 0) break;
        from = to + 1;
    }
    emit(&f);

    slot *entries = malloc((f.counts.count ? f.counts.count : 1) * sizeof *entries);
    if (!entries) die_memory();
    size_t count = 0;
    for (size_t i = 0; i < f.counts.capacity; i++)
        if (f.counts.slots[i].used) entries[count++] = f.counts.slots[i];
    sort_keys = f.counts.keys.p;
    qsort(entries, count, sizeof *entries, by_key);
    buffer out = {0};
    for (size_t i = 0; i < count; i++) {
        buf_add(&out, f.counts.keys.p + entries[i].offset, entries[i].length);
        buf_addc(&out, ' ');
        write_weight(&out, entries[i].weight);
        buf_addc(&out, '\n');
    }
    if ((out.n && fwrite(out.p, 1, out.n, stdout) != out.n) || fflush(stdout) != 0) {
        fputs("cw_fold: cannot write the output\n", stderr);
        return 1;
    }
    return 0;
}
