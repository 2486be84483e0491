"""Step-time model: the time of each collective a layout runs, alpha-beta style.

Ring collectives over ``n`` GPUs (Thakur et al. 2005, §4; NCCL doc/PERFORMANCE.md): an
all-gather or reduce-scatter of a message of M bytes takes ``(n - 1) x (alpha + M / (n B))``,
an all-reduce twice that (:func:`solutions.collectives.ring_allreduce_time_ms`). ``alpha`` is
the latency of one step and ``B`` the achieved bus bandwidth ("busbw" of NCCL-tests, which
PERFORMANCE.md defines so that it is independent of ``n``). The latency term makes the
achieved bandwidth depend on the message size as NCCL-tests curves do: a message of S bytes
per GPU reaches ``B / (1 + n alpha B / S)``, half of ``B`` at ``S = n alpha B``.

``B`` is hierarchical (:meth:`solutions.hardware.Cluster.group_gb_per_s`): NVLink inside a
node; a group that crosses nodes with ``k`` of its members on each node drives ``k`` of the
node's network ports (NCCL builds one ring per port and moves the rest over NVLink), so
FSDP/ZeRO-3 over all GPUs at TP = 1 gets the node's whole network and TP = 8 one port.

Which link a group uses follows the stack's rank order, innermost first: Megatron-LM's
``tp-cp-ep-dp-pp`` (``megatron/core/parallel_state.py``, ``initialize_model_parallel``'s
``order``; DeepSpeed's ``PipeModelDataParallelTopology`` and torchtitan's device mesh also
put the pipeline outermost), or Llama 3's ``[TP, CP, PP, DP]`` (Dubey et al. 2024, §3.3.2),
``Stack.pp_outermost``. A group whose members are ``stride`` ranks apart and that spans more
GPUs than a node crosses the network. TP (stride 1) stays on NVLink when ``tp`` fits a
node (a wider TP group holds whole nodes and drives all their ports); CP has stride
``tp``; DP and EP stride ``tp x cp`` (x ``pp`` in Llama 3's order); PP neighbours are
``tp x cp x dp`` apart (``tp x cp`` in Llama 3's order).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from functools import lru_cache

from solutions import hardware, models
from solutions.collectives import ring_allreduce_time_ms
from solutions.layout import ParallelConfig, expert_stride
from solutions.layout import dp_stride as layout_dp_stride
from solutions.performance.flops import forward_passes
from solutions.planner.buffers import gathered_kv_heads
from solutions.precision import BYTES_16BIT
from solutions.stack import Stack


@dataclass(frozen=True)
class LayerComm:
    """Seconds of TP, CP and EP communication per micro-batch on one stage."""

    tp: float
    cp: float
    ep: float

    @property
    def total(self) -> float:
        return self.tp + self.cp + self.ep


class Links:
    """The bandwidth and latency each parallel group of ``cfg`` sees on ``cluster``."""

    def __init__(self, cluster: hardware.Cluster, cfg: ParallelConfig,
                 pp_outermost: bool = True, flat_dp: bool = False,
                 folded_experts: bool = False) -> None:
        self.cluster, self.cfg = cluster, cfg
        node = cluster.gpus_per_node
        inner = cfg.tp * cfg.cp
        dp_stride = layout_dp_stride(cfg.tp, cfg.cp, cfg.pp, pp_outermost)
        pp_stride = inner * cfg.dp if pp_outermost else inner
        # TP and an expert's own ETP group are consecutive ranks (stride 1)
        self.tp_crosses, self.tp_gb_per_s = self._consecutive(cfg.tp)
        self.etp_crosses, self.etp_gb_per_s = self._consecutive(cfg.expert_tp)
        self.cp_crosses = inner > node
        self.pp_crosses = pp_stride >= node  # the next stage starts on another node
        # the ZeRO collectives run inside a shard group of consecutive DP ranks (all of DP
        # without hybrid sharding); its gradient shards are all-reduced across the groups,
        # whose matching ranks are a shard group's span apart
        self.dp_crosses = dp_stride * cfg.shard_dp > node
        ep_stride = expert_stride(cfg, dp_stride, folded_experts)
        self.ep_crosses = ep_stride * cfg.ep > node
        self.dp_per_node = max(1, min(cfg.shard_dp, node // dp_stride))  # members on a node
        self.ep_per_node = max(1, min(cfg.ep, node // ep_stride))
        cp_per_node = max(1, min(cfg.cp, node // cfg.tp))
        def data_parallel_gb_per_s(crosses: bool, per_node: int) -> float:
            # a flat collective gets one link; a hierarchical one the node's ports
            return (cluster.link_gb_per_s(crosses) if flat_dp
                    else cluster.group_gb_per_s(crosses, per_node))

        self.dp_gb_per_s = data_parallel_gb_per_s(self.dp_crosses, self.dp_per_node)
        replica_stride = dp_stride * cfg.shard_dp
        self.replica_crosses = replica_stride * cfg.replicas > node
        self.replica_gb_per_s = data_parallel_gb_per_s(
            self.replica_crosses, max(1, min(cfg.replicas, node // replica_stride)))
        self.cp_gb_per_s = cluster.group_gb_per_s(self.cp_crosses, cp_per_node)

    @classmethod
    def of(cls, cluster: hardware.Cluster, cfg: ParallelConfig, stack: Stack) -> Links:
        """The links of ``cfg`` as ``stack`` places and drives its groups: its rank order,
        its flat or hierarchical DP collectives, its folded expert groups."""
        return cls(cluster, cfg, stack.pp_outermost, stack.flat_dp_collectives,
                   stack.folded_expert_groups)

    def _consecutive(self, size: int) -> tuple[bool, float]:
        """(crosses nodes, bus bandwidth) of a group of ``size`` consecutive ranks: one wider
        than a node has every GPU of each node it spans, so its rings drive all of their
        ports, like any other group (NCCL builds one per port)."""
        node = self.cluster.gpus_per_node
        crosses = size > node
        return crosses, self.cluster.group_gb_per_s(crosses, min(size, node))

    def _bandwidth(self, crosses: bool, gb_per_s: float | None) -> float:
        return gb_per_s if gb_per_s is not None else self.cluster.link_gb_per_s(crosses)

    def allreduce_s(self, message_bytes: float, n: int, crosses: bool,
                    gb_per_s: float | None = None) -> float:
        """Ring all-reduce, seconds: :func:`solutions.collectives.ring_allreduce_time_ms`
        (``gb_per_s``: the group's bus bandwidth, one GPU's link when not given)."""
        if n == 1:
            return 0.0
        c = self.cluster
        return 1e-3 * ring_allreduce_time_ms(message_bytes / 1e9, n,
                                             self._bandwidth(crosses, gb_per_s),
                                             c.latency_s(crosses) * 1e6)

    def gather_s(self, message_bytes: float, n: int, crosses: bool,
                 gb_per_s: float | None = None) -> float:
        """Ring all-gather (or reduce-scatter) of a ``message_bytes`` result, seconds
        (nothing to send, e.g. the expert weights of a dense model: no collective at all)."""
        if n == 1 or message_bytes == 0:
            return 0.0
        step = message_bytes / n / (self._bandwidth(crosses, gb_per_s) * 1e9)
        return (n - 1) * (self.cluster.latency_s(crosses) + step)

    def dp_reduce_scatter_s(self, n_params: float, n: int, bytes_per_element: float) -> float:
        """Reduce-scatter (or all-gather) of ``n_params`` elements over the DP group, at the
        group's hierarchical bus bandwidth."""
        return self.gather_s(n_params * bytes_per_element, n, self.dp_crosses, self.dp_gb_per_s)

    def replica_allreduce_s(self, n_params: float, bytes_per_element: float) -> float:
        """Hybrid sharding: the all-reduce of a gradient shard of ``n_params`` elements
        across the ``replicas`` shard groups (0 without hybrid sharding)."""
        return self.allreduce_s(n_params * bytes_per_element, self.cfg.replicas,
                                self.replica_crosses, self.replica_gb_per_s)

    def pp_send_s(self, arch: models.Architecture, scatter_gather: bool = True,
                  grad_scatter_gather: bool | None = None) -> float:
        """One chunk's activation out and gradient in: 2 transfers of ``b s h / cp`` 16-bit
        values, each TP rank sending its ``1/t`` slice on its own link when the direction is
        scattered (``scatter_gather`` for the activation, ``grad_scatter_gather`` for the
        gradient, the same as the activation's when None), the whole of it otherwise."""
        cfg = self.cfg
        grad_scattered = scatter_gather if grad_scatter_gather is None else grad_scatter_gather
        whole = cfg.micro_batch * cfg.seq_len / cfg.cp * arch.d_model * BYTES_16BIT
        c = self.cluster
        rate = c.link_gb_per_s(self.pp_crosses) * 1e9
        total = 0.0
        for scattered in (scatter_gather, grad_scattered):
            message = whole / cfg.tp if scattered else whole
            total += c.latency_s(self.pp_crosses) + message / rate
        return total


