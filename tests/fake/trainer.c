/*
 * A fake training job for steptop's tests: a parent holding a resident block of
 * memory and WORKERS children that share it copy-on-write and each own a
 * private block, as a data-loader worker pool does.
 *
 * Usage: trainer SHARED_MIB PRIVATE_MIB WORKERS [LOGFILE]
 *
 * The parent writes every page of SHARED_MIB MiB, opens LOGFILE for appending
 * (if given; the fd stays open and the children inherit it), then forks the
 * workers. Each worker writes every page of its own PRIVATE_MIB MiB, reads
 * (without writing) every page of the shared block, reports ready through a
 * pipe and sleeps. Once all are ready the parent prints
 *     ready PARENT_PID CHILD_PID...
 * on stdout and sleeps.
 *
 * Ending: on SIGTERM (or SIGINT, SIGHUP) the parent kills and reaps its workers,
 * then exits. If its stdin is a pipe, the parent does the same when that pipe
 * reaches end of file, so the job goes away with a test process that dies
 * without cleaning up. Workers die with the parent (PR_SET_PDEATHSIG).
 *
 * Build: cc -O1 -Wall -Wextra -Werror -o trainer trainer.c
 */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_WORKERS 256

static pid_t workers[MAX_WORKERS];
static volatile sig_atomic_t nworkers;

/* Kills and reaps the workers; async-signal-safe. */
static void end_workers(void)
{
    for (sig_atomic_t i = 0; i < nworkers; i++)
        if (workers[i] > 0)
            kill(workers[i], SIGKILL);
    for (sig_atomic_t i = 0; i < nworkers; i++)
        if (workers[i] > 0)
            while (waitpid(workers[i], NULL, 0) < 0 && errno == EINTR) {
            }
}

static void on_term(int sig)
{
    (void)sig;
    end_workers();
    _exit(0);
}

static void die(const char *what)
{
    fprintf(stderr, "trainer: %s: %s\n", what, strerror(errno));
    end_workers();
    exit(1);
}

static unsigned long parse_count(const char *arg, const char *name, unsigned long max)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(arg, &end, 10);
    if (errno || *end != '\0' || *arg == '\0' || *arg == '-' || v > max) {
        fprintf(stderr, "trainer: %s must be a whole number from 0 to %lu, not '%s'\n", name, max,
                arg);
        exit(2);
    }
    return v;
}

static char *map_mib(unsigned long mib)
{
    if (mib == 0)
        return NULL;
    void *p = mmap(NULL, mib << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        die("mmap");
    return p;
}

static void write_pages(char *p, size_t len, size_t page, char value)
{
    for (size_t off = 0; off < len; off += page)
        p[off] = value;
}

static unsigned long read_pages(const char *p, size_t len, size_t page)
{
    const volatile char *v = p;
    unsigned long sum = 0;
    for (size_t off = 0; off < len; off += page)
        sum += (unsigned char)v[off];
    return sum;
}

static void worker(const char *shared, size_t shared_len, unsigned long private_mib,
                   size_t page, int ready_fd, pid_t parent)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    nworkers = 0; /* a worker has no workers of its own */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
        _exit(3);
    if (getppid() != parent) /* the parent died before the prctl */
        _exit(3);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);

    char *mine = map_mib(private_mib);
    write_pages(mine, private_mib << 20, page, 2);
    volatile unsigned long sink = read_pages(shared, shared_len, page);
    (void)sink;

    char byte = 'r';
    while (write(ready_fd, &byte, 1) < 0)
        if (errno != EINTR)
            _exit(4);
    close(ready_fd);
    for (;;)
        pause();
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: trainer SHARED_MIB PRIVATE_MIB WORKERS [LOGFILE]\n");
        return 2;
    }
    unsigned long shared_mib = parse_count(argv[1], "SHARED_MIB", 1ul << 20);
    unsigned long private_mib = parse_count(argv[2], "PRIVATE_MIB", 1ul << 20);
    unsigned long count = parse_count(argv[3], "WORKERS", MAX_WORKERS);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);

    /* SIGTERM waits until the workers are recorded; they unblock it themselves */
    sigset_t term, old;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigaddset(&term, SIGINT);
    sigaddset(&term, SIGHUP);
    sigprocmask(SIG_BLOCK, &term, &old);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigfillset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    size_t shared_len = shared_mib << 20;
    char *shared = map_mib(shared_mib);
    write_pages(shared, shared_len, page, 1);

    if (argc == 5) {
        /* kept open on purpose (never closed): the workers inherit it */
        int fd = open(argv[4], O_WRONLY | O_APPEND | O_CREAT, 0644);
        if (fd < 0)
            die(argv[4]);
    }

    int ready[2];
    if (pipe2(ready, O_CLOEXEC) != 0)
        die("pipe");
    fflush(stdout);
    fflush(stderr);
    pid_t self = getpid();
    for (unsigned long i = 0; i < count; i++) {
        pid_t pid = fork();
        if (pid < 0)
            die("fork");
        if (pid == 0) {
            close(ready[0]);
            worker(shared, shared_len, private_mib, page, ready[1], self);
        }
        workers[i] = pid;
        nworkers = (sig_atomic_t)(i + 1);
    }
    close(ready[1]);

    sigprocmask(SIG_SETMASK, &old, NULL);

    for (unsigned long got = 0; got < count;) {
        char buf[64];
        ssize_t n = read(ready[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, "trainer: a worker ended before it was ready\n");
            end_workers();
            return 1;
        }
        got += (unsigned long)n;
    }
    close(ready[0]);

    printf("ready %ld", (long)self);
    for (unsigned long i = 0; i < count; i++)
        printf(" %ld", (long)workers[i]);
    printf("\n");
    if (fflush(stdout) != 0)
        die("stdout");

    struct stat st;
    int watch_stdin = fstat(STDIN_FILENO, &st) == 0 && S_ISFIFO(st.st_mode);
    for (;;) {
        if (!watch_stdin) {
            pause();
            continue;
        }
        char buf[256];
        ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
        if (n < 0 && errno == EAGAIN) {
            watch_stdin = 0; /* a non-blocking pipe: just sleep */
            continue;
        }
        if (n == 0 || (n < 0 && errno != EINTR)) {
            sigprocmask(SIG_BLOCK, &term, NULL);
            end_workers();
            return 0;
        }
    }
}
