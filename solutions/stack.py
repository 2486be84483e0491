"""The training software a layout runs on: what it overlaps, how it communicates, how it
keeps weights and gradients.

A :class:`Stack` changes the speed (and some of the memory) of a layout but not the layout
itself: the same ``ParallelConfig`` ran at 159 TFLOP/s per GPU in Megatron-LM's benchmark
and at 126 in a DeepSpeed-pipeline production run (Narayanan et al. 2021, Table 1 vs Smith
et al. 2022, §3). The step-time model and the memory model both read it.

Fields (booleans say whether the software does it):

* ``sequence_parallel``: activations outside the TP region are split over the TP group and
  the TP all-reduces become reduce-scatter + all-gather pairs (Korthikanti et al. 2022, §4.2.2).
* ``fused_attention``: a flash-attention kernel keeps the ``s x s`` scores on chip and skips
  the masked half of a causal matrix (Dao et al. 2022).
* ``overlap_dp``: the gradient reduction runs during the backward pass, bucket by bucket
  (PyTorch DDP, Li et al. 2020, §3.2.3; FSDP; Megatron-Core ``--overlap-grad-reduce``).
* ``grad_reduce_bytes``, ``grad_accum_bytes``: bytes per gradient element in the
  data-parallel reduce-scatter, and in the accumulator across micro-batches.
* ``reshard_after_forward``: ZeRO-3/FSDP frees the gathered weights after each layer's
  forward and gathers them again for the backward (Zhao et al. 2023, §3.2.1 FULL_SHARD);
  False keeps them gathered until the backward is done (FSDP SHARD_GRAD_OP; Llama 3).
* ``keep_gathered_with_pp``: with a pipeline (PP > 1) the stack keeps the gathered weights
  from forward to backward whatever ``reshard_after_forward`` says, so that the many
  micro-batches of a stage do not gather each layer twice each (torchtitan,
  ``parallelize_llama.py`` ``apply_fsdp``: with pipeline parallelism "do not reshard
  after forward to avoid per-microbatch all-gathers"); :func:`for_layout` applies it.
* ``uneven_chunks``, ``interleave_m_below_p``: the pipeline accepts chunks of unequal layer
  counts; its interleaved schedule accepts fewer micro-batches than stages.
* ``tp_comm_overlap``: TP collectives run in chunks under the GEMMs they feed
  (Megatron-Core ``--tp-comm-overlap``, Transformer Engine userbuffers).
* ``param_gather_overlap``: the distributed optimizer's parameter all-gather runs under the
  next step's forward (Megatron-Core ``--overlap-param-gather``).
* ``gather_hidden_fraction``: the share of a ZeRO-3/FSDP parameter all-gather that can run
  under compute. FSDP prefetches the next unit's gather (Zhao et al. 2023, §3.3.2-3.3.3:
  backward and forward prefetch), so all of it can hide; DeepSpeed ZeRO-3 prefetches from a
  trace of the previous step (Rajbhandari et al. 2021, ZeRO-Infinity §6.2), which the paper
  does not quantify: that half its gathers hide (``ZERO3_GATHER_HIDDEN``) is an assumption.
* ``fused_grad_accumulation``: each micro-batch's weight gradients are accumulated by the
  weight-gradient GEMM itself (Megatron-LM ``--gradient-accumulation-fusion``, into FP32
  ``main_grad``); otherwise a separate pass reads the 16-bit gradient and reads and writes
  the ``grad_accum_bytes`` accumulator every micro-batch (DeepSpeed's engines, PyTorch
  DDP/FSDP without resharding).
* ``accumulation_copies``: the separate pass first casts each 16-bit gradient to a new
  tensor at the accumulator's precision and then adds that copy, writing and reading it once
  more, ``2 grad_accum_bytes`` per parameter (DeepSpeed's ``BF16_Optimizer.update_hp_grads``:
  ``hp_grad.add_(lp.grad.to(hp_grad.dtype))``); PyTorch's mixed-dtype ``add_`` casts in place.
* ``keeps_16bit_grads``: under ZeRO 0-1 each micro-batch's 16-bit weight gradients stay
  allocated beside the FP32 accumulator until the next backward, 2 more bytes per parameter
  (DeepSpeed's ``BF16_Optimizer`` in the pipeline engine: ``clear_lp_grads`` drops them just
  before each backward, ``update_hp_grads`` adds them after it into an unsharded FP32 buffer,
  which "consumes 4 bytes * params of additional memory", BigScience ``tr11-176B-ml/README.md``).
* ``pipeline_blocking_p2p``: sends and receives are blocking instructions between compute ones
  (DeepSpeed's ``PipelineEngine``: ``RecvActivation``, ``SendGrad`` ...), so a stage pays its
  receives as well as its sends; Megatron posts non-blocking pairs (Narayanan et al. 2021, §4.1).
* ``pp_outermost``: the pipeline is outermost in the rank order (Megatron-LM's
  ``tp-cp-ep-dp-pp``, DeepSpeed's, torchtitan's): DP groups packed inside nodes, pipeline
  neighbours on other nodes; Llama 3's ``[TP, CP, PP, DP]`` (§3.3.2) is the reverse.
* ``pipeline_scatter_gather``: each TP rank sends only its ``1/t`` slice of the activation
  to the next stage, where the slices are all-gathered over NVLink (Narayanan et al. 2021,
  §4.1); DeepSpeed's engine since September 2020 (``engine.py``: ``is_pipe_partitioned =
  is_model_parallel``, a ``PartitionedTensor`` sent and ``full()``-gathered); without it
  every TP rank sends the whole activation over its own port, ``t`` times the bytes.
* ``pipeline_grad_scatter_gather``: the same for the gradient sent back to the previous
  stage. DeepSpeed partitions it since ``is_grad_partitioned = is_model_parallel``
  (commit e2fdd254, 29 September 2021, "Big science related changes"; before it the
  gradient went whole, ``is_grad_partitioned = False``); Megatron-LM scatters both.
* ``flat_dp_collectives``: the data-parallel and ZeRO collectives run as one flat ring over
  all ranks, each at its own port, not NCCL's per-port rings that let a group with ``k``
  members on a node drive ``k`` ports (:meth:`solutions.hardware.Cluster.group_gb_per_s`):
  DeepSpeed ZeRO-3 of 2021 gathers each parameter over the whole group
  (``partition_parameters.py`` ``_allgather_param``, May 2021; Narayanan et al. 2021,
  Table 2: 50-60 s a step at 768 and 1,536 A100s alike, 3 x 350 GB at one 200 Gb/s port).
* ``attention_kernel``: the fused attention kernel, ``"flash2"`` (FlashAttention-2, PyTorch's
  scaled-dot-product attention), ``"hopper"`` (a kernel using Hopper's asynchronous
  tensor-core instructions: FlashAttention-3 or cuDNN's fused attention through Transformer
  Engine; on an A100 it is FlashAttention-2) or ``"triton"`` (the 2022 Triton port of
  FlashAttention-1, ``flash_attn/flash_attn_triton.py``, which MosaicML's llm-foundry runs
  as ``attn_impl: triton``) (:data:`solutions.performance.flops.ATTENTION_KERNEL_FRACTION`,
  :data:`solutions.performance.flops.TRITON_FA_SLOWDOWN`).
* ``selective_recompute``: what ``"selective"`` recomputation recomputes: ``"attention"``,
  the attention core (Korthikanti et al. 2022, §5; Megatron-LM); ``"alternate_matmuls"``,
  torchtitan's per-op policy (``selective_ac_option = 'op'``, ``parallelize_llama.py``, April
  2024: "Saves output of all compute ops, except every second mm"): every second matmul and
  every element-wise op are recomputed, the attention kernel's output is kept.
* ``ep_node_dedup``: expert-parallel dispatch and combine send a token across the network
  once per destination node and forward it to that node's experts over NVLink (DeepEP;
  DeepSeek-V3 report, arXiv:2412.19437, §3.2.2), instead of once per expert
  (:func:`solutions.performance.comm.dedup_all_to_all_s`).
* ``folded_expert_groups``: the MoE layers get parallel groups of their own, Megatron-Core's
  "MoE Parallel Folding" (``megatron/core/transformer/moe/README.md``, on its main branch by
  January 2025): a stage's ``tp x cp x dp`` ranks are regrouped into expert groups of ``ep x
  etp`` consecutive ranks ("another [generator] with ``tp-ep-dp-pp`` for MoE. The EPxTP group
  in MoE is a sub-group of DPxCPxTP in Attention"), so EP may exceed DP and an expert may be
  split over fewer ranks than TP (``ParallelConfig.etp``). False: the traditional generator,
  "default order ``tp-cp-ep-dp-pp``. The EP group in MoE is a sub-group of DP in Attention": EP
  divides DP, its ranks are ``tp x cp`` apart, and each expert is split over TP.
* ``ep_comm_overlap``: the expert-parallel all-to-alls of one micro-batch run while another
  micro-batch computes (Megatron-Core 0.14, "Batch-level overlapping to hide EP-A2A
  communication (--overlap-moe-expert-parallel-comm --delay-wgrad-compute)",
  ``megatron/core/transformer/moe/README.md``; Megatron-Bridge's ``moe_a2a_overlap``): only
  what the other micro-batch's computation cannot cover is exposed, plus the interference of
  TP overlap (:data:`solutions.performance.stage.OVERLAP_INTERFERENCE`).
* ``expert_gemm_loop``: the host launches one GEMM per local routed expert once the router's
  counts arrive (Transformer Engine's ``GroupedLinear``; :mod:`solutions.performance.host`).
* ``loss_bytes_per_logit``: bytes per output logit the loss holds at its peak
  (:mod:`solutions.planner.buffers`): 6 for Megatron's vocabulary-parallel cross entropy
  (16-bit logits and one FP32 buffer, exponentiated and differentiated in place,
  ``megatron/core/tensor_parallel/cross_entropy.py``), 12 for PyTorch's ``F.cross_entropy``
  on FP32 logits (the saved log-softmax, and the gradient in and out of its backward).
* ``tp_loss_bytes_per_logit``: the same when the output layer is vocabulary-parallel
  (TP > 1) and the stack then runs another loss (0: the same). torchtitan's ``loss_parallel``
  (``torch/distributed/tensor/parallel/loss.py``) decomposes log-softmax and its backward:
  ``(grad_input + exp(x)) * grad_output`` holds the saved FP32 ``x``, the zeroed
  ``grad_input``, ``exp(x)`` and the sum, then the product, 16 bytes per logit.
* ``sp_keeps_gathered_inputs``: with sequence parallelism, the all-gathered (whole-sequence)
  input of the QKV and first MLP GEMMs is what their weight gradients keep (PyTorch DTensor
  ``PrepareModuleInput`` redistributes ``Shard(1)`` to ``Replicate()`` before the column-
  parallel linears; torchtitan ``parallelize_llama.py`` ``apply_tp``), where Megatron-LM
  keeps the ``1/t`` shard and gathers it again in the backward (Korthikanti et al. 2022,
  §4.2.2). With FP8 linears the gather moves, and the GEMM keeps, FP8 (1 byte; torchao
  ``PrepareFloat8ModuleInput`` casts before the all-gather).
* ``fp8_saves_fp8_inputs``: with FP8 linears, each GEMM keeps its input for the weight
  gradient as the FP8 cast it made (Transformer Engine's ``Linear``: ``saved_inputmat =
  inputmat``); torchao's ``Float8Linear`` (torchtitan, December 2024) keeps the 16-bit input.
  Only GEMM inputs shrink (:func:`solutions.planner.activations.fp8_input_savings`).
* ``elementwise``: how the element-wise work between GEMMs is run, which sets its passes
  over HBM (:data:`solutions.performance.flops.ELEMENTWISE_PASSES`): ``"eager"``, one
  PyTorch kernel per operation (FSDP, DeepSpeed ZeRO-3 and torchtitan without
  ``torch.compile``); ``"megatron"``, Megatron-LM's hand-fused bias + GeLU and scale + mask
  + softmax kernels (Narayanan et al. 2021, §4.2); ``"fused"``, Transformer Engine's fused
  LayerNorm/RMSNorm + GEMM, bias + dropout + residual and SwiGLU kernels (Megatron-Core).
* ``unit_reduce_scatter``: gradients are reduce-scattered per FSDP unit (a layer) as the
  backward produces them, from a buffer of their own (PyTorch FSDP1's flat gradient; FSDP2's
  ``foreach_reduce`` copy-in buffer at ``grad_reduce_bytes``), so a resharding stage-3 GPU
  holds a layer's unsharded gradient and two layers' reduce-scatter inputs
  (:func:`solutions.planner.memory.reduce_scatter_buffer_bytes`); DeepSpeed reduces from
  fixed-size buckets instead.
* ``side_stream_buffers``: ZeRO-3 gathers into a flat buffer on a stream of its own and copies
  it out per parameter, and writes the reduce-scatter's output, the gradient shards, on
  another (FSDP2's ``foreach_all_gather`` and ``foreach_reduce``). The caching allocator keeps
  a pool per stream and keeps reserved what a pool once held, so the two in-flight units' flat
  buffers and all of a step's shards stay reserved beside the compute stream's peak.
* ``zero1_allreduce``: ZeRO-1 all-reduces the whole gradient after the backward and each
  rank keeps its slice, then all-gathers the updated parameters, neither under compute
  (nanotron, ``trainer.py``: ``reduce_scatter=False``, "too memory hungry, instead we run
  all_reduce"; ``optim/zero.py`` ``_all_gather_params`` after ``step()``; DeepSpeed's
  ``BF16_Optimizer``), where Megatron-Core and DeepSpeed's ZeRO optimizers reduce-scatter.
* ``shard_is_master``: a ZeRO-3/FSDP shard is the FP32 master copy itself, cast to 16 bits
  only into the all-gather's input, so no 16-bit shard is kept (PyTorch FSDP2's sharded
  parameter keeps its dtype, ``MixedPrecisionPolicy`` casts the unsharded one; FSDP1 frees
  ``_mp_shard`` after each gather). DeepSpeed ZeRO-3 keeps 16-bit partitions.
* ``bf16_params``: the parameters are BF16 and are themselves the optimizer's master: Adam's
  moments in BF16 (``torch.optim.Adam``'s ``zeros_like``), gradients reduced into BF16, and
  experts no ZeRO group shards (expert DP = 1) used where they lie (NeMo AutoModel casts
  the model to BF16 in ``initialize_weights``; FSDP ignores experts that EP alone spreads).
* ``fp8_all_gather``: with FP8 linears, ZeRO-3/FSDP casts each linear weight's shard to FP8
  before the all-gather, which moves, and the gathered weight holds, 1 byte per parameter
  (torchao ``enable_fsdp_float8_all_gather``: ``fsdp_post_all_gather`` wraps the gathered
  bytes in a ``Float8Tensor``); norms and the end tables stay 16-bit (``layer_gather_bytes``).
* ``repeats_kv_heads``: each K/V head is copied for its query heads before attention, so
  CP gathers ``n_heads`` heads' K and V (torchtitan's ``repeat_kv``; ``gathered_kv_heads``).
* ``pipeline_buffers``: what a pipeline library keeps per micro-batch besides the stashed
  activations (:func:`solutions.planner.buffers.pipeline_buffer_bytes`): ``"transient"``,
  nothing (Megatron frees each output once sent, ``deallocate_output_tensor``); ``"torch"``,
  ``torch.distributed.pipelining``'s receive buffers per micro-batch for each stage's input
  and its output's gradient, and the last stage's outputs until the step ends (PyTorch 2.8
  on); ``"torch-2.7"``, every stage's outputs too (before PR #153383, May 2025; torchtitan's
  December 2024 runs).
* ``expert_routing``: how a router spreads a token's ``k`` experts (``nodes_reached``,
  :mod:`solutions.performance.comm`): ``"balanced"``, at random among all, evenly loaded;
  ``"contiguous"``, token t to experts ``k t ... k t + k - 1`` mod E (``FakeBalancedGate``).
* ``linear_precision``: the number format of the transformer layers' linear GEMMs (attention
  projections, FFN and experts): ``"bf16"``, or ``"fp8"``, E4M3/E5M2 with per-tensor scales
  (Micikevicius et al. 2022, arXiv:2209.05433; Transformer Engine's ``fp8_autocast`` in
  Megatron-Core ``--fp8-format hybrid``; torchao's ``Float8Linear`` in torchtitan). The
  attention core, the output head and the loss stay in 16 bits in both libraries (TE casts only
  its ``Linear`` modules; torchtitan leaves ``output`` out of the conversion), so only the
  layers' GEMMs run at the FP8 rate, and each of their 16-bit inputs and output gradients is
  scaled and cast on the way in (:func:`solutions.performance.flops.fp8_cast_bytes_per_layer`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from solutions._checks import positive

#: Share of a DeepSpeed ZeRO-3 gather that runs under compute: an assumption (module doc).
ZERO3_GATHER_HIDDEN = 0.5
#: The values each named-choice field takes (module doc).
CHOICES: dict[str, tuple[str, ...]] = {
    "elementwise": ("eager", "megatron", "fused"),
    "attention_kernel": ("flash2", "hopper", "triton"),
    "selective_recompute": ("attention", "alternate_matmuls"),
    "pipeline_buffers": ("transient", "torch", "torch-2.7"),
    "linear_precision": ("bf16", "fp8"),
    "expert_routing": ("balanced", "contiguous"),
}


@dataclass(frozen=True)
class Stack:
    """Software choices that change the speed of a layout but not the layout itself."""

    name: str
    sequence_parallel: bool = True
    fused_attention: bool = True
    overlap_dp: bool = True
    grad_reduce_bytes: float = 2.0
    reshard_after_forward: bool = True
    keep_gathered_with_pp: bool = False
    grad_accum_bytes: float = 4.0
    uneven_chunks: bool = False
    interleave_m_below_p: bool = False
    tp_comm_overlap: bool = False
    param_gather_overlap: bool = False
    gather_hidden_fraction: float = 1.0
    pipeline_scatter_gather: bool = True
    pipeline_grad_scatter_gather: bool = True
    flat_dp_collectives: bool = False
    pp_outermost: bool = True
    fused_grad_accumulation: bool = True
    accumulation_copies: bool = False
    pipeline_blocking_p2p: bool = False
    keeps_16bit_grads: bool = False
    attention_kernel: str = "flash2"
    selective_recompute: str = "attention"
    ep_node_dedup: bool = False
    folded_expert_groups: bool = False
    ep_comm_overlap: bool = False
    expert_gemm_loop: bool = False
    elementwise: str = "fused"
    loss_bytes_per_logit: float = 6.0
    tp_loss_bytes_per_logit: float = 0.0
    sp_keeps_gathered_inputs: bool = False
    fp8_saves_fp8_inputs: bool = False
    unit_reduce_scatter: bool = False
    side_stream_buffers: bool = False
    zero1_allreduce: bool = False
    repeats_kv_heads: bool = False
    pipeline_buffers: str = "transient"
    shard_is_master: bool = False
    bf16_params: bool = False
    expert_routing: str = "balanced"
    fp8_all_gather: bool = False
    linear_precision: str = "bf16"
    source: str = ""

    @property
    def layer_gather_bytes(self) -> float:
        """Bytes per parameter a ZeRO-3/FSDP all-gather moves, and its gathered copy holds, for
        the transformer layers' weights: 1 under ``fp8_all_gather`` with FP8 linears, else 2."""
        return 1.0 if self.fp8_all_gather and self.linear_precision == "fp8" else 2.0

    def __post_init__(self) -> None:
        positive("grad_reduce_bytes", self.grad_reduce_bytes)
        positive("grad_accum_bytes", self.grad_accum_bytes)
        positive("loss_bytes_per_logit", self.loss_bytes_per_logit)
        if self.tp_loss_bytes_per_logit < 0:
            raise ValueError("tp_loss_bytes_per_logit is bytes per logit (0: the same as "
                             f"loss_bytes_per_logit), got {self.tp_loss_bytes_per_logit}")
        for name, allowed in CHOICES.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, "
                                 f"got {getattr(self, name)!r}")
        if not 0.0 <= self.gather_hidden_fraction <= 1.0:
            raise ValueError("gather_hidden_fraction is a share in [0, 1], "
                             f"got {self.gather_hidden_fraction}")


