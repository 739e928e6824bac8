/*
 * infer.c — ONNX shape inference and constant folding of one node: the
 * dispatch from op type to its rule (infer_*.c, one file per op family),
 * called by the node walk (graph_walk.c) in topological order.
 *
 * Each rule reads its inputs' types and shapes (and values, for small
 * tensors) and sets its outputs'.  Dimensions are known sizes or symbols; the
 * rules keep symbols where the answer is still that symbol (Add of [N,3] and
 * [N,3] is [N,3]; Reshape to [N,-1] of [N,512,1,1] is [N,512]) and make a
 * fresh symbol where it is not known (Conv over a symbolic height).  A rank
 * that cannot be known is left at -1: the importer makes the tensor dynamic.
 *
 * Folding: integer (and small float) tensors carry values, so the shape
 * arithmetic that exporters emit (Shape, Gather, Unsqueeze, Concat, Cast,
 * Div, Mod, Slice, Range, ConstantOfShape, Where, Equal, ...) is evaluated
 * and the Reshape / Expand / Pad / Slice / Resize fed by it get static
 * shapes.  Integer values may hold symbols (Shape of [N,3] is [N,3]), so
 * Reshape(x, Concat(Gather(Shape(x), 0), -1)) keeps N.  Integer division
 * truncates toward zero and Mod follows the divisor's sign unless fmod=1,
 * as in the ONNX runtime.  Division by zero does not fold.
 *
 * Cost: FLOPs from the shapes (2*M*N*K for MatMul/Gemm, 2*out*Cin/g*k for
 * Conv, output elements for element-wise ops), 0 when unknown.
 */
#include "onnx/onnx_internal.h"

#ifdef BP_HAVE_ONNX

#include <string.h>

typedef bp_status (*infer_fn)(bp__ox_op *x);

