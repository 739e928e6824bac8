/*
 * embed.c — how an engine uses bufplan: build the graph with the API, plan it,
 * verify the plan, then read each tensor's offset in the one arena it
 * allocates.  Built and run by the tests (ctest -R example_embed).
 */
#include <bufplan.h>

#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    bp_error err;
    bp_graph *g = bp_graph_new("embed", NULL);
    if (!g) return 1;

    /* x -> conv1 -> a -> relu -> b -> conv2 -> c;  a, c -> add -> y */
    int64_t img[4] = {1, 64, 56, 56}, w[4] = {64, 64, 3, 3};
    int32_t x, wt, a, b, c, y;
    if (bp_graph_add_tensor_shape(g, "x", BP_DT_F32, 4, img, NULL, &x, &err) ||
        bp_graph_add_tensor_shape(g, "w", BP_DT_F32, 4, w, NULL, &wt, &err) ||
        bp_graph_add_tensor_shape(g, "a", BP_DT_F32, 4, img, NULL, &a, &err) ||
        bp_graph_add_tensor_shape(g, "b", BP_DT_F32, 4, img, NULL, &b, &err) ||
        bp_graph_add_tensor_shape(g, "c", BP_DT_F32, 4, img, NULL, &c, &err) ||
        bp_graph_add_tensor_shape(g, "y", BP_DT_F32, 4, img, NULL, &y, &err))
        goto fail;
    int32_t conv1_in[2] = {x, wt}, conv2_in[2] = {b, wt}, add_in[2] = {a, c};
    if (bp_graph_add_op(g, "conv1", "Conv", 2, conv1_in, 1, &a, 0, NULL, &err) ||
        bp_graph_add_op(g, "relu", "Relu", 1, &a, 1, &b, 0, NULL, &err) ||
        bp_graph_add_op(g, "conv2", "Conv", 2, conv2_in, 1, &c, 0, NULL, &err) ||
        bp_graph_add_op(g, "add", "Add", 2, add_in, 1, &y, 0, NULL, &err) ||
        bp_graph_mark(g, x, BP_TENSOR_INPUT, &err) || bp_graph_mark(g, wt, BP_TENSOR_WEIGHT, &err) ||
        bp_graph_mark(g, y, BP_TENSOR_OUTPUT, &err) || bp_graph_finalize(g, &err))
        goto fail;

    bp_plan_options opts;
    bp_plan_options_init(&opts);
    bp_plan *plan = NULL;
    if (bp_plan_graph(g, &opts, &plan, &err) || bp_verify(g, plan, &err)) { bp_plan_free(plan); goto fail; }

    const bp_plan_stats *st = bp_plan_get_stats(plan);
    printf("arena %llu bytes (naive %llu, lower bound %llu)\n", (unsigned long long)st->arena_bytes,
           (unsigned long long)st->naive_bytes, (unsigned long long)st->lower_bound_bytes);
    /* The engine allocates one arena and binds every planned tensor. */
    unsigned char *arena = malloc(st->arena_bytes ? st->arena_bytes : 1);
    for (int32_t t = 0; t < bp_graph_n_tensors(g); t++) {
        const bp_tensor_plan *tp = bp_plan_tensor(plan, t);
        if (tp->offset == BP_NO_OFFSET) {
            printf("  %-4s %-7s (outside the arena)\n", bp_graph_tensor_name(g, t), bp_tensor_kind_name(tp->kind));
            continue;
        }
        void *ptr = arena + tp->offset;
        (void)ptr;
        printf("  %-4s %-7s offset %8llu  %8llu bytes  live [%d, %d]\n", bp_graph_tensor_name(g, t),
               bp_tensor_kind_name(tp->kind), (unsigned long long)tp->offset, (unsigned long long)tp->bytes, tp->first,
               tp->last);
    }
    int ok = st->arena_bytes < st->naive_bytes; /* reuse happened */
    free(arena);
    bp_plan_free(plan);
    bp_graph_free(g);
    return ok ? 0 : 1;

fail:
    fprintf(stderr, "embed: %s\n", err.msg);
    bp_graph_free(g);
    return 1;
}
