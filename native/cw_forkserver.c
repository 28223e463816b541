/*
 * cw_forkserver.c: cutaway's fork server, which spawns, times and reaps every measured run.
 *
 * Usage: cw_forkserver SOCKET_FD PARENT_PID   (started by src/cutaway/runner/forkserver.py)
 *
 * Why a separate executable: a child's ru_maxrss starts at the high-water RSS of the process
 * that spawned it (exec records the old mm's hiwater RSS in signal->maxrss, and a vfork'd or
 * posix_spawn'ed child shares its parent's mm until exec). Spawned from the Python process,
 * `/bin/true` would report the interpreter's RSS. Spawned from this small process (linked
 * statically by setup.py when it can: ~0.7 MB peak RSS), it reports its own. Timing here also
 * keeps interpreter work out of the measured interval: the wall clock (CLOCK_MONOTONIC) is
 * read right before posix_spawn and right after wait4 returns. Keep this process small: its
 * peak RSS is the floor of every max_rss it reports.
 *
 * Contract (the wire format is in cw_protocol.h):
 * - Serves RUN requests one at a time on SOCKET_FD until EOF, then exits with status 0.
 * - Each child gets stdin from the fd sent with the request (CW_RUN_HAS_STDIN) or from
 *   /dev/null, stdout/stderr from the fds sent with the request, exactly the given environment, the given cwd, default dispositions for every
 *   signal, an empty signal mask, and a process group of its own (pgid == pid).
 * - At the request's timeout, or when the client goes away (EOF) or its parent dies, the
 *   child's whole process group gets SIGKILL and the child is reaped before anything else.
 * - Ignores SIGINT, SIGTERM and SIGQUIT (the client decides what an interrupt means) and
 *   SIGPIPE (a vanished client shows up as EPIPE/EOF instead).
 * - A malformed request gets a FATAL reply and the server exits with status 2.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cw_protocol.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* The signal the kernel sends when our parent dies (PR_SET_PDEATHSIG). It is also sent when
 * only the *thread* that started us exits, so its handler only raises a flag and the main
 * loop compares getppid() with the parent we were told about. */
#define CW_PARENT_DEATH_SIGNAL SIGHUP

static volatile sig_atomic_t cw_parent_signal_seen = 0;

/* Everything the server keeps between requests. */
struct cw_server {
    int socket_fd;
    pid_t parent_pid;
    int devnull_fd;     /* opened once: the stdin of each child not given one */
    sigset_t wait_mask; /* signal mask while blocked in ppoll: lets the handled signals in */
    char *payload;      /* request payload, reused across requests */
    size_t payload_capacity;
    char **vector; /* argv then envp pointers into payload, reused across requests */
    size_t vector_capacity;
};

/* One decoded RUN request; every pointer points into the server's payload buffer. */
struct cw_run {
    uint32_t sequence;
    int64_t timeout_ns;
    const char *path;
    const char *cwd; /* NULL: the server's own */
    char **argv;
    char **envp;
    int has_stdin; /* CW_RUN_HAS_STDIN: fds[0] is the child's stdin */
    int fds[CW_RUN_MAX_FD_COUNT]; /* as received: [stdin,] stdout, stderr */
    int fd_count;
};

enum cw_wait_outcome { CW_CHILD_EXITED, CW_CHILD_TIMED_OUT, CW_CLIENT_GONE };

/* Monotonic now in ns: the clock of every wall measurement. */
static int64_t cw_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A rusage time in ns. */
static int64_t cw_timeval_ns(struct timeval tv) {
    return (int64_t)tv.tv_sec * 1000000000 + (int64_t)tv.tv_usec * 1000;
}

/* Signal handler: only notes that the parent-death signal arrived (async-signal-safe). */
static void cw_note_parent_signal(int signal_number) {
    (void)signal_number;
    cw_parent_signal_seen = 1;
}

/* Signal handler for SIGCHLD: does nothing, but its existence makes ppoll return EINTR when a
 * child exits, which the wait loop needs on kernels without pidfd_open (< 5.3). */
static void cw_ignore_signal(int signal_number) { (void)signal_number; }

/* True when the parent-death signal arrived and our parent really is another process now. */
static int cw_parent_gone(const struct cw_server *server) {
    if (!cw_parent_signal_seen) return 0;
    cw_parent_signal_seen = 0;
    return getppid() != server->parent_pid;
}

