/* The fast path of ptxpy's XLA FFI handler, in C (runtime/native.py builds and loads it).
 *
 * runtime/ffi.py's Python handler does everything; this one does the two calls XLA makes over
 * and over, at native speed, and hands every other call to the Python handler (`fallback`):
 *   - the execute stage, once the plan knows the kernel's CUfunction in the stream's context
 *     (the Python handler tells it after its first launch there);
 *   - the record stage's update of a kernel node (XLA's buffers moved between two runs of a
 *     CUDA graph: XLA asks every moved node for its new parameters).
 * Both write XLA's buffer pointers into the plan's parameters and encode its tensor maps (the
 * CUtensorMaps of ptxpy.tma_load/tma_store) for them with the driver's cuTensorMapEncodeTiled.
 * Creating a node, errors (a map the driver will not encode included), unknown plans and
 * anything unusual go to Python.
 *
 * The structs mirror xla/ffi/api/c_api.h and record_c_api.h, as runtime/ffi.py's ctypes
 * structures do; no XLA header is needed to build this file.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct ExtensionBase {
    size_t struct_size;
    int type;
    struct ExtensionBase *next;
} ExtensionBase;

typedef struct {
    size_t struct_size;
    void *extension_start;
    int major_version, minor_version;
} ApiVersion;

typedef struct {
    size_t struct_size;
    ApiVersion api_version;
    uint32_t traits;
} Metadata;

typedef struct {
    ExtensionBase base;
    Metadata *metadata;
} MetadataExtension;

typedef struct {
    size_t struct_size;
    void *extension_start;
    int64_t size;
    void *types;
    void **args;
} Args;

typedef struct {
    const char *ptr;
    size_t len;
} ByteSpan;

typedef struct {
    size_t struct_size;
    void *extension_start;
    int64_t size;
    int *types;
    ByteSpan **names;
    void **attrs;
} Attrs;

typedef struct {
    int dtype;
    int64_t *value;
} ScalarAttr;

typedef struct {
    size_t struct_size;
    ExtensionBase *extension_start;
    char *api;
    void *ctx;
    int stage;
    Args args, rets;
    Attrs attrs;
    void *future;
} CallFrame;

typedef struct {
    size_t struct_size;
    void *extension_start;
    void *ctx;
    void *stream;
} StreamGetArgs;

typedef struct {
    void *arg_address;
    int64_t size;
    int type;
} KernelArg;

typedef struct {
    KernelArg *args;
    int64_t num_args;
} KernelArgs;

typedef void *(*UpdateLaunch)(void *record_ctx, void *command, KernelArgs *args);

typedef struct {
    void *create_launch;
    UpdateLaunch update_launch;
} RecordApi;

typedef struct {
    void *record_ctx;
    RecordApi *api;
    int action;
    void **commands;
    int64_t *num_commands;
    int64_t max_commands;
} RecordFrame;

typedef struct {
    size_t struct_size;
    int64_t extension_type;
    int32_t major_version, minor_version;
    void *next;
} Extension;

typedef struct {
    Extension base;
    RecordFrame *record_frame;
} RecordExtension;

typedef struct {
    size_t struct_size;
    void *extension_start;
    void *ctx;
    int64_t extension_type;
    RecordExtension *extension;
} FindExtensionArgs;

enum {
    EXTENSION_METADATA = 1, EXTENSION_RECORD = 128, STAGE_EXECUTE = 3, STAGE_RECORD = 4,
    RECORD_CREATE = 0, KERNEL_ARG_HOST_VALUE = 1, TRAIT_COMMAND_BUFFER_COMPATIBLE = 1,
    ATTR_SCALAR = 3, DTYPE_S64 = 5, BUFFER_DATA_OFFSET = 24,
    API_FIRST_FUNCTION = 8 + 8 + sizeof(ApiVersion) + 8, API_STREAM_GET = 4,
    API_FIND_EXTENSION = 18, MAX_PARAM_BYTES = 4096, MAX_PARAMS = 256, MAX_BUFFERS = 256,
    MAX_CONTEXTS = 8, TABLE_SIZE = 1 << 14, MAX_TENSOR_RANK = 5, TENSOR_MAP_BYTES = 128,
    TENSOR_MAP_ALIGN = 64,
};

/* A tensor map in the parameter block: cuTensorMapEncodeTiled's arguments but the address,
 * which is XLA buffer `index`'s data pointer (runtime/native.py's TensorMapSlot mirrors it).
 * The arrays are innermost dimension first, as the driver takes them. */