MEGATRON_2021 = Stack(
    "Megatron-LM 2021 (no SP, unfused attention)", sequence_parallel=False,
    fused_attention=False, overlap_dp=True, grad_reduce_bytes=2.0, grad_accum_bytes=4.0,
    elementwise="megatron",
    source="Narayanan et al. 2021 (arXiv:2104.04473), §4: TP all-reduces on the critical "
           "path, non-blocking pipeline send/recv, fused bias+GeLU and scale+mask+softmax "
           "kernels (§4.2), PyTorch DDP gradient all-reduce overlapped with the backward; "
           "FP32 main gradients (megatron/model/distributed.py).")
MEGATRON_2022 = Stack(
    "Megatron-LM 2022 (selective recompute + SP)", sequence_parallel=True,
    fused_attention=False, overlap_dp=True, elementwise="megatron",
    source="Korthikanti et al. 2022 (arXiv:2205.05198), §4.2.2 sequence parallelism "
           "(reduce-scatter + all-gather instead of all-reduce), §5 selective activation "
           "recomputation of the attention core; TP communication still exposed.")
MEGATRON_CORE_2024 = Stack(
    "Megatron-Core 2024 (TP comm overlap, overlapped grad reduce and param gather)",
    sequence_parallel=True, fused_attention=True, overlap_dp=True, tp_comm_overlap=True,
    param_gather_overlap=True, attention_kernel="hopper", fp8_saves_fp8_inputs=True,
    expert_gemm_loop=True,
    source="Megatron-LM megatron/training/arguments.py: --tp-comm-overlap (TP "
           "collectives split and overlapped with GEMMs via Transformer Engine), "
           "--overlap-grad-reduce, --overlap-param-gather with --use-distributed-optimizer "
           "(ZeRO-1: reduce-scatter grads, all-gather params); Transformer Engine's fused "
           "kernels (cuDNN fused attention, LayerNorm/RMSNorm, bias-GeLU/SwiGLU); "
           "interleaving asserts layers divisible by the chunks.")
