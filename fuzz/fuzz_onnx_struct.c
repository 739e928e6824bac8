/* A structure-aware ONNX fuzzer: the harness of fuzz_onnx (import, shape
 * inference, folding, then plan and verify), with a custom mutator that
 * changes the model's protobuf fields rather than its bytes.  The input is
 * unpacked with protobuf-c, one field is changed, and the model is packed
 * again; inputs that do not unpack get libFuzzer's byte mutations.
 *
 * Mutations (one per call, chosen at random): a dimension of an input,
 * output or value_info (an edge value or a symbol), an initializer's dims,
 * an initializer's values (int64, float and raw bytes: 0, -1, INT64_MIN,
 * INT64_MAX, 2^31, 2^62, inf, NaN, 1e38, 1e-38 ...), a node attribute (its
 * int, float or ints, or a new attribute with a name shape inference reads),
 * an op type (from the importer's ops), an input name (another tensor of
 * the graph, or none).  Unknown fields (what bufplan's schema does not
 * declare) survive the round trip.  Every allocation is libc's, as
 * protobuf-c's free_unpacked expects. */
#define _GNU_SOURCE
#include "fuzz_onnx.c"
#include "onnx.pb-c.h"

#include <math.h>
#include <stdint.h>

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

typedef struct sm_rng { uint64_t s; } sm_rng;

static uint64_t sm_next(sm_rng *r)
{
    r->s ^= r->s << 13; r->s ^= r->s >> 7; r->s ^= r->s << 17;
    return r->s;
}
static size_t sm_pick(sm_rng *r, size_t n) { return n ? (size_t)(sm_next(r) % n) : 0; }

static int64_t sm_int(sm_rng *r)
{
    static const int64_t edge[] = {0, 1, -1, 2, 3, -2, 4, 7, 64, 255, 256, 65536, INT32_MAX, (int64_t)1 << 31, (int64_t)1 << 32,
                                   (int64_t)1 << 40, (int64_t)1 << 62, INT64_MAX, INT64_MAX - 1, INT64_MIN, INT64_MIN + 1, -((int64_t)1 << 62)};
    if (sm_pick(r, 4) == 0) return (int64_t)sm_next(r) >> sm_pick(r, 64);
    return edge[sm_pick(r, sizeof edge / sizeof edge[0])];
}

static float sm_float(sm_rng *r)
{
    static const float edge[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 2.0f, 1e38f, -1e38f, 1e-38f, -1e-38f, 3.4e38f, 1e-45f, 9.2233720e18f, -9.2233720e18f};
    switch (sm_pick(r, 6)) {
    case 0: return INFINITY;
    case 1: return -INFINITY;
    case 2: return NAN;
    default: return edge[sm_pick(r, sizeof edge / sizeof edge[0])];
    }
}

static char *sm_strdup(const char *s) { return strdup(s ? s : ""); }
static void sm_set_str(char **f, const char *s) { char *n = sm_strdup(s); if (n) { free(*f); *f = n; } }

/* Grows *arr (of *n elements of esz bytes) by one zeroed element; false when out of memory. */
static bool sm_grow(void **arr, size_t *n, size_t esz)
{
    void *p = realloc(*arr, (*n + 1) * esz);
    if (!p) return false;
    memset((char *)p + *n * esz, 0, esz);
    *arr = p;
    (*n)++;
    return true;
}

/* Every value_info of the graph (inputs, outputs, value_info), the k-th. */
static Onnx__ValueInfoProto *sm_value(Onnx__GraphProto *g, size_t k)
{
    if (k < g->n_input) return g->input[k];
    k -= g->n_input;
    if (k < g->n_output) return g->output[k];
    k -= g->n_output;
    return k < g->n_value_info ? g->value_info[k] : NULL;
}

