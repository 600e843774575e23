/* fusevol's C engine: BACKING mirrored through libfuse3, every request delayed like remote storage.
 *
 * Built by fusevol.py (gcc, pkg-config fuse3) into a per-source cache directory; settings arrive as
 * FUSEVOL_* environment variables, libfuse options on the command line (MOUNTPOINT -f -o ...).
 * Handlers are stateless apart from counters, so libfuse's multi-threaded loop overlaps requests.
 * The Python engine (fusevol_py.py) implements the same rules; keep the two in step.
 */
#define FUSE_USE_VERSION 31
#define _GNU_SOURCE
#include <fuse.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define EACH_OP(X) X(getattr) X(readdir) X(readlink) X(statfs) X(open) X(create) X(read) X(write) \
    X(flush) X(fsync) X(release) X(truncate) X(mkdir) X(rmdir) X(unlink) X(rename) X(symlink)    \
    X(chmod) X(chown) X(utimens)
#define AS_ENUM(name) OP_##name,
#define AS_NAME(name) #name,
enum { EACH_OP(AS_ENUM) NOPS };
static const char *const op_names[NOPS] = {EACH_OP(AS_NAME)};

#define BLKSIZE 131072 /* st_blksize of every file: stdio and cp move 128 KiB per call */
#define PARALLEL_DIROPS (1u << 18)

/* settings */
static char root[PATH_MAX];
static const char *stats_path, *fail_paths;
static double op_latency, read_latency, write_latency, bandwidth, attr_timeout, entry_timeout, fail_rate;
static long fail_times, fault_seed, max_background;
static int direct_io, fail_op[NOPS];

/* counters */
static atomic_long n_ops[NOPS], n_faults[NOPS], bytes_read, bytes_written, inflight, peak_inflight, changes;

static pthread_mutex_t link_mu = PTHREAD_MUTEX_INITIALIZER, fault_mu = PTHREAD_MUTEX_INITIALIZER,
                       stats_mu = PTHREAD_MUTEX_INITIALIZER;
static double link_idle_at; /* monotonic time at which the shared link is next free */

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void pause_for(double s) {
    if (s <= 0) return;
    struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&t, &t) && errno == EINTR) {
    }
}

/* The request's latency plus its wait for a turn on the link that all reads and writes share. */
static double transfer_wait(double latency, size_t nbytes) {
    if (bandwidth <= 0) return latency;
    pthread_mutex_lock(&link_mu);
    double t = now();
    link_idle_at = (link_idle_at > t ? link_idle_at : t) + (double)nbytes / bandwidth;
    double wait = latency + link_idle_at - t;
    pthread_mutex_unlock(&link_mu);
    return wait;
}

/* FNV-1a then the murmur3 finaliser; fusevol_py.py's _hash64 computes the same. */
static uint64_t hash64(const char *s) {
    uint64_t h = 0xcbf29ce484222325ULL;
    while (*s) h = (h ^ (unsigned char)*s++) * 0x100000001b3ULL;
    h = (h ^ h >> 33) * 0xff51afd7ed558ccdULL;
    h = (h ^ h >> 33) * 0xc4ceb9fe1a85ec53ULL;
    return h ^ h >> 33;
}

/* Call k of (op, path) fails when draw("seed:op:path:k") < fail_rate, at most fail_times times. */
struct tally {
    struct tally *next;
    long calls, fails;
    char key[];
};
static struct tally *tallies[4096];

static int injected_fault(int op, const char *path) {
    const char *rel = path[0] == '/' ? path + 1 : path;
    if (fail_rate <= 0 || !fail_op[op] || fnmatch(fail_paths, rel, 0)) return 0;
    char key[PATH_MAX + 32], draw[PATH_MAX + 96];
    snprintf(key, sizeof key, "%s:%s", op_names[op], rel);
    int fail = 0;
    pthread_mutex_lock(&fault_mu);
    struct tally **slot = &tallies[hash64(key) % 4096], *t = *slot;
    while (t && strcmp(t->key, key)) t = t->next;
    if (!t && (t = calloc(1, sizeof *t + strlen(key) + 1))) {
        strcpy(t->key, key);
        t->next = *slot;
        *slot = t;
    }
    if (t) {
        snprintf(draw, sizeof draw, "%ld:%s:%ld", fault_seed, key, t->calls++);
        fail = t->fails < fail_times && (double)(hash64(draw) >> 11) * 0x1p-53 < fail_rate;
        t->fails += fail;
    }
    pthread_mutex_unlock(&fault_mu);
    return fail;
}

