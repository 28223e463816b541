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
 * - Serves RUN and BLOCK requests one at a time on SOCKET_FD until EOF, then exits with
 *   status 0. A BLOCK is many runs made one after another, each exactly as a RUN is made
 *   (the same timing points, timeout and leftover handling), with no message while it runs:
 *   see "Blocks" below.
 * - Each child gets stdin from the fd sent with the request (CW_RUN_HAS_STDIN) or from
 *   /dev/null, stdout/stderr from the fds sent with the request, exactly the given
 *   environment, the given cwd, default dispositions for every signal, an empty signal mask,
 *   and a process group of its own (pgid == pid).
 * - At the request's timeout, or when the client goes away (EOF) or its parent dies, the
 *   child's whole process group gets SIGKILL and the child is reaped before anything else.
 * - The server is a child subreaper: whatever a run leaves running after its own process is
 *   reaped is found (counted, named), and stopped unless the request says to keep it (see
 *   "Leftovers" below). This happens after the wall clock of the run has stopped.
 * - Ignores SIGINT, SIGTERM and SIGQUIT (the client decides what an interrupt means) and
 *   SIGPIPE (a vanished client shows up as EPIPE/EOF instead).
 * - A malformed request gets a FATAL reply and the server exits with status 2.
 */
#define _GNU_SOURCE
#include <dirent.h>
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
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
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

/* A process found under the server, named by pid and start time (a reused pid has another). */
struct cw_process {
    pid_t pid;
    pid_t pgid;
    uint64_t start_ticks;
    char name[CW_LEFTOVER_NAME_BYTES];
};

/* A growable list of processes; grown only when a run leaves something behind. */
struct cw_process_list {
    struct cw_process *items;
    size_t count;
    size_t capacity;
};

/* Everything the server keeps between requests. */
struct cw_server {
    int socket_fd;
    pid_t parent_pid;
    pid_t own_pid;
    int subreaper; /* PR_SET_CHILD_SUBREAPER worked: orphans of runs come to us */
    int devnull_fd;     /* opened once: the stdin of each child not given one */
    sigset_t wait_mask; /* signal mask while blocked in ppoll: lets the handled signals in */
    /* The same, SIGCHLD left blocked: for waits that no SIGCHLD needs to end (the wait for a
     * request; the wait for a child watched by its pidfd). Each run's SIGCHLD then stays
     * pending instead of running a handler and restarting ppoll, between runs or, when it
     * lands before the pidfd wakes the server, inside the measured interval. */
    sigset_t quiet_mask;
    char *payload;      /* request payload, reused across requests */
    size_t payload_capacity;
    char **vector; /* argv then envp pointers into payload, reused across requests */
    size_t vector_capacity;
    struct cw_run *commands; /* a BLOCK's commands, decoded; reused across blocks */
    size_t commands_capacity;
    int results_fd; /* where a block's replies wait until it ends (-1: not made yet) */
    struct cw_process_list known; /* still under us after the last run: not that run's */
    struct cw_process_list found; /* scratch: what the current scan found */
};

/* What a RESULT says about a run's leftovers. */
struct cw_leftover_report {
    int64_t count;
    int name_count;
    char names[CW_LEFTOVER_NAME_COUNT][CW_LEFTOVER_NAME_BYTES];
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
    int keep_leftovers; /* CW_RUN_KEEP_LEFTOVERS: count what the child leaves, never stop it */
    int fds[CW_RUN_MAX_FD_COUNT]; /* as received: [stdin,] stdout, stderr */
    int fd_count;
};

/* One decoded BLOCK request; its order points into the server's payload buffer. */
struct cw_block {
    uint32_t sequence;
    int64_t time_limit_ns; /* 0: none */
    uint32_t command_count;
    uint32_t order_count;
    const char *order; /* order_count u16 indices into server->commands, unaligned */
    int fds[CW_BLOCK_FD_COUNT]; /* stdout, stderr: every run's */
    int stop_requested; /* a STOP for this block arrived */
    const char *broken; /* why a message that came while the block ran is malformed */
};

/* A RESULT message, framed: header, fixed part, then the leftovers' names. */
struct cw_result_message {
    struct cw_header header;
    struct cw_result result;
    char names[CW_LEFTOVER_NAME_COUNT * CW_LEFTOVER_NAME_BYTES];
};

enum cw_wait_outcome {
    CW_CHILD_EXITED,
    CW_CHILD_TIMED_OUT,
    CW_CHILD_STOPPED, /* the client sent STOP for the block */
    CW_CLIENT_GONE,
    CW_CLIENT_BROKE, /* the client sent something other than STOP while a block ran */
};

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

/* Send one framed message in one system call (header and payload gathered), so that the
 * client wakes once and reads it with one recv. Returns 0, or -1 when the client is gone. Used
 * for every reply to a RUN: SPAWNED is sent inside the measured interval, where a header and a
 * payload sent apart cost a second system call and could wake the client twice while the
 * measured command runs (the same work for every run, so the harness figure includes it). */
