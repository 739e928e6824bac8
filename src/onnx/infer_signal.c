/*
 * infer_signal.c — signal-processing ops: DFT (opset 17: axis attribute;
 * opset 20: dft_length and axis as inputs), STFT, the window generators
 * (HannWindow, HammingWindow, BlackmanWindow) and MelWeightMatrix.  Sizes
 * come from the small integer values of their scalar inputs (dft_length,
 * frame_step, frame_length, size, num_mel_bins); an input without values
 * gives a fresh symbol for the size it sets.  A one-sided transform of n
 * points keeps floor(n/2)+1 bins; the complex dimension is last and 2.
 */
#include "onnx/onnx_internal.h"

#ifdef BP_HAVE_ONNX

#include <string.h>

#define MR BP__OX_MAX_RANK

/* The value of scalar (or 1-element) input i in *v; false when the input is
 * absent or its value is not known. */
static bool scalar_in(const bp__ox_op *x, int i, int64_t *v)
{
    int64_t one[1];
    size_t n = 0;
    int32_t t = bp__ox_in(x, i);
    if (t < 0 || !bp__ox_ints_of(x, t, one, 1, &n) || n != 1) return false;
    *v = one[0];
    return true;
}

/* Bins of a one-sided transform of n points (n a size or a symbol): floor(n/2)+1, fresh when symbolic. */
static bp_status onesided_bins(bp__ox_op *x, int64_t n, int out, int k, int64_t *bins)
{
    if (n >= 0) { *bins = n / 2 + 1; return BP_OK; }
    BP__OX_FRESH(*bins, out, k);
    return BP_OK;
}

bp_status bp__ox_inf_dft(bp__ox_op *x)
{
    bp__ox_arg in;
    if (bp__ox_in0_rank(x, 2, "signal dims and the complex dim", &in)) return in.s;
    int r = in.r;
    bp_dtype dt = in.dt;
    const int64_t *s = in.d;
    bp_status st;
    if (s[r - 1] >= 0 && s[r - 1] != 1 && s[r - 1] != 2)
        return bp__ox_bad(x, "the last dimension is %lld (1 for real, 2 for complex input)", (long long)s[r - 1]);
    int64_t axis;
    if (x->opset < 20) axis = bp__ox_attr_i(x, "axis", 1);
    else if (bp__ox_in(x, 2) < 0) axis = -2;
    else if (!scalar_in(x, 2, &axis)) {
        /* which axis changes is not known: every signal dim fresh */
        int64_t d[MR] = {0};
        for (int i = 0; i < r - 1; i++) BP__OX_FRESH(d[i], 0, i);
        d[r - 1] = 2;
        return bp__ox_set_out(x, 0, dt, r, d);
    }
    int64_t q = bp__ox_norm_axis(axis, r);
    if (q < 0 || q > r - 2) return bp__ox_bad(x, "axis %lld is out of range for rank %d (the last dim is the complex one)", (long long)axis, r);
    int64_t d[MR] = {0};
    memcpy(d, s, (size_t)r * sizeof *d);
    int64_t n = s[q];
    if (bp__ox_in(x, 1) >= 0) {
        if (!scalar_in(x, 1, &n)) BP__OX_FRESH(n, 0, (int)q);
        else if (n <= 0) return bp__ox_bad(x, "dft_length is %lld (must be positive)", (long long)n);
    }
    bool onesided = bp__ox_attr_i(x, "onesided", 0) != 0;
    bool inverse = bp__ox_attr_i(x, "inverse", 0) != 0;
    if (onesided && !inverse) {
        if ((st = onesided_bins(x, n, 0, (int)q, &d[q]))) return st;
    } else d[q] = n;
    d[r - 1] = 2;
    st = bp__ox_set_out(x, 0, dt, r, d);
    int64_t ne = bp__ox_numel(d, r);
    if (!st && ne > 0 && n > 0) x->nd->cost = 5.0 * (double)ne * (double)(64 - __builtin_clzll((uint64_t)n));
    return st;
}