DEEPSPEED_ZERO3 = Stack(
    "DeepSpeed ZeRO-3 (2021)", sequence_parallel=False, fused_attention=True, overlap_dp=True,
    gather_hidden_fraction=ZERO3_GATHER_HIDDEN, elementwise="eager",
    fused_grad_accumulation=False, flat_dp_collectives=True, loss_bytes_per_logit=12.0,
    source="Rajbhandari et al. 2020 (ZeRO, arXiv:1910.02054) §7 (P_os+g+p: 1.5x the DP "
           "volume: all-gather forward, all-gather backward, reduce-scatter), ZeRO-Infinity "
           "(arXiv:2104.07857) §6.2 prefetch from a recorded trace.")
DEEPSPEED_PIPELINE = Stack(
    "DeepSpeed pipeline engine (Megatron-DeepSpeed)", sequence_parallel=False,
    fused_attention=False, overlap_dp=False, pipeline_blocking_p2p=True,
    fused_grad_accumulation=False, elementwise="megatron", keeps_16bit_grads=True,
    accumulation_copies=True, grad_reduce_bytes=4.0, zero1_allreduce=True,
    source="Smith et al. 2022 (MT-NLG, arXiv:2201.11990), §3: Megatron TP inside "
           "DeepSpeed's 1F1B pipeline engine (deepspeed/runtime/pipe/engine.py: blocking "
           "SendActivation/RecvActivation/SendGrad/RecvGrad of PartitionedTensor slices, "
           "1/t of the activation and, since September 2021, of its gradient per TP rank), "
           "no interleaving; BF16 through its BF16_Optimizer (April 2022): after the last "
           "micro-batch _bf16_reduce_grads all-reduces the optimizer's FP32 gradients whole "
           "(get_grads_for_reduction), each rank updates its partition and the BF16 weights "
           "are all-gathered (bf16_optimizer.py and pipe/engine.py at 6719b46, May 2022).")