/* Write all of `data` to the socket. Returns 0, or -1 when the client is gone. */
static int cw_send_all(int fd, const void *data, size_t size) {
    const char *cursor = data;
    while (size > 0) {
        ssize_t sent = send(fd, cursor, size, MSG_NOSIGNAL);
        if (sent < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        cursor += sent;
        size -= (size_t)sent;
    }
    return 0;
}

/* Send one framed message. Returns 0, or -1 when the client is gone. */
static int cw_send_message(int fd, uint16_t type, uint32_t sequence, const void *payload,
                           uint32_t length) {
    struct cw_header header = {CW_MAGIC, CW_PROTOCOL_VERSION, type, length, sequence};
    if (cw_send_all(fd, &header, sizeof header) != 0) return -1;
    return length == 0 ? 0 : cw_send_all(fd, payload, length);
}

/* Tell the client why we give up, then exit with status 2. Only called with no child alive. */
static void cw_fatal(const struct cw_server *server, const char *message) {
    cw_send_message(server->socket_fd, CW_MSG_FATAL, 0, message, (uint32_t)strlen(message));
    fprintf(stderr, "cw_forkserver: %s\n", message);
    exit(2);
}

/* Close every fd in fds[0..count). */
static void cw_close_fds(const int *fds, int count) {
    for (int i = 0; i < count; i++) close(fds[i]);
}

/* Receive exactly `size` bytes. When `fds` is not NULL, SCM_RIGHTS descriptors that arrive
 * with them are stored there (close-on-exec, at most CW_RUN_MAX_FD_COUNT, count in *fd_count; a
 * request with more is fatal). Returns 1 when complete, 0 on EOF before the first byte, -1 on
 * EOF or error in the middle. */
static int cw_receive(const struct cw_server *server, void *buffer, size_t size, int *fds,
                      int *fd_count) {
    char *cursor = buffer;
    size_t done = 0;
    while (done < size) {
        union {
            struct cmsghdr align;
            char bytes[CMSG_SPACE(sizeof(int) * CW_RUN_MAX_FD_COUNT)];
        } control;
        struct iovec iov = {cursor + done, size - done};
        struct msghdr message = {.msg_iov = &iov, .msg_iovlen = 1};
        if (fds != NULL) {
            message.msg_control = control.bytes;
            message.msg_controllen = sizeof control.bytes;
        }
        ssize_t got = recvmsg(server->socket_fd, &message, MSG_CMSG_CLOEXEC);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return done == 0 && got == 0 ? 0 : -1;
        for (struct cmsghdr *c = fds ? CMSG_FIRSTHDR(&message) : NULL; c != NULL;
             c = CMSG_NXTHDR(&message, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
            int count = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            int *received = (int *)(void *)CMSG_DATA(c);
            if (*fd_count + count > CW_RUN_MAX_FD_COUNT) {
                cw_close_fds(received, count);
                cw_close_fds(fds, *fd_count);
                cw_fatal(server, "too many file descriptors with a request");
            }
            memcpy(fds + *fd_count, received, sizeof(int) * (size_t)count);
            *fd_count += count;
        }
        if (message.msg_flags & MSG_CTRUNC) cw_fatal(server, "file descriptors were truncated");
        done += (size_t)got;
    }
    return 1;
}

/* Grow a buffer to hold at least `needed` elements of `element_size` bytes. Fatal on OOM. */
static void *cw_reserve(const struct cw_server *server, void *buffer, size_t *capacity,
                        size_t needed, size_t element_size) {
    if (needed <= *capacity) return buffer;
    void *grown = realloc(buffer, needed * element_size);
    if (grown == NULL) cw_fatal(server, "out of memory");
    *capacity = needed;
    return grown;
}

/* Split the RUN payload (already in server->payload, `length` bytes) into `run`. Returns NULL,
 * or why the request is malformed. */
static const char *cw_decode_run(struct cw_server *server, uint32_t length, struct cw_run *run) {
    struct cw_run_request fixed;
    if (length < sizeof fixed) return "RUN payload shorter than its fixed part";
    memcpy(&fixed, server->payload, sizeof fixed);
    int has_cwd = (fixed.flags & CW_RUN_HAS_CWD) != 0;
    run->has_stdin = (fixed.flags & CW_RUN_HAS_STDIN) != 0;
    if ((fixed.flags & ~(CW_RUN_HAS_CWD | CW_RUN_HAS_STDIN)) != 0 || fixed.reserved != 0)
        return "unknown RUN flags";
    if (fixed.argc == 0) return "empty argv";
    if (fixed.timeout_ns < 0 || fixed.timeout_ns > INT64_MAX / 2) return "timeout out of range";
    size_t strings = 1 + (size_t)has_cwd + (size_t)fixed.argc + (size_t)fixed.envc;
    if (strings > length) return "more strings than payload bytes";
    server->vector = cw_reserve(server, server->vector, &server->vector_capacity,
                                (size_t)fixed.argc + (size_t)fixed.envc + 2, sizeof(char *));
    char *cursor = server->payload + sizeof fixed, *end = server->payload + length;
    for (size_t i = 0; i < strings; i++) {
        char *nul = memchr(cursor, '\0', (size_t)(end - cursor));
        if (nul == NULL) return "string without its NUL terminator";
        if (i == 0) run->path = cursor;
        else if (has_cwd && i == 1) run->cwd = cursor;
        else {
            size_t index = i - 1 - (size_t)has_cwd; /* argv then envp, each NULL-terminated */
            server->vector[index < fixed.argc ? index : index + 1] = cursor;
        }
        cursor = nul + 1;
    }
    if (cursor != end) return "bytes after the last string";
    if (!has_cwd) run->cwd = NULL;
    server->vector[fixed.argc] = NULL;
    server->vector[fixed.argc + fixed.envc + 1] = NULL;
    run->argv = server->vector;
    run->envp = server->vector + fixed.argc + 1;
    run->timeout_ns = fixed.timeout_ns;
    return NULL;
}

/* Read the next RUN request into `run`. Returns 1, or 0 when the client closed the socket.
 * Anything malformed is fatal. */
static int cw_read_request(struct cw_server *server, struct cw_run *run) {
    struct cw_header header;
    run->fd_count = 0;
    int status = cw_receive(server, &header, sizeof header, run->fds, &run->fd_count);
    if (status == 0) return 0;
    if (status < 0) exit(0); /* the client went away mid-request: nothing to clean up */
    if (header.magic != CW_MAGIC) cw_fatal(server, "bad magic: not a cutaway client");
    if (header.version != CW_PROTOCOL_VERSION) cw_fatal(server, "unsupported protocol version");
    if (header.type != CW_MSG_RUN) cw_fatal(server, "unexpected message type");
    if (header.length > CW_MAX_PAYLOAD_BYTES) cw_fatal(server, "request too large");
    server->payload = cw_reserve(server, server->payload, &server->payload_capacity,
                                 (size_t)header.length + 1, 1);
    if (cw_receive(server, server->payload, header.length, NULL, NULL) != 1) exit(0);
    const char *problem = cw_decode_run(server, header.length, run);
    if (problem == NULL && run->fd_count != CW_RUN_FD_COUNT + run->has_stdin)
        problem = "RUN needs two descriptors (three with CW_RUN_HAS_STDIN)";
    if (problem != NULL) {
        cw_close_fds(run->fds, run->fd_count);
        cw_fatal(server, problem);
    }
    run->sequence = header.sequence;
    return 1;
}

/* Fill spawn file actions and attributes for `run` (see the contract at the top). Returns 0
 * or an errno value. Both objects must be destroyed by the caller either way. */
static int cw_prepare_spawn(const struct cw_server *server, const struct cw_run *run,
                            posix_spawn_file_actions_t *actions, posix_spawnattr_t *attributes) {
    posix_spawn_file_actions_init(actions);
    posix_spawnattr_init(attributes);
    const int *fds = run->fds + run->has_stdin; /* stdout, stderr */
    int stdin_fd = run->has_stdin ? run->fds[0] : server->devnull_fd;
    int rc = posix_spawn_file_actions_adddup2(actions, stdin_fd, 0);
    if (rc == 0) rc = posix_spawn_file_actions_adddup2(actions, fds[0], 1);
    if (rc == 0) rc = posix_spawn_file_actions_adddup2(actions, fds[1], 2);
    if (rc == 0 && run->cwd != NULL) rc = posix_spawn_file_actions_addchdir_np(actions, run->cwd);
    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    if (rc == 0) rc = posix_spawnattr_setsigdefault(attributes, &all);
    if (rc == 0) rc = posix_spawnattr_setsigmask(attributes, &none);
    if (rc == 0) rc = posix_spawnattr_setpgroup(attributes, 0);
    if (rc == 0)
        rc = posix_spawnattr_setflags(attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF |
                                                      POSIX_SPAWN_SETSIGMASK);
    return rc;
}

/* After a failed spawn: CW_STAGE_CWD with its errno in *error_number when the cwd is what
 * failed (posix_spawn reports a failed chdir and a failed exec the same way), else
 * CW_STAGE_EXEC. Runs only on the failure path, never inside a measurement. */
static uint32_t cw_failed_stage(const struct cw_run *run, int *error_number) {
    if (run->cwd == NULL) return CW_STAGE_EXEC;
    struct stat info;
    int cwd_error = 0;
    if (stat(run->cwd, &info) != 0) cwd_error = errno;
    else if (!S_ISDIR(info.st_mode)) cwd_error = ENOTDIR;
    else if (access(run->cwd, X_OK) != 0) cwd_error = errno;
    if (cwd_error == 0) return CW_STAGE_EXEC;
    *error_number = cwd_error;
    return CW_STAGE_CWD;
}

/* True when `pid` has exited (not reaped: WNOWAIT). For kernels without pidfd_open. */
static int cw_child_exited(pid_t pid) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    return waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid;
}

/* Block until the child exits, the deadline (monotonic ns, 0: none) passes, or the client or
 * our parent goes away. Does not reap. `pidfd` may be -1 (old kernel): SIGCHLD wakes ppoll. */
static enum cw_wait_outcome cw_wait_child(const struct cw_server *server, pid_t pid, int pidfd,
                                          int64_t deadline_ns) {
    for (;;) {
        if (pidfd < 0 && cw_child_exited(pid)) return CW_CHILD_EXITED;
        struct timespec left, *timeout = NULL;
        if (deadline_ns > 0) {
            int64_t left_ns = deadline_ns - cw_now_ns();
            if (left_ns <= 0) return CW_CHILD_TIMED_OUT;
            left.tv_sec = left_ns / 1000000000;
            left.tv_nsec = left_ns % 1000000000;
            timeout = &left;
        }
        struct pollfd fds[2] = {{server->socket_fd, POLLRDHUP, 0}, {pidfd, POLLIN, 0}};
        int ready = ppoll(fds, pidfd >= 0 ? 2 : 1, timeout, &server->wait_mask);
        if (ready < 0) {
            if (errno != EINTR && errno != EAGAIN && errno != ENOMEM) return CW_CLIENT_GONE;
            if (cw_parent_gone(server)) return CW_CLIENT_GONE;
            continue;
        }
        if (fds[0].revents & (POLLRDHUP | POLLHUP | POLLERR)) return CW_CLIENT_GONE;
        if (pidfd >= 0 && fds[1].revents != 0) return CW_CHILD_EXITED;
    }
}

/* SIGKILL the child's process group (and the child itself, should it have left the group). */
static void cw_kill_group(pid_t pid) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
}

