// How far a core-attention kernel is from its plateau efficiency because of its size: a kernel
// of few heads and short sequences has too few query tiles to fill the GPU and too little work
// per tile to hide its pipeline start. Pure functions over plain values; the table and its
// source are in docs/cost-model.md ("Attention occupancy").
#ifndef TRAINSCOPE_COST_ATTENTION_EFFICIENCY_H_
#define TRAINSCOPE_COST_ATTENTION_EFFICIENCY_H_

#include <cstdint>

namespace trainscope::cost {

// The fraction of the plateau efficiency (ComputeEfficiency::attention_forward_efficiency /
// attention_backward_efficiency) that a causal attention kernel computing `pairs` (query, key)
// pairs over its batch and local heads reaches: piecewise linear in log(pairs) through the
// measured points, constant beyond the first and last. 1 at the best measured point.
// Precondition (checked): pairs >= 1.
[[nodiscard]] double AttentionOccupancy(int64_t pairs, bool forward);

}  // namespace trainscope::cost

#endif  // TRAINSCOPE_COST_ATTENTION_EFFICIENCY_H_
