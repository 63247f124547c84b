"""Token generation with a decoder in Hugging Face Optimum's with-past ONNX layout: prefill, then one token
per step with the KV cache fed back, greedy / top-k / top-p sampling, streaming, and a report.

    import sdx
    result = sdx.generate("gpt2.onnx", [464, 3290, 318], max_new_tokens=32)
    result.tokens              # the new token ids
    result.report["hit_rate"]  # decode steps that replayed a captured plan / all decode steps

    for token in sdx.generate_stream("gpt2.onnx", [464, 3290], 16, sampling="top_p", top_p=0.9, seed=0):
        print(token)

The layout (`optimum-cli export onnx --task text-generation-with-past`; scripts/make_gpt2_decoder.py
writes one): inputs input_ids [batch, seq], attention_mask [batch, past+seq], position_ids [batch, seq]
(optional: older exports lack it), past_key_values.N.key / .value [batch, heads, past, head_dim]; outputs
logits [batch, seq, vocab], present.N.key / .value. The prompt runs once with an empty past (prefill); each
decode step feeds one token, a mask of ones and the previous call's present.* as past_key_values.*.

The report: prompt_tokens, new_tokens, prefill_ms, prefill_tokens_per_s, decode_steps, decode_tokens_per_s,
per_token_latency_p50_us / _p90_us (a decode step: the run and the sampling), hit_rate (the CUDA-graphs
article's definition: decode steps that replayed a captured plan / all decode steps, read from each run's
report, `execution_mode == "CPU_REPLAY"`; None for a session without run reports, e.g. onnxruntime's),
replayed_steps, kv_bucket and kv_bucket_check (the KV buckets, below), padding_waste (the mean share of the
key positions fed that were padding), stopped_by ("max_new_tokens" or "eos").

KV buckets (kv_bucket, default 128): decode steps feed the past in buffers of a multiple of kv_bucket slots,
the empty ones masked out by attention_mask (_kv_slots.py), so a step's shapes stay those of the last step
until its bucket fills, and the session replays one captured plan per bucket. The first decode step is run
both ways and the buckets are kept only when the logits agree (a model that masks keys by attention_mask);
otherwise the decode runs at exact shapes and kv_bucket_check says why.

The paged KV cache (kv_cache "auto", the default, for a model given by path whose graph allows it; "paged"
to insist; "contiguous" for the above): the model is loaded in its paged form (_paged_graph.py: the past read
through a slot map from one pool, the attention fused to sdx.PagedAttention), the pool (_kv_pool.py) holds
kv_pages pages of kv_page_size tokens, and the loop (_paged_decode.py) feeds each step the slot map of every
sequence's tokens (padded to a multiple of kv_bucket, so steps replay) and writes the step's new K/V into the
pool: the past is never copied. Reports then add kv_cache, kv_page_size, kv_pages, kv_pages_peak and
kv_bytes_peak, and "refused" (why a sequence was refused: KV pool exhaustion).

Several prompts (generate() given a list of prompts) decode with continuous batching (max_batch, default 8):
one call per step for all active sequences, each joining and leaving between steps (on the paged cache,
prompts with a common prefix of whole pages share those pages; _batch_decode.py on the contiguous one).
"""
from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ._decoder_graph import NEW_KV_PREFIX, with_new_kv_outputs
from ._batch_decode import BatchDecoder
from ._kv_pool import KVPool, KVPoolExhausted
from ._kv_slots import KVSlots
from ._paged_decode import PagedGeneration
from ._paged_graph import OriginalIO, paged_decoder, paged_info
from ._sdx import InvalidArgument

SAMPLINGS = ("greedy", "top_k", "top_p")
DEFAULT_KV_BUCKET = 128
KV_CACHES = ("auto", "paged", "contiguous")
DEFAULT_PAGE_SIZE = 16


def _check_kv(kv_cache: Any, kv_pages: Any, kv_page_size: Any) -> None:
    if kv_cache not in KV_CACHES:
        raise InvalidArgument(f"kv_cache must be one of {', '.join(KV_CACHES)}, not {kv_cache!r}")
    for name, v in (("kv_pages", kv_pages), ("kv_page_size", kv_page_size)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1):
            raise InvalidArgument(f"{name} must be a whole number >= 1, not {v!r}")


def _check_bucket(kv_bucket: Any) -> int | None:
    if kv_bucket is None or kv_bucket == 0:
        return None
    if isinstance(kv_bucket, bool) or not isinstance(kv_bucket, (int, np.integer)) or kv_bucket < 1:
        raise InvalidArgument(f"kv_bucket must be a whole number >= 1 (or None: exact shapes), not {kv_bucket!r}")
    return int(kv_bucket)
