/*
 * A fake libnvidia-ml.so.1 for steptop's tests: enough of the NVML C API for
 * nvml-wrapper 0.13 (nvml-wrapper-sys 0.10 bindings), driven by a scenario file.
 *
 * Build: cc -shared -fPIC -O1 -Wall -Wextra -Werror -o libnvidia-ml.so.1 nvml.c
 *
 * Environment, read at nvmlInit_v2 / nvmlInitWithFlags (when no earlier init is
 * still open):
 *   FAKE_NVML_INIT      "driver_not_loaded", "no_permission" or
 *                       "lib_rm_version_mismatch": init fails with that code.
 *   FAKE_NVML_SCENARIO  path of the scenario file (required otherwise).
 *
 * Scenario file: one directive per line, whitespace separated; '#' starts a
 * comment that runs to the end of the line; blank lines are ignored.
 *   gpus N                 number of GPUs (0..64); must come before the others, once.
 *   name G TEXT...         name of GPU G (the rest of the line; default "NVIDIA Fake GPU").
 *   row T G UTIL MEMUTIL MEM_USED_MIB MEM_TOTAL_MIB POWER_MW LIMIT_MW TEMP_C
 *       SM_MHZ SM_MAX_MHZ THROTTLE PCIE_TX_KBS PCIE_RX_KBS
 *                          readings of GPU G from tick T on (until its next row).
 *                          THROTTLE is a bitmask, hex with 0x or decimal.
 *   fail T G FIELD [CODE]  at tick T only, GPU G's FIELD call fails with CODE
 *                          (unknown (default), not_supported, no_permission).
 *                          FIELD: util mem power limit temp clock maxclock
 *                          throttle pcie procs.
 *   lost T G               from tick T on, every call for GPU G returns
 *                          NVML_ERROR_GPU_IS_LOST.
 *   proc G PID MIB         GPU G runs compute process PID using MIB MiB.
 *   gpm T G SM_PCT TENSOR_PCT
 *                          GPU G has GPM (a Hopper-like GPU); from tick T on
 *                          (until its next gpm line) a metrics query whose
 *                          second sample was taken at that tick returns SM
 *                          activity SM_PCT and tensor activity TENSOR_PCT
 *                          (percentages, decimals allowed). Other metric ids
 *                          answer NVML_ERROR_NOT_SUPPORTED in their own slot.
 * Every GPU needs a row at tick 0; two rows of one GPU may not share a tick.
 * Any error: a message naming the line on stderr, and init returns
 * NVML_ERROR_UNKNOWN.
 *
 * Ticks: the fake counts calls to nvmlDeviceGetUtilizationRates (all GPUs,
 * failed ones too). A utilization call sees tick = calls_before_it / gpus; every
 * other call sees the tick of the latest utilization call (0 before any), that
 * is (calls - 1) / gpus. A prober that reads every GPU's utilization first in
 * each sample sees tick 0 for its whole first sample, 1 for its second, ...
 *
 * All state sits behind one mutex, so calls from several threads are safe.
 */

#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Types, matching nvml-wrapper-sys 0.10.0 bindings.rs ---- */

typedef unsigned int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef unsigned int nvmlTemperatureSensors_t;
typedef unsigned int nvmlClockType_t;
typedef unsigned int nvmlPcieUtilCounter_t;

typedef struct {
    unsigned int gpu;
    unsigned int memory;
} nvmlUtilization_t;

