// Turns an agent's model configuration into an AI SDK model. Keys are read from the environment at
// call time (never stored in the config, the step result or a log line).
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { type ModelConfig, NonRetryableError } from "@spool/shared";
import type { LanguageModel } from "ai";

const DEFAULT_KEY_ENV: Record<ModelConfig["provider"], string> = {
  openai: "OPENAI_API_KEY",
  anthropic: "ANTHROPIC_API_KEY",
  "openai-compatible": "SPOOL_LLM_API_KEY",
};

/** The settings that will be used, with env fallbacks applied; safe to record (no key). */
export function resolveModelConfig(config: ModelConfig, env: NodeJS.ProcessEnv = process.env): ModelConfig {
  return {
    provider: config.provider,
    model: config.model,
    // The shared base URL is for OpenAI-compatible servers only: pointing an openai or anthropic
    // agent at it would send that provider's key to another host.
    baseUrl: config.baseUrl ?? (config.provider === "openai-compatible" ? env.SPOOL_LLM_BASE_URL : undefined),
    apiKeyEnv: config.apiKeyEnv ?? DEFAULT_KEY_ENV[config.provider],
  };
}

export function createModel(config: ModelConfig, env: NodeJS.ProcessEnv = process.env): LanguageModel {
  const c = resolveModelConfig(config, env);
  const keyEnv = c.apiKeyEnv ?? DEFAULT_KEY_ENV[c.provider];
  // Only the variable named for this provider: never another provider's key (an openai-compatible
  // server may be a third party). openai-compatible servers (vLLM, Ollama) often need no key at all.
  const apiKey = env[keyEnv];
  switch (c.provider) {
    case "openai":
      if (!apiKey) throw new NonRetryableError(`no API key: set ${keyEnv} for the openai provider`);
      // Chat Completions rather than the Responses API: it is what OpenAI-compatible servers speak.
      return createOpenAI({ apiKey, baseURL: c.baseUrl }).chat(c.model);
    case "anthropic":
      if (!env[keyEnv]) throw new NonRetryableError(`no API key: set ${keyEnv} for the anthropic provider`);
      return createAnthropic({ apiKey: env[keyEnv], baseURL: c.baseUrl })(c.model);
    case "openai-compatible":
      if (!c.baseUrl) {
        throw new NonRetryableError(
          "the openai-compatible provider needs a base URL: set model.baseUrl or SPOOL_LLM_BASE_URL",
        );
      }
      return createOpenAICompatible({
        name: "openai-compatible",
        baseURL: c.baseUrl,
        apiKey,
        includeUsage: true,
      })(c.model);
    default:
      throw new NonRetryableError(`unknown model provider '${String((c as ModelConfig).provider)}'`);
  }
}
