"""CPU tests of the reference workloads: python3 -m unittest discover -s workloads/tests
Needs torch and torchvision (Debian: python3-torch python3-torchvision); skipped
without them. The end-to-end runs use tests/fakes/transformers.py in place of
the real transformers package."""

import gzip
import math
import os
import re
import struct
import subprocess
import sys
import tempfile
import unittest

kHere = os.path.dirname(os.path.abspath(__file__))
kWorkloads = os.path.dirname(kHere)
sys.path.insert(0, kWorkloads)

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    kHaveTorch = True
except ImportError:
    kHaveTorch = False


def summary(stdout):
    lines = [l for l in stdout.splitlines() if l.startswith("scalescope_result ")]
    if len(lines) != 1:
        raise AssertionError(f"expected one scalescope_result line, got {len(lines)}:\n{stdout[-2000:]}")
    return dict(kv.split("=", 1) for kv in lines[0].split()[1:])


@unittest.skipUnless(kHaveTorch, "torch is not installed")
class Nf4Test(unittest.TestCase):
    def setUp(self):
        import llm_parts
        self.p = llm_parts
        torch.manual_seed(0)

    def test_codes_are_sorted_with_zero_and_unit_ends(self):
        codes = self.p.kNf4Codes
        self.assertEqual(len(codes), 16)
        self.assertEqual(list(codes), sorted(codes))
        self.assertEqual((codes[0], codes[7], codes[15]), (-1.0, 0.0, 1.0))

    def test_values_on_the_grid_round_trip_exactly(self):
        codes = torch.tensor(self.p.kNf4Codes)
        block1 = torch.cat([codes * 3.0, codes.flip(0) * 3.0, codes * 3.0, codes * 3.0])
        block2 = torch.cat([codes * 0.5, codes.flip(0) * 0.5, codes * 0.5, codes.flip(0) * 0.5])
        # NF4 is asymmetric (-0.696 but +0.723), so only the codes themselves are exact.
        w = torch.cat([block1, block2]).reshape(4, 32)
        packed, absmax = self.p.quantize_nf4(w)
        self.assertEqual(packed.dtype, torch.uint8)
        self.assertEqual(packed.numel(), 64)
        self.assertTrue(torch.allclose(absmax, torch.tensor([3.0, 0.5])))
        back = self.p.dequantize_nf4(packed, absmax, w.shape, torch.float32)
        self.assertTrue(torch.allclose(back, w, atol=1e-6))

    def test_two_indices_per_byte_first_in_high_nibble(self):
        w = torch.zeros(64)
        w[0], w[1] = -1.0, 1.0  # indices 0 and 15
        packed, _ = self.p.quantize_nf4(w)
        self.assertEqual(int(packed[0]), 0x0F)
        self.assertEqual(int(packed[1]), 0x77)  # 0.0 is index 7 twice

    def test_gaussian_weights_error_is_small(self):
        w = torch.randn(256, 512) * 0.02
        packed, absmax = self.p.quantize_nf4(w)
        back = self.p.dequantize_nf4(packed, absmax, w.shape, torch.float32)
        rel = (back - w).norm() / w.norm()
        self.assertLess(float(rel), 0.12)  # 4-bit: about 0.09 for N(0,1) blocks of 64
        self.assertEqual(packed.numel() + 4 * absmax.numel(), w.numel() // 2 + w.numel() // 16)

    def test_rejects_sizes_not_divisible_by_the_block(self):
        with self.assertRaises(ValueError):
            self.p.quantize_nf4(torch.randn(10, 10))

    def test_nf4_linear_matches_its_dequantised_weight_forward_and_backward(self):
        lin = nn.Linear(128, 64, bias=False)
        q = self.p.Nf4Linear(lin, compute_dtype=torch.float32)
        self.assertEqual(len(list(q.parameters())), 0)
        w = q.dequantized_weight()
        x = torch.randn(3, 5, 128, requires_grad=True)
        x2 = x.detach().clone().requires_grad_(True)
        y = q(x)
        y_ref = x2 @ w.t()
        self.assertTrue(torch.allclose(y, y_ref, atol=1e-5))
        g = torch.randn_like(y)
        y.backward(g)
        y_ref.backward(g)
        self.assertTrue(torch.allclose(x.grad, x2.grad, atol=1e-5))


@unittest.skipUnless(kHaveTorch, "torch is not installed")
class LoraQatDpoTest(unittest.TestCase):
    def setUp(self):
        import llm_parts
        self.p = llm_parts
        torch.manual_seed(0)

    def test_lora_starts_equal_to_base_and_trains_only_adapters(self):
        base = nn.Linear(32, 16, bias=False)
        lora = self.p.LoraLinear(base, rank=4, alpha=8)
        x = torch.randn(2, 32)
        self.assertTrue(torch.allclose(lora(x), base(x)))
        trainable = {n for n, p in lora.named_parameters() if p.requires_grad}
        self.assertEqual(trainable, {"lora_a.weight", "lora_b.weight"})
        with torch.no_grad():
            lora.lora_b.weight.fill_(0.1)
        expected = base(x) + (x @ lora.lora_a.weight.t() @ lora.lora_b.weight.t()) * 2.0
        self.assertTrue(torch.allclose(lora(x), expected, atol=1e-5))

    def test_lora_over_nf4(self):
        q = self.p.Nf4Linear(nn.Linear(64, 64, bias=False), compute_dtype=torch.float32)
        lora = self.p.LoraLinear(q, rank=2, alpha=2)
        x = torch.randn(4, 64)
        lora(x).sum().backward()
        self.assertIsNotNone(lora.lora_a.weight.grad)

    def test_fake_quant_lands_on_the_grid_with_straight_through_gradient(self):
        w = torch.randn(8, 16, requires_grad=True)
        q = self.p.fake_quantize_symmetric(w, 8, dim=1)
        scale = w.detach().abs().amax(dim=1, keepdim=True) / 127
        steps = q.detach() / scale
        self.assertTrue(torch.allclose(steps, steps.round(), atol=1e-3))
        self.assertLessEqual(float((q - w).abs().max()), float(scale.max()) / 2 + 1e-6)
        q.sum().backward()
        self.assertTrue(torch.equal(w.grad, torch.ones_like(w)))

    def test_qat_linear_4_bit_has_at_most_16_levels_per_row(self):
        lin = nn.Linear(64, 4)
        qat = self.p.QatLinear(lin, weight_bits=4, quantize_activations=False)
        wq = self.p.fake_quantize_symmetric(qat.weight, 4, dim=1)
        for row in wq.detach():
            self.assertLessEqual(row.unique().numel(), 16)
        x = torch.randn(3, 64)
        self.assertTrue(torch.allclose(qat(x), F.linear(x, wq, lin.bias), atol=1e-6))

    def test_replace_linears_only_named_ones(self):
        m = nn.Sequential()
        m.add_module("q_proj", nn.Linear(4, 4))
        m.add_module("other", nn.Linear(4, 4))
        n = self.p.replace_linears(m, {"q_proj"}, lambda lin: self.p.QatLinear(lin))
        self.assertEqual(n, 1)
        self.assertIsInstance(m.q_proj, self.p.QatLinear)
        self.assertIsInstance(m.other, nn.Linear)

    def test_dpo_loss_formula(self):
        pc, pr = torch.tensor([-10.0, -4.0]), torch.tensor([-12.0, -3.0])
        rc, rr = torch.tensor([-11.0, -4.0]), torch.tensor([-11.0, -4.0])
        loss, acc = self.p.dpo_loss(pc, pr, rc, rr, beta=0.5)
        margins = [(-10 + 11) - (-12 + 11), (-4 + 4) - (-3 + 4)]  # 2, -1
        expected = sum(math.log1p(math.exp(-0.5 * m)) for m in margins) / 2
        self.assertAlmostEqual(float(loss), expected, places=5)
        self.assertAlmostEqual(float(acc), 0.5)
        zero, _ = self.p.dpo_loss(pc, pr, pc, pr, beta=0.1)
        self.assertAlmostEqual(float(zero), math.log(2), places=6)

    def test_sequence_logprobs_counts_response_tokens_only(self):
        logits = torch.randn(2, 6, 11)
        tokens = torch.randint(0, 11, (2, 6))
        got = self.p.sequence_logprobs(logits, tokens, first_response=3)
        logp = logits.log_softmax(-1)
        want = torch.stack([sum(logp[b, t - 1, tokens[b, t]] for t in range(3, 6)) for b in range(2)])
        self.assertTrue(torch.allclose(got, want, atol=1e-5))


def write_idx(path, magic, dims, payload):
    with gzip.open(path, "wb") as f:
        f.write(struct.pack(">I", magic) + struct.pack(f">{len(dims)}I", *dims) + payload)


@unittest.skipUnless(kHaveTorch, "torch is not installed")
class ImageDataTest(unittest.TestCase):
    def setUp(self):
        import image_ddp
        import workload_common
        self.m, self.wc = image_ddp, workload_common
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def test_reads_a_valid_idx_file(self):
        write_idx(self.path("a.gz"), 0x803, (2, 28, 28), bytes(range(256)) * 6 + bytes(32))
        arr = self.m.read_idx(self.path("a.gz"), 0x803, 3)
        self.assertEqual(arr.shape, (2, 28, 28))
        self.assertEqual(int(arr[0, 0, 5]), 5)

    def test_bad_files_name_the_file_and_the_problem(self):
        write_idx(self.path("magic.gz"), 0x801, (2, 28, 28), bytes(2 * 784))
        write_idx(self.path("short.gz"), 0x803, (2, 28, 28), bytes(100))
        with open(self.path("plain.gz"), "wb") as f:
            f.write(b"not gzip at all")
        cases = {"magic.gz": "magic", "short.gz": "data bytes", "plain.gz": "gzip", "missing.gz": "no such file"}
        for name, words in cases.items():
            with self.assertRaises(self.wc.WorkloadError) as ctx:
                self.m.read_idx(self.path(name), 0x803, 3)
            self.assertIn(name, str(ctx.exception))
            self.assertIn(words, str(ctx.exception))

    def test_preprocess_shape_and_normalisation(self):
        raw = torch.full((2, 28, 28), 255, dtype=torch.uint8)
        x = self.m.preprocess(raw, 40)
        self.assertEqual(tuple(x.shape), (2, 3, 40, 40))
        self.assertTrue(torch.allclose(x, torch.full_like(x, (1 - self.m.kMean) / self.m.kStd), atol=1e-5))

    def test_cpu_and_gpu_loaders_give_the_same_batches(self):
        args = self.m.parse_args(["--synthetic", "--image-size", "36", "--batch-size", "8", "--steps", "3",
                                  "--warmup-steps", "1", "--workers", "0", "--no-augment", "--device", "cpu"])
        images = torch.randint(0, 256, (40, 28, 28), dtype=torch.uint8)
        labels = torch.randint(0, 10, (40,))
        d = self.wc.Dist("cpu")
        cpu = list(self.m.CpuLoader(args, images, labels, d).epoch(0))
        gpu = list(self.m.GpuLoader(args, images, labels, d).epoch(0))
        self.assertEqual(len(cpu), 5)
        self.assertEqual(len(gpu), 5)
        for (xc, yc), (xg, yg) in zip(cpu, gpu):
            self.assertTrue(torch.equal(yc, yg))
            self.assertTrue(torch.allclose(xc, xg, atol=1e-5))

    def test_option_validation(self):
        import contextlib
        import io
        with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()) as err:
            self.m.parse_args(["--image-size", "600"])
        self.assertIn("--image-size 600 is outside 32..500", err.getvalue())
        args = self.m.parse_args(["--pin-memory", "--channels-last", "off", "--steps", "20"])
        self.assertTrue(args.pin_memory)
        self.assertFalse(args.channels_last)
        self.assertFalse(args.eval)
        self.assertEqual(args.sample_cpu_us, 0)
        for bad, words in ((["--sample-cpu-us", "-1"], "outside 0..1000000"),
                           (["--sample-cpu-us", "50", "--loader", "gpu"], "needs --loader cpu")):
            with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()) as err:
                self.m.parse_args(bad)
            self.assertIn(words, err.getvalue())

    def test_sample_cpu_cost_is_spent_per_sample(self):
        images = torch.zeros((4, 28, 28), dtype=torch.uint8)
        labels = torch.zeros(4, dtype=torch.long)
        slow = self.m.CpuSampleDataset(images, labels, 32, False, cpu_us=20000)
        fast = self.m.CpuSampleDataset(images, labels, 32, False)
        import time
        t0 = time.perf_counter()
        x_slow, _ = slow[0]
        t1 = time.perf_counter()
        x_fast, _ = fast[0]
        self.assertGreaterEqual(t1 - t0, 0.02)
        self.assertTrue(torch.equal(x_slow, x_fast))  # the same sample, only later


