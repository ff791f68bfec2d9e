// A small study shared by the study tests: the tiny dense model at TP 2, PP 2, DP 2 with four
// micro-batches per rank, on H100s.
#ifndef TRAINSCOPE_TESTS_STUDY_TINY_STUDY_H_
#define TRAINSCOPE_TESTS_STUDY_TINY_STUDY_H_

#include <string>

#include "tiny_configs.h"
#include "trainscope/io/cluster_file.h"
#include "trainscope/study/study.h"

namespace trainscope::testing_configs {

inline study::Study TinyStudy() {
  study::Study study{.model = TinyModel(), .training = Training(2, 2, 2, 4)};
  study.cluster = io::ResolveCluster({.gpu = std::string("H100")});
  return study;
}

}  // namespace trainscope::testing_configs

#endif  // TRAINSCOPE_TESTS_STUDY_TINY_STUDY_H_
