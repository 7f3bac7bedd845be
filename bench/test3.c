/* The reference for sigbench's executor overhead: s3e test 3 written directly in C.
 *
 *   test3 DIR N   populate DIR/file_1..N (empty), sync, fsync DIR, then time
 *                 renameat2(NOREPLACE) -> unlink -> openat(O_WRONLY|O_CREAT|O_EXCL|O_TRUNC) -> close
 *                 for every file and print the elapsed nanoseconds of that loop.
 *
 * The syscalls, flags, relative paths (cwd = DIR) and order are those of sigbench's
 * built-in s3e-test3 signature, so the two timed windows differ only by the executor. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#endif

static void die(const char *what, const char *path) {
    perror(what);
    fprintf(stderr, "  at %s\n", path);
    exit(1);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s DIR N\n", argv[0]);
        return 2;
    }
    long n = atol(argv[2]);
    char a[64], b[64];
    if (chdir(argv[1]) != 0) die("chdir", argv[1]);
    for (long i = 1; i <= n; i++) {
        snprintf(a, sizeof a, "file_%ld", i);
        int fd = openat(AT_FDCWD, a, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) die("populate", a);
        close(fd);
    }
    sync();
    int dfd = open(".", O_RDONLY | O_DIRECTORY);
    if (dfd < 0 || fsync(dfd) != 0) die("fsync", ".");
    close(dfd);

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 1; i <= n; i++) {
        snprintf(a, sizeof a, "file_%ld", i);
        snprintf(b, sizeof b, "file_%ld-RPMDELETE", i);
        if (syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, RENAME_NOREPLACE) != 0) die("renameat2", a);
        if (syscall(SYS_unlink, b) != 0) die("unlink", b);
        long fd = syscall(SYS_openat, AT_FDCWD, a, O_WRONLY | O_CREAT | O_EXCL | O_TRUNC, 0666);
        if (fd < 0) die("openat", a);
        if (syscall(SYS_close, fd) != 0) die("close", a);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%lld\n", (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
    return 0;
}
