"""``side train verifier``: fine-tune the cross-encoder on this machine, seeded and resumable.

It must finish on a 2-core CPU within the time budget, so: the word embeddings are frozen (they
are also not shipped, see :mod:`side.verify.crossencoder`), sequences are short (evidence is picked
first, so the passage is a sentence or two), batches are length-bucketed, and training stops
cleanly at ``max_minutes``. A checkpoint is written every ``checkpoint_every`` steps; ``resume``
continues from it, so a longer CPU training can span several runs. The matrix products run under
bf16 autocast on a GPU and on CPUs that multiply bf16 natively (AMX / AVX512-BF16), two to three
times the pairs per second of fp32 on two cores: there the shipped model's full recipe
(``FULL_RECIPE``) fits the budget and is the default; other CPUs get a cut one
(``FP32_CPU_RECIPE``).

Loss: cross-entropy over SUPPORTS / REFUTES / NOT ENOUGH INFO; for binary "not supported"
labels, the negative log of P(REFUTES) + P(NOT ENOUGH INFO); plus Side's ranking term, a margin
between the support logit of evidence and of the retrieved non-evidence in the same group.
"""

from __future__ import annotations

import json
import logging
import math
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from side.data import read_json_object
from side.errors import InputError
from side.training.chunked import chunked_examples
from side.training.contrastive import contrastive_examples
from side.training.feedback import read_feedback
from side.training.shortcut import MAX_PROBE_AUROC, ProbeReport, filter_shortcuts, probe_examples
from side.training.trainset import LABEL_IDS, Example, build_examples, feedback_examples, units
from side.verify.chunks import CHUNK_WORDS
from side.verify.crossencoder import (
    BACKBONES,
    DEFAULT_BACKBONE,
    DEFAULT_MODEL_DIR,
    META_FILE,
    PARTIAL,
    WEIGHTS_FILE,
    Pair,
    PairEncoder,
    build_model,
    collate,
    load_tokenizer,
    load_trained_weights,
    trainable_state,
)
from side.verify.precision import autocast_dtype

__all__ = [
    "FULL_RECIPE", "FP32_CPU_RECIPE", "default_recipe", "TrainSettings", "make_batches", "batch_loss",
    "freeze", "require_no_shortcut", "save_model", "train_verifier", "training_examples",
]

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)


#: The shipped model's recipe (model card). Where bf16 runs natively (a GPU, or a CPU with AMX /
#: AVX512-BF16, as on some of this project's 2-core machines) the whole command takes under an
#: hour on two cores, so it is the default there.
FULL_RECIPE = {"epochs": 2.0, "batch_size": 64, "freeze_layers": 0, "negatives": 4, "in_domain_repeat": 3}
#: A CPU that runs fp32 is about 3x slower: this cut fits its 90-minute budget instead.
FP32_CPU_RECIPE = {"epochs": 1.0, "batch_size": 16, "freeze_layers": 2, "negatives": 2, "in_domain_repeat": 1}


def default_recipe(device: str = "auto") -> dict:
    """The recipe ``side train verifier`` uses on ``device`` for the options it is not given."""
    from side.retrieval.encoder import pick_device

    return FULL_RECIPE if autocast_dtype(pick_device(device)) is not None else FP32_CPU_RECIPE


