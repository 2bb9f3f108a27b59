import { hash, randomBytes, timingSafeEqual } from "node:crypto";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const KEY_BODY_LENGTH = 40;

/** `sk_` + 40 base62 characters (~238 bits). Rejection sampling keeps every character uniform. */
export function generateApiKey(prefix = "sk_"): string {
  let body = "";
  while (body.length < KEY_BODY_LENGTH) {
    for (const byte of randomBytes(64)) {
      if (byte < 248 && body.length < KEY_BODY_LENGTH) body += BASE62[byte % 62];
    }
  }
  return prefix + body;
}

/**
 * The SHA-256 of a key: what is stored (as hex), and what keys are compared by. Every request
 * derives it, so the one-shot `hash` (half the cost of a `createHash` chain).
 */
export const keyDigest = (key: string): Buffer => hash("sha256", key, "buffer");

export const hashApiKey = (key: string): string => keyDigest(key).toString("hex");

/** Constant-time comparison of two keys (or hashes) via their fixed-length digests. */
export function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(keyDigest(a), keyDigest(b));
}

export const looksLikeApiKey = (value: string): boolean => /^sk_[A-Za-z0-9_]{32,200}$/.test(value);