#: K/V collectives per layer and micro-batch under context parallelism. The forward
#: all-gathers K and V (Dubey et al. 2024, §3.3.2); FlashAttention's backward for the local
#: queries needs the full K and V again (Dao et al. 2022, §3.1: the backward recomputes the
#: attention from Q, K, V and the log-sum-exp), and the memory model keeps only one layer's
#: gathered K/V (:mod:`solutions.planner.buffers`), so they are gathered a second time
#: (with full recomputation the recomputed forward's gather serves the backward); their
#: gradients are reduce-scattered back: 3.
CP_COLLECTIVES_PER_LAYER = 3


def layer_comm_s(arch: models.Architecture, cfg: ParallelConfig, links: Links,
                 sequence_parallel: bool, dense_layers: int, moe_layers: int,
                 ep_node_dedup: bool = False, repeats_kv_heads: bool = False,
                 expert_routing: str = "balanced") -> LayerComm:
    """TP, CP and EP seconds for one micro-batch through ``dense + moe`` layers.

    TP: ``forward passes + 1`` all-reduces of the ``[b s/cp, h]`` activation per layer for
    the attention block and as many for a dense FFN or a MoE layer's shared experts (with
    sequence parallelism, reduce-scatter + all-gather pairs of the same volume); a MoE
    layer's routed experts have none of their own when each expert is whole on a GPU
    (``etp`` = 1: its tokens reach it by the all-to-all).
    CP: :data:`CP_COLLECTIVES_PER_LAYER` collectives of the full K and V per layer: the
    forward's all-gather, the all-gather again for the backward and the reduce-scatter of
    their gradients, at the width the memory model holds them (the query heads' when the
    stack repeats K/V before attention, ``repeats_kv_heads``). EP: dispatch + combine
    all-to-alls per forward and backward, each sending ``(ep - 1)/ep`` of
    ``b s k h / (cp t)`` values, one latency per peer; with
    ``ep_node_dedup`` (DeepEP) a token goes once to each rank that holds one of its experts
    (:func:`ranks_reached`, under the stack's ``expert_routing``) and crosses the network
    once per node it goes to (:func:`dedup_all_to_all_s`). An expert split over ``etp`` > 1
    ranks adds the dispatcher's all-gather of the received copies over those ranks and the
    reduce-scatter of their outputs (Megatron-Core's ``MoEAlltoAllTokenDispatcher``,
    ``dispatch_postprocess`` and ``combine_preprocess``: ``k`` copies of ``etp / t`` of the
    activation, ``forward passes + 1`` pairs per layer), charged with the all-to-alls: they
    run in the dispatcher, outside the GEMMs a TP overlap hides collectives under.
    """
    layers = dense_layers + moe_layers
    passes = forward_passes(cfg)
    activation = cfg.micro_batch * cfg.seq_len / cfg.cp * arch.d_model * BYTES_16BIT
    tp_one = links.allreduce_s(activation, cfg.tp, links.tp_crosses, links.tp_gb_per_s)
    shared = arch.moe is not None and arch.moe.n_shared_experts > 0
    ffn_tp_layers = dense_layers + (moe_layers if shared else 0)
    tp = (passes + 1) * (layers + ffn_tp_layers) * tp_one
    cp = 0.0
    if cfg.cp > 1:
        kv_width = gathered_kv_heads(arch, cfg.tp, repeats_kv_heads) * arch.head_dim
        local_kv = 2 * cfg.micro_batch * cfg.seq_len / cfg.cp * kv_width * BYTES_16BIT
        cp = CP_COLLECTIVES_PER_LAYER * layers * links.gather_s(
            local_kv * cfg.cp, cfg.cp, links.cp_crosses, links.cp_gb_per_s)
    ep = 0.0
    if arch.moe is not None and moe_layers:
        tokens = cfg.micro_batch * cfg.seq_len / cfg.cp / cfg.tp
        sent = tokens * arch.moe.experts_per_token * arch.d_model * BYTES_16BIT
        if cfg.ep > 1:
            copies = (ranks_reached(cfg, arch.moe, expert_routing) if ep_node_dedup
                      else arch.moe.experts_per_token)
            moved = tokens * copies * arch.d_model * BYTES_16BIT
            one = (dedup_all_to_all_s(links, arch.moe, tokens * arch.d_model * BYTES_16BIT,
                                      moved, expert_routing)
                   if ep_node_dedup and links.ep_crosses else all_to_all_s(links, moved))
            ep = (2 * passes + 2) * moe_layers * one
        etp = cfg.expert_tp
        if etp > 1:
            ep += (passes + 1) * moe_layers * links.allreduce_s(
                sent * etp, etp, links.etp_crosses, links.etp_gb_per_s)
    return LayerComm(tp=tp, cp=cp, ep=ep)