static bool sm_mut_dim(Onnx__GraphProto *g, sm_rng *r)
{
    Onnx__ValueInfoProto *v = sm_value(g, sm_pick(r, g->n_input + g->n_output + g->n_value_info));
    if (!v || !v->type || v->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !v->type->tensor_type ||
        !v->type->tensor_type->shape || !v->type->tensor_type->shape->n_dim)
        return false;
    Onnx__TensorShapeProto *sh = v->type->tensor_type->shape;
    Onnx__TensorShapeProto__Dimension *d = sh->dim[sm_pick(r, sh->n_dim)];
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM) free(d->dim_param);
    if (sm_pick(r, 5) == 0) {
        d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
        d->dim_param = sm_strdup(sm_pick(r, 2) ? "N" : "batch");
        if (!d->dim_param) d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE__NOT_SET;
    } else {
        d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        d->dim_value = sm_int(r);
    }
    return true;
}

static bool sm_mut_init_dims(Onnx__GraphProto *g, sm_rng *r)
{
    if (!g->n_initializer) return false;
    Onnx__TensorProto *t = g->initializer[sm_pick(r, g->n_initializer)];
    if (t->n_dims && sm_pick(r, 4)) t->dims[sm_pick(r, t->n_dims)] = sm_int(r);
    else if (t->n_dims && sm_pick(r, 2)) t->n_dims--;
    else if (sm_grow((void **)&t->dims, &t->n_dims, sizeof *t->dims)) t->dims[t->n_dims - 1] = sm_int(r);
    return true;
}

static bool sm_mut_init_values(Onnx__GraphProto *g, sm_rng *r)
{
    if (!g->n_initializer) return false;
    Onnx__TensorProto *t = g->initializer[sm_pick(r, g->n_initializer)];
    if (t->n_int64_data) { t->int64_data[sm_pick(r, t->n_int64_data)] = sm_int(r); return true; }
    if (t->n_float_data) { t->float_data[sm_pick(r, t->n_float_data)] = sm_float(r); return true; }
    if (t->n_int32_data) { t->int32_data[sm_pick(r, t->n_int32_data)] = (int32_t)sm_int(r); return true; }
    if (t->has_raw_data && t->raw_data.len) {
        size_t w = t->raw_data.len >= 8 && sm_pick(r, 2) ? 8 : t->raw_data.len >= 4 ? 4 : 1;
        size_t at = sm_pick(r, t->raw_data.len / w) * w;
        if (w == 8) { int64_t x = sm_int(r); memcpy(t->raw_data.data + at, &x, 8); }
        else if (w == 4) { float x = sm_float(r); memcpy(t->raw_data.data + at, &x, 4); }
        else t->raw_data.data[at] = (uint8_t)sm_next(r);
        return true;
    }
    if (t->has_data_type && sm_grow((void **)&t->int64_data, &t->n_int64_data, sizeof *t->int64_data)) {
        t->int64_data[t->n_int64_data - 1] = sm_int(r);
        return true;
    }
    return false;
}

static bool sm_mut_attr(Onnx__GraphProto *g, sm_rng *r)
{
    static const char *const names[] = {"axis", "axes", "pads", "strides", "dilations", "kernel_shape", "group", "blocksize",
                                        "perm", "split", "keepdims", "to", "depth", "output_padding", "output_shape", "mode",
                                        "auto_pad", "ceil_mode", "num_outputs", "batch_dims", "value", "alpha", "scales", "sizes"};
    if (!g->n_node) return false;
    Onnx__NodeProto *n = g->node[sm_pick(r, g->n_node)];
    if (!n->n_attribute || sm_pick(r, 4) == 0) {   /* a new attribute */
        Onnx__AttributeProto *a = malloc(sizeof *a), a0 = ONNX__ATTRIBUTE_PROTO__INIT;
        if (!a) return false;
        *a = a0;
        a->name = sm_strdup(names[sm_pick(r, sizeof names / sizeof names[0])]);
        a->has_type = 1;
        a->type = 7;   /* AttributeProto.INTS */
        if (!a->name || !sm_grow((void **)&a->ints, &a->n_ints, sizeof *a->ints) ||
            !sm_grow((void **)&n->attribute, &n->n_attribute, sizeof *n->attribute)) {
            free(a->name); free(a->ints); free(a);
            return false;
        }
        a->ints[0] = sm_int(r);
        n->attribute[n->n_attribute - 1] = a;
        return true;
    }
    Onnx__AttributeProto *a = n->attribute[sm_pick(r, n->n_attribute)];
    switch (sm_pick(r, 4)) {
    case 0: a->has_i = 1; a->i = sm_int(r); break;
    case 1: a->has_f = 1; a->f = sm_float(r); break;
    case 2:
        if (a->n_ints && sm_pick(r, 3)) a->ints[sm_pick(r, a->n_ints)] = sm_int(r);
        else if (sm_grow((void **)&a->ints, &a->n_ints, sizeof *a->ints)) a->ints[a->n_ints - 1] = sm_int(r);
        break;
    default:
        if (a->n_floats) a->floats[sm_pick(r, a->n_floats)] = sm_float(r);
        else if (a->t && a->t->n_int64_data) a->t->int64_data[sm_pick(r, a->t->n_int64_data)] = sm_int(r);
        else if (a->n_ints) a->n_ints--;
        break;
    }
    return true;
}