/* Every handler: begin() counts the request, waits, and may inject EIO; end() closes it. */
static int begin(int op, const char *path, double wait) {
    atomic_fetch_add(&n_ops[op], 1);
    long n = atomic_fetch_add(&inflight, 1) + 1, p = atomic_load(&peak_inflight);
    while (n > p && !atomic_compare_exchange_weak(&peak_inflight, &p, n)) {
    }
    atomic_fetch_add(&changes, 1);
    pause_for(wait);
    if (!injected_fault(op, path ? path : "")) return 0;
    atomic_fetch_add(&n_faults[op], 1);
    return -EIO;
}

static int end(int result) {
    atomic_fetch_sub(&inflight, 1);
    atomic_fetch_add(&changes, 1);
    return result;
}

#define BACKING(var, path)      \
    char var[2 * PATH_MAX + 1]; \
    snprintf(var, sizeof var, "%s%s", root, path)
#define CHECK(call) ((call) < 0 ? -errno : 0)

static int file_handle(struct fuse_file_info *fi, int fd) {
    if (fd < 0) return -errno;
    fi->fh = (uint64_t)fd;
    fi->direct_io = direct_io;
    return 0;
}

static int vol_getattr(const char *path, struct stat *st, struct fuse_file_info *fi) {
    (void)fi;
    BACKING(p, path);
    int r = begin(OP_getattr, path, op_latency);
    if (!r && !(r = CHECK(lstat(p, st)))) st->st_blksize = BLKSIZE;
    return end(r);
}

static int vol_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off, struct fuse_file_info *fi,
                       enum fuse_readdir_flags flags) {
    (void)off, (void)fi, (void)flags;
    BACKING(p, path);
    int r = begin(OP_readdir, path, op_latency);
    DIR *d = r ? NULL : opendir(p);
    if (!r && !d) r = -errno;
    for (struct dirent *e; d && (e = readdir(d));) {
        struct stat st = {.st_ino = e->d_ino, .st_mode = DTTOIF(e->d_type)}; /* d_type: no lookup per entry */
        if (fill(buf, e->d_name, &st, 0, 0)) break;
    }
    if (d) closedir(d);
    return end(r);
}

static int vol_readlink(const char *path, char *buf, size_t size) {
    BACKING(p, path);
    int r = begin(OP_readlink, path, op_latency);
    ssize_t n = r ? 0 : readlink(p, buf, size - 1);
    if (n < 0)
        r = -errno;
    else
        buf[n] = 0;
    return end(r);
}

static int vol_statfs(const char *path, struct statvfs *sv) {
    BACKING(p, path);
    int r = begin(OP_statfs, path, op_latency);
    return end(r ? r : CHECK(statvfs(p, sv)));
}

static int vol_open(const char *path, struct fuse_file_info *fi) {
    BACKING(p, path);
    int r = begin(OP_open, path, op_latency);
    return end(r ? r : file_handle(fi, open(p, fi->flags & ~O_DIRECT)));
}

static int vol_create(const char *path, mode_t mode, struct fuse_file_info *fi) {
    BACKING(p, path);
    int r = begin(OP_create, path, op_latency);
    return end(r ? r : file_handle(fi, open(p, (fi->flags | O_CREAT) & ~O_DIRECT, mode)));
}

static int vol_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
    int r = begin(OP_read, path, transfer_wait(read_latency, size));
    ssize_t n = r ? 0 : pread((int)fi->fh, buf, size, off);
    if (n < 0)
        r = -errno;
    else if (!r) {
        atomic_fetch_add(&bytes_read, n);
        r = (int)n;
    }
    return end(r);
}

static int vol_write(const char *path, const char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
    int r = begin(OP_write, path, transfer_wait(write_latency, size));
    ssize_t n = r ? 0 : pwrite((int)fi->fh, buf, size, off);
    if (n < 0)
        r = -errno;
    else if (!r) {
        atomic_fetch_add(&bytes_written, n);
        r = (int)n;
    }
    return end(r);
}