DEEPSPEED_PIPELINE_2020 = replace(
    DEEPSPEED_PIPELINE, name="DeepSpeed pipeline engine before September 2021",
    pipeline_grad_scatter_gather=False, keeps_16bit_grads=False, grad_accum_bytes=2.0,
    accumulation_copies=False, grad_reduce_bytes=2.0, zero1_allreduce=False,
    source="deepspeed/runtime/pipe/engine.py, 2020-21: activations partitioned over the TP "
           "group, gradients sent whole (is_grad_partitioned = False); FP16 only: ZeRO-1 "
           "(zero/stage2.py reduce_gradients) reduces what autograd accumulated in .grad.")
FSDP = Stack(
    "PyTorch FSDP (FULL_SHARD)", sequence_parallel=False, fused_attention=True,
    overlap_dp=True, elementwise="eager", fused_grad_accumulation=False,
    loss_bytes_per_logit=12.0, unit_reduce_scatter=True, shard_is_master=True,
    source="Zhao et al. 2023 (PyTorch FSDP, arXiv:2304.11277) §3.2 FULL_SHARD (gather "
           "before forward and backward, reshard after each), §3.3 backward/forward "
           "prefetch overlapping the next unit's all-gather with compute; the model runs in "
           "PyTorch eager mode, one kernel per element-wise operation.")
