/*
 * infer_misc.c — ops of their own kind: the losses (NegativeLogLikelihoodLoss,
 * SoftmaxCrossEntropyLoss: a scalar unless reduction is "none", then the
 * target's shape), Det (the batch dims), Multinomial ([batch, sample_size]),
 * TfIdfVectorizer (the last dim is max(ngram_indexes) + 1), and the string
 * ops: outputs holding strings have no byte size ("not sized", planned as
 * dynamic), while RegexFullMatch's bool output and StringSplit's counts keep
 * the input's shape.
 */
#include "onnx/onnx_internal.h"

#ifdef BP_HAVE_ONNX

#include <string.h>

#define MR BP__OX_MAX_RANK

bp_status bp__ox_inf_loss(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0), tg = bp__ox_in(x, 1);
    bp_dtype dt = bp__ox_dt(x, a);
    int r = bp__ox_rank(x, a), rt = bp__ox_rank(x, tg);
    if (r >= 0 && r < 2) return bp__ox_bad(x, "input has rank %d (needs at least 2: N, C, ...)", r);
    if (r >= 0 && rt >= 0 && rt != r - 1) return bp__ox_bad(x, "target has rank %d, the input %d (needs one less)", rt, r);
    bp_status s;
    if (bp__ox_attr_s_is(x, "reduction", "none")) s = bp__ox_copy_shape(x, 0, tg, dt, false);
    else s = bp__ox_set_out(x, 0, dt, 0, NULL);
    if (s || strcmp(x->op, "SoftmaxCrossEntropyLoss") != 0) return s;
    return bp__ox_copy_shape(x, 1, a, dt, false);   /* log_prob */
}

bp_status bp__ox_inf_det(bp__ox_op *x)
{
    bp__ox_arg a;
    if (bp__ox_in0_rank(x, 2, "square matrices", &a)) return a.s;
    int64_t rows = a.d[a.r - 2], cols = a.d[a.r - 1];
    if (rows >= 0 && cols >= 0 && rows != cols) return bp__ox_bad(x, "the matrices are %lldx%lld, not square", (long long)rows, (long long)cols);
    return bp__ox_set_out(x, 0, a.dt, a.r - 2, a.d);
}

bp_status bp__ox_inf_multinomial(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0);
    int64_t t = bp__ox_attr_i(x, "dtype", 6);
    bp_dtype dt = bp__ox_dtype((int32_t)t);
    if (dt != BP_DT_I32 && dt != BP_DT_I64) return bp__ox_bad(x, "dtype %lld is not int32 or int64", (long long)t);
    int r = bp__ox_rank(x, a);
    if (r >= 0 && r != 2) return bp__ox_bad(x, "input has rank %d (needs 2: batch, classes)", r);
    int64_t d[2];
    d[1] = bp__ox_attr_i(x, "sample_size", 1);
    if (d[1] < 0) return bp__ox_bad(x, "sample_size is %lld", (long long)d[1]);
    if (r == 2) d[0] = bp__ox_shape(x, a)[0];
    else BP__OX_FRESH(d[0], 0, 0);
    return bp__ox_set_out(x, 0, dt, 2, d);
}

bp_status bp__ox_inf_tfidf(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0);
    int r = bp__ox_rank(x, a);
    if (r < 0) return bp__ox_set_unknown(x, 0, BP_DT_F32);
    if (r != 1 && r != 2) return bp__ox_bad(x, "input has rank %d (needs 1 or 2)", r);
    const int64_t *v;
    size_t n;
    int64_t d[2], last = -1;
    if (bp__ox_attr_ints(x, "ngram_indexes", &v, &n))
        for (size_t i = 0; i < n; i++) {
            if (v[i] < 0 || v[i] >= ((int64_t)1 << 62)) return bp__ox_bad(x, "ngram_indexes entry %zu is %lld", i, (long long)v[i]);
            if (v[i] > last) last = v[i];
        }
    if (r == 2) d[0] = bp__ox_shape(x, a)[0];
    if (last >= 0) d[r - 1] = last + 1;
    else BP__OX_FRESH(d[r - 1], 0, r - 1);
    return bp__ox_set_out(x, 0, BP_DT_F32, r, d);
}

/* Output i holds strings: no byte size; the shape is kept where known. */
static bp_status strings_out(bp__ox_op *x, int i, int rank, const int64_t *dims)
{
    int32_t o = bp__ox_out(x, i);
    if (o < 0) return BP_OK;
    x->c->t[o].not_sized = 1;
    return bp__ox_set_out(x, i, BP_DT_UNKNOWN, rank, dims);
}

bp_status bp__ox_inf_string(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0);
    int r = bp__ox_rank(x, a);
    const int64_t *s = r >= 0 ? bp__ox_shape(x, a) : NULL;
    if (!strcmp(x->op, "RegexFullMatch")) return bp__ox_set_out(x, 0, BP_DT_BOOL, r, s);
    if (!strcmp(x->op, "StringSplit")) {
        bp_status st = strings_out(x, 0, -1, NULL);   /* [..., longest split]: data-dependent */
        return st ? st : bp__ox_set_out(x, 1, BP_DT_I64, r, r >= 0 ? bp__ox_shape(x, a) : NULL);   /* dims may have moved */
    }
    if (!strcmp(x->op, "StringConcat")) {
        int32_t ids[2] = {a, bp__ox_in(x, 1)};
        int64_t d[MR] = {0};
        int ro = -1;
        bp_status st = bp__ox_broadcast(x, ids, 2, &ro, d);
        return st ? st : strings_out(x, 0, ro, d);
    }
    /* StringNormalizer: [C] or [1, C]; stopwords make C data-dependent */
    return strings_out(x, 0, -1, NULL);
}

#endif /* BP_HAVE_ONNX */
