/**
 * Model names with no sizes in the config (`model = "gpt2"`, HF `model_name_or_path`) resolve here: sizes from
 * each model's public config.json on the Hugging Face Hub (read 2026-12-01), parameter counts as published.
 */
export interface ModelSpec {
  name: string;
  layers: number;
  dModel: number;
  heads: number;
  ffn: number;
  vocab: number;
  params: number;
  /** Context length of the config (n_positions / max_position_embeddings). */
  maxSeq: number;
  source: string;
}

const hub = (repo: string) => `huggingface.co/${repo}/blob/main/config.json (read 2026-12-01)`;

export const MODELS: ModelSpec[] = [
  { name: 'gpt2', layers: 12, dModel: 768, heads: 12, ffn: 3072, vocab: 50257, params: 124_439_808, maxSeq: 1024, source: hub('openai-community/gpt2') },
  { name: 'gpt2-medium', layers: 24, dModel: 1024, heads: 16, ffn: 4096, vocab: 50257, params: 354_823_168, maxSeq: 1024, source: hub('openai-community/gpt2-medium') },
  { name: 'gpt2-large', layers: 36, dModel: 1280, heads: 20, ffn: 5120, vocab: 50257, params: 774_030_080, maxSeq: 1024, source: hub('openai-community/gpt2-large') },
  { name: 'gpt2-xl', layers: 48, dModel: 1600, heads: 25, ffn: 6400, vocab: 50257, params: 1_557_611_200, maxSeq: 1024, source: hub('openai-community/gpt2-xl') },
  { name: 'meta-llama/Llama-3.2-1B', layers: 16, dModel: 2048, heads: 32, ffn: 8192, vocab: 128256, params: 1.24e9, maxSeq: 131072, source: hub('meta-llama/Llama-3.2-1B') },
  { name: 'meta-llama/Llama-3.1-8B', layers: 32, dModel: 4096, heads: 32, ffn: 14336, vocab: 128256, params: 8.03e9, maxSeq: 131072, source: hub('meta-llama/Llama-3.1-8B') },
  { name: 'meta-llama/Llama-3.1-70B', layers: 80, dModel: 8192, heads: 64, ffn: 28672, vocab: 128256, params: 70.6e9, maxSeq: 131072, source: hub('meta-llama/Llama-3.1-70B') },
];

/** `openai-community/gpt2`, `GPT2`, `meta-llama/Meta-Llama-3.1-8B` → the registry entry. */
export function findModel(name: string): ModelSpec | null {
  const k = modelKey(name);
  return MODELS.find((m) => modelKey(m.name) === k) ?? null;
}

export function modelKey(name: string): string {
  return name.trim().toLowerCase().replace(/^openai-community\//, '').replace(/^meta-llama\/meta-llama-/, 'meta-llama/llama-').replace(/^(llama-3)/, 'meta-llama/$1');
}
