/* cw_load: cutaway's load generator. HTTP/1.1 (keep-alive, or a new connection per request) or
 * memcached's text protocol, closed loop (a fixed number of connections, each with one request
 * outstanding) or open loop (a fixed rate over a pool of connections, each request's latency
 * measured from its intended send time as wrk2 does, so that a stalled server cannot hide
 * behind the requests the generator did not send: coordinated omission, corrected; the
 * latency from the actual send time is kept beside it, uncorrected).
 *
 * Usage and the JSON summary: docs/load-format.md; the contract with the Python side:
 * src/cutaway/probes/load/generator.py. Exit 0 when the run happened (errors counted in the
 * summary), 2 for bad arguments (a message naming the flag), 1 when nothing could be measured
 * (a message on standard error, the summary still written), 128 + the signal when SIGINT or
 * SIGTERM stopped it early (the summary of what it measured until then, marked interrupted).
 *
 * Design: --threads worker threads, each with its own epoll instance, its share of the
 * connections and of the rate, and its own HdrHistograms (cw_hdr.h), merged exactly at the
 * end; nonblocking sockets; CLOCK_MONOTONIC in nanoseconds; epoll_pwait2's nanosecond timeout
 * to wake up at each intended send time. Memory is fixed at start: per connection one small
 * state and a line buffer, per thread 12 histograms of 270 KB; nothing grows with the number
 * of requests. */

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cw_hdr.h"

#define NS 1000000000LL
#define LINE_MAX_BYTES 16384      /* response head, chunk-size line or memcached line */
#define SCAN_INTERVAL_NS 10000000 /* timeouts and retries are checked every 10 ms */
#define RETRY_AFTER_CONNECT_ERROR_NS 10000000
#define MISSED_SEND_NS 1000000    /* a send later than this past its due time is missed */
#define MAX_EVENTS 256
/* Interrupted (SIGINT, SIGTERM): the requests in flight get this long (at most --timeout) to
 * finish before they are abandoned and counted as unfinished. */
#define INTERRUPT_DRAIN_NS 1000000000LL

enum { PROTO_HTTP, PROTO_MEMCACHED };
enum { ERR_CONNECT, ERR_RESET, ERR_TIMEOUT, ERR_STATUS, ERR_PROTOCOL, ERR_KINDS };
static const char *const ERROR_NAMES[ERR_KINDS] = {"connect", "reset", "timeout", "status",
                                                   "protocol"};
enum { CORRECTED, UNCORRECTED };
/* connect, first_byte and total run from the request's start (intended or actual); waiting and
 * processing are ab's rows, from the moment the connection was ready to send on: to the first
 * byte, and to the last byte of the answer. Those two are the same in both views. */
enum { PHASE_CONNECT, PHASE_FIRST_BYTE, PHASE_TOTAL, PHASE_WAITING, PHASE_PROCESSING, PHASES };
static const char *const PHASE_NAMES[PHASES] = {"connect", "first_byte", "total", "waiting",
                                                "processing"};

/* ---- settings -------------------------------------------------------------------------- */

typedef struct {
    const char *target;
    const char *host_header;
    const char *path;
    int protocol;
    int new_connection;
    int connections;
    double rate; /* 0: closed loop */
    double duration;
    long long requests; /* 0: --duration */
    double warmup;
    double timeout;
    int threads;
    const char *interval_log;
    const char *output;
    struct sockaddr_storage address;
    socklen_t address_length;
    char *request;
    size_t request_length;
} settings;

static void usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("cw_load: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\n", stderr);
    va_end(ap);
    exit(2);
}

static double parse_number(const char *flag, const char *text, double minimum, int inclusive) {
    char *end;
    errno = 0;
    double value = strtod(text, &end);
    if (errno || end == text || *end || !isfinite(value) || value < minimum ||
        (!inclusive && value == minimum))
        usage_error("%s: expected a number %s %g, got '%s'", flag, inclusive ? ">=" : ">",
                    minimum, text);
    return value;
}

static long long parse_count(const char *flag, const char *text) {
    char *end;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    if (errno || end == text || *end || value < 1)
        usage_error("%s: expected a whole number >= 1, got '%s'", flag, text);
    return value;
}

static void resolve_target(settings *s) {
    const char *colon = strrchr(s->target, ':');
    if (!colon || colon == s->target || !colon[1])
        usage_error("--target: expected HOST:PORT, got '%s'", s->target);
    char host[256];
    size_t host_length = (size_t)(colon - s->target);
    const char *host_start = s->target;
    if (host_start[0] == '[' && host_length >= 2 && colon[-1] == ']') host_start++, host_length -= 2;
    if (host_length >= sizeof host) usage_error("--target: host name too long");
    memcpy(host, host_start, host_length);
    host[host_length] = '\0';
    parse_count("--target (port)", colon + 1);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *found;
    int status = getaddrinfo(host, colon + 1, &hints, &found);
    if (status) usage_error("--target: cannot resolve '%s': %s", s->target, gai_strerror(status));
    memcpy(&s->address, found->ai_addr, found->ai_addrlen);
    s->address_length = found->ai_addrlen;
    freeaddrinfo(found);
}

static void check_token(const char *flag, const char *text, int is_path) {
    if (!*text) usage_error("%s: must not be empty", flag);
    if (is_path && text[0] != '/') usage_error("%s: must start with '/', got '%s'", flag, text);
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        if (*p <= ' ' || *p == 0x7f)
            usage_error("%s: must not contain spaces or control characters", flag);
}

static void build_request(settings *s) {
    char *request = NULL;
    int n;
    if (s->protocol == PROTO_MEMCACHED) {
        if (strlen(s->path) > 250) usage_error("--path: a memcached key has at most 250 bytes");
        n = asprintf(&request, "get %s\r\n", s->path);
    } else {
        char host[300];
        if (!s->host_header) {
            snprintf(host, sizeof host, "%s", s->target);
            s->host_header = host;
        }
        n = asprintf(&request, "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: cutaway-load\r\n%s\r\n",
                     s->path, s->host_header,
                     s->new_connection ? "Connection: close\r\n" : "");
        s->host_header = NULL; /* it may point at the local buffer above */
    }
    if (n < 0) {
        fputs("cw_load: out of memory\n", stderr);
        exit(1);
    }
    s->request = request;
    s->request_length = (size_t)n;
}

static const char *flag_value(int argc, char **argv, int *i, const char *name) {
    size_t length = strlen(name);
    const char *arg = argv[*i];
    if (strncmp(arg, name, length)) return NULL;
    if (arg[length] == '=') return arg + length + 1;
    if (arg[length]) return NULL;
    if (*i + 1 >= argc) usage_error("%s: missing value", name);
    return argv[++*i];
}

