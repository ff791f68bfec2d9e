"""Tests of the Python module: run by ctest with PYTHONPATH=build/python and TRAINSCOPE_BINARY
set to the CLI, whose --json output the module's results must equal."""

import json
import os
import subprocess
import unittest

import trainscope

LAYOUT = dict(model="Qwen3-8B", num_gpus=16, gbs=64, seq=4096, gpu="H100")


def cli_json(*args):
    binary = os.environ["TRAINSCOPE_BINARY"]
    out = subprocess.run([binary, *args, "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


class TrainscopeModuleTest(unittest.TestCase):
    def test_simulate_equals_cli_json(self):
        result = trainscope.simulate(tp=2, **LAYOUT)
        expected = cli_json("simulate", "--model", "Qwen3-8B", "--num-gpus", "16", "--tp", "2",
                            "--gbs", "64", "--seq", "4096", "--gpu", "H100")
        self.assertEqual(result["tokens_per_s_per_gpu"], expected["tokens_per_s_per_gpu"])
        self.assertEqual(result, expected)

    def test_alias_equals_megatron_flag(self):
        short = trainscope.simulate(tp=2, **LAYOUT)
        long = trainscope.simulate(tensor_model_parallel_size=2, **LAYOUT)
        self.assertEqual(short, long)

    def test_booleans_become_switches(self):
        with_sp = trainscope.memory(tp=2, sequence_parallel=True, **LAYOUT)
        without = trainscope.memory(tp=2, sequence_parallel=False, **LAYOUT)
        expected = cli_json("memory", "--model", "Qwen3-8B", "--num-gpus", "16", "--tp", "2",
                            "--gbs", "64", "--seq", "4096", "--gpu", "H100",
                            "--sequence-parallel")
        self.assertEqual(with_sp, expected)
        self.assertNotEqual(with_sp, without)

    def test_invalid_layout_raises_error_with_rule(self):
        with self.assertRaises(trainscope.Error) as caught:
            trainscope.simulate(model="Qwen3-8B", num_gpus=24, tp=3, gbs=48, seq=4096)
        self.assertEqual(caught.exception.rule, "C4")
        self.assertIsInstance(caught.exception, ValueError)
        self.assertIn("[C4]", str(caught.exception))

    def test_validate_returns_the_verdict(self):
        self.assertEqual(trainscope.validate(tp=2, **LAYOUT),
                         cli_json("validate", "--model", "Qwen3-8B", "--num-gpus", "16", "--tp",
                                  "2", "--gbs", "64", "--seq", "4096", "--gpu", "H100"))

    def test_weight_sync_equals_cli_json(self):
        result = trainscope.weight_sync(model="Qwen3.5-35B-A3B", num_gpus=8, tp=2, ep=8, etp=1,
                                        sequence_parallel=True, rollout_gpus=8, rollout_tp=8,
                                        gpu="H100")
        expected = cli_json("weight-sync", "--model", "Qwen3.5-35B-A3B", "--num-gpus", "8",
                            "--tp", "2", "--ep", "8", "--etp", "1", "--sequence-parallel",
                            "--rollout-gpus", "8", "--rollout-tp", "8", "--gpu", "H100")
        self.assertEqual(result, expected)
        self.assertGreater(result["total_seconds"], 0)

    def test_rl_equals_cli_json(self):
        result = trainscope.rl(model="Qwen3.5-35B-A3B", num_gpus=8, tp=2, ep=8, etp=1,
                               sequence_parallel=True, gbs=32, seq=4096, colocate=True,
                               rollout_tp=8, transport="ipc", rollout_batch_size=16,
                               n_samples_per_prompt=8, rollout_max_response_len=4096,
                               gpu="H100")
        expected = cli_json("rl", "--model", "Qwen3.5-35B-A3B", "--num-gpus", "8", "--tp", "2",
                            "--ep", "8", "--etp", "1", "--sequence-parallel", "--gbs", "32",
                            "--seq", "4096", "--colocate", "--rollout-tp", "8", "--transport",
                            "ipc", "--rollout-batch-size", "16", "--n-samples-per-prompt", "8",
                            "--rollout-max-response-len", "4096", "--gpu", "H100")
        self.assertEqual(result, expected)
        self.assertEqual([p["name"] for p in result["phases"]][0], "rollout")

    def test_unknown_flag_raises_error_without_rule(self):
        with self.assertRaises(trainscope.Error) as caught:
            trainscope.params(model="Qwen3-8B", tensor_parallel=2)
        self.assertIsNone(caught.exception.rule)
        self.assertIn("--tensor-parallel", str(caught.exception))

    def test_params_and_workload_summary_equal_cli(self):
        self.assertEqual(trainscope.params(model="Qwen3-8B"),
                         cli_json("params", "--model", "Qwen3-8B"))
        self.assertEqual(
            trainscope.workload_summary(model="Qwen3-0.6B", num_gpus=8, tp=2, seq=2048),
            cli_json("workload", "--model", "Qwen3-0.6B", "--num-gpus", "8", "--tp", "2",
                     "--seq", "2048", "--summary"))

    def test_list_values_become_flag_arguments(self):
        result = trainscope.simulate(tp=2, cp=2, cp_comm_type=["a2a"], **LAYOUT)
        expected = cli_json("simulate", "--model", "Qwen3-8B", "--num-gpus", "16", "--tp", "2",
                            "--cp", "2", "--cp-comm-type", "a2a", "--gbs", "64", "--seq", "4096",
                            "--gpu", "H100")
        self.assertEqual(result, expected)
        self.assertIn("Qwen3-8B", trainscope.presets())


if __name__ == "__main__":
    unittest.main(verbosity=2)
