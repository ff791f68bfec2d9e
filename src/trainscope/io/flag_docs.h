// Internal to io/: the help table of the command-line flags, the group, value name and help
// line of every flag in AllFlags() (io/megatron_flags.h). The table is constant data with
// static storage; FindDoc returns pointers into it.
#ifndef TRAINSCOPE_IO_FLAG_DOCS_H_
#define TRAINSCOPE_IO_FLAG_DOCS_H_

#include <string_view>

#include "trainscope/io/megatron_args.h"

namespace trainscope::io::internal {

// Group, value name and help of every flag, keyed by its first name. AllFlags() attaches
// them; a flag without an entry fails an internal check (tests parse every command line).
struct FlagDoc {
  std::string_view name;
  FlagGroup group;
  std::string_view value;
  std::string_view help;
};

// The doc of the flag whose first (Megatron) name is `name`, or nullptr if it has none. The
// pointee lives for the whole program.
[[nodiscard]] const FlagDoc* FindDoc(std::string_view name);

}  // namespace trainscope::io::internal

#endif  // TRAINSCOPE_IO_FLAG_DOCS_H_