#: Share of the network port's line rate DeepEP's internode dispatch and combine reach: 43-58
#: GB/s "bottleneck bandwidth (RDMA)" at EP 16-64 on CX7 400 Gb/s ports (~50 GB/s) (DeepEP
#: ``docs/legacy.md``, "Normal kernels with NVLink and RDMA forwarding"): the line rate.
DEEPEP_NETWORK_EFFICIENCY = 1.0


def nodes_reached(n_nodes: int, n_experts: int, k: int, routing: str = "balanced") -> float:
    """Expected number of distinct nodes the ``k`` experts of one token sit on, the
    ``n_experts`` spread evenly over ``n_nodes`` in order. ``"balanced"`` routing chooses
    them uniformly without replacement: ``n (1 - C(E - E/n, k) / C(E, k))``;
    ``"contiguous"`` sends token t to experts ``k t ... k t + k - 1`` mod E (NeMo
    AutoModel's ``FakeBalancedGate``, ``moe/layers.py``): the mean over the first experts
    ``k t mod E`` the tokens cycle through, the multiples of ``gcd(k, E)``."""
    if routing == "contiguous":
        return _contiguous_nodes(n_nodes, n_experts, k)
    per_node = n_experts / n_nodes
    miss = 1.0
    for i in range(k):  # C(E - E/n, k) / C(E, k) as a running product
        miss *= max(0.0, (n_experts - per_node - i) / (n_experts - i))
    return n_nodes * (1.0 - miss)