/* the close() of a written file: where a remote store commits (no_rofd_flush spares read-only fds) */
static int vol_flush(const char *path, struct fuse_file_info *fi) {
    (void)fi;
    return end(begin(OP_flush, path, op_latency));
}

static int vol_fsync(const char *path, int datasync, struct fuse_file_info *fi) {
    int r = begin(OP_fsync, path, op_latency);
    return end(r ? r : CHECK(datasync ? fdatasync((int)fi->fh) : fsync((int)fi->fh)));
}

/* the kernel sends release without waiting for its answer: no latency, no fault */
static int vol_release(const char *path, struct fuse_file_info *fi) {
    atomic_fetch_add(&n_ops[OP_release], 1);
    (void)path;
    close((int)fi->fh);
    return 0;
}

static int vol_truncate(const char *path, off_t size, struct fuse_file_info *fi) {
    BACKING(p, path);
    int r = begin(OP_truncate, path, op_latency);
    return end(r ? r : CHECK(fi ? ftruncate((int)fi->fh, size) : truncate(p, size)));
}

static int vol_mkdir(const char *path, mode_t mode) {
    BACKING(p, path);
    int r = begin(OP_mkdir, path, op_latency);
    return end(r ? r : CHECK(mkdir(p, mode)));
}

static int vol_rmdir(const char *path) {
    BACKING(p, path);
    int r = begin(OP_rmdir, path, op_latency);
    return end(r ? r : CHECK(rmdir(p)));
}

static int vol_unlink(const char *path) {
    BACKING(p, path);
    int r = begin(OP_unlink, path, op_latency);
    return end(r ? r : CHECK(unlink(p)));
}

static int vol_rename(const char *from, const char *to, unsigned int flags) {
    BACKING(p, from);
    BACKING(q, to);
    int r = begin(OP_rename, from, op_latency);
    return end(r ? r : CHECK(renameat2(AT_FDCWD, p, AT_FDCWD, q, flags)));
}

static int vol_symlink(const char *target, const char *path) {
    BACKING(p, path);
    int r = begin(OP_symlink, path, op_latency);
    return end(r ? r : CHECK(symlink(target, p)));
}

static int vol_chmod(const char *path, mode_t mode, struct fuse_file_info *fi) {
    BACKING(p, path);
    int r = begin(OP_chmod, path, op_latency);
    return end(r ? r : CHECK(fi ? fchmod((int)fi->fh, mode) : chmod(p, mode)));
}

static int vol_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi) {
    BACKING(p, path);
    int r = begin(OP_chown, path, op_latency);
    return end(r ? r : CHECK(fi ? fchown((int)fi->fh, uid, gid) : lchown(p, uid, gid)));
}

static int vol_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi) {
    BACKING(p, path);
    int r = begin(OP_utimens, path, op_latency);
    return end(r ? r : CHECK(fi ? futimens((int)fi->fh, tv) : utimensat(AT_FDCWD, p, tv, AT_SYMLINK_NOFOLLOW)));
}

static void put_counts(FILE *f, const char *name, atomic_long *counts) {
    fprintf(f, "\"%s\": {", name);
    const char *sep = "";
    for (int i = 0; i < NOPS; i++) {
        long n = atomic_load(&counts[i]);
        if (n) {
            fprintf(f, "%s\"%s\": %ld", sep, op_names[i], n);
            sep = ", ";
        }
    }
    fputs("}, ", f);
}

/* the counters as JSON, replaced atomically (readers never see a half-written file) */
static void write_stats(void) {
    char tmp[PATH_MAX + 16];
    snprintf(tmp, sizeof tmp, "%s.tmp", stats_path);
    pthread_mutex_lock(&stats_mu);
    FILE *f = fopen(tmp, "w");
    if (f) {
        fprintf(f, "{\"engine\": \"c\", \"pid\": %d, ", (int)getpid());
        put_counts(f, "ops", n_ops);
        put_counts(f, "faults", n_faults);
        fprintf(f, "\"bytes_read\": %ld, \"bytes_written\": %ld, \"inflight\": %ld, \"peak_inflight\": %ld}\n",
                atomic_load(&bytes_read), atomic_load(&bytes_written), atomic_load(&inflight),
                atomic_load(&peak_inflight));
        if (fclose(f) == 0) rename(tmp, stats_path);
    }
    pthread_mutex_unlock(&stats_mu);
}