static void parse_arguments(int argc, char **argv, settings *s) {
    *s = (settings){.path = NULL, .connections = 10, .timeout = 5.0, .threads = 1};
    int have_duration = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (!strcmp(argv[i], "--new-connection")) s->new_connection = 1;
        else if ((v = flag_value(argc, argv, &i, "--target"))) s->target = v;
        else if ((v = flag_value(argc, argv, &i, "--protocol"))) {
            if (!strcmp(v, "http")) s->protocol = PROTO_HTTP;
            else if (!strcmp(v, "memcached")) s->protocol = PROTO_MEMCACHED;
            else usage_error("--protocol: expected http or memcached, got '%s'", v);
        } else if ((v = flag_value(argc, argv, &i, "--path"))) s->path = v;
        else if ((v = flag_value(argc, argv, &i, "--host"))) s->host_header = v;
        else if ((v = flag_value(argc, argv, &i, "--connections"))) {
            long long n = parse_count("--connections", v);
            s->connections = n > 100000 ? 100001 : (int)n;
        }
        else if ((v = flag_value(argc, argv, &i, "--rate"))) s->rate = parse_number("--rate", v, 0, 0);
        else if ((v = flag_value(argc, argv, &i, "--duration")))
            s->duration = parse_number("--duration", v, 0, 0), have_duration = 1;
        else if ((v = flag_value(argc, argv, &i, "--requests"))) s->requests = parse_count("--requests", v);
        else if ((v = flag_value(argc, argv, &i, "--warmup"))) s->warmup = parse_number("--warmup", v, 0, 1);
        else if ((v = flag_value(argc, argv, &i, "--timeout"))) s->timeout = parse_number("--timeout", v, 0, 0);
        else if ((v = flag_value(argc, argv, &i, "--threads"))) {
            long long n = parse_count("--threads", v);
            s->threads = n > 256 ? 257 : (int)n;
        }
        else if ((v = flag_value(argc, argv, &i, "--interval-log"))) s->interval_log = v;
        else if ((v = flag_value(argc, argv, &i, "--output"))) s->output = v;
        else usage_error("unknown argument '%s'", argv[i]);
    }
    if (!s->target) usage_error("--target: required (HOST:PORT)");
    if (have_duration == (s->requests > 0))
        usage_error("--duration / --requests: give exactly one of them");
    if (s->connections > 100000) usage_error("--connections: at most 100000");
    if (s->threads > 256) usage_error("--threads: at most 256");
    if (s->duration > 86400 || s->warmup > 86400 || s->timeout > 3600)
        usage_error("--duration / --warmup / --timeout: at most a day (timeout: an hour)");
    if (s->threads > s->connections) s->threads = s->connections;
    if (!s->path) s->path = s->protocol == PROTO_HTTP ? "/" : "cutaway";
    check_token("--path", s->path, s->protocol == PROTO_HTTP);
    if (s->host_header) check_token("--host", s->host_header, 0);
    resolve_target(s);
    build_request(s);
}

/* ---- clocks ------------------------------------------------------------------------------ */

static inline int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * NS + t.tv_nsec;
}