typedef struct {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

typedef struct {
    unsigned int version;
    unsigned long long total;
    unsigned long long reserved;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_v2_t;

typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfo_t; /* nvmlProcessInfo_v2_st, what the _v3 call fills */

typedef struct {
    unsigned int version;
    unsigned int isSupportedDevice;
} nvmlGpmSupport_t;

/* Opaque to callers; the fake keeps which GPU and tick a sample was taken at. */
typedef struct nvmlGpmSample_st {
    int taken;
    unsigned int gpu;
    unsigned long long tick;
} *nvmlGpmSample_t;

typedef struct {
    unsigned int metricId;
    nvmlReturn_t nvmlReturn;
    double value;
    struct {
        char *shortName;
        char *longName;
        char *unit;
    } metricInfo;
} nvmlGpmMetric_t;

#define NVML_GPM_METRIC_MAX 210
typedef struct {
    unsigned int version;
    unsigned int numMetrics;
    nvmlGpmSample_t sample1;
    nvmlGpmSample_t sample2;
    nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;

enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_UNKNOWN = 999
};

#define NVML_MEMORY_V2_VERSION ((unsigned int)(sizeof(nvmlMemory_v2_t) | (2u << 24)))
#define NVML_GPM_SUPPORT_VERSION 1u
#define NVML_GPM_METRICS_GET_VERSION 1u
#define NVML_GPM_METRIC_SM_UTIL 2u
#define NVML_GPM_METRIC_ANY_TENSOR_UTIL 5u
#define NO_INSTANCE 0xFFFFFFFFu
#define MEM_CLOCK_MHZ 2619u
#define DRIVER_VERSION "550.54.15"
#define NVML_VERSION "12.550.54.15"
#define DEFAULT_NAME "NVIDIA Fake GPU"

#define EXPORT __attribute__((visibility("default")))

/* ---- Scenario ---- */

#define MAX_GPUS 64
#define MAX_NAME 96 /* NVML_DEVICE_NAME_V2_BUFFER_SIZE, terminator included */
#define NO_TICK ULLONG_MAX

enum field {
    F_UTIL,
    F_MEM,
    F_POWER,
    F_LIMIT,
    F_TEMP,
    F_CLOCK,
    F_MAXCLOCK,
    F_THROTTLE,
    F_PCIE,
    F_PROCS,
    F_GPM,
    F_COUNT
};

static const char *const field_names[F_COUNT] = {
    "util", "mem", "power", "limit", "temp", "clock", "maxclock", "throttle", "pcie", "procs", "gpm",
};

struct row {
    unsigned long long tick;
    unsigned int util, mem_util;
    unsigned long long mem_used, mem_total; /* bytes */
    unsigned int power_mw, limit_mw, temp_c, sm_mhz, sm_max_mhz;
    unsigned long long throttle;
    unsigned int pcie_tx, pcie_rx;
};

struct fail {
    unsigned long long tick;
    unsigned int gpu;
    enum field field;
    nvmlReturn_t code;
};

struct gpm_row {
    unsigned long long tick;
    double sm, tensor; /* percent */
};

struct proc {
    unsigned int gpu, pid;
    unsigned long long used; /* bytes */
};

struct gpu {
    char name[MAX_NAME];
    struct row *rows; /* sorted by tick */
    size_t nrows;
    struct gpm_row *gpm; /* sorted by tick; none: no GPM on this GPU */
    size_t ngpm;
    unsigned long long lost_from; /* NO_TICK: never */
};

struct scenario {
    unsigned int ngpus;
    struct gpu gpus[MAX_GPUS];
    struct fail *fails;
    size_t nfails;
    struct proc *procs;
    size_t nprocs;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int init_count; /* open inits (NVML reference counts them) */
static struct scenario sc;
static unsigned long long util_calls;

static void scenario_free(struct scenario *s)
{
    for (unsigned int i = 0; i < MAX_GPUS; i++) {
        free(s->gpus[i].rows);
        free(s->gpus[i].gpm);
    }
    free(s->fails);
    free(s->procs);
    memset(s, 0, sizeof *s);
}

static int grow(void **items, size_t count, size_t size)
{
    void *p = realloc(*items, (count + 1) * size);
    if (!p)
        return -1;
    *items = p;
    return 0;
}

/* Parses a whole token as an unsigned number no larger than max. */
static int parse_num(const char *tok, int base, unsigned long long max, unsigned long long *out)
{
    if (!tok || *tok == '-' || *tok == '+' || *tok == '\0')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(tok, &end, base);
    if (errno || *end != '\0' || v > max)
        return -1;
    *out = v;
    return 0;
}

static int parse_uint(const char *tok, unsigned int *out)
{
    unsigned long long v;
    if (parse_num(tok, 10, UINT_MAX, &v))
        return -1;
    *out = (unsigned int)v;
    return 0;
}

static int parse_mib(const char *tok, unsigned long long *bytes)
{
    unsigned long long v;
    if (parse_num(tok, 10, ULLONG_MAX >> 20, &v))
        return -1;
    *bytes = v << 20;
    return 0;
}

/* A percentage, decimals allowed. */
static int parse_pct(const char *tok, double *out)
{
    if (!tok || *tok == '\0')
        return -1;
    char *end;
    errno = 0;
    double v = strtod(tok, &end);
    if (errno || *end != '\0' || !(v >= 0.0 && v <= 100.0))
        return -1;
    *out = v;
    return 0;
}

static int cmp_rows(const void *a, const void *b)
{
    unsigned long long x = ((const struct row *)a)->tick, y = ((const struct row *)b)->tick;
    return (x > y) - (x < y);
}

static int cmp_gpm(const void *a, const void *b)
{
    unsigned long long x = ((const struct gpm_row *)a)->tick;
    unsigned long long y = ((const struct gpm_row *)b)->tick;
    return (x > y) - (x < y);
}

#define MAX_TOKENS 20

/* Reports a scenario error; always returns -1. */
static int bad(const char *path, unsigned int line, const char *what)
{
    fprintf(stderr, "fake NVML: scenario %s line %u: %s\n", path, line, what);
    return -1;
}

static int parse_gpu(const char *tok, const struct scenario *s, unsigned int *gpu)
{
    return parse_uint(tok, gpu) || *gpu >= s->ngpus ? -1 : 0;
}

static int parse_line(struct scenario *s, int *have_gpus, char *text, const char *path,
                      unsigned int ln)
{
    char *hash = strchr(text, '#');
    if (hash)
        *hash = '\0';
    text[strcspn(text, "\r\n")] = '\0';

    /* split into tokens; 'name' keeps the rest of its line as its third token */
    char *tok[MAX_TOKENS];
    int n = 0;
    char *c = text;
    for (;;) {
        while (*c == ' ' || *c == '\t')
            c++;
        if (*c == '\0')
            break;
        if (n == MAX_TOKENS)
            return bad(path, ln, "too many fields");
        tok[n++] = c;
        if (n == 3 && strcmp(tok[0], "name") == 0)
            break;
        while (*c && *c != ' ' && *c != '\t')
            c++;
        if (*c)
            *c++ = '\0';
    }
    if (n == 0)
        return 0;

    const char *d = tok[0];
    if (strcmp(d, "gpus") == 0) {
        if (*have_gpus)
            return bad(path, ln, "'gpus' given twice");
        if (n != 2 || parse_uint(tok[1], &s->ngpus) || s->ngpus > MAX_GPUS)
            return bad(path, ln, "expected 'gpus N' with N from 0 to 64");
        *have_gpus = 1;
        for (unsigned int i = 0; i < MAX_GPUS; i++) {
            snprintf(s->gpus[i].name, MAX_NAME, "%s", DEFAULT_NAME);
            s->gpus[i].lost_from = NO_TICK;
        }
        return 0;
    }
    int known = !strcmp(d, "name") || !strcmp(d, "row") || !strcmp(d, "fail") ||
                !strcmp(d, "lost") || !strcmp(d, "proc") || !strcmp(d, "gpm");
    if (!known) {
        char msg[160];
        snprintf(msg, sizeof msg, "unknown directive '%.60s' (expected gpus, name, row, fail, "
                 "lost, proc or gpm)", d);
        return bad(path, ln, msg);
    }
    if (!*have_gpus)
        return bad(path, ln, "'gpus N' must come before any other directive");

    unsigned int g;
    if (strcmp(d, "name") == 0) {
        if (n != 3 || parse_gpu(tok[1], s, &g))
            return bad(path, ln, "expected 'name GPU TEXT' with GPU below the gpus count");
        char *t = tok[2];
        size_t len = strlen(t);
        while (len && (t[len - 1] == ' ' || t[len - 1] == '\t'))
            t[--len] = '\0';
        if (len >= MAX_NAME)
            return bad(path, ln, "name longer than 95 bytes");
        memcpy(s->gpus[g].name, t, len + 1);
        return 0;
    }
    if (strcmp(d, "row") == 0) {
        struct row r;
        unsigned long long tick;
        if (n != 15)
            return bad(path, ln, "expected 'row TICK GPU' and 12 values: util mem_util "
                       "mem_used_mib mem_total_mib power_mw limit_mw temp_c sm_mhz sm_max_mhz "
                       "throttle pcie_tx_kbs pcie_rx_kbs");
        if (parse_num(tok[1], 10, NO_TICK - 1, &tick) || parse_gpu(tok[2], s, &g))
            return bad(path, ln, "row: bad tick, or gpu not below the gpus count");
        r.tick = tick;
        if (parse_uint(tok[3], &r.util) || parse_uint(tok[4], &r.mem_util) ||
            parse_mib(tok[5], &r.mem_used) || parse_mib(tok[6], &r.mem_total) ||
            parse_uint(tok[7], &r.power_mw) || parse_uint(tok[8], &r.limit_mw) ||
            parse_uint(tok[9], &r.temp_c) || parse_uint(tok[10], &r.sm_mhz) ||
            parse_uint(tok[11], &r.sm_max_mhz) || parse_num(tok[12], 0, ULLONG_MAX, &r.throttle) ||
            parse_uint(tok[13], &r.pcie_tx) || parse_uint(tok[14], &r.pcie_rx))
            return bad(path, ln, "row: a value is not an unsigned number in range");
        if (r.util > 100 || r.mem_util > 100)
            return bad(path, ln, "row: util and mem_util are percentages (0..100)");
        if (r.mem_used > r.mem_total)
            return bad(path, ln, "row: mem_used_mib exceeds mem_total_mib");
        struct gpu *gp = &s->gpus[g];
        for (size_t i = 0; i < gp->nrows; i++)
            if (gp->rows[i].tick == r.tick)
                return bad(path, ln, "row: this gpu already has a row at this tick");
        if (grow((void **)&gp->rows, gp->nrows, sizeof r))
            return bad(path, ln, "out of memory");
        gp->rows[gp->nrows++] = r;
        return 0;
    }
    if (strcmp(d, "fail") == 0) {
        struct fail f;
        if (n != 4 && n != 5)
            return bad(path, ln, "expected 'fail TICK GPU FIELD [CODE]'");
        if (parse_num(tok[1], 10, NO_TICK - 1, &f.tick) || parse_gpu(tok[2], s, &f.gpu))
            return bad(path, ln, "fail: bad tick, or gpu not below the gpus count");
        f.field = F_COUNT;
        for (int i = 0; i < F_COUNT; i++)
            if (strcmp(tok[3], field_names[i]) == 0)
                f.field = (enum field)i;
        if (f.field == F_COUNT)
            return bad(path, ln, "fail: field must be one of util mem power limit temp clock "
                       "maxclock throttle pcie procs gpm");
        f.code = NVML_ERROR_UNKNOWN;
        if (n == 5) {
            if (strcmp(tok[4], "unknown") == 0)
                f.code = NVML_ERROR_UNKNOWN;
            else if (strcmp(tok[4], "not_supported") == 0)
                f.code = NVML_ERROR_NOT_SUPPORTED;
            else if (strcmp(tok[4], "no_permission") == 0)
                f.code = NVML_ERROR_NO_PERMISSION;
            else
                return bad(path, ln, "fail: code must be unknown, not_supported or no_permission");
        }
        if (grow((void **)&s->fails, s->nfails, sizeof f))
            return bad(path, ln, "out of memory");
        s->fails[s->nfails++] = f;
        return 0;
    }
    if (strcmp(d, "lost") == 0) {
        unsigned long long tick;
        if (n != 3 || parse_num(tok[1], 10, NO_TICK - 1, &tick) || parse_gpu(tok[2], s, &g))
            return bad(path, ln, "expected 'lost TICK GPU' with GPU below the gpus count");
        if (tick < s->gpus[g].lost_from)
            s->gpus[g].lost_from = tick;
        return 0;
    }
    if (strcmp(d, "gpm") == 0) {
        struct gpm_row r;
        if (n != 5 || parse_num(tok[1], 10, NO_TICK - 1, &r.tick) || parse_gpu(tok[2], s, &g) ||
            parse_pct(tok[3], &r.sm) || parse_pct(tok[4], &r.tensor))
            return bad(path, ln, "expected 'gpm TICK GPU SM_PCT TENSOR_PCT' with GPU below the "
                       "gpus count and percentages from 0 to 100");
        struct gpu *gp = &s->gpus[g];
        for (size_t i = 0; i < gp->ngpm; i++)
            if (gp->gpm[i].tick == r.tick)
                return bad(path, ln, "gpm: this gpu already has a gpm line at this tick");
        if (grow((void **)&gp->gpm, gp->ngpm, sizeof r))
            return bad(path, ln, "out of memory");
        gp->gpm[gp->ngpm++] = r;
        return 0;
    }
    /* proc */
    struct proc p;
    if (n != 4 || parse_gpu(tok[1], s, &p.gpu) || parse_uint(tok[2], &p.pid) ||
        parse_mib(tok[3], &p.used))
        return bad(path, ln, "expected 'proc GPU PID MIB' with GPU below the gpus count");
    if (grow((void **)&s->procs, s->nprocs, sizeof p))
        return bad(path, ln, "out of memory");
    s->procs[s->nprocs++] = p;
    return 0;
}

static int scenario_load(struct scenario *s, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "fake NVML: cannot open scenario %s: %s\n", path, strerror(errno));
        return -1;
    }
    memset(s, 0, sizeof *s);
    int have_gpus = 0, err = 0;
    unsigned int ln = 0;
    char *line = NULL;
    size_t cap = 0;
    while (!err && getline(&line, &cap, f) != -1)
        err = parse_line(s, &have_gpus, line, path, ++ln);
    if (!err && ferror(f))
        err = bad(path, ln, "read error");
    free(line);
    fclose(f);
    if (!err && !have_gpus)
        err = bad(path, ln, "no 'gpus N' line");
    for (unsigned int g = 0; !err && g < s->ngpus; g++) {
        struct gpu *gp = &s->gpus[g];
        qsort(gp->rows, gp->nrows, sizeof *gp->rows, cmp_rows);
        if (gp->ngpm)
            qsort(gp->gpm, gp->ngpm, sizeof *gp->gpm, cmp_gpm);
        if (gp->nrows == 0 || gp->rows[0].tick != 0) {
            fprintf(stderr, "fake NVML: scenario %s: gpu %u has no row at tick 0\n", path, g);
            err = -1;
        }
    }
    if (err)
        scenario_free(s);
    return err;
}

/* ---- Init / shutdown / strings ---- */

static nvmlReturn_t do_init(void)
{
    const char *mode = getenv("FAKE_NVML_INIT");
    if (mode && *mode) {
        if (strcmp(mode, "driver_not_loaded") == 0)
            return NVML_ERROR_DRIVER_NOT_LOADED;
        if (strcmp(mode, "no_permission") == 0)
            return NVML_ERROR_NO_PERMISSION;
        if (strcmp(mode, "lib_rm_version_mismatch") == 0)
            return NVML_ERROR_LIB_RM_VERSION_MISMATCH;
        fprintf(stderr, "fake NVML: FAKE_NVML_INIT=%s is not driver_not_loaded, no_permission "
                "or lib_rm_version_mismatch\n", mode);
        return NVML_ERROR_UNKNOWN;
    }
    nvmlReturn_t rc = NVML_SUCCESS;
    pthread_mutex_lock(&lock);
    if (init_count == 0) {
        const char *path = getenv("FAKE_NVML_SCENARIO");
        if (!path || !*path) {
            fprintf(stderr, "fake NVML: FAKE_NVML_SCENARIO is not set (path of a scenario file)\n");
            rc = NVML_ERROR_UNKNOWN;
        } else if (scenario_load(&sc, path)) {
            rc = NVML_ERROR_UNKNOWN;
        } else {
            util_calls = 0;
        }
    }
    if (rc == NVML_SUCCESS)
        init_count++;
    pthread_mutex_unlock(&lock);
    return rc;
}

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    return do_init();
}

EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
    (void)flags;
    return do_init();
}

EXPORT nvmlReturn_t nvmlShutdown(void)
{
    nvmlReturn_t rc = NVML_SUCCESS;
    pthread_mutex_lock(&lock);
    if (init_count == 0)
        rc = NVML_ERROR_UNINITIALIZED;
    else if (--init_count == 0)
        scenario_free(&sc);
    pthread_mutex_unlock(&lock);
    return rc;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t result)
{
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "RM has detected an NVML/RM version mismatch.";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
    case NVML_ERROR_UNKNOWN: return "Unknown Error";
    default: return "Unknown Error";
    }
}

static nvmlReturn_t copy_str(char *dst, unsigned int length, const char *src)
{
    if (!dst)
        return NVML_ERROR_INVALID_ARGUMENT;
    size_t n = strlen(src);
    if ((size_t)length < n + 1)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(dst, src, n + 1);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    pthread_mutex_lock(&lock);
    nvmlReturn_t rc = init_count ? copy_str(version, length, DRIVER_VERSION)
                                 : NVML_ERROR_UNINITIALIZED;
    pthread_mutex_unlock(&lock);
    return rc;
}

EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
    pthread_mutex_lock(&lock);
    nvmlReturn_t rc = init_count ? copy_str(version, length, NVML_VERSION)
                                 : NVML_ERROR_UNINITIALIZED;
    pthread_mutex_unlock(&lock);
    return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
    nvmlReturn_t rc = NVML_SUCCESS;
    pthread_mutex_lock(&lock);
    if (!init_count)
        rc = NVML_ERROR_UNINITIALIZED;
    else if (!deviceCount)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    else
        *deviceCount = sc.ngpus;
    pthread_mutex_unlock(&lock);
    return rc;
}