@lru_cache(maxsize=256)
def _contiguous_nodes(n_nodes: int, n_experts: int, k: int) -> float:
    per_node = n_experts / n_nodes
    firsts = range(0, n_experts, math.gcd(k, n_experts))
    return statistics.fmean(len({int((first + j) % n_experts // per_node) for j in range(k)})
                            for first in firsts)


def ranks_reached(cfg: ParallelConfig, moe: models.MoE, routing: str = "balanced") -> float:
    """Expected number of EP ranks one token's ``k`` experts sit on (:func:`nodes_reached`
    with the ranks as the groups): the copies DeepEP sends and receives per token, one per
    destination rank."""
    return nodes_reached(cfg.ep, moe.n_routed_experts, moe.experts_per_token, routing)


def dedup_all_to_all_s(links: Links, moe: models.MoE, token_bytes: float,
                       sent_bytes: float, routing: str = "balanced") -> float:
    """One EP all-to-all as DeepEP runs it across nodes (DeepSeek-V3 report, §3.2.2: each
    token "is first transmitted via IB to the GPUs with the same in-node index on its target
    nodes" and then "instantly forwarded via NVLink"): over the network ``token_bytes`` per
    token per remote node it reaches (:func:`nodes_reached` minus its own node's share), at
    :data:`DEEPEP_NETWORK_EFFICIENCY` of the port; over NVLink the forwarding, every
    expert copy that is not on the sending GPU; the slower of the two plus one latency."""
    c, cfg = links.cluster, links.cfg
    n_nodes = max(1, cfg.ep // links.ep_per_node)
    reached = nodes_reached(n_nodes, moe.n_routed_experts, moe.experts_per_token, routing)
    remote = reached * (n_nodes - 1) / n_nodes
    network = token_bytes * remote / (c.inter_node_gb_per_s * DEEPEP_NETWORK_EFFICIENCY * 1e9)
    nvlink = sent_bytes * (cfg.ep - 1) / cfg.ep / (c.link_gb_per_s(False) * 1e9)
    return c.latency_s(True) + max(network, nvlink)


def all_to_all_s(links: Links, sent_bytes: float) -> float:
    """One EP all-to-all in which every GPU sends ``(ep - 1)/ep`` of ``sent_bytes`` to its
    peers, all at once: the share for peers on the same node over NVLink, the rest over the
    GPU's own port, the slower of the two (one latency: the peers are sent to
    concurrently, as NCCL's grouped send/recv and DeepEP do)."""
    c, ep, k = links.cluster, links.cfg.ep, links.ep_per_node
    off_node = sent_bytes * (ep - k) / ep
    on_node = sent_bytes * (k - 1) / ep
    network = off_node / (c.link_gb_per_s(True) * 1e9)
    nvlink = on_node / (c.link_gb_per_s(False) * 1e9)
    return c.latency_s(links.ep_crosses) + max(network, nvlink)
