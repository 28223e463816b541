/*
 * cw_protocol.h: the wire format between cutaway's Python client
 * (src/cutaway/runner/forkserver.py) and its fork server (native/cw_forkserver.c).
 *
 * Transport: one AF_UNIX SOCK_STREAM socket pair. The client keeps one end; the other end is
 * the server's fd whose number is argv[1]. Both ends run on the same machine, so every integer
 * is in native byte order with a fixed width, and every struct below has no padding (checked
 * by _Static_assert here and mirrored by `struct` formats with "=" in the client).
 *
 * Framing: every message is a 16-byte header followed by `length` payload bytes.
 *
 *     header   u32 magic     CW_MAGIC ("CWFS" in memory)
 *              u16 version   CW_PROTOCOL_VERSION; the server rejects any other
 *              u16 type      one of enum cw_message_type
 *              u32 length    payload bytes that follow (at most CW_MAX_PAYLOAD_BYTES)
 *              u32 sequence  chosen by the client per request, echoed in every reply to it
 *
 * Conversation:
 *
 *   server -> client  HELLO        once, at start: struct cw_hello. The client checks the
 *                                  version before sending anything.
 *   client -> server  RUN          struct cw_run_request, then NUL-terminated strings: path,
 *                                  cwd (only when CW_RUN_HAS_CWD), argc argv strings, envc
 *                                  "NAME=value" strings, nothing else. The child's file
 *                                  descriptors travel with the first byte of the header as
 *                                  SCM_RIGHTS: its stdin first when CW_RUN_HAS_STDIN is set
 *                                  (else the server gives it /dev/null), then its stdout,
 *                                  then its stderr.
 *   server -> client  SPAWN_ERROR  struct cw_spawn_error: nothing was started. End of the run.
 *                  or SPAWNED      struct cw_spawned: the child's pid, sent right after the
 *                                  spawn so that an interrupted client can kill the child's
 *                                  process group (its pgid is its pid) while the server
 *                                  waits. Always followed by:
 *   server -> client  RESULT       struct cw_result: the wait4 record of that child and how
 *                                  many processes it left behind, then the distinct names
 *                                  (comm, NUL-terminated; at most CW_LEFTOVER_NAME_COUNT) of
 *                                  those processes, nothing else.
 *   server -> client  FATAL        at any time: a UTF-8 message (the payload, no NUL) saying
 *                                  why the server gives up (malformed request, wrong
 *                                  version, out of memory); the server exits right after.
 *
 *   client -> server  BLOCK        many runs in one exchange: struct cw_block_request, then
 *                                  command_count commands, each a u32 length followed by
 *                                  that many bytes laid out as a RUN payload (struct
 *                                  cw_run_request with its own timeout and flags, then its
 *                                  strings; CW_RUN_HAS_STDIN is refused), then order_count
 *                                  u16 indices into the commands: the runs to make, in
 *                                  that order. Two descriptors travel with the first byte
 *                                  of the header as SCM_RIGHTS: stdout, then stderr, shared
 *                                  by every run of the block (stdin is /dev/null).
 *                                  The server makes the runs one after another exactly as
 *                                  it serves RUN (same timing points, timeout and
 *                                  leftovers), but sends nothing while the block runs.
 *                                  Before each run, a stderr that is a non-empty regular
 *                                  file is truncated to 0 bytes (and its offset set to 0),
 *                                  so that after the block it holds the last run's stderr
 *                                  only (stdout and stderr should not be the same file).
 *   server -> client  RESULT...    when the block has ended: one RESULT (as above) per run
 *                                  made, in order, each with the block's sequence, then
 *   server -> client  BLOCK_END    struct cw_block_end: how many RESULTs came before it and
 *                                  why the block ended (CW_BLOCK_*), in as few sends as the
 *                                  socket allows. The block ends when the order is done;
 *                                  when, after a run, time_limit_ns has passed since the
 *                                  block's first spawn (so a block makes at least one run);
 *                                  after an unusual run (exit status not 0, a signal, a
 *                                  timeout, leftover processes: its RESULT is the last);
 *                                  when a run cannot be spawned (no RESULT for it; its errno
 *                                  and stage, as in SPAWN_ERROR, are in BLOCK_END); or on
 *   client -> server  STOP         header only, the block's sequence: the server SIGKILLs the
 *                                  running child's process group, reaps it, sets
 *                                  CW_RESULT_STOPPED in its RESULT and ends the block
 *                                  (CW_BLOCK_STOPPED; should the child have exited on its
 *                                  own meanwhile, its RESULT is left as it is). A STOP that
 *                                  comes between two runs ends the block before the next
 *                                  one (every RESULT then is an ordinary one). A STOP whose
 *                                  sequence is not the block in progress (it crossed the
 *                                  end of its block) is read and ignored.
 *
 * One request at a time: the client sends the next RUN or BLOCK only after RESULT,
 * SPAWN_ERROR or BLOCK_END, and nothing but STOP while a block runs.
 * The client closing its end (EOF) ends the server; if a child is running then, the server
 * first kills the child's process group and reaps it.
 *
 * Version history:
 *   1  first version: HELLO, RUN, SPAWNED, SPAWN_ERROR, RESULT, FATAL.
 *   2  RUN flag CW_RUN_HAS_STDIN: a third descriptor, the child's stdin, comes first.
 *   3  Leftovers: RESULT ends with leftover_processes and is followed by their names; RUN
 *      flag CW_RUN_KEEP_LEFTOVERS. Without it the server stops what a run left behind.
 *   4  BLOCK, BLOCK_END and STOP: many runs in one exchange; RESULT flag CW_RESULT_STOPPED.
 */
