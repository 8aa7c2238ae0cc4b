/* LD_PRELOAD probe for benchmarks/graph_probe.py: what CUDA graphs XLA builds, and how long the
 * driver takes to launch them.
 *
 *   - every graph XLA instantiates is written as Graphviz (cuGraphDebugDotPrint, verbose) to
 *     ${GRAPH_PROBE_PREFIX}graphNNN.dot before it is instantiated;
 *   - every cuGraphLaunch is timed on the host (CLOCK_MONOTONIC around the driver's own call);
 *     graph_probe_dump(path) writes "exec start duration" lines for them (nanoseconds; the start
 *     on CLOCK_MONOTONIC, the clock of Python's time.monotonic_ns).
 *
 * XLA finds the driver's entry points with dlsym on its handle of libcuda (its CUDA stubs), which
 * a preloaded definition of the function would not replace: the probe wraps dlsym and hands out
 * its own three functions, which call the driver's.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef void *CUgraph;
typedef void *CUgraphExec;
typedef void *CUstream;

#define MAX_LAUNCHES (1 << 16)
static void *launch_exec[MAX_LAUNCHES];
static int64_t launch_start[MAX_LAUNCHES];   /* CLOCK_MONOTONIC, as Python's time.monotonic_ns */
static int64_t launch_ns[MAX_LAUNCHES];
static int launches;
static int graphs;

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

typedef void *(*DlsymFn)(void *, const char *);
static DlsymFn real_dlsym;
static CUresult (*real_dot)(CUgraph, const char *, unsigned int);
static CUresult (*real_instantiate_flags)(CUgraphExec *, CUgraph, unsigned long long);
static CUresult (*real_instantiate_params)(CUgraphExec *, CUgraph, void *);
static CUresult (*real_launch)(CUgraphExec, CUstream);

static void *driver_symbol(const char *name) {
    if (!real_dlsym) real_dlsym = (DlsymFn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!real_dlsym) real_dlsym = (DlsymFn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    return driver && real_dlsym ? real_dlsym(driver, name) : NULL;
}

static void dump_graph(CUgraph graph) {
    const char *prefix = getenv("GRAPH_PROBE_PREFIX");
    if (!real_dot) real_dot = (CUresult (*)(CUgraph, const char *, unsigned int))driver_symbol("cuGraphDebugDotPrint");
    if (!prefix || !real_dot) return;
    char path[1024];
    snprintf(path, sizeof path, "%sgraph%03d.dot", prefix, graphs++);
    real_dot(graph, path, 1 /* CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE */);
}

static CUresult probe_instantiate_flags(CUgraphExec *exec, CUgraph graph, unsigned long long flags) {
    if (!real_instantiate_flags) real_instantiate_flags = (CUresult (*)(CUgraphExec *, CUgraph, unsigned long long))driver_symbol("cuGraphInstantiateWithFlags");
    dump_graph(graph);
    return real_instantiate_flags(exec, graph, flags);
}

static CUresult probe_instantiate_params(CUgraphExec *exec, CUgraph graph, void *params) {
    if (!real_instantiate_params) real_instantiate_params = (CUresult (*)(CUgraphExec *, CUgraph, void *))driver_symbol("cuGraphInstantiateWithParams");
    dump_graph(graph);
    return real_instantiate_params(exec, graph, params);
}

static CUresult probe_launch(CUgraphExec exec, CUstream stream) {
    if (!real_launch) real_launch = (CUresult (*)(CUgraphExec, CUstream))driver_symbol("cuGraphLaunch");
    int64_t start = now_ns();
    CUresult result = real_launch(exec, stream);
    if (launches < MAX_LAUNCHES) {
        launch_exec[launches] = exec;
        launch_start[launches] = start;
        launch_ns[launches++] = now_ns() - start;
    }
    return result;
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph, unsigned long long flags) {
    return probe_instantiate_flags(exec, graph, flags);
}

CUresult cuGraphInstantiateWithParams(CUgraphExec *exec, CUgraph graph, void *params) {
    return probe_instantiate_params(exec, graph, params);
}

CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) {
    return probe_launch(exec, stream);
}

void *dlsym(void *handle, const char *name) {
    if (!real_dlsym) driver_symbol("cuInit");
    if (strcmp(name, "cuGraphLaunch") == 0) return (void *)probe_launch;
    if (strcmp(name, "cuGraphInstantiateWithFlags") == 0) return (void *)probe_instantiate_flags;
    if (strcmp(name, "cuGraphInstantiateWithParams") == 0) return (void *)probe_instantiate_params;
    return real_dlsym(handle, name);
}

int graph_probe_dump(const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    for (int i = 0; i < launches; ++i)
        fprintf(f, "%p %lld %lld\n", launch_exec[i], (long long)launch_start[i], (long long)launch_ns[i]);
    fclose(f);
    launches = 0;
    return 0;
}