typedef struct {
    int64_t offset;                   /* of the 128-byte map in the block: a multiple of 64 */
    int64_t index;
    uint64_t dims[MAX_TENSOR_RANK];
    uint64_t strides[MAX_TENSOR_RANK - 1];   /* bytes, of every dimension but the innermost */
    uint32_t box[MAX_TENSOR_RANK];
    uint32_t element_strides[MAX_TENSOR_RANK];
    int32_t data_type;
    uint32_t rank;
    int32_t interleave, swizzle, l2_promotion, oob_fill;
} TensorMapSlot;

/* A launch plan as runtime/native.py lays it out (its NativePlan mirrors this struct). */
typedef struct {
    int64_t key;
    uint32_t grid[3], block[3];
    uint32_t shared;
    int32_t stream_capture;           /* the record stage must ask XLA to stream-capture */
    int64_t num_params;
    int64_t param_bytes;
    const uint8_t *params;            /* the packed parameter block, pointers left zero */
    const int64_t *offsets;           /* where each parameter starts in it */
    int64_t num_slots;
    const int64_t *slot_offsets;      /* where XLA buffer slot_indices[i]'s pointer goes */
    const int64_t *slot_indices;
    int64_t num_maps;
    const TensorMapSlot *maps;
    void *contexts[MAX_CONTEXTS];     /* CUcontext -> CUfunction, filled by set_function */
    void *functions[MAX_CONTEXTS];
} Plan;

typedef void *(*Handler)(CallFrame *frame);
typedef int (*LaunchKernel)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned shared, void *stream,
                            void **params, void **extra);
typedef int (*StreamGetCtx)(void *stream, void **ctx);
typedef void *(*StreamGet)(StreamGetArgs *args);
typedef void *(*FindExtension)(FindExtensionArgs *args);
typedef int (*EncodeTiled)(void *map, int data_type, uint32_t rank, void *address,
                           const uint64_t *dims, const uint64_t *strides, const uint32_t *box,
                           const uint32_t *element_strides, int interleave, int swizzle,
                           int l2_promotion, int oob_fill);

static Handler fallback;
static LaunchKernel launch_kernel;
static StreamGetCtx stream_get_ctx;
static EncodeTiled encode_tiled;      /* NULL: plans with tensor maps go to Python */
static int64_t table_keys[TABLE_SIZE];
static Plan *table_plans[TABLE_SIZE];
static int64_t counters[3];           /* native launches, native updates, fallbacks */

void ptxpy_native_init(Handler python_handler, LaunchKernel cu_launch_kernel,
                       StreamGetCtx cu_stream_get_ctx, EncodeTiled cu_tensor_map_encode_tiled) {
    fallback = python_handler;
    launch_kernel = cu_launch_kernel;
    stream_get_ctx = cu_stream_get_ctx;
    encode_tiled = cu_tensor_map_encode_tiled;
}

/* Adds `plan` under its key; returns 0 when the table is full (the plan stays Python's). */
int ptxpy_native_add_plan(Plan *plan) {
    for (int64_t probe = 0; probe < TABLE_SIZE; probe++) {
        int64_t slot = (plan->key + probe) & (TABLE_SIZE - 1);
        int64_t key = __atomic_load_n(&table_keys[slot], __ATOMIC_ACQUIRE);
        if (key == plan->key)
            return 1;
        if (key == 0) {
            table_plans[slot] = plan;
            __atomic_store_n(&table_keys[slot], plan->key, __ATOMIC_RELEASE);
            return 1;
        }
    }
    return 0;
}

static Plan *find_plan(int64_t key) {
    for (int64_t probe = 0; probe < TABLE_SIZE; probe++) {
        int64_t slot = (key + probe) & (TABLE_SIZE - 1);
        int64_t found = __atomic_load_n(&table_keys[slot], __ATOMIC_ACQUIRE);
        if (found == key)
            return table_plans[slot];
        if (found == 0)
            return NULL;
    }
    return NULL;
}