@dataclass
class TrainSettings:
    data_dir: Path
    out_dir: Path = DEFAULT_MODEL_DIR
    work_dir: Path = Path("var/train")
    seed: int = 13
    max_length: int = 128
    batch_size: int = 64
    lr: float = 5e-5
    epochs: float = 2.0
    #: Fine-tuning budget: with the combiner fit and dev thresholds that follow (6 minutes on 2
    #: CPU cores in bf16, 15–19 in fp32), ``side train verifier`` stays within its 90 minutes.
    max_minutes: float = 70.0
    max_steps: int = 0
    warmup: float = 0.06
    rank_margin: float = 1.0
    rank_weight: float = 0.5
    checkpoint_every: int = 200
    resume: bool = False
    device: str = "auto"
    threads: int = 0
    #: Lower transformer layers kept frozen (FP32_CPU_RECIPE: 2, which halves the backward pass).
    freeze_layers: int = 0
    #: Same-source hard negatives per WiCE / SciFact evidence.
    negatives: int = 4
    #: Copies of the in-domain (WiCE, SciFact) examples per epoch.
    in_domain_repeat: int = 3
    #: A ``side-feedback export`` whose reviews are added as training pairs (None: none).
    feedback: Path | None = None
    #: The backbone the cross-encoder starts from (side.verify.crossencoder.BACKBONES).
    base: str = DEFAULT_BACKBONE
    #: A trained verifier directory (Side's format) whose weights training starts from instead of
    #: the backbone's new head: a second stage on top of a model already trained (None: none).
    init: Path | None = None
    #: Premises per file joined into compound claims with an unsupported part
    #: (side.training.trainset.joined_examples; 0: none).
    joined: int = 0
    #: Also train WiCE sub-claims without their unsupported words as supported by their gold sentences.
    supported_parts: bool = False
    #: Contrastive and document-level sets added to the pairs (side.training.contrastive.CONTRASTIVE_SETS).
    contrastive: tuple[str, ...] = ()
    #: Drop the pairs a query-only probe tells most easily before training (side.training.shortcut).
    shortcut_filter: bool = False
    #: Train even when a shortcut probe scores above side.training.shortcut.MAX_PROBE_AUROC.
    allow_shortcuts: bool = False
    #: The chunk recipe (side.training.chunked): claims against chunks of consecutive sentences,
    #: a fourth PARTIAL output, and the verifier then judges chunks (``premise`` "chunk").
    chunks: bool = False
    #: Words per chunk (side.verify.chunks.CHUNK_WORDS).
    chunk_words: int = CHUNK_WORDS
    #: Caps of the chunk recipe's sources that differ from side.training.chunked.CHUNK_CAPS
    #: (None: every pair of that source).
    chunk_caps: dict[str, int | None] = field(default_factory=dict)
    #: Share of the WiCE train and SciFact train claims kept out of training for the combiner
    #: (side.training.holdout; chunk recipe only; 0: the combiner is fitted on claims trained on).
    combiner_holdout: float = 0.0