/* Reap `pid`, filling status and usage. */
static void cw_reap(pid_t pid, int *status, struct rusage *usage) {
    while (wait4(pid, status, 0, usage) < 0 && errno == EINTR) {
    }
}

/* The RESULT payload for a reaped child. */
static struct cw_result cw_make_result(pid_t pid, int status, int64_t wall_ns,
                                       const struct rusage *usage, int timed_out) {
    struct cw_result result = {
        .pid = pid,
        .wait_status = status,
        .wall_ns = wall_ns,
        .user_ns = cw_timeval_ns(usage->ru_utime),
        .sys_ns = cw_timeval_ns(usage->ru_stime),
        .max_rss_bytes = (int64_t)usage->ru_maxrss * 1024, /* KiB on Linux */
        .minor_faults = usage->ru_minflt,
        .major_faults = usage->ru_majflt,
        .voluntary_switches = usage->ru_nvcsw,
        .involuntary_switches = usage->ru_nivcsw,
        .block_in = usage->ru_inblock,
        .block_out = usage->ru_oublock,
        .flags = timed_out ? CW_RESULT_TIMED_OUT : 0,
    };
    return result;
}

/* Serve one decoded RUN: spawn, report SPAWNED, wait, reap, report RESULT (or SPAWN_ERROR).
 * Closes the request's fds. Exits (after killing and reaping the child) if the client or our
 * parent goes away meanwhile. */