@unittest.skipUnless(kHaveTorch, "torch is not installed")
class EndToEndTest(unittest.TestCase):
    """Each workload runs a few steps on the CPU and prints the expected lines."""

    def run_workload(self, argv, extra_env=None):
        env = dict(os.environ, PYTHONPATH=os.path.join(kHere, "fakes"))
        env.update(extra_env or {})
        proc = subprocess.run([sys.executable] + argv, cwd=kWorkloads, env=env, capture_output=True, text=True,
                              timeout=900)
        return proc

    def test_image_ddp_synthetic(self):
        proc = self.run_workload(["image_ddp.py", "--device", "cpu", "--synthetic", "--image-size", "32",
                                  "--max-train-samples", "96", "--max-test-samples", "50", "--batch-size", "16",
                                  "--steps", "5", "--warmup-steps", "2", "--workers", "1", "--eval",
                                  "--channels-last", "--loader", "gpu"])
        self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
        s = summary(proc.stdout)
        self.assertEqual(s["status"], "success")
        self.assertGreater(float(s["throughput_images_per_s"]), 0)
        self.assertTrue(0.0 <= float(s["test_accuracy"]) <= 1.0)
        self.assertRegex(proc.stdout, r':::MLLOG \{.*"key": "run_start"')
        self.assertRegex(proc.stdout, r':::MLLOG \{.*"key": "run_stop".*"status": "success"')

    def test_image_ddp_two_ranks_gather_every_test_image_once(self):
        # 513 test images: one rank evaluates 257, the other 256 (a different
        # number of batches); the gathered accuracy must count each image once.
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE="2")
        argv = [sys.executable, "image_ddp.py", "--device", "cpu", "--synthetic", "--image-size", "32",
                "--max-train-samples", "128", "--max-test-samples", "513", "--batch-size", "16", "--steps", "3",
                "--warmup-steps", "1", "--workers", "0", "--eval", "--loader", "gpu"]
        procs = [subprocess.Popen(argv, cwd=kWorkloads, env=dict(env, RANK=str(r), LOCAL_RANK=str(r)),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in range(2)]
        try:
            outs = [p.communicate(timeout=900) for p in procs]
        finally:
            for p in procs:  # never leave a hung rank behind
                if p.poll() is None:
                    p.kill()
                    p.wait()
        for p, (_, err) in zip(procs, outs):
            self.assertEqual(p.returncode, 0, err[-3000:])
        s = summary(outs[0][0])
        self.assertEqual(s["world_size"], "2")
        self.assertEqual(s["global_batch"], "32")
        self.assertNotIn("scalescope_result", outs[1][0])  # rank 0 reports for the job

    def test_image_ddp_bad_data_dir_is_one_line(self):
        proc = self.run_workload(["image_ddp.py", "--device", "cpu", "--data-dir", "/nonexistent", "--steps", "3",
                                  "--warmup-steps", "1"])
        self.assertEqual(proc.returncode, 2)
        self.assertEqual(len(proc.stderr.strip().splitlines()), 1, proc.stderr)
        self.assertIn("/nonexistent/train-images-idx3-ubyte.gz", proc.stderr)

    def test_llm_methods(self):
        for method in ("lora", "dpo", "qlora", "qat"):
            with self.subTest(method=method):
                proc = self.run_workload(["llm_finetune.py", "--method", method, "--size", "tiny", "--device", "cpu",
                                          "--lora-impl", "builtin", "--seq-len", "16", "--batch-size", "4",
                                          "--steps", "4", "--warmup-steps", "1"])
                self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
                s = summary(proc.stdout)
                self.assertEqual(s["method"], method)
                self.assertEqual(s["status"], "success")
                total, trainable = int(s["params_total"]), int(s["params_trainable"])
                if method in ("lora", "qlora"):
                    self.assertLess(trainable, total / 5)
                else:
                    self.assertEqual(trainable, total)
                if method == "dpo":
                    self.assertNotEqual(s["preference_accuracy"], "nan")

    def test_llm_bundled_text_and_its_length_check(self):
        base = ["llm_finetune.py", "--method", "dpo", "--size", "tiny", "--device", "cpu", "--data", "text",
                "--batch-size", "2", "--steps", "3", "--warmup-steps", "1"]
        proc = self.run_workload(base + ["--seq-len", "64"])
        self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
        self.assertEqual(summary(proc.stdout)["data"], "text")
        proc = self.run_workload(base + ["--seq-len", "4000"])
        self.assertEqual(proc.returncode, 2)
        self.assertIn("training_notes.txt", proc.stderr)
        self.assertIn("need at least 8001", proc.stderr)


if __name__ == "__main__":
    unittest.main()