static double process_cpu_seconds(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 +
           (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec / 1e6;
}

/* ---- connections ------------------------------------------------------------------------- */

enum { C_CLOSED, C_CONNECTING, C_WRITING, C_READING, C_IDLE, C_WAITING };

/* Response parser states. */
enum { R_HEAD, R_BODY, R_BODY_TO_EOF, R_CHUNK_LINE, R_CHUNK_DATA, R_TRAILER, R_MC_LINE, R_MC_DATA };

typedef struct {
    int fd;
    int state;
    int responses_on_socket; /* > 0: a reused keep-alive socket */
    int retried;
    uint32_t interest; /* the epoll events registered for fd */
    int64_t intended, started, connected, first_byte, free_since, retry_at;
    size_t written;
    /* parser */
    int parse_state;
    int close_after;
    int status_error;
    int64_t body_left;
    size_t line_length;
    char line[LINE_MAX_BYTES];
} conn;

typedef struct interval_log interval_log;

typedef struct {
    int id;
    const settings *s;
    interval_log *log;
    int epfd;
    conn *conns;
    int connection_count;
    int *free_slots; /* open loop: stack of idle connection indices */
    int free_count;
    double period_ns; /* open loop: between this thread's intended sends */
    int64_t schedule_start, measure_start, end_at;
    int64_t next_index;     /* open loop: next intended send */
    long long request_limit; /* --requests: this thread's share; 0: by time */
    long long issued, finished;
    int stopping;
    int64_t interrupted_at; /* when this worker saw the stop signal; 0: not interrupted */
    int64_t measured_until; /* interrupted: the end of what it measured */
    /* results */
    cw_hdr *hist[2][PHASES];
    cw_hdr *interval_hist[2][PHASES];
    int64_t next_interval_at;
    long long completed, errors[ERR_KINDS], unfinished, unsent, missed_sends, sends;
    long long waited_sends; /* open loop: sends due while every connection was busy */
    int64_t max_send_lag, last_finish, max_connection_wait;
    int64_t absent_until; /* end of the last stretch the generator could not act in */
    double cpu_seconds;
    int first_errno;
} worker;

/* ---- interval log (HdrHistogram log format 1.3) ------------------------------------------- */

struct interval_log {
    FILE *file;
    pthread_mutex_t lock;
    int contributors;
    int64_t measure_start;
    double interval_seconds;
    double written_until; /* seconds after measure_start */
    long long pending_interval[2];
    int pending_contributions[2];
    int64_t pending_end[2];
    cw_hdr *pending[2][2][PHASES];
    cw_hdr *tail[2][PHASES]; /* what the workers recorded after their last whole interval */
};

static void write_interval(interval_log *log, cw_hdr *hist[2][PHASES], double start, double end) {
    double length = end - start;
    if (length < 0) length = 0;
    if (end > log->written_until) log->written_until = end;
    for (int view = 0; view < 2; view++)
        for (int phase = 0; phase < PHASES; phase++) {
            cw_hdr *h = hist[view][phase];
            char *encoded = cw_hdr_encode(h);
            if (!encoded) continue;
            fprintf(log->file, "Tag=%s.%s,%.3f,%.3f,%.3f,%s\n",
                    view == CORRECTED ? "corrected" : "uncorrected", PHASE_NAMES[phase], start,
                    length, (double)cw_hdr_max(h) / 1e6, encoded);
            free(encoded);
            cw_hdr_reset(h);
        }
    fflush(log->file);
}

static void flush_pending(interval_log *log, int slot) {
    double start = (double)log->pending_interval[slot] * log->interval_seconds;
    if (start < log->written_until) start = log->written_until;
    write_interval(log, log->pending[slot], start,
                   (double)(log->pending_end[slot] - log->measure_start) / (double)NS);
    log->pending_contributions[slot] = 0;
    log->pending_end[slot] = 0;
}

/* A worker hands over its histograms of interval `index` (ending at `end`); the last of the
 * workers to do so writes the merged interval. */
static void contribute_interval(worker *w, long long index, int64_t end) {
    interval_log *log = w->log;
    pthread_mutex_lock(&log->lock);
    int slot = (int)(index & 1);
    if (log->pending_contributions[slot] == 0) log->pending_interval[slot] = index;
    for (int view = 0; view < 2; view++)
        for (int phase = 0; phase < PHASES; phase++) {
            cw_hdr_add(log->pending[slot][view][phase], w->interval_hist[view][phase]);
            cw_hdr_reset(w->interval_hist[view][phase]);
        }
    if (end > log->pending_end[slot]) log->pending_end[slot] = end;
    if (++log->pending_contributions[slot] == log->contributors) flush_pending(log, slot);
    pthread_mutex_unlock(&log->lock);
}

static void maybe_contribute_interval(worker *w, int64_t now) {
    if (!w->log) return;
    int64_t interval_ns = (int64_t)(w->log->interval_seconds * (double)NS);
    while (now >= w->next_interval_at) {
        long long index = (w->next_interval_at - w->measure_start) / interval_ns - 1;
        contribute_interval(w, index, w->next_interval_at);
        w->next_interval_at += interval_ns;
    }
}

/* A worker's last, partial interval goes to the tail, written once every worker is done. */
static void contribute_tail(worker *w) {
    if (!w->log) return;
    pthread_mutex_lock(&w->log->lock);
    for (int view = 0; view < 2; view++)
        for (int phase = 0; phase < PHASES; phase++)
            cw_hdr_add(w->log->tail[view][phase], w->interval_hist[view][phase]);
    pthread_mutex_unlock(&w->log->lock);
}

/* After the workers: intervals not every worker reached, then the tail. */
static void finish_interval_log(interval_log *log, int64_t run_end) {
    if (!log) return;
    int first = log->pending_interval[0] <= log->pending_interval[1] ? 0 : 1;
    for (int k = 0; k < 2; k++) {
        int slot = k ? 1 - first : first;
        if (log->pending_contributions[slot]) flush_pending(log, slot);
    }
    double end = (double)(run_end - log->measure_start) / (double)NS;
    if (end < log->written_until) end = log->written_until;
    write_interval(log, log->tail, log->written_until, end);
    fclose(log->file);
}

/* ---- recording --------------------------------------------------------------------------- */

static inline int in_window(const worker *w, const conn *c) {
    return c->intended >= w->measure_start;
}

static void record_completion(worker *w, conn *c, int64_t now) {
    if (!in_window(w, c)) return;
    w->last_finish = now;
    if (c->status_error) {
        w->errors[ERR_STATUS]++;
        return;
    }
    w->completed++;
    int64_t waiting = c->first_byte - c->connected, processing = now - c->connected;
    int64_t corrected[PHASES] = {c->connected - c->intended, c->first_byte - c->intended,
                                 now - c->intended, waiting, processing};
    int64_t uncorrected[PHASES] = {c->connected - c->started, c->first_byte - c->started,
                                   now - c->started, waiting, processing};
    for (int phase = 0; phase < PHASES; phase++) {
        cw_hdr_record(w->hist[CORRECTED][phase], corrected[phase]);
        cw_hdr_record(w->hist[UNCORRECTED][phase], uncorrected[phase]);
        if (w->log) {
            cw_hdr_record(w->interval_hist[CORRECTED][phase], corrected[phase]);
            cw_hdr_record(w->interval_hist[UNCORRECTED][phase], uncorrected[phase]);
        }
    }
}

/* ---- the request cycle ------------------------------------------------------------------- */

static void start_request(worker *w, conn *c, int64_t intended, int64_t now);
static void begin_write(worker *w, conn *c, int64_t now);
static void on_peer_gone(worker *w, conn *c, int64_t now, int error_number);

static void close_socket(worker *w, conn *c) {
    if (c->fd >= 0) {
        epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        c->fd = -1;
    }
    c->responses_on_socket = 0;
    c->state = C_CLOSED;
}

/* One epoll_ctl only when the events change: a keep-alive request in the common case (the
 * whole request written at once) costs no epoll_ctl at all. */
static void set_interest(worker *w, conn *c, uint32_t events) {
    if (c->interest == events) return;
    struct epoll_event ev = {.events = events, .data.ptr = c};
    epoll_ctl(w->epfd, EPOLL_CTL_MOD, c->fd, &ev);
    c->interest = events;
}

static int request_budget_left(const worker *w) {
    return !w->request_limit || w->issued < w->request_limit;
}

/* The connection has no request outstanding any more: the next one starts now (closed loop)
 * or when it is due (open loop). */
static void slot_free(worker *w, conn *c, int64_t now) {
    c->free_since = now;
    if (w->request_limit && w->finished >= w->request_limit) w->stopping = 1;
    if (w->stopping) return;
    if (w->s->rate > 0) {
        w->free_slots[w->free_count++] = (int)(c - w->conns);
    } else if (c->state == C_WAITING) {
        /* retried by the scan */
    } else if (request_budget_left(w)) {
        start_request(w, c, now, now);
    }
}

static void finish_with_error(worker *w, conn *c, int kind, int64_t now, int error_number) {
    if (in_window(w, c)) {
        w->errors[kind]++;
        w->last_finish = now;
        if (!w->first_errno && error_number) w->first_errno = error_number;
    }
    w->finished += c->intended >= w->measure_start;
    close_socket(w, c);
    if (kind == ERR_CONNECT && w->s->rate <= 0) {
        c->state = C_WAITING;
        c->retry_at = now + RETRY_AFTER_CONNECT_ERROR_NS;
    }
    slot_free(w, c, now);
}

static void finish_ok(worker *w, conn *c, int64_t now) {
    record_completion(w, c, now);
    w->finished += c->intended >= w->measure_start;
    c->responses_on_socket++;
    if (c->close_after || w->s->new_connection) close_socket(w, c);
    else c->state = C_IDLE;
    slot_free(w, c, now);
}

static void open_socket(worker *w, conn *c, int64_t now) {
    const settings *s = w->s;
    c->fd = socket(s->address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        finish_with_error(w, c, ERR_CONNECT, now, errno);
        return;
    }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->responses_on_socket = 0;
    struct epoll_event ev = {.events = EPOLLOUT | EPOLLIN | EPOLLRDHUP, .data.ptr = c};
    epoll_ctl(w->epfd, EPOLL_CTL_ADD, c->fd, &ev);
    c->interest = ev.events;
    if (connect(c->fd, (const struct sockaddr *)&s->address, s->address_length) == 0) {
        c->connected = now_ns();
        begin_write(w, c, c->connected);
    } else if (errno == EINPROGRESS) {
        c->state = C_CONNECTING;
    } else {
        finish_with_error(w, c, ERR_CONNECT, now, errno);
    }
}

static void reset_parser(worker *w, conn *c) {
    c->parse_state = w->s->protocol == PROTO_HTTP ? R_HEAD : R_MC_LINE;
    c->line_length = 0;
    c->close_after = 0;
    c->status_error = 0;
    c->body_left = 0;
    c->first_byte = 0;
}

static void start_request(worker *w, conn *c, int64_t intended, int64_t now) {
    c->intended = intended;
    c->started = now;
    c->retried = 0;
    w->issued += intended >= w->measure_start;
    reset_parser(w, c);
    if (c->fd >= 0 && c->state == C_IDLE) {
        c->connected = now;
        begin_write(w, c, now);
    } else {
        open_socket(w, c, now);
    }
}

/* Writes the request; a send error on a keep-alive socket the server has closed goes to
 * on_peer_gone, which may retry it on a new connection. */
static void begin_write(worker *w, conn *c, int64_t now) {
    c->state = C_WRITING;
    c->written = 0;
    const settings *s = w->s;
    while (c->written < s->request_length) {
        ssize_t n = send(c->fd, s->request + c->written, s->request_length - c->written,
                         MSG_NOSIGNAL);
        if (n > 0) {
            c->written += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            set_interest(w, c, EPOLLIN | EPOLLOUT | EPOLLRDHUP);
            return;
        }
        on_peer_gone(w, c, now, errno);
        return;
    }
    c->state = C_READING;
    set_interest(w, c, EPOLLIN | EPOLLRDHUP);
}

/* ---- response parsing -------------------------------------------------------------------- */

enum { PARSE_MORE, PARSE_DONE, PARSE_GARBAGE };

/* The value of the first header `name` (case-insensitive "\r\nname:") in head[0, length): a
 * pointer just past the colon, or NULL when there is none. */
static const char *header_value(const char *head, size_t length, const char *name) {
    size_t name_length = strlen(name);
    for (size_t i = 0; i + 2 + name_length < length; i++) {
        if (head[i] != '\r' || head[i + 1] != '\n') continue;
        if (strncasecmp(head + i + 2, name, name_length) || head[i + 2 + name_length] != ':')
            continue;
        return head + i + 3 + name_length;
    }
    return NULL;
}

/* Header `name` is present and, unless `value` is NULL, its value contains `value`. */
static int header_has(const char *head, size_t length, const char *name, const char *value) {
    const char *v = header_value(head, length, name);
    if (!v) return 0;
    if (!value) return 1;
    const char *end = memmem(v, length - (size_t)(v - head), "\r\n", 2);
    size_t vl = end ? (size_t)(end - v) : length - (size_t)(v - head);
    for (size_t j = 0; j + strlen(value) <= vl; j++)
        if (!strncasecmp(v + j, value, strlen(value))) return 1;
    return 0;
}

/* Header `name`'s value as a number: -1 when there is no such header, -2 when it is not one. */
static int64_t header_number(const char *head, size_t length, const char *name) {
    const char *v = header_value(head, length, name);
    if (!v) return -1;
    while (*v == ' ' || *v == '\t') v++;
    if (*v < '0' || *v > '9') return -2;
    int64_t n = 0;
    while (*v >= '0' && *v <= '9') {
        if (n > (INT64_MAX - 9) / 10) return -2;
        n = n * 10 + (*v++ - '0');
    }
    return n;
}

static int parse_http_head(conn *c) {
    char *head = c->line;
    size_t length = c->line_length;
    head[length] = '\0';
    if (length < 12 || memcmp(head, "HTTP/1.", 7) || head[8] != ' ' || head[9] < '1' ||
        head[9] > '5' || head[10] < '0' || head[10] > '9' || head[11] < '0' || head[11] > '9')
        return PARSE_GARBAGE;
    int status = (head[9] - '0') * 100 + (head[10] - '0') * 10 + (head[11] - '0');
    if (status < 200) return PARSE_GARBAGE; /* no 1xx is expected for a plain GET */
    c->status_error = status >= 400;
    int http10 = head[7] == '0';
    c->close_after = header_has(head, length, "connection", "close") ||
                     (http10 && !header_has(head, length, "connection", "keep-alive"));
    if (status == 204 || status == 304) {
        c->parse_state = R_BODY, c->body_left = 0;
        return PARSE_DONE;
    }
    if (header_has(head, length, "transfer-encoding", "chunked")) {
        c->parse_state = R_CHUNK_LINE;
        return PARSE_MORE;
    }
    int64_t content_length = header_number(head, length, "content-length");
    if (content_length == -2) return PARSE_GARBAGE;
    if (content_length >= 0) {
        c->parse_state = R_BODY;
        c->body_left = content_length;
        return c->body_left == 0 ? PARSE_DONE : PARSE_MORE;
    }
    c->parse_state = R_BODY_TO_EOF;
    c->close_after = 1;
    return PARSE_MORE;
}

/* Takes bytes up to and including the next "\r\n" into c->line; returns the bytes taken, and
 * sets *complete when the line is whole. -1: the line is too long. */
static ssize_t take_line(conn *c, const char *data, size_t n, int *complete) {
    *complete = 0;
    size_t i = 0;
    while (i < n) {
        if (c->line_length >= LINE_MAX_BYTES - 1) return -1;
        char ch = data[i++];
        c->line[c->line_length++] = ch;
        if (ch == '\n' && c->line_length >= 2 && c->line[c->line_length - 2] == '\r') {
            *complete = 1;
            break;
        }
    }
    return (ssize_t)i;
}

/* A part of the answer of known length (a Content-Length body, a chunk with its CRLF, a
 * memcached value with its CRLF) is dropped, never kept: takes up to c->body_left of the
 * `available` bytes and returns how many it took; when the part is whole (body_left 0) the
 * parser goes on in `next_state`. */
static size_t take_body(conn *c, size_t available, int next_state) {
    size_t take = (size_t)c->body_left < available ? (size_t)c->body_left : available;
    c->body_left -= (int64_t)take;
    if (c->body_left == 0) c->parse_state = next_state;
    return take;
}

/* Feeds received bytes to the response parser. *used: bytes consumed. */
static int parse_response(conn *c, const char *data, size_t n, size_t *used) {
    size_t i = 0;
    while (i < n) {
        int complete;
        ssize_t taken;
        switch (c->parse_state) {
        case R_HEAD: {
            /* Heads end with an empty line: take line by line. */
            taken = take_line(c, data + i, n - i, &complete);
            if (taken < 0) return PARSE_GARBAGE;
            i += (size_t)taken;
            if (c->line_length == 2 && complete) return PARSE_GARBAGE; /* empty first line */
            if (complete && c->line_length >= 4 &&
                !memcmp(c->line + c->line_length - 4, "\r\n\r\n", 4)) {
                c->line_length -= 2;
                int result = parse_http_head(c);
                c->line_length = 0;
                if (result != PARSE_MORE) {
                    *used = i;
                    return result;
                }
            }
            break;
        }
        case R_BODY:
            i += take_body(c, n - i, R_BODY);
            if (c->body_left == 0) {
                *used = i;
                return PARSE_DONE;
            }
            break;
        case R_BODY_TO_EOF:
            i = n;
            break;
        case R_CHUNK_LINE: {
            taken = take_line(c, data + i, n - i, &complete);
            if (taken < 0) return PARSE_GARBAGE;
            i += (size_t)taken;
            if (!complete) break;
            c->line[c->line_length] = '\0';
            char *end;
            errno = 0;
            long long size = strtoll(c->line, &end, 16);
            c->line_length = 0;
            if (end == c->line || errno || size < 0 || (*end != '\r' && *end != ';'))
                return PARSE_GARBAGE;
            if (size == 0) c->parse_state = R_TRAILER;
            else c->parse_state = R_CHUNK_DATA, c->body_left = size + 2;
            break;
        }
        case R_CHUNK_DATA:
            i += take_body(c, n - i, R_CHUNK_LINE);
            break;
        case R_TRAILER: {
            taken = take_line(c, data + i, n - i, &complete);
            if (taken < 0) return PARSE_GARBAGE;
            i += (size_t)taken;
            if (!complete) break;
            int empty = c->line_length == 2;
            c->line_length = 0;
            if (empty) {
                *used = i;
                return PARSE_DONE;
            }
            break;
        }
        case R_MC_LINE: {
            taken = take_line(c, data + i, n - i, &complete);
            if (taken < 0) return PARSE_GARBAGE;
            i += (size_t)taken;
            if (!complete) break;
            c->line[c->line_length - 2] = '\0';
            const char *line = c->line;
            c->line_length = 0;
            if (!strcmp(line, "END")) {
                *used = i;
                return PARSE_DONE;
            }
            if (!strcmp(line, "ERROR") || !strncmp(line, "CLIENT_ERROR", 12) ||
                !strncmp(line, "SERVER_ERROR", 12)) {
                c->status_error = 1;
                *used = i;
                return PARSE_DONE;
            }
            unsigned flags;
            long long bytes;
            char key[251];
            if (sscanf(line, "VALUE %250s %u %lld", key, &flags, &bytes) != 3 || bytes < 0)
                return PARSE_GARBAGE;
            c->parse_state = R_MC_DATA;
            c->body_left = bytes + 2;
            break;
        }
        case R_MC_DATA:
            i += take_body(c, n - i, R_MC_LINE);
            break;
        }
    }
    *used = i;
    return PARSE_MORE;
}

/* ---- events ------------------------------------------------------------------------------ */

static void on_connected(worker *w, conn *c) {
    int error = 0;
    socklen_t length = sizeof error;
    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &error, &length);
    int64_t now = now_ns();
    if (error) {
        finish_with_error(w, c, ERR_CONNECT, now, error);
        return;
    }
    c->connected = now;
    begin_write(w, c, now);
}