static int cw_send_gathered(int fd, uint16_t type, uint32_t sequence, const void *payload,
                            uint32_t length) {
    struct cw_header header = {CW_MAGIC, CW_PROTOCOL_VERSION, type, length, sequence};
    struct iovec parts[2] = {{&header, sizeof header}, {(void *)payload, length}};
    struct msghdr message = {.msg_iov = parts, .msg_iovlen = length == 0 ? 1 : 2};
    ssize_t sent;
    do sent = sendmsg(fd, &message, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    if (sent < 0) return -1;
    size_t done = (size_t)sent; /* a short send (a full socket buffer): the rest, in order */
    if (done < sizeof header) {
        if (cw_send_all(fd, (const char *)&header + done, sizeof header - done) != 0) return -1;
        done = sizeof header;
    }
    done -= sizeof header;
    return cw_send_all(fd, (const char *)payload + done, length - done);
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

/* Check the fixed part of a RUN payload (`length` bytes at `payload`) and copy it to *fixed.
 * Returns NULL, or why the payload is malformed. */
static const char *cw_check_run(const char *payload, uint32_t length,
                                struct cw_run_request *fixed) {
    if (length < sizeof *fixed) return "RUN payload shorter than its fixed part";
    memcpy(fixed, payload, sizeof *fixed);
    if ((fixed->flags & ~(CW_RUN_HAS_CWD | CW_RUN_HAS_STDIN | CW_RUN_KEEP_LEFTOVERS)) != 0 ||
        fixed->reserved != 0)
        return "unknown RUN flags";
    if (fixed->argc == 0) return "empty argv";
    if (fixed->timeout_ns < 0 || fixed->timeout_ns > INT64_MAX / 2) return "timeout out of range";
    size_t has_cwd = (fixed->flags & CW_RUN_HAS_CWD) != 0;
    if (1 + has_cwd + (size_t)fixed->argc + (size_t)fixed->envc > length)
        return "more strings than payload bytes";
    return NULL;
}

/* How many pointers a checked RUN payload's argv and envp take, each NULL-terminated. */
static size_t cw_run_slots(const struct cw_run_request *fixed) {
    return (size_t)fixed->argc + (size_t)fixed->envc + 2;
}

/* Split a checked RUN payload (`length` bytes at `payload`, fixed part in *fixed) into `run`:
 * its strings stay where they are, argv and envp point into `vector` (cw_run_slots() of
 * them). Returns NULL, or why the payload is malformed. */
static const char *cw_split_run(char *payload, uint32_t length,
                                const struct cw_run_request *fixed, char **vector,
                                struct cw_run *run) {
    int has_cwd = (fixed->flags & CW_RUN_HAS_CWD) != 0;
    run->has_stdin = (fixed->flags & CW_RUN_HAS_STDIN) != 0;
    run->keep_leftovers = (fixed->flags & CW_RUN_KEEP_LEFTOVERS) != 0;
    size_t strings = 1 + (size_t)has_cwd + (size_t)fixed->argc + (size_t)fixed->envc;
    char *cursor = payload + sizeof *fixed, *end = payload + length;
    for (size_t i = 0; i < strings; i++) {
        char *nul = memchr(cursor, '\0', (size_t)(end - cursor));
        if (nul == NULL) return "string without its NUL terminator";
        if (i == 0) run->path = cursor;
        else if (has_cwd && i == 1) run->cwd = cursor;
        else {
            size_t index = i - 1 - (size_t)has_cwd; /* argv then envp, each NULL-terminated */
            vector[index < fixed->argc ? index : index + 1] = cursor;
        }
        cursor = nul + 1;
    }
    if (cursor != end) return "bytes after the last string";
    if (!has_cwd) run->cwd = NULL;
    vector[fixed->argc] = NULL;
    vector[fixed->argc + fixed->envc + 1] = NULL;
    run->argv = vector;
    run->envp = vector + fixed->argc + 1;
    run->timeout_ns = fixed->timeout_ns;
    return NULL;
}

/* Split the RUN payload (already in server->payload, `length` bytes) into `run`. Returns NULL,
 * or why the request is malformed. */
static const char *cw_decode_run(struct cw_server *server, uint32_t length, struct cw_run *run) {
    struct cw_run_request fixed;
    const char *problem = cw_check_run(server->payload, length, &fixed);
    if (problem != NULL) return problem;
    server->vector = cw_reserve(server, server->vector, &server->vector_capacity,
                                cw_run_slots(&fixed), sizeof(char *));
    return cw_split_run(server->payload, length, &fixed, server->vector, run);
}

/* Walk the commands of a BLOCK payload (in server->payload, `length` bytes, fixed part in
 * *fixed): with `run` NULL, check each command's framing and fixed part and add up the vector
 * slots they need in *slots; else split command i into run[i], its vector in server->vector.
 * Sets *order_offset to where the order starts. Returns NULL, or why it is malformed. */
static const char *cw_walk_block(struct cw_server *server, uint32_t length,
                                 const struct cw_block_request *fixed, struct cw_run *run,
                                 size_t *slots, size_t *order_offset) {
    size_t offset = sizeof *fixed, used = 0;
    for (uint32_t i = 0; i < fixed->command_count; i++) {
        uint32_t command_length;
        if (length - offset < sizeof command_length) return "BLOCK command cut short";
        memcpy(&command_length, server->payload + offset, sizeof command_length);
        offset += sizeof command_length;
        if (command_length > length - offset) return "BLOCK command cut short";
        char *command = server->payload + offset;
        struct cw_run_request command_fixed;
        const char *problem = cw_check_run(command, command_length, &command_fixed);
        if (problem != NULL) return problem;
        if (command_fixed.flags & CW_RUN_HAS_STDIN) return "a BLOCK command with a stdin";
        if (run != NULL) {
            problem = cw_split_run(command, command_length, &command_fixed,
                                   server->vector + used, &run[i]);
            if (problem != NULL) return problem;
        }
        used += cw_run_slots(&command_fixed);
        offset += command_length;
    }
    *slots = used;
    *order_offset = offset;
    return NULL;
}

/* Split the BLOCK payload (already in server->payload, `length` bytes) into `block` and
 * server->commands. Returns NULL, or why the request is malformed. */
static const char *cw_decode_block(struct cw_server *server, uint32_t length,
                                   struct cw_block *block) {
    struct cw_block_request fixed;
    if (length < sizeof fixed) return "BLOCK payload shorter than its fixed part";
    memcpy(&fixed, server->payload, sizeof fixed);
    if (fixed.command_count == 0 || fixed.command_count > CW_BLOCK_MAX_COMMANDS)
        return "BLOCK command count out of range";
    if (fixed.order_count == 0 || fixed.order_count > CW_BLOCK_MAX_ORDER)
        return "BLOCK order count out of range";
    if (fixed.time_limit_ns < 0) return "time limit out of range";
    size_t slots, order_offset;
    const char *problem = cw_walk_block(server, length, &fixed, NULL, &slots, &order_offset);
    if (problem != NULL) return problem;
    if (length - order_offset != (size_t)fixed.order_count * sizeof(uint16_t))
        return "BLOCK order size does not match its count";
    /* Reserved once for every command, so that no pointer into them moves afterwards. */
    server->vector =
        cw_reserve(server, server->vector, &server->vector_capacity, slots, sizeof(char *));
    server->commands = cw_reserve(server, server->commands, &server->commands_capacity,
                                  fixed.command_count, sizeof(struct cw_run));
    problem = cw_walk_block(server, length, &fixed, server->commands, &slots, &order_offset);
    if (problem != NULL) return problem;
    block->order = server->payload + order_offset;
    for (uint32_t i = 0; i < fixed.order_count; i++) {
        uint16_t index;
        memcpy(&index, block->order + i * sizeof index, sizeof index);
        if (index >= fixed.command_count) return "BLOCK order entry out of range";
    }
    block->time_limit_ns = fixed.time_limit_ns;
    block->command_count = fixed.command_count;
    block->order_count = fixed.order_count;
    block->stop_requested = 0;
    block->broken = NULL;
    return NULL;
}

/* Read the next request's header and payload (into server->payload), and the descriptors that
 * came with it into fds[0..*fd_count). Returns 1, or 0 when the client closed the socket. A
 * malformed header is fatal. */
static int cw_read_request(struct cw_server *server, struct cw_header *header, int *fds,
                           int *fd_count) {
    *fd_count = 0;
    int status = cw_receive(server, header, sizeof *header, fds, fd_count);
    if (status == 0) return 0;
    if (status < 0) exit(0); /* the client went away mid-request: nothing to clean up */
    if (header->magic != CW_MAGIC) cw_fatal(server, "bad magic: not a cutaway client");
    if (header->version != CW_PROTOCOL_VERSION) cw_fatal(server, "unsupported protocol version");
    if (header->type != CW_MSG_RUN && header->type != CW_MSG_BLOCK && header->type != CW_MSG_STOP)
        cw_fatal(server, "unexpected message type");
    if (header->length > CW_MAX_PAYLOAD_BYTES) cw_fatal(server, "request too large");
    server->payload = cw_reserve(server, server->payload, &server->payload_capacity,
                                 (size_t)header->length + 1, 1);
    if (cw_receive(server, server->payload, header->length, NULL, NULL) != 1) exit(0);
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

/* Read the message that came while a block runs: a STOP for that block sets
 * block->stop_requested, a STOP for another sequence (one that crossed the end of its own
 * block) is ignored. Returns 0, or -1 when the client is gone or sent anything else (then
 * block->broken says why). Ancillary data, which no STOP has, is discarded by the kernel. */
static int cw_read_stop(const struct cw_server *server, struct cw_block *block) {
    struct cw_header header;
    size_t done = 0;
    while (done < sizeof header) {
        ssize_t got = recv(server->socket_fd, (char *)&header + done, sizeof header - done, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return -1;
        done += (size_t)got;
    }
    if (header.magic != CW_MAGIC || header.version != CW_PROTOCOL_VERSION ||
        header.type != CW_MSG_STOP || header.length != 0) {
        block->broken = "only STOP may come while a block runs";
        return -1;
    }
    if (header.sequence == block->sequence) block->stop_requested = 1;
    return 0;
}

/* Block until the child exits, the deadline (monotonic ns, 0: none) passes, or the client or
 * our parent goes away; in a block (`block` not NULL), also until the client sends STOP for
 * it. Does not reap. `pidfd` may be -1 (old kernel): SIGCHLD wakes ppoll. */
static enum cw_wait_outcome cw_wait_child(const struct cw_server *server, pid_t pid, int pidfd,
                                          int64_t deadline_ns, struct cw_block *block) {
    short socket_events = block != NULL ? POLLIN | POLLRDHUP : POLLRDHUP;
    for (;;) {
        if (pidfd < 0 && cw_child_exited(pid)) return CW_CHILD_EXITED;
        if (block != NULL && block->stop_requested) return CW_CHILD_STOPPED;
        struct timespec left, *timeout = NULL;
        if (deadline_ns > 0) {
            int64_t left_ns = deadline_ns - cw_now_ns();
            if (left_ns <= 0) return CW_CHILD_TIMED_OUT;
            left.tv_sec = left_ns / 1000000000;
            left.tv_nsec = left_ns % 1000000000;
            timeout = &left;
        }
        struct pollfd fds[2] = {{server->socket_fd, socket_events, 0}, {pidfd, POLLIN, 0}};
        const sigset_t *mask = pidfd >= 0 ? &server->quiet_mask : &server->wait_mask;
        int ready = ppoll(fds, pidfd >= 0 ? 2 : 1, timeout, mask);
        if (ready < 0) {
            if (errno != EINTR && errno != EAGAIN && errno != ENOMEM) return CW_CLIENT_GONE;
            if (cw_parent_gone(server)) return CW_CLIENT_GONE;
            continue;
        }
        if (fds[0].revents & (POLLRDHUP | POLLHUP | POLLERR)) return CW_CLIENT_GONE;
        if ((fds[0].revents & POLLIN) && cw_read_stop(server, block) != 0)
            return block->broken != NULL ? CW_CLIENT_BROKE : CW_CLIENT_GONE;
        /* A child that exited as the STOP came is not stopped: its RESULT stays as it is. */
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

/* ---------------------------------------------------------------------------------------------
 * Leftovers: what a run leaves running after its own process is reaped (`sleep 100 &`, a
 * daemon it started).
 *
 * The server is a child subreaper (PR_SET_CHILD_SUBREAPER, set in main): a process started by
 * a run that loses its parent is re-parented to the server, not to init. So every process a
 * run leaves behind, in its process group or out of it (setsid, setpgid, a double fork), is a
 * descendant of the server once the run's own process is gone; and when the run left nothing,
 * the server has no child at all, which one waitpid(-1, WNOHANG) says (ECHILD). /proc is read
 * only when there is something to find. All of it happens after the run's wall clock stopped.
 *
 * Found: the server's descendants (and members of the run's process group, should a kernel
 * refuse the subreaper), minus those present after the previous run (`known`: kept ones, or
 * ones a SIGKILL has not finished yet), minus zombies, and named after a 5 ms pause (found
 * between its fork and its exec, `sleep 100 &` is still called sh). Not found: processes that
 * were never descendants of the run (a service it asked systemd or at to start).
 *
 * Stopped (unless CW_RUN_KEEP_LEFTOVERS): SIGTERM and SIGCONT to each, then, for those still
 * running CW_LEFTOVER_GRACE_NS later, SIGKILL, and waited for (bounded). Exited children of
 * the server are reaped, so no zombie is left. A pid is signalled right after /proc listed it
 * as a descendant: as with kill(1), a pid reused in between is the one race left.
 * ------------------------------------------------------------------------------------------- */
#define CW_LEFTOVER_GRACE_NS 2000000000LL     /* SIGTERM, then SIGKILL 2 s later */
#define CW_LEFTOVER_KILL_WAIT_NS 2000000000LL /* how long SIGKILL'ed processes are waited for */
#define CW_LEFTOVER_POLL_NS 10000000LL        /* rescan period while waiting for them to go */
#define CW_LEFTOVER_SETTLE_NS 5000000L       /* before naming what was found */
#define CW_SCAN_MAX_PASSES 64                 /* one per tree level /proc's order did not catch */

/* Reap every exited child. Returns 1 when the server has no child left at all. */
static int cw_reap_exited(void) {
    for (;;) {
        pid_t reaped = waitpid(-1, NULL, WNOHANG);
        if (reaped > 0 || (reaped < 0 && errno == EINTR)) continue;
        return reaped < 0 && errno == ECHILD;
    }
}

/* Parse /proc/PID/stat into `process` (name, pgid, start time) and its ppid. Returns 0 for a
 * running process, -1 for one gone or a zombie. */
static int cw_read_stat(pid_t pid, struct cw_process *process, pid_t *ppid) {
    char path[32], text[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t size = read(fd, text, sizeof text - 1);
    close(fd);
    if (size <= 0) return -1;
    text[size] = '\0';
    /* "pid (comm) state ppid pgrp ...": comm may hold anything, so it ends at the last ')'. */
    char *open_paren = strchr(text, '('), *close_paren = strrchr(text, ')');
    if (open_paren == NULL || close_paren == NULL || close_paren < open_paren) return -1;
    size_t length = (size_t)(close_paren - open_paren - 1);
    if (length >= CW_LEFTOVER_NAME_BYTES) length = CW_LEFTOVER_NAME_BYTES - 1;
    memcpy(process->name, open_paren + 1, length);
    process->name[length] = '\0';
    char *cursor = close_paren + 1;
    unsigned long long fields[20]; /* fields 4..22 of proc(5), after the state */
    while (*cursor == ' ') cursor++;
    char state = *cursor++;
    if (state == 'Z' || state == 'X' || state == 'x') return -1;
    for (int i = 0; i < 19; i++) {
        char *end;
        fields[i] = strtoull(cursor, &end, 10); /* signed fields are positive here */
        if (end == cursor) return -1;
        cursor = end;
    }
    *ppid = (pid_t)fields[0];
    process->pid = pid;
    process->pgid = (pid_t)fields[1];
    process->start_ticks = fields[18];
    return 0;
}

/* Whether `list` holds `pid` (and, when `start_ticks` is not 0, with that start time). */
static int cw_list_holds(const struct cw_process_list *list, pid_t pid, uint64_t start_ticks) {
    for (size_t i = 0; i < list->count; i++)
        if (list->items[i].pid == pid && (start_ticks == 0 || list->items[i].start_ticks == start_ticks))
            return 1;
    return 0;
}

/* Append `process` to `list`. Fatal on OOM (no child of a run is alive then but leftovers). */
static void cw_list_add(const struct cw_server *server, struct cw_process_list *list,
                        const struct cw_process *process) {
    if (list->count == list->capacity) {
        size_t capacity = list->capacity ? list->capacity * 2 : 16;
        struct cw_process *grown = realloc(list->items, capacity * sizeof *grown);
        if (grown == NULL) cw_fatal(server, "out of memory");
        list->items = grown;
        list->capacity = capacity;
    }
    list->items[list->count++] = *process;
}

/* Fill server->found with the running descendants of the server and the running members of
 * process group `group` (0: none). With `only_new`, what server->known holds is left out, and
 * so are its descendants, which join server->known (what a kept process starts later is not
 * the next run's doing). Each pass over /proc adds the children of what it already found;
 * /proc lists pids in ascending order and children mostly have higher pids than their
 * parents, so the first pass finds nearly everything and the second one nothing more. */
static void cw_scan(struct cw_server *server, pid_t group, int only_new) {
    struct cw_process_list *found = &server->found, *known = only_new ? &server->known : NULL;
    found->count = 0;
    int directory = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (directory < 0) return;
    for (int pass = 0, changed = 1; changed && pass < CW_SCAN_MAX_PASSES; pass++) {
        changed = 0;
        lseek(directory, 0, SEEK_SET);
        char buffer[4096]; /* on the stack: a heap buffer would raise every run's max_rss floor */
        ssize_t size;
        while ((size = getdents64(directory, buffer, sizeof buffer)) > 0) {
            for (ssize_t offset = 0; offset < size;) {
                struct dirent64 *entry = (struct dirent64 *)(void *)(buffer + offset);
                offset += entry->d_reclen;
                char *end;
                long number = strtol(entry->d_name, &end, 10);
                if (*end != '\0' || number <= 0 || number == server->own_pid) continue;
                struct cw_process process;
                pid_t ppid;
                if (cw_read_stat((pid_t)number, &process, &ppid) != 0) continue;
                if (known != NULL && cw_list_holds(known, process.pid, process.start_ticks))
                    continue;
                int parent_found = ppid == server->own_pid || cw_list_holds(found, ppid, 0);
                if (!parent_found && known != NULL && cw_list_holds(known, ppid, 0)) {
                    cw_list_add(server, known, &process);
                    changed = 1;
                    continue;
                }
                if (!parent_found && !(group > 0 && process.pgid == group)) continue;
                if (cw_list_holds(found, process.pid, process.start_ticks)) continue;
                cw_list_add(server, found, &process);
                changed = 1;
            }
        }
    }
    close(directory);
}

/* Send `signal_number` to everything in server->found. */
static void cw_signal_found(const struct cw_server *server, int signal_number) {
    for (size_t i = 0; i < server->found.count; i++) kill(server->found.items[i].pid, signal_number);
}

/* Wait until nothing new runs under the server (reaping exited children) or the deadline
 * passes. Returns 1 when nothing is left. server->found holds what still runs. */
static int cw_wait_gone(struct cw_server *server, pid_t group, int64_t deadline_ns) {
    for (;;) {
        if (cw_reap_exited()) { /* no child: nothing runs under the server any more */
            server->found.count = 0;
            return 1;
        }
        cw_scan(server, group, 1);
        if (server->found.count == 0) {
            cw_reap_exited(); /* those that died since the reap above are zombies now */
            return 1;
        }
        int64_t left_ns = deadline_ns - cw_now_ns();
        if (left_ns <= 0) return 0;
        if (left_ns > CW_LEFTOVER_POLL_NS) left_ns = CW_LEFTOVER_POLL_NS;
        struct timespec left = {left_ns / 1000000000, left_ns % 1000000000};
        ppoll(NULL, 0, &left, &server->wait_mask); /* a SIGCHLD ends it early */
    }
}

/* Note the distinct names of server->found in `report`, and count them, leaving out members
 * of `killed_group` (the server killed that group at the timeout: they are dying). */
static void cw_note_leftovers(const struct cw_server *server, pid_t killed_group,
                              struct cw_leftover_report *report) {
    for (size_t i = 0; i < server->found.count; i++) {
        const struct cw_process *process = &server->found.items[i];
        if (killed_group > 0 && process->pgid == killed_group) continue;
        report->count++;
        int seen = 0;
        for (int n = 0; n < report->name_count && !seen; n++)
            seen = strcmp(report->names[n], process->name) == 0;
        if (!seen && report->name_count < CW_LEFTOVER_NAME_COUNT)
            memcpy(report->names[report->name_count++], process->name, CW_LEFTOVER_NAME_BYTES);
    }
}

/* After run `pid` was reaped: find what it left behind, fill `report`, and stop it unless
 * `keep`. `killed_group` is `pid` when the server killed the run's group, else 0. */
static void cw_settle_leftovers(struct cw_server *server, pid_t pid, pid_t killed_group,
                                int keep, struct cw_leftover_report *report) {
    memset(report, 0, sizeof *report);
    /* No child at all: nothing was left (the usual case). Should the kernel have refused the
     * subreaper, members of the run's group are looked for as well. */
    if (cw_reap_exited() && (server->subreaper || kill(-pid, 0) != 0)) {
        server->known.count = 0;
        return;
    }
    cw_scan(server, pid, 1);
    if (server->found.count > 0) {
        /* A leftover found between its fork and its exec still has its shell's name: give
         * what was just started a moment to become what it was started as. */
        struct timespec settle = {0, CW_LEFTOVER_SETTLE_NS};
        ppoll(NULL, 0, &settle, &server->quiet_mask); /* the run's SIGCHLD may be pending */
        cw_scan(server, pid, 1);
    }
    cw_note_leftovers(server, killed_group, report);
    if (!keep && server->found.count > 0) {
        cw_signal_found(server, SIGTERM);
        cw_signal_found(server, SIGCONT); /* a stopped process acts on SIGTERM only when resumed */
        if (!cw_wait_gone(server, pid, cw_now_ns() + CW_LEFTOVER_GRACE_NS)) {
            int64_t deadline_ns = cw_now_ns() + CW_LEFTOVER_KILL_WAIT_NS;
            do cw_signal_found(server, SIGKILL); /* again each time: forks made meanwhile */
            while (!cw_wait_gone(server, pid, cw_now_ns() + CW_LEFTOVER_POLL_NS) &&
                   cw_now_ns() < deadline_ns);
        }
    }
    /* What runs under the server now (kept, or not dead yet) belongs to no later run. */
    cw_scan(server, 0, 0);
    struct cw_process_list swap = server->known;
    server->known = server->found;
    server->found = swap;
    server->found.count = 0;
}

/* The RESULT message for a reaped child, framed with the request's `sequence`. */
static void cw_make_result(struct cw_result_message *message, uint32_t sequence, pid_t pid,
                           int status, int64_t wall_ns, const struct rusage *usage,
                           uint64_t flags, const struct cw_leftover_report *leftovers) {
    message->result = (struct cw_result){
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
        .flags = flags,
        .leftover_processes = leftovers->count,
    };
    size_t names_length = 0;
    for (int i = 0; i < leftovers->name_count; i++) {
        size_t name_length = strlen(leftovers->names[i]) + 1;
        memcpy(message->names + names_length, leftovers->names[i], name_length);
        names_length += name_length;
    }
    uint32_t length = (uint32_t)(sizeof message->result + names_length);
    message->header = (struct cw_header){CW_MAGIC, CW_PROTOCOL_VERSION, CW_MSG_RESULT, length,
                                         sequence};
}

/* How many bytes of `message` go on the wire: its header and its payload. */
static size_t cw_message_bytes(const struct cw_result_message *message) {
    return sizeof message->header + message->header.length;
}

/* Spawn the child of `run`. Returns 0, with its pid and the clock read right before the spawn
 * (the start of its wall time), or an errno value. */
static int cw_spawn(const struct cw_server *server, const struct cw_run *run, pid_t *pid,
                    int64_t *start_ns) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int rc = cw_prepare_spawn(server, run, &actions, &attributes);
    *start_ns = cw_now_ns();
    if (rc == 0) rc = posix_spawn(pid, run->path, &actions, &attributes, run->argv, run->envp);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    return rc;
}

/* The end of a spawned run whose wait ended with `outcome`: kill the child's group unless it
 * exited by itself, reap it, stop its clock, then (outside the measured interval) close
 * `pidfd` and, with `close_fds`, the run's descriptors, settle its leftovers and build its
 * RESULT in `message`. Exits if the client or our parent is gone. */
static void cw_end_run(struct cw_server *server, const struct cw_run *run, pid_t pid, int pidfd,
                       int64_t start_ns, enum cw_wait_outcome outcome, int close_fds,
                       struct cw_result_message *message) {
    if (outcome != CW_CHILD_EXITED) cw_kill_group(pid);
    int status = 0;
    struct rusage usage;
    memset(&usage, 0, sizeof usage);
    cw_reap(pid, &status, &usage);
    int64_t end_ns = cw_now_ns();
    /* The run is measured: from here on nothing counts in its figures. */
    if (pidfd >= 0) close(pidfd);
    if (close_fds) cw_close_fds(run->fds, run->fd_count); /* not earlier: keep syscalls out */
    struct cw_leftover_report leftovers;
    pid_t killed_group = outcome != CW_CHILD_EXITED ? pid : 0;
    cw_settle_leftovers(server, pid, killed_group, run->keep_leftovers, &leftovers);
    if (outcome == CW_CLIENT_GONE) exit(0);
    /* Timed out or stopped means killed by us: a child that exited on its own at the deadline
     * (or as the STOP came) was not. */
    int killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    uint64_t flags = outcome == CW_CHILD_TIMED_OUT && killed ? CW_RESULT_TIMED_OUT : 0;
    flags |= outcome == CW_CHILD_STOPPED && killed ? CW_RESULT_STOPPED : 0;
    cw_make_result(message, run->sequence, pid, status, end_ns - start_ns, &usage, flags,
                   &leftovers);
}

/* Serve one decoded RUN: spawn, report SPAWNED, wait, reap, report RESULT (or SPAWN_ERROR).
 * Closes the request's fds. Exits (after killing and reaping the child) if the client or our
 * parent goes away meanwhile. */
static void cw_serve_run(struct cw_server *server, const struct cw_run *run) {
    pid_t pid = -1;
    int64_t start_ns;
    int rc = cw_spawn(server, run, &pid, &start_ns);
    if (rc != 0) {
        cw_close_fds(run->fds, run->fd_count);
        struct cw_spawn_error failure = {rc, 0};
        failure.stage = cw_failed_stage(run, &failure.error_number);
        if (cw_send_gathered(server->socket_fd, CW_MSG_SPAWN_ERROR, run->sequence, &failure,
                             sizeof failure) != 0)
            exit(0);
        return;
    }
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    struct cw_spawned spawned = {pid, 0};
    enum cw_wait_outcome outcome = CW_CLIENT_GONE;
    if (cw_send_gathered(server->socket_fd, CW_MSG_SPAWNED, run->sequence, &spawned,
                         sizeof spawned) == 0) {
        int64_t deadline_ns = run->timeout_ns > 0 ? start_ns + run->timeout_ns : 0;
        outcome = cw_wait_child(server, pid, pidfd, deadline_ns, NULL);
    }
    struct cw_result_message message;
    cw_end_run(server, run, pid, pidfd, start_ns, outcome, 1, &message);
    if (cw_send_all(server->socket_fd, &message, cw_message_bytes(&message)) != 0) exit(0);
}

/* ---------------------------------------------------------------------------------------------
 * Blocks: many runs in one exchange (BLOCK in cw_protocol.h).
 *
 * Each run of a block is made as cw_serve_run makes one (the same spawn, timing points,
 * timeout, reaping and leftovers) but without SPAWNED: nothing is sent until the block ends,
 * so the client sleeps through the whole block instead of waking twice a run. Each RESULT is
 * written to a file meanwhile (a memfd, or an unlinked file in /tmp), and the file is sent
 * whole with sendfile when the block ends, BLOCK_END last. A file rather than a buffer in
 * memory: this process's peak RSS is the floor of every max_rss it reports (see the top of
 * this file), and a buffer that grew with each run (by 128 bytes or more) would raise that
 * floor run after run within a block. Page-cache pages of a file are in no process's RSS.
 *
 * A STOP is read while the server waits for a child (it polls the socket for POLLIN then),
 * and before each spawn (a poll that does not wait: one system call a run, outside the
 * measured interval), so that a STOP sent between two runs (during a leftover's grace
 * period, say) ends the block without starting another run.
 * ------------------------------------------------------------------------------------------- */

/* Make the file a block's replies wait in, once per server. Fatal when neither kind can be
 * made (no child is running then). */
static void cw_open_results(struct cw_server *server) {
    if (server->results_fd >= 0) return;
    server->results_fd = memfd_create("cw_block_results", MFD_CLOEXEC);
    if (server->results_fd < 0)
        server->results_fd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (server->results_fd < 0) cw_fatal(server, "cannot make a file for a block's results");
}

/* Append `size` bytes to the block's replies, which end at *end. Fatal when the file cannot
 * take them (no child of the block is running then). */
static void cw_keep_reply(struct cw_server *server, const void *data, size_t size, off_t *end) {
    const char *cursor = data;
    while (size > 0) {
        ssize_t written = pwrite(server->results_fd, cursor, size, *end);
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) cw_fatal(server, "cannot keep a block's results");
        cursor += written;
        size -= (size_t)written;
        *end += written;
    }
}

/* Send the block's replies (the first `size` bytes of the results file) to the client, with
 * as few system calls as the socket's buffer allows. Returns 0, or -1 when the client is
 * gone. */
static int cw_send_replies(const struct cw_server *server, off_t size) {
    off_t offset = 0;
    while (offset < size) {
        ssize_t sent = sendfile(server->socket_fd, server->results_fd, &offset,
                                (size_t)(size - offset));
        if (sent < 0 && errno == EINTR) continue;
        if (sent < 0 && (errno == EINVAL || errno == ENOSYS)) break; /* no sendfile here */
        if (sent <= 0) return -1;
    }
    char buffer[4096]; /* on the stack, as cw_scan's: a heap buffer would raise max_rss */
    while (offset < size) {
        size_t left = (size_t)(size - offset);
        ssize_t got = pread(server->results_fd, buffer, left < sizeof buffer ? left : sizeof buffer,
                            offset);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0 || cw_send_all(server->socket_fd, buffer, (size_t)got) != 0) return -1;
        offset += got;
    }
    return 0;
}

/* Before each run of a block: empty its stderr when it is a regular file with something in
 * it, so that after the block it holds the last run's stderr only (the client reads a failed
 * run's tail from there). Outside the measured interval; one fstat when it is empty. */
static void cw_empty_stderr(int fd) {
    struct stat info;
    if (fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && info.st_size > 0 &&
        ftruncate(fd, 0) == 0)
        lseek(fd, 0, SEEK_SET); /* the offset is shared with the children's descriptors */
}

/* Before a run of a block: read a STOP that came since the last wait, if any. Exits when the
 * client is gone, and gives up when it sent anything else (no child is running either way). */
static void cw_check_stop(struct cw_server *server, struct cw_block *block) {
    struct pollfd fd = {server->socket_fd, POLLIN | POLLRDHUP, 0};
    if (poll(&fd, 1, 0) <= 0) return;
    if ((fd.revents & (POLLRDHUP | POLLHUP | POLLERR)) || cw_read_stop(server, block) != 0) {
        if (block->broken != NULL) cw_fatal(server, block->broken);
        exit(0);
    }
}

/* After `runs_made` runs, the last of which got `result`, `elapsed_ns` since the block's
 * first spawn: why the block ends now (CW_BLOCK_*), or 0 to make the next run. */
static uint32_t cw_block_verdict(const struct cw_block *block, const struct cw_result *result,
                                 uint32_t runs_made, int64_t elapsed_ns) {
    if (block->stop_requested) return CW_BLOCK_STOPPED;
    if (result->wait_status != 0 || result->flags != 0 || result->leftover_processes != 0)
        return CW_BLOCK_UNUSUAL;
    if (runs_made == block->order_count) return CW_BLOCK_DONE;
    if (block->time_limit_ns > 0 && elapsed_ns >= block->time_limit_ns) return CW_BLOCK_TIME;
    return 0;
}

/* Serve one decoded BLOCK: make its runs in order until it ends, then send every RESULT and
 * BLOCK_END. Closes the block's fds. Exits (after killing and reaping the child) if the
 * client or our parent goes away meanwhile. */
static void cw_serve_block(struct cw_server *server, struct cw_block *block) {
    cw_open_results(server);
    off_t kept = 0;
    struct cw_block_end end = {0, 0, 0, 0};
    int64_t first_start_ns = 0;
    while (end.reason == 0) {
        uint16_t index;
        memcpy(&index, block->order + end.run_count * sizeof index, sizeof index);
        struct cw_run *run = &server->commands[index];
        run->sequence = block->sequence;
        memcpy(run->fds, block->fds, sizeof block->fds);
        run->fd_count = CW_BLOCK_FD_COUNT;
        cw_check_stop(server, block);
        if (block->stop_requested) {
            end.reason = CW_BLOCK_STOPPED;
            break;
        }
        cw_empty_stderr(block->fds[1]);
        pid_t pid = -1;
        int64_t start_ns;
        int rc = cw_spawn(server, run, &pid, &start_ns);
        if (rc != 0) {
            end.reason = CW_BLOCK_SPAWN_ERROR;
            end.error_number = rc;
            end.stage = cw_failed_stage(run, &end.error_number);
            break;
        }
        if (end.run_count == 0) first_start_ns = start_ns;
        int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        int64_t deadline_ns = run->timeout_ns > 0 ? start_ns + run->timeout_ns : 0;
        enum cw_wait_outcome outcome = cw_wait_child(server, pid, pidfd, deadline_ns, block);
        struct cw_result_message message;
        cw_end_run(server, run, pid, pidfd, start_ns, outcome, 0, &message);
        if (outcome == CW_CLIENT_BROKE) cw_fatal(server, block->broken);
        cw_keep_reply(server, &message, cw_message_bytes(&message), &kept);
        end.run_count++;
        int64_t elapsed_ns = start_ns + message.result.wall_ns - first_start_ns;
        end.reason = cw_block_verdict(block, &message.result, end.run_count, elapsed_ns);
    }
    cw_close_fds(block->fds, CW_BLOCK_FD_COUNT);
    struct {
        struct cw_header header;
        struct cw_block_end end;
    } last = {{CW_MAGIC, CW_PROTOCOL_VERSION, CW_MSG_BLOCK_END, sizeof end, block->sequence}, end};
    cw_keep_reply(server, &last, sizeof last, &kept);
    if (cw_send_replies(server, kept) != 0) exit(0);
    ftruncate(server->results_fd, 0); /* frees the pages until the next block */
}

/* Read and serve the next request. Returns 1, or 0 when the client closed the socket.
 * Anything malformed is fatal. */
static int cw_serve_request(struct cw_server *server) {
    struct cw_header header;
    int fds[CW_RUN_MAX_FD_COUNT];
    int fd_count;
    if (!cw_read_request(server, &header, fds, &fd_count)) return 0;
    const char *problem = NULL;
    if (header.type == CW_MSG_STOP) {
        /* A STOP that crossed the end of its block (no block runs now): nothing to stop. */
        if (header.length == 0 && fd_count == 0) return 1;
        problem = "STOP with a payload or descriptors";
    } else if (header.type == CW_MSG_RUN) {
        struct cw_run run;
        problem = cw_decode_run(server, header.length, &run);
        if (problem == NULL && fd_count != CW_RUN_FD_COUNT + run.has_stdin)
            problem = "RUN needs two descriptors (three with CW_RUN_HAS_STDIN)";
        if (problem == NULL) {
            memcpy(run.fds, fds, sizeof(int) * (size_t)fd_count);
            run.fd_count = fd_count;
            run.sequence = header.sequence;
            cw_serve_run(server, &run);
            return 1;
        }
    } else {
        struct cw_block block;
        problem = cw_decode_block(server, header.length, &block);
        if (problem == NULL && fd_count != CW_BLOCK_FD_COUNT)
            problem = "BLOCK needs two descriptors";
        if (problem == NULL) {
            memcpy(block.fds, fds, sizeof block.fds);
            block.sequence = header.sequence;
            cw_serve_block(server, &block);
            return 1;
        }
    }
    cw_close_fds(fds, fd_count);
    cw_fatal(server, problem);
    return 0;
}

/* Block until a request (or EOF) is readable. Returns 1, or 0 when our parent died. */
static int cw_wait_request(const struct cw_server *server) {
    for (;;) {
        struct pollfd fd = {server->socket_fd, POLLIN, 0};
        int ready = ppoll(&fd, 1, NULL, &server->quiet_mask);
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
    server->quiet_mask = server->wait_mask;
    sigaddset(&server->quiet_mask, SIGCHLD);
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
    struct cw_server server = {.socket_fd = cw_parse_int(argv[1], 0), .results_fd = -1};
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
    server.own_pid = getpid();
    server.subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
    prctl(PR_SET_PDEATHSIG, CW_PARENT_DEATH_SIGNAL);
    if (getppid() != server.parent_pid) return 0; /* it died before prctl */
    struct cw_hello hello = {(int32_t)getpid(), CW_MAX_PAYLOAD_BYTES};
    if (cw_send_message(server.socket_fd, CW_MSG_HELLO, 0, &hello, sizeof hello) != 0) return 0;
    while (cw_wait_request(&server) && cw_serve_request(&server)) {
    }
    cw_reap_exited(); /* what was kept runs on under init; what has exited is reaped here */
    return 0;
}