static void cw_serve_run(const struct cw_server *server, const struct cw_run *run) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int rc = cw_prepare_spawn(server, run, &actions, &attributes);
    pid_t pid = -1;
    int64_t start_ns = cw_now_ns();
    if (rc == 0) rc = posix_spawn(&pid, run->path, &actions, &attributes, run->argv, run->envp);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (rc != 0) {
        cw_close_fds(run->fds, run->fd_count);
        struct cw_spawn_error failure = {rc, 0};
        failure.stage = cw_failed_stage(run, &failure.error_number);
        if (cw_send_message(server->socket_fd, CW_MSG_SPAWN_ERROR, run->sequence, &failure,
                            sizeof failure) != 0)
            exit(0);
        return;
    }
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    struct cw_spawned spawned = {pid, 0};
    enum cw_wait_outcome outcome = CW_CLIENT_GONE;
    if (cw_send_message(server->socket_fd, CW_MSG_SPAWNED, run->sequence, &spawned,
                        sizeof spawned) == 0) {
        int64_t deadline_ns = run->timeout_ns > 0 ? start_ns + run->timeout_ns : 0;
        outcome = cw_wait_child(server, pid, pidfd, deadline_ns);
    }
    if (outcome != CW_CHILD_EXITED) cw_kill_group(pid);
    int status = 0;
    struct rusage usage;
    memset(&usage, 0, sizeof usage);
    cw_reap(pid, &status, &usage);
    int64_t end_ns = cw_now_ns();
    if (pidfd >= 0) close(pidfd);
    cw_close_fds(run->fds, run->fd_count); /* not earlier: keep syscalls out of the run */
    if (outcome == CW_CLIENT_GONE) exit(0);
    /* Timed out means killed by us: a child that exited on its own at the deadline did not. */
    int timed_out = outcome == CW_CHILD_TIMED_OUT && WIFSIGNALED(status) &&
                    WTERMSIG(status) == SIGKILL;
    struct cw_result result = cw_make_result(pid, status, end_ns - start_ns, &usage, timed_out);
    if (cw_send_message(server->socket_fd, CW_MSG_RESULT, run->sequence, &result,
                        sizeof result) != 0)
        exit(0);
}