#ifndef CW_PROTOCOL_H
#define CW_PROTOCOL_H

#include <stdint.h>

#define CW_MAGIC 0x53465743u /* bytes "CWFS" on a little-endian machine */
#define CW_PROTOCOL_VERSION 4u
#define CW_MAX_PAYLOAD_BYTES (64u * 1024u * 1024u)
#define CW_RUN_FD_COUNT 2     /* stdout, stderr */
#define CW_RUN_MAX_FD_COUNT 3 /* stdin (with CW_RUN_HAS_STDIN), stdout, stderr */

enum cw_message_type {
    CW_MSG_HELLO = 1,
    CW_MSG_RUN = 2,
    CW_MSG_SPAWNED = 3,
    CW_MSG_SPAWN_ERROR = 4,
    CW_MSG_RESULT = 5,
    CW_MSG_FATAL = 6,
    CW_MSG_BLOCK = 7,
    CW_MSG_BLOCK_END = 8,
    CW_MSG_STOP = 9,
};

struct cw_header {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
    uint32_t length;
    uint32_t sequence;
};

/* HELLO: who answers, and how large a request it accepts. */
struct cw_hello {
    int32_t server_pid;
    uint32_t max_payload_bytes;
};

/* RUN, fixed part. timeout_ns 0 means no timeout; it counts from just before the spawn. */
#define CW_RUN_HAS_CWD 1u
#define CW_RUN_HAS_STDIN 2u /* the request carries the child's stdin descriptor */
#define CW_RUN_KEEP_LEFTOVERS 4u /* leave running what the child leaves behind: only count it */
struct cw_run_request {
    int64_t timeout_ns;
    uint32_t flags; /* CW_RUN_* bits; the others must be 0 */
    uint32_t argc;  /* at least 1 */
    uint32_t envc;
    uint32_t reserved; /* 0 */
};

/* SPAWNED: the child exists and runs in process group `pid`. */
struct cw_spawned {
    int32_t pid;
    uint32_t reserved;
};

/* SPAWN_ERROR: errno of the failed step. CW_STAGE_CWD: the working directory could not be
 * entered; CW_STAGE_EXEC: the executable could not be started (or the spawn itself failed). */