FSDP2 = Stack(
    "FSDP2 / torchtitan", sequence_parallel=True, fused_attention=True, overlap_dp=True,
    elementwise="eager", uneven_chunks=True, fused_grad_accumulation=False,
    loss_bytes_per_logit=12.0, tp_loss_bytes_per_logit=16.0, sp_keeps_gathered_inputs=True,
    keep_gathered_with_pp=True, unit_reduce_scatter=True, side_stream_buffers=True,
    grad_reduce_bytes=4.0, repeats_kv_heads=True, pipeline_buffers="torch-2.7",
    shard_is_master=True,
    source="torchtitan (Liang et al. 2024, arXiv:2410.06511) §2.1: per-parameter DTensor "
           "FSDP2 with implicit prefetch, reshard_after_forward=True by default, gradients "
           "reduce-scattered in FP32 (config_manager.py, December 2024: "
           "--training.mixed_precision_reduce, default and only choice 'float32'), SP with "
           "TP (async TP optional) whose column-parallel linears keep their gathered "
           "inputs, and loss_parallel's cross entropy with TP; eager mode unless "
           "torch.compile is turned on; pipeline stages cut at user-given module names "
           "(pipeline_parallel_split_points): stages and chunks may differ in layers.")
LLAMA3 = Stack(
    "Llama 3 (FSDP without reshard after forward, FP32 reduce-scatter)",
    sequence_parallel=True, fused_attention=True, overlap_dp=True, grad_reduce_bytes=4.0,
    reshard_after_forward=False, grad_accum_bytes=4.0, uneven_chunks=True,
    interleave_m_below_p=True, attention_kernel="flash2", pp_outermost=False,
    source="Dubey et al. 2024 (arXiv:2407.21783) §3.3.2: FSDP shards optimizer state and "
           "gradients but not the model weights after forward (no re-gather in backward), "
           "gradients accumulated and reduce-scattered in FP32, modified interleaved "
           "schedule allowing fewer micro-batches than stages, one fewer layer on the "
           "first and last stages; rank order [TP, CP, PP, DP]. The paper names no attention "
           "kernel: FlashAttention-2's class, PyTorch's SDPA on H100 during pre-training (2.2, "
           "January 2024; FlashAttention-3, July 2024, and cuDNN's in 2.5 came after it).")
