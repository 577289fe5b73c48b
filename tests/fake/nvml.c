/*
 * A fake libnvidia-ml.so.1 for steptop's tests: enough of the NVML C API for
 * nvml-wrapper 0.13 (nvml-wrapper-sys 0.10 bindings), driven by a scenario file.
 *
 * Build: cc -shared -fPIC -O1 -Wall -Wextra -Werror [-DFAKE_DRIVER=N] \
 *            -o libnvidia-ml.so.1 nvml.c
 *
 * Driver generation: FAKE_DRIVER=N (400..999, default 580) decides which
 * symbols the library exports, as a driver of branch N does; a symbol its
 * driver lacks is not in the .so at all, so dlsym fails for it:
 *   always    nvmlDeviceGetMemoryInfo (v1: nvmlMemory_t; its used includes the
 *             reserved memory), nvmlDeviceGetComputeRunningProcesses (v1:
 *             16-byte entries {pid, usedGpuMemory}),
 *             nvmlDeviceGetCurrentClocksThrottleReasons, nvmlDeviceGetTemperature
 *             and every other call not listed below
 *   N >= 450  the MIG calls: nvmlDeviceGetMigMode, ...GetMaxMigDeviceCount,
 *             ...GetMigDeviceHandleByIndex, ...IsMigDeviceHandle,
 *             ...GetDeviceHandleFromMigDeviceHandle, ...GetGpuInstanceId,
 *             ...GetComputeInstanceId
 *   N >= 470  nvmlDeviceGetComputeRunningProcesses_v2 (24-byte entries {pid,
 *             usedGpuMemory, gpuInstanceId, computeInstanceId})
 *   N >= 510  nvmlDeviceGetMemoryInfo_v2 (nvmlMemory_v2_t),
 *             nvmlDeviceGetComputeRunningProcesses_v3 (24-byte entries, or 32
 *             with 'procstride 32')
 *   N >= 520  the GPM calls (nvmlGpmQueryDeviceSupport, nvmlGpmSampleAlloc,
 *             nvmlGpmSampleFree, nvmlGpmSampleGet, nvmlGpmMetricsGet)
 *   N >= 535  nvmlDeviceGetCurrentClocksEventReasons
 *   N >= 555  nvmlDeviceGetTemperatureV (nvmlTemperature_v1_t, version
 *             sizeof | 1 << 24; another version: ARGUMENT_VERSION_MISMATCH)
 * nvmlSystemGetDriverVersion answers "N.65.06"; nvmlSystemGetNVMLVersion
 * "M.N.65.06" with M 10 (N < 450), 11 (N < 525) or 12.
 *
 * Environment, read at nvmlInit_v2 / nvmlInitWithFlags (when no earlier init is
 * still open):
 *   FAKE_NVML_INIT      "driver_not_loaded", "no_permission" or
 *                       "lib_rm_version_mismatch": init fails with that code.
 *   FAKE_NVML_SCENARIO  path of the scenario file (required otherwise).
 *   FAKE_NVML_LOG       optional: path of a call log. Every call of an exported
 *                       nvmlDevice* or device-bound nvmlGpm* function (all but
 *                       nvmlGpmSampleAlloc / nvmlGpmSampleFree) appends the line
 *                       "FUNCTION GPU TICK\n", failed calls included: GPU is the
 *                       whole GPU's index, "G/S" for slice S of GPU G's MIG
 *                       devices, "-" where the call names none (a bad handle,
 *                       nvmlDeviceGetCount_v2, a UUID no device has); TICK is
 *                       the tick the call sees ("-" without a GPU). For
 *                       nvmlGpmMetricsGet they are the second sample's GPU and
 *                       tick. The file is created if missing, opened with
 *                       O_APPEND and written with one write() per line.
 *
 * Scenario file: one directive per line, whitespace separated; '#' starts a
 * comment that runs to the end of the line; blank lines are ignored.
 *   gpus N                 number of GPUs (0..64); must come before the others, once.
 *   name G TEXT...         name of GPU G (the rest of the line; default "NVIDIA Fake GPU").
 *   uuid G TEXT            UUID of GPU G (one word, at most 95 bytes; default
 *                          "GPU-fake-0000-G"); two devices may not share one.
 *                          nvmlDeviceGetHandleByUUID finds a GPU or a MIG device
 *                          by exact UUID (NOT_FOUND for none; NO_PERMISSION for
 *                          a hidden GPU, GPU_IS_LOST for a lost one).
 *   row T G UTIL MEMUTIL MEM_USED_MIB MEM_TOTAL_MIB POWER_MW LIMIT_MW TEMP_C
 *       SM_MHZ SM_MAX_MHZ THROTTLE PCIE_TX_KBS PCIE_RX_KBS
 *                          readings of GPU G from tick T on (until its next row).
 *                          THROTTLE is a bitmask, hex with 0x or decimal.
 *                          MEM_USED_MIB excludes reserved memory (see reserved).
 *   fail T G FIELD [CODE]  at tick T only, GPU G's FIELD calls fail with CODE
 *                          (unknown (default), not_supported, no_permission).
 *                          Applies to the whole GPU's handle only, not to its
 *                          MIG devices. FIELD and its calls (nvmlDevice...):
 *                            util      GetUtilizationRates
 *                            mem       GetMemoryInfo, GetMemoryInfo_v2
 *                            power     GetPowerUsage
 *                            limit     GetEnforcedPowerLimit
 *                            temp      GetTemperature, GetTemperatureV
 *                            clock     GetClockInfo
 *                            maxclock  GetMaxClockInfo
 *                            throttle  GetCurrentClocksThrottleReasons,
 *                                      GetCurrentClocksEventReasons
 *                            pcie      GetPcieThroughput
 *                            procs     GetComputeRunningProcesses (_v2, _v3)
 *                            gpm       nvmlGpmSampleGet
 *                            appclock  GetApplicationsClock,
 *                                      GetDefaultApplicationsClock
 *   delay FIELD USEC       every call of FIELD (a fail field, above; on any GPU
 *                          or MIG device, whatever it answers) sleeps USEC
 *                          microseconds before it answers, without holding the
 *                          fake's lock. At most one line per field.
 *   lost T G               from tick T on, every call for GPU G (and its MIG
 *                          devices) returns NVML_ERROR_GPU_IS_LOST.
 *   hidden G               GPU G is hidden (a container's or Slurm's device
 *                          cgroup): nvmlDeviceGetCount_v2 counts it, but
 *                          nvmlDeviceGetHandleByIndex_v2(G) answers
 *                          NVML_ERROR_NO_PERMISSION (so does its UUID), and
 *                          calls with its handle value answer INVALID_ARGUMENT.
 *                          It needs no row.
 *   reserved G MIB         GPU G has MIB MiB of reserved memory (default 0).
 *                          MemoryInfo_v2: reserved = MIB, used = the row's
 *                          MEM_USED; v1: used = MEM_USED + MIB; both: free =
 *                          MEM_TOTAL - MEM_USED - MIB. A row of G where
 *                          MEM_USED + MIB exceeds MEM_TOTAL is an error.
 *   appclock G MHZ         nvmlDeviceGetApplicationsClock and
 *                          nvmlDeviceGetDefaultApplicationsClock of GPU G
 *                          answer MHZ (MHZ > 0) for the SM and graphics clocks
 *                          and 2619 for the memory clock. Without it both
 *                          answer NVML_ERROR_NOT_SUPPORTED (a GeForce card).
 *   proc G PID MIB         GPU G runs compute process PID using MIB MiB.
 *   procstride N           24 (default) or 32: bytes per entry written by
 *                          nvmlDeviceGetComputeRunningProcesses_v3. 32 is the
 *                          layout of early 535 drivers: {pid u32, 4 padding,
 *                          usedGpuMemory u64, gpuInstanceId u32,
 *                          computeInstanceId u32, usedGpuCcProtectedMemory u64
 *                          = 0}; the caller must have room for *infoCount
 *                          such entries.
 *   mig G MEM_USED_MIB MEM_TOTAL_MIB [NAME...]
 *                          adds a MIG device to GPU G (needs FAKE_DRIVER >=
 *                          450); its slices are numbered 0, 1, ... in the order
 *                          of G's mig lines, at most 7. NAME (the rest of the
 *                          line) defaults to "<G's name> MIG 1g.10gb". A GPU
 *                          with a mig line is in MIG mode (see MIG below).
 *   migproc G SLICE PID MIB
 *                          slice SLICE of GPU G runs compute process PID using
 *                          MIB MiB (G needs a mig line for that slice).
 *   gpm T G SM_PCT TENSOR_PCT
 *                          GPU G has GPM (a Hopper-like GPU; needs FAKE_DRIVER
 *                          >= 520); from tick T on (until its next gpm line) a
 *                          metrics query whose second sample was taken at that
 *                          tick returns SM activity SM_PCT and tensor activity
 *                          TENSOR_PCT (percentages, decimals allowed). Other
 *                          metric ids answer NVML_ERROR_NOT_SUPPORTED in their
 *                          own slot.
 * Every GPU but a hidden one needs a row at tick 0; two rows of one GPU may not
 * share a tick. Any error: a message naming the line on stderr, and init
 * returns NVML_ERROR_UNKNOWN.
 *
 * Ticks are per GPU: the fake counts each GPU's calls to
 * nvmlDeviceGetUtilizationRates on its whole-GPU handle (failed ones too). A
 * utilization call on GPU G sees tick = G's utilization calls before it; every
 * other call on G or on G's MIG devices sees the tick of G's latest utilization
 * call (0 before any). A prober that reads every GPU's utilization first in
 * each sample sees tick 0 for its whole first sample, 1 for its second, ...;
 * one that reads only some GPUs moves only those GPUs' ticks.
 *
 * MIG: on a GPU in MIG mode
 *   nvmlDeviceGetMigMode answers 1/1 (0/0 on other GPUs);
 *   nvmlDeviceGetMaxMigDeviceCount answers 7 (NOT_SUPPORTED on other GPUs);
 *   nvmlDeviceGetMigDeviceHandleByIndex(G, I) gives slice I's handle for I below
 *   the slice count, NOT_FOUND from there to 6, INVALID_ARGUMENT from 7 on or
 *   on a GPU not in MIG mode;
 *   utilization answers NOT_SUPPORTED (still counting G's tick); memory (v1,
 *   v2) and processes (every version) answer NO_PERMISSION; power, limit,
 *   temperature, clocks, throttle/event reasons, PCIe, app clocks and GPM
 *   answer as on any GPU (they are the whole GPU's).
 * A MIG device handle (0x1000 + G * 8 + S, apart from the GPU handles 1..64)
 * answers name, UUID ("MIG-fake-0000-G-S"), memory v1/v2 from its mig line
 * (reserved 0), processes (every version; gpuInstanceId S, computeInstanceId
 * 0) from its migproc lines, nvmlDeviceIsMigDeviceHandle (1; 0 for GPU
 * handles), nvmlDeviceGetDeviceHandleFromMigDeviceHandle (G's handle;
 * INVALID_ARGUMENT for a GPU handle), nvmlDeviceGetGpuInstanceId (S) and
 * nvmlDeviceGetComputeInstanceId (0) (both NOT_SUPPORTED for a GPU handle).
 * Utilization, power, limit, temperature (both calls), clocks, max clocks, app
 * clocks, throttle/event reasons, PCIe and GPM answer NOT_SUPPORTED; the MIG
 * mode calls and nvmlDeviceGetIndex answer INVALID_ARGUMENT. Its calls see
 * G's current tick and never move it; when G is lost its MIG devices are too.
 * Processes of whole GPUs report gpuInstanceId and computeInstanceId 0xFFFFFFFF.
 *
 * All state sits behind one mutex, so calls from several threads are safe.
 */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef FAKE_DRIVER