/* The peer closed or reset before the response was whole. A reused keep-alive socket that the
 * server closed before answering a byte (its idle timeout raced our request) is retried once
 * on a new connection, as browsers and wrk do; anything else is an error. */
static void on_peer_gone(worker *w, conn *c, int64_t now, int error_number) {
    int nothing_received = c->first_byte == 0;
    if (nothing_received && c->responses_on_socket > 0 && !c->retried) {
        close_socket(w, c);
        c->retried = 1;
        open_socket(w, c, now);
        return;
    }
    if (c->parse_state == R_BODY_TO_EOF && error_number == 0) {
        finish_ok(w, c, now);
        return;
    }
    finish_with_error(w, c, ERR_RESET, now, error_number ? error_number : ECONNRESET);
}

static void on_readable(worker *w, conn *c, char *buffer, size_t size) {
    for (;;) {
        ssize_t n = recv(c->fd, buffer, size, 0);
        int64_t now = now_ns();
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (c->state == C_IDLE) {
            /* No request outstanding: the server closed its end, or talks out of turn. */
            if (n > 0) {
                if (!w->first_errno) w->first_errno = EPROTO;
                if (now >= w->measure_start) w->errors[ERR_PROTOCOL]++;
            }
            close_socket(w, c);
            return;
        }
        if (n <= 0) {
            on_peer_gone(w, c, now, n < 0 ? errno : 0);
            return;
        }
        if (c->first_byte == 0) c->first_byte = now;
        size_t used = 0;
        int result = parse_response(c, buffer, (size_t)n, &used);
        if (result == PARSE_GARBAGE || (result == PARSE_DONE && used < (size_t)n)) {
            finish_with_error(w, c, ERR_PROTOCOL, now, EPROTO);
            return;
        }
        if (result == PARSE_DONE) {
            finish_ok(w, c, now);
            return;
        }
    }
}