/* Block until a request (or EOF) is readable. Returns 1, or 0 when our parent died. */
static int cw_wait_request(const struct cw_server *server) {
    for (;;) {
        struct pollfd fd = {server->socket_fd, POLLIN, 0};
        int ready = ppoll(&fd, 1, NULL, &server->wait_mask);
        if (ready > 0) return 1;
        if (ready < 0 && errno != EINTR && errno != EAGAIN && errno != ENOMEM) return 1;
        if (cw_parent_gone(server)) return 0;
    }
}

/* Install the dispositions of the contract and block the handled signals outside ppoll, so
 * that a signal arriving between two checks still interrupts the next ppoll. */
static void cw_setup_signals(struct cw_server *server) {
    int ignored[] = {SIGINT, SIGTERM, SIGQUIT, SIGPIPE};
    for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++) signal(ignored[i], SIG_IGN);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    sigemptyset(&action.sa_mask);
    action.sa_handler = cw_note_parent_signal;
    sigaction(CW_PARENT_DEATH_SIGNAL, &action, NULL);
    action.sa_handler = cw_ignore_signal;
    action.sa_flags = SA_NOCLDSTOP;
    sigaction(SIGCHLD, &action, NULL);
    sigset_t handled;
    sigemptyset(&handled);
    sigaddset(&handled, CW_PARENT_DEATH_SIGNAL);
    sigaddset(&handled, SIGCHLD);
    sigprocmask(SIG_BLOCK, &handled, &server->wait_mask);
    sigdelset(&server->wait_mask, CW_PARENT_DEATH_SIGNAL);
    sigdelset(&server->wait_mask, SIGCHLD);
}

/* Parse a decimal argument in [minimum, INT_MAX], or exit with a usage message. */
static int cw_parse_int(const char *text, int minimum) {
    char *end = NULL;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || value < minimum || value > INT_MAX) {
        fprintf(stderr, "usage: cw_forkserver SOCKET_FD PARENT_PID (bad number: %s)\n", text);
        exit(2);
    }
    return (int)value;
}

/* Set up from argv (see Usage at the top), greet the client, serve until EOF. */
int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: cw_forkserver SOCKET_FD PARENT_PID\n");
        return 2;
    }
    struct cw_server server = {.socket_fd = cw_parse_int(argv[1], 0)};
    server.parent_pid = (pid_t)cw_parse_int(argv[2], 1);
    struct stat info;
    if (fstat(server.socket_fd, &info) != 0 || !S_ISSOCK(info.st_mode)) {
        fprintf(stderr, "cw_forkserver: fd %d is not a socket\n", server.socket_fd);
        return 2;
    }
    fcntl(server.socket_fd, F_SETFD, FD_CLOEXEC);
    server.devnull_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (server.devnull_fd < 0) cw_fatal(&server, "cannot open /dev/null");
    cw_setup_signals(&server);
    prctl(PR_SET_PDEATHSIG, CW_PARENT_DEATH_SIGNAL);
    if (getppid() != server.parent_pid) return 0; /* it died before prctl */
    struct cw_hello hello = {(int32_t)getpid(), CW_MAX_PAYLOAD_BYTES};
    if (cw_send_message(server.socket_fd, CW_MSG_HELLO, 0, &hello, sizeof hello) != 0) return 0;
    struct cw_run run;
    memset(&run, 0, sizeof run);
    while (cw_wait_request(&server) && cw_read_request(&server, &run)) cw_serve_run(&server, &run);
    return 0;
}