#define FAKE_DRIVER 580
#endif
#if FAKE_DRIVER < 400 || FAKE_DRIVER > 999
#error "FAKE_DRIVER must be a driver branch from 400 to 999"
#endif

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
    unsigned int version;
    nvmlTemperatureSensors_t sensorType;
    int temperature;
} nvmlTemperature_v1_t;

/*
 * The longest process entry: what early 535 drivers' _v3 call wrote. Its first
 * 16 bytes are nvmlProcessInfo_v1_t {pid, usedGpuMemory}, its first 24 the
 * nvmlProcessInfo_v2_t that the _v2 call and later _v3 calls fill.
 */
struct proc_entry {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
    unsigned long long usedGpuCcProtectedMemory;
};
_Static_assert(sizeof(struct proc_entry) == 32, "32-byte process entries");
_Static_assert(offsetof(struct proc_entry, usedGpuMemory) == 8, "v1 layout");
_Static_assert(offsetof(struct proc_entry, usedGpuCcProtectedMemory) == 24, "v2 layout");

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
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_UNKNOWN = 999
};

#define NVML_MEMORY_V2_VERSION ((unsigned int)(sizeof(nvmlMemory_v2_t) | (2u << 24)))
#define NVML_TEMPERATURE_V1_VERSION ((unsigned int)(sizeof(nvmlTemperature_v1_t) | (1u << 24)))
#define NVML_GPM_SUPPORT_VERSION 1u
#define NVML_GPM_METRICS_GET_VERSION 1u
#define NVML_GPM_METRIC_SM_UTIL 2u
#define NVML_GPM_METRIC_ANY_TENSOR_UTIL 5u
#define NO_INSTANCE 0xFFFFFFFFu
#define MEM_CLOCK_MHZ 2619u
#define DEFAULT_NAME "NVIDIA Fake GPU"
#define MIG_NAME_SUFFIX " MIG 1g.10gb"