NANOTRON = Stack(
    "nanotron (Ultra-Scale Playbook benchmarks, early 2025)", sequence_parallel=True,
    fused_attention=True, overlap_dp=True, grad_reduce_bytes=4.0, grad_accum_bytes=4.0,
    fused_grad_accumulation=False, pipeline_blocking_p2p=True, elementwise="eager",
    zero1_allreduce=True,
    source="huggingface/nanotron at 0e0a27ea (2025-02-19, the playbook's benchmark "
           "scripts/scaling_benchmarks.py: tp_mode REDUCE_SCATTER, FP32 gradient "
           "accumulation, 1F1B): sequence parallelism whose async TP overlaps only parts of "
           "the backward's collectives (tensor_parallel/functional.py; the forward's "
           "reduce-scatter is synchronous), so TP counts as exposed; FP32 gradients added "
           "to an FP32 buffer after each backward (optim/gradient_accumulator.py) and "
           "all-reduced in FP32 by a DDP hook bucket by bucket under the last backward, or "
           "with ZeRO-1 all-reduced whole after it (zero1_allreduce); blocking pipeline "
           "sends after metadata messages (parallel/pipeline_parallel/p2p.py), "
           "sequence-sharded so each TP rank sends 1/t; rank order (pp, dp, tp) "
           "(parallel/context.py); flash-attn 2 and its Triton RMSNorm and rotary kernels, "
           "SwiGLU and the residual adds eager, no torch.compile; no context, expert or "
           "interleaved pipeline parallelism, no FP8.")
