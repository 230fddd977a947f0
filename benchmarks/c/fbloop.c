/*
 * The comparison client of benchmarks/core_overhead.py: the plainest C loop over Firebird's
 * legacy ISC API, doing per transaction exactly what fbbench's native core does for a
 * one-statement unit:
 *
 *   isc_start_multiple (the same TPB bytes, passed in hex)
 *   SELECT:            isc_dsql_execute, isc_dsql_fetch until 100, isc_dsql_free_statement(close)
 *   EXECUTE PROCEDURE: isc_dsql_execute2 (output row, if any)
 *   other:             isc_dsql_execute
 *   isc_commit_transaction
 *
 * with the statement prepared once per attachment, one BIGINT parameter drawn uniformly from
 * 1..max and bound as SQL_INT64, and outputs fetched into XSQLDA buffers of their described
 * types. N threads, one attachment each, start together after all attached (as the core does
 * without a ramp-up); transactions that end inside the measured window are counted.
 *
 * No ibase.h is needed: the few declarations below follow the published C API (LP64).
 *
 * usage: fbloop DATABASE SQL TPB_HEX MAX THREADS WARMUP_SECONDS MEASURE_SECONDS [COUNTER_FILE]
 * prints: {"threads": N, "ops": K, "seconds": S, "ops_per_second": R}
 *
 * With COUNTER_FILE, each thread also keeps its count of committed transactions since it started
 * (warm-up included) as a little-endian int64 at offset 64 × thread index of that file, so that a
 * parent that stops and continues this process (SIGSTOP / SIGCONT) can read how much it did
 * while it was running.
 */

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

typedef intptr_t ISC_STATUS;
typedef unsigned int FB_HANDLE;

typedef struct {
    short sqltype, sqlscale, sqlsubtype, sqllen;
    char *sqldata;
    short *sqlind;
    short sqlname_length;
    char sqlname[32];
    short relname_length;
    char relname[32];
    short ownname_length;
    char ownname[32];
    short aliasname_length;
    char aliasname[32];
} XSQLVAR;

typedef struct {
    short version;
    char sqldaid[8];
    int sqldabc;
    short sqln, sqld;
    XSQLVAR sqlvar[1];
} XSQLDA;

typedef struct {
    FB_HANDLE *db;
    int tpb_len;
    const char *tpb;
} TEB;

#define XSQLDA_LENGTH(n) (sizeof(XSQLDA) + ((n) - 1) * sizeof(XSQLVAR))
#define SQL_VARYING 448
#define SQL_INT64 580
#define DSQL_CLOSE 1
#define DSQL_DROP 2
#define STMT_SELECT 1
#define STMT_EXEC_PROCEDURE 8
#define STMT_SELECT_FOR_UPD 12

ISC_STATUS isc_attach_database(ISC_STATUS *, short, const char *, FB_HANDLE *, short, const char *);
ISC_STATUS isc_detach_database(ISC_STATUS *, FB_HANDLE *);
ISC_STATUS isc_start_multiple(ISC_STATUS *, FB_HANDLE *, short, void *);
ISC_STATUS isc_commit_transaction(ISC_STATUS *, FB_HANDLE *);
ISC_STATUS isc_dsql_allocate_statement(ISC_STATUS *, FB_HANDLE *, FB_HANDLE *);
ISC_STATUS isc_dsql_prepare(ISC_STATUS *, FB_HANDLE *, FB_HANDLE *, unsigned short, const char *,
                            unsigned short, XSQLDA *);
ISC_STATUS isc_dsql_describe(ISC_STATUS *, FB_HANDLE *, unsigned short, XSQLDA *);
ISC_STATUS isc_dsql_describe_bind(ISC_STATUS *, FB_HANDLE *, unsigned short, XSQLDA *);
ISC_STATUS isc_dsql_execute(ISC_STATUS *, FB_HANDLE *, FB_HANDLE *, unsigned short, const XSQLDA *);
ISC_STATUS isc_dsql_execute2(ISC_STATUS *, FB_HANDLE *, FB_HANDLE *, unsigned short, const XSQLDA *,
                             const XSQLDA *);