/* ---- Device calls ---- */

/* Tick seen by calls other than utilization: that of the latest utilization call. */
static unsigned long long current_tick(void)
{
    if (sc.ngpus == 0 || util_calls == 0)
        return 0;
    return (util_calls - 1) / sc.ngpus;
}

static const struct row *row_at(unsigned int g, unsigned long long tick)
{
    const struct gpu *gp = &sc.gpus[g];
    const struct row *r = &gp->rows[0];
    for (size_t i = 1; i < gp->nrows && gp->rows[i].tick <= tick; i++)
        r = &gp->rows[i];
    return r;
}

static nvmlReturn_t fault(unsigned int g, unsigned long long tick, enum field field)
{
    if (tick >= sc.gpus[g].lost_from)
        return NVML_ERROR_GPU_IS_LOST;
    for (size_t i = 0; i < sc.nfails; i++)
        if (sc.fails[i].gpu == g && sc.fails[i].tick == tick && sc.fails[i].field == field)
            return sc.fails[i].code;
    return NVML_SUCCESS;
}

/*
 * Common entry of device calls: takes the lock, checks init and the handle,
 * checks the out pointer, then the scenario's faults for this tick. On success
 * the lock stays held and *g, *tick are set; on failure it is released.
 */
static nvmlReturn_t enter(nvmlDevice_t device, const void *out, enum field field,
                          unsigned int *g, unsigned long long *tick)
{
    pthread_mutex_lock(&lock);
    nvmlReturn_t rc = NVML_SUCCESS;
    uintptr_t h = (uintptr_t)device;
    if (!init_count)
        rc = NVML_ERROR_UNINITIALIZED;
    else if (h == 0 || h > sc.ngpus)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS) {
        *g = (unsigned int)(h - 1);
        if (field == F_UTIL) {
            *tick = util_calls / sc.ngpus;
            util_calls++;
        } else {
            *tick = current_tick();
        }
        if (!out)
            rc = NVML_ERROR_INVALID_ARGUMENT;
        /* a lost GPU answers nothing else, whatever the arguments */
        if (*tick >= sc.gpus[*g].lost_from)
            rc = NVML_ERROR_GPU_IS_LOST;
        else if (rc == NVML_SUCCESS && field != F_COUNT)
            rc = fault(*g, *tick, field);
    }
    if (rc != NVML_SUCCESS)
        pthread_mutex_unlock(&lock);
    return rc;
}