/* Op type (default domain) -> rule, grouped by family; looked up by a linear scan, once per node. */
static const struct { const char *op; infer_fn fn; } table[] = {
    /* infer_elementwise.c */
    {"Add", bp__ox_inf_nary}, {"Sub", bp__ox_inf_nary}, {"Mul", bp__ox_inf_nary}, {"Div", bp__ox_inf_nary},
    {"Pow", bp__ox_inf_nary}, {"Mod", bp__ox_inf_nary}, {"Min", bp__ox_inf_nary}, {"Max", bp__ox_inf_nary},
    {"Sum", bp__ox_inf_nary}, {"Mean", bp__ox_inf_nary}, {"Equal", bp__ox_inf_nary}, {"Less", bp__ox_inf_nary},
    {"Greater", bp__ox_inf_nary}, {"LessOrEqual", bp__ox_inf_nary}, {"GreaterOrEqual", bp__ox_inf_nary},
    {"And", bp__ox_inf_nary}, {"Or", bp__ox_inf_nary}, {"Xor", bp__ox_inf_nary}, {"Where", bp__ox_inf_nary},
    {"BitShift", bp__ox_inf_nary}, {"BitwiseAnd", bp__ox_inf_nary}, {"BitwiseOr", bp__ox_inf_nary},
    {"BitwiseXor", bp__ox_inf_nary},
    {"Relu", bp__ox_inf_unary}, {"LeakyRelu", bp__ox_inf_unary}, {"PRelu", bp__ox_inf_unary}, {"Sigmoid", bp__ox_inf_unary},
    {"HardSigmoid", bp__ox_inf_unary}, {"HardSwish", bp__ox_inf_unary}, {"Tanh", bp__ox_inf_unary},
    {"Clip", bp__ox_inf_unary}, {"Erf", bp__ox_inf_unary}, {"Sqrt", bp__ox_inf_unary}, {"Exp", bp__ox_inf_unary},
    {"Log", bp__ox_inf_unary}, {"Neg", bp__ox_inf_unary}, {"Abs", bp__ox_inf_unary}, {"Reciprocal", bp__ox_inf_unary},
    {"Floor", bp__ox_inf_unary}, {"Ceil", bp__ox_inf_unary}, {"Round", bp__ox_inf_unary}, {"Sign", bp__ox_inf_unary},
    {"Not", bp__ox_inf_unary}, {"Elu", bp__ox_inf_unary}, {"Selu", bp__ox_inf_unary}, {"Celu", bp__ox_inf_unary},
    {"Softplus", bp__ox_inf_unary}, {"Softsign", bp__ox_inf_unary}, {"Gelu", bp__ox_inf_unary}, {"Mish", bp__ox_inf_unary},
    {"ThresholdedRelu", bp__ox_inf_unary}, {"Shrink", bp__ox_inf_unary}, {"Sin", bp__ox_inf_unary},
    {"Cos", bp__ox_inf_unary}, {"Tan", bp__ox_inf_unary}, {"Asin", bp__ox_inf_unary}, {"Acos", bp__ox_inf_unary},
    {"Atan", bp__ox_inf_unary}, {"Sinh", bp__ox_inf_unary}, {"Cosh", bp__ox_inf_unary}, {"Asinh", bp__ox_inf_unary},
    {"Acosh", bp__ox_inf_unary}, {"Atanh", bp__ox_inf_unary}, {"IsNaN", bp__ox_inf_unary}, {"IsInf", bp__ox_inf_unary},
    {"BitwiseNot", bp__ox_inf_unary}, {"Softmax", bp__ox_inf_unary}, {"LogSoftmax", bp__ox_inf_unary},
    {"Hardmax", bp__ox_inf_unary}, {"LRN", bp__ox_inf_unary}, {"CumSum", bp__ox_inf_unary}, {"Trilu", bp__ox_inf_unary},
    {"ReverseSequence", bp__ox_inf_unary}, {"MeanVarianceNormalization", bp__ox_inf_unary}, {"Bernoulli", bp__ox_inf_unary},
    {"LpNormalization", bp__ox_inf_unary},
    {"Identity", bp__ox_inf_identity}, {"Dropout", bp__ox_inf_identity},
    {"Cast", bp__ox_inf_cast}, {"CastLike", bp__ox_inf_cast},
    {"ReduceMean", bp__ox_inf_reduce}, {"ReduceSum", bp__ox_inf_reduce}, {"ReduceMax", bp__ox_inf_reduce},
    {"ReduceMin", bp__ox_inf_reduce}, {"ReduceProd", bp__ox_inf_reduce}, {"ReduceL1", bp__ox_inf_reduce},
    {"ReduceL2", bp__ox_inf_reduce}, {"ReduceLogSum", bp__ox_inf_reduce}, {"ReduceLogSumExp", bp__ox_inf_reduce},
    {"ReduceSumSquare", bp__ox_inf_reduce}, {"ArgMax", bp__ox_inf_reduce}, {"ArgMin", bp__ox_inf_reduce},
    /* infer_const.c */
    {"Shape", bp__ox_inf_shape}, {"Size", bp__ox_inf_shape},
    {"Constant", bp__ox_inf_constant}, {"ConstantOfShape", bp__ox_inf_constant_of_shape}, {"Range", bp__ox_inf_range},
    {"RandomNormal", bp__ox_inf_random}, {"RandomUniform", bp__ox_inf_random}, {"RandomNormalLike", bp__ox_inf_random},
    {"RandomUniformLike", bp__ox_inf_random},
    {"EyeLike", bp__ox_inf_eyelike},
    /* infer_reshape.c */
    {"Reshape", bp__ox_inf_reshape}, {"Flatten", bp__ox_inf_flatten}, {"Squeeze", bp__ox_inf_squeeze},
    {"Unsqueeze", bp__ox_inf_unsqueeze}, {"Transpose", bp__ox_inf_transpose}, {"Expand", bp__ox_inf_expand},
    {"Tile", bp__ox_inf_tile},
    /* infer_index.c */
    {"Concat", bp__ox_inf_concat}, {"Split", bp__ox_inf_split}, {"Slice", bp__ox_inf_slice},
    {"Gather", bp__ox_inf_gather}, {"GatherElements", bp__ox_inf_gather}, {"GatherND", bp__ox_inf_gather},
    {"ScatterND", bp__ox_inf_same_as_data}, {"ScatterElements", bp__ox_inf_same_as_data},
    {"Scatter", bp__ox_inf_same_as_data},
    {"TopK", bp__ox_inf_topk}, {"OneHot", bp__ox_inf_onehot},
    {"NonZero", bp__ox_inf_dynamic_1d}, {"NonMaxSuppression", bp__ox_inf_dynamic_1d}, {"Compress", bp__ox_inf_dynamic_1d},
    {"Unique", bp__ox_inf_dynamic_1d},
    {"SequenceConstruct", bp__ox_inf_sequence}, {"SequenceEmpty", bp__ox_inf_sequence}, {"SequenceAt", bp__ox_inf_sequence},
    {"SequenceInsert", bp__ox_inf_sequence}, {"SequenceErase", bp__ox_inf_sequence},
    {"SequenceLength", bp__ox_inf_sequence}, {"SplitToSequence", bp__ox_inf_sequence},
    {"ConcatFromSequence", bp__ox_inf_sequence}, {"Optional", bp__ox_inf_sequence},
    {"OptionalGetElement", bp__ox_inf_sequence}, {"OptionalHasElement", bp__ox_inf_sequence},
    {"SequenceMap", bp__ox_inf_sequence},
    /* infer_nn.c */
    {"Conv", bp__ox_inf_conv}, {"ConvTranspose", bp__ox_inf_conv}, {"ConvInteger", bp__ox_inf_conv},
    {"QLinearConv", bp__ox_inf_conv}, {"DeformConv", bp__ox_inf_conv},
    {"MaxPool", bp__ox_inf_pool}, {"AveragePool", bp__ox_inf_pool}, {"LpPool", bp__ox_inf_pool},
    {"GlobalAveragePool", bp__ox_inf_pool}, {"GlobalMaxPool", bp__ox_inf_pool}, {"GlobalLpPool", bp__ox_inf_pool},
    {"Gemm", bp__ox_inf_gemm}, {"MatMul", bp__ox_inf_gemm}, {"MatMulInteger", bp__ox_inf_gemm},
    {"QLinearMatMul", bp__ox_inf_gemm},
    {"Einsum", bp__ox_inf_einsum},
    {"BatchNormalization", bp__ox_inf_norm}, {"InstanceNormalization", bp__ox_inf_norm},
    {"LayerNormalization", bp__ox_inf_norm}, {"GroupNormalization", bp__ox_inf_norm},
    {"Resize", bp__ox_inf_resize}, {"Upsample", bp__ox_inf_resize},
    {"Pad", bp__ox_inf_pad},
    {"DepthToSpace", bp__ox_inf_d2s}, {"SpaceToDepth", bp__ox_inf_d2s},
    {"GRU", bp__ox_inf_rnn}, {"LSTM", bp__ox_inf_rnn}, {"RNN", bp__ox_inf_rnn},
    {"QuantizeLinear", bp__ox_inf_quant}, {"DequantizeLinear", bp__ox_inf_quant},
    {"DynamicQuantizeLinear", bp__ox_inf_quant},
    {"GridSample", bp__ox_inf_grid_sample},
    /* infer_signal.c */
    {"DFT", bp__ox_inf_dft}, {"STFT", bp__ox_inf_stft}, {"HannWindow", bp__ox_inf_window},
    {"HammingWindow", bp__ox_inf_window}, {"BlackmanWindow", bp__ox_inf_window}, {"MelWeightMatrix", bp__ox_inf_mel},
    /* infer_vision.c */
    {"CenterCropPad", bp__ox_inf_center_crop_pad}, {"Col2Im", bp__ox_inf_col2im}, {"AffineGrid", bp__ox_inf_affine_grid},
    {"RoiAlign", bp__ox_inf_roi}, {"MaxRoiPool", bp__ox_inf_roi}, {"MaxUnpool", bp__ox_inf_max_unpool},
    {"ImageDecoder", bp__ox_inf_image_decoder},
    /* infer_misc.c */
    {"NegativeLogLikelihoodLoss", bp__ox_inf_loss}, {"SoftmaxCrossEntropyLoss", bp__ox_inf_loss}, {"Det", bp__ox_inf_det},
    {"Multinomial", bp__ox_inf_multinomial}, {"TfIdfVectorizer", bp__ox_inf_tfidf},
    {"StringNormalizer", bp__ox_inf_string}, {"StringConcat", bp__ox_inf_string}, {"StringSplit", bp__ox_inf_string},
    {"RegexFullMatch", bp__ox_inf_string},
};

static infer_fn find_fn(const char *op)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (!strcmp(table[i].op, op)) return table[i].fn;
    return NULL;
}

bool bp__ox_known_op(const char *op_type) { return find_fn(op_type) != NULL; }

bp_status bp__ox_infer(bp__ox *c, int32_t k, bp_error *err)
{
    bp__ox_node *nd = &c->nodes[k];
    bp__ox_op x = {c, k, nd, nd->np, nd->np->op_type, c->opset, err};
    infer_fn fn = find_fn(x.op);
    if (!fn) return BP_ERR_UNSUPPORTED;
    nd->cost = 0;
    bp_status s = fn(&x);
    if (s) return s;
    if (nd->cost <= 0) {
        /* default cost: output elements */
        double e = 0;
        for (int i = 0; i < nd->n_out; i++) {
            int32_t t = bp__ox_out(&x, i);
            int64_t n = t >= 0 ? bp__ox_t_numel(&x, t) : -1;
            if (n > 0) e += (double)n;
        }
        nd->cost = e;
    }
    return BP_OK;
}

#endif /* BP_HAVE_ONNX */
