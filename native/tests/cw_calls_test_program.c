/*
 * cw_calls_test_program.c: a program for the tests of the call interposer (libcwcalls.so,
 * tests/integration/test_calls_native.py). Run it with the library preloaded; each command
 * makes a known number of catalog calls in a known shape (threads, fork, exec, _exit, a
 * signal) so that the test can check every record.
 *
 * Usage: cw_calls_test_program COMMAND ARGS...
 *   calls FUNCTION N   N calls of FUNCTION: close (close(-1)), fsync (fsync(-1)), getpwnam
 *                      (getpwnam("root")), open (open of a missing file)
 *   catalog DIR        every catalog function once, in id order, with harmless arguments
 *                      (files are created in DIR)
 *   enumerate DATABASE passwd, group or services, enumerated twice: setpwent, getpwent until
 *                      NULL, endpwent, then setpwent, getpwent_r until it fails, endpwent
 *                      (getgrent..., getservent...); prints the entries each pass found
 *   aliases DIR        open64, __open_2, openat64, __openat_2, creat64, and open/openat with
 *                      O_CREAT and O_TMPFILE; exits 1 unless every mode reached the kernel
 *   errno              exits 1 (after saying why) unless errno is what libc left: ENOENT
 *                      after a failed open, untouched after successful calls
 *   threads T N        T threads, N close(-1) each
 *   fork N M           N close(-1), fork: the child makes M and exits; the parent makes N more
 *   exec N M           N close(-1), then exec itself as `calls close M`
 *   exit N             N close(-1), then _exit(0)
 *   kill SIGNAL N      N close(-1), then kill(getpid(), SIGNAL)
 *   loop N             close(-1) forever; prints "ready" after N calls (to be killed)
 *   signals N          N close(-1) while a 50 us interval timer's handler also calls
 *                      close(-1); prints how many calls the handler made
 *   bench N            N close(-1); prints the ns per call (CLOCK_MONOTONIC, whole loop)
 * Exit status 0 unless said otherwise, 2 on a usage error.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* glibc's fortified entry points, which _FORTIFY_SOURCE programs call instead of open. */
extern int __open_2(const char *path, int flags);
extern int __openat_2(int dirfd, const char *path, int flags);

#define CW_MISSING "/nonexistent-cutaway-test/missing"

static long cw_number(const char *text) {
    char *end = NULL;
    long value = strtol(text, &end, 10);
    if (end == text || *end != '\0' || value < 0) {
        fprintf(stderr, "not a count: %s\n", text);
        exit(2);
    }
    return value;
}

/* Close without the interposer seeing it: the tests count close records exactly. */
static void cw_quiet_close(int fd) { syscall(SYS_close, fd); }

static void cw_close_calls(long count) {
    for (long i = 0; i < count; i++) close(-1);
}

static int cw_calls(const char *function, long count) {
    for (long i = 0; i < count; i++) {
        if (strcmp(function, "close") == 0) close(-1);
        else if (strcmp(function, "fsync") == 0) fsync(-1);
        else if (strcmp(function, "getpwnam") == 0) getpwnam("root");
        else if (strcmp(function, "open") == 0) open(CW_MISSING, O_RDONLY);
        else {
            fprintf(stderr, "unknown function: %s\n", function);
            return 2;
        }
    }
    return 0;
}

/* The name service part of the catalog (ids 1 to 16). Numeric host names: no DNS. */
static void cw_catalog_lookups(void) {
    char buffer[16384];
    struct passwd user, *user_found;
    struct group group, *group_found;
    getpwnam("root");
    getpwuid(0);
    getgrnam("root");
    getgrgid(0);
    getpwnam_r("root", &user, buffer, sizeof buffer, &user_found);
    getpwuid_r(0, &user, buffer, sizeof buffer, &user_found);
    getgrnam_r("root", &group, buffer, sizeof buffer, &group_found);
    getgrgid_r(0, &group, buffer, sizeof buffer, &group_found);
    getservbyname("http", "tcp");
    getservbyport(htons(80), "tcp");
    gethostbyname("127.0.0.1");
    gethostbyname2("127.0.0.1", AF_INET);
    struct addrinfo hints = {.ai_flags = AI_NUMERICHOST, .ai_family = AF_INET}, *found = NULL;
    if (getaddrinfo("127.0.0.1", NULL, &hints, &found) == 0) freeaddrinfo(found);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(80)};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    char host[64], service[32];
    getnameinfo((struct sockaddr *)&address, sizeof address, host, sizeof host, service,
                sizeof service, NI_NUMERICHOST | NI_NUMERICSERV);
    gid_t groups[256];
    int group_count = 256;
    getgrouplist("root", 0, groups, &group_count);
    initgroups("root", 0);
}