static bool sm_mut_op(Onnx__GraphProto *g, sm_rng *r)
{
    static const char *const ops[] = {"Add", "Mul", "Pow", "Concat", "Conv", "ConvTranspose", "MaxPool", "AveragePool", "Pad",
                                      "Slice", "Split", "Resize", "Range", "OneHot", "SpaceToDepth", "DepthToSpace", "Reshape",
                                      "Expand", "Tile", "Gather", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Cast",
                                      "ConstantOfShape", "Shape", "ReduceSum", "MatMul", "Gemm", "Where", "TopK", "Einsum",
                                      "Identity", "Relu", "Softmax", "CumSum", "NonZero", "Upsample", "Constant"};
    if (!g->n_node) return false;
    sm_set_str(&g->node[sm_pick(r, g->n_node)]->op_type, ops[sm_pick(r, sizeof ops / sizeof ops[0])]);
    return true;
}

/* A tensor name of the graph: a node output, an initializer, an input. */
static const char *sm_any_name(Onnx__GraphProto *g, sm_rng *r)
{
    size_t k = sm_pick(r, 3);
    if (k == 0 && g->n_node) {
        Onnx__NodeProto *n = g->node[sm_pick(r, g->n_node)];
        if (n->n_output) return n->output[sm_pick(r, n->n_output)];
    }
    if (k == 1 && g->n_initializer) return g->initializer[sm_pick(r, g->n_initializer)]->name;
    if (g->n_input) return g->input[sm_pick(r, g->n_input)]->name;
    return "";
}

static bool sm_mut_input_name(Onnx__GraphProto *g, sm_rng *r)
{
    if (!g->n_node) return false;
    Onnx__NodeProto *n = g->node[sm_pick(r, g->n_node)];
    if (!n->n_input) return false;
    sm_set_str(&n->input[sm_pick(r, n->n_input)], sm_pick(r, 6) ? sm_any_name(g, r) : "");
    return true;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, size, data);
    if (!m || !m->graph) {
        if (m) onnx__model_proto__free_unpacked(m, NULL);
        return LLVMFuzzerMutate(data, size, max_size);
    }
    sm_rng r = {((uint64_t)seed << 1 | 1) * 0x9e3779b97f4a7c15ull};
    bool (*const mut[])(Onnx__GraphProto *, sm_rng *) = {sm_mut_dim, sm_mut_init_dims, sm_mut_init_values, sm_mut_attr,
                                                         sm_mut_op, sm_mut_input_name};
    bool done = false;
    for (int tries = 0; tries < 8 && !done; tries++) done = mut[sm_pick(&r, sizeof mut / sizeof mut[0])](m->graph, &r);
    size_t out = 0, need = onnx__model_proto__get_packed_size(m);
    if (done && need <= max_size) out = onnx__model_proto__pack(m, data);
    onnx__model_proto__free_unpacked(m, NULL);
    return out ? out : LLVMFuzzerMutate(data, size, max_size);
}