static void on_event(worker *w, conn *c, uint32_t events, char *buffer, size_t size) {
    switch (c->state) {
    case C_CONNECTING:
        if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) on_connected(w, c);
        break;
    case C_WRITING:
        if (events & EPOLLIN) {
            /* An answer before the whole request went out (an early error): read it. */
            on_readable(w, c, buffer, size);
        } else if (events & (EPOLLERR | EPOLLHUP)) {
            on_peer_gone(w, c, now_ns(), ECONNRESET);
        } else if (events & EPOLLOUT) {
            const settings *s = w->s;
            ssize_t n = send(c->fd, s->request + c->written, s->request_length - c->written,
                             MSG_NOSIGNAL);
            if (n > 0) c->written += (size_t)n;
            else if (n < 0 && errno != EAGAIN && errno != EINTR) {
                on_peer_gone(w, c, now_ns(), errno);
                return;
            }
            if (c->written == s->request_length) {
                c->state = C_READING;
                set_interest(w, c, EPOLLIN | EPOLLRDHUP);
            }
        }
        break;
    case C_READING:
    case C_IDLE:
        if (events & (EPOLLIN | EPOLLRDHUP | EPOLLERR | EPOLLHUP)) on_readable(w, c, buffer, size);
        break;
    default:
        break;
    }
}

/* Timeouts, and closed-loop retries after a connect error. */
static void scan(worker *w, int64_t now) {
    int64_t timeout_ns = (int64_t)(w->s->timeout * (double)NS);
    for (int i = 0; i < w->connection_count; i++) {
        conn *c = &w->conns[i];
        if ((c->state == C_CONNECTING || c->state == C_WRITING || c->state == C_READING) &&
            now - c->started > timeout_ns) {
            finish_with_error(w, c, ERR_TIMEOUT, now, ETIMEDOUT);
        } else if (c->state == C_WAITING && now >= c->retry_at && !w->stopping) {
            c->state = C_CLOSED;
            if (request_budget_left(w)) start_request(w, c, now, now);
        }
    }
}

/* Open loop: every request that is due goes out on a free connection, with its intended
 * time; one that finds no free connection waits, and its latency counts the wait. */
static void issue_due(worker *w, int64_t now) {
    while (w->free_count > 0 && !w->stopping && request_budget_left(w)) {
        int64_t intended = w->schedule_start + (int64_t)((double)w->next_index * w->period_ns);
        if (intended > now) return;
        conn *c = &w->conns[w->free_slots[--w->free_count]];
        w->next_index++;
        int64_t ready = c->free_since > intended ? c->free_since : intended;
        int64_t lag = now - ready;
        if (intended >= w->measure_start) {
            w->sends++;
            /* Due before a connection was free: the server held them all. The corrected
             * latency counts this wait, as it should; it is not the generator's lateness. */
            if (ready > intended) {
                w->waited_sends++;
                if (ready - intended > w->max_connection_wait)
                    w->max_connection_wait = ready - intended;
            }
            if (lag > w->max_send_lag) w->max_send_lag = lag;
            /* Due during a stretch already counted by note_absence: not twice. */
            if (lag > MISSED_SEND_NS && intended > w->absent_until) w->missed_sends++;
        }
        start_request(w, c, intended, now);
    }
}