/* The files and network part of the catalog (ids 17 to 32). */
static void cw_catalog_files(const char *directory) {
    char created[4096], renamed[4096], made[4096];
    snprintf(created, sizeof created, "%s/created", directory);
    snprintf(renamed, sizeof renamed, "%s/renamed", directory);
    snprintf(made, sizeof made, "%s/made", directory);
    open(CW_MISSING, O_RDONLY);
    openat(AT_FDCWD, CW_MISSING, O_RDONLY);
    int fd = creat(created, 0600);
    if (fd >= 0) cw_quiet_close(fd);
    close(-1);
    fsync(-1);
    fdatasync(-1);
    sync_file_range(-1, 0, 0, 0);
    rename(CW_MISSING, renamed);
    renameat(AT_FDCWD, CW_MISSING, AT_FDCWD, renamed);
    unlink(CW_MISSING);
    unlinkat(AT_FDCWD, CW_MISSING, 0);
    mkdir(made, 0700);
    link(CW_MISSING, renamed);
    struct sockaddr_in address = {.sin_family = AF_INET};
    connect(-1, (struct sockaddr *)&address, sizeof address);
    socklen_t length = sizeof address;
    accept(-1, (struct sockaddr *)&address, &length);
    accept4(-1, (struct sockaddr *)&address, &length, SOCK_CLOEXEC);
}

/* The enumerations (ids 33 to 44), one call each: every get*ent returns the first entry. */
static void cw_catalog_enumerations(void) {
    char buffer[16384];
    struct passwd user, *user_found;
    struct group group, *group_found;
    struct servent service, *service_found;
    setpwent();
    getpwent();
    endpwent();
    setgrent();
    getgrent();
    endgrent();
    setservent(0);
    getservent();
    endservent();
    getpwent_r(&user, buffer, sizeof buffer, &user_found);
    getgrent_r(&group, buffer, sizeof buffer, &group_found);
    getservent_r(&service, buffer, sizeof buffer, &service_found);
}

/* Both passes over one database; prints "N M": the entries of the plain and the _r pass. */
static int cw_enumerate(const char *database) {
    char buffer[16384];
    long plain = 0, reentrant = 0;
    if (strcmp(database, "passwd") == 0) {
        struct passwd entry, *found;
        setpwent();
        while (getpwent() != NULL) plain++;
        endpwent();
        setpwent();
        while (getpwent_r(&entry, buffer, sizeof buffer, &found) == 0) reentrant++;
        endpwent();
    } else if (strcmp(database, "group") == 0) {
        struct group entry, *found;
        setgrent();
        while (getgrent() != NULL) plain++;
        endgrent();
        setgrent();
        while (getgrent_r(&entry, buffer, sizeof buffer, &found) == 0) reentrant++;
        endgrent();
    } else if (strcmp(database, "services") == 0) {
        struct servent entry, *found;
        setservent(0);
        while (getservent() != NULL) plain++;
        endservent();
        setservent(0);
        while (getservent_r(&entry, buffer, sizeof buffer, &found) == 0) reentrant++;
        endservent();
    } else {
        fprintf(stderr, "unknown database: %s\n", database);
        return 2;
    }
    printf("%ld %ld\n", plain, reentrant);
    return 0;
}

/* 1 when `path` exists with exactly `mode` permission bits, else 0 (and says so). */
static int cw_has_mode(const char *path, mode_t mode) {
    struct stat info;
    if (stat(path, &info) == 0 && (info.st_mode & 07777) == mode) return 1;
    fprintf(stderr, "%s: mode %o expected\n", path, (unsigned)mode);
    return 0;
}

static int cw_aliases(const char *directory) {
    char a[4096], b[4096], c[4096];
    snprintf(a, sizeof a, "%s/a", directory);
    snprintf(b, sizeof b, "%s/b", directory);
    snprintf(c, sizeof c, "%s/c", directory);
    umask(0);
    int ok = 1;
    int fd = open64(a, O_CREAT | O_WRONLY, 0640); /* open */
    ok &= fd >= 0 && cw_has_mode(a, 0640);
    cw_quiet_close(fd);
    cw_quiet_close(__open_2(a, O_RDONLY));                /* open */
    cw_quiet_close(openat64(AT_FDCWD, a, O_RDONLY));      /* openat */
    cw_quiet_close(__openat_2(AT_FDCWD, a, O_RDONLY));    /* openat */
    fd = creat64(b, 0604);                                /* creat */
    ok &= fd >= 0 && cw_has_mode(b, 0604);
    cw_quiet_close(fd);
    fd = openat(AT_FDCWD, c, O_CREAT | O_EXCL | O_WRONLY, 0612); /* openat */
    ok &= fd >= 0 && cw_has_mode(c, 0612);
    cw_quiet_close(fd);
    fd = open(directory, O_TMPFILE | O_RDWR, 0601); /* open; unnamed: check its own mode */
    struct stat info;
    if (fd >= 0 && (fstat(fd, &info) != 0 || (info.st_mode & 07777) != 0601)) {
        fprintf(stderr, "O_TMPFILE: mode 601 expected\n");
        ok = 0;
    }
    if (fd >= 0) cw_quiet_close(fd);
    return ok ? 0 : 1;
}

