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

/** 413 past the configured limit, counted as the body streams in (not trusting Content-Length). */
export const limitBody = (maxBytes: number) =>
  bodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw new SpoolError("PAYLOAD_TOO_LARGE", `request body exceeds ${maxBytes} bytes`);
    },
  });