_PAST = re.compile(r"past_key_values\.(\d+)\.(key|value)$")


@dataclass
class GenerationResult:
    """One prompt's outcome: the prompt, the new tokens (the prompt not included) and the report."""
    prompt: list
    tokens: list
    report: dict = field(default_factory=dict)


class DecoderLayout:
    """What generate() needs to know of a with-past decoder session: its layer count, KV shape and dtype,
    vocabulary size and whether it takes position_ids. Raises InvalidArgument naming what is missing."""

    def __init__(self, sess: Any, model_path: str | None = None) -> None:
        inputs = {a.name: a for a in sess.get_inputs()}
        outputs = {a.name: a for a in sess.get_outputs()}
        where = f"model '{model_path}'" if model_path else "the model"
        for name in ("input_ids", "attention_mask"):
            if name not in inputs:
                raise InvalidArgument(f"{where} is not a decoder in the with-past layout: it has no input '{name}' "
                                      f"(its inputs: {', '.join(list(inputs)[:8])})")
        layers = sorted({int(m.group(1)) for n in inputs if (m := _PAST.match(n))})
        if not layers:
            raise InvalidArgument(f"{where} is not a decoder in the with-past layout: it has no input "
                                  "'past_key_values.0.key' (export with --task text-generation-with-past)")
        self.layers = len(layers)
        wanted_in = [f"past_key_values.{i}.{k}" for i in range(self.layers) for k in ("key", "value")]
        wanted_out = ["logits"] + [f"present.{i}.{k}" for i in range(self.layers) for k in ("key", "value")]
        for name in wanted_in:
            if name not in inputs:
                raise InvalidArgument(f"{where} is not a decoder in the with-past layout: it has no input '{name}'")
        for name in wanted_out:
            if name not in outputs:
                raise InvalidArgument(f"{where} is not a decoder in the with-past layout: it has no output '{name}'")
        extra = [n for n in inputs if n not in wanted_in and n not in ("input_ids", "attention_mask", "position_ids")]
        if extra:
            raise InvalidArgument(f"{where} has input '{extra[0]}', which the with-past layout does not have "
                                  "(a merged decoder's use_cache_branch is not supported yet)")
        self.has_position_ids = "position_ids" in inputs
        self.bucket_output_names: list | None = None  # logits and each step's new K/V (_decoder_graph.py)
        self.paged = None  # the PagedGraph of a paged decoder's session (_paged_graph.py), set by _prepare
        kv = inputs["past_key_values.0.key"]
        if len(kv.shape) != 4 or not all(isinstance(d, int) for d in (kv.shape[1], kv.shape[3])):
            raise InvalidArgument(f"{where}: past_key_values.0.key has shape {kv.shape}; expected [batch, heads, "
                                  "past, head_dim] with heads and head_dim fixed")
        self.heads, self.head_dim = kv.shape[1], kv.shape[3]
        self.kv_dtype = np.float16 if kv.type == "tensor(float16)" else np.float32
        self.output_names = wanted_out
        self.past_names = wanted_in
        vocab = outputs["logits"].shape[-1] if outputs["logits"].shape else None
        self.vocab = vocab if isinstance(vocab, int) else _vocab_from_file(model_path)

    def empty_past(self) -> list:
        return [np.zeros((1, self.heads, 0, self.head_dim), self.kv_dtype)] * (2 * self.layers)

    def prefill_feeds(self, prompt: list) -> dict:
        """The feeds of a prompt's prefill: the whole prompt, a mask of ones, an empty past."""
        feeds = {"input_ids": np.asarray([prompt], np.int64), "attention_mask": np.ones((1, len(prompt)), np.int64)}
        if self.has_position_ids:
            feeds["position_ids"] = np.arange(len(prompt), dtype=np.int64)[None]
        feeds.update(zip(self.past_names, self.empty_past()))
        return feeds


def _vocab_from_file(path: str | None) -> int | None:
    """The row count of the embedding input_ids gathers from, when the logits' vocab dim is symbolic."""
    if not path:
        return None
    try:
        import onnx
    except ImportError:
        return None
    g = onnx.load(path, load_external_data=False).graph
    inits = {t.name: t for t in g.initializer}
    for node in g.node:
        if node.op_type == "Gather" and len(node.input) == 2 and node.input[1] == "input_ids" and node.input[0] in inits:
            return int(inits[node.input[0]].dims[0])
    return None