static nvmlReturn_t leave(nvmlReturn_t rc)
{
    pthread_mutex_unlock(&lock);
    return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    nvmlReturn_t rc = NVML_SUCCESS;
    pthread_mutex_lock(&lock);
    if (!init_count)
        rc = NVML_ERROR_UNINITIALIZED;
    else if (index >= sc.ngpus || !device)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    else if (current_tick() >= sc.gpus[index].lost_from)
        rc = NVML_ERROR_GPU_IS_LOST;
    else
        *device = (nvmlDevice_t)(uintptr_t)(index + 1);
    pthread_mutex_unlock(&lock);
    return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
    unsigned int g;
    unsigned long long t;
    nvmlReturn_t rc = enter(device, index, F_COUNT, &g, &t);
    if (rc)
        return rc;
    *index = g;
    return leave(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    unsigned int g;
    unsigned long long t;
    nvmlReturn_t rc = enter(device, name, F_COUNT, &g, &t);
    if (rc)
        return rc;
    return leave(copy_str(name, length, sc.gpus[g].name));
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    unsigned int g;
    unsigned long long t;
    nvmlReturn_t rc = enter(device, uuid, F_COUNT, &g, &t);
    if (rc)
        return rc;
    char buf[64];
    snprintf(buf, sizeof buf, "GPU-fake-0000-%u", g);
    return leave(copy_str(uuid, length, buf));
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                  nvmlUtilization_t *utilization)
{
    unsigned int g;
    unsigned long long t;
    nvmlReturn_t rc = enter(device, utilization, F_UTIL, &g, &t);
    if (rc)
        return rc;
    const struct row *r = row_at(g, t);
    utilization->gpu = r->util;
    utilization->memory = r->mem_util;
    return leave(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
    unsigned int g;
    unsigned long long t;
    nvmlReturn_t rc = enter(device, memory, F_MEM, &g, &t);
    if (rc)
        return rc;
    if (memory->version != NVML_MEMORY_V2_VERSION)
        return leave(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    const struct row *r = row_at(g, t);
    memory->total = r->mem_total;
    memory->reserved = 0;
    memory->used = r->mem_used;
    memory->free = r->mem_total - r->mem_used;
    return leave(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    unsigned int g;
    unsigned long long t;
    nvmlReturn_t rc = enter(device, memory, F_MEM, &g, &t);
    if (rc)
        return rc;
    const struct row *r = row_at(g, t);
    memory->total = r->mem_total;
    memory->used = r->mem_used;
    memory->free = r->mem_total - r->mem_used;
    return leave(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
    unsigned int g;
    unsigned long long t;
    nvmlReturn_t rc = enter(device, power, F_POWER, &g, &t);
    if (rc)
        return rc;
    *power = row_at(g, t)->power_mw;
    return leave(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int *limit)
{
    unsigned int g;
    unsigned long long t;
    nvmlReturn_t rc = enter(device, limit, F_LIMIT, &g, &t);
    if (rc)
        return rc;
    *limit = row_at(g, t)->limit_mw;
    return leave(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device,
                                             nvmlTemperatureSensors_t sensorType,
                                             unsigned int *temp)
{
    unsigned int g;
    unsigned long long t;
    nvmlReturn_t rc = enter(device, temp, F_TEMP, &g, &t);
    if (rc)
        return rc;
    if (sensorType != 0) /* NVML_TEMPERATURE_GPU is the only sensor */
        return leave(NVML_ERROR_INVALID_ARGUMENT);
    *temp = row_at(g, t)->temp_c;
    return leave(NVML_SUCCESS);
}

static nvmlReturn_t clock_of(nvmlDevice_t device, nvmlClockType_t type, unsigned int *clock,
                             enum field field)
{
    unsigned int g;
    unsigned long long t;
    nvmlReturn_t rc = enter(device, clock, field, &g, &t);
    if (rc)
        return rc;
    const struct row *r = row_at(g, t);
    switch (type) {
    case 0: /* NVML_CLOCK_GRAPHICS: served as the SM clock */
    case 1: /* NVML_CLOCK_SM */
        *clock = field == F_MAXCLOCK ? r->sm_max_mhz : r->sm_mhz;
        return leave(NVML_SUCCESS);
    case 2: /* NVML_CLOCK_MEM */
        *clock = MEM_CLOCK_MHZ;
        return leave(NVML_SUCCESS);
    case 3: /* NVML_CLOCK_VIDEO */
        return leave(NVML_ERROR_NOT_SUPPORTED);
    default:
        return leave(NVML_ERROR_INVALID_ARGUMENT);
    }
}

EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type_,
                                           unsigned int *clock)
{
    return clock_of(device, type_, clock, F_CLOCK);
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type_,
                                              unsigned int *clock)
{
    return clock_of(device, type_, clock, F_MAXCLOCK);
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                           unsigned long long *clocksEventReasons)
{
    unsigned int g;
    unsigned long long t;
    nvmlReturn_t rc = enter(device, clocksEventReasons, F_THROTTLE, &g, &t);
    if (rc)
        return rc;
    *clocksEventReasons = row_at(g, t)->throttle;
    return leave(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(
    nvmlDevice_t device, unsigned long long *clocksThrottleReasons)
{
    return nvmlDeviceGetCurrentClocksEventReasons(device, clocksThrottleReasons);
}

EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device,
                                                nvmlPcieUtilCounter_t counter,
                                                unsigned int *value)
{
    unsigned int g;
    unsigned long long t;
    nvmlReturn_t rc = enter(device, value, F_PCIE, &g, &t);
    if (rc)
        return rc;
    const struct row *r = row_at(g, t);
    if (counter == 0) /* NVML_PCIE_UTIL_TX_BYTES */
        *value = r->pcie_tx;
    else if (counter == 1) /* NVML_PCIE_UTIL_RX_BYTES */
        *value = r->pcie_rx;
    else
        return leave(NVML_ERROR_INVALID_ARGUMENT);
    return leave(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                            unsigned int *infoCount,
                                                            nvmlProcessInfo_t *infos)
{
    unsigned int g;
    unsigned long long t;
    nvmlReturn_t rc = enter(device, infoCount, F_PROCS, &g, &t);
    if (rc)
        return rc;
    unsigned int n = 0;
    for (size_t i = 0; i < sc.nprocs; i++)
        n += sc.procs[i].gpu == g;
    if (n > 0 && (!infos || *infoCount < n)) {
        *infoCount = n;
        return leave(NVML_ERROR_INSUFFICIENT_SIZE);
    }
    unsigned int k = 0;
    for (size_t i = 0; i < sc.nprocs; i++) {
        if (sc.procs[i].gpu != g)
            continue;
        infos[k].pid = sc.procs[i].pid;
        infos[k].usedGpuMemory = sc.procs[i].used;
        infos[k].gpuInstanceId = NO_INSTANCE;
        infos[k].computeInstanceId = NO_INSTANCE;
        k++;
    }
    *infoCount = n;
    return leave(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t *gpmSupport)
{
    unsigned int g;
    unsigned long long t;
    nvmlReturn_t rc = enter(device, gpmSupport, F_COUNT, &g, &t);
    if (rc)
        return rc;
    if (gpmSupport->version != NVML_GPM_SUPPORT_VERSION)
        return leave(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    gpmSupport->isSupportedDevice = sc.gpus[g].ngpm > 0;
    return leave(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *gpmSample)
{
    if (!gpmSample)
        return NVML_ERROR_INVALID_ARGUMENT;
    *gpmSample = calloc(1, sizeof **gpmSample);
    return *gpmSample ? NVML_SUCCESS : NVML_ERROR_UNKNOWN;
}

EXPORT nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t gpmSample)
{
    if (!gpmSample)
        return NVML_ERROR_INVALID_ARGUMENT;
    free(gpmSample);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t gpmSample)
{
    unsigned int g;
    unsigned long long t;
    nvmlReturn_t rc = enter(device, gpmSample, F_GPM, &g, &t);
    if (rc)
        return rc;
    if (sc.gpus[g].ngpm == 0)
        return leave(NVML_ERROR_NOT_SUPPORTED);
    gpmSample->taken = 1;
    gpmSample->gpu = g;
    gpmSample->tick = t;
    return leave(NVML_SUCCESS);
}

static char sm_short[] = "sm_util", sm_long[] = "SM utilization", pct_unit[] = "%";
static char tc_short[] = "any_tensor_util", tc_long[] = "Any tensor core utilization";

/* Activity between two samples of one GPU: the gpm line in force at the second's tick. */
EXPORT nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *metricsGet)
{
    if (!metricsGet)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (metricsGet->version != NVML_GPM_METRICS_GET_VERSION)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    nvmlGpmSample_t a = metricsGet->sample1, b = metricsGet->sample2;
    if (metricsGet->numMetrics > NVML_GPM_METRIC_MAX || !a || !b || !a->taken || !b->taken ||
        a->gpu != b->gpu || b->tick < a->tick)
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&lock);
    nvmlReturn_t rc = init_count ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
    const struct gpu *gp = &sc.gpus[b->gpu];
    if (rc == NVML_SUCCESS && gp->ngpm == 0)
        rc = NVML_ERROR_NOT_SUPPORTED;
    if (rc != NVML_SUCCESS)
        return leave(rc);
    const struct gpm_row *r = &gp->gpm[0];
    for (size_t i = 1; i < gp->ngpm && gp->gpm[i].tick <= b->tick; i++)
        r = &gp->gpm[i];
    for (unsigned int i = 0; i < metricsGet->numMetrics; i++) {
        nvmlGpmMetric_t *m = &metricsGet->metrics[i];
        memset(&m->metricInfo, 0, sizeof m->metricInfo);
        m->nvmlReturn = NVML_SUCCESS;
        if (m->metricId == NVML_GPM_METRIC_SM_UTIL) {
            m->value = r->sm;
            m->metricInfo.shortName = sm_short;
            m->metricInfo.longName = sm_long;
            m->metricInfo.unit = pct_unit;
        } else if (m->metricId == NVML_GPM_METRIC_ANY_TENSOR_UTIL) {
            m->value = r->tensor;
            m->metricInfo.shortName = tc_short;
            m->metricInfo.longName = tc_long;
            m->metricInfo.unit = pct_unit;
        } else {
            m->value = 0.0;
            m->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        }
    }
    return leave(NVML_SUCCESS);
}