/* The generator could not act from `from` to `to` (it overslept its wake-up time: descheduled,
 * stopped; or it spent that long handling events). Every send due in that stretch is missed,
 * whether or not a connection would have been free for it: a late generator also handles
 * completions late, and would otherwise pass its own delay off as the server's. */
static void note_absence(worker *w, int64_t from, int64_t to, int had_free) {
    if (to - from <= MISSED_SEND_NS || w->s->rate <= 0 || w->stopping) return;
    /* Every connection was busy: the sends due in the stretch had to wait for the server
     * anyway (issue_due counts them as waited), whatever the generator was doing. */
    if (!had_free) return;
    if (from < w->measure_start) from = w->measure_start;
    if (to <= from) return;
    if (to - from > w->max_send_lag) w->max_send_lag = to - from;
    double first = ceil((double)(from - w->schedule_start) / w->period_ns);
    double last = floor((double)(to - w->schedule_start) / w->period_ns);
    if (first < (double)w->next_index) first = (double)w->next_index;
    if (last >= first) w->missed_sends += (long long)(last - first) + 1;
    w->absent_until = to;
}

static int64_t next_due(const worker *w) {
    return w->schedule_start + (int64_t)((double)w->next_index * w->period_ns);
}

static int wait_events(worker *w, struct epoll_event *events, int64_t wait_ns) {
    if (wait_ns < 0) wait_ns = 0;
    struct timespec t = {.tv_sec = wait_ns / NS, .tv_nsec = wait_ns % NS};
    int n = epoll_pwait2(w->epfd, events, MAX_EVENTS, &t, NULL);
    if (n < 0 && errno == ENOSYS)
        n = epoll_wait(w->epfd, events, MAX_EVENTS, (int)((wait_ns + 999999) / 1000000));
    return n;
}

/* The signal (SIGINT, SIGTERM) that asked the run to stop; 0 while none has. Set by the
 * handler, read by every worker at each turn of its loop (at least every SCAN_INTERVAL_NS). */
static atomic_int stop_signal;

static void on_stop_signal(int number) {
    atomic_store(&stop_signal, number);
}

static int requests_in_flight(const worker *w) {
    int count = 0;
    for (int i = 0; i < w->connection_count; i++) {
        int state = w->conns[i].state;
        count += state == C_CONNECTING || state == C_WRITING || state == C_READING;
    }
    return count;
}

/* Interrupted: no request is sent any more; the ones in flight may finish until the returned
 * deadline. */
static int64_t begin_interruption(worker *w, int64_t now) {
    w->interrupted_at = now;
    w->stopping = 1;
    int64_t timeout_ns = (int64_t)(w->s->timeout * (double)NS);
    return now + (timeout_ns < INTERRUPT_DRAIN_NS ? timeout_ns : INTERRUPT_DRAIN_NS);
}

static void *run_worker(void *argument) {
    worker *w = argument;
    const settings *s = w->s;
    struct epoll_event events[MAX_EVENTS];
    static __thread char buffer[65536];
    int open_loop = s->rate > 0;
    int64_t now = now_ns();
    for (int i = 0; i < w->connection_count; i++) {
        w->conns[i].free_since = w->schedule_start;
        if (open_loop) w->free_slots[w->free_count++] = w->connection_count - 1 - i;
        else if (request_budget_left(w)) start_request(w, &w->conns[i], now, now);
    }
    int64_t next_scan = now + SCAN_INTERVAL_NS, drain_until = 0;
    for (;;) {
        now = now_ns();
        if (!w->interrupted_at && atomic_load_explicit(&stop_signal, memory_order_relaxed))
            drain_until = begin_interruption(w, now);
        if (w->interrupted_at && (now >= drain_until || !requests_in_flight(w))) break;
        if (!w->request_limit && now >= w->end_at) break;
        if (w->request_limit && w->finished >= w->request_limit) break;
        if (open_loop) issue_due(w, now);
        if (now >= next_scan) {
            scan(w, now);
            next_scan = now + SCAN_INTERVAL_NS;
        }
        maybe_contribute_interval(w, now);
        int64_t wake = next_scan;
        if (!w->request_limit && w->end_at < wake) wake = w->end_at;
        if (w->log && w->next_interval_at < wake) wake = w->next_interval_at;
        if (w->interrupted_at && drain_until < wake) wake = drain_until;
        if (open_loop && w->free_count > 0 && request_budget_left(w) && next_due(w) < wake)
            wake = next_due(w);
        int had_free = w->free_count > 0;
        int64_t before_wait = now_ns();
        int n = wait_events(w, events, wake - before_wait);
        if (n < 0 && errno != EINTR) {
            perror("cw_load: epoll_wait");
            exit(1);
        }
        int64_t after_wait = now_ns();
        if (after_wait > wake)
            note_absence(w, wake > before_wait ? wake : before_wait, after_wait, had_free);
        had_free = w->free_count > 0;
        for (int i = 0; i < n; i++) on_event(w, events[i].data.ptr, events[i].events, buffer, sizeof buffer);
        note_absence(w, after_wait, now_ns(), had_free);
    }
    now = now_ns();
    w->stopping = 1;
    for (int i = 0; i < w->connection_count; i++) {
        conn *c = &w->conns[i];
        if ((c->state == C_CONNECTING || c->state == C_WRITING || c->state == C_READING) &&
            in_window(w, c))
            w->unfinished++;
        close_socket(w, c);
    }
    /* Interrupted: what it measured ends at the interruption, or at the last answer counted
     * after it (the requests in flight that finished). */
    int64_t stopped = w->interrupted_at ? w->interrupted_at : now;
    if (w->interrupted_at)
        w->measured_until = w->last_finish > w->interrupted_at ? w->last_finish : w->interrupted_at;
    if (open_loop && !w->request_limit) {
        /* Due but never sent for want of a free connection: the backlog at the end. */
        int64_t due = (stopped - w->schedule_start) / (int64_t)(w->period_ns > 1 ? w->period_ns : 1);
        if (due > w->next_index) w->unsent = due - w->next_index;
    }
    if (!w->last_finish || w->request_limit == 0) w->last_finish = now;
    contribute_tail(w);
    struct timespec cpu;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
    w->cpu_seconds = (double)cpu.tv_sec + (double)cpu.tv_nsec / 1e9;
    return NULL;
}

/* ---- summary ----------------------------------------------------------------------------- */

static void json_string(FILE *out, const char *text) {
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(out, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f) fprintf(out, "\\u%04x", *p);
        else fputc(*p, out);
    }
    fputc('"', out);
}

static const char *const PERCENTILE_KEYS[] = {"50", "66", "75", "80", "90", "95",
                                              "98", "99", "99.9", "99.99", "100"};
static const double PERCENTILES[] = {50, 66, 75, 80, 90, 95, 98, 99, 99.9, 99.99, 100};