ISC_STATUS isc_dsql_fetch(ISC_STATUS *, FB_HANDLE *, unsigned short, const XSQLDA *);
ISC_STATUS isc_dsql_free_statement(ISC_STATUS *, FB_HANDLE *, unsigned short);
ISC_STATUS isc_dsql_sql_info(ISC_STATUS *, FB_HANDLE *, short, const char *, short, char *);
int fb_interpret(char *, unsigned int, const ISC_STATUS **);

static const char *database, *sql;
static char tpb[64];
static int tpb_len;
static long long max_param;
static double warmup, measure;
static pthread_barrier_t ready, go;
static struct timespec zero;

typedef struct {
    int index;
    long long ops;
    volatile int64_t *live; /* this thread's slot of COUNTER_FILE, or a private dummy */
} Worker;

static void die(const char *what, const ISC_STATUS *status) {
    char text[512];
    const ISC_STATUS *p = status;
    fprintf(stderr, "fbloop: %s:", what);
    while (fb_interpret(text, sizeof text, &p) > 0)
        fprintf(stderr, " %s;", text);
    fprintf(stderr, "\n");
    exit(2);
}

static double since_zero(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - zero.tv_sec) + (now.tv_nsec - zero.tv_nsec) / 1e9;
}

static XSQLDA *new_sqlda(int n) {
    XSQLDA *da = calloc(1, XSQLDA_LENGTH(n < 1 ? 1 : n));
    da->version = 1;
    da->sqln = n < 1 ? 1 : n;
    return da;
}