/* Remembers the plan's kernel in context `ctx`; returns 0 when all slots are taken. */
int ptxpy_native_set_function(Plan *plan, void *ctx, void *function) {
    for (int i = 0; i < MAX_CONTEXTS; i++) {
        void *seen = __atomic_load_n(&plan->contexts[i], __ATOMIC_ACQUIRE);
        if (seen == ctx || seen == NULL) {
            __atomic_store_n(&plan->functions[i], function, __ATOMIC_RELAXED);
            __atomic_store_n(&plan->contexts[i], ctx, __ATOMIC_RELEASE);
            return 1;
        }
    }
    return 0;
}

static void *function_in(Plan *plan, void *ctx) {
    for (int i = 0; i < MAX_CONTEXTS; i++) {
        void *seen = __atomic_load_n(&plan->contexts[i], __ATOMIC_ACQUIRE);
        if (seen == ctx)
            return __atomic_load_n(&plan->functions[i], __ATOMIC_RELAXED);
        if (seen == NULL)
            return NULL;
    }
    return NULL;
}

void ptxpy_native_counters(int64_t out[3]) {
    for (int i = 0; i < 3; i++)
        out[i] = __atomic_load_n(&counters[i], __ATOMIC_RELAXED);
}

static void *api_function(const CallFrame *frame, int index) {
    return *(void **)(frame->api + API_FIRST_FUNCTION + 8 * index);
}

static int plan_key(const Attrs *attrs, int64_t *key) {
    for (int64_t i = 0; i < attrs->size; i++) {
        const ByteSpan *name = attrs->names[i];
        if (name->len == 4 && memcmp(name->ptr, "plan", 4) == 0) {
            const ScalarAttr *scalar = attrs->attrs[i];
            if (attrs->types[i] != ATTR_SCALAR || scalar->dtype != DTYPE_S64)
                return 0;
            *key = *scalar->value;
            return 1;
        }
    }
    return 0;
}

static uint64_t buffer_pointer(const CallFrame *frame, int64_t index) {
    const Args *table = index < frame->args.size ? &frame->args : &frame->rets;
    int64_t at = index < frame->args.size ? index : index - frame->args.size;
    if (at >= table->size)
        return 0;
    return *(const uint64_t *)((const char *)table->args[at] + BUFFER_DATA_OFFSET);
}

/* Encodes the plan's tensor maps for XLA's buffers into `block` (64-byte aligned); 0 when the
 * driver refuses one or there is no driver function to ask. */
static int encode_maps(const Plan *plan, const CallFrame *frame, uint8_t *block) {
    if (plan->num_maps > 0 && encode_tiled == NULL)
        return 0;
    for (int64_t i = 0; i < plan->num_maps; i++) {
        const TensorMapSlot *map = &plan->maps[i];
        void *address = (void *)(uintptr_t)buffer_pointer(frame, map->index);
        if (encode_tiled(block + map->offset, map->data_type, map->rank, address, map->dims,
                         map->strides, map->box, map->element_strides, map->interleave,
                         map->swizzle, map->l2_promotion, map->oob_fill) != 0)
            return 0;
    }
    return 1;
}

/* The plan's parameter block with XLA's buffer pointers and their tensor maps written in, into
 * `block` (64-byte aligned); 0 when a map cannot be encoded. */
static int fill_params(const Plan *plan, const CallFrame *frame, uint8_t *block) {
    memcpy(block, plan->params, plan->param_bytes);
    for (int64_t i = 0; i < plan->num_slots; i++) {
        uint64_t pointer = buffer_pointer(frame, plan->slot_indices[i]);
        memcpy(block + plan->slot_offsets[i], &pointer, sizeof pointer);
    }
    return encode_maps(plan, frame, block);
}

static int maps_fit(const Plan *plan) {
    for (int64_t i = 0; i < plan->num_maps; i++) {
        const TensorMapSlot *map = &plan->maps[i];
        if (map->offset < 0 || map->offset % TENSOR_MAP_ALIGN ||
            map->offset + TENSOR_MAP_BYTES > plan->param_bytes || map->rank < 1 ||
            map->rank > MAX_TENSOR_RANK)
            return 0;
    }
    return 1;
}