#define STR_(x) #x
#define STR(x) STR_(x)
#define DRIVER_VERSION STR(FAKE_DRIVER) ".65.06"
#if FAKE_DRIVER < 450
#define NVML_VERSION "10." DRIVER_VERSION
#elif FAKE_DRIVER < 525
#define NVML_VERSION "11." DRIVER_VERSION
#else
#define NVML_VERSION "12." DRIVER_VERSION
#endif

#define EXPORT __attribute__((visibility("default")))

/* ---- Scenario ---- */

#define MAX_GPUS 64
#define MAX_SLICES 7  /* MIG devices per GPU */
#define MAX_NAME 96   /* NVML_DEVICE_NAME_V2_BUFFER_SIZE, terminator included; UUIDs alike */
#define NO_TICK ULLONG_MAX
#define NO_GPU UINT_MAX
#define NO_SLICE UINT_MAX
#define MIG_BASE 0x1000u /* MIG device handles: MIG_BASE + gpu * 8 + slice */

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
    F_APPCLOCK,
    F_COUNT /* also: a call that belongs to no field */
};

static const char *const field_names[F_COUNT] = {
    "util", "mem", "power", "limit", "temp", "clock", "maxclock", "throttle", "pcie", "procs",
    "gpm", "appclock",
};
#define FIELD_LIST "util mem power limit temp clock maxclock throttle pcie procs gpm appclock"

struct row {
    unsigned long long tick;
    unsigned int util, mem_util;
    unsigned long long mem_used, mem_total; /* bytes */
    unsigned int power_mw, limit_mw, temp_c, sm_mhz, sm_max_mhz;
    unsigned long long throttle;
    unsigned int pcie_tx, pcie_rx;
    unsigned int line;
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
    unsigned int gpu, slice; /* slice: NO_SLICE for the whole GPU's processes */
    unsigned int pid;
    unsigned long long used; /* bytes */
    unsigned int line;
};

struct mig {
    char name[MAX_NAME]; /* "" until the load fills in the default */
    unsigned long long mem_used, mem_total; /* bytes */
    unsigned int line;
};

struct gpu {
    char name[MAX_NAME];
    char uuid[MAX_NAME];
    unsigned int uuid_line; /* 0: the default */
    struct row *rows; /* sorted by tick */
    size_t nrows;
    struct gpm_row *gpm; /* sorted by tick; none: no GPM on this GPU */
    size_t ngpm;
    unsigned long long lost_from; /* NO_TICK: never */
    int hidden;
    unsigned long long reserved; /* bytes */
    unsigned int reserved_line; /* 0: no reserved line */
    unsigned int appclock; /* MHz; 0: application clocks not supported */
    struct mig migs[MAX_SLICES];
    unsigned int nmigs; /* > 0: in MIG mode */
};

struct scenario {
    unsigned int ngpus;
    struct gpu gpus[MAX_GPUS];
    struct fail *fails;
    size_t nfails;
    struct proc *procs;
    size_t nprocs;
    unsigned int delay_us[F_COUNT];
    int delay_set[F_COUNT];
    unsigned int procstride; /* 0 until a procstride line: 24 */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int init_count; /* open inits (NVML reference counts them) */
static struct scenario sc;
static unsigned long long util_calls[MAX_GPUS]; /* per GPU */
static int log_fd = -1;

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

static enum field parse_field(const char *tok)
{
    for (int i = 0; i < F_COUNT; i++)
        if (strcmp(tok, field_names[i]) == 0)
            return (enum field)i;
    return F_COUNT;
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

static const char *const directives[] = {
    "gpus", "name", "uuid", "row", "fail", "delay", "lost", "hidden", "reserved", "appclock",
    "proc", "procstride", "mig", "migproc", "gpm",
};

/* Token from which a directive keeps the rest of its line as one token; 0: none. */
static int rest_from(const char *directive)
{
    if (strcmp(directive, "name") == 0)
        return 3;
    if (strcmp(directive, "mig") == 0)
        return 5;
    return 0;
}

/* Copies text without its trailing blanks into dst (MAX_NAME bytes); -1 if too long. */
static int copy_text(char *dst, char *text)
{
    size_t len = strlen(text);
    while (len && (text[len - 1] == ' ' || text[len - 1] == '\t'))
        text[--len] = '\0';
    if (len >= MAX_NAME)
        return -1;
    memcpy(dst, text, len + 1);
    return 0;
}

static int parse_line(struct scenario *s, int *have_gpus, char *text, const char *path,
                      unsigned int ln)
{
    char *hash = strchr(text, '#');
    if (hash)
        *hash = '\0';
    text[strcspn(text, "\r\n")] = '\0';

    /* split into tokens; 'name' and 'mig' keep the rest of their line as their last token */
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
        if (n > 1 && n == rest_from(tok[0]))
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
            snprintf(s->gpus[i].uuid, MAX_NAME, "GPU-fake-0000-%u", i);
            s->gpus[i].lost_from = NO_TICK;
        }
        return 0;
    }
    int known = 0;
    for (size_t i = 0; i < sizeof directives / sizeof *directives; i++)
        known |= strcmp(d, directives[i]) == 0;
    if (!known) {
        char msg[240];
        snprintf(msg, sizeof msg, "unknown directive '%.60s' (expected gpus, name, uuid, row, "
                 "fail, delay, lost, hidden, reserved, appclock, proc, procstride, mig, migproc "
                 "or gpm)", d);
        return bad(path, ln, msg);
    }
    if (!*have_gpus)
        return bad(path, ln, "'gpus N' must come before any other directive");

