/** API interface version (the contract's), reported by /health and the OpenAPI document. */
export const VERSION = "1.0.0";
