// Readers for the two histogram inputs of the step simulation: tokens per MoE expert (for
// --moe-routing-skew) and sample lengths (for --seq-length-distribution). The Parse* functions
// take the file's text and a source name for messages; the Load* functions read the file first.
// All errors are InputError naming the file (and line or key).
#ifndef TRAINSCOPE_IO_HISTOGRAM_FILE_H_
#define TRAINSCOPE_IO_HISTOGRAM_FILE_H_

#include <string>
#include <string_view>
#include <vector>

#include "trainscope/cost/moe_routing.h"
#include "trainscope/cost/sequence_packing.h"

namespace trainscope::io {

// Token-expert assignments per expert, index = expert id. Accepted forms:
//   - a JSON array of numbers, expert i at index i;
//   - CSV with one count per line (expert i on the i-th data line);
//   - CSV with "expert,count" lines, each expert id 0..E-1 exactly once, in any order.
// CSV may start with one header line (a line whose first field is not a number); empty lines
// are skipped. Counts must be finite and >= 0 with a positive total.
[[nodiscard]] std::vector<double> ParseExpertHistogram(std::string_view text,
                                                       const std::string& source);
[[nodiscard]] std::vector<double> LoadExpertHistogramFile(const std::string& path);

// The value of the routing-skew flag: "load=F" is the busiest-rank load factor given directly
// (F >= 1, else UsageError naming the flag); a number is a Zipf exponent (finite, >= 0); anything
// else is the path of an expert histogram file (ParseExpertHistogram), recorded in skew.source. The
// histogram's size is checked against the model by cost::BusiestRankLoadFactor. Throws
// InputError naming `flag` for a bad exponent, or naming the file for a bad file.
[[nodiscard]] cost::RoutingSkew ParseRoutingSkew(const std::string& value,
                                                 std::string_view flag = "--moe-routing-skew");

// Sample lengths and their counts. Accepted forms:
//   - JSON {"lengths": [int, ...], "counts": [number, ...]} (no other keys, same sizes);
//   - CSV "length,count" lines with an optional header line; empty lines are skipped.
// Lengths must be integers >= 1, counts finite and >= 0 with a positive total.
[[nodiscard]] cost::SequenceLengthHistogram ParseSequenceLengthHistogram(std::string_view text,
                                                                         const std::string& source);
[[nodiscard]] cost::SequenceLengthHistogram LoadSequenceLengthHistogramFile(
    const std::string& path);

}  // namespace trainscope::io

#endif  // TRAINSCOPE_IO_HISTOGRAM_FILE_H_