static void write_histogram(FILE *out, const cw_hdr *h, const char *encoded) {
    double mean, stdev;
    cw_hdr_moments(h, &mean, &stdev);
    fprintf(out, "{\"count\": %" PRId64 ", \"min\": %.9g, \"max\": %.9g, \"mean\": %.9g, "
                 "\"stdev\": %.9g, \"percentiles\": {",
            h->total, (double)cw_hdr_min(h) / 1e9, (double)cw_hdr_max(h) / 1e9, mean / 1e9,
            stdev / 1e9);
    for (size_t i = 0; i < sizeof PERCENTILES / sizeof *PERCENTILES; i++)
        fprintf(out, "%s\"%s\": %.9g", i ? ", " : "", PERCENTILE_KEYS[i],
                (double)cw_hdr_percentile(h, PERCENTILES[i]) / 1e9);
    fprintf(out, "}, \"hdr\": \"%s\"}", encoded);
}

/* The peak resident memory of this program since its exec (VmHWM), bytes; 0 if unknown.
 * getrusage's ru_maxrss will not do: Linux keeps in it the RSS of the process that forked
 * us before the exec (a Python runner's tens of MB). */
static long long peak_rss_bytes(void) {
    FILE *status = fopen("/proc/self/status", "r");
    if (!status) return 0;
    char line[256];
    long long kib = 0;
    while (fgets(line, sizeof line, status))
        if (sscanf(line, "VmHWM: %lld kB", &kib) == 1) break;
    fclose(status);
    return kib * 1024;
}

typedef struct {
    long long requests, errors[ERR_KINDS], unfinished, unsent, missed_sends, sends, waited_sends;
    int64_t max_send_lag, max_connection_wait;
    double duration, cpu_seconds, wall_seconds, cpu_share, busiest_thread_share;
    int saturated;
    int interrupted_by; /* the signal that stopped the run early, 0 if none */
    long long peak_rss_bytes;
    cw_hdr *hist[2][PHASES];
    char *encoded[2][PHASES];
} totals;

static int write_summary(FILE *out, const settings *s, const totals *t) {
    fprintf(out, "{\"format\": \"cutaway-load\", \"version\": 2, \"interrupted\": %s, "
                 "\"mode\": \"%s\", \"protocol\": \"%s\", \"target\": ",
            t->interrupted_by ? "true" : "false", s->rate > 0 ? "open" : "closed",
            s->protocol == PROTO_HTTP ? "http" : "memcached");
    json_string(out, s->target);
    fprintf(out, ", \"connections\": %d, \"rate\": ", s->connections);
    if (s->rate > 0) fprintf(out, "%.9g", s->rate);
    else fputs("null", out);
    fprintf(out, ", \"new_connection\": %s, \"duration\": %.9g, \"requests\": %lld, \"errors\": {",
            s->new_connection ? "true" : "false", t->duration, t->requests);
    for (int k = 0; k < ERR_KINDS; k++)
        fprintf(out, "%s\"%s\": %lld", k ? ", " : "", ERROR_NAMES[k], t->errors[k]);
    fprintf(out, "}, \"unfinished\": %lld, \"unsent\": %lld, \"throughput\": %.9g, "
                 "\"latency\": {",
            t->unfinished, t->unsent, t->duration > 0 ? (double)t->requests / t->duration : 0.0);
    for (int view = 0; view < 2; view++) {
        fprintf(out, "%s\"%s\": {", view ? ", " : "", view == CORRECTED ? "corrected" : "uncorrected");
        for (int phase = 0; phase < PHASES; phase++) {
            fprintf(out, "%s\"%s\": ", phase ? ", " : "", PHASE_NAMES[phase]);
            write_histogram(out, t->hist[view][phase], t->encoded[view][phase]);
        }
        fputs("}", out);
    }
    fprintf(out, "}, \"generator\": {\"cpu_seconds\": %.6f, \"wall_seconds\": %.6f, "
                 "\"threads\": %d, \"cpu_share\": %.4f, \"busiest_thread_share\": %.4f, "
                 "\"saturated\": %s, \"sends\": %lld, \"missed_sends\": %lld, "
                 "\"max_send_lag\": %.9g, \"waited_sends\": %lld, "
                 "\"max_connection_wait\": %.9g, \"peak_rss_bytes\": %lld}}\n",
            t->cpu_seconds, t->wall_seconds, s->threads, t->cpu_share, t->busiest_thread_share,
            t->saturated ? "true" : "false", t->sends, t->missed_sends,
            (double)t->max_send_lag / 1e9, t->waited_sends, (double)t->max_connection_wait / 1e9,
            t->peak_rss_bytes);
    return ferror(out) ? -1 : 0;
}

/* ---- main -------------------------------------------------------------------------------- */

static cw_hdr *new_histogram(void) {
    cw_hdr *h = calloc(1, sizeof *h);
    if (!h) {
        fputs("cw_load: out of memory\n", stderr);
        exit(1);
    }
    return h;
}

static interval_log *open_interval_log(const settings *s, int64_t measure_start) {
    if (!s->interval_log) return NULL;
    interval_log *log = calloc(1, sizeof *log);
    if (!log) exit(1);
    log->file = fopen(s->interval_log, "w");
    if (!log->file) usage_error("--interval-log: cannot write '%s': %s", s->interval_log, strerror(errno));
    pthread_mutex_init(&log->lock, NULL);
    log->contributors = s->threads;
    log->measure_start = measure_start;
    log->interval_seconds = 1.0;
    for (int slot = 0; slot < 2; slot++)
        for (int view = 0; view < 2; view++)
            for (int phase = 0; phase < PHASES; phase++) {
                log->pending[slot][view][phase] = new_histogram();
                if (!slot) log->tail[view][phase] = new_histogram();
            }
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    double epoch = (double)wall.tv_sec + (double)wall.tv_nsec / 1e9 +
                   (double)(measure_start - now_ns()) / (double)NS;
    time_t seconds = (time_t)epoch;
    struct tm utc;
    gmtime_r(&seconds, &utc);
    char date[64];
    strftime(date, sizeof date, "%a %b %d %H:%M:%S UTC %Y", &utc);
    fprintf(log->file, "#[Histogram log format version 1.3]\n");
    fprintf(log->file, "#[StartTime: %.3f (seconds since epoch), %s]\n", epoch, date);
    fprintf(log->file, "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\","
                       "\"Interval_Compressed_Histogram\"\n");
    fflush(log->file);
    return log;
}