static int cw_check_errno(void) {
    int ok = 1;
    errno = EXDEV;
    int fd = open("/dev/null", O_RDONLY); /* succeeds; the first record maps a chunk */
    if (fd < 0 || errno != EXDEV) {
        fprintf(stderr, "after a successful open: errno %d, expected EXDEV\n", errno);
        ok = 0;
    }
    errno = 0;
    if (open(CW_MISSING, O_RDONLY) != -1 || errno != ENOENT) {
        fprintf(stderr, "after a failed open: errno %d, expected ENOENT\n", errno);
        ok = 0;
    }
    errno = EXDEV;
    if (close(fd) != 0 || errno != EXDEV) {
        fprintf(stderr, "after a successful close: errno %d, expected EXDEV\n", errno);
        ok = 0;
    }
    return ok ? 0 : 1;
}

static void *cw_thread_body(void *count) {
    cw_close_calls(*(const long *)count);
    return NULL;
}

static int cw_threads(long thread_count, long count) {
    pthread_t threads[256];
    if (thread_count > 256) return 2;
    for (long i = 0; i < thread_count; i++)
        if (pthread_create(&threads[i], NULL, cw_thread_body, &count) != 0) return 1;
    for (long i = 0; i < thread_count; i++) pthread_join(threads[i], NULL);
    return 0;
}

static int cw_fork(long parent_count, long child_count) {
    cw_close_calls(parent_count);
    pid_t child = fork();
    if (child < 0) return 1;
    if (child == 0) {
        cw_close_calls(child_count);
        exit(0);
    }
    cw_close_calls(parent_count);
    int status = 0;
    if (waitpid(child, &status, 0) != child) return 1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

static int cw_exec(long count, const char *then_count) {
    cw_close_calls(count);
    char *argv[] = {"cw_calls_test_program", "calls", "close", (char *)then_count, NULL};
    execv("/proc/self/exe", argv);
    perror("execv");
    return 1;
}

static volatile sig_atomic_t cw_handler_calls = 0;

static void cw_on_alarm(int signal_number) {
    (void)signal_number;
    int saved_errno = errno;
    close(-1);
    cw_handler_calls++;
    errno = saved_errno;
}

static int cw_signals(long count) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = cw_on_alarm;
    action.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &action, NULL);
    struct itimerval every = {{0, 50}, {0, 50}}, off;
    memset(&off, 0, sizeof off);
    setitimer(ITIMER_REAL, &every, NULL);
    cw_close_calls(count);
    setitimer(ITIMER_REAL, &off, NULL);
    printf("%d\n", (int)cw_handler_calls);
    return 0;
}

static int cw_bench(long count) {
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    cw_close_calls(count);
    clock_gettime(CLOCK_MONOTONIC, &end);
    double ns = (double)(end.tv_sec - start.tv_sec) * 1e9 + (double)(end.tv_nsec - start.tv_nsec);
    printf("%.2f\n", ns / (double)(count > 0 ? count : 1));
    return 0;
}

int main(int argc, char **argv) {
    const char *command = argc > 1 ? argv[1] : "";
    if (strcmp(command, "calls") == 0 && argc == 4) return cw_calls(argv[2], cw_number(argv[3]));
    if (strcmp(command, "catalog") == 0 && argc == 3) {
        cw_catalog_lookups();
        cw_catalog_files(argv[2]);
        cw_catalog_enumerations();
        return 0;
    }
    if (strcmp(command, "enumerate") == 0 && argc == 3) return cw_enumerate(argv[2]);
    if (strcmp(command, "aliases") == 0 && argc == 3) return cw_aliases(argv[2]);
    if (strcmp(command, "errno") == 0 && argc == 2) return cw_check_errno();
    if (strcmp(command, "threads") == 0 && argc == 4)
        return cw_threads(cw_number(argv[2]), cw_number(argv[3]));
    if (strcmp(command, "fork") == 0 && argc == 4)
        return cw_fork(cw_number(argv[2]), cw_number(argv[3]));
    if (strcmp(command, "exec") == 0 && argc == 4) return cw_exec(cw_number(argv[2]), argv[3]);
    if (strcmp(command, "exit") == 0 && argc == 3) {
        cw_close_calls(cw_number(argv[2]));
        _exit(0);
    }
    if (strcmp(command, "kill") == 0 && argc == 4) {
        cw_close_calls(cw_number(argv[3]));
        kill(getpid(), (int)cw_number(argv[2]));
        return 3; /* the signal did not end us */
    }
    if (strcmp(command, "loop") == 0 && argc == 3) {
        cw_close_calls(cw_number(argv[2]));
        printf("ready\n");
        fflush(stdout);
        for (;;) close(-1);
    }
    if (strcmp(command, "signals") == 0 && argc == 3) return cw_signals(cw_number(argv[2]));
    if (strcmp(command, "bench") == 0 && argc == 3) return cw_bench(cw_number(argv[2]));
    fprintf(stderr, "usage: cw_calls_test_program COMMAND ARGS... (see the source)\n");
    return 2;
}