bp_status bp__ox_inf_stft(bp__ox_op *x)
{
    int32_t win = bp__ox_in(x, 2);
    bp__ox_arg sig;
    if (bp__ox_in0_rank(x, 3, "batch, length, 1 or 2", &sig)) return sig.s;
    if (sig.r != 3) return bp__ox_bad(x, "signal has rank %d (needs 3: batch, length, 1 or 2)", sig.r);
    const int64_t *s = sig.d;
    bp_status st;
    if (s[2] >= 0 && s[2] != 1 && s[2] != 2) return bp__ox_bad(x, "the signal's last dimension is %lld (1 or 2)", (long long)s[2]);
    int64_t step = -1, fl = -1;
    bool have_step = scalar_in(x, 1, &step);
    if (have_step && step <= 0) return bp__ox_bad(x, "frame_step is %lld (must be positive)", (long long)step);
    if (bp__ox_in(x, 3) >= 0) {
        if (scalar_in(x, 3, &fl) && fl <= 0) return bp__ox_bad(x, "frame_length is %lld (must be positive)", (long long)fl);
    } else if (bp__ox_rank(x, win) == 1) {
        fl = bp__ox_shape(x, win)[0];
    } else if (win >= 0 && bp__ox_rank(x, win) >= 0) {
        return bp__ox_bad(x, "window has rank %d (needs 1)", bp__ox_rank(x, win));
    }
    int64_t d[4] = {s[0], 0, 0, 2};
    if (fl >= 0 && s[1] >= 0 && fl > s[1])
        return bp__ox_bad(x, "frame_length %lld is longer than the signal (%lld)", (long long)fl, (long long)s[1]);
    if (fl >= 0 && s[1] >= 0 && have_step) d[1] = (s[1] - fl) / step + 1;
    else BP__OX_FRESH(d[1], 0, 1);
    if (bp__ox_attr_i(x, "onesided", 1)) {
        if ((st = onesided_bins(x, fl, 0, 2, &d[2]))) return st;
    } else if (fl >= 0) d[2] = fl;
    else BP__OX_FRESH(d[2], 0, 2);
    return bp__ox_set_out(x, 0, sig.dt, 4, d);
}

/* The output_datatype attribute (default float); an error for a type without a byte size. */
static bp_status out_datatype(bp__ox_op *x, bp_dtype *dt)
{
    int64_t t = bp__ox_attr_i(x, "output_datatype", 1);
    *dt = bp__ox_dtype((int32_t)t);
    if (*dt == BP_DT_UNKNOWN) return bp__ox_bad(x, "output_datatype %lld is not a sized numeric type", (long long)t);
    return BP_OK;
}

bp_status bp__ox_inf_window(bp__ox_op *x)
{
    bp_dtype dt;
    bp_status st = out_datatype(x, &dt);
    if (st) return st;
    int64_t n;
    if (!scalar_in(x, 0, &n)) BP__OX_FRESH(n, 0, 0);
    else if (n < 0) return bp__ox_bad(x, "size is %lld (must not be negative)", (long long)n);
    return bp__ox_set_out(x, 0, dt, 1, &n);
}

bp_status bp__ox_inf_mel(bp__ox_op *x)
{
    bp_dtype dt;
    bp_status st = out_datatype(x, &dt);
    if (st) return st;
    int64_t mel, dft, d[2];
    if (!scalar_in(x, 0, &mel)) BP__OX_FRESH(mel, 0, 1);
    else if (mel <= 0) return bp__ox_bad(x, "num_mel_bins is %lld (must be positive)", (long long)mel);
    if (!scalar_in(x, 1, &dft)) BP__OX_FRESH(d[0], 0, 0);
    else if (dft <= 0) return bp__ox_bad(x, "dft_length is %lld (must be positive)", (long long)dft);
    else d[0] = dft / 2 + 1;
    d[1] = mel;
    return bp__ox_set_out(x, 0, dt, 2, d);
}

#endif /* BP_HAVE_ONNX */