class Sampler:
    """Chooses the next token from one row of logits: greedy (argmax), top_k (sample among the k largest)
    or top_p (sample among the smallest set whose probability reaches p, after an optional top_k), at
    `temperature`, with a seeded numpy Generator. Raises InvalidArgument for bad parameters."""

    def __init__(self, sampling: str = "greedy", top_k: int | None = None, top_p: float | None = None,
                 temperature: float = 1.0, seed: int | None = None) -> None:
        if sampling not in SAMPLINGS:
            raise InvalidArgument(f"sampling '{sampling}' is not one of {', '.join(SAMPLINGS)}")
        if sampling == "greedy" and (top_k is not None or top_p is not None):
            raise InvalidArgument("top_k and top_p apply to sampling='top_k' or 'top_p', not to greedy decoding")
        if sampling == "top_k" and top_k is None:
            raise InvalidArgument("sampling='top_k' needs top_k (a whole number >= 1)")
        if sampling == "top_k" and top_p is not None:
            raise InvalidArgument("sampling='top_k' takes no top_p (use sampling='top_p', which also takes top_k)")
        if sampling == "top_p" and top_p is None:
            raise InvalidArgument("sampling='top_p' needs top_p in (0, 1]")
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1):
            raise InvalidArgument(f"top_k must be a whole number >= 1, not {top_k!r}")
        if top_p is not None and not (isinstance(top_p, (int, float)) and 0.0 < top_p <= 1.0):
            raise InvalidArgument(f"top_p must be in (0, 1], not {top_p!r}")
        if not (isinstance(temperature, (int, float)) and np.isfinite(temperature) and temperature > 0):
            raise InvalidArgument(f"temperature must be a finite number > 0, not {temperature!r}")
        self.sampling, self.top_k, self.top_p, self.temperature = sampling, top_k, top_p, float(temperature)
        self.rng = np.random.default_rng(seed)

    def allowed(self, logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The candidate token ids and their probabilities (summing to 1) for one row of logits."""
        x = logits.astype(np.float64) / self.temperature
        order = np.argsort(-x, kind="stable")
        if self.top_k is not None:
            order = order[:self.top_k]
        p = np.exp(x[order] - x[order[0]])
        p /= p.sum()
        if self.top_p is not None:
            keep = int(np.searchsorted(np.cumsum(p), self.top_p, side="left")) + 1  # the token reaching p is in
            order, p = order[:keep], p[:keep] / p[:keep].sum()
        return order, p

    def __call__(self, logits: np.ndarray) -> int:
        if self.sampling == "greedy":
            return int(np.argmax(logits))
        ids, p = self.allowed(logits)
        return int(ids[self.rng.choice(len(ids), p=p)])


def _session(model: Any, sess_options: Any, new_kv: bool = False,
             kv_cache: str = "contiguous") -> tuple[Any, str | None, dict | None]:
    """(session, model path or None, {present name: new-K/V output name} or None). kv_cache "auto" or "paged":
    a model given by path is loaded in its paged form (_paged_graph.py) when its graph allows ("paged": an
    error otherwise). Else, with new_kv, it is loaded with each step's new K/V as extra outputs
    (_decoder_graph.py) when its graph allows."""
    if isinstance(model, (str, os.PathLike)):
        from ._session import InferenceSession

        path = os.fspath(model)
        if kv_cache != "contiguous":
            graph = paged_decoder(path)
            if graph is not None:
                return InferenceSession(graph.model, sess_options), path, None
            if kv_cache == "paged":
                raise InvalidArgument(f"model '{path}' cannot run on a paged KV cache: each past_key_values.N input "
                                      "must be read only by Concat(past, new) on axis 2 and by Shape -> Gather "
                                      "(use kv_cache='contiguous')")
        edited = with_new_kv_outputs(path) if new_kv else None
        if edited is not None:
            return InferenceSession(edited[0], sess_options), path, dict(zip(edited[1], edited[2]))
        return InferenceSession(path, sess_options), path, None
    if not (hasattr(model, "get_inputs") and hasattr(model, "run")):
        raise InvalidArgument(f"model must be a model path or an InferenceSession, not {type(model).__name__}")
    names = {o.name for o in model.get_outputs()} if hasattr(model, "get_outputs") else set()
    new = {n[len(NEW_KV_PREFIX):]: n for n in names if n.startswith(NEW_KV_PREFIX)}  # a session check_request made
    return model, getattr(model, "_model_path", None), (new or None) if new_kv else None


def _check_prompt(prompt: Any, layout: DecoderLayout, index: int) -> list:
    try:
        ids = [int(t) for t in prompt]
        if any(int(t) != t for t in prompt):
            raise ValueError
    except (TypeError, ValueError):
        raise InvalidArgument(f"prompt {index} is not a list of whole-number token ids: {prompt!r}") from None
    if not ids:
        raise InvalidArgument(f"prompt {index} is empty: generation needs at least one prompt token")
    for pos, t in enumerate(ids):
        if t < 0 or (layout.vocab is not None and t >= layout.vocab):
            vocab = f"the model's vocabulary has {layout.vocab} tokens (ids 0..{layout.vocab - 1})" \
                if layout.vocab is not None else "token ids are >= 0"
            raise InvalidArgument(f"token id {t} at position {pos} of prompt {index} is out of range: {vocab}")
    return ids


def _exact_feeds(layout: DecoderLayout, token: int, total: int, presents: list) -> dict:
    """One decode step's feeds at exact shapes: the past is the previous step's present.*."""
    feeds = {"input_ids": np.asarray([[token]], np.int64), "attention_mask": np.ones((1, total), np.int64)}
    if layout.has_position_ids:
        feeds["position_ids"] = np.asarray([[total - 1]], np.int64)
    feeds.update(zip(layout.past_names, presents))
    return feeds


def _bucket_feeds(layout: DecoderLayout, token: int, slots: KVSlots) -> dict:
    feeds = {"input_ids": np.asarray([[token]], np.int64), "attention_mask": slots.mask()}
    if layout.has_position_ids:
        feeds["position_ids"] = np.asarray([[slots.length]], np.int64)
    feeds.update(zip(layout.past_names, slots.buffers))
    return feeds


def _bucket_check(sess: Any, layout: DecoderLayout, exact: dict, bucketed: dict) -> tuple[bool, str]:
    """Runs one step both ways: the buckets are kept when the logits agree (same argmax, within 1e-4 of the
    largest magnitude), which holds when the model masks keys by attention_mask."""
    a = sess.run(["logits"], exact)[0][0, -1].astype(np.float64)
    b = sess.run(["logits"], bucketed)[0][0, -1].astype(np.float64)
    diff = float(np.max(np.abs(a - b)))
    scale = max(1.0, float(np.max(np.abs(a))))
    if int(np.argmax(a)) == int(np.argmax(b)) and diff <= 1e-4 * scale:
        return True, f"passed: logits within {diff:.3g} of the exact-shape step's"
    return False, (f"failed: the padded step's logits differ from the exact-shape step's by up to {diff:.3g} "
                   "(the model does not mask padded keys by attention_mask?); exact shapes used")


def _steps(sess: Any, layout: DecoderLayout, prompt: list, max_new_tokens: int, sampler: Sampler,
           eos_token_id: int | None, report: dict, kv_bucket: int | None = None) -> Iterator[int]:
    """Yields the new tokens one by one, filling `report` as it goes (complete when the generator ends)."""
    with_report = hasattr(sess, "run_with_report")
    feeds = layout.prefill_feeds(prompt)
    latencies, replayed, stopped_by, t_decode = [], 0, "max_new_tokens", 0.0
    slots: KVSlots | None = None
    wastes: list = []
    report["kv_bucket"], report["kv_bucket_check"] = kv_bucket, None
    for step in range(max_new_tokens):
        t0 = time.perf_counter()
        names = layout.bucket_output_names if slots is not None and layout.bucket_output_names else layout.output_names
        if with_report:
            outs, run_report = sess.run_with_report(names, feeds)
        else:
            outs, run_report = sess.run(names, feeds), None
        if slots is not None:
            slots.append(outs[1:])
        token = sampler(outs[0][0, -1])
        dt = time.perf_counter() - t0
        if step == 0:
            report["prefill_ms"] = dt * 1e3
        else:
            latencies.append(dt)
            t_decode += dt
            replayed += bool(run_report and run_report.get("execution_mode") == "CPU_REPLAY")
        yield token
        if eos_token_id is not None and token == eos_token_id:
            stopped_by = "eos"
            break
        if step + 1 == max_new_tokens:
            break
        if step == 0 and kv_bucket:
            candidate = KVSlots.from_prefill(outs[1:], kv_bucket)
            exact = _exact_feeds(layout, token, len(prompt) + 1, outs[1:])
            ok, report["kv_bucket_check"] = _bucket_check(sess, layout, exact, _bucket_feeds(layout, token, candidate))
            slots = candidate if ok else None
        if slots is not None:
            wastes.append(slots.waste())
            feeds = _bucket_feeds(layout, token, slots)
        else:
            feeds = _exact_feeds(layout, token, feeds["attention_mask"].shape[1] + 1, outs[1:])
    lat_us = np.asarray(latencies) * 1e6
    report.update({
        "prompt_tokens": len(prompt), "new_tokens": step + 1,
        "prefill_tokens_per_s": len(prompt) / (report["prefill_ms"] / 1e3),
        "decode_steps": len(latencies), "decode_tokens_per_s": len(latencies) / t_decode if t_decode else None,
        "per_token_latency_p50_us": float(np.percentile(lat_us, 50)) if latencies else None,
        "per_token_latency_p90_us": float(np.percentile(lat_us, 90)) if latencies else None,
        "replayed_steps": replayed if with_report else None,
        "hit_rate": (replayed / len(latencies) if latencies else None) if with_report else None,
        "padding_waste": float(np.mean(wastes)) if wastes else 0.0,
        "stopped_by": stopped_by})


def _prepare(model: Any, max_new_tokens: Any, sampling: str, top_k: Any, top_p: Any, temperature: Any, seed: Any,
             sess_options: Any, kv_bucket: int | None = None, kv_cache: str = "auto") -> tuple:
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, (int, np.integer)) or max_new_tokens < 1:
        raise InvalidArgument(f"max_new_tokens must be a whole number >= 1, not {max_new_tokens!r}")
    sampler = Sampler(sampling, top_k, top_p, temperature, seed)
    sess, path, new_kv = _session(model, sess_options, new_kv=kv_bucket is not None, kv_cache=kv_cache)
    paged = paged_info(sess)
    if paged is None and kv_cache == "paged":
        raise InvalidArgument("kv_cache='paged' needs a model path or a session of a paged decoder; this session "
                              "takes past_key_values inputs (use kv_cache='contiguous')")
    if paged is not None and kv_cache == "contiguous":
        raise InvalidArgument("this session is a paged decoder's (it takes sdx_slot_map): kv_cache='contiguous' "
                              "needs the model as exported")
    layout = DecoderLayout(OriginalIO(sess) if paged else sess, path)
    layout.paged = paged
    if new_kv is not None:  # decode steps with buckets copy out the new K/V only, not the whole present.*
        layout.bucket_output_names = ["logits"] + [new_kv[n] for n in layout.output_names[1:]]
    return sess, layout, sampler


def check_request(model: Any, prompts: Sequence[Sequence[int]], max_new_tokens: int, *, sampling: str = "greedy",
                  top_k: int | None = None, top_p: float | None = None, temperature: float = 1.0,
                  seed: int | None = None, sess_options: Any = None, kv_bucket: int | None = DEFAULT_KV_BUCKET,
                  kv_cache: str = "auto") -> Any:
    """Checks a request before any token is decoded (the model's layout, every prompt's token ids, the
    sampling parameters) and returns the session to run it on; raises InvalidArgument as generate() does."""
    _check_kv(kv_cache, None, None)
    sess, layout, _ = _prepare(model, max_new_tokens, sampling, top_k, top_p, temperature, seed, sess_options,
                               _check_bucket(kv_bucket), kv_cache)
    for i, p in enumerate(prompts):
        _check_prompt(p, layout, i)
    return sess


def generate_stream(model: Any, prompt_ids: Sequence[int], max_new_tokens: int, *, sampling: str = "greedy",
                    top_k: int | None = None, top_p: float | None = None, temperature: float = 1.0,
                    seed: int | None = None, eos_token_id: int | None = None, sess_options: Any = None,
                    report: dict | None = None, kv_bucket: int | None = DEFAULT_KV_BUCKET, kv_cache: str = "auto",
                    kv_pages: int | None = None, kv_page_size: int = DEFAULT_PAGE_SIZE,
                    packed_prefill: bool = True) -> Iterator[int]:
    """Yields the new token ids of one prompt as they are decoded. Pass a dict as `report` to receive the
    report (filled when the generator is exhausted). Arguments as generate()."""
    bucket = _check_bucket(kv_bucket)
    _check_kv(kv_cache, kv_pages, kv_page_size)
    sess, layout, sampler = _prepare(model, max_new_tokens, sampling, top_k, top_p, temperature, seed, sess_options,
                                     bucket, kv_cache)
    prompt = _check_prompt(prompt_ids, layout, 0)
    if layout.paged is not None:
        return _paged_stream(sess, layout, prompt, int(max_new_tokens), sampler, eos_token_id,
                             {} if report is None else report, bucket, kv_pages, kv_page_size, bool(packed_prefill))
    return _steps(sess, layout, prompt, int(max_new_tokens), sampler, eos_token_id, {} if report is None else report,
                  bucket)


def _check_max_batch(max_batch: Any) -> int:
    if isinstance(max_batch, bool) or not isinstance(max_batch, (int, np.integer)) or max_batch < 1:
        raise InvalidArgument(f"max_batch must be a whole number >= 1, not {max_batch!r}")
    return int(max_batch)


def _buckets_hold(sess: Any, layout: DecoderLayout, prompt: list, bucket: int) -> tuple[bool, str]:
    """The KV-bucket check of _steps on `prompt`'s first decode step (greedy token), before a batch starts:
    padded and masked keys must give the exact-shape logits for rows to be padded at all."""
    feeds = layout.prefill_feeds(prompt)
    outs = sess.run(layout.output_names, feeds)
    token = int(np.argmax(outs[0][0, -1]))
    exact = _exact_feeds(layout, token, len(prompt) + 1, outs[1:])
    return _bucket_check(sess, layout, exact, _bucket_feeds(layout, token, KVSlots.from_prefill(outs[1:], bucket)))


def _check_counts(max_new_tokens: Any, prompts: int, many: bool) -> list:
    """max_new_tokens per prompt: one whole number >= 1 for all, or (several prompts) one per prompt."""
    if many and isinstance(max_new_tokens, (list, tuple)):
        if len(max_new_tokens) != prompts:
            raise InvalidArgument(f"max_new_tokens has {len(max_new_tokens)} entries for {prompts} prompts "
                                  "(give one number for all, or one per prompt)")
        for i, n in enumerate(max_new_tokens):
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
                raise InvalidArgument(f"max_new_tokens[{i}] must be a whole number >= 1, not {n!r}")
        return [int(n) for n in max_new_tokens]
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, (int, np.integer)) or max_new_tokens < 1:
        raise InvalidArgument(f"max_new_tokens must be a whole number >= 1, not {max_new_tokens!r}")
    return [int(max_new_tokens)] * prompts


def _generate_batched(sess: Any, layout: DecoderLayout, prompts: list, counts: list, make_sampler: Callable,
                      eos_token_id: int | None, stream: Callable | None, max_batch: int, bucket: int,
                      check: str) -> list:
    """generate() for several prompts with continuous batching (_batch_decode.py)."""
    batch = BatchDecoder(sess, layout, max_batch, bucket)
    tokens: list = [[] for _ in prompts]
    for seq, token in batch.run(prompts, [make_sampler() for _ in prompts], eos_token_id, counts):
        tokens[seq].append(token)
        if stream is not None:
            stream(token)
    results = []
    for prompt, toks in zip(prompts, tokens):
        stopped = "eos" if eos_token_id is not None and toks and toks[-1] == eos_token_id else "max_new_tokens"
        report = {"prompt_tokens": len(prompt), "new_tokens": len(toks), "stopped_by": stopped,
                  "kv_bucket": bucket, "kv_bucket_check": check, "continuous_batching": "on",
                  "batch": batch.report}
        results.append(GenerationResult(prompt, toks, report))
    return results


def _paged(sess: Any, layout: DecoderLayout, prompts: list, counts: list, max_batch: int, bucket: int | None,
           kv_pages: int | None, page_size: int) -> PagedGeneration:
    """The paged decode loop for these prompts; kv_pages by default: room for max_batch sequences of the
    longest request."""
    g = layout.paged
    exact = kv_pages is not None
    if kv_pages is None:
        longest = max(len(p) + c for p, c in zip(prompts, counts))
        need = min(max_batch, len(prompts)) * -(-(longest + 1) // page_size)
        kv_pages = 1 << (need - 1).bit_length()  # a power of two: few pool shapes, so plans replay across requests
    # The session keeps its last pool: the next request that fits reuses it (same address and shape: the engine
    # reads it in place and the plans replay). One request at a time uses it; a concurrent one gets its own.
    cached = getattr(sess, "_sdx_kv_pool", None)
    lock = getattr(sess, "_sdx_kv_pool_lock", None)
    if cached is not None and lock is not None and cached.fits(len(g.cache_names), g.heads, g.head_dim, page_size,
                                                               layout.kv_dtype) and \
            (cached.pages == kv_pages if exact else cached.pages >= kv_pages) and lock.acquire(blocking=False):
        cached.reset()
        pool = cached
    else:
        pool = KVPool(len(g.cache_names), g.heads, g.head_dim, kv_pages, page_size, layout.kv_dtype)
        lock = threading.Lock()
        lock.acquire()
        try:
            sess._sdx_kv_pool, sess._sdx_kv_pool_lock = pool, lock
        except AttributeError:  # a session that takes no attributes: no reuse
            pass
    gen = PagedGeneration(sess, g, layout, max_batch, bucket, pool)
    gen.release = lock.release
    return gen


def _padding_checked(gen: PagedGeneration, prompt: list) -> tuple[bool, str]:
    """PagedGeneration.check_padding, once per session and bucket: whether the model masks padded keys (and
    takes packed prompts) is a property of the model, so later requests on the session reuse the first one's
    outcome (gen.packed set from it)."""
    key = ("_sdx_padding_check", gen.bucket)
    cached = getattr(gen.sess, "_sdx_padding_checks", {}).get(key)
    if cached is not None:
        gen.packed = cached[2]
        return cached[0], cached[1] + " (on an earlier request of this session)"
    ok, check = gen.check_padding(prompt)
    try:
        gen.sess._sdx_padding_checks = {**getattr(gen.sess, "_sdx_padding_checks", {}), key: (ok, check, gen.packed)}
    except AttributeError:
        pass
    return ok, check


def _paged_stream(sess: Any, layout: DecoderLayout, prompt: list, count: int, sampler: Sampler,
                  eos_token_id: int | None, report: dict, bucket: int | None, kv_pages: int | None,
                  page_size: int, packed: bool) -> Iterator[int]:
    """One prompt on the paged cache, its tokens as they come; `report` filled at the end."""
    gen = _paged(sess, layout, [prompt], [count], 1, bucket, kv_pages, page_size)
    check = None
    if bucket is not None:
        try:
            ok, check = _padding_checked(gen, prompt)
        except BaseException:
            gen.release()
            raise
        gen.bucket = bucket if ok else None
    gen.packed = gen.packed and packed
    tokens = []
    try:
        for _, token in gen.run([prompt], [sampler], eos_token_id, [count]):
            tokens.append(token)
            yield token
    finally:
        gen.release()
    if gen.outcomes[0] is not None:
        raise KVPoolExhausted(gen.outcomes[0][len("refused: "):])
    report.update(gen.sequence_report(0, prompt, tokens, eos_token_id))
    report["kv_bucket"], report["kv_bucket_check"] = gen.bucket, check


def _generate_paged(sess: Any, layout: DecoderLayout, prompts: list, counts: list, make_sampler: Callable,
                    eos_token_id: int | None, stream: Callable | None, max_batch: int, bucket: int | None,
                    kv_pages: int | None, page_size: int, many: bool, packed: bool) -> Any:
    """generate() on the paged cache (_paged_decode.py): continuous batching for several prompts."""
    gen = _paged(sess, layout, prompts, counts, max_batch, bucket, kv_pages, page_size)
    try:
        return _run_paged(gen, prompts, counts, make_sampler, eos_token_id, stream, max_batch, bucket, many, packed)
    finally:
        gen.release()


def _run_paged(gen: PagedGeneration, prompts: list, counts: list, make_sampler: Callable, eos_token_id: int | None,
               stream: Callable | None, max_batch: int, bucket: int | None, many: bool, packed: bool) -> Any:
    check = None
    if bucket is not None:
        ok, check = _padding_checked(gen, prompts[0])
        gen.bucket = bucket if ok else None
    gen.packed = gen.packed and packed
    batching = "off: one prompt" if len(prompts) < 2 else "off: max_batch is 1" if max_batch < 2 else \
        "off: kv_bucket is off (batching pads rows and keys)" if bucket is None else \
        "off: the KV bucket check " + check if gen.bucket is None else "on"
    if batching != "on":
        gen.max_batch, gen.buckets = 1, [1]
    tokens: list = [[] for _ in prompts]
    for seq, token in gen.run(prompts, [make_sampler() for _ in prompts], eos_token_id, counts):
        tokens[seq].append(token)
        if stream is not None:
            stream(token)
    if not many and gen.outcomes[0] is not None:
        raise KVPoolExhausted(gen.outcomes[0][len("refused: "):])
    results = []
    for i, (prompt, toks) in enumerate(zip(prompts, tokens)):
        report = gen.sequence_report(i, prompt, toks, eos_token_id)
        report.update({"kv_bucket": gen.bucket, "kv_bucket_check": check, "continuous_batching": batching})
        if batching == "on":
            report["batch"] = gen.report
        results.append(GenerationResult(prompt, toks, report))
    return results if many else results[0]


def generate(model: Any, prompt_ids: Sequence[int] | Sequence[Sequence[int]], max_new_tokens: int | Sequence[int], *,
             sampling: str = "greedy", top_k: int | None = None, top_p: float | None = None,
             temperature: float = 1.0, seed: int | None = None, eos_token_id: int | None = None,
             sess_options: Any = None, stream: Callable[[int], Any] | None = None,
             kv_bucket: int | None = DEFAULT_KV_BUCKET, max_batch: int = 8, kv_cache: str = "auto",
             kv_pages: int | None = None, kv_page_size: int = DEFAULT_PAGE_SIZE, packed_prefill: bool = True) -> Any:
    """Decodes up to max_new_tokens tokens after prompt_ids (a list of token ids; or a list of such lists,
    which decode together with continuous batching, up to max_batch at a time).

    model: a model path or an InferenceSession (sdx's, or any with get_inputs/get_outputs/run). sampling:
    "greedy", "top_k" (needs top_k) or "top_p" (needs top_p in (0, 1], takes an optional top_k); temperature
    > 0 divides the logits before sampling; seed seeds the numpy Generator (one per prompt, the same seed).
    max_new_tokens: one number for every prompt, or (several prompts) a list with one per prompt. eos_token_id
    stops a prompt early. stream(token) is called with each new token as it is decoded.
    kv_bucket (default 128; None or 0: off): decode steps feed the KV cache in buffers of a multiple of this
    many slots, padded and masked (_kv_slots.py), so steps keep their shapes and replay one plan per bucket;
    checked on the first step against the exact-shape step (report["kv_bucket_check"]), exact shapes
    otherwise.

    kv_cache: "auto" (default: paged when the model is given by path and its graph allows), "paged" (an error
    otherwise) or "contiguous" (the past fed back as tensors). kv_pages: the paged pool's size in pages (default:
    room for max_batch sequences of the longest request); kv_page_size: tokens per page (default 16). A
    sequence that needs a page when none is free is refused (report["refused"], stopped_by
    "kv_pool_exhausted") and the others go on; a single prompt raises sdx.ResourceExhausted.
    packed_prefill (default True; paged cache with kv_bucket): a prompt's tokens are rows of the model call
    that also holds the running sequences' decode tokens, calls bucketed by their token count, so prefills
    replay whatever the prompt lengths (checked once per session against the prompt run alone; report
    ["kv_bucket_check"]); False: each prompt runs alone at its exact length.

    max_batch (default 8): several prompts decode as one batch of up to max_batch sequences, one model call per
    step for all of them; a sequence joins when a row is free and leaves when it ends (_batch_decode.py). Each
    result's report then holds the batch's report under "batch" (tokens/s, hit_rate, batch_occupancy,
    padding_waste). Batching pads rows and keys, so it needs kv_bucket and the bucket check (on the first
    prompt); without them, or with max_batch 1, the prompts run one after another
    (report["continuous_batching"] says why). Sampled tokens are those of the sequential decode: each
    sequence has its own sampler, seeded with `seed`.

    Returns a GenerationResult (a list of them for several prompts). Raises sdx.InvalidArgument for a model
    not in the layout (naming the missing input), a token id out of range, or bad sampling parameters."""
    many = len(prompt_ids) > 0 and not isinstance(prompt_ids[0], (int, np.integer))
    prompts = list(prompt_ids) if many else [prompt_ids]
    bucket = _check_bucket(kv_bucket)
    max_batch = _check_max_batch(max_batch)
    _check_kv(kv_cache, kv_pages, kv_page_size)
    counts = _check_counts(max_new_tokens, len(prompts), many)
    sess, layout, _ = _prepare(model, max(counts), sampling, top_k, top_p, temperature, seed, sess_options, bucket,
                               kv_cache)
    checked = [_check_prompt(p, layout, i) for i, p in enumerate(prompts)]
    if layout.paged is not None:
        make = lambda: Sampler(sampling, top_k, top_p, temperature, seed)  # noqa: E731
        return _generate_paged(sess, layout, checked, counts, make, eos_token_id, stream, max_batch, bucket, kv_pages,
                               int(kv_page_size), many, bool(packed_prefill))
    batching = "off: one prompt" if len(checked) < 2 else "off: max_batch is 1" if max_batch < 2 else \
        "off: kv_bucket is off (batching pads rows and keys)" if bucket is None else None
    if batching is None:
        ok, check = _buckets_hold(sess, layout, checked[0], bucket)
        if ok:
            make = lambda: Sampler(sampling, top_k, top_p, temperature, seed)  # noqa: E731
            return _generate_batched(sess, layout, checked, counts, make, eos_token_id, stream, max_batch, bucket,
                                     check)
        batching = "off: the KV bucket check " + check
    results = []
    for prompt, count in zip(checked, counts):
        report: dict = {}
        sampler = Sampler(sampling, top_k, top_p, temperature, seed)
        tokens = []
        for token in _steps(sess, layout, prompt, count, sampler, eos_token_id, report, bucket):
            tokens.append(token)
            if stream is not None:
                stream(token)
        report["continuous_batching"] = batching
        results.append(GenerationResult(prompt, tokens, report))
    return results if many else results[0]
