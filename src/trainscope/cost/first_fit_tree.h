// Internal to cost/: first fit in O(log n) per item. A max-segment tree over the free capacity of
// bins 0..n-1, all starting empty at full capacity; since opened bins come first and unopened
// ones are empty, "the leftmost bin with enough free capacity" is exactly first fit. Used by
// sequence packing (first-fit decreasing) and slime's dynamic batching (first fit in sample
// order).
#ifndef TRAINSCOPE_COST_FIRST_FIT_TREE_H_
#define TRAINSCOPE_COST_FIRST_FIT_TREE_H_

#include <algorithm>
#include <cstdint>
#include <vector>

namespace trainscope::cost::internal {

class FirstFitTree {
 public:
  // `num_bins` >= 1 bins of `capacity` each.
  FirstFitTree(int64_t num_bins, int64_t capacity) {
    while (leaves_ < num_bins) leaves_ *= 2;
    free_.assign(static_cast<size_t>(2 * leaves_), capacity);
  }
  // The leftmost bin with free capacity >= size, or -1 when none has.
  [[nodiscard]] int64_t LeftmostFitting(int64_t size) const {
    if (free_[1] < size) return -1;
    int64_t node = 1;
    while (node < leaves_) node = free_[2 * node] >= size ? 2 * node : 2 * node + 1;
    return node - leaves_;
  }
  [[nodiscard]] int64_t Free(int64_t bin) const { return free_[bin + leaves_]; }
  void SetFree(int64_t bin, int64_t free) {
    int64_t node = bin + leaves_;
    free_[node] = free;
    for (node /= 2; node >= 1; node /= 2) {
      free_[node] = std::max(free_[2 * node], free_[2 * node + 1]);
    }
  }

 private:
  int64_t leaves_ = 1;
  std::vector<int64_t> free_;
};

}  // namespace trainscope::cost::internal

#endif  // TRAINSCOPE_COST_FIRST_FIT_TREE_H_
