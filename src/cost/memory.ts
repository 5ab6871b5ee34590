/**
 * Activation and logits memory of one micro-batch on one chip (bf16 activations, no tensor parallelism),
 * after Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models" (2022), §4.1:
 *   per layer  s·b·h·(34 + 5·a·s/h) bytes; flash attention does not keep the a·s² scores: s·b·h·34
 *   checkpointing every layer keeps only its input (2·s·b·h bytes per layer) plus one layer recomputed
 *   logits     b·s·V × 10 bytes: bf16 logits, their fp32 upcast and the fp32 log-softmax kept for backward
 */
export interface MemoryParts {
  states: number;
  activations: number;
  logits: number;
  total: number;
}

export function activationBytes(p: { layers: number; dModel: number; heads: number; seqLen: number; vocab: number; microBatch: number; flash: boolean; checkpointing: boolean }): MemoryParts {
  const { layers: L, dModel: h, heads: a, seqLen: s, vocab: V, microBatch: b } = p;
  const perLayer = s * b * h * (34 + (p.flash ? 0 : (5 * a * s) / h));
  const activations = p.checkpointing ? L * 2 * s * b * h + perLayer : L * perLayer;
  const logits = b * s * V * 10;
  return { states: 0, activations, logits, total: activations + logits };
}