static int fits(const Plan *plan) {
    return plan->param_bytes <= MAX_PARAM_BYTES && plan->num_params <= MAX_PARAMS &&
           plan->num_params > 0 && maps_fit(plan);
}

static int execute(Plan *plan, CallFrame *frame) {
    StreamGetArgs get = {sizeof(StreamGetArgs), NULL, frame->ctx, NULL};
    void *ctx = NULL;
    if (((StreamGet)api_function(frame, API_STREAM_GET))(&get) != NULL ||
        stream_get_ctx(get.stream, &ctx) != 0)
        return 0;
    void *function = function_in(plan, ctx);
    if (function == NULL)
        return 0;
    _Alignas(TENSOR_MAP_ALIGN) uint8_t block[MAX_PARAM_BYTES];
    void *pointers[MAX_PARAMS];
    if (!fill_params(plan, frame, block))
        return 0;
    for (int64_t i = 0; i < plan->num_params; i++)
        pointers[i] = block + plan->offsets[i];
    /* A failed launch did not run: the Python handler tries again and reports the error. */
    return launch_kernel(function, plan->grid[0], plan->grid[1], plan->grid[2], plan->block[0],
                         plan->block[1], plan->block[2], plan->shared, get.stream, pointers,
                         NULL) == 0;
}

/* Updates the kernel node of an earlier record stage; 0 when Python must handle the call. */
static int update(Plan *plan, CallFrame *frame, void **error) {
    FindExtensionArgs find = {sizeof(FindExtensionArgs), NULL, frame->ctx, EXTENSION_RECORD, NULL};
    if (plan->stream_capture ||
        ((FindExtension)api_function(frame, API_FIND_EXTENSION))(&find) != NULL ||
        find.extension == NULL || find.extension->record_frame == NULL)
        return 0;
    RecordFrame *record = find.extension->record_frame;
    if (record->action == RECORD_CREATE || record->commands == NULL || *record->num_commands < 1)
        return 0;
    _Alignas(TENSOR_MAP_ALIGN) uint8_t block[MAX_PARAM_BYTES];
    KernelArg items[MAX_PARAMS];
    if (!fill_params(plan, frame, block))
        return 0;
    for (int64_t i = 0; i < plan->num_params; i++) {
        int64_t end = i + 1 < plan->num_params ? plan->offsets[i + 1] : plan->param_bytes;
        int64_t size = end - plan->offsets[i];
        items[i] = (KernelArg){block + plan->offsets[i], size > 0 ? size : 1, KERNEL_ARG_HOST_VALUE};
    }
    KernelArgs args = {items, plan->num_params};
    *error = record->api->update_launch(record->record_ctx, record->commands[0], &args);
    return 1;
}

void *ptxpy_native_handler(CallFrame *frame) {
    if (frame->extension_start && frame->extension_start->type == EXTENSION_METADATA) {
        Metadata *metadata = ((MetadataExtension *)frame->extension_start)->metadata;
        metadata->api_version.major_version = 0;
        metadata->api_version.minor_version = 1;
        metadata->traits = TRAIT_COMMAND_BUFFER_COMPATIBLE;
        return NULL;
    }
    int64_t key;
    Plan *plan = NULL;
    if ((frame->stage == STAGE_EXECUTE || frame->stage == STAGE_RECORD) &&
        frame->args.size + frame->rets.size <= MAX_BUFFERS && plan_key(&frame->attrs, &key))
        plan = find_plan(key);
    if (plan != NULL && fits(plan)) {
        void *error = NULL;
        if (frame->stage == STAGE_EXECUTE && execute(plan, frame)) {
            __atomic_fetch_add(&counters[0], 1, __ATOMIC_RELAXED);
            return NULL;
        }
        if (frame->stage == STAGE_RECORD && update(plan, frame, &error)) {
            __atomic_fetch_add(&counters[1], 1, __ATOMIC_RELAXED);
            return error;
        }
    }
    __atomic_fetch_add(&counters[2], 1, __ATOMIC_RELAXED);
    return fallback(frame);
}
