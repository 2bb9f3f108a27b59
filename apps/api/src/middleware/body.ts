import { SpoolError } from "@spool/shared";
import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import type { ApiEnv } from "../context.js";

const METHODS_WITH_BODY = new Set(["POST", "PUT", "PATCH"]);

/** 415 for a body that is not JSON. A POST without a body (cancel, deregister) needs no type. */
export const requireJsonBody = createMiddleware<ApiEnv>(async (c, next) => {
  if (METHODS_WITH_BODY.has(c.req.method)) {
    const length = c.req.header("content-length");
    const hasBody =
      (length !== undefined && length !== "0") || c.req.header("transfer-encoding") !== undefined;
    const type = c.req.header("content-type") ?? "";
    if (hasBody && !/^application\/([\w.+-]+\+)?json\s*(;|$)/i.test(type)) {
      throw new SpoolError("UNSUPPORTED_MEDIA_TYPE", "request body must be application/json");
    }
  }
  await next();
});

/**
 * 413 past the configured limit. A body with a Content-Length is judged by it (Node's HTTP parser
 * never delivers more than it declares) without touching the request: reading `c.req.raw` would
 * build a web Request and stream around Node's own, which on the hot path cost more than the route.
 * Any other body is counted as it streams in.
 */
export const limitBody = (maxBytes: number) => {
  const tooLarge = () => {
    throw new SpoolError("PAYLOAD_TOO_LARGE", `request body exceeds ${maxBytes} bytes`);
  };
  const counted = bodyLimit({ maxSize: maxBytes, onError: tooLarge });
  return createMiddleware<ApiEnv>(async (c, next) => {
    const length = c.req.header("content-length");
    const chunked = c.req.header("transfer-encoding") !== undefined;
    if (length !== undefined && !chunked) {
      if (Number.parseInt(length, 10) > maxBytes) tooLarge();
      return next();
    }
    // Chunked, or a body without either header (a request built in process): count it.
    if (chunked || METHODS_WITH_BODY.has(c.req.method)) return counted(c, next);
    return next();
  });
};