static void *stats_loop(void *arg) {
    (void)arg;
    for (long seen = -1;; usleep(250000)) {
        long c = atomic_load(&changes);
        if (c != seen) {
            seen = c;
            write_stats();
        }
    }
    return NULL;
}

/* libfuse before 3.17 never passes FUSE_PARALLEL_DIROPS on to the kernel, which then serialises
 * lookups and readdirs within one directory. vol_init() arms this writev() override, which sets the
 * flag in the INIT reply libfuse writes next (fuse_out_header, then fuse_init_out: flags is its 4th u32). */
static atomic_int patch_init_reply;
ssize_t writev(int fd, const struct iovec *iov, int n) {
    if (atomic_exchange(&patch_init_reply, 0) && n == 2 && iov[0].iov_len == 16 && iov[1].iov_len >= 16)
        ((uint32_t *)iov[1].iov_base)[3] |= PARALLEL_DIROPS;
    return syscall(SYS_writev, fd, iov, n);
}

static void *vol_init(struct fuse_conn_info *conn, struct fuse_config *cfg) {
    if (conn->capable & FUSE_CAP_PARALLEL_DIROPS) {
        conn->want |= FUSE_CAP_PARALLEL_DIROPS;
        atomic_store(&patch_init_reply, 1);
    }
    if (max_background > 0) { /* the kernel's cap on async requests (readahead): default 12 */
        conn->max_background = (unsigned)max_background;
        conn->congestion_threshold = (unsigned)(max_background * 3 / 4 > 0 ? max_background * 3 / 4 : 1);
    }
    cfg->attr_timeout = attr_timeout;
    cfg->entry_timeout = entry_timeout;
    cfg->negative_timeout = 0;
    return NULL;
}

static const struct fuse_operations vol_ops = {
    .getattr = vol_getattr, .readdir = vol_readdir, .readlink = vol_readlink, .statfs = vol_statfs,
    .open = vol_open,       .create = vol_create,   .read = vol_read,         .write = vol_write,
    .flush = vol_flush,     .fsync = vol_fsync,     .release = vol_release,   .truncate = vol_truncate,
    .mkdir = vol_mkdir,     .rmdir = vol_rmdir,     .unlink = vol_unlink,     .rename = vol_rename,
    .symlink = vol_symlink, .chmod = vol_chmod,     .chown = vol_chown,       .utimens = vol_utimens,
    .init = vol_init,
};

static const char *env(const char *name) {
    const char *v = getenv(name);
    return v ? v : "";
}

int main(int argc, char *argv[]) {
    if (!realpath(env("FUSEVOL_ROOT"), root)) {
        perror("fusevol: FUSEVOL_ROOT");
        return 2;
    }
    op_latency = atof(env("FUSEVOL_OP_LATENCY"));
    read_latency = atof(env("FUSEVOL_READ_LATENCY"));
    write_latency = atof(env("FUSEVOL_WRITE_LATENCY"));
    bandwidth = atof(env("FUSEVOL_BANDWIDTH"));
    attr_timeout = atof(env("FUSEVOL_ATTR_TIMEOUT"));
    entry_timeout = atof(env("FUSEVOL_ENTRY_TIMEOUT"));
    direct_io = atoi(env("FUSEVOL_DIRECT_IO"));
    max_background = atol(env("FUSEVOL_MAX_BACKGROUND"));
    stats_path = env("FUSEVOL_STATS");
    fail_rate = atof(env("FUSEVOL_FAIL_RATE"));
    fail_paths = env("FUSEVOL_FAIL_PATHS");
    fail_times = atol(env("FUSEVOL_FAIL_TIMES"));
    fault_seed = atol(env("FUSEVOL_FAULT_SEED"));
    char ops[1024];
    snprintf(ops, sizeof ops, ",%s,", env("FUSEVOL_FAIL_OPS"));
    for (int i = 0; i < NOPS; i++) {
        char name[32];
        snprintf(name, sizeof name, ",%s,", op_names[i]);
        fail_op[i] = i != OP_release && strstr(ops, name) != NULL;
    }
    umask(0); /* the kernel already applied the caller's umask to create and mkdir modes */
    pthread_t stats_thread;
    if (*stats_path) pthread_create(&stats_thread, NULL, stats_loop, NULL);
    int status = fuse_main(argc, argv, &vol_ops, NULL);
    if (*stats_path) write_stats();
    return status;
}