def make_batches(examples: list[Example], batch_size: int, seed: int, lengths: list[int]) -> list[list[int]]:
    """Batches of example indices: groups kept whole, similar lengths together (less padding)."""
    rng = random.Random(seed)
    index = {id(ex): i for i, ex in enumerate(examples)}
    grouped = [[index[id(ex)] for ex in unit] for unit in units(examples)]
    rng.shuffle(grouped)
    # Length buckets inside windows of 50 batches keep the order random at a coarse scale.
    window = batch_size * 50
    batches: list[list[int]] = []
    for start in range(0, len(grouped), window // 2):
        chunk = grouped[start : start + window // 2]
        chunk.sort(key=lambda unit: max(lengths[i] for i in unit))
        current: list[int] = []
        for unit in chunk:
            if current and len(current) + len(unit) > batch_size:
                batches.append(current)
                current = []
            current.extend(unit)
        if current:
            batches.append(current)
    rng.shuffle(batches)
    return batches


def _pair(ex: Example) -> Pair:
    return Pair(ex.title, ex.context, ex.passage)


def batch_loss(logits: torch.Tensor, labels: torch.Tensor, groups: torch.Tensor, rank_margin: float,
               rank_weight: float) -> torch.Tensor:
    """Cross-entropy over the model's classes, binary 'not supported' term and the in-group ranking term."""
    import torch
    import torch.nn.functional as F

    log_probs = F.log_softmax(logits, dim=-1)
    # A label the model has an output for is trained as that class; "X" (and "P" in a model
    # without a PARTIAL output) as "not supported": any class but SUPPORTS.
    direct = labels < logits.shape[1]
    loss = torch.zeros((), device=logits.device)
    if direct.any():
        loss = loss + F.nll_loss(log_probs[direct], labels[direct], reduction="sum")
    binary = ~direct
    if binary.any():
        not_supported = torch.logsumexp(log_probs[binary][:, 1:], dim=-1)
        loss = loss - not_supported.sum()
    loss = loss / len(labels)
    support = logits[:, 0] - torch.logsumexp(logits[:, 1:], dim=-1)
    positive = (labels == 0) & (groups >= 0)
    negative = (labels == 2) & (groups >= 0)
    if positive.any() and negative.any():
        same = groups[positive].unsqueeze(1) == groups[negative].unsqueeze(0)
        if same.any():
            gaps = rank_margin - (support[positive].unsqueeze(1) - support[negative].unsqueeze(0))
            loss = loss + rank_weight * F.relu(gaps)[same].mean()
    return loss


def _checkpoint_paths(work_dir: Path) -> tuple[Path, Path]:
    return work_dir / "checkpoint.pt", work_dir / "checkpoint.json"


#: Settings that do not decide which batches a step trains on: a resumed run may change them.
RUN_ONLY_SETTINGS = frozenset({"data_dir", "out_dir", "work_dir", "max_minutes", "checkpoint_every", "resume",
                               "device", "threads"})


def training_recipe(settings: TrainSettings) -> dict[str, str]:
    """The settings a checkpoint's step count belongs to: the pairs, their order and batches,
    the model and the optimiser. Kept in the checkpoint so that ``--resume`` with other ones
    (say another ``--chunk-words``) is refused instead of going on at a step of other batches.
    ``max_steps`` belongs to it: it sets the learning rate's schedule. Paths are compared resolved."""

    def plain(value: Any) -> str:
        if isinstance(value, dict):
            return str(dict(sorted(value.items())))
        return str(value.resolve() if isinstance(value, Path) else value)

    return {k: plain(v) for k, v in sorted(asdict(settings).items()) if k not in RUN_ONLY_SETTINGS}


def _check_resume(ckpt_meta: Path, settings: TrainSettings) -> None:
    """InputError when the checkpoint was trained from another backbone (a checkpoint written
    before the backbone was recorded is MiniLM's): its weights would not fit the model; or with
    another recipe (:func:`training_recipe`; a checkpoint written before recipes were recorded is
    checked for its backbone only)."""
    saved = read_json_object(ckpt_meta, "the training checkpoint's") if ckpt_meta.is_file() else {}
    base = saved.get("base", DEFAULT_BACKBONE) if saved else settings.base
    if base != settings.base:
        raise InputError(f"the checkpoint in {ckpt_meta.parent} was trained from {base}, not {settings.base}: "
                         f"resume with --base {base}, or start anew without --resume")
    recipe, now = saved.get("recipe"), training_recipe(settings)
    if isinstance(recipe, dict):  # a setting added since the checkpoint was written is not in it
        changed = [f"{k} {recipe[k]}, not {v}" for k, v in now.items() if k in recipe and recipe[k] != v]
        if changed:
            raise InputError(f"the checkpoint in {ckpt_meta.parent} was trained with other settings "
                             f"({'; '.join(changed)}): resume with the same options, or start anew without --resume")


def _check_init(model_dir: Path, base: str) -> None:
    """InputError unless ``model_dir`` holds a Side verifier trained from ``base``."""
    from side.verify.crossencoder import backbone_of

    meta_file, weights = Path(model_dir) / META_FILE, Path(model_dir) / WEIGHTS_FILE
    if not (meta_file.is_file() and weights.is_file()):
        raise InputError(f"--init {model_dir}: no {WEIGHTS_FILE} and {META_FILE} there "
                         "(give a directory `side train verifier` wrote)")
    saved = backbone_of(read_json_object(meta_file, f"--init {model_dir}:"))
    if saved != base:
        raise InputError(f"--init {model_dir} was trained from {saved}, not {base}: give --base {saved}")


def freeze(model: torch.nn.Module, layers: int) -> None:
    """Freeze the word embeddings (never trained, never shipped) and the lowest ``layers``
    transformer layers, for any backbone (BERT's ``bert.encoder.layer``, MPNet's ``mpnet.encoder.layer``)."""
    model.get_input_embeddings().weight.requires_grad_(False)  # type: ignore[operator]
    for layer in model.base_model.encoder.layer[:layers]:  # type: ignore[union-attr,index]
        layer.requires_grad_(False)


def save_model(model: torch.nn.Module, settings: TrainSettings, stats: dict) -> Path:
    """Write the shipped fp16 safetensors (without the frozen embeddings) and its metadata."""
    from safetensors.torch import save_file

    settings.out_dir.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().to("cpu").half().contiguous() for k, v in trainable_state(model).items()}
    path = settings.out_dir / WEIGHTS_FILE
    save_file(state, str(path), metadata={"format": "pt"})
    outputs = int(model.config.num_labels)  # type: ignore[union-attr,arg-type]
    labels = ["SUPPORTS", "REFUTES", "NOT ENOUGH INFO", PARTIAL][:outputs]
    meta = {"labels": labels, "base": BACKBONES[settings.base], "max_length": settings.max_length,
            # A chunk model reads the claim with its title and section only: the sentences before
            # the claim, which most of its pairs lack, cost it its signal on whole pages.
            **({"premise": "chunk", "chunk_words": settings.chunk_words, "query_context": False}
               if settings.chunks else {}),
            # Read back by the combiner fit, so a later --combiner-only run uses the same claims.
            **({"combiner_holdout": settings.combiner_holdout} if settings.combiner_holdout else {}),
            "settings": {k: str(v) for k, v in asdict(settings).items() if not k.endswith("_dir")},
            "training": stats}
    (settings.out_dir / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return path


def training_examples(settings: TrainSettings) -> tuple[list[Example], ProbeReport]:
    """The training pairs of ``settings`` and their shortcut probes; refuses pairs whose label a
    query-only or premise-length probe predicts (unless ``allow_shortcuts``), before any step is spent."""
    if settings.chunks:
        examples = chunked_examples(settings.data_dir, seed=settings.seed, words=settings.chunk_words,
                                    caps=settings.chunk_caps, holdout=settings.combiner_holdout)
    else:
        examples = build_examples(settings.data_dir, negatives=settings.negatives,
                                  in_domain_repeat=settings.in_domain_repeat, joined=settings.joined,
                                  supported_parts=settings.supported_parts)
    if settings.contrastive:
        added = contrastive_examples(settings.data_dir, settings.contrastive)
        log.info("%d contrastive and document-level pairs from %s", len(added), ", ".join(settings.contrastive))
        examples += added
    if settings.feedback is not None:
        reviewed = feedback_examples(read_feedback(settings.feedback))
        log.info("%d training pairs from reviews in %s", len(reviewed), settings.feedback)
        examples += reviewed
    if settings.shortcut_filter:
        examples = filter_shortcuts(examples, seed=settings.seed)
    probe = probe_examples(examples, seed=settings.seed)
    if not settings.allow_shortcuts:
        require_no_shortcut(probe)
    return examples, probe


def require_no_shortcut(probe: ProbeReport) -> None:
    """Stop before training on pairs whose label a probe that never reads the premise predicts."""
    if not probe.passed:
        raise InputError(
            f"the training pairs carry a shortcut: query-only probe AUROC {probe.query_only:.3f}, premise-length "
            f"probe AUROC {probe.premise_length:.3f} (at most {MAX_PROBE_AUROC:g}); add --shortcut-filter, or "
            "--allow-shortcuts to train on them anyway")


def train_verifier(settings: TrainSettings) -> dict:
    """Train, checkpoint, and write the model; returns training statistics."""
    import torch
    from tqdm import tqdm

    from side.retrieval.encoder import pick_device

    if settings.resume:  # before the minute of reading data
        _check_resume(_checkpoint_paths(settings.work_dir)[1], settings)
    random.seed(settings.seed)
    torch.manual_seed(settings.seed)
    if settings.threads:
        from side.threads import set_threads

        set_threads(settings.threads, "training settings")  # kept by the verifier loaded after training
    device = pick_device(settings.device)
    if settings.init is not None:  # before the minute of reading data
        _check_init(settings.init, settings.base)
    examples, probe = training_examples(settings)
    encoder = PairEncoder(load_tokenizer(settings.base), settings.max_length)
    # Tokenized once: every epoch reuses the ids (the tokenizer would otherwise run per step).
    encoded = encoder.encode([_pair(ex) for ex in examples])
    lengths = [len(ids) for ids, _ in encoded]
    epochs = max(1, math.ceil(settings.epochs))
    batches = [
        b for e in range(epochs) for b in make_batches(examples, settings.batch_size, settings.seed + e, lengths)
    ]
    batches = batches[: int(len(batches) * settings.epochs / epochs) or 1]
    total = min(len(batches), settings.max_steps or len(batches))

    model = build_model(4 if settings.chunks else 3, base=settings.base)
    if settings.init is not None:
        load_trained_weights(model, settings.init / WEIGHTS_FILE, widen=True)
        log.info("training starts from the weights in %s", settings.init)
    freeze(model, settings.freeze_layers)
    # transformers wraps PreTrainedModel.to in functools.wraps, which hides the bound self from mypy
    model.to(device).train()  # type: ignore[arg-type]
    params = [p for p in model.parameters() if p.requires_grad]
    optim = torch.optim.AdamW(params, lr=settings.lr, weight_decay=0.01)
    warm = max(1, int(total * settings.warmup))
    def schedule(step: int) -> float:
        """Linear warm-up, then linear decay to zero at the last planned step."""
        return min((step + 1) / warm, max(0.0, (total - step) / max(1, total - warm)))

    sched = torch.optim.lr_scheduler.LambdaLR(optim, schedule)
    settings.work_dir.mkdir(parents=True, exist_ok=True)
    ckpt, ckpt_meta = _checkpoint_paths(settings.work_dir)
    step, losses = 0, []
    if settings.resume and ckpt.is_file():
        state = torch.load(ckpt, map_location=device, weights_only=True)
        model.load_state_dict(state["model"])
        optim.load_state_dict(state["optim"])
        sched.load_state_dict(state["sched"])
        step = json.loads(ckpt_meta.read_text())["step"]
        log.info("resumed from step %d", step)

    amp = autocast_dtype(device)
    device_type = "cuda" if device.startswith("cuda") else "cpu"
    started = time.monotonic()
    pad = encoder.tokenizer.pad_token_id or 0
    bar = tqdm(total=total, initial=step, desc="training verifier", unit="step")
    stopped = "completed"

    def save_checkpoint() -> None:
        torch.save({"model": model.state_dict(), "optim": optim.state_dict(), "sched": sched.state_dict()}, ckpt)
        ckpt_meta.write_text(json.dumps({"step": step, "base": settings.base, "recipe": training_recipe(settings)}))

    while step < total:
        if (time.monotonic() - started) / 60 > settings.max_minutes:
            stopped = "time budget"
            if step % settings.checkpoint_every:  # steps since the last checkpoint: --resume goes on from here
                save_checkpoint()
            break
        idx = batches[step]
        batch = collate([encoded[i] for i in idx], pad)
        labels = torch.tensor([LABEL_IDS[examples[i].label] for i in idx], device=device)
        groups = torch.tensor([examples[i].group for i in idx], device=device)
        # bf16 autocast on a GPU or a bf16-capable CPU (weights and optimizer stay fp32).
        with torch.autocast(device_type=device_type, dtype=amp or torch.bfloat16, enabled=amp is not None):
            logits = model(**{k: v.to(device) for k, v in batch.items()}).logits
        loss = batch_loss(logits.float(), labels, groups, settings.rank_margin, settings.rank_weight)
        optim.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optim.step()
        sched.step()
        step += 1
        losses.append(float(loss.detach()))
        bar.update(1)
        bar.set_postfix(loss=f"{sum(losses[-50:]) / len(losses[-50:]):.3f}")
        if step % settings.checkpoint_every == 0 or step == total:
            save_checkpoint()
    bar.close()
    stats = {"steps": step, "planned_steps": total, "examples": len(examples), "stopped": stopped,
             "shortcut_probe": probe.to_dict(),
             "minutes": round((time.monotonic() - started) / 60, 1),
             "final_loss_50": round(sum(losses[-50:]) / max(1, len(losses[-50:])), 4) if losses else None,
             "device": device, "autocast": str(amp).replace("torch.", "") if amp else "fp32"}
    model.eval()
    save_model(model, settings, stats)
    log.info("verifier written to %s: %s", settings.out_dir, stats)
    return stats