int main(int argc, char **argv) {
    settings s;
    parse_arguments(argc, argv, &s);
    signal(SIGPIPE, SIG_IGN);
    /* Wake up at each intended send time, not up to 50 us after it (the default slack). */
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    struct rlimit files;
    if (!getrlimit(RLIMIT_NOFILE, &files) && files.rlim_cur < files.rlim_max) {
        files.rlim_cur = files.rlim_max;
        setrlimit(RLIMIT_NOFILE, &files);
    }
    /* SIGINT, SIGTERM: stop sending, let the requests in flight finish (briefly), write the
     * summary of what was measured, marked interrupted, and exit 128 + the signal. A second
     * signal ends the process at once (SA_RESETHAND). */
    struct sigaction stop = {.sa_handler = on_stop_signal, .sa_flags = SA_RESETHAND};
    sigemptyset(&stop.sa_mask);
    sigaction(SIGINT, &stop, NULL);
    sigaction(SIGTERM, &stop, NULL);
    FILE *out = stdout;
    if (s.output && !(out = fopen(s.output, "w")))
        usage_error("--output: cannot write '%s': %s", s.output, strerror(errno));

    double cpu_before = process_cpu_seconds();
    int64_t run_start = now_ns();
    int64_t measure_start = run_start + (int64_t)(s.warmup * (double)NS);
    int64_t end_at = measure_start + (int64_t)(s.duration * (double)NS);
    interval_log *log = open_interval_log(&s, measure_start);

    worker *workers = calloc((size_t)s.threads, sizeof *workers);
    pthread_t *ids = calloc((size_t)s.threads, sizeof *ids);
    if (!workers || !ids) exit(1);
    for (int k = 0; k < s.threads; k++) {
        worker *w = &workers[k];
        w->id = k;
        w->s = &s;
        w->log = log;
        w->connection_count = s.connections / s.threads + (k < s.connections % s.threads);
        w->conns = calloc((size_t)w->connection_count, sizeof *w->conns);
        w->free_slots = calloc((size_t)w->connection_count, sizeof *w->free_slots);
        if (!w->conns || !w->free_slots) {
            fputs("cw_load: out of memory for the connections\n", stderr);
            exit(1);
        }
        for (int i = 0; i < w->connection_count; i++) w->conns[i].fd = -1;
        w->epfd = epoll_create1(EPOLL_CLOEXEC);
        if (w->epfd < 0) {
            perror("cw_load: epoll_create1");
            exit(1);
        }
        if (s.rate > 0) {
            w->period_ns = (double)NS * s.threads / s.rate;
            /* Threads take turns: thread k's sends fall between the others'. */
            w->schedule_start = run_start + (int64_t)(w->period_ns * k / s.threads);
        } else {
            w->schedule_start = run_start;
        }
        w->measure_start = measure_start;
        w->end_at = end_at;
        w->next_interval_at = measure_start + NS;
        if (s.requests)
            w->request_limit = s.requests / s.threads + (k < s.requests % s.threads);
        for (int view = 0; view < 2; view++)
            for (int phase = 0; phase < PHASES; phase++) {
                w->hist[view][phase] = new_histogram();
                if (log) w->interval_hist[view][phase] = new_histogram();
            }
    }
    for (int k = 0; k < s.threads; k++)
        if (pthread_create(&ids[k], NULL, run_worker, &workers[k])) {
            fputs("cw_load: cannot start a thread\n", stderr);
            exit(1);
        }
    for (int k = 0; k < s.threads; k++) pthread_join(ids[k], NULL);
    int64_t run_end = now_ns();
    finish_interval_log(log, run_end);

    totals t = {0};
    int64_t last_finish = measure_start, measured_until = 0;
    int first_errno = 0;
    for (int view = 0; view < 2; view++)
        for (int phase = 0; phase < PHASES; phase++) t.hist[view][phase] = new_histogram();
    for (int k = 0; k < s.threads; k++) {
        worker *w = &workers[k];
        t.requests += w->completed;
        for (int e = 0; e < ERR_KINDS; e++) t.errors[e] += w->errors[e];
        t.unfinished += w->unfinished;
        t.unsent += w->unsent;
        t.missed_sends += w->missed_sends;
        t.sends += w->sends;
        if (w->max_send_lag > t.max_send_lag) t.max_send_lag = w->max_send_lag;
        t.waited_sends += w->waited_sends;
        if (w->max_connection_wait > t.max_connection_wait)
            t.max_connection_wait = w->max_connection_wait;
        if (w->last_finish > last_finish) last_finish = w->last_finish;
        if (!first_errno) first_errno = w->first_errno;
        if (w->interrupted_at) t.interrupted_by = atomic_load(&stop_signal);
        if (w->measured_until > measured_until) measured_until = w->measured_until;
        for (int view = 0; view < 2; view++)
            for (int phase = 0; phase < PHASES; phase++)
                cw_hdr_add(t.hist[view][phase], w->hist[view][phase]);
    }
    int64_t measured_end = s.requests ? last_finish : end_at;
    if (t.interrupted_by && (s.requests || measured_until < end_at)) measured_end = measured_until;
    if (measured_end < measure_start) measured_end = measure_start; /* stopped in the warmup */
    t.duration = (double)(measured_end - measure_start) / (double)NS;
    t.cpu_seconds = process_cpu_seconds() - cpu_before;
    t.wall_seconds = (double)(run_end - run_start) / (double)NS;
    t.cpu_share = t.wall_seconds > 0 ? t.cpu_seconds / (t.wall_seconds * s.threads) : 0;
    for (int k = 0; k < s.threads; k++) {
        double share = t.wall_seconds > 0 ? workers[k].cpu_seconds / t.wall_seconds : 0;
        if (share > t.busiest_thread_share) t.busiest_thread_share = share;
    }
    /* The generator limited the result when a thread had no idle time left: its own CPU shows
     * it. Late sends alone do not: on a shared machine an idle generator is woken late by the
     * other processes, and its corrected latencies (from the intended send times) still count
     * that lateness; missed_sends and max_send_lag say how much of it there was. */
    t.saturated = t.busiest_thread_share >= 0.9;

    /* Encoded before the peak memory is read, so that the figure includes the encoding. */
    for (int view = 0; view < 2; view++)
        for (int phase = 0; phase < PHASES; phase++)
            if (!(t.encoded[view][phase] = cw_hdr_encode(t.hist[view][phase]))) {
                fputs("cw_load: out of memory encoding the histograms\n", stderr);
                return 1;
            }
    t.peak_rss_bytes = peak_rss_bytes();
    if (write_summary(out, &s, &t) || fflush(out) || (out != stdout && fclose(out))) {
        fprintf(stderr, "cw_load: cannot write the summary: %s\n", strerror(errno));
        return 1;
    }
    for (int view = 0; view < 2; view++)
        for (int phase = 0; phase < PHASES; phase++) free(t.encoded[view][phase]);
    if (t.interrupted_by) {
        fprintf(stderr,
                "cw_load: interrupted by %s: the summary covers the %.3f s measured before it "
                "(%lld requests, %lld unfinished)\n",
                t.interrupted_by == SIGINT ? "SIGINT" : "SIGTERM", t.duration, t.requests,
                t.unfinished);
        return 128 + t.interrupted_by;
    }
    if (t.requests == 0) {
        long long errors = 0;
        for (int e = 0; e < ERR_KINDS; e++) errors += t.errors[e];
        fprintf(stderr,
                "cw_load: no request to %s succeeded: %lld errors (connect %lld, reset %lld, "
                "timeout %lld, status %lld, protocol %lld), %lld unfinished at the end%s%s\n",
                s.target, errors, t.errors[ERR_CONNECT], t.errors[ERR_RESET],
                t.errors[ERR_TIMEOUT], t.errors[ERR_STATUS], t.errors[ERR_PROTOCOL],
                t.unfinished, first_errno ? "; first error: " : "",
                first_errno ? strerror(first_errno) : "");
        return 1;
    }
    return 0;
}