#: The default of :func:`solutions.performance.estimate`: the current Megatron-Core family.
MODERN = MEGATRON_CORE_2024

STACKS: dict[str, Stack] = {
    "megatron-lm-2021": MEGATRON_2021, "megatron-lm-2022": MEGATRON_2022,
    "megatron-core-2024": MEGATRON_CORE_2024, "deepspeed-zero3": DEEPSPEED_ZERO3,
    "deepspeed-pipeline": DEEPSPEED_PIPELINE, "deepspeed-pipeline-2020": DEEPSPEED_PIPELINE_2020,
    "fsdp": FSDP, "fsdp2": FSDP2, "llama3": LLAMA3, "nanotron": NANOTRON,
}


def for_layout(stack: Stack, pp: int) -> Stack:
    """``stack`` as it runs a layout of ``pp`` pipeline stages: a stack that keeps gathered
    weights under a pipeline (``keep_gathered_with_pp``) does not reshard after forward."""
    if stack.keep_gathered_with_pp and pp > 1 and stack.reshard_after_forward:
        return replace(stack, reshard_after_forward=False)
    return stack


def stack_named(name: str) -> Stack:
    """The preset called ``name`` (a key of :data:`STACKS`); ValueError listing them."""
    try:
        return STACKS[name]
    except KeyError:
        raise ValueError(f"unknown stack {name!r}; expected one of {sorted(STACKS)}") from None