    unsigned int g;
    if (strcmp(d, "name") == 0) {
        if (n != 3 || parse_gpu(tok[1], s, &g))
            return bad(path, ln, "expected 'name GPU TEXT' with GPU below the gpus count");
        if (copy_text(s->gpus[g].name, tok[2]))
            return bad(path, ln, "name longer than 95 bytes");
        return 0;
    }
    if (strcmp(d, "uuid") == 0) {
        if (n != 3 || parse_gpu(tok[1], s, &g))
            return bad(path, ln, "expected 'uuid GPU TEXT' with GPU below the gpus count and "
                       "TEXT one word");
        if (s->gpus[g].uuid_line)
            return bad(path, ln, "uuid: this gpu already has a uuid line");
        if (copy_text(s->gpus[g].uuid, tok[2]))
            return bad(path, ln, "uuid longer than 95 bytes");
        s->gpus[g].uuid_line = ln;
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
        r.line = ln;
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
        f.field = parse_field(tok[3]);
        if (f.field == F_COUNT)
            return bad(path, ln, "fail: field must be one of " FIELD_LIST);
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
    if (strcmp(d, "delay") == 0) {
        unsigned int us;
        enum field field = n == 3 ? parse_field(tok[1]) : F_COUNT;
        if (n != 3 || field == F_COUNT || parse_uint(tok[2], &us))
            return bad(path, ln, "expected 'delay FIELD USEC' with FIELD one of " FIELD_LIST);
        if (s->delay_set[field])
            return bad(path, ln, "delay: this field already has a delay line");
        s->delay_set[field] = 1;
        s->delay_us[field] = us;
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
    if (strcmp(d, "hidden") == 0) {
        if (n != 2 || parse_gpu(tok[1], s, &g))
            return bad(path, ln, "expected 'hidden GPU' with GPU below the gpus count");
        s->gpus[g].hidden = 1;
        return 0;
    }
    if (strcmp(d, "reserved") == 0) {
        unsigned long long bytes;
        if (n != 3 || parse_gpu(tok[1], s, &g) || parse_mib(tok[2], &bytes))
            return bad(path, ln, "expected 'reserved GPU MIB' with GPU below the gpus count");
        if (s->gpus[g].reserved_line)
            return bad(path, ln, "reserved: this gpu already has a reserved line");
        s->gpus[g].reserved = bytes;
        s->gpus[g].reserved_line = ln;
        return 0;
    }
    if (strcmp(d, "appclock") == 0) {
        unsigned int mhz;
        if (n != 3 || parse_gpu(tok[1], s, &g) || parse_uint(tok[2], &mhz) || mhz == 0)
            return bad(path, ln, "expected 'appclock GPU MHZ' with GPU below the gpus count and "
                       "MHZ above 0");
        if (s->gpus[g].appclock)
            return bad(path, ln, "appclock: this gpu already has an appclock line");
        s->gpus[g].appclock = mhz;
        return 0;
    }
    if (strcmp(d, "procstride") == 0) {
        unsigned int stride;
        if (n != 2 || parse_uint(tok[1], &stride) || (stride != 24 && stride != 32))
            return bad(path, ln, "expected 'procstride 24' or 'procstride 32'");
        if (s->procstride)
            return bad(path, ln, "'procstride' given twice");
        s->procstride = stride;
        return 0;
    }
    if (strcmp(d, "mig") == 0) {
        struct mig m;
        memset(&m, 0, sizeof m);
        m.line = ln;
        if ((n != 4 && n != 5) || parse_gpu(tok[1], s, &g) || parse_mib(tok[2], &m.mem_used) ||
            parse_mib(tok[3], &m.mem_total))
            return bad(path, ln, "expected 'mig GPU MEM_USED_MIB MEM_TOTAL_MIB [NAME]' with GPU "
                       "below the gpus count");
        if (FAKE_DRIVER < 450)
            return bad(path, ln, "mig: this fake is built with FAKE_DRIVER=" STR(FAKE_DRIVER)
                       "; MIG needs a driver of 450 or later");
        if (m.mem_used > m.mem_total)
            return bad(path, ln, "mig: mem_used_mib exceeds mem_total_mib");
        if (n == 5 && copy_text(m.name, tok[4]))
            return bad(path, ln, "mig: name longer than 95 bytes");
        struct gpu *gp = &s->gpus[g];
        if (gp->nmigs == MAX_SLICES)
            return bad(path, ln, "mig: this gpu already has 7 mig lines");
        gp->migs[gp->nmigs++] = m;
        return 0;
    }
    if (strcmp(d, "gpm") == 0) {
        struct gpm_row r;
        if (n != 5 || parse_num(tok[1], 10, NO_TICK - 1, &r.tick) || parse_gpu(tok[2], s, &g) ||
            parse_pct(tok[3], &r.sm) || parse_pct(tok[4], &r.tensor))
            return bad(path, ln, "expected 'gpm TICK GPU SM_PCT TENSOR_PCT' with GPU below the "
                       "gpus count and percentages from 0 to 100");
        if (FAKE_DRIVER < 520)
            return bad(path, ln, "gpm: this fake is built with FAKE_DRIVER=" STR(FAKE_DRIVER)
                       "; GPM needs a driver of 520 or later");
        struct gpu *gp = &s->gpus[g];
        for (size_t i = 0; i < gp->ngpm; i++)
            if (gp->gpm[i].tick == r.tick)
                return bad(path, ln, "gpm: this gpu already has a gpm line at this tick");
        if (grow((void **)&gp->gpm, gp->ngpm, sizeof r))
            return bad(path, ln, "out of memory");
        gp->gpm[gp->ngpm++] = r;
        return 0;
    }
    /* proc, migproc */
    struct proc p;
    p.line = ln;
    p.slice = NO_SLICE;
    if (strcmp(d, "migproc") == 0) {
        if (n != 5 || parse_gpu(tok[1], s, &p.gpu) || parse_uint(tok[2], &p.slice) ||
            p.slice >= MAX_SLICES || parse_uint(tok[3], &p.pid) || parse_mib(tok[4], &p.used))
            return bad(path, ln, "expected 'migproc GPU SLICE PID MIB' with GPU below the gpus "
                       "count and SLICE below 7");
    } else if (n != 4 || parse_gpu(tok[1], s, &p.gpu) || parse_uint(tok[2], &p.pid) ||
               parse_mib(tok[3], &p.used)) {
        return bad(path, ln, "expected 'proc GPU PID MIB' with GPU below the gpus count");
    }
    if (grow((void **)&s->procs, s->nprocs, sizeof p))
        return bad(path, ln, "out of memory");
    s->procs[s->nprocs++] = p;
    return 0;
}

/* Checks across lines, once the whole file is read. */
static int scenario_check(struct scenario *s, const char *path)
{
    char msg[200];
    for (unsigned int g = 0; g < s->ngpus; g++) {
        struct gpu *gp = &s->gpus[g];
        qsort(gp->rows, gp->nrows, sizeof *gp->rows, cmp_rows);
        if (gp->ngpm)
            qsort(gp->gpm, gp->ngpm, sizeof *gp->gpm, cmp_gpm);
        if (!gp->hidden && (gp->nrows == 0 || gp->rows[0].tick != 0)) {
            fprintf(stderr, "fake NVML: scenario %s: gpu %u has no row at tick 0\n", path, g);
            return -1;
        }
        for (size_t i = 0; i < gp->nrows; i++) {
            const struct row *r = &gp->rows[i];
            if (gp->reserved > r->mem_total - r->mem_used) {
                snprintf(msg, sizeof msg, "row: mem_used_mib plus the %llu MiB reserved on gpu "
                         "%u (line %u) exceeds mem_total_mib", gp->reserved >> 20, g,
                         gp->reserved_line);
                return bad(path, r->line, msg);
            }
        }
        for (unsigned int i = 0; i < gp->nmigs; i++) {
            struct mig *m = &gp->migs[i];
            if (m->name[0])
                continue;
            if (strlen(gp->name) + strlen(MIG_NAME_SUFFIX) >= MAX_NAME)
                return bad(path, m->line, "mig: the default name (the gpu's name and \""
                           MIG_NAME_SUFFIX "\") is longer than 95 bytes; give one");
            snprintf(m->name, MAX_NAME, "%s%s", gp->name, MIG_NAME_SUFFIX);
        }
        for (unsigned int h = 0; h < g; h++) {
            if (strcmp(gp->uuid, s->gpus[h].uuid) != 0)
                continue;
            unsigned int ln = gp->uuid_line > s->gpus[h].uuid_line ? gp->uuid_line
                                                                   : s->gpus[h].uuid_line;
            snprintf(msg, sizeof msg, "uuid: gpus %u and %u share the uuid %s", h, g, gp->uuid);
            return bad(path, ln, msg);
        }
    }
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct proc *p = &s->procs[i];
        if (p->slice != NO_SLICE && p->slice >= s->gpus[p->gpu].nmigs) {
            snprintf(msg, sizeof msg, "migproc: gpu %u has no mig line for slice %u (it has %u)",
                     p->gpu, p->slice, s->gpus[p->gpu].nmigs);
            return bad(path, p->line, msg);
        }
    }
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
    if (!err)
        err = scenario_check(s, path);
    if (!s->procstride)
        s->procstride = 24;
    if (err)
        scenario_free(s);
    return err;
}

/* ---- Init / shutdown / strings ---- */

/* Opens FAKE_NVML_LOG when set (lock held); -1 with a message when it cannot. */
static int log_open(void)
{
    const char *path = getenv("FAKE_NVML_LOG");
    if (!path || !*path)
        return 0;
    log_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (log_fd < 0) {
        fprintf(stderr, "fake NVML: cannot open FAKE_NVML_LOG %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

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
        } else if (log_open()) {
            scenario_free(&sc);
            rc = NVML_ERROR_UNKNOWN;
        } else {
            memset(util_calls, 0, sizeof util_calls);
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
    if (init_count == 0) {
        rc = NVML_ERROR_UNINITIALIZED;
    } else if (--init_count == 0) {
        scenario_free(&sc);
        if (log_fd >= 0)
            close(log_fd);
        log_fd = -1;
    }
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
    case NVML_ERROR_NOT_FOUND: return "Not Found";
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

/* ---- Device calls ---- */

/* Who a device call is about, and when. */
struct call {
    unsigned int gpu;   /* the whole GPU's index */
    unsigned int slice; /* the MIG device's slice; NO_SLICE: the whole GPU's handle */
    unsigned long long tick;
};

static nvmlDevice_t gpu_handle(unsigned int g)
{
    return (nvmlDevice_t)(uintptr_t)(g + 1);
}

static nvmlDevice_t mig_handle(unsigned int g, unsigned int slice)
{
    return (nvmlDevice_t)(uintptr_t)(MIG_BASE + g * 8 + slice);
}

static void mig_uuid(char *buf, size_t size, unsigned int g, unsigned int slice)
{
    snprintf(buf, size, "MIG-fake-0000-%u-%u", g, slice);
}

/* Tick seen by calls on GPU g other than its utilization: that of its latest utilization call. */
static unsigned long long tick_of(unsigned int g)
{
    return util_calls[g] ? util_calls[g] - 1 : 0;
}

/* Appends "FUNCTION GPU TICK" to the call log, if any (lock held). */
static void log_call(const char *fn, unsigned int g, unsigned int slice, unsigned long long tick)
{
    if (log_fd < 0)
        return;
    char line[160];
    int len;
    if (g == NO_GPU)
        len = snprintf(line, sizeof line, "%s - -\n", fn);
    else if (slice == NO_SLICE)
        len = snprintf(line, sizeof line, "%s %u %llu\n", fn, g, tick);
    else
        len = snprintf(line, sizeof line, "%s %u/%u %llu\n", fn, g, slice, tick);
    if (len > 0 && (size_t)len < sizeof line) {
        ssize_t written = write(log_fd, line, (size_t)len);
        (void)written;
    }
}

/* Sleeps the scenario's delay for field, if any, without holding the lock. */
static void delay(enum field field)
{
    if (field == F_COUNT)
        return;
    pthread_mutex_lock(&lock);
    unsigned int us = init_count ? sc.delay_us[field] : 0;
    pthread_mutex_unlock(&lock);
    struct timespec left = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    while (us && nanosleep(&left, &left) == -1 && errno == EINTR)
        ;
}

/* Decodes a handle (lock held); -1 if it is no device's (a hidden GPU's included). */
static int decode(nvmlDevice_t device, struct call *c)
{
    uintptr_t h = (uintptr_t)device;
    if (h >= 1 && h <= sc.ngpus) {
        c->gpu = (unsigned int)(h - 1);
        c->slice = NO_SLICE;
    } else if (h >= MIG_BASE && h < MIG_BASE + MAX_GPUS * 8) {
        c->gpu = (unsigned int)((h - MIG_BASE) / 8);
        c->slice = (unsigned int)((h - MIG_BASE) % 8);
        if (c->gpu >= sc.ngpus || c->slice >= sc.gpus[c->gpu].nmigs)
            return -1;
    } else {
        return -1;
    }
    return sc.gpus[c->gpu].hidden ? -1 : 0;
}

static const struct row *row_at(unsigned int g, unsigned long long tick)
{
    const struct gpu *gp = &sc.gpus[g];
    const struct row *r = &gp->rows[0];
    for (size_t i = 1; i < gp->nrows && gp->rows[i].tick <= tick; i++)
        r = &gp->rows[i];
    return r;
}

/* The scenario's fail line for this call, if any. */
static nvmlReturn_t fault(unsigned int g, unsigned long long tick, enum field field)
{
    for (size_t i = 0; i < sc.nfails; i++)
        if (sc.fails[i].gpu == g && sc.fails[i].tick == tick && sc.fails[i].field == field)
            return sc.fails[i].code;
    return NVML_SUCCESS;
}

/* What MIG makes of a field's call: on a MIG device, or on the whole GPU in MIG mode. */
static nvmlReturn_t mig_answer(const struct call *c, enum field field)
{
    int mine = field == F_MEM || field == F_PROCS; /* what a MIG device answers for itself */
    if (c->slice != NO_SLICE)
        return mine ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
    if (sc.gpus[c->gpu].nmigs == 0)
        return NVML_SUCCESS;
    if (field == F_UTIL)
        return NVML_ERROR_NOT_SUPPORTED;
    return mine ? NVML_ERROR_NO_PERMISSION : NVML_SUCCESS;
}

/*
 * Common entry of device calls: sleeps the field's delay, takes the lock,
 * checks init and the handle, logs the call, checks the out pointer, then
 * loss, the scenario's faults for this tick, and MIG. On success the lock stays
 * held and *c is set; on failure it is released. fn is the exported name.
 */
static nvmlReturn_t enter(const char *fn, nvmlDevice_t device, const void *out,
                          enum field field, struct call *c)
{
    delay(field);
    pthread_mutex_lock(&lock);
    nvmlReturn_t rc = NVML_SUCCESS;
    if (!init_count) {
        rc = NVML_ERROR_UNINITIALIZED;
    } else if (decode(device, c)) {
        log_call(fn, NO_GPU, NO_SLICE, 0);
        rc = NVML_ERROR_INVALID_ARGUMENT;
    } else {
        if (field == F_UTIL && c->slice == NO_SLICE)
            c->tick = util_calls[c->gpu]++;
        else
            c->tick = tick_of(c->gpu);
        log_call(fn, c->gpu, c->slice, c->tick);
        if (!out)
            rc = NVML_ERROR_INVALID_ARGUMENT;
        /* a lost GPU answers nothing else, whatever the arguments */
        if (c->tick >= sc.gpus[c->gpu].lost_from)
            rc = NVML_ERROR_GPU_IS_LOST;
        else if (rc == NVML_SUCCESS && field != F_COUNT && c->slice == NO_SLICE)
            rc = fault(c->gpu, c->tick, field);
        if (rc == NVML_SUCCESS && field != F_COUNT)
            rc = mig_answer(c, field);
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

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
    nvmlReturn_t rc = NVML_SUCCESS;
    pthread_mutex_lock(&lock);
    if (!init_count) {
        rc = NVML_ERROR_UNINITIALIZED;
    } else {
        log_call(__func__, NO_GPU, NO_SLICE, 0);
        if (!deviceCount)
            rc = NVML_ERROR_INVALID_ARGUMENT;
        else
            *deviceCount = sc.ngpus;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    nvmlReturn_t rc = NVML_SUCCESS;
    pthread_mutex_lock(&lock);
    if (!init_count) {
        rc = NVML_ERROR_UNINITIALIZED;
    } else if (index >= sc.ngpus) {
        log_call(__func__, NO_GPU, NO_SLICE, 0);
        rc = NVML_ERROR_INVALID_ARGUMENT;
    } else {
        log_call(__func__, index, NO_SLICE, tick_of(index));
        if (!device)
            rc = NVML_ERROR_INVALID_ARGUMENT;
        else if (sc.gpus[index].hidden)
            rc = NVML_ERROR_NO_PERMISSION;
        else if (tick_of(index) >= sc.gpus[index].lost_from)
            rc = NVML_ERROR_GPU_IS_LOST;
        else
            *device = gpu_handle(index);
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
    nvmlReturn_t rc = NVML_SUCCESS;
    pthread_mutex_lock(&lock);
    if (!init_count) {
        pthread_mutex_unlock(&lock);
        return NVML_ERROR_UNINITIALIZED;
    }
    unsigned int g = NO_GPU, slice = NO_SLICE;
    for (unsigned int i = 0; uuid && g == NO_GPU && i < sc.ngpus; i++) {
        if (strcmp(uuid, sc.gpus[i].uuid) == 0)
            g = i;
        for (unsigned int s = 0; g == NO_GPU && s < sc.gpus[i].nmigs; s++) {
            char buf[40];
            mig_uuid(buf, sizeof buf, i, s);
            if (strcmp(uuid, buf) == 0) {
                g = i;
                slice = s;
            }
        }
    }
    log_call(__func__, g, slice, g == NO_GPU ? 0 : tick_of(g));
    if (!uuid || !device)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    else if (g == NO_GPU)
        rc = NVML_ERROR_NOT_FOUND;
    else if (sc.gpus[g].hidden)
        rc = NVML_ERROR_NO_PERMISSION;
    else if (tick_of(g) >= sc.gpus[g].lost_from)
        rc = NVML_ERROR_GPU_IS_LOST;
    else
        *device = slice == NO_SLICE ? gpu_handle(g) : mig_handle(g, slice);
    pthread_mutex_unlock(&lock);
    return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
    struct call c;
    nvmlReturn_t rc = enter(__func__, device, index, F_COUNT, &c);
    if (rc)
        return rc;
    if (c.slice != NO_SLICE)
        return leave(NVML_ERROR_INVALID_ARGUMENT);
    *index = c.gpu;
    return leave(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    struct call c;
    nvmlReturn_t rc = enter(__func__, device, name, F_COUNT, &c);
    if (rc)
        return rc;
    const struct gpu *gp = &sc.gpus[c.gpu];
    return leave(copy_str(name, length,
                          c.slice == NO_SLICE ? gp->name : gp->migs[c.slice].name));
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    struct call c;
    nvmlReturn_t rc = enter(__func__, device, uuid, F_COUNT, &c);
    if (rc)
        return rc;
    if (c.slice == NO_SLICE)
        return leave(copy_str(uuid, length, sc.gpus[c.gpu].uuid));
    char buf[40];
    mig_uuid(buf, sizeof buf, c.gpu, c.slice);
    return leave(copy_str(uuid, length, buf));
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                  nvmlUtilization_t *utilization)
{
    struct call c;
    nvmlReturn_t rc = enter(__func__, device, utilization, F_UTIL, &c);
    if (rc)
        return rc;
    const struct row *r = row_at(c.gpu, c.tick);
    utilization->gpu = r->util;
    utilization->memory = r->mem_util;
    return leave(NVML_SUCCESS);
}

struct mem {
    unsigned long long total, reserved, used; /* used excludes reserved */
};

/* Memory of a whole GPU (its row and reserved line) or of a MIG device (its mig line). */
static struct mem mem_of(const struct call *c)
{
    struct mem m;
    const struct gpu *gp = &sc.gpus[c->gpu];
    if (c->slice == NO_SLICE) {
        const struct row *r = row_at(c->gpu, c->tick);
        m.total = r->mem_total;
        m.reserved = gp->reserved;
        m.used = r->mem_used;
    } else {
        m.total = gp->migs[c->slice].mem_total;
        m.reserved = 0;
        m.used = gp->migs[c->slice].mem_used;
    }
    return m;
}

#if FAKE_DRIVER >= 510
EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
    struct call c;
    nvmlReturn_t rc = enter(__func__, device, memory, F_MEM, &c);
    if (rc)
        return rc;
    if (memory->version != NVML_MEMORY_V2_VERSION)
        return leave(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    struct mem m = mem_of(&c);
    memory->total = m.total;
    memory->reserved = m.reserved;
    memory->used = m.used;
    memory->free = m.total - m.used - m.reserved;
    return leave(NVML_SUCCESS);
}
#endif

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    struct call c;
    nvmlReturn_t rc = enter(__func__, device, memory, F_MEM, &c);
    if (rc)
        return rc;
    struct mem m = mem_of(&c);
    memory->total = m.total;
    memory->used = m.used + m.reserved; /* v1 counts reserved memory as used */
    memory->free = m.total - m.used - m.reserved;
    return leave(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
    struct call c;
    nvmlReturn_t rc = enter(__func__, device, power, F_POWER, &c);
    if (rc)
        return rc;
    *power = row_at(c.gpu, c.tick)->power_mw;
    return leave(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int *limit)
{
    struct call c;
    nvmlReturn_t rc = enter(__func__, device, limit, F_LIMIT, &c);
    if (rc)
        return rc;
    *limit = row_at(c.gpu, c.tick)->limit_mw;
    return leave(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device,
                                             nvmlTemperatureSensors_t sensorType,
                                             unsigned int *temp)
{
    struct call c;
    nvmlReturn_t rc = enter(__func__, device, temp, F_TEMP, &c);
    if (rc)
        return rc;
    if (sensorType != 0) /* NVML_TEMPERATURE_GPU is the only sensor */
        return leave(NVML_ERROR_INVALID_ARGUMENT);
    *temp = row_at(c.gpu, c.tick)->temp_c;
    return leave(NVML_SUCCESS);
}

#if FAKE_DRIVER >= 555
EXPORT nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t device,
                                              nvmlTemperature_v1_t *temperature)
{
    struct call c;
    nvmlReturn_t rc = enter(__func__, device, temperature, F_TEMP, &c);
    if (rc)
        return rc;
    if (temperature->version != NVML_TEMPERATURE_V1_VERSION)
        return leave(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    if (temperature->sensorType != 0) /* NVML_TEMPERATURE_GPU is the only sensor */
        return leave(NVML_ERROR_INVALID_ARGUMENT);
    temperature->temperature = (int)row_at(c.gpu, c.tick)->temp_c;
    return leave(NVML_SUCCESS);
}
#endif

static nvmlReturn_t clock_of(const char *fn, nvmlDevice_t device, nvmlClockType_t type,
                             unsigned int *clock, enum field field)
{
    struct call c;
    nvmlReturn_t rc = enter(fn, device, clock, field, &c);
    if (rc)
        return rc;
    const struct row *r = row_at(c.gpu, c.tick);
    unsigned int sm = field == F_MAXCLOCK ? r->sm_max_mhz : r->sm_mhz;
    if (field == F_APPCLOCK) {
        sm = sc.gpus[c.gpu].appclock;
        if (!sm)
            return leave(NVML_ERROR_NOT_SUPPORTED);
    }
    switch (type) {
    case 0: /* NVML_CLOCK_GRAPHICS: served as the SM clock */
    case 1: /* NVML_CLOCK_SM */
        *clock = sm;
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
    return clock_of(__func__, device, type_, clock, F_CLOCK);
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type_,
                                              unsigned int *clock)
{
    return clock_of(__func__, device, type_, clock, F_MAXCLOCK);
}

EXPORT nvmlReturn_t nvmlDeviceGetApplicationsClock(nvmlDevice_t device,
                                                   nvmlClockType_t clockType,
                                                   unsigned int *clockMHz)
{
    return clock_of(__func__, device, clockType, clockMHz, F_APPCLOCK);
}

EXPORT nvmlReturn_t nvmlDeviceGetDefaultApplicationsClock(nvmlDevice_t device,
                                                          nvmlClockType_t clockType,
                                                          unsigned int *clockMHz)
{
    return clock_of(__func__, device, clockType, clockMHz, F_APPCLOCK);
}

static nvmlReturn_t throttle_of(const char *fn, nvmlDevice_t device, unsigned long long *reasons)
{
    struct call c;
    nvmlReturn_t rc = enter(fn, device, reasons, F_THROTTLE, &c);
    if (rc)
        return rc;
    *reasons = row_at(c.gpu, c.tick)->throttle;
    return leave(NVML_SUCCESS);
}

#if FAKE_DRIVER >= 535
EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                           unsigned long long *clocksEventReasons)
{
    return throttle_of(__func__, device, clocksEventReasons);
}
#endif

EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(
    nvmlDevice_t device, unsigned long long *clocksThrottleReasons)
{
    return throttle_of(__func__, device, clocksThrottleReasons);
}

EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device,
                                                nvmlPcieUtilCounter_t counter,
                                                unsigned int *value)
{
    struct call c;
    nvmlReturn_t rc = enter(__func__, device, value, F_PCIE, &c);
    if (rc)
        return rc;
    const struct row *r = row_at(c.gpu, c.tick);
    if (counter == 0) /* NVML_PCIE_UTIL_TX_BYTES */
        *value = r->pcie_tx;
    else if (counter == 1) /* NVML_PCIE_UTIL_RX_BYTES */
        *value = r->pcie_rx;
    else
        return leave(NVML_ERROR_INVALID_ARGUMENT);
    return leave(NVML_SUCCESS);
}

/* Whether a scenario process belongs to the device of this call. */
static int runs_on(const struct proc *p, const struct call *c)
{
    return p->gpu == c->gpu && p->slice == c->slice;
}

/*
 * The processes calls: entries of stride bytes (16: v1, 24: v2; 0: the
 * scenario's procstride, for v3).
 */
static nvmlReturn_t processes(const char *fn, nvmlDevice_t device, unsigned int *infoCount,
                              void *infos, size_t stride)
{
    struct call c;
    nvmlReturn_t rc = enter(fn, device, infoCount, F_PROCS, &c);
    if (rc)
        return rc;
    if (stride == 0)
        stride = sc.procstride;
    unsigned int n = 0;
    for (size_t i = 0; i < sc.nprocs; i++)
        n += runs_on(&sc.procs[i], &c);
    if (n > 0 && (!infos || *infoCount < n)) {
        *infoCount = n;
        return leave(NVML_ERROR_INSUFFICIENT_SIZE);
    }
    unsigned int k = 0;
    for (size_t i = 0; i < sc.nprocs; i++) {
        if (!runs_on(&sc.procs[i], &c))
            continue;
        struct proc_entry e;
        memset(&e, 0, sizeof e);
        e.pid = sc.procs[i].pid;
        e.usedGpuMemory = sc.procs[i].used;
        e.gpuInstanceId = c.slice == NO_SLICE ? NO_INSTANCE : c.slice;
        e.computeInstanceId = c.slice == NO_SLICE ? NO_INSTANCE : 0;
        memcpy((char *)infos + (size_t)k * stride, &e, stride);
        k++;
    }
    *infoCount = n;
    return leave(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
                                                         unsigned int *infoCount, void *infos)
{
    return processes(__func__, device, infoCount, infos, 16);
}

#if FAKE_DRIVER >= 470
EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device,
                                                            unsigned int *infoCount, void *infos)
{
    return processes(__func__, device, infoCount, infos, 24);
}
#endif

#if FAKE_DRIVER >= 510
EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                            unsigned int *infoCount, void *infos)
{
    return processes(__func__, device, infoCount, infos, 0);
}
#endif

/* ---- MIG ---- */

#if FAKE_DRIVER >= 450
EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode,
                                         unsigned int *pendingMode)
{
    struct call c;
    nvmlReturn_t rc = enter(__func__, device, currentMode, F_COUNT, &c);
    if (rc)
        return rc;
    if (!pendingMode || c.slice != NO_SLICE)
        return leave(NVML_ERROR_INVALID_ARGUMENT);
    *currentMode = *pendingMode = sc.gpus[c.gpu].nmigs > 0;
    return leave(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
    struct call c;
    nvmlReturn_t rc = enter(__func__, device, count, F_COUNT, &c);
    if (rc)
        return rc;
    if (c.slice != NO_SLICE)
        return leave(NVML_ERROR_INVALID_ARGUMENT);
    if (sc.gpus[c.gpu].nmigs == 0)
        return leave(NVML_ERROR_NOT_SUPPORTED);
    *count = MAX_SLICES;
    return leave(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                        nvmlDevice_t *migDevice)
{
    struct call c;
    nvmlReturn_t rc = enter(__func__, device, migDevice, F_COUNT, &c);
    if (rc)
        return rc;
    const struct gpu *gp = &sc.gpus[c.gpu];
    if (c.slice != NO_SLICE || gp->nmigs == 0 || index >= MAX_SLICES)
        return leave(NVML_ERROR_INVALID_ARGUMENT);
    if (index >= gp->nmigs)
        return leave(NVML_ERROR_NOT_FOUND);
    *migDevice = mig_handle(c.gpu, index);
    return leave(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int *isMigDevice)
{
    struct call c;
    nvmlReturn_t rc = enter(__func__, device, isMigDevice, F_COUNT, &c);
    if (rc)
        return rc;
    *isMigDevice = c.slice != NO_SLICE;
    return leave(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice,
                                                                 nvmlDevice_t *device)
{
    struct call c;
    nvmlReturn_t rc = enter(__func__, migDevice, device, F_COUNT, &c);
    if (rc)
        return rc;
    if (c.slice == NO_SLICE)
        return leave(NVML_ERROR_INVALID_ARGUMENT);
    *device = gpu_handle(c.gpu);
    return leave(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id)
{
    struct call c;
    nvmlReturn_t rc = enter(__func__, device, id, F_COUNT, &c);
    if (rc)
        return rc;
    if (c.slice == NO_SLICE)
        return leave(NVML_ERROR_NOT_SUPPORTED);
    *id = c.slice;
    return leave(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id)
{
    struct call c;
    nvmlReturn_t rc = enter(__func__, device, id, F_COUNT, &c);
    if (rc)
        return rc;
    if (c.slice == NO_SLICE)
        return leave(NVML_ERROR_NOT_SUPPORTED);
    *id = 0;
    return leave(NVML_SUCCESS);
}
#endif

/* ---- GPM ---- */

#if FAKE_DRIVER >= 520
EXPORT nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t *gpmSupport)
{
    struct call c;
    nvmlReturn_t rc = enter(__func__, device, gpmSupport, F_COUNT, &c);
    if (rc)
        return rc;
    if (gpmSupport->version != NVML_GPM_SUPPORT_VERSION)
        return leave(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    if (c.slice != NO_SLICE)
        return leave(NVML_ERROR_NOT_SUPPORTED);
    gpmSupport->isSupportedDevice = sc.gpus[c.gpu].ngpm > 0;
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
    struct call c;
    nvmlReturn_t rc = enter(__func__, device, gpmSample, F_GPM, &c);
    if (rc)
        return rc;
    if (sc.gpus[c.gpu].ngpm == 0)
        return leave(NVML_ERROR_NOT_SUPPORTED);
    gpmSample->taken = 1;
    gpmSample->gpu = c.gpu;
    gpmSample->tick = c.tick;
    return leave(NVML_SUCCESS);
}

static char sm_short[] = "sm_util", sm_long[] = "SM utilization", pct_unit[] = "%";
static char tc_short[] = "any_tensor_util", tc_long[] = "Any tensor core utilization";

/* Activity between two samples of one GPU: the gpm line in force at the second's tick. */
EXPORT nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *metricsGet)
{
    pthread_mutex_lock(&lock);
    if (!init_count)
        return leave(NVML_ERROR_UNINITIALIZED);
    nvmlGpmSample_t a = metricsGet ? metricsGet->sample1 : NULL;
    nvmlGpmSample_t b = metricsGet ? metricsGet->sample2 : NULL;
    int valid = a && b && a->taken && b->taken && a->gpu == b->gpu && b->tick >= a->tick &&
                b->gpu < sc.ngpus;
    if (valid)
        log_call(__func__, b->gpu, NO_SLICE, b->tick);
    else
        log_call(__func__, NO_GPU, NO_SLICE, 0);
    if (!metricsGet)
        return leave(NVML_ERROR_INVALID_ARGUMENT);
    if (metricsGet->version != NVML_GPM_METRICS_GET_VERSION)
        return leave(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    if (!valid || metricsGet->numMetrics > NVML_GPM_METRIC_MAX)
        return leave(NVML_ERROR_INVALID_ARGUMENT);
    const struct gpu *gp = &sc.gpus[b->gpu];
    if (gp->ngpm == 0)
        return leave(NVML_ERROR_NOT_SUPPORTED);
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
#endif