static void *run(void *arg) {
    Worker *w = arg;
    ISC_STATUS st[20];
    FB_HANDLE db = 0, tr = 0, stmt = 0;
    char dpb[64];
    int n = 0;
    dpb[n++] = 1;                                  /* isc_dpb_version1 */
    dpb[n++] = 28; dpb[n++] = 6; memcpy(dpb + n, "SYSDBA", 6); n += 6;  /* isc_dpb_user_name */
    dpb[n++] = 48; dpb[n++] = 4; memcpy(dpb + n, "UTF8", 4); n += 4;    /* isc_dpb_lc_ctype */
    if (isc_attach_database(st, 0, database, &db, (short)n, dpb)) die("attach", st);

    const char prepare_tpb[] = {3, 8, 15, 17, 6};
    TEB prep = {&db, sizeof prepare_tpb, prepare_tpb};
    if (isc_start_multiple(st, &tr, 1, &prep)) die("start", st);
    if (isc_dsql_allocate_statement(st, &db, &stmt)) die("allocate", st);
    if (isc_dsql_prepare(st, &tr, &stmt, 0, sql, 3, NULL)) die("prepare", st);
    char item = 21, info[16];                      /* isc_info_sql_stmt_type */
    if (isc_dsql_sql_info(st, &stmt, 1, &item, sizeof info, info)) die("sql_info", st);
    int type = (unsigned char)info[3] | ((unsigned char)info[4] << 8);

    XSQLDA *in = new_sqlda(1);
    if (isc_dsql_describe_bind(st, &stmt, 1, in)) die("describe_bind", st);
    if (in->sqld != 1) { fprintf(stderr, "fbloop: the statement needs exactly one parameter\n"); exit(2); }
    int64_t param = 0;
    short in_ind = 0;
    in->sqlvar[0].sqltype = SQL_INT64 | 1;
    in->sqlvar[0].sqlscale = 0;
    in->sqlvar[0].sqlsubtype = 0;
    in->sqlvar[0].sqllen = 8;
    in->sqlvar[0].sqldata = (char *)&param;
    in->sqlvar[0].sqlind = &in_ind;

    XSQLDA *out = new_sqlda(16);
    if (isc_dsql_describe(st, &stmt, 1, out)) die("describe", st);
    if (out->sqld > out->sqln) {
        int count = out->sqld;
        free(out);
        out = new_sqlda(count);
        if (isc_dsql_describe(st, &stmt, 1, out)) die("describe", st);
    }
    short *out_ind = calloc(out->sqld + 1, sizeof(short));
    for (int i = 0; i < out->sqld; i++) {
        XSQLVAR *v = &out->sqlvar[i];
        v->sqltype |= 1;
        size_t size = v->sqllen + ((v->sqltype & ~1) == SQL_VARYING ? 2 : 0);
        v->sqldata = calloc(1, (size + 7) / 8 * 8 + 8);
        v->sqlind = &out_ind[i];
    }
    if (isc_commit_transaction(st, &tr)) die("commit", st);

    const int cursor = type == STMT_SELECT || type == STMT_SELECT_FOR_UPD;
    const int procedure = type == STMT_EXEC_PROCEDURE;
    const XSQLDA *output = out->sqld > 0 ? out : NULL;
    TEB teb = {&db, tpb_len, tpb};
    uint64_t rng = 0x9E3779B97F4A7C15ull * (uint64_t)(w->index + 1);
    const double end = warmup + measure;

    pthread_barrier_wait(&ready);
    pthread_barrier_wait(&go); /* zero is set between the two */
    for (;;) {
        rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
        param = 1 + (int64_t)(rng % (uint64_t)max_param);
        if (isc_start_multiple(st, &tr, 1, &teb)) die("start", st);
        if (cursor) {
            if (isc_dsql_execute(st, &tr, &stmt, 3, in)) die("execute", st);
            ISC_STATUS rc;
            while ((rc = isc_dsql_fetch(st, &stmt, 1, out)) == 0) {
            }
            if (rc != 100) die("fetch", st);
            if (isc_dsql_free_statement(st, &stmt, DSQL_CLOSE)) die("close", st);
        } else if (procedure) {
            if (isc_dsql_execute2(st, &tr, &stmt, 3, in, output)) die("execute2", st);
        } else {
            if (isc_dsql_execute(st, &tr, &stmt, 3, in)) die("execute", st);
        }
        if (isc_commit_transaction(st, &tr)) die("commit", st);
        *w->live += 1;
        double t = since_zero();
        if (t >= end) break;
        if (t >= warmup) w->ops++;
    }
    isc_dsql_free_statement(st, &stmt, DSQL_DROP);
    isc_detach_database(st, &db);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 8 && argc != 9) {
        fprintf(stderr, "usage: fbloop DATABASE SQL TPB_HEX MAX THREADS WARMUP_SECONDS MEASURE_SECONDS "
                        "[COUNTER_FILE]\n");
        return 2;
    }
    database = argv[1];
    sql = argv[2];
    tpb_len = (int)strlen(argv[3]) / 2;
    for (int i = 0; i < tpb_len && i < (int)sizeof tpb; i++) {
        unsigned byte;
        sscanf(argv[3] + 2 * i, "%2x", &byte);
        tpb[i] = (char)byte;
    }
    max_param = atoll(argv[4]);
    int threads = atoi(argv[5]);
    warmup = atof(argv[6]);
    measure = atof(argv[7]);

    pthread_barrier_init(&ready, NULL, (unsigned)threads + 1);
    pthread_barrier_init(&go, NULL, (unsigned)threads + 1);
    pthread_t *ids = calloc(threads, sizeof *ids);
    Worker *workers = calloc(threads, sizeof *workers);
    int64_t *slots;
    if (argc == 9) {
        size_t size = (size_t)threads * 64;
        int fd = open(argv[8], O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || ftruncate(fd, (off_t)size) != 0) { perror("fbloop: counter file"); return 2; }
        slots = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (slots == MAP_FAILED) { perror("fbloop: counter file"); return 2; }
        close(fd);
    } else {
        slots = calloc((size_t)threads * 8, sizeof(int64_t));
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 8u << 20); /* the embedded engine runs on this thread */
    for (int i = 0; i < threads; i++) {
        workers[i].index = i;
        workers[i].live = &slots[i * 8];
        pthread_create(&ids[i], &attr, run, &workers[i]);
    }
    pthread_barrier_wait(&ready);
    clock_gettime(CLOCK_MONOTONIC, &zero);
    pthread_barrier_wait(&go);
    long long ops = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(ids[i], NULL);
        ops += workers[i].ops;
    }
    printf("{\"threads\": %d, \"ops\": %lld, \"seconds\": %.6f, \"ops_per_second\": %.1f}\n", threads, ops,
           measure, ops / measure);
    return 0;
}
