// Building blocks of the SimAI rows (docs/workload.md): an OpPool that hands
// out the ops of one block by role and remembers which it gave away, the Workload.cc token of a
// collective, and the row patterns of a TP column/row block, the MoE layer (simai_moe_rows.cc),
// the embedding and the LM head. Internal to report/; an OpPool borrows the compute-time function
// and the notes it is given, which must outlive it.
#ifndef TRAINSCOPE_REPORT_SIMAI_BLOCKS_H_
#define TRAINSCOPE_REPORT_SIMAI_BLOCKS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/config/rank_mapping.h"
#include "trainscope/config/training_config.h"
#include "trainscope/graph/op.h"
#include "trainscope/report/simai_rows.h"

namespace trainscope::report {

// A collective the SimAI format cannot carry, counted per micro-batch (or per step).
struct DroppedComm {
  graph::Collective collective = graph::Collective::kNone;
  config::GroupKind group = config::GroupKind::kTp;
  int64_t group_size = 1;
  int64_t message_bytes = 0;
  int64_t count = 0;
};

// Everything left out of a workload, keyed by op name so the report order is fixed.
// TP×EP collectives other than the token-count gather written onto SimAI's EP group are counted
// in `tp_ep_on_ep` (by op name) for the diagnostics.
struct ExportNotes {
  std::map<std::string, DroppedComm> dropped;
  std::map<std::string, DroppedComm> tp_ep_on_ep;
  void Drop(const graph::Op& op);
  void WroteTpEpOnEp(const graph::Op& op);
};

// Which column a collective is written in: fp/ig columns address TP and EP groups, the wg column
// DP and expert-DP groups (SimAI).
enum class SimAiColumnKind { kForwardOrInputGrad, kWeightGrad };

// The SimAI token for `op` in a column of `kind`, or nothing when no SimAI group matches
// (CP, PP, embedding, send/recv, broadcast). `tensor_parallel` tells whether a tp×cp group is
// the TP group (c = 1).
[[nodiscard]] std::optional<std::string> SimAiToken(const graph::Op& op, SimAiColumnKind kind,
                                                    int64_t tensor_parallel);

// Which ops a pool request selects: every field that is set must equal the op's role field
// (or its group, or its message size).
struct OpQuery {
  std::optional<graph::OpKind> kind;
  std::optional<graph::OpBlock> block;
  std::optional<graph::OpModule> module;
  std::optional<graph::OpPass> pass;
  std::optional<graph::CommPurpose> purpose;
  std::optional<config::GroupKind> group;
  std::optional<int64_t> message_bytes;
  [[nodiscard]] bool Matches(const graph::Op& op) const;
};

// The ops of one block (forward or backward), handed out at most once each.
class OpPool {
 public:
  OpPool(std::vector<graph::Op> ops, const ComputeTime& compute_seconds);

  // The first unused collective matching `query`, or nullptr.
  [[nodiscard]] const graph::Op* TakeComm(const OpQuery& query);
  [[nodiscard]] bool HasComm(const OpQuery& query) const;
  // Seconds of every unused compute op matching `query`.
  [[nodiscard]] double TakeCompute(const OpQuery& query);
  // Seconds of every unused compute op.
  [[nodiscard]] double TakeAllCompute();
  // Records every unused collective in `notes`. Precondition: all compute was taken.
  void DropRest(ExportNotes& notes);

 private:
  std::vector<graph::Op> ops_;
  std::vector<bool> used_;
  const ComputeTime& compute_seconds_;
};

// Everything the block builders need; borrows the notes, which must outlive it.
struct BlockContext {
  int64_t tensor_parallel = 1;
  bool sequence_parallel = false;
  ExportNotes* notes = nullptr;
};

// Writes `op` (if any) into `column` with its token, or records it as dropped.
void SetComm(SimAiColumn& column, const graph::Op* op, SimAiColumnKind kind,
             const BlockContext& context);

// One TP block in a pool holding only its ops: the column-parallel and row-parallel linear
// (modules kColumnLinear / kRowLinear), an optional head gather between them (attention's g < t
// QKV gather when t exceeds the KV heads, purpose kHeadGather), the optional input norm before
// the column linear (module kPreNorm) and, with `separate_output_gate`, a compute op after the
// row linear's collective (module kOutputGate).
struct TpBlockSpec {
  std::string row_prefix;  // "attn", "gdn", "mlp", "shared_expert"
  bool separate_output_gate = false;
};

// Three rows per block with SP (*_in, *_regather, *_out), one without; a fourth (second)
// row `<row_prefix>_qkv_gather` carries the head gather when present. The input norm's forward
// is the fp compute before the first collective, its backward joins the column wgrad (after the
// dgrad RS or AR); a separate output gate gets a compute-only row `<row_prefix>_gate` after the
// block.
void AppendTpBlockRows(OpPool& forward, OpPool& backward, const TpBlockSpec& spec,
                       const BlockContext& context, std::vector<SimAiRow>& rows);

// MoE rows: moe_router, moe_aux_loss (aux-loss statistics all-reduce), moe_dispatch,
// moe_dispatch_probs (routing probabilities / map), moe_etp_gather and moe_etp_gather_probs
// (ETP > 1), moe_experts, moe_combine.
void AppendMoeRows(OpPool& forward, OpPool& backward, const BlockContext& context,
                   std::vector<SimAiRow>& rows);

// The embedding row: SP fp RS / ig AG, without SP fp AR.
void AppendEmbeddingRow(OpPool& forward, OpPool& backward, const BlockContext& context,
                        std::vector<SimAiRow>& rows);

// The LM head: the column half of a TP block, then one row per cross-entropy all-reduce.
void AppendLmHeadRows(OpPool& forward, OpPool& backward, const BlockContext& context,
                      std::vector<SimAiRow>& rows);

// What the rank's stage holds that the diagnostics mention.
struct StageFeatures {
  bool has_gdn = false;
  bool has_mtp = false;
  bool has_vision = false;
};

// The diagnostics of a finished workload, in a fixed order: pipeline parallelism, GDN folding,
// ETP/EP/expert-DP group mismatches, CP, MTP and vision, then every dropped collective.
[[nodiscard]] std::vector<std::string> SimAiDiagnostics(const config::TrainingConfig& training,
                                                        const SimAiWorkload& workload,
                                                        int64_t pipeline_rank,
                                                        const ExportNotes& micro_batch_notes,
                                                        const ExportNotes& step_notes,
                                                        const StageFeatures& features);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_SIMAI_BLOCKS_H_
