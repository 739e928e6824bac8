/* The ONNX tests' view of element types: bp_dtype of an ONNX
 * TensorProto.DataType, as the importer maps them (float8 types are one
 * byte); BP_DT_UNKNOWN for types without a byte size (string, 4-bit,
 * undefined). */
#ifndef BP_TEST_ONNX_TYPES_H
#define BP_TEST_ONNX_TYPES_H
#include <bufplan.h>

static inline bp_dtype onnx_dt(int t)
{
    switch (t) {
    case 1: return BP_DT_F32; case 2: return BP_DT_U8; case 3: return BP_DT_I8; case 4: return BP_DT_U16;
    case 5: return BP_DT_I16; case 6: return BP_DT_I32; case 7: return BP_DT_I64; case 9: return BP_DT_BOOL;
    case 10: return BP_DT_F16; case 11: return BP_DT_F64; case 12: return BP_DT_U32; case 13: return BP_DT_U64;
    case 14: return BP_DT_C64; case 15: return BP_DT_C128; case 16: return BP_DT_BF16;
    case 17: case 18: case 19: case 20: return BP_DT_F8;
    default: return BP_DT_UNKNOWN;
    }
}
#endif