#define CW_STAGE_EXEC 1u
#define CW_STAGE_CWD 2u
struct cw_spawn_error {
    int32_t error_number;
    uint32_t stage;
};

/* RESULT: what wait4(2) said about the child, plus the server's own monotonic wall time from
 * just before the spawn to just after the reap. Times in ns, max_rss in bytes.
 * leftover_processes: processes started by the run that were still running after it was
 * reaped (found after the wall clock stopped; see "Leftovers" in cw_forkserver.c), stopped
 * by the server before this reply unless the RUN had CW_RUN_KEEP_LEFTOVERS. Processes of the
 * run's group that the server itself killed at the timeout are not counted. */
#define CW_RESULT_TIMED_OUT 1u
#define CW_RESULT_STOPPED 2u /* in a block: killed by the server because the client sent STOP */
#define CW_LEFTOVER_NAME_COUNT 8 /* distinct names at most after a RESULT */
#define CW_LEFTOVER_NAME_BYTES 16 /* a comm name with its NUL (the kernel's TASK_COMM_LEN) */
struct cw_result {
    int64_t pid;
    int64_t wait_status;
    int64_t wall_ns;
    int64_t user_ns;
    int64_t sys_ns;
    int64_t max_rss_bytes;
    int64_t minor_faults;
    int64_t major_faults;
    int64_t voluntary_switches;
    int64_t involuntary_switches;
    int64_t block_in;
    int64_t block_out;
    uint64_t flags; /* CW_RESULT_* bits */
    int64_t leftover_processes;
};

/* BLOCK, fixed part. The u16 order entries keep a long order small: the server holds the
 * whole request in memory while the block runs, and its peak RSS is the floor of every
 * max_rss it reports. */
#define CW_BLOCK_MAX_COMMANDS 256u
#define CW_BLOCK_MAX_ORDER 65536u
#define CW_BLOCK_FD_COUNT 2 /* stdout, stderr */
struct cw_block_request {
    int64_t time_limit_ns;  /* 0: none; else no run starts once this long has passed since
                               the block's first spawn (checked after each run) */
    uint32_t command_count; /* 1..CW_BLOCK_MAX_COMMANDS */
    uint32_t order_count;   /* 1..CW_BLOCK_MAX_ORDER */
};

/* BLOCK_END: why the block ended, after run_count RESULTs. */
#define CW_BLOCK_DONE 1u        /* every run of the order was made */
#define CW_BLOCK_TIME 2u        /* the time limit passed */
#define CW_BLOCK_UNUSUAL 3u     /* the last run exited non-zero, was killed or timed out, or
                                   left processes behind */
#define CW_BLOCK_SPAWN_ERROR 4u /* the next run could not be spawned: error_number, stage */
#define CW_BLOCK_STOPPED 5u     /* the client sent STOP */
struct cw_block_end {
    uint32_t run_count;
    uint32_t reason;      /* CW_BLOCK_* */
    int32_t error_number; /* CW_BLOCK_SPAWN_ERROR: as in struct cw_spawn_error; else 0 */
    uint32_t stage;       /* CW_BLOCK_SPAWN_ERROR: CW_STAGE_*; else 0 */
};

_Static_assert(sizeof(struct cw_header) == 16, "header layout");
_Static_assert(sizeof(struct cw_hello) == 8, "hello layout");
_Static_assert(sizeof(struct cw_run_request) == 24, "run request layout");
_Static_assert(sizeof(struct cw_spawned) == 8, "spawned layout");
_Static_assert(sizeof(struct cw_spawn_error) == 8, "spawn error layout");
_Static_assert(sizeof(struct cw_result) == 112, "result layout");
_Static_assert(sizeof(struct cw_block_request) == 16, "block request layout");
_Static_assert(sizeof(struct cw_block_end) == 16, "block end layout");

#endif
