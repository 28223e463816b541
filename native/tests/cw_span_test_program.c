/*
 * cw_span_test_program.c: a small server-shaped program using native/include/cutaway/span.h,
 * for tests/integration/test_spans_native.py. Usage: cw_span_test_program OPERATIONS [MODE]
 *
 * Each operation is a span "search" holding "decode", "retrieve" (with "fetch" inside) and
 * three "test filter" spans, each doing a little work. MODE adds:
 *   threads     a second thread doing the same operations
 *   fork        a child that does one operation, then _exit
 *   exec        after the operations, exec itself for one more operation (a new image)
 *   unbalanced  an end without its begin ("ghost") and a begin never ended ("left open")
 *   long        one span whose name is longer than the writer keeps (2000 bytes)
 *   tangled     what a writer keeping open spans on a stack must still report as today:
 *               spans 1000 deep (recursion), an end that closes "outer" while "inner" is
 *               open, an end named by a copy of its begin's name, a span left open by a
 *               thread that exits, and a fork child ending a span its parent began
 * and prints "enabled=N" (1 under the spans probe).
 */
#define CUTAWAY_SPAN_IMPLEMENTATION
#include "cutaway/span.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile unsigned long cw_sink;

static void cw_work(unsigned long steps) {
    for (unsigned long i = 0; i < steps; i++) cw_sink += i;
}

static void cw_operation(void) {
    CW_SPAN_SCOPE("search");
    cw_span_begin("decode");
    cw_work(2000);
    cw_span_end("decode");
    cw_span_begin("retrieve");
    cw_span_begin("fetch");
    cw_work(4000);
    cw_span_end("fetch");
    cw_work(500);
    cw_span_end("retrieve");
    for (int i = 0; i < 3; i++) {
        CW_SPAN_SCOPE("test filter");
        cw_work(300);
    }
}

static void cw_recurse(int levels) {
    if (levels == 0) return;
    CW_SPAN_SCOPE("recursion");
    cw_recurse(levels - 1);
}

static void *cw_leave_open(void *unused) {
    (void)unused;
    cw_span_begin("thread left open");
    return NULL;
}

static void cw_tangled(void) {
    cw_recurse(1000);
    cw_span_begin("outer");
    cw_span_begin("inner");
    cw_span_end("outer"); /* "inner" has no end: reported, "outer" kept */
    cw_span_end("inner"); /* an end without a begin now */
    char copy[] = "copied name";
    cw_span_begin(copy); /* another address, the same text */
    cw_span_end("copied name");
    pthread_t thread;
    if (pthread_create(&thread, NULL, cw_leave_open, NULL) == 0) pthread_join(thread, NULL);
    cw_span_begin("across fork");
    pid_t child = fork();
    if (child == 0) {
        cw_span_end("across fork"); /* the child never saw its begin */
        _exit(0);
    }
    int status;
    waitpid(child, &status, 0);
    cw_span_end("across fork");
}

static int cw_operations;

static void *cw_thread(void *unused) {
    (void)unused;
    for (int i = 0; i < cw_operations; i++) cw_operation();
    return NULL;
}

int main(int argc, char **argv) {
    cw_operations = argc > 1 ? atoi(argv[1]) : 3;
    const char *mode = argc > 2 ? argv[2] : "";
    pthread_t thread;
    int threaded = strcmp(mode, "threads") == 0;
    if (threaded && pthread_create(&thread, NULL, cw_thread, NULL) != 0) return 1;
    int open_at_start = strcmp(mode, "open-at-start") == 0;
    if (open_at_start) cw_span_begin("main"); /* never ended: the rest is kept all the same */
    for (int i = 0; i < cw_operations; i++) cw_operation();
    if (open_at_start) {
        cw_span_begin("\xff\xfe not UTF-8");
        cw_span_end("\xff\xfe not UTF-8");
    }
    if (threaded) pthread_join(thread, NULL);
    if (strcmp(mode, "fork") == 0) {
        pid_t child = fork();
        if (child == 0) {
            cw_operation();
            _exit(0);
        }
        int status;
        waitpid(child, &status, 0);
    }
    if (strcmp(mode, "unbalanced") == 0) {
        cw_span_end("ghost");
        cw_span_begin("left open");
    }
    if (strcmp(mode, "tangled") == 0) cw_tangled();
    if (strcmp(mode, "long") == 0) {
        static char name[2001];
        memset(name, 'n', sizeof name - 1);
        cw_span_begin(name);
        cw_span_end(name);
    }
    printf("enabled=%d\n", cw_span_enabled());
    fflush(stdout);
    if (strcmp(mode, "exec") == 0) {
        execl(argv[0], argv[0], "1", (char *)NULL);
        return 1;
    }
    return 0;
}
